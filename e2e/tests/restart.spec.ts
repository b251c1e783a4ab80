// A server restart mid-stream: the page says so, resumes from its own cursor, and shows no duplicate rows.
// This test runs its OWN server (the one scripts/test.sh started cannot be restarted from here).
import { test, expect, request as pwRequest } from '@playwright/test';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Host, unique } from './host';
import { OwnServer } from './own-server';

const own = new OwnServer(3290 + Math.floor(Math.random() * 9));
const base = own.base;

test('a server restart mid-stream resumes with no duplicate rows; a cursor past the data starts over', async ({ page }) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
  const freshDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
  await own.start(dataDir);
  const api = await pwRequest.newContext({ baseURL: base });
  try {
    const session = unique('e2e-restart');
    const host = new Host(api, session);
    for (const id of ['r1', 'r2', 'r3']) await host.settled('t', id, 'completed');
    await host.approve('t', 'r4');
    await host.intent('r4');

    await page.goto(base + host.turnPath('t'));
    const state = page.locator('.connection');
    await expect(state).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
    await host.settled('t', 'r5', 'failed');
    const ids = () => page.locator('.outcome').evaluateAll(es => es.map(e => e.getAttribute('data-mutation-id')));
    await expect.poll(ids).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);

    await own.kill();
    await expect(state).toHaveAttribute('data-state', /reconnecting|stale/, { timeout: 15_000 });
    await expect(state).toHaveText(/^(Reconnecting|Stale) since \d\d:\d\d:\d\d/);

    await own.start(dataDir);
    await expect(state).toHaveAttribute('data-state', 'live', { timeout: 20_000 });
    await host.settle('r4', 'outcome_unknown', 'execution_timeout');
    await host.settled('t', 'r6', 'completed');
    await expect.poll(ids).toEqual(['r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    await expect(page.locator('.outcome[data-mutation-id="r4"]')).toHaveAttribute('data-status', 'outcome_unknown');
    const latest = (await (await api.get(`/api/sessions/${encodeURIComponent(session)}/turns/t/entries`)).json()).latest_revision;
    await expect(page.locator('.cursor')).toHaveText(String(latest));

    // The server comes back on an empty data directory: the held cursor is past the turn's latest revision
    // (409), so the page starts over with a full replay and shows the new outcome once.
    await own.kill();
    await expect(state).toHaveAttribute('data-state', /reconnecting|stale/, { timeout: 15_000 });
    await own.start(freshDir);
    await host.settled('t', 'n1', 'completed');
    await expect(state).toHaveAttribute('data-state', 'live', { timeout: 20_000 });
    await expect(page.locator('.outcome[data-mutation-id="n1"]')).toHaveCount(1);
    const fresh = (await (await api.get(`/api/sessions/${encodeURIComponent(session)}/turns/t/entries`)).json()).latest_revision;
    expect(fresh).toBeLessThan(latest);
    await expect(page.locator('.cursor')).toHaveText(String(fresh), { timeout: 10_000 });
    const all = await ids();
    expect(new Set(all).size).toBe(all.length);
  } finally {
    await api.dispose();
    await own.kill().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(freshDir, { recursive: true, force: true });
  }
});
