// Paged listings with totals, filters in the address, "as of" and refresh (docs/api.md "Paging",
// docs/design.md "What the person sees"). Before, the queue silently stopped at 200 of 218 and the home page listed every
// session (20,000 sessions: an 11.6 MB page).
import { test, expect } from '@playwright/test';
import { Host, batch, enc, settledOps, unique } from './host';

test('the unknowns queue pages 218 open unknowns as 200 + 18 with the total, filtered by session and tool in the address', async ({ page, request }) => {
  test.setTimeout(90_000);
  const session = unique('e2e-queue');
  const ops: object[] = [];
  for (let i = 0; i < 218; i++) ops.push(...settledOps(session, 't', `q-${String(i).padStart(3, '0')}`, 'outcome_unknown', 'tool.queue'));
  ops.push(...settledOps(session, 't', 'q-other', 'outcome_unknown', 'tool.other'));
  await batch(request, ops);

  await page.goto(`/unknowns?session_key=${enc(session)}&tool=tool.queue`);
  await expect(page.locator('.page-count')).toHaveText('Showing 200 of 218 open unknowns');
  await expect(page.locator('.operations > tr')).toHaveCount(200);
  await expect(page.locator('input[name="session_key"]')).toHaveValue(session);
  await expect(page.locator('.as-of time')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT/);
  const first = await page.locator('.operations > tr').first().locator('td:nth-child(7) a').textContent();
  expect(first).toBe('q-000');

  await page.locator('a.next-page').click();
  await expect(page).toHaveURL(/after=/);
  await expect(page.locator('.operations > tr')).toHaveCount(18);
  await expect(page.locator('.page-count')).toContainText('18 of 218');
  await expect(page.locator('a.next-page')).toHaveCount(0);
  expect(await page.locator('.operations > tr').last().locator('td:nth-child(7) a').textContent()).toBe('q-217');
  await page.locator('a.first-page').click();
  await expect(page.locator('.operations > tr')).toHaveCount(200);

  // The age filter: none of these has been open a day.
  await page.goto(`/unknowns?session_key=${enc(session)}&min_age_secs=86400`);
  await expect(page.locator('.page-count')).toHaveText('Showing 0 of 0 open unknowns');
});

test('the home page pages sessions by activity with totals and filters by id prefix, open unknown and tool', async ({ page, request }) => {
  test.setTimeout(90_000);
  const prefix = unique('e2e-home');
  const ops: object[] = [];
  for (let i = 0; i < 55; i++) {
    ops.push(...settledOps(`${prefix}-${String(i).padStart(2, '0')}`, 't', 'm', i % 5 === 0 ? 'outcome_unknown' : 'completed', i % 11 === 0 ? 'tool.rare' : 'tool.common'));
  }
  await batch(request, ops);
  // One batch gives every session the same activity time (then they go by id); a later write to -30
  // makes it the most recently active.
  await new Host(request, `${prefix}-30`).settled('t', 'later', 'completed');

  await page.goto(`/?prefix=${enc(prefix)}`);
  await expect(page.locator('.page-count')).toHaveText('Showing 50 of 55 sessions');
  await expect(page.locator('.sessions > li')).toHaveCount(50);
  await expect(page.locator('.sessions > li').first()).toContainText(`${prefix}-30`);
  await expect(page.locator('.sessions > li').nth(1)).toContainText(`${prefix}-00`);
  await page.locator('a.next-page').click();
  await expect(page.locator('.sessions > li')).toHaveCount(5);
  await expect(page.locator('.sessions > li').last()).toContainText(`${prefix}-54`);

  await page.goto(`/?prefix=${enc(prefix)}&has_unknown=true`);
  await expect(page.locator('.page-count')).toHaveText('Showing 11 of 11 sessions');
  await expect(page.locator('select[name="has_unknown"]')).toHaveValue('true');
  await page.goto(`/?prefix=${enc(prefix)}&tool=tool.rare`);
  await expect(page.locator('.page-count')).toHaveText('Showing 5 of 5 sessions');

  // A bad filter value is the API's clear 400, shown on the page, not a crash.
  const bad = await page.goto(`/?has_unknown=maybe`);
  expect(bad?.status()).toBe(400);
});

test('the home page and the queue say "as of" and refresh themselves, and on demand', async ({ page, request }) => {
  test.setTimeout(60_000);
  const session = unique('e2e-refresh');
  const host = new Host(request, session);
  await host.settled('t', 'r0', 'completed');
  await page.goto(`/?prefix=${enc(session)}`);
  await expect(page.locator('.as-of')).toContainText('refreshes every 15 s');
  await expect(page.locator('.page-count')).toHaveText('Showing 1 of 1 session');
  await expect(page.locator('.session [data-count="outcome_unknown"]')).toHaveCount(0);
  // No reload: once interactive, the page reads itself again within its 15 s.
  await page.locator('html[data-interactive="true"]').waitFor({ state: 'attached', timeout: 20_000 });
  await host.settled('t', 'r1', 'outcome_unknown');
  await expect(page.locator('.session [data-count="outcome_unknown"]')).toContainText('1', { timeout: 25_000 });

  await page.goto(`/unknowns?session_key=${enc(session)}`);
  await expect(page.locator('.operations > tr')).toHaveCount(1);
  const asOf = await page.locator('.as-of time').getAttribute('datetime');
  await host.settled('t', 'r2', 'outcome_unknown');
  await page.locator('html[data-interactive="true"]').waitFor({ state: 'attached', timeout: 20_000 });
  await page.locator('button.refresh').click();
  await expect(page.locator('.operations > tr')).toHaveCount(2, { timeout: 10_000 });
  expect(await page.locator('.as-of time').getAttribute('datetime')).not.toBe(asOf);
});

// The session page's row budget (500 rows, docs/design.md "What the person sees") replaced the old rule
// (the first 200 turns in full, the others listed): 205 turns of one outcome fit it, so every turn is
// shown and every unknown quoted; budget.spec.ts has a session past the budget.
test('a session of 205 one-outcome turns fits the row budget: every turn shown, every unknown quoted', async ({ page, request }) => {
  test.setTimeout(90_000);
  const session = unique('e2e-turns');
  const ops: object[] = [];
  for (let i = 0; i < 205; i++) {
    ops.push(...settledOps(session, `turn-${String(i).padStart(3, '0')}`, `m-${i}`, i % 50 === 0 ? 'outcome_unknown' : 'completed'));
  }
  await batch(request, ops);
  await page.goto(`/sessions/${enc(session)}`);
  await expect(page.locator('.turn')).toHaveCount(205);
  await expect(page.locator('.turn').first()).toContainText('Turn 1 · turn-000');
  await expect(page.locator('.turn').last()).toContainText('Turn 205 · turn-204');
  // 205 turns: unknown at 0, 50, 100, 150 and 200.
  await expect(page.locator('.session-summary .summary-text')).toHaveText('200 completed, 5 unknown');
  await expect(page.locator('.session-summary .summary-unknown')).toHaveCount(5);
  await expect(page.locator('.session-summary .rest-unknowns')).toHaveCount(0);
  await expect(page.locator('.earlier-turns')).toHaveCount(0);
  await page.locator('.turn[data-turn-id="turn-200"] h2 a').click();
  await expect(page.locator('.outcome[data-mutation-id="m-200"]')).toHaveAttribute('data-status', 'outcome_unknown');
});
