// Keyboard (docs/design.md "Keyboard"): a skip link, the timeline as one tab stop with roving focus, and
// filters that look pressed, not focused. And the session page with a big turn (docs/design.md "Big turns").
import { test, expect, Page } from '@playwright/test';
import { Host, unique, batch, settledOps } from './host';

async function interactive(page: Page) {
  await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true', { timeout: 20_000 });
}

/** Where the focus is: `row:<id>`, `in-row:<id>:<class or tag>`, `skip`, `main`, or the tag and classes. */
async function focusIs(page: Page): Promise<string> {
  return page.evaluate(() => {
    const a = document.activeElement as HTMLElement | null;
    if (!a) return 'none';
    if (a.classList.contains('skip-link')) return 'skip';
    if (a.id === 'main') return 'main';
    const row = a.closest('.timeline-row');
    if (row && row === a) return `row:${row.getAttribute('data-row-id')}`;
    if (row) {
      const known = ['copy-operation-id', 'history-link'].find((c) => a.classList.contains(c));
      return `in-row:${row.getAttribute('data-row-id')}:${known ?? a.tagName.toLowerCase()}`;
    }
    return `${a.tagName.toLowerCase()}.${Array.from(a.classList).join('.')}`;
  });
}

test('a skip link comes first and moves to the content', async ({ page }) => {
  await page.goto('/');
  await interactive(page);
  await page.keyboard.press('Tab');
  expect(await focusIs(page)).toBe('skip');
  const skip = page.locator('.skip-link');
  await expect(skip).toHaveText('Skip to content');
  const box = await skip.boundingBox();
  expect(box && box.width > 20 && box.height > 10, 'the focused skip link is visible').toBeTruthy();
  await page.keyboard.press('Enter');
  expect(await focusIs(page)).toBe('main');
});

