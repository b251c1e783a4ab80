// The staff workbench (issue 26; docs/design.md "The unknowns queue", "Search"): the header's search as
// you type, the queue as a dense table (sorted, filtered, 50 rows a screen, 200 rows within 150 KB of HTML),
// bulk open, claims seen by a second staff member (409 included), and what a viewer never sees. A server
// of its own: reads closed (`--access signed-in`), two staff accounts and a staff token. axe light and
// dark; screenshots desktop (1280×800) and phone (390×844), light and dark, in test-results/workbench/.
import { test, expect, request as pwRequest, APIRequestContext, Browser, BrowserContext, Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Host, batch, enc, unique } from './host';
import { OwnServer, outcomes } from './own-server';

const own = new OwnServer(3360 + Math.floor(Math.random() * 30));
const base = own.base;
const suffix = Math.floor(Math.random() * 1e6);
const ada = `ada-${suffix}`;
const bo = `bo-${suffix}`;
const passwords: Record<string, string> = {};
let adaToken = '';
let dataDir = '';
let api: APIRequestContext;

test.beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-workbench-'));
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

/** Unknown outcomes written in one batch: `[mutation id, tool, title]` each, in session `session`. */
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
  await batch(api, ops);
}

/** The operation ids of the queue's rows, in order (column 7, each row's link to its page). */
function rowIds(page: Page) {
  return page.locator('table.q tbody tr td:nth-child(7) a').allTextContents();
}

/** The queue's row of operation `id`. */
function queueRow(page: Page, id: string) {
  return page.locator('table.q tbody tr').filter({ has: page.getByRole('link', { name: id, exact: true }) });
}

/** A cell of a queue row, by its column: the columns are select, age, tool, title, session, turn,
 *  operation id, notes, last note, on it. */
const columns = ['select', 'age', 'tool', 'title', 'session', 'turn', 'id', 'notes', 'note', 'claim'] as const;
function cell(row: ReturnType<Page['locator']>, column: typeof columns[number]) {
  return row.locator(`td:nth-child(${columns.indexOf(column) + 1})`);
}

const combobox = (page: Page) => page.getByRole('combobox', { name: 'Search sessions and operations' });

