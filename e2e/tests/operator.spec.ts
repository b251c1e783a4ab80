// Operator actions on an unknown outcome (docs/api.md "Operator actions"), on the signed-in server
// (SIGNED_IN_URL, one staff account STAFF_NAME / STAFF_PASSWORD): staff walk an unknown outcome from the
// queue to its operation page, add a note, reconcile it with evidence they observed, and a second open
// page sees the history and the status change live. Screenshots of the operation page before and after
// reconciliation, desktop and phone, light and dark, go to test-results/screenshots/.
import { test, expect, request as pwRequest, APIRequestContext, Page, Browser } from '@playwright/test';
import { Host, unique, enc, layOutAllRows } from './host';

const signedInUrl = process.env.SIGNED_IN_URL ?? '';
const staffName = process.env.STAFF_NAME ?? '';
const staffPassword = process.env.STAFF_PASSWORD ?? '';

test.skip(!signedInUrl, 'SIGNED_IN_URL (a server with --access signed-in) is not set');

let api: APIRequestContext;
test.beforeAll(async () => {
  if (signedInUrl) api = await pwRequest.newContext({ baseURL: signedInUrl });
});
test.afterAll(async () => { await api?.dispose(); });

async function signIn(page: Page) {
  await page.goto('/sign-in');
  await page.getByLabel('Name').fill(staffName);
  await page.getByLabel('Password').fill(staffPassword);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.locator('header [data-access="staff"]')).toHaveText(`Signed in as ${staffName}`);
}

/** The kinds of the history rows, in order. */
function kinds(page: Page) {
  return page.locator('ol.history > li.change').evaluateAll(els => els.map(e => e.getAttribute('data-kind')));
}

async function shot(page: Page, name: string, device: string, scheme: string) {
  await layOutAllRows(page);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, `${name} ${device} ${scheme} overflows`).toBeLessThanOrEqual(0);
  await page.screenshot({ path: `test-results/screenshots/${name}-${device}-${scheme}.png`, fullPage: true });
}

const looks = [['desktop', 1280, 900, 'light'], ['desktop', 1280, 900, 'dark'], ['phone', 390, 844, 'light'], ['phone', 390, 844, 'dark']] as const;

async function screenshots(browser: Browser, state: string, path: string, name: string) {
  for (const [device, width, height, colorScheme] of looks) {
    const context = await browser.newContext({ baseURL: signedInUrl, viewport: { width, height }, colorScheme, storageState: state });
    try {
      const page = await context.newPage();
      await page.goto(path);
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      await shot(page, name, device, colorScheme);
    } finally {
      await context.close();
    }
  }
}

