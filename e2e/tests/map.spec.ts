// The session page as a map (issue 26 items 3 to 5): the turn navigator's jumps (a turn, the newest, the
// first unknown), collapsed turns remembered in the address across a reload and without JavaScript,
// "follow newest" while live, one time format per page (rows and the live indicator, UTC on hover), a
// viewer's page (the navigator, no engineering words), and the sessions list's time range.
import { test, expect, Page, request as pwRequest } from '@playwright/test';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Host, unique, enc, layOutAllRows } from './host';
import { FORTY, outcomesOf, writeFortyTurns } from './forty';
import { OwnServer } from './own-server';

async function live(page: Page) {
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
}

const turnTitle = (page: Page, n: number) => page.locator(`#turn-${n}-title`);
const turn = (page: Page, n: number) => page.locator(`li.turn[data-turn-number="${n}"]`);

test('the navigator lists every turn with its counts and jumps to a turn, the newest and the first unknown', async ({ page, request }) => {
  const session = unique('e2e-map');
  await writeFortyTurns(request, session);
  await page.goto(`/sessions/${enc(session)}`);
  await live(page);
  const nav = page.getByRole('navigation', { name: 'Turns' });
  await expect(nav.locator('h2')).toHaveText('Turns (40)');
  const items = nav.locator('.turn-nav-item');
  await expect(items).toHaveCount(FORTY.turns);
  await expect(items.first()).toHaveAttribute('data-turn', '1');
  // "Turn 12" (its id, turn-12, only repeats it) with its marks: one unknown and the others completed.
  const twelve = nav.locator('.turn-nav-item[data-turn="12"] a');
  await expect(twelve).toContainText('Turn 12');
  await expect(twelve).not.toContainText('turn-12');
  await expect(twelve.locator('[data-count]')).toHaveText(['?1 unknown']);
  // Turn 31: one unknown, one completed; turn 7: one failed, one completed (unknown first, as every count).
  await expect(nav.locator('.turn-nav-item[data-turn="31"] [data-count]')).toHaveText(['?1 unknown', '✓1 completed']);
  await expect(nav.locator('.turn-nav-item[data-turn="7"] [data-count]')).toHaveText(['✕1 failed', '✓1 completed']);
  await expect(nav.locator('.turn-nav-item[data-turn="40"] [data-count="in_flight"]')).toHaveText('…1 in flight');
  // The page's turns read "Turn 12", not "Turn 12 · turn-12".
  await expect(turn(page, 12).locator('h2 a')).toHaveText('Turn 12');

  // Jumps: focus lands on the turn's heading, scrolled into view; the address says where.
  await page.evaluate(() => window.scrollTo(0, 0));
  await nav.getByRole('link', { name: 'First unknown' }).click();
  await expect(turnTitle(page, 12)).toBeFocused();
  await expect(turnTitle(page, 12)).toBeInViewport();
  expect(new URL(page.url()).hash).toBe('#turn-12');
  await nav.getByRole('link', { name: 'Newest turn' }).click();
  await expect(turnTitle(page, 40)).toBeFocused();
  await expect(turnTitle(page, 40)).toBeInViewport();
  expect(new URL(page.url()).hash).toBe('#turn-40');
  await nav.locator('.turn-nav-item[data-turn="25"] a').click();
  await expect(turnTitle(page, 25)).toBeFocused();
  await expect(turnTitle(page, 25)).toBeInViewport();
  await expect(turnTitle(page, 12)).not.toBeInViewport();
});