test('search as you type: a prefix and a substring, case-insensitively, grouped, by keyboard; without JavaScript /find', async ({ browser }) => {
  test.setTimeout(90_000);
  const u = unique('wb-find');
  const session = `${u}-Support-Chat`;
  const id = `${u}-OP-Refund`;
  await unknowns(session, [[id, 'Refund_Payment', `Refund Order 4471 ${u}`]]);
  const context = await staffContext(browser, ada);
  const page = await context.newPage();
  await page.goto('/');
  await hydrated(page);

  // Debounced: eight keys typed 30 ms apart ask the server once.
  const asked: string[] = [];
  page.on('request', r => { if (new URL(r.url()).pathname === '/api/search') asked.push(new URL(r.url()).searchParams.get('q')!); });
  const box = combobox(page);
  await box.pressSequentially(`${u}-sup`.toLowerCase(), { delay: 30 });
  const list = page.getByRole('listbox', { name: 'Search results' });
  await expect(list).toBeVisible();
  await expect(box).toHaveAttribute('aria-expanded', 'true');
  const sessions = list.getByRole('group', { name: 'Sessions' });
  await expect(sessions.getByRole('option')).toHaveCount(1);
  await expect(sessions.getByRole('option').first()).toContainText(session);
  await expect(sessions.getByRole('option').first()).toHaveAttribute('href', `/sessions/${enc(session)}`);
  expect(asked).toEqual([`${u}-sup`.toLowerCase()]);

  // A substring of the title, another case: the operation, linking to its own page.
  await box.fill(`order 4471 ${u}`.toUpperCase());
  const operations = list.getByRole('group', { name: 'Operations' });
  await expect(operations.getByRole('option')).toHaveCount(1);
  await expect(operations.getByRole('option').first()).toContainText(id);
  await expect(operations.getByRole('option').first()).toContainText('unknown');
  await expect(list.getByRole('group', { name: 'Sessions' })).toHaveCount(0);

  // Keyboard: down to the operation, Escape closes, Escape again empties; Enter opens the active one.
  await box.press('ArrowDown');
  const first = operations.getByRole('option').first();
  await expect(first).toHaveAttribute('aria-selected', 'true');
  await expect(box).toHaveAttribute('aria-activedescendant', (await first.getAttribute('id'))!);
  await box.press('ArrowDown');
  await expect(list.getByRole('option', { name: /All results for/ })).toHaveAttribute('aria-selected', 'true');
  await box.press('ArrowUp');
  await expect(first).toHaveAttribute('aria-selected', 'true');
  await box.press('Escape');
  await expect(list).toBeHidden();
  await expect(box).toHaveAttribute('aria-expanded', 'false');
  await box.press('Escape');
  await expect(box).toHaveValue('');
  await box.pressSequentially(`order 4471 ${u}`, { delay: 10 });
  await expect(operations.getByRole('option')).toHaveCount(1);
  await box.press('ArrowDown');
  await box.press('Enter');
  await expect(page).toHaveURL(base + opPath(session, id));
  await expect(page.locator('main h1')).toHaveText(`Operation ${id}`);

  // Nothing contains it: said in words.
  await combobox(page).fill(`${u}-nothing-like-this`);
  await expect(page.locator('.search-none')).toHaveText(`No session or operation contains “${u}-nothing-like-this”.`);
  await context.close();

  // Without JavaScript the header's box is a form to /find: an exact operation id goes straight to its
  // page (303), a substring lists what contains it, grouped.
  const noJs = await staffContext(browser, ada, { javaScriptEnabled: false });
  const plain = await noJs.newPage();
  await plain.goto('/');
  await plain.locator('header input[name="q"]').fill(id);
  await plain.locator('header input[name="q"]').press('Enter');
  await expect(plain).toHaveURL(base + opPath(session, id));
  const redirect = await plain.request.get(`/find?q=${enc(id)}`, { maxRedirects: 0 });
  expect(redirect.status()).toBe(303);
  expect(redirect.headers()['location']).toBe(opPath(session, id));
  await plain.goto(`/find?q=${enc(u.toUpperCase())}`);
  await expect(plain.locator('.found-sessions h2')).toHaveText(`Sessions containing “${u.toUpperCase()}”`);
  await expect(plain.locator('.found-sessions li')).toHaveCount(1);
  await expect(plain.locator('.found-sessions a')).toHaveAttribute('href', `/sessions/${enc(session)}`);
  await expect(plain.locator('.found-operations li')).toHaveCount(1);
  await expect(plain.locator('.found-operations a')).toHaveAttribute('href', opPath(session, id));
  // What contains the text answers it: no "nothing has this id" line above the results.
  await expect(plain.locator('.no-match')).toHaveCount(0);
  await noJs.close();
});

/** Operations settled `completed` in one batch: `[session, turn, mutation id, title]` each. */
async function completed(rows: [string, string, string, string][]) {
  const ops: object[] = [];
  for (const [session, turn, id, title] of rows) {
    ops.push(
      { op: 'approve', session_key: session, logical_turn_id: turn, mutation_id: id, tool: 'calendar.create_event' },
      { op: 'intent', session_key: session, mutation_id: id, attempt_id: 'att-1' },
      { op: 'settle', session_key: session, mutation_id: id, attempt_id: 'att-1', status: 'completed' },
      { op: 'metadata', session_key: session, mutation_id: id, title },
    );
  }
  await batch(api, ops);
}