test('staff walk an unknown outcome from the queue to its page, note it, reconcile it; a second page follows live', async ({ browser }, info) => {
  test.setTimeout(180_000);
  const session = unique('e2e-ops');
  const id = `${session}-refund`;
  const host = new Host(api, session);
  await host.settled('turn-1', id, 'outcome_unknown', 'execution_timeout');
  await host.settled('turn-1', `${session}-other`, 'completed');

  const context = await browser.newContext({ baseURL: signedInUrl });
  try {
    const page = await context.newPage();
    await signIn(page);

    // The queue lists it with its age and no notes; its operation id opens the operation page.
    await page.goto('/unknowns');
    // Columns: select, age, tool, title, session, turn, operation id, notes, last note, on it.
    const row = page.locator('table.q tbody tr').filter({ has: page.getByRole('link', { name: id, exact: true }) });
    await expect(row).toBeVisible();
    await expect(row.locator('td:nth-child(2)')).toHaveText(/^\d+ (s|min)$/);
    await expect(row.locator('td:nth-child(8)')).toHaveText('');
    await row.getByRole('link', { name: id, exact: true }).click();
    const opPath = `/sessions/${enc(session)}/operations/${enc(id)}`;
    await expect(page).toHaveURL(`${signedInUrl}${opPath}`);
    await expect(page.locator('main h1')).toHaveText(`Operation ${id}`);
    await expect(page.locator('.current [data-status="outcome_unknown"]').first()).toBeVisible();
    expect(await kinds(page)).toEqual(['approval', 'intent', 'settlement']);
    await expect(page.locator('li.change[data-kind="settlement"]')).toContainText('revision');
    await expect(page.locator('li.change[data-kind="settlement"] time')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT/);
    await expect(page.locator('li.change[data-kind="settlement"] .reason')).toContainText('timed out');
    await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
    // Staff are the support an end user is told to quote the id to: their page says what to do instead.
    const explanation = page.locator('.current .unknown-explanation');
    await expect(explanation).toHaveAttribute('data-audience', 'staff');
    await expect(explanation.locator('.what-to-do')).toContainText('reconcile it below');
    await expect(explanation).not.toContainText('support');
    await expect(explanation).not.toContainText('quote');

    // Screenshots before reconciliation.
    const state = info.outputPath('staff-state.json');
    await context.storageState({ path: state });
    await screenshots(browser, state, opPath, 'operation-unknown');

    // A second open page of the same operation, live.
    const second = await context.newPage();
    await second.goto(opPath);
    await expect(second.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });

    // A note: posted as a form, answered 303 back to the page, kept in the history with the staff's name.
    const note = 'Asked payments-api support: refund re_123 shows as succeeded.';
    await page.getByLabel('Add a note').fill(note);
    await page.getByRole('button', { name: 'Add note' }).click();
    await expect(page).toHaveURL(`${signedInUrl}${opPath}`);
    const noteRow = page.locator('li.change[data-kind="note"]');
    await expect(noteRow).toHaveAttribute('data-actor', `staff:${staffName}`);
    await expect(noteRow.locator('.note')).toHaveText(note);
    // The entry's reason shows where it arose (the settlement), not again on the note.
    await expect(noteRow.locator('.reason')).toHaveCount(0);
    // The status is unchanged by a note; the queue counts it.
    await expect(page.locator('.current [data-status="outcome_unknown"]').first()).toBeVisible();
    const queue = await api.get('/api/unknowns', { headers: { Authorization: `Bearer ${process.env.OUTCOMES_HOST_TOKEN ?? ''}` } });
    const match = (await queue.json()).matches.find((m: any) => m.entry.outcome.mutation_id === id);
    expect(match.notes).toBe(1);
    expect(typeof match.age_secs).toBe('number');

    // Reconcile with the evidence observed at the provider, bound to the attempt the page shows.
    const form = page.locator('form.reconcile-form');
    await expect(form.locator('input[name="attempt_id"]')).toHaveValue('att-1');
    // "Observed at" is never guessed (it was the page's load time): empty until the operator enters it.
    await expect(form.getByLabel('Observed at (RFC 3339)')).toHaveValue('');
    await form.getByLabel('Observed at (RFC 3339)').fill('2026-12-01T18:30:00Z');
    await form.getByLabel('It took effect (completed)').check();
    await form.getByLabel('Evidence source').fill('payments-api');
    await form.getByLabel('Evidence reference').fill('refund re_123');
    await form.getByRole('button', { name: 'Reconcile' }).click();
    await expect(page).toHaveURL(`${signedInUrl}${opPath}`);
    await expect(page.locator('.current [data-status="completed"]').first()).toBeVisible();
    const rec = page.locator('li.change[data-kind="reconciliation"]');
    await expect(rec).toHaveAttribute('data-actor', `staff:${staffName}`);
    await expect(rec.locator('.evidence')).toContainText('payments-api');
    await expect(rec.locator('.evidence')).toContainText('refund re_123');
    await expect(page.locator('form.reconcile-form')).toHaveCount(0);
    expect(await kinds(page)).toEqual(['approval', 'intent', 'settlement', 'note', 'reconciliation']);

    // The second page saw it live, without a reload: the status, the reconciliation and the note.
    await expect(second.locator('.current [data-status="completed"]').first()).toBeVisible({ timeout: 15_000 });
    await expect.poll(() => kinds(second)).toEqual(['approval', 'intent', 'settlement', 'note', 'reconciliation']);
    await expect(second.locator('li.change[data-kind="reconciliation"] .evidence')).toContainText('refund re_123');

    // It left the queue.
    await page.goto('/unknowns');
    await expect(page.getByRole('link', { name: id, exact: true })).toHaveCount(0);

    // Screenshots after reconciliation.
    await screenshots(browser, state, opPath, 'operation-reconciled');
  } finally {
    await context.close();
  }
});

