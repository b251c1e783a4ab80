// The support desk (issue 41 item 3; docs/api.md "Claims", "Bulk actions", docs/design.md "The unknowns
// queue"): a bad evidence time keeps the page; a claim made in one tab shows on the operation page open in
// another within 2 s; the queue's "Mine" and "Nobody's" filters; handing an operation to a colleague; bulk
// reconciliation of selected rows after a confirmation listing each, refusals listed; ids never cut in the
// queue. A server of its own (`--access signed-in`, two staff accounts and a staff token). Screenshots of
// the queue and the bulk confirmation, desktop (1280×800) and phone (390×844), light and dark, in
// test-results/desk/.
import { test, expect, request as pwRequest, APIRequestContext, Browser, BrowserContext, Page } from '@playwright/test';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { batch, enc, unique } from './host';
import { OwnServer, outcomes } from './own-server';

const own = new OwnServer(Number(process.env.DESK_OWN_PORT) || 3430 + Math.floor(Math.random() * 20));
const base = own.base;
const suffix = Math.floor(Math.random() * 1e6);
const ada = `ada-${suffix}`;
const bo = `bo-${suffix}`;
const passwords: Record<string, string> = {};
let adaToken = '';
let dataDir = '';
let api: APIRequestContext;

test.beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-desk-'));
  await own.start(dataDir, ['--access', 'signed-in']);
  for (const name of [ada, bo]) {
    passwords[name] = outcomes(['staff', 'add', name, '--data-dir', dataDir]).trim().split('\n').pop()!;
  }
  adaToken = outcomes(['staff', 'token', ada, '--data-dir', dataDir]).trim().split('\n').pop()!;
  api = await pwRequest.newContext({ baseURL: base });
});

test.afterAll(async () => {
  await api?.dispose();
  await own.kill();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function staffContext(browser: Browser, name: string, options: object = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL: base, ...options });
  const page = await context.newPage();
  await page.goto('/sign-in');
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Password').fill(passwords[name]);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.locator('header [data-access="staff"]')).toHaveText(`Signed in as ${name}`);
  await page.close();
  return context;
}

async function hydrated(page: Page) {
  await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true', { timeout: 20_000 });
}

const asAda = () => ({ Authorization: `Bearer ${adaToken}`, 'Content-Type': 'application/json' });

function opPath(session: string, id: string) {
  return `/sessions/${enc(session)}/operations/${enc(id)}`;
}

/** Unknown outcomes written in one batch: `[mutation id, tool, title]` each, attempt `att-1`. */
async function unknowns(session: string, rows: [string, string, string][], turn = 'turn-1') {
  const ops: object[] = [];
  for (const [id, tool, title] of rows) {
    ops.push(
      { op: 'approve', session_key: session, logical_turn_id: turn, mutation_id: id, tool },
      { op: 'intent', session_key: session, mutation_id: id, attempt_id: 'att-1' },
      { op: 'settle', session_key: session, mutation_id: id, attempt_id: 'att-1', status: 'outcome_unknown', reason: 'execution_timeout' },
      { op: 'metadata', session_key: session, mutation_id: id, title },
    );
  }
  await batch(api, ops, base);
}

function queueRow(page: Page, id: string) {
  return page.locator('table.q tbody tr').filter({ has: page.getByRole('link', { name: id, exact: true }) });
}