test('a two-character word inside a title is found (退款 in “退款已处理”), as you type and without JavaScript; identical titles are told apart by session, turn and time', async ({ browser }) => {
  test.setTimeout(180_000);
  const u = unique('wb-short');
  const refund = `${u}-zh`;
  const id = `${u}-refund-op`;
  await unknowns(refund, [[id, 'Refund_Payment', '退款已处理']], 'turn-7');
  // Eleven operations of one title over three sessions and several turns (issue 41).
  const same = '1:1 mit Jürgen Müller';
  const rows: [string, string, string, string][] = [];
  for (let i = 0; i < 11; i++) rows.push([`${u}-${['anna', 'bert', 'cleo'][i % 3]}`, `turn-${Math.floor(i / 3) + 1}`, `${u}-meet-${i}`, same]);
  await completed(rows);

  const context = await staffContext(browser, ada);
  const page = await context.newPage();
  await page.goto('/');
  await hydrated(page);
  await combobox(page).fill('退款');
  const list = page.getByRole('listbox', { name: 'Search results' });
  const option = list.getByRole('group', { name: 'Operations' }).locator(`a[href="${opPath(refund, id)}"]`);
  await expect(option).toContainText('退款已处理 · unknown');
  await expect(option.locator('.hit-place')).toContainText('Turn 1 · ');
  await expect(option.locator('.hit-place')).toContainText(` · ${refund}`);
  await expect(option.locator('.hit-place time')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  await context.close();

  // Without JavaScript: /find lists it; nothing says that no title contains the text.
  const noJs = await staffContext(browser, ada, { javaScriptEnabled: false });
  const plain = await noJs.newPage();
  await plain.goto(`/find?q=${enc('退款')}`);
  const found = plain.locator(`.found-operations a[href="${opPath(refund, id)}"]`);
  await expect(found).toContainText('退款已处理 · unknown');
  await expect(found).toContainText('Turn 1 · recorded ');
  await expect(plain.locator('.no-match')).toHaveCount(0);
  await expect(plain.locator('.search-results .search-window')).toHaveCount(0);
  // The same title eleven times: grouped by session, each row with its turn and times.
  await plain.goto(`/find?q=${enc(same)}`);
  for (const [name, count] of [['anna', 4], ['bert', 4], ['cleo', 3]] as const) {
    const group = plain.locator('.found-operations .hit-group').filter({ has: plain.locator('h3', { hasText: `${u}-${name}` }) });
    await expect(group.locator('li')).toHaveCount(count);
    await expect(group.locator('li').first()).toContainText(`${same} · completed`);
    await expect(group.locator('li').first()).toContainText(`Turn ${count} · recorded `);
    await expect(group.locator('li').first().locator('time')).toHaveCount(2);
    await expect(group.locator('li').first().locator('time[data-clock]')).toHaveCount(1);
  }
  await noJs.close();

  // Looked at: desktop and phone, light and dark; axe on each.
  const shots = 'test-results/workbench';
  for (const [device, width, height] of [['desktop', 1280, 800], ['phone', 390, 844]] as const) {
    for (const colorScheme of ['light', 'dark'] as const) {
      const look = await staffContext(browser, bo, { viewport: { width, height }, colorScheme });
      const p = await look.newPage();
      await p.goto(`/find?q=${enc(same)}`);
      await hydrated(p);
      await expect(p.locator('.found-operations li')).toHaveCount(11);
      await axe(p, `find same titles ${device} ${colorScheme}`);
      const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `find ${device} ${colorScheme} overflows`).toBeLessThanOrEqual(0);
      await p.screenshot({ path: `${shots}/find-same-titles-${device}-${colorScheme}.png`, fullPage: true });
      await openSearch(p, same);
      await p.screenshot({ path: `${shots}/search-same-titles-${device}-${colorScheme}.png` });
      await look.close();
    }
  }
});

