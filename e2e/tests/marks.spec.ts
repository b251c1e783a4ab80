// Invisible and bidi characters in host strings read as visible marks `⟨U+XXXX⟩` (docs/design.md "What the
// person sees"), server-rendered; find and the filters take the marked form; copy gives the raw id; long
// unbroken strings wrap; copy buttons name what they copy and announce "Copied"; the end user's session
// page has no revision numbers; counts read with correct plurals.
import { test, expect, Page, APIRequestContext } from '@playwright/test';
import { Host, enc, unique, layOutAllRows } from './host';

const TITLE = 'Invoice\u202Egnp.exe\u202C paid';
const TITLE_SHOWN = 'Invoice⟨U+202E⟩gnp.exe⟨U+202C⟩ paid';
const TOOL = 'mcp__\u202Etool';
const TOOL_SHOWN = 'mcp__⟨U+202E⟩tool';
// The tool as an end user's card reads it (docs/design.md "What the person sees"): in words, the mark kept.
const TOOL_READ = '⟨U+202E⟩tool';

/** A session whose key, turn and unknown operation id carry Cf characters. */
async function seed(request: APIRequestContext) {
  const u = unique('e2e-marks');
  const session = `${u}\u200Bsess`;
  const turn = `turn\u2066a\u2069\uFEFF`;
  const mutation = `${u}-dash\u200Bcreate-1`;
  const host = new Host(request, session);
  await host.approve(turn, mutation, TOOL);
  await host.intent(mutation);
  await host.settle(mutation, 'outcome_unknown', 'execution_timeout');
  await host.metadata(mutation, { title: TITLE });
  return {
    u, host, session, turn, mutation,
    sessionShown: `${u}⟨U+200B⟩sess`,
    turnShown: 'turn⟨U+2066⟩a⟨U+2069⟩⟨U+FEFF⟩',
    mutationShown: `${u}-dash⟨U+200B⟩create-1`,
  };
}

async function live(page: Page) {
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
}

test('ids, tools and titles with Cf characters show marks, server-rendered, each id one text run', async ({ page, request }) => {
  const s = await seed(request);
  const history = `/sessions/${enc(s.session)}/operations/${enc(s.mutation)}`;

  // The HTML as the server sends it, before any script runs.
  for (const path of [s.host.turnPath(s.turn), s.host.sessionPath(), `/operations/${enc(s.mutation)}`, history]) {
    const r = await request.get(path);
    expect(r.status(), path).toBe(200);
    const html = await r.text();
    for (const shown of [TITLE_SHOWN, TOOL_READ, s.mutationShown, s.sessionShown]) {
      expect(html, `${path}: ${shown}`).toContain(shown);
    }
  }
  const turnHtml = await (await request.get(s.host.turnPath(s.turn))).text();
  expect(turnHtml).toContain(`<title>Turn 1 (${s.turnShown}) · Outcome ledger</title>`);

  // The page, once interactive, says the same.
  await page.goto(s.host.turnPath(s.turn));
  await live(page);
  await expect(page).toHaveTitle(`Turn 1 (${s.turnShown}) · Outcome ledger`);
  await expect(page.locator('h1 bdi')).toHaveText(s.turnShown);
  const card = page.locator(`.outcome[data-mutation-id="${s.mutation}"]`);
  await expect(card.locator('.outcome-title')).toHaveText(TITLE_SHOWN);
  await expect(card.locator('.details')).toHaveText(`${TOOL_READ} · revision 3`);
  await expect(card.locator('.operation-id')).toHaveText(s.mutationShown);
  // One text run: the whole id is one text node, with no element inserted into it (besides the text, the
  // element may hold only comment nodes: the markers Leptos's hydration leaves, which no copy, selection or
  // screen reader sees).
  expect(await card.locator('.operation-id').evaluate(e => [...e.childNodes]
    .filter(n => n.nodeType !== 8 /* comment */)
    .map(n => [n.nodeType, n.textContent]))).toEqual([[3 /* text */, s.mutationShown]]);
  await expect(page.getByRole('listitem', { name: `Outcome unknown: ${TITLE_SHOWN}` })).toHaveCount(1);

  // A title without the marks would read "Invoice exe.png paid": the page never shows the raw characters.
  await layOutAllRows(page);
  const text = await page.locator('main').innerText();
  expect(text).not.toMatch(/[\u200B\u202A-\u202E\u2066-\u2069\uFEFF]/);

  // The session page (the end user's), server-rendered and then live.
  await page.goto(s.host.sessionPath());
  await live(page);
  await expect(page.locator('h1 bdi')).toHaveText(s.sessionShown);
  await expect(page.locator('.turn h2 bdi')).toHaveText(s.turnShown);
  await expect(page.locator('.session-summary .summary-unknown')).toHaveText(s.mutationShown);
  await layOutAllRows(page);
  expect(await page.locator('main').innerText()).not.toMatch(/[\u200B\u202A-\u202E\u2066-\u2069\uFEFF]/);

  // Links carry the raw ids, percent-encoded.
  await expect(page.locator(`a[href="${s.host.turnPath(s.turn)}"]`)).toHaveCount(1);
  // The operation's page: from the summary's unknown and from its row.
  await expect(page.locator(`a[href="${history}"]`)).toHaveCount(2);
});

