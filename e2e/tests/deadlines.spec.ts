// Deadlines as people see them (docs/api.md "Deadlines", issue 39): a write the ledger settled at its
// deadline reads, for the end user, that the agent stopped reporting (no promise that it will report back,
// nothing of staff's); staff get the writes in flight as a view of their own, ordered by deadline and
// counted on the queue, and the operation page of a write in flight with the claim box and the reconcile
// form. axe finds no serious or critical violation on those pages (light and dark). Screenshots (desktop and
// phone, light and dark) go to SHOTS_DIR (default
// test-results/screenshots).
import { test, expect, request as pwRequest, APIRequestContext, Browser, Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Host, unique, enc, layOutAllRows } from './host';
import { OwnServer } from './own-server';

const token = process.env.OUTCOMES_HOST_TOKEN ?? '';
const auth = { Authorization: `Bearer ${token}` };
const shots = process.env.SHOTS_DIR ?? 'test-results/screenshots';
const looks = [['desktop', 1280, 900, 'light'], ['desktop', 1280, 900, 'dark'], ['phone', 390, 844, 'light'], ['phone', 390, 844, 'dark']] as const;

/** A local time as the page clock writes it (the date too when it is not today). */
const CLOCK = String.raw`(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d`;

const STOPPED = (at: string) =>
  `The agent stopped reporting on this write at ${at}. Whether it took effect is not known; it is being looked into. Do not repeat it yourself.`;

/** The entry of `mutation` as the entries API gives it. */
async function entry(api: APIRequestContext, session: string, turn: string, mutation: string) {
  const r = await api.get(`/api/sessions/${enc(session)}/turns/${enc(turn)}/entries`, { headers: auth });
  expect(r.status()).toBe(200);
  return (await r.json()).entries.find((e: any) => e.outcome.mutation_id === mutation);
}

/** axe finds no serious or critical violation on `page` as it is. */
async function accessible(page: Page, name: string) {
  const result = await new AxeBuilder({ page }).analyze();
  const bad = result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map(v => `${v.id}: ${v.nodes.map(n => n.target).join(', ')}`), name).toEqual([]);
}

/** Screenshots of `pathname` at each look, after `ready` says the page is ready (axe on each, light and
 *  dark). */
async function screenshots(browser: Browser, baseURL: string, pathname: string, name: string,
  ready: (page: Page) => Promise<void>, storageState?: string) {
  for (const [device, width, height, colorScheme] of looks) {
    const context = await browser.newContext({ baseURL, viewport: { width, height }, colorScheme, storageState });
    try {
      const page = await context.newPage();
      await page.goto(pathname);
      await ready(page);
      if (device === 'desktop') await accessible(page, `${name} ${colorScheme}`);
      await layOutAllRows(page);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      // The queue's table scrolls inside its own box; the page itself never overflows.
      expect(overflow, `${name} ${device} ${colorScheme} overflows`).toBeLessThanOrEqual(0);
      await page.screenshot({ path: path.join(shots, `${name}-${device}-${colorScheme}.png`), fullPage: true });
    } finally {
      await context.close();
    }
  }
}