test('the queue sorts by age, tool and session and filters by substrings, age and settle time in the address', async ({ browser }) => {
  test.setTimeout(90_000);
  const u = unique('wb-sort');
  const a = `${u}-Alpha`;
  const b = `${u}-beta`;
  await unknowns(b, [[`${u}-1`, 'Create_Issue', 'Issue about the login page']]);
  await new Promise(r => setTimeout(r, 1100));
  await unknowns(a, [[`${u}-2`, 'delete_branch', 'Delete branch feature/x'], [`${u}-3`, 'Archive_Repo', 'Archive the old repository']]);
  const context = await staffContext(browser, ada);
  const page = await context.newPage();

  // Oldest first by default.
  await page.goto(`/unknowns?session_like=${enc(u.toUpperCase())}`);
  await expect(page.locator('.page-count')).toHaveText('Showing 3 of 3 open unknowns');
  expect((await rowIds(page))[0]).toBe(`${u}-1`);
  await expect(page.locator('th[aria-sort]')).toHaveText('Age ↓');
  await expect(page.locator('th[aria-sort]')).toHaveAttribute('aria-sort', 'descending');
  const row = queueRow(page, `${u}-1`);
  await expect(cell(row, 'tool')).toHaveText('Create_Issue');
  await expect(cell(row, 'title')).toHaveText('Issue about the login page');
  await expect(cell(row, 'age')).toHaveText(/^\d+ s$/);
  await expect(cell(row, 'id').locator('a')).toHaveAttribute('href', opPath(b, `${u}-1`));
  await expect(row.getByRole('link', { name: b })).toHaveAttribute('href', `/sessions/${enc(b)}`);
  await expect(row.getByRole('button', { name: "I'm on it" })).toBeVisible();
  // Staff words only: nothing tells support to quote the id to support.
  await expect(page.locator('main')).not.toContainText('to support');

  // Newest first: the Age header turns the order around.
  await page.getByRole('link', { name: 'Age ↓' }).click();
  await expect(page).toHaveURL(/sort=age&order=asc/);
  expect((await rowIds(page))[2]).toBe(`${u}-1`);
  // By tool, A→Z, then Z→A.
  await page.getByRole('link', { name: 'Tool', exact: true }).click();
  await expect(page).toHaveURL(/sort=tool&order=asc/);
  expect(await rowIds(page)).toEqual([`${u}-3`, `${u}-1`, `${u}-2`]);
  await page.getByRole('link', { name: 'Tool ↑' }).click();
  expect(await rowIds(page)).toEqual([`${u}-2`, `${u}-1`, `${u}-3`]);
  // By session, A→Z: Alpha's two first.
  await page.getByRole('link', { name: 'Session', exact: true }).click();
  await expect(page).toHaveURL(/sort=session&order=asc/);
  expect((await rowIds(page))[2]).toBe(`${u}-1`);

  // The form: the tool in lower case finds Create_Issue; the order is kept.
  await page.getByLabel('Tool contains').fill('create_issue');
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(/tool_like=create_issue/);
  await expect(page).toHaveURL(/sort=session/);
  expect(await rowIds(page)).toEqual([`${u}-1`]);

  // Settle time: none settled after an hour from now; all before it.
  const later = new Date(Date.now() + 3600_000).toISOString().slice(0, 16);
  await page.goto(`/unknowns?session_like=${enc(u)}&settled_after=${enc(later)}`);
  await expect(page.locator('.page-count')).toHaveText('Showing 0 of 0 open unknowns');
  await expect(page.getByLabel('Settled from (UTC)')).toHaveValue(later);
  await page.goto(`/unknowns?session_like=${enc(u)}&settled_before=${enc(later)}`);
  await expect(page.locator('.page-count')).toHaveText('Showing 3 of 3 open unknowns');
  // Age: none open a day.
  await page.goto(`/unknowns?session_like=${enc(u)}&min_age_secs=86400`);
  await expect(page.locator('.page-count')).toHaveText('Showing 0 of 0 open unknowns');
  await context.close();
});

