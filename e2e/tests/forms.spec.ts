// Nothing typed is lost, nothing is guessed (docs/api.md "The operation page's forms", docs/access.md
// "Signing in"): an operator form sent after the sign-in ended comes back filled in once signed in again
// and is sent only by the person; a refused reconciliation comes back filled in with the problem next to its
// field; "Observed at" is empty until the operator enters it; an open listing keeps its person signed in at
// the shortest idle setting and, when the server cannot be reached or the sign-in ended, keeps the last list
// as "stale since"; a reload while only the server is down says so (not "offline"); a revoked viewer link
// ends on a plain page for the end user. A server of its own: reads closed, `--sign-in-idle-secs 60`.
// Screenshots (desktop and phone, light and dark) go to test-results/screenshots/.
import { test, expect, request as pwRequest, APIRequestContext, BrowserContext, Page } from '@playwright/test';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Host, unique, enc, layOutAllRows } from './host';
import { OwnServer, outcomes } from './own-server';

const own = new OwnServer(3300 + Math.floor(Math.random() * 50));
const base = own.base;
const staff = 'e2e-forms';
let password = '';
let dataDir = '';
let api: APIRequestContext;
const serveArgs = ['--access', 'signed-in', '--sign-in-idle-secs', '60'];

test.beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-forms-'));
  await own.start(dataDir, serveArgs);
  password = outcomes(['staff', 'add', staff, '--data-dir', dataDir]).trim().split('\n').pop()!;
  api = await pwRequest.newContext({ baseURL: base });
});

