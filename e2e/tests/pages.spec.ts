// Home search (without JavaScript), sessions list, session page, operation page, deep links.
import { test, expect } from '@playwright/test';
import { Host, unique, enc } from './host';

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('the home search box finds a session, an operation, or says nothing matched', async ({ page, request }) => {
    const session = unique('e2e-find');
    const host = new Host(request, session);
    await host.settled('t1', `${session}-op`, 'completed');

    await page.goto('/');
    const box = page.getByRole('searchbox', { name: 'Session id or operation id' });
    await box.fill(session);
    await page.getByRole('button', { name: 'Find' }).click();
    await expect(page).toHaveURL(new RegExp(`/sessions/${session}$`));
    await expect(page.locator('h1')).toContainText(session);

    await page.goto('/');
    await page.getByRole('searchbox').fill(`${session}-op`);
    await page.getByRole('button', { name: 'Find' }).click();
    // One operation has this id: straight to its own page, not the look-up (docs/design.md "Search").
    await expect(page).toHaveURL(new RegExp(`/sessions/${session}/operations/${session}-op$`));
    await expect(page.locator('.current .outcome')).toHaveAttribute('data-mutation-id', `${session}-op`);

    await page.goto(`/find?q=${enc('no-such-id-' + session)}`);
    await expect(page.locator('.no-match')).toContainText('No session and no published operation');
  });

  test('an id that is both a session and an operation lists both', async ({ page, request }) => {
    const both = unique('e2e-both');
    const host = new Host(request, both);
    await host.settled('t1', both, 'failed');
    await page.goto(`/find?q=${enc(both)}`);
    await expect(page.locator('.find-result a')).toHaveCount(2);
    await expect(page.locator(`.find-result a[href="/sessions/${both}"]`)).toBeVisible();
    await expect(page.locator(`.find-result a[href="/operations/${both}"]`)).toContainText('1 match');
  });

  test('sessions list, session page and operation page are readable without JavaScript', async ({ page, request }) => {
    const session = unique('e2e-pages');
    const host = new Host(request, session);
    await host.settled('turn-a', `${session}-1`, 'completed');
    await host.settled('turn-a', `${session}-2`, 'outcome_unknown', 'execution_timeout');
    await host.settled('turn-b', `${session}-3`, 'failed');

    await page.goto('/');
    const row = page.locator('.session', { has: page.locator(`a[href="/sessions/${session}"]`) });
    await expect(row).toContainText('2 turns · last activity');
    await expect(row).toContainText('last activity');
    const counts = row.locator('[data-count]');
    await expect(counts.first()).toHaveAttribute('data-count', 'outcome_unknown');
    await expect(row.locator('[data-count="outcome_unknown"]')).toContainText('1');
    await expect(row.locator('[data-count="completed"]')).toContainText('1');
    await expect(row.locator('[data-count="failed"]')).toContainText('1');

    await row.locator('a').click();
    const turns = page.locator('.turn');
    await expect(turns).toHaveCount(2);
    await expect(turns.nth(0)).toContainText('Turn 1 · turn-a');
    await expect(turns.nth(1)).toContainText('Turn 2 · turn-b');
    await expect(turns.nth(0).locator('[data-count="outcome_unknown"]')).toContainText('1');
    // The end user's timeline: every turn's outcomes in recorded order, a summary with the id to quote,
    // and each row linked to its operation page.
    await expect(page.locator('.session-summary .summary-text')).toHaveText('1 completed, 1 failed, 1 unknown');
    await expect(page.locator('.session-summary .summary-unknown')).toHaveText(`${session}-2`);
    await expect(turns.nth(0).locator('.outcome')).toHaveCount(2);
    await expect(turns.nth(0).locator('.outcome').nth(0)).toHaveAttribute('data-mutation-id', `${session}-1`);
    await expect(turns.nth(0).locator('.outcome').nth(1)).toHaveAttribute('data-status', 'outcome_unknown');
    await expect(turns.nth(1).locator('.outcome')).toHaveAttribute('data-status', 'failed');
    await expect(turns.nth(1).locator('a.history-link')).toHaveAttribute('href', `/sessions/${session}/operations/${session}-3`);
    await expect(turns.nth(0).locator('time').first()).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT/);
    await turns.nth(0).locator('h2 a').click();
    await expect(page).toHaveURL(new RegExp(`/sessions/${session}/turns/turn-a$`));
    await expect(page.locator('.timeline-row')).toHaveCount(2);

    await page.goto(`/operations/${enc(session + '-2')}`);
    const op = page.locator('.operation');
    await expect(op).toHaveCount(1);
    await expect(op.locator(`a[href="/sessions/${session}"]`)).toBeVisible();
    await expect(op.locator(`a[href="/sessions/${session}/turns/turn-a"]`)).toBeVisible();
    await expect(op).toContainText('automatic resend is paused');
    await expect(op.locator('.operation-id')).toHaveText(`${session}-2`);
  });

  test('ids with %, /, spaces and non-ASCII survive the round trip through links', async ({ page, request }) => {
    const session = unique('e2e odd/%é');
    const turn = 'turn 1/%ü';
    const mutation = unique('op %/ ñ');
    const host = new Host(request, session);
    await host.settled(turn, mutation, 'completed');

    await page.goto(`/sessions/${enc(session)}`);
    await expect(page.locator('h1')).toContainText(session);
    await page.locator('.turn h2 a').click();
    await expect(page.locator('h1')).toContainText(turn);
    await expect(page.locator('.timeline-row')).toHaveCount(1);
    await expect(page.locator('.operation-id')).toHaveText(mutation);

    await page.goto(`/find?q=${enc(mutation)}`);
    await expect(page).toHaveURL(new RegExp(`/sessions/${enc(session)}/operations/${enc(mutation)}`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$'));
    await expect(page.locator('h1')).toContainText(mutation);
    await expect(page.getByRole('link', { name: `← Session ${session}` })).toHaveAttribute('href', `/sessions/${enc(session)}`);
  });

  test('an unknown session or turn says it is gone', async ({ page }) => {
    await page.goto(`/sessions/${enc(unique('nope'))}`);
    await expect(page.getByRole('alert')).toContainText('No session with this id');
    await page.goto(`/sessions/${enc(unique('nope'))}/turns/t1`);
    await expect(page.getByRole('alert')).toBeVisible();
  });
});
