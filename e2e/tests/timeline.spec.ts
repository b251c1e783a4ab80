import { test, expect } from '@playwright/test';
import { Host, unique, layOutAllRows } from './host';

test('a turn page shows settled outcomes live, without reload, and an unknown outcome with its operation id', async ({ page, request }) => {
  const errors: string[] = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });

  const session = unique('e2e-live');
  const host = new Host(request, session);
  await host.settled('turn-1', 'done-1', 'completed');
  await host.approve('turn-1', 'pending-1');
  await host.intent('pending-1');

  const response = await page.goto(host.turnPath('turn-1'));
  expect(response?.status()).toBe(200);
  const rows = page.locator('.timeline-row');
  await expect(rows).toHaveCount(2);
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });

  // The host settles the in-flight write as unknown: the row changes in place, no reload.
  await page.evaluate(() => { (window as any).__marker = 'same page'; });
  await host.settle('pending-1', 'outcome_unknown', 'execution_timeout');
  const unknown = page.locator('.outcome[data-mutation-id="pending-1"]');
  await expect(unknown).toHaveAttribute('data-status', 'outcome_unknown');
  await expect(unknown).toContainText('The result of this write is not established');
  await expect(unknown).toContainText('automatic resend is paused');
  await expect(unknown.locator('.operation-id')).toHaveText('pending-1');
  await expect(unknown).toContainText('timed out');

  // A mutation first seen live is appended, once.
  await host.settled('turn-1', 'later-1', 'failed');
  await expect(page.locator('.outcome[data-mutation-id="later-1"]')).toHaveAttribute('data-status', 'failed');
  await expect(rows).toHaveCount(3);
  expect(await page.evaluate(() => (window as any).__marker)).toBe('same page');

  await layOutAllRows(page);
  await page.screenshot({ path: 'test-results/turn-page.png', fullPage: true });
  expect(errors).toEqual([]);
});