test('a bad evidence time keeps the page: the site header, the form, the typed values, the field named', async ({ browser }) => {
  test.setTimeout(90_000);
  const u = unique('desk-time');
  const id = `${u}-refund`;
  await unknowns(u, [[id, 'mcp__payments__refund', 'Refund order 7']]);
  const context = await staffContext(browser, ada);
  const page = await context.newPage();
  await page.goto(opPath(u, id));
  await hydrated(page);
  const form = page.locator('form.reconcile-form');
  await form.getByLabel('It did not take effect (not executed)').check();
  await form.getByLabel('Evidence source').fill('payments status page');
  await form.getByLabel('Evidence reference').fill('INC-7');
  await form.getByLabel('Observed at (RFC 3339)').fill('18:50');
  await form.getByRole('button', { name: 'Reconcile' }).click();
  await expect(page.locator('main h1')).toHaveText('The outcome was not reconciled.');
  // The site's header: the way around and who is signed in.
  await expect(page.locator('header nav[aria-label="Main"] a[href="/unknowns"]')).toHaveText('Open unknowns');
  await expect(page.locator('header [data-access="staff"]')).toHaveText(`Signed in as ${ada}`);
  await expect(page.locator('header input[name="q"]')).toBeVisible();
  // The form with what was typed, the field named next to it.
  const again = page.locator('form.reconcile-form');
  await expect(again.locator('input[name="observed_at"]')).toHaveValue('18:50');
  await expect(again.locator('input[name="observed_at"]')).toHaveAttribute('aria-invalid', 'true');
  await expect(again.locator('#observed-at-error')).toContainText('Enter when you observed it at the provider');
  await expect(again.locator('input[name="source"]')).toHaveValue('payments status page');
  await expect(again.locator('input[name="reference"]')).toHaveValue('INC-7');
  await expect(again.locator('input[name="completed"][value="false"]')).toBeChecked();
  // Corrected and sent again: reconciled, back on the operation page.
  await again.locator('input[name="observed_at"]').fill('2026-12-06T18:50:00Z');
  await again.getByRole('button', { name: 'Reconcile' }).click();
  await expect(page).toHaveURL(`${base}${opPath(u, id)}`);
  await expect(page.locator('li.change[data-kind="reconciliation"]')).toHaveCount(1);
  await context.close();
});