test.afterAll(async () => {
  await api?.dispose();
  await own.kill();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function signIn(page: Page) {
  await page.goto(base + '/sign-in');
  await page.getByLabel('Name').fill(staff);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(base + '/');
}

/** Ends the sign-in on the server while the browser keeps its cookie: what an idle expiry does. */
async function endSignIn(context: BrowserContext) {
  const cookie = (await context.cookies(base)).find(c => c.name === 'outcomes_sign_in');
  expect(cookie, 'a sign-in cookie').toBeTruthy();
  const r = await context.request.post(base + '/sign-out', { headers: { Origin: base }, maxRedirects: 0 });
  expect(r.status()).toBe(303);
  await context.addCookies([cookie!]);
}

async function historyKinds(session: string, id: string): Promise<string[]> {
  const r = await api.get(`/api/sessions/${enc(session)}/mutations/${enc(id)}/history`, {
    headers: { Authorization: `Bearer ${process.env.OUTCOMES_HOST_TOKEN ?? ''}` },
  });
  expect(r.status()).toBe(200);
  return (await r.json()).changes.map((c: any) => c.kind);
}

const looks = [['desktop', 1280, 900, 'light'], ['desktop', 1280, 900, 'dark'], ['phone', 390, 844, 'light'], ['phone', 390, 844, 'dark']] as const;

/** Screenshots of the page as it is now (no reload: a form's answer cannot be loaded again). */
async function shots(page: Page, name: string) {
  const size = page.viewportSize();
  for (const [device, width, height, scheme] of looks) {
    await page.setViewportSize({ width, height });
    await page.emulateMedia({ colorScheme: scheme });
    await layOutAllRows(page);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, `${name} ${device} ${scheme} overflows`).toBeLessThanOrEqual(0);
    await page.screenshot({ path: `test-results/screenshots/${name}-${device}-${scheme}.png`, fullPage: true });
  }
  if (size) await page.setViewportSize(size);
  await page.emulateMedia({ colorScheme: 'light' });
}

test('a note typed while the sign-in ended comes back filled in after signing in again, and is saved once', async ({ browser }) => {
  const session = unique('e2e-lapsed');
  const id = `${session}-refund`;
  await new Host(api, session).settled('turn-1', id, 'outcome_unknown', 'execution_timeout');
  const opPath = `/sessions/${enc(session)}/operations/${enc(id)}`;
  for (const javaScriptEnabled of [false, true]) {
    const context = await browser.newContext({ javaScriptEnabled });
    try {
      const page = await context.newPage();
      await signIn(page);
      await page.goto(base + opPath);
      const note = `Asked payments-api support (${javaScriptEnabled ? 'with' : 'without'} JavaScript): <refund> re_123 & more.`;
      await page.getByLabel('Add a note').fill(note);
      const before = await historyKinds(session, id);
      await endSignIn(context);
      if (javaScriptEnabled) {
        // The live stream finds the sign-in gone (it checks every 15 s): the header says so, and the page
        // is not rendered again for a signed-out person, so the form and the typed note stay.
        await expect(page.locator('header [data-access="signed-out"]')).toHaveText('Signed out', { timeout: 25_000 });
        await expect(page.getByLabel('Add a note')).toHaveValue(note);
      }
      await page.getByRole('button', { name: 'Add note' }).click();

      // The sign-in form, saying the note is kept; nothing saved, no raw JSON, no token hint.
      await expect(page.locator('main h1')).toHaveText('Sign in');
      await expect(page.locator('.kept-form')).toContainText('your note was not saved. It is kept');
      await expect(page.locator('body')).not.toContainText('Bearer');
      await expect(page.locator('body')).not.toContainText('"error"');
      expect(await historyKinds(session, id)).toEqual(before);
      if (!javaScriptEnabled) await shots(page, 'forms-sign-in-keeping-note');
      await page.getByLabel('Name').fill(staff);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();

      // Signed in: the note form again, filled in, not yet sent.
      await expect(page.locator('main h1')).toHaveText(`Signed in as ${staff}. Your note is not saved yet.`);
      await expect(page.getByLabel('Add a note')).toHaveValue(note);
      expect(await historyKinds(session, id)).toEqual(before);
      if (!javaScriptEnabled) await shots(page, 'forms-note-kept-after-sign-in');
      await page.getByRole('button', { name: 'Add note' }).click();
      await expect(page).toHaveURL(base + opPath);
      const notes = page.locator('li.change[data-kind="note"] .note');
      await expect(notes.last()).toHaveText(note);
      expect(await historyKinds(session, id)).toEqual([...before, 'note']);

      // Where a sign-in begun on the form's path comes back to: the operation page, never a 405.
      const r = await page.goto(base + opPath + '/notes');
      expect(r?.status()).toBe(200);
      await expect(page).toHaveURL(base + opPath);
    } finally {
      await context.close();
    }
  }
});

test('an open queue keeps its person signed in at the shortest idle setting; when the sign-in ends it says so in words, keeps the list and the header says "Signed out"', async ({ browser }) => {
  test.setTimeout(180_000);
  const session = unique('e2e-idle');
  const id = `${session}-unk`;
  await new Host(api, session).settled('turn-1', id, 'outcome_unknown', 'execution_timeout');
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await signIn(page);
    await page.goto(base + `/unknowns?session_key=${enc(session)}`);
    await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true');
    const row = page.locator('table.q tbody tr').filter({ has: page.getByRole('link', { name: id, exact: true }) });
    await expect(row).toBeVisible();
    // Longer than the idle time (60 s), with nothing but the page's own refresh every 15 s.
    await page.waitForTimeout(75_000);
    await page.locator('.as-of button.refresh').click();
    await expect(page.locator('.as-of')).toHaveAttribute('data-stale', 'false');
    await expect(row).toBeVisible();
    await expect(page.locator('header [data-access="staff"]')).toHaveText(`Signed in as ${staff}`);
    await page.reload();
    await expect(page).toHaveURL(base + `/unknowns?session_key=${enc(session)}`);
    await expect(row).toBeVisible();

    // The sign-in ends (idle elsewhere, signed out in another tab): the next refresh says so in words.
    await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true');
    await endSignIn(context);
    await page.locator('.as-of button.refresh').click();
    await expect(page.locator('.as-of')).toHaveAttribute('data-stale', 'true');
    await expect(page.locator('.as-of')).toContainText('Stale since');
    await expect(page.locator('.as-of')).toContainText('your sign-in has ended');
    await expect(row).toBeVisible();
    await expect(page.locator('header [data-access="signed-out"]')).toHaveText('Signed out');
    await expect(page.locator('header [data-access="staff"]')).toHaveCount(0);
    await expect(page.locator('body')).not.toContainText('Bearer');
    // The status code never reaches the person. Checked on the page's words with the random session
    // and operation ids taken out (an id such as `…-574013` holds the digits 401 by chance).
    const words = (await page.locator('body').innerText()).split(session).join('');
    expect(words).not.toMatch(/\b401\b|Unauthorized/);
    await shots(page, 'forms-queue-signed-out');
    await page.locator('.as-of').getByRole('link', { name: 'Sign in again' }).click();
    await expect(page.locator('main h1')).toHaveText('Sign in');
    expect(new URL(page.url()).searchParams.get('next')).toBe(`/unknowns?session_key=${enc(session)}`);
  } finally {
    await context.close();
  }
});