test('find and the filters accept the marked form; copy gives the raw id', async ({ page, request, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const s = await seed(request);

  // Typed as the page shows it.
  await page.goto('/');
  await page.getByRole('searchbox', { name: 'Session id or operation id' }).fill(s.mutationShown);
  await page.getByRole('button', { name: 'Find' }).click();
  // One operation has this id: Find goes straight to its own page (docs/design.md "Search").
  await expect(page).toHaveURL(new RegExp(`/sessions/${enc(s.session)}/operations/${enc(s.mutation)}`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$'));
  await expect(page.locator('.current .outcome')).toHaveAttribute('data-mutation-id', s.mutation);
  await expect(page.locator('h1 bdi')).toHaveText(s.mutationShown);

  // The session too, by the address, without JavaScript's help: a 303 to the raw id's page.
  const r = await request.get(`/find?q=${enc(s.sessionShown)}`, { maxRedirects: 0 });
  expect(r.status()).toBe(303);
  expect(r.headers()['location']).toBe(`/sessions/${enc(s.session)}`);
  // The raw id still works, and a mark of a character that is not Cf stays literal (nothing found).
  expect((await request.get(`/find?q=${enc(s.session)}`, { maxRedirects: 0 })).headers()['location']).toBe(`/sessions/${enc(s.session)}`);
  const literal = await (await request.get(`/find?q=${enc(`${s.u}⟨U+0041⟩sess`)}`)).text();
  expect(literal).toContain('No session and no published operation has the id');

  // The sessions filter by prefix, typed marked: the session is listed, the box keeps what was typed.
  await page.goto(`/?prefix=${enc(`${s.u}⟨U+200B⟩`)}`);
  await expect(page.locator('.session')).toHaveCount(1);
  await expect(page.locator('.session a bdi')).toHaveText(s.sessionShown);
  await expect(page.locator('input[name="prefix"]')).toHaveValue(`${s.u}⟨U+200B⟩`);
  await expect(page.locator('.page-count')).toHaveText('Showing 1 of 1 session');
  // The unknowns queue by session and tool, typed marked.
  await page.goto(`/unknowns?session_key=${enc(s.sessionShown)}&tool=${enc(TOOL_SHOWN)}`);
  await expect(page.locator('table.q tbody tr')).toHaveCount(1);
  await expect(page.locator('.page-count')).toHaveText('Showing 1 of 1 open unknown');

  // Copy gives the raw id, invisible characters and all.
  await page.goto(s.host.turnPath(s.turn));
  await live(page);
  const card = page.locator(`.outcome[data-mutation-id="${s.mutation}"]`);
  await card.getByRole('button', { name: `Copy operation id ${s.mutationShown}`, exact: true }).click();
  await expect(card.getByRole('status')).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(s.mutation);

  // The session page's summary copies it raw as well.
  await page.goto(s.host.sessionPath());
  await live(page);
  const summary = page.locator('.session-summary');
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await summary.getByRole('button', { name: `Copy operation id ${s.mutationShown}`, exact: true }).click();
  await expect(summary.getByRole('status')).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(s.mutation);
});

test('copy buttons name what they copy; "Copied" is announced politely, goes after about 2 s, and comes back on the next click', async ({ page, request, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const session = unique('e2e-copy');
  const host = new Host(request, session);
  await host.settled('t', 'dash-create-1', 'outcome_unknown');
  await page.goto(host.turnPath('t'));
  await live(page);
  const card = page.locator('.outcome[data-mutation-id="dash-create-1"]');
  const button = card.getByRole('button', { name: 'Copy operation id dash-create-1', exact: true });
  await expect(button).toHaveText('Copy operation id');
  const status = card.getByRole('status');
  await expect(status).toHaveAttribute('aria-live', 'polite');
  await expect(status).toHaveText('');

  await button.click();
  const clicked = Date.now();
  await expect(status).toHaveText('Copied');
  // The button keeps its name while the status speaks.
  await expect(button).toHaveAccessibleName('Copy operation id dash-create-1');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('dash-create-1');
  await expect(status).toHaveText('', { timeout: 5_000 });
  const shownFor = Date.now() - clicked;
  expect(shownFor).toBeGreaterThan(1_500);
  expect(shownFor).toBeLessThan(4_500);

  // A second click copies and says so again.
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await button.click();
  await expect(status).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('dash-create-1');
  await expect(status).toHaveText('', { timeout: 5_000 });

  // The JSON copy button says what it copies too.
  await page.goto(`/sessions/${enc(session)}/operations/dash-create-1`);
  await live(page);
  await page.locator('details.record summary').click();
  await expect(page.getByRole('button', { name: 'Copy JSON', exact: true })).toBeVisible();
});

test('a 512-byte unbroken title and a 256-byte unbroken id do not widen any page, at 1280 px and at 390 px', async ({ page, request }) => {
  const u = unique('w');
  const session = `${u}-${'s'.repeat(256 - u.length - 1)}`;
  const mutation = `${u}-${'m'.repeat(256 - u.length - 1)}`;
  const turn = `${u}-${'t'.repeat(256 - u.length - 1)}`;
  expect(Buffer.byteLength(mutation)).toBe(256);
  const host = new Host(request, session);
  await host.approve(turn, mutation, `mcp__${'x'.repeat(240)}`);
  await host.intent(mutation);
  await host.settle(mutation, 'outcome_unknown');
  const title = 'W'.repeat(512);
  await host.metadata(mutation, { title, url: 'https://example.com/d/1' });
  await host.settled(turn, `${u}-ok`, 'completed');
  await host.metadata(`${u}-ok`, { title: 'Ä'.repeat(256) });

  const paths = [
    host.sessionPath(),
    host.turnPath(turn),
    `/operations/${enc(mutation)}`,
    `/sessions/${enc(session)}/operations/${enc(mutation)}`,
    `/?prefix=${enc(session)}`,
    `/unknowns?session_key=${enc(session)}`,
    `/find?q=${enc(`${mutation}-nothing`)}`,
  ];
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    for (const path of paths) {
      await page.goto(path);
      await expect(page.locator('main h1').first()).toBeVisible();
      if (!path.startsWith('/find')) await expect(page.locator('main')).toContainText(path.startsWith('/?') || path.startsWith('/unknowns') ? session.slice(0, 40) : 'WWWW');
      await layOutAllRows(page);
      const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      expect(scroll, `${path} at ${width} px`).toBeLessThanOrEqual(client);
    }
  }
  // The check can fail: without the wrapping rule the same page is wider than the screen.
  await page.goto(host.turnPath(turn));
  await layOutAllRows(page);
  const [scroll, client] = await page.evaluate(() => {
    for (const e of document.querySelectorAll<HTMLElement>('bdi, .outcome-title, .operation-id')) e.style.overflowWrap = 'normal';
    return [document.documentElement.scrollWidth, document.documentElement.clientWidth];
  });
  expect(scroll).toBeGreaterThan(client);
});

test('the end user\'s session page shows no revision numbers; the turn page says what it read through; counts read with plurals', async ({ page, request }) => {
  const u = unique('e2e-words');
  const one = new Host(request, `${u}-one`);
  await one.settled('t1', `${u}-a`, 'completed');
  await one.settled('t1', `${u}-b`, 'outcome_unknown');
  const two = new Host(request, `${u}-two`);
  await two.settled('t1', `${u}-c`, 'completed');
  await two.settled('t2', `${u}-d`, 'failed');

  await page.goto(one.sessionPath());
  await live(page);
  await expect(page.locator('.outcome')).toHaveCount(2);
  await layOutAllRows(page);
  const text = await page.locator('main').innerText();
  expect(text).not.toMatch(/revision/i);
  await expect(page.locator('.session-summary .summary-text')).toHaveText('1 completed, 1 unknown');
  // The unknown tells its reader what to do, and keeps the precise words for staff.
  const unknown = page.locator('.unknown-explanation');
  await expect(unknown).toContainText('The result of this write is not established. The original operation is under investigation, and automatic resend is paused.');
  await expect(unknown.locator('.what-to-do')).toHaveText('Do not repeat this action yourself: it may already have taken effect. Quote the operation id below to the support of the service you used; they will check it with the provider.');

  await page.goto(one.turnPath('t1'));
  await live(page);
  await expect(page.getByText('Read through change')).toBeVisible();
  await expect(page.locator('.cursor')).toHaveText(/^\d+$/);
  await expect(page.locator('main')).not.toContainText('Cursor');
  // Staff still see each row's revision.
  await expect(page.locator(`.outcome[data-mutation-id="${u}-a"]`)).toContainText('revision');

  await page.goto(`/?prefix=${enc(u)}`);
  const row = (key: string) => page.locator('.session', { has: page.locator(`a[href="/sessions/${enc(key)}"]`) });
  await expect(row(`${u}-one`)).toContainText('1 turn · last activity');
  await expect(row(`${u}-two`)).toContainText('2 turns · last activity');
  await expect(page.locator('.page-count')).toHaveText('Showing 2 of 2 sessions');

  // An id that is a session and an operation at once: "1 match".
  const both = new Host(request, `${u}-both`);
  await both.settled('t', `${u}-both`, 'completed');
  await page.goto(`/find?q=${enc(`${u}-both`)}`);
  await expect(page.locator(`.find-result a[href="/operations/${enc(`${u}-both`)}"]`)).toHaveText(`Operation ${u}-both (1 match)`);
});
