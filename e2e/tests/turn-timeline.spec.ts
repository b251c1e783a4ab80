// The turn page as an investigator reads it (issue 41, docs/design.md "What the person sees"): titled by the
// turn's number with previous / next turns, each settled row saying how long it took, and a timeline picture
// (docs/api.md "A turn's timeline") with a bar per write, the in-flight ones growing and the picture read
// again live; the same without JavaScript. Screenshots (desktop 1280×800, phone 390×844, light and dark, as
// staff and through a viewer link) go to SHOTS_DIR (default test-results/screens-turn).
import { test, expect, APIRequestContext, Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { Host, unique, enc } from './host';

const dir = process.env.SHOTS_DIR ?? 'test-results/screens-turn';

/** Three turns: turn-1 (one quick write), turn-b7f (a write of about 1.5 s, a failed one, and a burst of
 *  three parallel writes), turn-3 (one write in flight). */
async function seed(request: APIRequestContext) {
  const session = unique('e2e-turnpage');
  const host = new Host(request, session);
  await host.settled('turn-1', 'first-1', 'completed');
  await host.approve('turn-b7f', 'slow-1');
  await host.intent('slow-1');
  await new Promise(r => setTimeout(r, 1500));
  await host.settle('slow-1', 'completed');
  await host.metadata('slow-1', { title: 'Quarterly report' });
  await host.settled('turn-b7f', 'broke-1', 'failed');
  for (const m of ['burst-1', 'burst-2', 'burst-3']) {
    await host.approve('turn-b7f', m, 'mcp__jira__transition_issue');
    await host.intent(m);
  }
  for (const m of ['burst-1', 'burst-2', 'burst-3']) await host.settle(m, 'completed');
  await host.approve('turn-3', 'flying-1');
  await host.intent('flying-1');
  return { session, host };
}

/** The timeline picture's SVG as the page's `<img>` names it. */
async function picture(page: Page, request: APIRequestContext) {
  const src = await page.locator('.turn-timeline img').getAttribute('src');
  expect(src).toMatch(/\/timeline\.svg\?at=\d+$/);
  const r = await request.get(src!);
  expect(r.status()).toBe(200);
  expect(r.headers()['content-type']).toBe('image/svg+xml; charset=utf-8');
  return { src: src!, svg: await r.text() };
}

async function live(page: Page) {
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
}

test('a turn page is titled "Turn N" with previous and next turns, rows say how long they took, its timeline has a bar per write and grows live', async ({ page, request }) => {
  const errors: string[] = [];
  page.on('pageerror', e => errors.push(String(e)));
  const { host } = await seed(request);

  await page.goto(host.turnPath('turn-b7f'));
  await expect(page).toHaveTitle('Turn 2 (turn-b7f) · Outcome ledger');
  await expect(page.locator('main h1')).toHaveText('Turn 2 · turn-b7f');
  const nav = page.locator('nav.turn-nav');
  await expect(nav).toContainText('2 of 3');
  await expect(nav.locator('.prev-turn')).toHaveText('← Turn 1');
  await expect(nav.locator('.prev-turn')).toHaveAttribute('href', host.turnPath('turn-1'));
  await expect(nav.locator('.next-turn')).toHaveText('Turn 3 →');
  await live(page);

  // The slow write took about 1.5 s; the quick ones milliseconds.
  const slow = page.locator('.outcome[data-mutation-id="slow-1"] .row-times');
  await expect(slow).toContainText(/ · took 1\.\d s$/);
  await expect(page.locator('.outcome[data-mutation-id="broke-1"] .row-times')).toContainText(/ · took \d+ ms$/);

  // The picture: loaded, sized by its five bars, one per write, coloured by status, with its words.
  const img = page.locator('.turn-timeline img');
  await expect(img).toHaveAttribute('width', '640');
  await expect(img).toHaveAttribute('height', String(8 + 18 * 5 + 28));
  await expect(img).toHaveAttribute('alt', "Timeline of this turn: each write a bar from its start to its settlement, coloured by status. The list below gives each write's times and how long it took.");
  await expect.poll(() => img.evaluate(i => (i as HTMLImageElement).naturalWidth)).toBe(640);
  const { svg } = await picture(page, request);
  expect(svg.match(/<rect class="bar /g)).toHaveLength(5);
  expect(svg.match(/data-status="completed"/g)).toHaveLength(4);
  expect(svg.match(/data-status="failed"/g)).toHaveLength(1);
  expect(svg).toContain('Quarterly report: completed, started at +0 ms, took 1.');
  expect(svg).toMatch(/<title id="t">Turn 2 \(turn-b7f\): 5 writes, from intent to settlement, over \d/);

  // Next: the last turn, with no next link; its write in flight is a growing bar.
  await nav.locator('.next-turn').click();
  await expect(page).toHaveURL(host.turnPath('turn-3'));
  await expect(page).toHaveTitle('Turn 3 · Outcome ledger');
  await expect(page.locator('nav.turn-nav .next-turn')).toHaveCount(0);
  await expect(page.locator('nav.turn-nav .prev-turn')).toHaveText('← Turn 2');
  await expect(page.locator('.outcome[data-mutation-id="flying-1"] .row-times')).toContainText('In flight since');
  await expect(page.locator('.outcome[data-mutation-id="flying-1"] .row-times')).not.toContainText('took');
  await live(page);
  const before = await picture(page, request);
  expect(before.svg.match(/<rect class="bar /g)).toHaveLength(1);
  expect(before.svg).toContain('data-status="in flight"');
  expect(before.svg).toMatch(/<animate attributeName="width" from="[\d.]+" to="568\.0" dur="[\d.]+s" fill="freeze"\/>/);
  // The bar grows on screen (SMIL runs in an image): two shots of the picture a second apart differ.
  const shot1 = await page.locator('.turn-timeline img').screenshot();
  await page.waitForTimeout(1200);
  const shot2 = await page.locator('.turn-timeline img').screenshot();
  expect(shot1.equals(shot2), 'the in-flight bar grows').toBe(false);

  // Live: a new write in the turn, then its settlement: the page reads the picture again each time.
  await page.evaluate(() => { (window as any).__same = true; });
  await host.approve('turn-3', 'flying-2');
  await host.intent('flying-2');
  await expect(page.locator('.timeline-row')).toHaveCount(2);
  await expect(page.locator('.turn-timeline img')).not.toHaveAttribute('src', before.src);
  await expect.poll(async () => (await picture(page, request)).svg.match(/<rect class="bar /g)?.length).toBe(2);
  await host.settle('flying-1', 'completed');
  await expect(page.locator('.outcome[data-mutation-id="flying-1"] .row-times')).toContainText(/ · took \d/);
  await expect.poll(async () => (await picture(page, request)).svg.match(/data-status="completed"/g)?.length).toBe(1);
  expect(await page.evaluate(() => (window as any).__same)).toBe(true);
  await expect(page.locator('.turn-timeline img')).toHaveAttribute('height', String(8 + 18 * 2 + 28));

  // A new turn begins while the last turn's page is open: "3 of 4" and "Turn 4 →" appear without a reload.
  await expect(page.locator('nav.turn-nav')).toContainText('3 of 3');
  await host.approve('turn-4', 'later-1');
  await host.intent('later-1');
  await expect(page.locator('nav.turn-nav')).toContainText('3 of 4');
  await expect(page.locator('nav.turn-nav .next-turn')).toHaveText('Turn 4 →');
  await expect(page.locator('nav.turn-nav .next-turn')).toHaveAttribute('href', host.turnPath('turn-4'));
  await expect(page.locator('nav.turn-nav .next-turn')).toHaveCount(1);
  expect(await page.evaluate(() => (window as any).__same)).toBe(true);

  // The first turn: no previous link.
  await page.locator('nav.turn-nav .prev-turn').click();
  await page.locator('nav.turn-nav .prev-turn').click();
  await expect(page).toHaveTitle('Turn 1 · Outcome ledger');
  await expect(page.locator('nav.turn-nav .prev-turn')).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('without JavaScript the turn page has its number, its previous and next links, the durations and the timeline picture', async ({ browser, request, baseURL }) => {
  const { host } = await seed(request);
  const context = await browser.newContext({ javaScriptEnabled: false, baseURL });
  try {
    const page = await context.newPage();
    await page.goto(host.turnPath('turn-b7f'));
    await expect(page).toHaveTitle('Turn 2 (turn-b7f) · Outcome ledger');
    await expect(page.locator('.outcome[data-mutation-id="slow-1"] .row-times')).toContainText(/ · took 1\.\d s$/);
    const img = page.locator('.turn-timeline img');
    await expect.poll(() => img.evaluate(i => (i as HTMLImageElement).naturalWidth)).toBe(640);
    await expect(img).toHaveAttribute('alt', /^Timeline of this turn: each write a bar/);
    await expect(img).toHaveAttribute('height', String(8 + 18 * 5 + 28));
    await page.locator('nav.turn-nav .next-turn').click();
    await expect(page).toHaveTitle('Turn 3 · Outcome ledger');
    const { svg } = await picture(page, request);
    expect(svg).toContain('<animate attributeName="width"');
    await page.locator('nav.turn-nav .prev-turn').click();
    await page.locator('nav.turn-nav .prev-turn').click();
    await expect(page).toHaveTitle('Turn 1 · Outcome ledger');
  } finally {
    await context.close();
  }
});

test('screenshots of a turn page with its timeline, desktop and phone, light and dark, as staff and as a viewer; axe clean', async ({ browser, request, baseURL }) => {
  test.setTimeout(120_000);
  const { host } = await seed(request);
  const link = await host.viewerLink(3600);
  const bad: string[] = [];
  for (const who of ['staff', 'viewer'] as const) {
    for (const [device, width, height] of [['desktop', 1280, 800], ['phone', 390, 844]] as const) {
      for (const colorScheme of ['light', 'dark'] as const) {
        const context = await browser.newContext({ baseURL, viewport: { width, height }, colorScheme });
        try {
          const page = await context.newPage();
          if (who === 'viewer') {
            await page.goto(link.url);
            await expect(page.locator('.viewer-notice')).toBeVisible();
          }
          await page.goto(host.turnPath('turn-b7f'));
          await live(page);
          const img = page.locator('.turn-timeline img');
          await expect.poll(() => img.evaluate(i => (i as HTMLImageElement).naturalWidth)).toBe(640);
          const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
          expect(overflow, `${who} ${device} ${colorScheme} overflows`).toBeLessThanOrEqual(0);
          await page.screenshot({ path: `${dir}/turn-${who}-${device}-${colorScheme}.png` });
          if (device === 'desktop') {
            const result = await new AxeBuilder({ page }).analyze();
            bad.push(...result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
              .map(v => `${who} ${colorScheme} ${v.id}: ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`));
          }
        } finally {
          await context.close();
        }
      }
    }
  }
  expect(bad).toEqual([]);
});