test('bulk select opens several operation pages at once; pages a pop-up blocker refused are listed as links', async ({ browser }) => {
  const u = unique('wb-bulk');
  await unknowns(u, [[`${u}-1`, 'tool_a', 'First'], [`${u}-2`, 'tool_b', 'Second'], [`${u}-3`, 'tool_c', 'Third']]);
  const context = await staffContext(browser, ada);
  const page = await context.newPage();
  await page.goto(`/unknowns?session_like=${enc(u)}`);
  await hydrated(page);
  const open = page.getByRole('button', { name: /^Open selected/ });
  await expect(open).toHaveText('Open selected (0)');
  await expect(open).toBeDisabled();
  await page.getByRole('checkbox', { name: `${u}-1` }).check();
  await page.getByRole('checkbox', { name: `${u}-3` }).check();
  await expect(open).toHaveText('Open selected (2)');
  const opened: Page[] = [];
  context.on('page', p => opened.push(p));
  await open.click();
  await expect.poll(() => opened.length).toBe(2);
  for (const p of opened) await p.waitForLoadState('domcontentloaded');
  expect(opened.map(p => new URL(p.url()).pathname).sort()).toEqual([opPath(u, `${u}-1`), opPath(u, `${u}-3`)].sort());
  await expect(page.locator('.queue-said')).toHaveText('Opened 2 operation pages in new tabs.');
  for (const p of opened) await p.close();

  // The selection outlives the page's refresh; "Select every row" ticks all three.
  await page.locator('.as-of button.refresh').click();
  await expect(open).toHaveText('Open selected (2)');
  await page.getByRole('checkbox', { name: 'Select every row' }).check();
  await expect(open).toHaveText('Open selected (3)');
  await page.getByRole('button', { name: 'Clear selection' }).click();
  await expect(open).toHaveText('Open selected (0)');

  // A browser that lets one window open per click: the rest are offered as links.
  await page.addInitScript(() => {
    let n = 0;
    const real = window.open.bind(window);
    window.open = ((...args: Parameters<typeof window.open>) => (n++ === 0 ? real(...args) : null)) as typeof window.open;
  });
  await page.reload();
  await hydrated(page);
  opened.length = 0;
  await page.getByRole('checkbox', { name: 'Select every row' }).check();
  await open.click();
  await expect.poll(() => opened.length).toBe(1);
  await expect(page.locator('.queue-said')).toHaveText('The browser opened 1 of 3 pages and blocked the rest. Allow pop-ups for this site, or open them here:');
  await expect(page.locator('ul.blocked a')).toHaveCount(2);
  await context.close();
});