test.describe('an end user', () => {
  const own = new OwnServer(3270 + Math.floor(Math.random() * 9));

  test('reads that the agent stopped reporting on a write the ledger settled at its deadline, live too, and nothing of staff', async ({ browser }) => {
    test.setTimeout(90_000);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
    await own.start(dataDir);
    const api = await pwRequest.newContext({ baseURL: own.base });
    try {
      const session = unique('e2e-stopped');
      const host = new Host(api, session);
      // One settled by the ledger before the page opens, one in flight with an hour to go, and one that
      // the ledger settles while the page is open.
      await host.approve('t', 'stopped');
      await host.intent('stopped', 'att-1', 1);
      await host.approve('t', 'long');
      await host.intent('long', 'att-1', 3600);
      await expect.poll(async () => (await entry(api, session, 't', 'stopped')).settled_by, { timeout: 8_000 }).toBe('ledger');
      const stopped = await entry(api, session, 't', 'stopped');
      expect(stopped.ledger_status).toBe('outcome_unknown');
      expect(stopped.outcome.reason).toBe('execution_timeout');
      const link = await host.viewerLink(3600);

      await host.approve('t', 'live');
      await host.intent('live', 'att-1', 8);
      const context = await browser.newContext({ baseURL: own.base });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', e => errors.push(e.message));
      await page.goto(link.url);
      await expect(page).toHaveURL(`${own.base}/sessions/${enc(session)}`);
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      const card = (id: string) => page.locator(`.outcome[data-mutation-id="${id}"]`);

      // The ledger's settlement, in docs/design.md's words, at the local time it stopped (no age).
      const time = card('stopped').locator('.stopped time');
      await expect(time).toHaveAttribute('datetime', stopped.settled_at);
      await expect(time).toHaveText(new RegExp(`^${CLOCK}$`));
      const at = await time.textContent();
      await expect(card('stopped').locator('.stopped')).toHaveText(STOPPED(at!));
      await expect(card('stopped').locator('.unknown-explanation')).toHaveAttribute('data-audience', 'end-user');
      await expect(card('stopped')).not.toContainText('report back');
      await expect(card('stopped')).not.toContainText('timed out');
      await expect(card('stopped').locator('.operation-id')).toHaveText('stopped');

      // In flight: in progress, its age; no promise that it will report back, and no deadline.
      const long = card('long');
      await expect(long.locator('.o-head .badge')).toHaveText('In flight: outcome not yet known');
      await expect(long.locator('.recorded')).toHaveText(new RegExp(`^In flight since ${CLOCK} · (just now|\\d+ s ago)$`));
      await expect(long.locator('.unknown-explanation p').first()).toHaveText('This write is in progress: its result is not established yet.');
      await expect(long.locator('.what-to-do')).toHaveText('Do not repeat it yourself. If the agent does not report back in time, this page will say so; then quote the operation id below to the support of the service you used.');

      // The one whose deadline passes while the page is open turns into the same words, live.
      await expect(card('live').locator('.o-head .badge')).toHaveText('In flight: outcome not yet known');
      await expect(card('live').locator('.stopped')).toHaveText(new RegExp(`^The agent stopped reporting on this write at ${CLOCK}\\. Whether`), { timeout: 15_000 });
      const live = await entry(api, session, 't', 'live');
      expect(live.settled_by).toBe('ledger');
      await expect(card('live').locator('.stopped time')).toHaveAttribute('datetime', live.settled_at);

      // Nothing of staff's: no deadline, no revision, no reconciling, no host.
      const main = page.locator('main');
      await expect(main).not.toContainText(/deadline/i, { useInnerText: true });
      await expect(main).not.toContainText(/revision|reconcile|the host/i, { useInnerText: true });
      await expect(page.locator('time[data-due], .deadline')).toHaveCount(0);

      // The operation page of the stopped write: the ledger's row, in the end user's words.
      await page.goto(`/sessions/${enc(session)}/operations/stopped`);
      const row = page.locator('li.change[data-kind="settlement"]');
      await expect(row).toHaveAttribute('data-actor', 'ledger');
      await expect(row).toContainText('Marked unknown');
      await expect(row).not.toContainText('att-1');
      await expect(row.locator('.by-ledger')).toHaveText('The agent stopped reporting on this write.');
      await expect(page.locator('.current .stopped')).toHaveText(new RegExp(`^The agent stopped reporting on this write at ${CLOCK}\\. `));
      await expect(page.locator('main')).not.toContainText(/deadline|revision|reconcile/i, { useInnerText: true });
      await expect(page.locator('.claim-box, form.reconcile-form')).toHaveCount(0);
      expect(errors).toEqual([]);
      // The staff's views are not for a viewer.
      for (const staffPage of ['/in-flight', '/unknowns']) {
        expect((await page.goto(staffPage))?.status(), staffPage).toBe(404);
      }

      await context.storageState({ path: test.info().outputPath('viewer-state.json') });
      await context.close();
      await screenshots(browser, own.base, `/sessions/${enc(session)}`, 'viewer-session-deadline',
        p => expect(p.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 }),
        test.info().outputPath('viewer-state.json'));
    } finally {
      await api.dispose();
      await own.kill().catch(() => {});
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

test.describe('a status check', () => {
  const own = new OwnServer(3280 + Math.floor(Math.random() * 9));

  test('reconciles an unknown write: the end user reads "Confirmed completed by the provider\'s status" in words only; staff also see the provider\'s record', async ({ browser }) => {
    test.setTimeout(120_000);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
    await own.start(dataDir);
    const api = await pwRequest.newContext({ baseURL: own.base });
    try {
      const session = unique('e2e-status');
      const host = new Host(api, session);
      // The host lost the provider's reply (unknown), then its status check found the charge by its
      // idempotency key: a reconciliation with status:<tool> evidence (docs/api.md "Host write API").
      await host.settled('t', 'charge-1', 'outcome_unknown', 'execution_timeout');
      const r = await api.post(`/api/host/sessions/${enc(session)}/mutations/charge-1/reconciliation`, {
        headers: { ...auth, 'Content-Type': 'application/json' },
        data: { attempt_id: 'att-1', completed: true, evidence: { source: 'status:payments.charge', reference: 'charge ch_3PqL9', observed_at: '2026-12-07T10:00:00Z', provider_status: 'completed' } },
      });
      expect(r.status(), await r.text()).toBe(200);
      const e = await entry(api, session, 't', 'charge-1');
      expect([e.ledger_status, e.established_by]).toEqual(['completed', 'status_check']);
      const opPath = `/sessions/${enc(session)}/operations/charge-1`;
      const WORDS = /^Confirmed completed by the provider's status \S/;

      // Staff (loopback, reads open): the words, and the provider's record in the history.
      const staff = await browser.newContext({ baseURL: own.base });
      const page = await staff.newPage();
      await page.goto(opPath);
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      await expect(page.locator('.current .established')).toHaveText(WORDS);
      const row = page.locator('li.change[data-kind="reconciliation"]');
      await expect(row).toContainText('status:payments.charge');
      await expect(row).toContainText('charge ch_3PqL9');
      await staff.close();
      await screenshots(browser, own.base, opPath, 'staff-operation-status-check',
        p => expect(p.locator('.current .established')).toHaveText(WORDS));

      // The end user, through a viewer link: the same words, and nothing of the provider's record.
      const link = await host.viewerLink(3600);
      const viewer = await browser.newContext({ baseURL: own.base });
      const v = await viewer.newPage();
      await v.goto(link.url);
      await expect(v.locator('.viewer-notice')).toBeVisible();
      const card = v.locator('.outcome[data-mutation-id="charge-1"]');
      await expect(card.locator('.established')).toHaveText(WORDS);
      await v.goto(opPath);
      await expect(v.locator('.current .established')).toHaveText(WORDS);
      for (const hidden of ['ch_3PqL9', 'status:payments', 'provider_status', 'Source', 'Reference']) {
        await expect(v.locator('main'), hidden).not.toContainText(hidden, { useInnerText: true });
      }
      await viewer.storageState({ path: test.info().outputPath('viewer-state.json') });
      await viewer.close();
      await screenshots(browser, own.base, opPath, 'viewer-operation-status-check',
        p => expect(p.locator('.current .established')).toHaveText(WORDS), test.info().outputPath('viewer-state.json'));
    } finally {
      await api.dispose();
      await own.kill().catch(() => {});
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

test.describe('staff', () => {
  const signedInUrl = process.env.SIGNED_IN_URL ?? '';
  const staffName = process.env.STAFF_NAME ?? '';
  const staffPassword = process.env.STAFF_PASSWORD ?? '';
  test.skip(!signedInUrl, 'SIGNED_IN_URL (a server with --access signed-in) is not set');

  async function signIn(page: Page) {
    await page.goto('/sign-in');
    await page.getByLabel('Name').fill(staffName);
    await page.getByLabel('Password').fill(staffPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.locator('header [data-access="staff"]')).toHaveText(`Signed in as ${staffName}`);
  }

  test('see the writes in flight apart, counted on the queue and ordered by deadline, and reconcile one from its page', async ({ browser }) => {
    test.setTimeout(240_000);
    const api = await pwRequest.newContext({ baseURL: signedInUrl });
    const session = unique('e2e-inflight');
    const host = new Host(api, session);
    // Three in flight with deadlines in 50, 17 and 33 minutes; one the ledger settles; one the host settled
    // unknown itself.
    for (const [id, secs] of [['w-a', 3000], ['w-b', 1000], ['w-c', 2000], ['w-ledger', 1]] as const) {
      await host.approve('turn-1', `${session}-${id}`);
      await host.intent(`${session}-${id}`, 'att-1', secs);
    }
    await host.settled('turn-1', `${session}-w-host`, 'outcome_unknown', 'execution_timeout');
    await expect.poll(async () => (await entry(api, session, 'turn-1', `${session}-w-ledger`)).settled_by, { timeout: 8_000 }).toBe('ledger');

    const context = await browser.newContext({ baseURL: signedInUrl });
    try {
      const page = await context.newPage();
      await signIn(page);
      const state = test.info().outputPath('staff-state.json');
      await context.storageState({ path: state });

      // The queue: settled unknowns only, with who settled them; the writes in flight counted and linked.
      const filter = `session_like=${enc(session)}`;
      await page.goto(`/unknowns?${filter}`);
      const ids = () => page.locator('table.q tbody tr td:nth-child(7) a').allTextContents();
      expect((await ids()).sort()).toEqual([`${session}-w-host`, `${session}-w-ledger`]);
      await expect(page.locator('table.q thead th').nth(11)).toHaveText('Status');
      const status = (id: string) => page.locator('table.q tbody tr').filter({ has: page.getByRole('link', { name: id, exact: true }) }).locator('td:nth-child(12)');
      await expect(status(`${session}-w-ledger`)).toHaveText('No report');
      await expect(status(`${session}-w-ledger`).locator('span')).toHaveAttribute('title', 'Its host did not report by the deadline: the ledger settled it unknown');
      await expect(status(`${session}-w-host`)).toHaveText('Unknown');
      const total = (await (await api.get('/api/unknowns?state=unknown&limit=1', { headers: auth })).json()).in_flight_total;
      expect(total).toBeGreaterThanOrEqual(3);
      const link = page.locator('.in-flight-link');
      await expect(link).toHaveAttribute('data-count', String(total));
      await expect(link.getByRole('link')).toHaveText(`${total} writes in flight →`);
      await link.getByRole('link').click();
      await expect(page).toHaveURL(`${signedInUrl}/in-flight`);
      await expect(page.locator('main h1')).toHaveText('Writes in flight');

      // The in-flight view: the soonest deadline first, each with its age and its deadline.
      await page.goto(`/in-flight?${filter}`);
      expect(await ids()).toEqual([`${session}-w-b`, `${session}-w-c`, `${session}-w-a`]);
      await expect(page.locator('table.q thead th').nth(10)).toHaveText('Deadline ↑');
      const rows = page.locator('table.q tbody tr');
      for (const [i, id, minutes] of [[0, 'w-b', 16], [1, 'w-c', 33], [2, 'w-a', 49]] as const) {
        const e = await entry(api, session, 'turn-1', `${session}-${id}`);
        await expect(rows.nth(i).locator('td:nth-child(2)')).toHaveText(/^\d+ (s|min)$/);
        const due = rows.nth(i).locator('td:nth-child(11) time[data-due]');
        await expect(due).toHaveAttribute('datetime', e.deadline_at);
        await expect(due).toHaveText(new RegExp(`^in (${minutes}|${minutes + 1}) min · ${CLOCK}$`));
      }
      await expect(page.locator('.page-count')).toHaveText('Showing 3 of 3 writes in flight');
      // Sorted the other way round by its header.
      await page.locator('table.q thead th').nth(10).getByRole('link').click();
      await expect.poll(ids).toEqual([`${session}-w-a`, `${session}-w-c`, `${session}-w-b`]);
      await screenshots(browser, signedInUrl, `/in-flight?${filter}`, 'staff-in-flight',
        p => expect(p.locator('table.q tbody tr')).toHaveCount(3), state);
      await screenshots(browser, signedInUrl, `/unknowns?${filter}`, 'staff-queue',
        p => expect(p.locator('table.q tbody tr')).toHaveCount(2), state);

      // The operation page of a write in flight: its deadline, the claim box and the reconcile form.
      await page.goto(`/in-flight?${filter}`);
      const id = `${session}-w-b`;
      await page.getByRole('link', { name: id, exact: true }).click();
      const opPath = `/sessions/${enc(session)}/operations/${enc(id)}`;
      await expect(page).toHaveURL(`${signedInUrl}${opPath}`);
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      const current = page.locator('.current');
      await expect(current.locator('.o-head .badge')).toHaveText('In flight: outcome not yet known');
      await expect(current.locator('.deadline time[data-due]')).toHaveText(new RegExp(`^in 1[67] min · ${CLOCK}$`));
      await expect(current.locator('.what-to-do')).toContainText('reconcile it below');
      await expect(page.locator('main')).not.toContainText('If it stays like this');
      await expect(page.locator('li.change[data-kind="intent"] .deadline time[data-due]')).toBeVisible();
      const claim = page.locator('form.claim-box');
      await expect(claim.locator('.claim-holder')).toHaveText('Nobody is on it.');
      const form = page.locator('form.reconcile-form');
      await expect(form.getByRole('heading')).toHaveText('Reconcile this write in flight');
      await expect(form.locator('input[name="attempt_id"]')).toHaveValue('att-1');
      await screenshots(browser, signedInUrl, opPath, 'staff-operation-in-flight',
        p => expect(p.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 }), state);

      await claim.getByRole('button', { name: "I'm on it" }).click();
      await expect(claim.locator('.claim-holder')).toHaveText(new RegExp(`^${staffName} is on it · since `));
      await form.getByLabel('Observed at (RFC 3339)').fill('2026-12-06T18:30:00Z');
      await form.getByLabel('It took effect (completed)').check();
      await form.getByLabel('Evidence source').fill('payments-api');
      await form.getByLabel('Evidence reference').fill('refund re_9');
      await form.getByRole('button', { name: 'Reconcile' }).click();
      await expect(page).toHaveURL(`${signedInUrl}${opPath}`);
      await expect(current.locator('[data-status="completed"]').first()).toBeVisible();
      await expect(current.locator('.established')).toHaveText(/^Confirmed completed by support \S/);
      await expect(page.locator('form.reconcile-form')).toHaveCount(0);
      const done = await entry(api, session, 'turn-1', id);
      expect(done.ledger_status).toBe('completed');
      expect(done.established_by).toBe('staff');
      expect(done.settled_by).toBe(null);
      // It left the writes in flight.
      await page.goto(`/in-flight?${filter}`);
      expect(await ids()).toEqual([`${session}-w-c`, `${session}-w-a`]);

      // The ledger's settlement on its operation page, for staff.
      await page.goto(`/sessions/${enc(session)}/operations/${enc(`${session}-w-ledger`)}`);
      const row = page.locator('li.change[data-kind="settlement"]');
      await expect(row).toHaveAttribute('data-actor', 'ledger');
      await expect(row).toContainText('Settled by the ledger at its deadline (attempt att-1)');
      await expect(row).toContainText('by the ledger');
      await expect(row.locator('.by-ledger')).toHaveText('The host did not settle it by its deadline.');
      await expect(page.locator('.current .reason')).toHaveText('The host did not settle it by its deadline: the ledger settled it as unknown (execution timeout).');
      await expect(page.locator('form.reconcile-form')).toBeVisible();
      await screenshots(browser, signedInUrl, `/sessions/${enc(session)}/operations/${enc(`${session}-w-ledger`)}`, 'staff-operation-ledger-settled',
        p => expect(p.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 }), state);
    } finally {
      await context.close();
      await api.dispose();
    }
  });
});
