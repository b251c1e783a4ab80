// A 1,000-outcome turn renders, and stays responsive (filter, keyboard, a live append).
import { test, expect } from '@playwright/test';
import { Host, unique, batch, settledOps } from './host';

test('a 1,000-outcome turn renders and stays responsive', async ({ page, request }) => {
  test.setTimeout(90_000);
  const session = unique('e2e-big');
  const ops: object[] = [];
  const statuses = ['completed', 'failed', 'outcome_unknown', 'completed'];
  for (let i = 0; i < 1000; i++) ops.push(...settledOps(session, 't', `m-${String(i).padStart(4, '0')}`, statuses[i % 4]));
  const w0 = Date.now();
  await batch(request, ops);
  const writeMs = Date.now() - w0;

  const t0 = Date.now();
  await page.goto(new Host(request, session).turnPath('t'));
  const rows = page.locator('.timeline-row');
  await expect(rows).toHaveCount(1000);
  const renderMs = Date.now() - t0;
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 20_000 });
  const hydratedMs = Date.now() - t0;
  await expect(page.locator('.filter[data-filter="completed"] .tabular-nums')).toHaveText('500');
  await expect(page.locator('.filter[data-filter="outcome_unknown"] .tabular-nums')).toHaveText('250');

  const f0 = Date.now();
  await page.locator('.filter[data-filter="failed"]').click();
  await expect(rows).toHaveCount(250);
  await page.getByRole('button', { name: /^All/ }).click();
  await expect(rows).toHaveCount(1000);
  const filterMs = Date.now() - f0;

  await rows.nth(500).focus();
  const k0 = Date.now();
  for (let i = 0; i < 10; i++) await page.keyboard.press('j');
  await expect(rows.nth(510)).toBeFocused();
  const keysMs = Date.now() - k0;

  const host = new Host(request, session);
  const l0 = Date.now();
  await host.settled('t', 'm-live', 'completed');
  await expect(rows).toHaveCount(1001);
  const liveMs = Date.now() - l0;

  const line = `1000 outcomes: write ${writeMs} ms, server-rendered rows visible ${renderMs} ms, live ${hydratedMs} ms, ` +
    `filter+unfilter ${filterMs} ms, 10 key moves ${keysMs} ms, live append ${liveMs} ms`;
  console.log(line);
  test.info().annotations.push({ type: 'timing', description: line });
  expect(filterMs).toBeLessThan(5000);
  expect(liveMs).toBeLessThan(5000);
});