test('a claim made on one staff page is seen by a second staff member, whose own claim is refused (409) in words', async ({ browser }) => {
  test.setTimeout(90_000);
  const u = unique('wb-claim');
  const id = `${u}-refund`;
  await unknowns(u, [[id, 'refund_payment', 'Refund order 9']]);
  const adaContext = await staffContext(browser, ada);
  const boContext = await staffContext(browser, bo);
  const queue = await adaContext.newPage();
  const boPage = await boContext.newPage();

  // Bo opens the operation page while nobody is on it.
  await boPage.goto(opPath(u, id));
  await hydrated(boPage);
  await expect(boPage.locator('.claim-holder')).toHaveText('Nobody is on it.');

  // Ada claims it from the queue.
  await queue.goto(`/unknowns?session_like=${enc(u)}`);
  await hydrated(queue);
  const row = queueRow(queue, id);
  await row.getByRole('button', { name: "I'm on it" }).click();
  await expect(queue.locator('.queue-said')).toHaveText(`You are on ${id} now.`);
  await expect(cell(queueRow(queue, id), 'claim')).toHaveText(`${ada} is on it`);

  // Bo's queue shows who is on it; the page Bo opened before shows it too, live (a claim reaches the open
  // operation pages, docs/api.md "Claims"), so it offers no claim of its own; one made anyway is refused.
  const boQueue = await boContext.newPage();
  await boQueue.goto(`/unknowns?session_like=${enc(u)}`);
  await expect(cell(queueRow(boQueue, id), 'claim')).toHaveText(`${ada} is on it`);
  await expect(boPage.locator('.claim-holder')).toContainText(`${ada} is on it · since`);
  await expect(boPage.getByRole('button', { name: "I'm on it" })).toHaveCount(0);
  const refused = await boContext.request.post(`/api/sessions/${enc(u)}/mutations/${enc(id)}/claim`, { headers: { Origin: base } });
  expect(refused.status()).toBe(409);
  const body = await refused.json();
  expect(body.error.code).toBe('already_claimed');

  // The history keeps the claim with Ada's name; Ada releases it from the operation page.
  const adaPage = await adaContext.newPage();
  await adaPage.goto(opPath(u, id));
  await hydrated(adaPage);
  await expect(adaPage.locator('li.change[data-kind="claim"]')).toHaveAttribute('data-actor', `staff:${ada}`);
  await adaPage.getByRole('button', { name: 'Release' }).click();
  await expect(adaPage.locator('.claim-holder')).toHaveText('Nobody is on it.');
  await expect(adaPage.locator('li.change[data-kind="release"]')).toHaveCount(1);
  await boQueue.reload();
  await expect(cell(queueRow(boQueue, id), 'claim')).toHaveText("I'm on it");

  // Without JavaScript the queue offers no claim button (it needs the page interactive); the operation
  // page's button is a form post, answered back to that page, and the queue then names who is on it.
  const noJs = await staffContext(browser, bo, { javaScriptEnabled: false });
  const plain = await noJs.newPage();
  await plain.goto(`/unknowns?session_like=${enc(u)}`);
  await expect(queueRow(plain, id).getByRole('button', { name: "I'm on it" })).toBeHidden();
  await queueRow(plain, id).getByRole('link', { name: id, exact: true }).click();
  await expect(plain).toHaveURL(base + opPath(u, id));
  await plain.locator('.claim-box').getByRole('button', { name: "I'm on it" }).click();
  await expect(plain).toHaveURL(base + opPath(u, id));
  await expect(plain.locator('.claim-holder')).toContainText(`${bo} is on it`);
  await plain.goto(`/unknowns?session_like=${enc(u)}`);
  await expect(cell(queueRow(plain, id), 'claim')).toHaveText(`${bo} is on it`);
  await Promise.all([noJs.close(), adaContext.close(), boContext.close()]);
});

test('an operation with a long history shows its newest 100 changes and links to older ones', async ({ browser }) => {
  test.setTimeout(90_000);
  const u = unique('wb-long');
  const id = `${u}-op`;
  await unknowns(u, [[id, 'refund_payment', 'Refund order 13']]);
  // 4 changes (approve, intent, settle, metadata) and 105 notes: 109 rows.
  for (let i = 0; i < 105; i++) {
    const noted = await api.post(`/api/sessions/${enc(u)}/mutations/${enc(id)}/notes`, { headers: asAda(), data: { text: `Note ${i}` } });
    expect(noted.status()).toBe(201);
  }
  const context = await staffContext(browser, ada);
  const page = await context.newPage();
  await page.goto(opPath(u, id));
  await hydrated(page);
  await expect(page.locator('li.change')).toHaveCount(100);
  await expect(page.locator('li.change').last().locator('.note')).toHaveText('Note 104');
  await expect(page.locator('li.change').first().locator('.note')).toHaveText('Note 5');
  await expect(page.locator('.claim-holder')).toHaveText('Nobody is on it.');
  await page.getByRole('link', { name: 'Older changes →' }).click();
  await expect(page).toHaveURL(/\?history_after=/);
  await expect(page.getByRole('heading', { name: 'Older changes' })).toBeVisible();
  await expect(page.locator('li.change')).toHaveCount(9);
  await expect(page.locator('li.change').first()).toHaveAttribute('data-kind', 'approval');
  await expect(page.locator('li.change').last().locator('.note')).toHaveText('Note 4');
  await expect(page.getByRole('link', { name: 'Older changes →' })).toHaveCount(0);
  await page.getByRole('link', { name: '← Newest changes and where it stands' }).click();
  await expect(page).toHaveURL(base + opPath(u, id));
  await expect(page.locator('li.change')).toHaveCount(100);
  await context.close();
});

