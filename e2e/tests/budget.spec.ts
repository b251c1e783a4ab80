// The session page's row budget and its counts (docs/design.md "What the person sees"). Before: the page
// rendered every turn (the first 200) with each turn's OLDEST 50 rows, so with 61 live settles in one
// turn the newest 11 never appeared (and 200 turns of 100 outcomes made a 25 MB page); a turn with one
// in-flight row and no unknown read "Outcome unknown 1 (1 in flight)", and the "Outcome unknown" filter
// kept in-flight rows.
import { test, expect, Page } from '@playwright/test';
import { Host, batch, enc, settledOps, unique } from './host';

async function live(page: Page) {
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 20_000 });
}

test('61 live settles in one turn: the session page shows the newest 50, the 61st included', async ({ page, request }) => {
  test.setTimeout(120_000);
  const session = unique('e2e-newest');
  const host = new Host(request, session);
  await host.settled('t', 'm00', 'completed');
  await page.goto(host.sessionPath());
  await live(page);
  const turn = page.locator('.turn[data-turn-id="t"]');
  for (let i = 1; i < 61; i++) {
    await host.settled('t', `m${String(i).padStart(2, '0')}`, 'completed');
  }
  await expect(turn.locator('.outcome[data-mutation-id="m60"]')).toBeVisible({ timeout: 30_000 });
  await expect(turn.locator('.outcome[data-mutation-id="m60"]')).toHaveAttribute('data-status', 'completed');
  await expect(turn.locator('.timeline-row')).toHaveCount(50);
  await expect(turn.locator('.timeline-row').first()).toHaveAttribute('data-row-id', 'm11');
  await expect(turn.locator('.timeline-row').last()).toHaveAttribute('data-row-id', 'm60');
  await expect(turn.locator('.turn-more')).toHaveText(
    "11 earlier outcomes of this turn are not shown here (the newest 50 of 61 are). See them all on the turn's page");
  await expect(turn.locator('.turn-more a')).toHaveAttribute('href', host.turnPath('t'));
  await expect(page.locator('.session-summary .summary-text')).toHaveText('61 completed');
  // A live in-flight row is the newest too, counted in flight.
  await host.approve('t', 'm61');
  await host.intent('m61');
  await expect(turn.locator('.timeline-row').last()).toHaveAttribute('data-row-id', 'm61');
  await expect(turn.locator('.outcome[data-mutation-id="m61"]')).toContainText('In flight');
  await expect(page.locator('.session-summary .summary-text')).toHaveText('61 completed, 1 in flight');
  await expect(turn.locator('.timeline-row')).toHaveCount(50);
  // The same after a reload: the newest rows, server-rendered.
  await page.reload();
  await expect(turn.locator('.timeline-row').last()).toHaveAttribute('data-row-id', 'm61');
  await expect(turn.locator('.timeline-row').first()).toHaveAttribute('data-row-id', 'm12');
});

test('a session of 505 turns shows its newest 500 rows and links the 5 earlier turns, readable without JavaScript', async ({ browser, request }) => {
  test.setTimeout(180_000);
  const session = unique('e2e-budget');
  const ops: object[] = [];
  // Unknown at turns 0, 50, …, 500: turn-000 is an earlier turn, the other ten are shown.
  for (let i = 0; i < 505; i++) {
    ops.push(...settledOps(session, `turn-${String(i).padStart(3, '0')}`, `m-${i}`, i % 50 === 0 ? 'outcome_unknown' : 'completed'));
  }
  await batch(request, ops);
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  const r = await page.goto(`/sessions/${enc(session)}`);
  expect(r?.status()).toBe(200);
  const bytes = (await r!.body()).length;
  console.log(`figures: session page of 505 turns x 1 outcome: ${bytes} bytes`);
  const turns = page.locator('.turn');
  await expect(turns).toHaveCount(500);
  await expect(page.locator('.timeline-row')).toHaveCount(500);
  // Oldest first within what is shown; numbered in the session.
  await expect(turns.first()).toHaveAttribute('data-turn-id', 'turn-005');
  await expect(turns.first().locator('h2 a')).toHaveText('Turn 6 · turn-005');
  await expect(turns.last()).toHaveAttribute('data-turn-id', 'turn-504');
  await expect(page.locator('.earlier-turns')).toHaveText(
    '5 earlier turns are not shown here; this page shows the newest turns. See every turn of this session');
  await expect(page.locator('.session-summary .summary-text')).toHaveText('494 completed, 11 unknown');
  await expect(page.locator('.session-summary .summary-unknown')).toHaveCount(10);
  await expect(page.locator('.session-summary .rest-unknowns')).toHaveText(
    '1 more unknown outcome is in an earlier turn or in the earlier rows of a turn, not shown here: open its turn to quote its id.');
  expect(bytes).toBeLessThan(2_500_000);

  // One click to the earlier turns: every turn, oldest first, 200 a page, without JavaScript.
  await page.locator('.earlier-turns a').click();
  await expect(page).toHaveURL(new RegExp(`/sessions/${enc(session)}/turns$`));
  await expect(page.locator('.page-count').first()).toHaveText('Showing 200 of 505 turns, oldest first');
  await expect(page.locator('.turn-item')).toHaveCount(200);
  await expect(page.locator('.turn-item').first()).toHaveAttribute('data-turn-id', 'turn-000');
  // "Turn 1", numbered in the session like the session page, with the id where it says more.
  await expect(page.locator('.turn-item').first().locator('a')).toHaveText('Turn 1 · turn-000');
  await expect(page.locator('.turn-item').first().locator('[data-count="outcome_unknown"]')).toContainText('1');
  await page.locator('a.next-page').first().click();
  await expect(page.locator('.turn-item').first()).toHaveAttribute('data-turn-id', 'turn-200');
  await expect(page.locator('.turn-item').first().locator('a')).toHaveText('Turn 201 · turn-200');
  await page.locator('a.next-page').first().click();
  await expect(page.locator('.turn-item')).toHaveCount(105);
  await expect(page.locator('a.next-page')).toHaveCount(0);
  await page.locator('a.first-page').first().click();
  await page.locator('.turn-item').first().locator('a').click();
  await expect(page.locator('.outcome[data-mutation-id="m-0"]')).toHaveAttribute('data-status', 'outcome_unknown');
  await context.close();
});

