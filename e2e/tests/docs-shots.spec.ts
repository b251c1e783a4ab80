// The README's two screenshots, written from the running app so that they show it as it is: a session
// page and the queue of open unknowns, desktop 1280×800, light. Only with WRITE_DOCS_SHOTS=1 (otherwise
// skipped, so scripts/test.sh never rewrites tracked files):
//
//   scripts/build.sh && cd e2e && WRITE_DOCS_SHOTS=1 ../node_modules/.bin/playwright test docs-shots
//
// writes docs/images/session.png and docs/images/queue.png. A server of its own (open access on loopback)
// on a fresh ledger, with a host token of its own, holds one session like the demo's.
import { test, expect, Page } from '@playwright/test';
import { mkdtempSync, mkdirSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { OwnServer } from './own-server';

const images = path.resolve(process.cwd(), '..', 'docs', 'images');
const token = `docs-shots-${Date.now()}`;
const session = 'chat-42';

/** `POST /api/host/batch` on the test's own server; every result must be 200/201. */
async function batch(base: string, operations: object[]) {
  const r = await fetch(`${base}/api/host/batch`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ operations }),
  });
  expect(r.status, await r.clone().text()).toBe(200);
  const body = await r.json();
  const bad = body.results.filter((x: { status: number }) => x.status !== 200 && x.status !== 201);
  expect(bad, JSON.stringify(bad)).toEqual([]);
}

function started(turn: string, mutation: string, tool: string, key = session) {
  return [
    { op: 'approve', session_key: key, logical_turn_id: turn, mutation_id: mutation, tool },
    { op: 'intent', session_key: key, mutation_id: mutation, attempt_id: 'att-1' },
  ];
}

/** An unknown outcome with a title in another session, for the queue. */
function unknown(key: string, turn: string, mutation: string, tool: string, title: string, reason?: string) {
  return [
    ...started(turn, mutation, tool, key),
    { op: 'settle', session_key: key, mutation_id: mutation, attempt_id: 'att-1', status: 'outcome_unknown', ...(reason ? { reason } : {}) },
    { op: 'metadata', session_key: key, mutation_id: mutation, title },
  ];
}

async function ready(page: Page) {
  await page.waitForSelector('html[data-interactive]');
  await page.evaluate(() => document.fonts.ready);
}

test.describe('docs screenshots', () => {
  test.skip(process.env.WRITE_DOCS_SHOTS !== '1', 'writes docs/images/*.png only with WRITE_DOCS_SHOTS=1');

  const own = new OwnServer(3210 + Math.floor(Math.random() * 9));
  let dataDir = '';
  test.beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'outcomes-e2e-'));
    await own.start(dataDir, ['--host-token', token]);
  });
  test.afterAll(async () => {
    await own.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('the session page and the unknowns queue, desktop 1280×800, light', async ({ browser }) => {
    test.setTimeout(60_000);
    // Turn 1: a dashboard created, a write that failed, one cancelled by its deadline.
    await batch(own.base, [
      ...started('turn-1', 'op-dashboard', 'mcp__dashboards__create'),
      { op: 'settle', session_key: session, mutation_id: 'op-dashboard', attempt_id: 'att-1', status: 'completed' },
      { op: 'metadata', session_key: session, mutation_id: 'op-dashboard', id: 'dash-7f3a',
        url: 'https://app.example.com/d/dash-7f3a', title: 'Service overview' },
      ...started('turn-1', 'op-alert', 'mcp__alerts__create_rule'),
      { op: 'settle', session_key: session, mutation_id: 'op-alert', attempt_id: 'att-1', status: 'failed' },
      ...started('turn-1', 'op-notify', 'mcp__chat__post_message'),
      { op: 'cancel', session_key: session, mutation_id: 'op-notify', attempt_id: 'att-1', reason: 'pre_dispatch_deadline' },
    ]);
    // Turn 2: an issue filed whose reply was lost (unknown), and a deploy still in flight.
    await batch(own.base, [
      ...started('turn-2', 'op-issue-419', 'mcp__issues__create'),
      { op: 'settle', session_key: session, mutation_id: 'op-issue-419', attempt_id: 'att-1', status: 'outcome_unknown' },
      { op: 'metadata', session_key: session, mutation_id: 'op-issue-419', id: '419',
        url: 'https://codehost.example.com/acme/shop/issues/419', title: 'Refund rounds a half cent down on order-77' },
      ...started('turn-2', 'op-deploy', 'mcp__deploy__create'),
    ]);
    // Other sessions' unknowns, so that the queue has rows to sort.
    await batch(own.base, [
      ...unknown('support-7', 'turn-3', 'op-refund-501', 'mcp__payments__refund', 'Refund order 501', 'execution_timeout'),
      ...unknown('support-7', 'turn-3', 'op-refund-502', 'mcp__payments__refund', 'Refund order 502'),
      ...unknown('ops-nightly', 'turn-1', 'op-dns-1', 'mcp__dns__update_record', 'Point shop.example.com at the new load balancer'),
      ...unknown('chat-57', 'turn-4', 'op-email-9', 'mcp__mail__send', 'Send the outage notice to 1,240 customers', 'execution_timeout'),
    ]);

    mkdirSync(images, { recursive: true });
    const context = await browser.newContext({ baseURL: own.base, viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    try {
      const page = await context.newPage();
      await page.goto(`/sessions/${session}`);
      await ready(page);
      await expect(page.getByText('Service overview').first()).toBeVisible();
      await page.screenshot({ path: path.join(images, 'session.png') });

      await page.goto('/unknowns');
      await ready(page);
      await expect(page.locator('table.q tbody tr').first()).toBeVisible();
      await page.screenshot({ path: path.join(images, 'queue.png') });
    } finally {
      await context.close();
    }
  });
});