test('a viewer sees no search box, no claim and no notes', async ({ browser }) => {
  const u = unique('wb-viewer');
  const id = `${u}-op`;
  await unknowns(u, [[id, 'refund_payment', 'Refund order 12']]);
  const claimed = await api.post(`/api/sessions/${enc(u)}/mutations/${enc(id)}/claim`, { headers: asAda() });
  expect(claimed.status()).toBe(201);
  const noted = await api.post(`/api/sessions/${enc(u)}/mutations/${enc(id)}/notes`, { headers: asAda(), data: { text: 'Asked the provider.' } });
  expect(noted.status()).toBe(201);
  const link = await new Host(api, u).viewerLink();
  const context = await browser.newContext({ baseURL: base });
  const page = await context.newPage();
  await page.goto(link.url);
  await hydrated(page);
  await expect(page.locator('header [data-access="viewer"]')).toBeVisible();
  await expect(page.locator('.header-search')).toHaveCount(0);
  await expect(page.getByRole('combobox')).toHaveCount(0);
  await page.goto(opPath(u, id));
  await hydrated(page);
  await expect(page.locator('main h1')).toHaveText(`Operation ${id}`);
  await expect(page.locator('.claim-box')).toHaveCount(0);
  await expect(page.locator('li.change[data-kind="claim"], li.change[data-kind="note"]')).toHaveCount(0);
  await expect(page.locator('body')).not.toContainText(ada);
  await expect(page.locator('body')).not.toContainText('is on it');
  await expect(page.locator('body')).not.toContainText('Asked the provider');
  expect((await page.request.get(`/api/search?q=${enc(u)}`)).status()).toBe(404);
  expect((await page.goto('/unknowns'))?.status()).toBe(404);
  expect((await page.goto(`/find?q=${enc(u)}`))?.status()).toBe(404);
  await context.close();
});