test('a refused reconciliation comes back filled in with the problem next to its field; "Observed at" is never guessed', async ({ browser }) => {
  const session = unique('e2e-recon');
  for (const javaScriptEnabled of [true, false]) {
    const id = `${session}-${javaScriptEnabled ? 'js' : 'nojs'}`;
    await new Host(api, session).settled('turn-1', id, 'outcome_unknown', 'execution_timeout');
    const opPath = `/sessions/${enc(session)}/operations/${enc(id)}`;
    const context = await browser.newContext({ javaScriptEnabled });
    try {
      const page = await context.newPage();
      await signIn(page);
      await page.goto(base + opPath);
      const form = page.locator('form.reconcile-form');
      const observed = form.getByLabel('Observed at (RFC 3339)');
      if (javaScriptEnabled) await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true');
      // Empty: the time is the operator's observation, never the page's load time.
      await expect(observed).toHaveValue('');
      if (javaScriptEnabled) {
        // "Now" fills in the current time, on request.
        await form.getByRole('button', { name: 'Now' }).click();
        await expect(observed).toHaveValue(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
        await shots(page, 'forms-operation-now-button');
      } else {
        await expect(form.getByRole('button', { name: 'Now' })).toHaveCount(0);
      }
      await form.getByLabel('It took effect (completed)').check();
      await form.getByLabel('Evidence source').fill('payments-api');
      await form.getByLabel('Evidence reference').fill('refund re_123');
      await observed.fill('yesterday at noon');
      await form.getByRole('button', { name: 'Reconcile' }).click();

      // The form again with everything typed, the problem next to "Observed at"; nothing changed.
      await expect(page.locator('main h1')).toHaveText('The outcome was not reconciled.');
      await expect(page.locator('#observed-at-error')).toContainText('Enter when you observed it at the provider');
      const again = page.locator('form.reconcile-form');
      await expect(again.getByLabel('Evidence source')).toHaveValue('payments-api');
      await expect(again.getByLabel('Evidence reference')).toHaveValue('refund re_123');
      await expect(again.getByLabel('Observed at (RFC 3339)')).toHaveValue('yesterday at noon');
      await expect(again.getByLabel('Observed at (RFC 3339)')).toHaveAttribute('aria-invalid', 'true');
      await expect(again.getByLabel('It took effect (completed)')).toBeChecked();
      expect(await historyKinds(session, id)).toEqual(['approval', 'intent', 'settlement']);
      if (!javaScriptEnabled) await shots(page, 'forms-reconcile-refused');
      await again.getByLabel('Observed at (RFC 3339)').fill('2026-12-01T18:30:00Z');
      await again.getByRole('button', { name: 'Reconcile' }).click();
      await expect(page).toHaveURL(base + opPath);
      await expect(page.locator('li.change[data-kind="reconciliation"] .evidence')).toContainText('refund re_123');
      expect(await historyKinds(session, id)).toEqual(['approval', 'intent', 'settlement', 'reconciliation']);
    } finally {
      await context.close();
    }
  }
});

test('home and the queue keep the last list as stale when the server cannot be reached; a reload says the server, not the device, is unreachable; a revoked viewer link ends on a plain page', async ({ browser }) => {
  test.setTimeout(120_000);
  const session = unique('e2e-stale');
  const id = `${session}-unk`;
  const host = new Host(api, session);
  await host.settled('turn-1', id, 'outcome_unknown', 'execution_timeout');
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await signIn(page);
    await page.evaluate(() => navigator.serviceWorker.ready);
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
    await page.goto(base + `/unknowns?session_key=${enc(session)}`);
    const home = await context.newPage();
    await home.goto(base + `/?prefix=${enc(session)}`);
    for (const p of [page, home]) await expect(p.locator('html')).toHaveAttribute('data-interactive', 'true');
    await expect(page.getByRole('link', { name: id, exact: true })).toBeVisible();
    await expect(home.locator('li.session')).toHaveCount(1);

    await own.kill();
    for (const [p, rows] of [[page, 'table.q tbody tr'], [home, 'li.session']] as const) {
      await p.locator('.as-of button.refresh').click();
      await expect(p.locator('.as-of')).toHaveAttribute('data-stale', 'true');
      await expect(p.locator('.as-of')).toContainText('Stale since');
      await expect(p.locator('.as-of')).toContainText('the server cannot be reached');
      await expect(p.locator(rows)).toHaveCount(1);
      await expect(p.locator('body')).not.toContainText('Failed to fetch');
      await expect(p.locator('body')).not.toContainText('TypeError');
    }
    await shots(page, 'forms-queue-stale');
    await shots(home, 'forms-home-stale');

    // A reload while only the server is down: the worker's page says the server cannot be reached.
    await page.reload();
    await expect(page.locator('h1')).toHaveText('The server cannot be reached');
    await expect(page.locator('body')).not.toContainText('You are offline');
    await expect(page.locator('body')).not.toContainText(session);
    await shots(page, 'forms-server-unreachable');
    // The device offline: that page.
    await context.setOffline(true);
    await page.reload().catch(() => {});
    await expect(page.locator('h1')).toHaveText('You are offline');
    await context.setOffline(false);

    // Back up: a viewer link, revoked while the end user browses, ends on a plain page, never sign-in.
    await own.start(dataDir, serveArgs);
    const link = await host.viewerLink(3600);
    const viewer = await browser.newContext();
    try {
      const v = await viewer.newPage();
      await v.goto(base + link.url);
      await expect(v).toHaveURL(base + host.sessionPath());
      expect(await host.revokeViewerLinks()).toEqual({ revoked: 1 });
      const r = await v.reload();
      expect(r?.status()).toBe(404);
      await expect(v.locator('main h1')).toHaveText('This link no longer works.');
      await expect(v.locator('main')).toContainText('Ask whoever shared it with you for a new link.');
      await expect(v.locator('input[type="password"]')).toHaveCount(0);
      await expect(v.locator('a[href^="/sign-in"]')).toHaveCount(0);
      await shots(v, 'forms-viewer-link-ended');
      const again = await v.goto(base + link.url);
      expect(again?.status()).toBe(404);
      await expect(v.locator('main h1')).toHaveText('This link no longer works.');
      await expect(v.locator('input[type="password"]')).toHaveCount(0);
    } finally {
      await viewer.close();
    }
  } finally {
    await context.close();
  }
});