test('the operation page offers no operator action to a viewer, and the session page offers the export', async ({ browser }) => {
  const session = unique('e2e-ops-viewer');
  const id = `${session}-unk`;
  const host = new Host(api, session);
  await host.settled('turn-1', id, 'outcome_unknown', 'execution_timeout');
  const link = await host.viewerLink(3600);
  const context = await browser.newContext({ baseURL: signedInUrl });
  try {
    const page = await context.newPage();
    await page.goto(link.url);
    await expect(page.locator('.export a[data-export="records"]')).toHaveAttribute('href', `/api/sessions/${enc(session)}/export`);
    await expect(page.locator('.export a[data-export="history"]')).toHaveAttribute('href', `/api/sessions/${enc(session)}/export?history=true`);
    const download = page.waitForEvent('download');
    await page.locator('.export a[data-export="records"]').click();
    const file = await (await download).path();
    const fs = await import('node:fs');
    const lines = fs.readFileSync(file!, 'utf8').trim().split('\n').map(l => JSON.parse(l));
    expect(lines.map(l => l.mutation_id)).toEqual([id]);
    expect(lines[0].status).toBe('outcome_unknown');
    await page.goto(`/sessions/${enc(session)}/operations/${enc(id)}`);
    await expect(page.locator('main h1')).toHaveText(`Operation ${id}`);
    expect(await kinds(page)).toEqual(['approval', 'intent', 'settlement']);
    await expect(page.locator('.operator-actions')).toHaveCount(0);
    // A viewer's form post is refused and changes nothing.
    const r = await page.request.post(`/sessions/${enc(session)}/operations/${enc(id)}/notes`, {
      form: { text: 'not allowed' }, headers: { Origin: signedInUrl }, maxRedirects: 0,
    });
    expect(r.status()).toBe(403);
    await page.reload();
    expect(await kinds(page)).toEqual(['approval', 'intent', 'settlement']);
  } finally {
    await context.close();
  }
});