test('200 unknowns: the queue page is at most 150 KB of HTML and 50 rows fit one 1280×800 screen', async ({ browser }) => {
  test.setTimeout(180_000);
  const u = unique('wb-budget');
  const rows: [string, string, string][] = [];
  for (let i = 0; i < 200; i++) {
    rows.push([`${u}-op-${String(i).padStart(3, '0')}`, `mcp__github__create_issue_${i % 7}`, `Create issue "Login fails on Safari 17" #${1000 + i}`]);
  }
  await unknowns(`${u}-support-chat`, rows);
  // Half the rows noted (a 120-character note, shown cut to 60), a quarter claimed.
  for (const [i, [id]] of rows.entries()) {
    if (i % 2) continue;
    const path = `/api/sessions/${enc(`${u}-support-chat`)}/mutations/${enc(id)}`;
    const n = await api.post(`${path}/notes`, { headers: asAda(), data: { text: `Asked the provider about ${id}; waiting for their answer, then reconcile with the reference they give.`.padEnd(120, '.') } });
    expect(n.status()).toBe(201);
    if (i % 4 === 0) expect((await api.post(`${path}/claim`, { headers: asAda() })).status()).toBe(201);
  }
  const context = await staffContext(browser, bo, { viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const r = await page.goto(`/unknowns?session_like=${enc(u)}`);
  expect(r?.status()).toBe(200);
  const bytes = (await r!.body()).length;
  console.log(`figures: queue page of 200 unknowns (half noted, a quarter claimed): ${bytes} bytes`);
  expect(bytes).toBeLessThanOrEqual(150_000);
  await expect(page.locator('table.q tbody tr')).toHaveCount(200);
  await expect(page.locator('.page-count')).toHaveText('Showing 200 of 200 open unknowns');
  await expect(page.locator('table.q tbody td:nth-child(10)', { hasText: `${ada} is on it` })).toHaveCount(50);
  const firstRow = page.locator('table.q tbody tr').first();
  await expect(cell(firstRow, 'notes')).toHaveText('1');
  await expect(cell(firstRow, 'note')).toHaveText(/^Asked the provider about .*…$/);
  await hydrated(page);
  const first = page.locator('table.q tbody tr').nth(0);
  await first.evaluate(e => e.scrollIntoView({ block: 'start' }));
  const top = (await first.boundingBox())!.y;
  const bottom50 = await page.locator('table.q tbody tr').nth(49).boundingBox();
  console.log(`figures: 50 rows span ${bottom50!.y + bottom50!.height - top} px at 1280x800`);
  expect(bottom50!.y + bottom50!.height - top).toBeLessThanOrEqual(800);
  await context.close();
});

async function axe(page: Page, what: string) {
  const result = await new AxeBuilder({ page }).analyze();
  const bad = result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map(v => `${what} ${v.id}: ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`)).toEqual([]);
}

async function openSearch(page: Page, text: string) {
  await hydrated(page);
  await combobox(page).fill(text);
  await expect(page.getByRole('listbox', { name: 'Search results' })).toBeVisible();
  await expect(page.getByRole('listbox').getByRole('option').first()).toBeVisible();
}

test('axe light and dark on the queue, the Find page and the open search list; screenshots desktop and phone', async ({ browser }) => {
  test.setTimeout(180_000);
  const u = unique('wb-look');
  const session = `${u}-support-chat`;
  const rows: [string, string, string][] = [];
  for (let i = 0; i < 12; i++) rows.push([`${u}-op-${i}`, i % 2 ? 'mcp__github__create_issue' : 'Refund_Payment', `Refund order ${4400 + i} for a customer whose card was charged twice`]);
  await unknowns(session, rows);
  const first = `/api/sessions/${enc(session)}/mutations/${enc(`${u}-op-0`)}`;
  expect((await api.post(`${first}/notes`, { headers: asAda(), data: { text: 'Provider says the refund is pending; check again at 18:00.' } })).status()).toBe(201);
  expect((await api.post(`${first}/claim`, { headers: asAda() })).status()).toBe(201);
  const shots = 'test-results/workbench';
  for (const [device, width, height] of [['desktop', 1280, 800], ['phone', 390, 844]] as const) {
    for (const colorScheme of ['light', 'dark'] as const) {
      const context = await staffContext(browser, bo, { viewport: { width, height }, colorScheme });
      const page = await context.newPage();
      await page.goto(`/unknowns?session_like=${enc(u)}`);
      await hydrated(page);
      await expect(page.locator('table.q tbody tr')).toHaveCount(12);
      if (device === 'desktop') await axe(page, `queue ${colorScheme}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `queue ${device} ${colorScheme} overflows`).toBeLessThanOrEqual(0);
      await page.screenshot({ path: `${shots}/queue-${device}-${colorScheme}.png` });
      await openSearch(page, 'refund order 440');
      if (device === 'desktop') await axe(page, `search list ${colorScheme}`);
      await page.screenshot({ path: `${shots}/search-${device}-${colorScheme}.png` });
      if (device === 'desktop') {
        await page.goto(`/find?q=${enc(u.toUpperCase())}`);
        await expect(page.locator('.found-operations li')).toHaveCount(12);
        await axe(page, `find ${colorScheme}`);
        await page.screenshot({ path: `${shots}/find-${device}-${colorScheme}.png`, fullPage: true });
        await page.goto(opPath(session, `${u}-op-0`));
        await hydrated(page);
        await expect(page.locator('.claim-holder')).toContainText(`${ada} is on it`);
        await axe(page, `operation ${colorScheme}`);
        await page.screenshot({ path: `${shots}/operation-claimed-${device}-${colorScheme}.png` });
      }
      await context.close();
    }
  }
});
