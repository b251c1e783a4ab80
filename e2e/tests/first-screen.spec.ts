// What each person sees first (docs/design.md "What the person sees"), on a server of the test's own:
// - the end user, through a viewer link on a phone: the counts, each unknown outcome by its title (else
//   its tool in words) with its turn, and where to quote its id (`--support-contact`), above the fold;
//   the operation page in their words;
// - the investigator at 1280×800: the turn navigator above the fold, "Last activity" live;
// - during an outage: the connection state stays in sight while scrolling, and a note submitted while
//   the server is down keeps the page and the text, says nothing was sent, and is sent once it is back.
// Screenshots go to SHOTS_DIR (default test-results/screenshots).
import { test, expect, request as pwRequest, Browser, Page } from '@playwright/test';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Host, unique, enc, batch } from './host';
import { OwnServer, outcomes } from './own-server';
import { writeFortyTurns, FORTY } from './forty';

const shots = process.env.SHOTS_DIR ?? 'test-results/screenshots';
const looks = [['desktop', 1280, 800, 'light'], ['desktop', 1280, 800, 'dark'], ['phone', 390, 844, 'light'], ['phone', 390, 844, 'dark']] as const;
const SUPPORT = 'https://help.example.com/agents';

async function screenshots(browser: Browser, base: string, url: string, name: string, ready: (p: Page) => Promise<void>) {
  for (const [device, width, height, colorScheme] of looks) {
    const context = await browser.newContext({ baseURL: base, viewport: { width, height }, colorScheme });
    try {
      const page = await context.newPage();
      await page.goto(url);
      await ready(page);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${name} ${device} ${colorScheme} overflows`).toBeLessThanOrEqual(0);
      await page.screenshot({ path: path.join(shots, `${name}-${device}-${colorScheme}.png`) });
    } finally {
      await context.close();
    }
  }
}

/** Whether the element's box lies within the first screen (no scrolling). */
async function aboveTheFold(page: Page, selector: string): Promise<boolean> {
  const box = await page.locator(selector).first().boundingBox();
  const height = page.viewportSize()!.height;
  return box !== null && box.y >= 0 && box.y + box.height <= height;
}

test.describe('first screens', () => {
  const own = new OwnServer(3230 + Math.floor(Math.random() * 9));
  let dataDir = '';
  test.beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
    await own.start(dataDir, ['--support-contact', SUPPORT, '--support-label', 'Example support']);
  });
  test.afterAll(async () => {
    await own.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("a viewer's phone opens on what happened: the counts, each unknown by title and turn, and where to quote it", async ({ browser }) => {
    test.setTimeout(120_000);
    const api = await pwRequest.newContext({ baseURL: own.base });
    const session = unique('e2e-first');
    try {
      await writeFortyTurns(api, session);
      // The first unknown (turn 12) has a title; the second (turn 31) reads by its tool.
      await batch(api, [{ op: 'metadata', session_key: session, mutation_id: `${session}-t12-m0`, title: '退款已处理' }]);
      const link = await new Host(api, session).viewerLink(3600);
      const context = await browser.newContext({ baseURL: own.base, viewport: { width: 390, height: 844 } });
      const page = await context.newPage();
      await page.goto(link.url);
      await expect(page).toHaveURL(`${own.base}/sessions/${enc(session)}`);
      const summary = page.locator('.session-summary');
      await expect(summary.locator('.summary-text')).toHaveText(/2 unknown/);
      const first = summary.locator('.summary-item').first();
      await expect(first.locator('.summary-what')).toHaveText('退款已处理');
      await expect(first.locator('.summary-turn')).toHaveText('Turn 12');
      await expect(first.locator('.summary-unknown')).toHaveText(`${session}-t12-m0`);
      const second = summary.locator('.summary-item').nth(1);
      await expect(second.locator('.summary-what')).toHaveText('dashboards · create');
      await expect(second.locator('.summary-what')).toHaveAttribute('title', 'mcp__dashboards__create');
      await expect(second.locator('.summary-turn')).toHaveText('Turn 31');
      // Without scrolling: the first unknown's title and turn, and where to quote it.
      for (const sel of ['.session-summary .summary-item .summary-what', '.session-summary .summary-item .summary-turn', '.session-summary .summary-todo a.support-contact']) {
        expect(await aboveTheFold(page, sel), `${sel} on the first screen`).toBe(true);
      }
      await expect(summary.locator('.summary-todo a.support-contact')).toHaveAttribute('href', SUPPORT);
      await expect(summary.locator('.summary-todo a.support-contact')).toHaveText('Example support');
      // The explanation is one sentence; the rest behind a disclosure, closed.
      const notice = page.locator('.viewer-notice');
      await expect(notice.locator('details')).not.toHaveAttribute('open', '');
      await expect(notice.getByText('Unknown means the result was not established')).toBeHidden();
      await notice.getByText('What does unknown mean?').click();
      await expect(notice.getByText('Unknown means the result was not established')).toBeVisible();
      // Every card of an unknown names the contact beside its id.
      const card = page.locator(`.outcome[data-mutation-id="${session}-t31-m0"]`);
      await expect(card.locator('.what-to-do a.support-contact')).toHaveAttribute('href', SUPPORT);
      await expect(card.locator('.o-head .outcome-title')).toHaveText('dashboards · create');
      // The turn link goes to the turn on the page.
      await first.locator('.summary-turn').click();
      await expect(page).toHaveURL(/#turn-12$/);
      await expect(page.locator('#turn-12')).toBeInViewport();

      // The operation page in the end user's words: no attempt, intent or contract names.
      await first.locator('.summary-what').click();
      await expect(page).toHaveURL(`${own.base}/sessions/${enc(session)}/operations/${enc(`${session}-t12-m0`)}`);
      const main = page.locator('main');
      await expect(page.locator('li.change[data-kind="intent"]')).toContainText('Your agent started it');
      for (const word of [/attempt/i, /intent/i, /mutation_outcome/, /settled/i, /revision/i]) {
        await expect(main).not.toContainText(word, { useInnerText: true });
      }
      await expect(page.locator('.current .what-to-do a.support-contact')).toHaveText('Example support');
      await context.close();

      await screenshots(browser, own.base, link.url, 'first-screen-viewer', async p => {
        await expect(p.locator('.session-summary .summary-item').first()).toBeVisible();
      });
    } finally {
      await api.dispose();
    }
  });

  test('the investigator at 1280×800 sees the turn navigator without scrolling, and "Last activity" moves live', async ({ page }) => {
    const api = await pwRequest.newContext({ baseURL: own.base });
    const session = unique('e2e-map');
    try {
      await writeFortyTurns(api, session);
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.goto(`${own.base}/sessions/${enc(session)}`);
      await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true');
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      const nav = await page.locator('nav#turn-nav').boundingBox();
      expect(nav, 'the turn navigator').not.toBeNull();
      expect(nav!.y, 'the navigator starts on the first screen').toBeLessThan(800 - 150);
      const time = page.locator('.last-activity time');
      const before = await time.getAttribute('datetime');
      await new Host(api, session).settled(`turn-${FORTY.turns + 1}`, `${session}-new`, 'completed');
      await expect.poll(async () => (await time.getAttribute('datetime'))! > before!, { timeout: 10_000 }).toBe(true);
    } finally {
      await api.dispose();
    }
  });
});

test('a note submitted while the server is down keeps the page and the text, says nothing was sent, and is sent once it is back', async ({ browser }) => {
  test.setTimeout(120_000);
  const own = new OwnServer(3240 + Math.floor(Math.random() * 9));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
  await own.start(dataDir, ['--access', 'signed-in']);
  const password = outcomes(['staff', 'add', 'ada', '--data-dir', dataDir]).trim().split('\n').pop()!;
  const api = await pwRequest.newContext({ baseURL: own.base });
  try {
    const session = unique('e2e-outage');
    const id = `${session}-refund`;
    await new Host(api, session).settled('turn-1', id, 'outcome_unknown', 'execution_timeout');
    const context = await browser.newContext({ baseURL: own.base, viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await page.goto('/sign-in');
    await page.getByLabel('Name').fill('ada');
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.locator('header [data-access="staff"]')).toHaveText('Signed in as ada');
    const opPath = `/sessions/${enc(session)}/operations/${enc(id)}`;
    await page.goto(opPath);
    await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true');
    await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });

    await own.kill();
    const note = 'Asked the provider: refund re_123 is pending.';
    const box = page.getByLabel('Add a note');
    await box.fill(note);
    await box.scrollIntoViewIfNeeded();
    // Scrolled down at the form, the connection state is still in sight, and says the stream is down.
    await expect(page.locator('.connection')).not.toHaveAttribute('data-state', 'live', { timeout: 20_000 });
    await expect(page.locator('.connection')).toBeInViewport();
    await page.getByRole('button', { name: 'Add note' }).click();
    const failed = page.locator('form .send-failed');
    await expect(failed).toHaveText(/^Nothing was sent: the server cannot be reached\./);
    await expect(page).toHaveURL(`${own.base}${opPath}`);
    await expect(box).toHaveValue(note);
    await expect(page.locator('header')).toBeVisible();

    // The server is back: pressing the button again sends the note, once.
    await own.start(dataDir, ['--access', 'signed-in']);
    await page.getByRole('button', { name: 'Add note' }).click();
    const noteRow = page.locator('li.change[data-kind="note"]');
    await expect(noteRow.locator('.note')).toHaveText(note);
    await expect(noteRow).toHaveCount(1);
    await expect(page.locator('form .send-failed')).toHaveCount(0);
    await context.close();
  } finally {
    await api.dispose();
    await own.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