test('the timeline is one tab stop: arrows, Home/End, into a row and back, Enter opens the history', async ({ page, request }) => {
  const session = unique('e2e-keys');
  const host = new Host(request, session);
  await host.settled('t', 'k-a', 'completed');
  await host.settled('t', 'k-b', 'outcome_unknown');
  await host.metadata('k-b', { title: 'Ticket', url: 'https://example.com/t/1' });
  await host.settled('t', 'k-c', 'failed');
  await page.goto(host.turnPath('t'));
  await interactive(page);
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live');

  // Tab from the last filter lands on the first row; one more Tab leaves the timeline.
  await page.locator('.summary .filter').last().focus();
  await page.keyboard.press('Tab');
  expect(await focusIs(page)).toBe('row:k-a');
  await page.keyboard.press('Tab');
  expect(await focusIs(page)).not.toMatch(/row/);
  await page.keyboard.press('Shift+Tab');
  expect(await focusIs(page)).toBe('row:k-a');

  await page.keyboard.press('ArrowDown');
  expect(await focusIs(page)).toBe('row:k-b');
  await page.keyboard.press('End');
  expect(await focusIs(page)).toBe('row:k-c');
  await page.keyboard.press('Home');
  expect(await focusIs(page)).toBe('row:k-a');
  await page.keyboard.press('j');
  expect(await focusIs(page)).toBe('row:k-b');

  // Into the row's controls: the title link, the copy button, the history link; back with Escape.
  await page.keyboard.press('ArrowRight');
  expect(await focusIs(page)).toBe('in-row:k-b:a');
  await page.keyboard.press('ArrowRight');
  expect(await focusIs(page)).toBe('in-row:k-b:copy-operation-id');
  await page.keyboard.press('ArrowRight');
  expect(await focusIs(page)).toBe('in-row:k-b:history-link');
  await page.keyboard.press('ArrowLeft');
  expect(await focusIs(page)).toBe('in-row:k-b:copy-operation-id');
  await page.keyboard.press('ArrowDown');
  expect(await focusIs(page)).toBe('row:k-c');
  await page.keyboard.press('k');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Escape');
  expect(await focusIs(page)).toBe('row:k-b');

  // The row last focused is the tab stop: leaving and coming back returns to it.
  await page.keyboard.press('Tab');
  await page.keyboard.press('Shift+Tab');
  expect(await focusIs(page)).toBe('row:k-b');
  const stops = await page.locator('.timeline').evaluate((ol) =>
    Array.from(ol.querySelectorAll<HTMLElement>('a[href], button, [tabindex]')).filter((e) => e.tabIndex >= 0).length);
  expect(stops).toBe(1);

  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/sessions/${session}/operations/k-b$`));
});

test('filters look pressed, not focused, and focus is a ring of its own', async ({ page, request }) => {
  const session = unique('e2e-filters');
  const host = new Host(request, session);
  await host.settled('t', 'f-a', 'completed');
  await page.goto(host.turnPath('t'));
  await interactive(page);
  const all = page.locator('.filter[data-filter="all"]');
  const completed = page.locator('.filter[data-filter="completed"]');
  await expect(all).toHaveAttribute('aria-pressed', 'true');
  await expect(all).not.toBeFocused();
  const look = (l: typeof all) => l.evaluate((e) => {
    const s = getComputedStyle(e);
    return { bg: s.backgroundColor, shadow: s.boxShadow, weight: s.fontWeight };
  });
  const pressed = await look(all);
  const unpressed = await look(completed);
  expect(pressed.bg).not.toBe(unpressed.bg);
  expect(pressed.shadow, 'pressed is not drawn as a focus ring').toBe(unpressed.shadow);
  await expect(all.locator('[aria-hidden="true"]')).toBeVisible();
  await expect(completed.locator('[aria-hidden="true"]').first()).toBeHidden();
  // Keyboard focus draws a ring that neither pressed nor unpressed has.
  await completed.focus();
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab');
  await expect(completed).toBeFocused();
  const focused = await look(completed);
  expect(focused.shadow).not.toBe(unpressed.shadow);
  await page.keyboard.press('Enter');
  await expect(completed).toHaveAttribute('aria-pressed', 'true');
  await expect(all).toHaveAttribute('aria-pressed', 'false');
});

test('the session page shows the newest 50 outcomes of a big turn, links the rest, and its summary counts every unknown', async ({ page, request }) => {
  const session = unique('e2e-bigsession');
  const ops: object[] = [];
  // 120 outcomes; the unknowns are rows 60, 80, 100 and 119. The page shows the newest 50 (70 to 119):
  // it quotes three, and says one more is in the earlier rows (before, it showed rows 0 to 49).
  const unknown = new Set([60, 80, 100, 119]);
  for (let i = 0; i < 120; i++) {
    ops.push(...settledOps(session, 'big', `b-${String(i).padStart(3, '0')}`, unknown.has(i) ? 'outcome_unknown' : 'completed'));
  }
  ops.push(...settledOps(session, 'small', 's-0', 'failed'));
  await batch(request, ops);
  const host = new Host(request, session);
  await page.goto(host.sessionPath());
  const big = page.locator('.turn[data-turn-id="big"]');
  await expect(big.locator('.timeline-row')).toHaveCount(50);
  await expect(big.locator('.timeline-row').first()).toHaveAttribute('data-row-id', 'b-070');
  await expect(big.locator('.turn-more')).toContainText('70 earlier outcomes of this turn are not shown here (the newest 50 of 120 are).');
  await expect(big.locator('.turn-more a')).toHaveAttribute('href', host.turnPath('big'));
  await expect(page.locator('.turn[data-turn-id="small"] .timeline-row')).toHaveCount(1);
  await expect(page.locator('.summary-text')).toHaveText('116 completed, 1 failed, 4 unknown');
  await interactive(page);
  await expect(page.locator('.summary-unknown')).toHaveText(['b-080', 'b-100', 'b-119']);
  await expect(page.locator('.rest-unknowns')).toHaveText('1 more unknown outcome is in an earlier turn or in the earlier rows of a turn, not shown here: open its turn to quote its id.');
  await expect(big.locator('.timeline-row')).toHaveCount(50);
  // Each turn's list is one tab stop too; the end user's view shows no revision numbers.
  const stops = await page.locator('.turn ol').evaluateAll((ols) => ols.map((ol) =>
    Array.from(ol.querySelectorAll<HTMLElement>('a[href], button, [tabindex]')).filter((e) => e.tabIndex >= 0).length));
  expect(stops).toEqual([1, 1]);
  await expect(page.locator('main')).not.toContainText('revision');
});