test('in flight and unknown are counted apart: badges, summary and filters', async ({ page, request }) => {
  test.setTimeout(90_000);
  const session = unique('e2e-counts');
  const host = new Host(request, session);
  await host.settled('t', 'done', 'completed');
  await host.approve('t', 'flying');
  await host.intent('flying');

  // One in-flight row, no settled unknown.
  await page.goto(host.sessionPath());
  const badges = page.locator('.turn[data-turn-id="t"] h2 [data-count]');
  // The exact text of each badge: its icon (hidden from screen readers), words and number.
  await expect(badges).toHaveText(['…In flight1', '✓Completed1']);
  await expect(badges.nth(0)).toHaveAttribute('data-count', 'in_flight');
  await expect(badges.nth(0).locator('[data-kind] span:not([aria-hidden])')).toHaveText('In flight');
  await expect(badges.nth(0).locator('.tabular-nums')).toHaveText('1');
  await expect(badges.nth(1)).toHaveAttribute('data-count', 'completed');
  await expect(page.locator('.turn h2')).not.toContainText('unknown');
  await expect(page.locator('.session-summary .summary-text')).toHaveText('1 completed, 1 in flight');
  await expect(page.locator('.session-summary .rest-unknowns')).toHaveCount(0);

  await page.goto(`/?prefix=${enc(session)}`);
  const row = page.locator('.session');
  await expect(row.locator('[data-count]')).toHaveText(['…In flight1', '✓Completed1']);
  await expect(row.locator('[data-count="in_flight"]')).toContainText('1');
  await expect(row.locator('[data-count="outcome_unknown"]')).toHaveCount(0);

  await page.goto(host.turnPath('t'));
  await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true', { timeout: 20_000 });
  const count = (f: string) => page.locator(`.filter[data-filter="${f}"] .tabular-nums`);
  await expect(page.locator('.filter[data-filter="in_flight"] [data-kind]')).toHaveText('…In flight');
  await expect(count('in_flight')).toHaveText('1');
  await expect(count('outcome_unknown')).toHaveText('0');
  await expect(count('completed')).toHaveText('1');
  const rows = page.locator('.timeline-row');
  await page.locator('.filter[data-filter="outcome_unknown"]').click();
  await expect(rows).toHaveCount(0);
  await page.locator('.filter[data-filter="in_flight"]').click();
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-row-id', 'flying');

  // One settled unknown beside it: each filter keeps its own row, each count its own.
  await host.settled('t', 'lost', 'outcome_unknown', 'execution_timeout');
  await expect(count('outcome_unknown')).toHaveText('1');
  await expect(count('in_flight')).toHaveText('1');
  await page.locator('.filter[data-filter="outcome_unknown"]').click();
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-row-id', 'lost');
  await page.locator('.filter[data-filter="in_flight"]').click();
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-row-id', 'flying');

  await page.goto(host.sessionPath());
  await expect(badges).toHaveText(['?Outcome unknown1', '…In flight1', '✓Completed1']);
  await expect(badges.nth(0)).toHaveAttribute('data-count', 'outcome_unknown');
  await expect(badges.nth(0).locator('.tabular-nums')).toHaveText('1');
  await expect(badges.nth(1)).toHaveAttribute('data-count', 'in_flight');
  await expect(badges.nth(1).locator('.tabular-nums')).toHaveText('1');
  await expect(page.locator('.session-summary .summary-text')).toHaveText('1 completed, 1 in flight, 1 unknown');
  await expect(page.locator('.session-summary .summary-unknown')).toHaveText('lost');
});

// The unknowns queue as a table (docs/design.md "The unknowns queue"): 200 rows within 150 KB of HTML,
// readable without JavaScript. Before: a column of cards, 654 KB for 200. (With staff notes and claims:
// workbench.spec.ts.)
test('the unknowns queue of 200 open unknowns is at most 150 KB of HTML, every row server-rendered', async ({ browser, request }) => {
  test.setTimeout(90_000);
  const session = unique('e2e-queue-budget-support-chat');
  const ops: object[] = [];
  for (let i = 0; i < 200; i++) {
    const id = `${session}-op-${String(i).padStart(3, '0')}`;
    ops.push(...settledOps(session, 'turn-1', id, 'outcome_unknown', `mcp__github__create_issue_${i % 7}`));
    ops.push({ op: 'metadata', session_key: session, mutation_id: id, title: `Create issue "Login fails on Safari 17" #${1000 + i}` });
  }
  await batch(request, ops);
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  const r = await page.goto(`/unknowns?session_like=${enc(session)}`);
  expect(r?.status()).toBe(200);
  const bytes = (await r!.body()).length;
  console.log(`figures: queue page of 200 unknowns (open access): ${bytes} bytes`);
  expect(bytes).toBeLessThanOrEqual(150_000);
  await expect(page.locator('table.q tbody tr')).toHaveCount(200);
  await expect(page.locator('.page-count')).toHaveText('Showing 200 of 200 open unknowns');
  await expect(page.locator('table.q tbody tr').first().locator('td:nth-child(7) a')).toHaveText(`${session}-op-000`);
  await context.close();
});
