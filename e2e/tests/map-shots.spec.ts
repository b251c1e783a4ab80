// Screenshots of a 40-turn session page (issue 26 "the session page as a map"): desktop 1280×800 and phone
// 390×844, light and dark, full page, into SHOTS_DIR (default test-results/screens-map) named
// `<SHOTS_PREFIX>session40-<device>-<scheme>.png` (and `-top.png`, the first screen; `-collapsed.png`, every
// turn collapsed); each page's height is printed. Nothing wider than the viewport at either width.
import { test, expect } from '@playwright/test';
import { unique, enc, layOutAllRows } from './host';
import { writeFortyTurns } from './forty';

const dir = process.env.SHOTS_DIR ?? 'test-results/screens-map';
const prefix = process.env.SHOTS_PREFIX ?? '';

test('screenshots of a 40-turn session at desktop and phone width, light and dark', async ({ page, request }) => {
  test.setTimeout(180_000);
  const session = unique('e2e-forty');
  await writeFortyTurns(request, session);
  for (const [device, width, height] of [['desktop', 1280, 800], ['phone', 390, 844]] as const) {
    await page.setViewportSize({ width, height });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto(`/sessions/${enc(session)}`);
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      await layOutAllRows(page);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${device} ${scheme} overflows`).toBeLessThanOrEqual(0);
      const h = await page.evaluate(() => document.documentElement.scrollHeight);
      console.log(`session40 ${device} ${scheme}: page height ${h} px`);
      await page.screenshot({ path: `${dir}/${prefix}session40-${device}-${scheme}.png`, fullPage: true });
      await page.screenshot({ path: `${dir}/${prefix}session40-${device}-${scheme}-top.png` });
      // With every turn collapsed (the map's `?collapsed=`; before issue 26 the address changes nothing).
      await page.goto(`/sessions/${enc(session)}?collapsed=1-40`);
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      await layOutAllRows(page);
      const folded = await page.evaluate(() => document.documentElement.scrollHeight);
      console.log(`session40 ${device} ${scheme} ?collapsed=1-40: page height ${folded} px`);
      await page.screenshot({ path: `${dir}/${prefix}session40-${device}-${scheme}-collapsed.png`, fullPage: true });
    }
  }
});