test('a claim made in one tab shows on the operation page open in another within 2 s; release too; the queue at its next read', async ({ browser }) => {
  test.setTimeout(90_000);
  const u = unique('desk-live');
  const id = `${u}-refund`;
  await unknowns(u, [[id, 'mcp__payments__refund', 'Refund order 9']]);
  const adaContext = await staffContext(browser, ada);
  const boContext = await staffContext(browser, bo);
  const boPage = await boContext.newPage();
  await boPage.goto(opPath(u, id));
  await hydrated(boPage);
  await expect(boPage.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
  await expect(boPage.locator('.claim-holder')).toHaveText('Nobody is on it.');
  const boQueue = await boContext.newPage();
  await boQueue.goto(`/unknowns?session_like=${enc(u)}`);
  await expect(queueRow(boQueue, id).locator('td:nth-child(10)')).toHaveText("I'm on it");

  const adaPage = await adaContext.newPage();
  await adaPage.goto(opPath(u, id));
  await hydrated(adaPage);
  await adaPage.getByRole('button', { name: "I'm on it" }).click();
  const claimedAt = Date.now();
  await expect(boPage.locator('.claim-holder')).toContainText(`${ada} is on it`, { timeout: 2_000 });
  console.log(`figures: the claim showed in the other tab after ${Date.now() - claimedAt} ms`);
  await expect(boPage.locator('li.change[data-kind="claim"]')).toHaveAttribute('data-actor', `staff:${ada}`);

  // The queue shows it at its next read.
  await boQueue.reload();
  await expect(queueRow(boQueue, id).locator('td:nth-child(10)')).toHaveText(`${ada} is on it`);

  await adaPage.getByRole('button', { name: 'Release' }).click();
  const releasedAt = Date.now();
  await expect(boPage.locator('.claim-holder')).toHaveText('Nobody is on it.', { timeout: 2_000 });
  console.log(`figures: the release showed in the other tab after ${Date.now() - releasedAt} ms`);
  await adaContext.close();
  await boContext.close();
});

test('staff hand an operation to a named colleague; an unknown name is refused naming the field', async ({ browser }) => {
  test.setTimeout(90_000);
  const u = unique('desk-assign');
  const id = `${u}-refund`;
  await unknowns(u, [[id, 'mcp__payments__refund', 'Refund order 11']]);
  const context = await staffContext(browser, ada);
  const page = await context.newPage();
  await page.goto(opPath(u, id));
  await hydrated(page);
  await page.getByLabel('Hand it to a colleague').fill('nobody-at-all');
  await page.getByRole('button', { name: 'Assign', exact: true }).click();
  await expect(page.locator('main h1')).toHaveText('The operation was not assigned.');
  await expect(page.locator('.operator-refusal')).toHaveText('There is no staff account named "nobody-at-all" Enter the name of a staff account, as it signs in.');
  await expect(page.locator('header [data-access="staff"]')).toHaveText(`Signed in as ${ada}`);

  await page.goto(opPath(u, id));
  await hydrated(page);
  await page.getByLabel('Hand it to a colleague').fill(bo);
  await page.getByRole('button', { name: 'Assign', exact: true }).click();
  await expect(page).toHaveURL(`${base}${opPath(u, id)}`);
  await expect(page.locator('.claim-holder')).toContainText(`${bo} is on it`);
  const row = page.locator('li.change[data-kind="claim"]');
  await expect(row).toHaveAttribute('data-actor', `staff:${ada}`);
  await expect(row).toContainText(`Assigned to ${bo}`);
  await context.close();
});

test('the queue filters "Mine" and "Nobody\'s" in its address; ids and tool names are never cut', async ({ browser }) => {
  test.setTimeout(120_000);
  const u = unique('desk-mine');
  const long = `${u}-${'b7f3c2a1'.repeat(8)}`;
  await unknowns(u, [
    [`${u}-a`, 'mcp__jira__transition_issue', 'Move PROJ-1 to Done'],
    [`${u}-b`, 'mcp__jira__transition_issue', 'Move PROJ-2 to Done'],
    [long, 'mcp__jira__transition_issue_with_a_rather_long_name', 'Move PROJ-3 to Done'],
  ], `turn-${'b7f3'.repeat(6)}`);
  expect((await api.post(`/api/sessions/${enc(u)}/mutations/${enc(`${u}-a`)}/claim`, { headers: asAda() })).status()).toBe(201);
  const context = await staffContext(browser, bo);
  const page = await context.newPage();
  expect((await context.request.post(`/api/sessions/${enc(u)}/mutations/${enc(`${u}-b`)}/claim`, { headers: { Origin: base } })).status()).toBe(201);

  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`/unknowns?session_like=${enc(u)}`);
  await expect(page.locator('table.q tbody tr')).toHaveCount(3);
  // Nothing is cut: each id, session, turn and tool cell shows its whole text.
  const cut = await page.locator('table.q tbody td').evaluateAll(tds => tds
    .filter(td => [3, 5, 6, 7].includes((td as HTMLTableCellElement).cellIndex + 1))
    .filter(td => td.scrollWidth > td.clientWidth + 1)
    .map(td => td.textContent));
  expect(cut).toEqual([]);
  await expect(queueRow(page, long)).toHaveCount(1);
  await expect(queueRow(page, long).locator('td:nth-child(3)')).toHaveText('mcp__jira__transition_issue_with_a_rather_long_name');
  await expect(queueRow(page, long).locator('td:nth-child(7) a')).toHaveText(long);
  // Every row stays one 16 px line; at 1280×800 the table scrolls sideways under its last column (Status),
  // which is pinned to the right edge, so it is on screen before and after scrolling.
  for (const id of [`${u}-a`, long]) {
    expect(await queueRow(page, id).evaluate(tr => tr.getBoundingClientRect().height)).toBeLessThanOrEqual(16.5);
  }
  expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
  const statusCell = queueRow(page, long).locator('td').last();
  await expect(statusCell).toHaveText('Unknown');
  for (const scroll of [0, 10_000]) {
    await page.locator('.qs').evaluate((d, x) => { d.scrollLeft = x; }, scroll);
    const box = (await statusCell.boundingBox())!;
    expect(box.x).toBeGreaterThan(0);
    expect(box.x + box.width).toBeLessThanOrEqual(1280);
    // Nothing is drawn over it: the point at its middle is the cell itself.
    expect(await page.evaluate(([x, y]) => document.elementFromPoint(x, y)?.closest('td')?.textContent, [box.x + box.width / 2, box.y + box.height / 2])).toBe('Unknown');
  }

  await page.getByLabel('On it').selectOption('mine');
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(/[?&]claim=mine(&|$)/);
  await expect(page.locator('table.q tbody tr')).toHaveCount(1);
  await expect(queueRow(page, `${u}-b`)).toHaveCount(1);
  await expect(page.getByLabel('On it')).toHaveValue('mine');

  await page.getByLabel('On it').selectOption('unclaimed');
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(/[?&]claim=unclaimed(&|$)/);
  await expect(page.locator('table.q tbody tr')).toHaveCount(1);
  await expect(queueRow(page, long)).toHaveCount(1);
  await context.close();
});

