// Live on every page (docs/design.md "What the person sees"): in-flight writes appear live and rows keep
// the recorded order; the session page is live; a deleted session says so; a server that goes silent
// (frozen: no heartbeats) reads "stale since", and a killed one "reconnecting since".
import { test, expect, request as pwRequest, Locator } from '@playwright/test';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Host, unique } from './host';
import { OwnServer } from './own-server';

const token = process.env.OUTCOMES_HOST_TOKEN ?? '';

/** The operation ids of the outcome cards within `scope`, in page order. */
function ids(scope: Locator) {
  return () => scope.locator('.outcome').evaluateAll(es => es.map(e => e.getAttribute('data-mutation-id')));
}

test('an in-flight write appears live on an open turn page, and rows settled out of order keep the recorded order', async ({ page, request }) => {
  const session = unique('e2e-inflight');
  const host = new Host(request, session);
  await host.settled('t', 'o0', 'completed');
  await page.goto(host.turnPath('t'));
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });

  // Approve + intent: no settled record exists yet, only the turn_changed hint; the row shows in flight.
  await host.approve('t', 'oA');
  await host.intent('oA');
  const a = page.locator('.outcome[data-mutation-id="oA"]');
  await expect(a).toHaveAttribute('data-status', 'outcome_unknown');
  await expect(a).toContainText('In flight');
  await expect(a.locator('.row-times time')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT/);
  await expect(a.locator('.row-times')).toContainText('In flight since');

  // oB is recorded after oA but settles first: it still takes its recorded place after oA.
  await host.approve('t', 'oB');
  await host.intent('oB');
  await host.settle('oB', 'completed');
  await expect(page.locator('.outcome[data-mutation-id="oB"]')).toHaveAttribute('data-status', 'completed');
  await expect.poll(ids(page.locator('main'))).toEqual(['o0', 'oA', 'oB']);
  await host.settle('oA', 'failed');
  await expect(a).toHaveAttribute('data-status', 'failed');
  await expect(a.locator('.row-times')).toContainText('settled');
  await expect.poll(ids(page.locator('main'))).toEqual(['o0', 'oA', 'oB']);
  await page.reload();
  await expect.poll(ids(page.locator('main'))).toEqual(['o0', 'oA', 'oB']);
});

test('the session page is live: new outcomes, new turns and the summary follow without reload', async ({ page, request }) => {
  const session = unique('e2e-session-live');
  const host = new Host(request, session);
  await host.settled('t1', 's1', 'completed');
  await page.goto(host.sessionPath());
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
  await page.evaluate(() => { (window as any).__marker = 'same page'; });
  const summary = page.locator('.session-summary .summary-text');
  await expect(summary).toHaveText('1 completed');

  await host.approve('t1', 's2');
  await host.intent('s2');
  await expect(page.locator('.outcome[data-mutation-id="s2"]')).toContainText('In flight');
  await expect(summary).toHaveText('1 completed, 1 in flight');
  await host.settle('s2', 'outcome_unknown', 'execution_timeout');
  await expect(summary).toHaveText('1 completed, 1 unknown');
  await expect(page.locator('.session-summary .summary-unknown')).toHaveText('s2');

  await host.settled('t2', 's3', 'failed');
  const turns = page.locator('.turn');
  await expect(turns).toHaveCount(2);
  await expect(turns.nth(1)).toContainText('Turn 2 · t2');
  await expect(turns.nth(1).locator('.outcome')).toHaveAttribute('data-status', 'failed');
  await expect.poll(ids(turns.nth(0))).toEqual(['s1', 's2']);
  expect(await page.evaluate(() => (window as any).__marker)).toBe('same page');
});

test('a deleted session says so on its pages, and they stop saying "Live"', async ({ page, request, browser }) => {
  const session = unique('e2e-deleted');
  const host = new Host(request, session);
  await host.settled('t', 'd1', 'outcome_unknown');
  const turnPage = await browser.newPage();
  const opPage = await browser.newPage();
  await page.goto(host.sessionPath());
  await turnPage.goto(host.turnPath('t'));
  await opPage.goto(`${host.sessionPath()}/operations/d1`);
  for (const p of [page, turnPage, opPage]) {
    await expect(p.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
  }
  const r = await request.delete(`/api/host/sessions/${encodeURIComponent(session)}`, { headers: { Authorization: `Bearer ${token}` } });
  expect(r.status()).toBe(204);
  for (const p of [page, turnPage, opPage]) {
    await expect(p.locator('.connection')).toHaveAttribute('data-state', 'gone');
    await expect(p.locator('.connection')).toHaveText('Not live: this session was deleted by its host, so its history is no longer kept.');
  }
  await turnPage.close();
  await opPage.close();
});

test('a frozen server reads "stale since" within twice the heartbeat, then live again when it thaws', async ({ page }) => {
  test.setTimeout(150_000);
  const own = new OwnServer(3280 + Math.floor(Math.random() * 9));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
  await own.start(dataDir);
  const api = await pwRequest.newContext({ baseURL: own.base });
  try {
    const host = new Host(api, unique('e2e-frozen'));
    await host.settled('t', 'f1', 'completed');
    await page.goto(own.base + host.turnPath('t'));
    const state = page.locator('.connection');
    await expect(state).toHaveAttribute('data-state', 'live', { timeout: 15_000 });

    // No heartbeat reaches the page while the process is stopped; the stream itself never errors.
    own.freeze();
    const frozenAt = Date.now();
    await expect(state).toHaveAttribute('data-state', 'stale', { timeout: 45_000 });
    expect(Date.now() - frozenAt).toBeGreaterThan(25_000);
    await expect(state).toHaveText(/^Stale since \d\d:\d\d:\d\d: no word from the server; retrying$/);

    own.thaw();
    await expect(state).toHaveAttribute('data-state', 'live', { timeout: 45_000 });
    await host.settled('t', 'f2', 'failed');
    await expect(page.locator('.outcome[data-mutation-id="f2"]')).toHaveAttribute('data-status', 'failed');
  } finally {
    await api.dispose();
    await own.kill().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  }
});
