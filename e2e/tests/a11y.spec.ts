// Accessibility (axe: no serious or critical violations) and screenshots: desktop and phone, light and dark.
import { test, expect, Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { Host, unique, enc, layOutAllRows } from './host';
import { writeFortyTurns } from './forty';

let paths: Record<string, string> = {};

test.beforeAll(async ({ request }) => {
  const session = unique('e2e-look');
  const host = new Host(request, session);
  await host.settled('turn-1', `${session}-ok`, 'completed');
  await host.metadata(`${session}-ok`, { title: 'Dashboard "Revenue Q3" created', url: 'https://example.com/d/42' });
  await host.settled('turn-1', `${session}-bad`, 'failed');
  await host.approve('turn-1', `${session}-never`);
  await host.intent(`${session}-never`);
  await host.cancel(`${session}-never`, 'pre_dispatch_deadline');
  await host.settled('turn-1', `${session}-unk`, 'outcome_unknown', 'execution_timeout');
  await host.approve('turn-1', `${session}-fly`);
  await host.intent(`${session}-fly`);
  await host.settled('turn-2', `${session}-ok2`, 'completed');
  const forty = unique('e2e-look-map');
  await writeFortyTurns(request, forty);
  paths = {
    home: '/',
    session: `/sessions/${enc(session)}`,
    turn: host.turnPath('turn-1'),
    operation: `/operations/${enc(session + '-unk')}`,
    history: `/sessions/${enc(session)}/operations/${enc(session + '-unk')}`,
    unknowns: '/unknowns',
    // The 40-turn session as a map, a few turns collapsed (issue 26).
    map: `/sessions/${enc(forty)}?collapsed=1-5,12`,
  };
});

async function settle(page: Page, name: string) {
  if (name === 'turn' || name === 'history' || name === 'session' || name === 'map') await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
  else await expect(page.locator('main h1')).toBeVisible();
}

for (const name of ['home', 'session', 'map', 'turn', 'operation', 'history', 'unknowns']) {
  test(`axe: no serious or critical violations on the ${name} page, light and dark`, async ({ page }) => {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto(paths[name]);
      await settle(page, name);
      const result = await new AxeBuilder({ page }).analyze();
      const bad = result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
      expect(bad.map(v => `${scheme} ${v.id}: ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`)).toEqual([]);
    }
  });
}

test('screenshots at desktop and phone width, light and dark', async ({ page }) => {
  test.setTimeout(120_000);
  for (const [device, width, height] of [['desktop', 1280, 900], ['phone', 375, 800]] as const) {
    await page.setViewportSize({ width, height });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const name of ['home', 'session', 'turn', 'operation', 'history', 'unknowns']) {
        await page.goto(paths[name]);
        await settle(page, name);
        await layOutAllRows(page);
        // Nothing wider than the viewport at phone width.
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow, `${name} ${device} ${scheme} overflows`).toBeLessThanOrEqual(0);
        const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
        if (scheme === 'light') expect(bg).toBe('rgb(255, 255, 255)');
        else expect(bg).not.toBe('rgb(255, 255, 255)');
        await page.screenshot({ path: `test-results/screens/${name}-${device}-${scheme}.png`, fullPage: true });
      }
    }
  }
});