const looks = [['desktop', 1280, 800, 'light'], ['desktop', 1280, 800, 'dark'], ['phone', 390, 844, 'light'], ['phone', 390, 844, 'dark']] as const;

test('bulk: reconcile selected rows with one piece of evidence after a confirmation listing each; refusals listed; works without JavaScript', async ({ browser }) => {
  test.setTimeout(180_000);
  const u = unique('desk-bulk');
  const ids = [0, 1, 2].map(i => `${u}-incident-${i}`);
  await unknowns(u, ids.map((id, i) => [id, 'mcp__payments__refund', `Refund order ${500 + i} (provider incident INC-2041)`] as [string, string, string]));
  const shots = 'test-results/desk';

  // The queue, looked at (desktop and phone, light and dark).
  for (const [device, width, height, colorScheme] of looks) {
    const c = await staffContext(browser, ada, { viewport: { width, height }, colorScheme });
    const p = await c.newPage();
    await p.goto(`/unknowns?session_like=${enc(u)}`);
    await hydrated(p);
    await p.screenshot({ path: `${shots}/queue-${device}-${colorScheme}.png`, fullPage: true });
    await c.close();
  }

  // Once interactive, rows ticked on the queue are claimed together (and the result lists each).
  const js = await staffContext(browser, bo);
  const jsPage = await js.newPage();
  await jsPage.goto(`/unknowns?session_like=${enc(u)}`);
  await hydrated(jsPage);
  for (const id of ids) await jsPage.getByRole('checkbox', { name: id, exact: true }).check();
  await jsPage.getByRole('button', { name: 'Claim selected' }).click();
  await expect(jsPage).toHaveURL(`${base}/unknowns/bulk`);
  await expect(jsPage.locator('.bulk-summary')).toHaveText('All 3 done.');
  await expect(jsPage.locator('table.bulk-list tbody td.result')).toHaveText(Array(3).fill('Claimed: you are on it'));
  await jsPage.goto(`/unknowns?session_like=${enc(u)}`);
  await hydrated(jsPage);
  for (const id of ids) await jsPage.getByRole('checkbox', { name: id, exact: true }).check();
  await jsPage.getByRole('button', { name: 'Release selected' }).click();
  await expect(jsPage.locator('table.bulk-list tbody td.result')).toHaveText(Array(3).fill('Released'));
  await js.close();

  // Without JavaScript: "Reconcile selected…" opens a page to select rows on (the queue's filters), then
  // the confirmation lists every operation with the attempt it is reconciled about.
  const context = await staffContext(browser, ada, { javaScriptEnabled: false });
  const page = await context.newPage();
  const confirm = async (p: Page) => {
    await p.goto(`/unknowns?session_like=${enc(u)}`);
    await p.getByRole('button', { name: 'Reconcile selected…' }).click();
    await expect(p.locator('main h1')).toHaveText('Select the operations to act on');
    for (const id of ids) await p.getByRole('checkbox', { name: new RegExp(`^${id} `) }).check();
    await p.getByRole('button', { name: 'Reconcile selected…' }).click();
    await expect(p).toHaveURL(`${base}/unknowns/bulk`);
  };
  await confirm(page);
  await expect(page.locator('main h1')).toHaveText('Reconcile 3 operations with one piece of evidence');
  await expect(page.locator('table.bulk-list tbody tr')).toHaveCount(3);
  for (const id of ids) await expect(page.locator('table.bulk-list tbody').getByRole('link', { name: id, exact: true })).toBeVisible();
  await expect(page.locator('table.bulk-list tbody td:nth-child(5)')).toHaveText(['att-1', 'att-1', 'att-1']);

  // The confirmation, looked at (desktop and phone, light and dark): nothing is done by showing it.
  const state = await context.storageState();
  for (const [device, width, height, colorScheme] of looks) {
    const c = await browser.newContext({ baseURL: base, viewport: { width, height }, colorScheme, storageState: state, javaScriptEnabled: false });
    const p = await c.newPage();
    await confirm(p);
    await expect(p.locator('table.bulk-list tbody tr')).toHaveCount(3);
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, `confirmation ${device} ${colorScheme} overflows`).toBeLessThanOrEqual(0);
    await p.screenshot({ path: `${shots}/bulk-confirmation-${device}-${colorScheme}.png`, fullPage: true });
    await c.close();
  }

  // Someone else reconciles one meanwhile.
  const other = await api.post(`/api/sessions/${enc(u)}/mutations/${enc(ids[1])}/reconciliation`, {
    headers: asAda(),
    data: { attempt_id: 'att-1', completed: true, evidence: { source: 'payments-api', reference: 'refund re_9', observed_at: '2026-12-06T18:40:00Z' } },
  });
  expect(other.status()).toBe(200);

  // A bad time first: the confirmation again, every row and every value kept, the field named.
  const form = page.locator('form.bulk-reconcile-form');
  await form.getByLabel('They did not take effect (not executed)').check();
  await form.getByLabel('Evidence source').fill('payments status page');
  await form.getByLabel('Evidence reference').fill('INC-2041');
  await form.getByLabel('Observed at (RFC 3339)').fill('18:50');
  await form.getByRole('button', { name: 'Reconcile these 3' }).click();
  await expect(page.locator('#observed-at-error')).toContainText('Enter when you observed it at the provider');
  await expect(page.locator('table.bulk-list tbody tr')).toHaveCount(3);
  await expect(page.locator('input[name="reference"]')).toHaveValue('INC-2041');
  await expect(page.locator('header [data-access="staff"]')).toHaveText(`Signed in as ${ada}`);
  // Corrected: two reconciled, the one settled meanwhile refused and listed.
  await page.locator('input[name="observed_at"]').fill('2026-12-06T18:50:00Z');
  await page.getByRole('button', { name: 'Reconcile these 3' }).click();
  await expect(page.locator('.bulk-summary')).toHaveText('2 of 3 done; 1 refused (nothing changed for it).');
  const results = page.locator('table.bulk-list tbody td.result');
  await expect(results).toHaveText(['Reconciled', 'Refused: This outcome is not unknown: it is already settled, so there is nothing to reconcile.', 'Reconciled']);
  await page.screenshot({ path: `${shots}/bulk-result-desktop-light.png`, fullPage: true });
  // Each its own history row, about its own attempt.
  for (const id of [ids[0], ids[2]]) {
    const h = await (await api.get(`/api/sessions/${enc(u)}/mutations/${enc(id)}/history`, { headers: asAda() })).json();
    const rec = h.changes.filter((c: { kind: string }) => c.kind === 'reconciliation');
    expect(rec.map((c: { actor: string; attempt_id: string; evidence: { reference: string } }) => [c.actor, c.attempt_id, c.evidence.reference])).toEqual([[`staff:${ada}`, 'att-1', 'INC-2041']]);
  }
  await context.close();
});
