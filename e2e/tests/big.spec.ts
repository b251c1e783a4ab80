// Big turns stay usable (docs/design.md "Big turns"): the server renders the first 200 rows of a 5,000- or
// 20,000-outcome turn, the browser reads the rest in the background without freezing the page, filters and
// "Show more" act at once, the timeline is one tab stop, and a live settlement still lands. Each test prints
// its timings (also as an annotation); docs/performance.md "Big turns" has its table from these lines. The bounds
// asserted are loose (this machine is shared): they catch a freeze or a page that renders every row, not a
// slow day.
import { test, expect, Page } from '@playwright/test';
import { Host, unique, batch, settledOps } from './host';

const STATUSES = ['completed', 'failed', 'outcome_unknown', 'completed'];

/** Collects the main thread's long tasks (over 50 ms) from the first script on. */
async function watchLongTasks(page: Page) {
  await page.addInitScript(() => {
    const w = window as unknown as { __long: number[] };
    w.__long = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__long.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
}

async function longTasks(page: Page): Promise<number[]> {
  return page.evaluate(() => (window as unknown as { __long: number[] }).__long.slice());
}

/** Elements inside the timeline that Tab stops at. */
async function tabStops(page: Page): Promise<number> {
  return page.locator('.timeline').evaluate((ol) => {
    const all = ol.querySelectorAll<HTMLElement>('a[href], button, input, select, textarea, [tabindex]');
    return Array.from(all).filter((e) => e.tabIndex >= 0 && !e.hasAttribute('disabled')).length;
  });
}

for (const n of [5000, 20000]) {
  test(`a ${n.toLocaleString('en')}-outcome turn shows its first rows at once and stays responsive`, async ({ page, request }) => {
    test.setTimeout(n > 10000 ? 300_000 : 150_000);
    const session = unique(`e2e-big${n}`);
    const ops: object[] = [];
    for (let i = 0; i < n; i++) {
      ops.push(...settledOps(session, 't', `m-${String(i).padStart(5, '0')}`, STATUSES[i % 4]));
    }
    const w0 = Date.now();
    await batch(request, ops);
    const writeMs = Date.now() - w0;
    const host = new Host(request, session);
    const failed = n / 4;

    await watchLongTasks(page);
    const t0 = Date.now();
    await page.goto(host.turnPath('t'), { waitUntil: 'commit' });
    const rows = page.locator('.timeline-row');
    await expect(rows.first()).toBeVisible();
    const firstRowsMs = Date.now() - t0;
    const html = await page.content();
    const pageKb = Math.round(html.length / 1024);
    // Only the first 200 rows are in the page; the counts are the whole turn's.
    await expect(rows).toHaveCount(200);
    await expect(page.locator('.filter[data-filter="all"] .label')).toHaveText(`All (${n})`);
    await expect(page.locator('.filter[data-filter="failed"] .tabular-nums')).toHaveText(String(failed));

    await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true', { timeout: 30_000 });
    await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 30_000 });
    const liveMs = Date.now() - t0;

    // While the rest is read, the page answers: a filter click re-renders at once.
    const f0 = Date.now();
    await page.locator('.filter[data-filter="failed"]').click();
    await expect(page.locator('.timeline-row[data-row-id="m-00001"]')).toBeVisible();
    await expect(rows).toHaveCount(200);
    await expect(page.locator('.timeline-row').first()).toHaveAttribute('data-row-id', 'm-00001');
    const filterMs = Date.now() - f0;
    await page.locator('.filter[data-filter="all"]').click();
    await expect(page.locator('.timeline-row').first()).toHaveAttribute('data-row-id', 'm-00000');

    // Every page read: no "reading the rest" line, "Showing 200 of n".
    await expect(page.locator('.more.loading')).toHaveCount(0, { timeout: 120_000 });
    await expect(page.locator('.more .tabular-nums')).toHaveText(`Showing 200 of ${n}.`);
    const loadedMs = Date.now() - t0;

    const m0 = Date.now();
    await page.locator('.show-more').click();
    await expect(rows).toHaveCount(400);
    const moreMs = Date.now() - m0;
    await expect(page.locator('.more .tabular-nums')).toHaveText(`Showing 400 of ${n}.`);

    const s0 = Date.now();
    await page.evaluate(async () => {
      for (let y = 0; y < document.body.scrollHeight; y += 600) {
        window.scrollTo(0, y);
        await new Promise((r) => requestAnimationFrame(() => r(null)));
      }
    });
    const scrollMs = Date.now() - s0;

    // One tab stop for the timeline; End reaches the last row shown.
    expect(await tabStops(page)).toBe(1);
    await rows.first().focus();
    await page.keyboard.press('End');
    await expect(rows.nth(399)).toBeFocused();
    expect(await tabStops(page)).toBe(1);
    await expect(rows.nth(399)).toHaveAttribute('tabindex', '0');

    const l0 = Date.now();
    await host.settled('t', 'm-live', 'failed');
    await expect(page.locator('.filter[data-filter="all"] .label')).toHaveText(`All (${n + 1})`);
    await expect(page.locator('.filter[data-filter="failed"] .tabular-nums')).toHaveText(String(failed + 1));
    const liveAppendMs = Date.now() - l0;

    const long = await longTasks(page);
    const longest = Math.round(Math.max(0, ...long));
    const line = `${n} outcomes: write ${writeMs} ms; first rows ${firstRowsMs} ms (page ${pageKb} KB); live ${liveMs} ms; ` +
      `filter while reading ${filterMs} ms; all ${n} read ${loadedMs} ms; show 200 more ${moreMs} ms; ` +
      `scroll 400 rows ${scrollMs} ms; live append ${liveAppendMs} ms; long tasks ${long.length}, longest ${longest} ms`;
    console.log(line);
    test.info().annotations.push({ type: 'timing', description: line });
    expect(firstRowsMs).toBeLessThan(5000);
    expect(pageKb).toBeLessThan(1024);
    expect(filterMs).toBeLessThan(3000);
    expect(moreMs).toBeLessThan(3000);
    expect(longest).toBeLessThan(2000);
  });
}