test('on a phone "↑ Turns" shows only once the navigator has scrolled away, and leads back to it; the turns page says "Turn 12"', async ({ page, request }) => {
  const session = unique('e2e-map-phone');
  await writeFortyTurns(request, session);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/sessions/${enc(session)}`);
  const back = page.locator('a.to-turn-nav');
  const nav = page.getByRole('navigation', { name: 'Turns' });
  // At the top the navigator is in view: the button would cover its rows and buttons.
  await expect(nav.getByRole('button', { name: 'Expand all' })).toBeInViewport();
  await expect(back).toBeHidden();
  await turnTitle(page, 30).scrollIntoViewIfNeeded();
  await expect(nav).not.toBeInViewport();
  await expect(back).toBeVisible();
  await back.click();
  await expect(nav).toBeInViewport();
  await expect(back).toBeHidden();

  // The list of every turn numbers them like the session page: "Turn 12", its id only repeating it.
  await page.goto(`/sessions/${enc(session)}/turns`);
  const twelve = page.locator('.turn-item[data-turn-id="turn-12"]');
  await expect(twelve).toHaveAttribute('data-turn-number', '12');
  await expect(twelve.locator('a')).toHaveText('Turn 12');
});

test('collapsed turns live in the address: remembered across a reload, expanded by a jump, all at once', async ({ page, request }) => {
  const session = unique('e2e-fold');
  await writeFortyTurns(request, session);
  const path0 = `/sessions/${enc(session)}`;
  await page.goto(path0);
  await live(page);
  const rows = (n: number) => turn(page, n).locator('.timeline-row');
  await expect(rows(3)).toHaveCount(outcomesOf(3));
  const fold3 = page.getByRole('button', { name: 'Collapse turn 3', exact: true });
  await expect(fold3).toHaveAttribute('aria-expanded', 'true');
  await expect(fold3).toHaveAttribute('aria-controls', 'turn-3-rows');
  await fold3.click();
  await expect(rows(3)).toHaveCount(0);
  const open3 = page.getByRole('button', { name: 'Expand turn 3', exact: true });
  await expect(open3).toHaveAttribute('aria-expanded', 'false');
  await expect(turn(page, 3).locator('h2 [data-count="completed"]')).toBeVisible();
  await page.getByRole('button', { name: 'Collapse turn 4', exact: true }).click();
  await page.getByRole('button', { name: 'Collapse turn 5', exact: true }).click();
  await page.getByRole('button', { name: 'Collapse turn 7', exact: true }).click();
  expect(new URL(page.url()).search).toBe('?collapsed=3-5,7');

  await page.reload();
  await live(page);
  for (const n of [3, 4, 5, 7]) {
    await expect(turn(page, n)).toHaveAttribute('data-collapsed', 'true');
    await expect(rows(n)).toHaveCount(0);
    await expect(page.getByRole('button', { name: `Expand turn ${n}` })).toHaveAttribute('aria-expanded', 'false');
  }
  await expect(rows(6)).toHaveCount(outcomesOf(6));
  await expect(page.getByRole('navigation', { name: 'Turns' }).locator('.turn-nav-item[data-turn="4"] a')).toContainText('(collapsed)');

  // A jump to a collapsed turn expands it.
  await page.getByRole('navigation', { name: 'Turns' }).locator('.turn-nav-item[data-turn="4"] a').click();
  await expect(rows(4)).toHaveCount(outcomesOf(4));
  await expect(turnTitle(page, 4)).toBeFocused();
  expect(new URL(page.url()).search + new URL(page.url()).hash).toBe('?collapsed=3,5,7#turn-4');
  await page.getByRole('button', { name: 'Expand turn 3', exact: true }).click();
  expect(new URL(page.url()).search).toBe('?collapsed=5,7');

  // Collapse all: every turn's rows leave the page; the address holds them for the next reload.
  const tall = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.getByRole('button', { name: 'Collapse all', exact: true }).click();
  await expect(page.locator('li.turn .timeline-row')).toHaveCount(0);
  expect(new URL(page.url()).search).toBe('?collapsed=1-40');
  const short = await page.evaluate(() => document.documentElement.scrollHeight);
  console.log(`40-turn session: ${tall} px expanded, ${short} px with every turn collapsed`);
  expect(short).toBeLessThan(tall / 3);
  await page.reload();
  await live(page);
  await expect(page.locator('li.turn[data-collapsed="true"]')).toHaveCount(40);
  await page.getByRole('button', { name: 'Expand all', exact: true }).click();
  await expect(page.locator('li.turn .timeline-row')).toHaveCount(FORTY.outcomes);
  expect(new URL(page.url()).search).toBe('');
});

test('without JavaScript the jumps are links and collapsing is a form, both through the address', async ({ browser, request }) => {
  const session = unique('e2e-fold-nojs');
  await writeFortyTurns(request, session);
  const context = await browser.newContext({ javaScriptEnabled: false });
  try {
    const page = await context.newPage();
    const base = `/sessions/${enc(session)}`;
    await page.goto(`${base}?collapsed=1-39`);
    await expect(page.locator('li.turn[data-collapsed="true"]')).toHaveCount(39);
    await expect(turn(page, 40).locator('.timeline-row')).toHaveCount(outcomesOf(40));
    const nav = page.getByRole('navigation', { name: 'Turns' });
    await expect(nav.getByRole('link', { name: 'First unknown' })).toHaveAttribute('href', `${base}?collapsed=1-11,13-39#turn-12`);
    await expect(nav.getByRole('link', { name: 'Newest turn' })).toHaveAttribute('href', `${base}?collapsed=1-39#turn-40`);
    await nav.getByRole('link', { name: 'First unknown' }).click();
    await expect(turn(page, 12).locator('.timeline-row')).toHaveCount(outcomesOf(12));
    await expect(turn(page, 12).locator('.outcome[data-status="outcome_unknown"]')).toHaveCount(1);
    await expect(turn(page, 11).locator('.timeline-row')).toHaveCount(0);
    // The collapse button submits the address with the turn toggled, back at the turn.
    await page.getByRole('button', { name: 'Collapse turn 12', exact: true }).click();
    await expect(turn(page, 12)).toHaveAttribute('data-collapsed', 'true');
    expect(new URL(page.url()).search).toBe('?collapsed=1-39');
    expect(new URL(page.url()).hash).toBe('#turn-12');
    // "Follow newest" needs JavaScript, so it is not offered.
    await expect(page.getByRole('button', { name: 'Follow newest', exact: true })).toHaveCount(0);
  } finally {
    await context.close();
  }
});