test('a viewer never sees a staff note, its count or a staff name: the history says "by support"', async ({ browser }, info) => {
  test.setTimeout(180_000);
  const session = unique('e2e-ops-internal');
  const id = `${session}-refund`;
  const host = new Host(api, session);
  await host.settled('turn-1', id, 'outcome_unknown', 'execution_timeout');
  const note = `Internal: the customer of ${id} is on the escalation list`;
  const opPath = `/sessions/${enc(session)}/operations/${enc(id)}`;
  const apiBase = `/api/sessions/${enc(session)}/mutations/${enc(id)}`;

  // Staff note the operation and reconcile it (the JSON API with the sign-in cookie and its Origin), and
  // see both on the page with their name.
  const staff = await browser.newContext({ baseURL: signedInUrl });
  try {
    const page = await staff.newPage();
    await signIn(page);
    const headers = { Origin: signedInUrl, 'Content-Type': 'application/json' };
    const noted = await page.request.post(`${apiBase}/notes`, { data: { text: note }, headers });
    expect(noted.status(), await noted.text()).toBe(201);
    const reconciled = await page.request.post(`${apiBase}/reconciliation`, {
      data: { attempt_id: 'att-1', completed: true, evidence: { source: 'payments-api', reference: 'refund re_123', observed_at: '2026-12-01T18:30:00Z' } },
      headers,
    });
    expect(reconciled.status(), await reconciled.text()).toBe(200);
    await page.goto(opPath);
    expect(await kinds(page)).toEqual(['approval', 'intent', 'settlement', 'note', 'reconciliation']);
    await expect(page.locator('li.change[data-kind="note"] .note')).toHaveText(note);
    await expect(page.locator('li.change[data-kind="note"]')).toContainText(`by staff ${staffName}`);
    await expect(page.locator('li.change[data-kind="reconciliation"]')).toContainText(`by staff ${staffName}`);
    await expect(page.locator('.note-internal')).toContainText('Notes are internal');
  } finally {
    await staff.close();
  }

  // The end user: the viewer link, the turn, "History →" on the operation's row.
  const link = await host.viewerLink(3600);
  const viewer = await browser.newContext({ baseURL: signedInUrl });
  try {
    const page = await viewer.newPage();
    await page.goto(link.url);
    await page.goto(host.turnPath('turn-1'));
    const row = page.locator('.timeline-row', { has: page.locator(`.outcome[data-mutation-id="${id}"]`) });
    await row.getByRole('link', { name: 'History →' }).click();
    await expect(page).toHaveURL(`${signedInUrl}${opPath}`);
    // Live: the page has hydrated and read the history again through the API as the viewer.
    await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
    expect(await kinds(page)).toEqual(['approval', 'intent', 'settlement', 'reconciliation']);
    const rec = page.locator('li.change[data-kind="reconciliation"]');
    await expect(rec).toContainText('by support');
    await expect(rec).toHaveAttribute('data-actor', 'staff');
    // The evidence staff typed (source, reference) is for staff: the end user reads when it was observed
    // and who established it, in words (docs/design.md "What the person sees").
    await expect(rec.locator('.evidence')).toContainText('Observed');
    await expect(page.locator('.current .established')).toHaveText(/^Confirmed completed by support \S/);
    const text = await page.locator('body').innerText();
    expect(text).not.toContain(note);
    expect(text).not.toContain(staffName);
    const html = await page.content();
    expect(html).not.toContain(note);
    expect(html).not.toContain(staffName);
    for (const typed of ['refund re_123', 'payments-api']) {
      expect(text).not.toContain(typed);
      expect(html).not.toContain(typed);
    }
    await expect(page.locator('.operator-actions')).toHaveCount(0);

    // The operation look-up page shows no count of notes.
    await page.goto(`/operations/${enc(id)}`);
    await expect(page.locator(`li.operation[data-mutation-id="${id}"]`)).toBeVisible();
    await expect(page.locator('li.operation .notes')).toHaveCount(0);
    expect(await page.content()).not.toContain(note);

    // The APIs as the viewer: no note row, no name, no count.
    const history = await (await page.request.get(`${apiBase}/history`)).json();
    expect(history.changes.map((c: { kind: string }) => c.kind)).toEqual(['approval', 'intent', 'settlement', 'reconciliation']);
    expect(history.changes.map((c: { actor: string }) => c.actor)).toEqual(['host', 'host', 'host', 'staff']);
    const found = await (await page.request.get(`/api/operations/${enc(id)}`)).json();
    expect(found.matches).toHaveLength(1);
    expect(found.matches[0]).not.toHaveProperty('notes');
    const exported = await (await page.request.get(`/api/sessions/${enc(session)}/export?history=true`)).text();
    expect(exported).not.toContain(note);
    expect(exported).not.toContain(staffName);

    // Screenshots of the viewer's operation page.
    const state = info.outputPath('viewer-state.json');
    await viewer.storageState({ path: state });
    await screenshots(browser, state, opPath, 'operation-viewer');
  } finally {
    await viewer.close();
  }
});