test('follow newest, while live, scrolls each new row and turn written by the host into view', async ({ page, request }) => {
  const session = unique('e2e-follow');
  await writeFortyTurns(request, session);
  const host = new Host(request, session);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`/sessions/${enc(session)}`);
  await live(page);
  const follow = page.getByRole('button', { name: 'Follow newest', exact: true });
  await expect(follow).toHaveAttribute('aria-pressed', 'false');
  // Off: a new row appears, the page stays where it is.
  await page.evaluate(() => window.scrollTo(0, 0));
  await host.settled('turn-40', `${session}-off`, 'completed');
  await expect(page.locator(`.outcome[data-mutation-id="${session}-off"]`)).toHaveCount(1);
  await page.waitForTimeout(300);
  expect(await page.evaluate(() => window.scrollY)).toBe(0);
  // On: the newest row is brought into view at once, and each new one after it.
  await follow.click();
  await expect(follow).toHaveAttribute('aria-pressed', 'true');
  await expect(page.locator(`.outcome[data-mutation-id="${session}-off"]`)).toBeInViewport();
  await page.evaluate(() => window.scrollTo(0, 0));
  await host.settled('turn-40', `${session}-row`, 'failed');
  const row = page.locator(`.timeline-row[data-row-id="${session}-row"]`);
  await expect(row).toBeInViewport();
  await page.evaluate(() => window.scrollTo(0, 0));
  await host.settled('turn-41', `${session}-turn`, 'completed');
  await expect(turn(page, 41)).toHaveAttribute('data-turn-id', 'turn-41');
  await expect(page.locator(`.timeline-row[data-row-id="${session}-turn"]`)).toBeInViewport();
  await expect(page.getByRole('navigation', { name: 'Turns' }).locator('h2')).toHaveText('Turns (41)');
});

test('a viewer sees the navigator and none of the engineering words on the session, turn and operation pages', async ({ browser, request }) => {
  const session = unique('e2e-map-viewer');
  await writeFortyTurns(request, session);
  const host = new Host(request, session);
  const link = await host.viewerLink(3600);
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(link.url);
    await expect(page).toHaveURL(new RegExp(`/sessions/${enc(session)}$`));
    await expect(page.locator('header [data-access="viewer"]')).toBeVisible();
    await live(page);
    const nav = page.getByRole('navigation', { name: 'Turns' });
    await expect(nav.locator('.turn-nav-item')).toHaveCount(40);
    await expect(nav.getByRole('link', { name: 'First unknown' })).toBeVisible();
    const words = async () => {
      await layOutAllRows(page);
      return page.locator('main').innerText();
    };
    let text = await words();
    expect(text).not.toMatch(/NDJSON|revision/i);
    expect(text).not.toContain('Turn 1 · turn-1');
    expect(text).toContain('Turn 1\n');
    await expect(page.locator('.export a[data-export="records"]')).toHaveText('Download (JSON Lines)');
    // "resource" only beside its title or link: turn 3's resource 478 has neither.
    expect(text).not.toContain('resource 478');
    const titled = page.locator(`.outcome[data-mutation-id="${session}-t1-m0"]`);
    await expect(titled.locator('.details')).toHaveText('dashboards · create · resource 401');
    await expect(titled.locator('a.min-w-0, a[href="https://example.com/d/401"]').first()).toHaveAttribute('href', 'https://example.com/d/401');
    // A collapse is remembered for the viewer too.
    await page.getByRole('button', { name: 'Collapse turn 2', exact: true }).click();
    await page.reload();
    await live(page);
    await expect(turn(page, 2)).toHaveAttribute('data-collapsed', 'true');

    // The turn page and an operation page, as the viewer reads them.
    await page.goto(host.turnPath('turn-12'));
    await live(page);
    await expect(page.locator('.outcome')).toHaveCount(outcomesOf(12));
    text = await words();
    expect(text).not.toMatch(/NDJSON|revision|Read through change/i);
    await page.goto(`/sessions/${enc(session)}/operations/${enc(`${session}-t12-m0`)}`);
    await live(page);
    await expect(page.locator('li.change')).toHaveCount(3);
    text = await words();
    expect(text).not.toMatch(/NDJSON|revision/i);
    // The look-up by operation id, as the viewer reads it.
    await page.goto(`/operations/${enc(`${session}-t12-m0`)}`);
    await expect(page.locator('li.operation')).toHaveCount(1);
    text = await words();
    expect(text).not.toMatch(/NDJSON|revision/i);
  } finally {
    await context.close();
  }
});

test('one time format on the page: the rows and the live indicator agree, 24-hour, UTC on hover', async ({ page }) => {
  const own = new OwnServer(3290 + Math.floor(Math.random() * 9));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
  await own.start(dataDir);
  const api = await pwRequest.newContext({ baseURL: own.base });
  try {
    const session = unique('e2e-times');
    const host = new Host(api, session);
    await host.settled('turn-1', `${session}-a`, 'completed');
    await page.goto(own.base + host.sessionPath());
    await live(page);
    const recorded = page.locator('.row-times .recorded time');
    await expect(recorded).toHaveText(/^\d\d:\d\d:\d\d · (just now|\d+ s ago)$/);
    const at = await recorded.getAttribute('datetime');
    const utc = at!.replace('T', ' ').slice(0, 19) + ' UTC';
    await expect(recorded).toHaveAttribute('title', utc);
    await expect(page.locator('.session-summary ~ * time, main > p time').first()).toHaveText(/^\d\d:\d\d:\d\d · /);
    await own.kill();
    const state = page.locator('.connection');
    await expect(state).toHaveText(/^(Reconnecting|Stale) since \d\d:\d\d:\d\d(…|:)/, { timeout: 15_000 });
    const since = (await state.innerText()).match(/since (\d\d:\d\d:\d\d)/)![1];
    // The same clock as the rows: the indicator's time is the reader's local time, like the row's.
    const rowClock = (await recorded.innerText()).slice(0, 8);
    const local = await page.evaluate(([a]) => {
      const d = new Date(a);
      return [d.getHours(), d.getMinutes(), d.getSeconds()].map(n => String(n).padStart(2, '0')).join(':');
    }, [at!]);
    expect(rowClock).toBe(local);
    const now = await page.evaluate(() => Date.now());
    const [h, m, s] = since.split(':').map(Number);
    const sinceToday = new Date(now); sinceToday.setHours(h, m, s, 0);
    expect(Math.abs(now - sinceToday.getTime())).toBeLessThan(60_000);
  } finally {
    await own.kill();
    await api.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('the sessions list filters by a time range of last activity, in the address and by its form', async ({ page, request }) => {
  const u = unique('e2e-range');
  const at: Record<string, string> = {};
  for (const name of ['a', 'b', 'c']) {
    await new Host(request, `${u}-${name}`).settled('turn-1', `${u}-${name}-m`, 'completed');
    const r = await request.get(`/api/sessions?prefix=${enc(`${u}-${name}`)}`);
    at[name] = (await r.json()).sessions[0].last_activity;
    await page.waitForTimeout(1100);
  }
  const shown = () => page.locator('li.session bdi').allInnerTexts();
  await page.goto(`/?prefix=${enc(u)}&active_after=${enc(at.b)}`);
  await expect(page.locator('.page-count')).toHaveText('Showing 2 of 2 sessions');
  expect(await shown()).toEqual([`${u}-c`, `${u}-b`]);
  await page.goto(`/?prefix=${enc(u)}&active_after=${enc(at.a)}&active_before=${enc(at.c)}`);
  expect(await shown()).toEqual([`${u}-b`, `${u}-a`]);
  // The form: UTC fields to the second, shown back as they were given.
  await page.goto(`/?prefix=${enc(u)}`);
  await expect(page.locator('.page-count')).toHaveText('Showing 3 of 3 sessions');
  await page.getByLabel('Last active before (UTC)').fill(at.b.slice(0, 19));
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await expect(page).toHaveURL(/active_before=/);
  expect(new URL(page.url()).searchParams.get('active_before')).toBe(at.b.slice(0, 19));
  await expect(page.locator('.page-count')).toHaveText('Showing 1 of 1 session');
  expect(await shown()).toEqual([`${u}-a`]);
  await expect(page.getByLabel('Last active before (UTC)')).toHaveValue(at.b.slice(0, 19));
  // A time the API cannot read is named, not guessed.
  await page.goto(`/?active_after=yesterday`);
  await expect(page.locator('.error-panel')).toContainText('active_after');
});
