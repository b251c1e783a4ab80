// How each outcome reads; safe titles and links; the status filter; keyboard navigation.
import { test, expect } from '@playwright/test';
import { Host, unique, enc } from './host';

test('each status reads differently; unknown stands out with its operation id and a copy button', async ({ page, request, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const session = unique('e2e-status');
  const host = new Host(request, session);
  await host.settled('t', 'ok-1', 'completed');
  await host.settled('t', 'bad-1', 'failed');
  await host.approve('t', 'never-1');
  await host.intent('never-1');
  await host.cancel('never-1', 'pre_dispatch_deadline');
  await host.settled('t', 'unk-1', 'outcome_unknown', 'execution_timeout');
  await host.approve('t', 'fly-1');
  await host.intent('fly-1');

  await page.goto(host.turnPath('t'));
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
  const card = (id: string) => page.locator(`.outcome[data-mutation-id="${id}"]`);
  const expected: [string, string, string, string][] = [
    ['ok-1', 'completed', 'Completed', '✓'],
    ['bad-1', 'failed', 'Failed', '✕'],
    ['never-1', 'not_executed', 'Not executed', '⊘'],
    ['unk-1', 'outcome_unknown', 'Outcome unknown', '?'],
    ['fly-1', 'outcome_unknown', 'In flight: outcome not yet known', '…'],
  ];
  const classes = new Set<string>();
  for (const [id, status, words, icon] of expected) {
    await expect(card(id)).toHaveAttribute('data-status', status);
    const badge = card(id).locator('.o-head > .badge');
    await expect(badge).toHaveText(words);
    // The icon is the stylesheet's, with empty alternative text: seen, not read out.
    expect(await badge.evaluate(e => getComputedStyle(e, '::before').content)).toBe(`"${icon}" / ""`);
    classes.add(await card(id).evaluate(e => getComputedStyle(e).backgroundColor));
  }
  expect(classes.size).toBe(5);

  // Failed and not executed never say "not established"; the unknown does, with the id and a copy button.
  await expect(card('bad-1')).not.toContainText('not established');
  await expect(card('never-1')).toContainText('Cancelled by its deadline before it was sent');
  const unk = card('unk-1');
  await expect(unk).toContainText('The result of this write is not established. The original operation is under investigation, and automatic resend is paused.');
  await expect(unk).toContainText('It timed out while running');
  expect(await unk.evaluate(e => getComputedStyle(e).borderLeftWidth)).toBe('8px');
  await expect(unk.locator('.operation-id')).toHaveText('unk-1');
  await expect(unk).toContainText('Do not repeat this action yourself: it may already have taken effect. Quote the operation id below to the support of the service you used; they will check it with the provider.');
  await unk.getByRole('button', { name: 'Copy operation id unk-1', exact: true }).click();
  await expect(unk.getByRole('status').filter({ hasText: 'Copied' })).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('unk-1');
});

test('titles are text, links only to sanitised http(s) urls, opened safely; no title shows the tool', async ({ page, request }) => {
  const session = unique('e2e-title');
  const host = new Host(request, session);
  await host.settled('t', 'xss-1', 'completed');
  await host.metadata('xss-1', { title: '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>Report', url: 'https://example.com/r/1?token=secret' });
  await host.settled('t', 'js-1', 'completed');
  // The server withholds a javascript: url (sanitised to none) or refuses it; either way no link.
  const r = await request.put(`/api/host/sessions/${enc(session)}/mutations/js-1/metadata`, {
    data: { title: 'Click me', url: 'javascript:window.__pwned=3' },
    headers: { Authorization: `Bearer ${process.env.OUTCOMES_HOST_TOKEN ?? ''}`, 'Content-Type': 'application/json' },
  });
  expect([200, 400, 422]).toContain(r.status());
  await host.settled('t', 'plain-1', 'completed', undefined);
  await host.settled('t', 'unk-link', 'outcome_unknown');
  await host.metadata('unk-link', { title: 'Issue #419', url: 'https://example.com/issues/419' });

  await page.goto(host.turnPath('t'));
  await expect(page.locator('.timeline-row')).toHaveCount(4);
  const xss = page.locator('.outcome[data-mutation-id="xss-1"]');
  await expect(xss.locator('.outcome-title')).toHaveText('<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>Report');
  await expect(xss.locator('img, script')).toHaveCount(0);
  const link = xss.locator('a:has(.outcome-title)');
  await expect(link).toHaveAttribute('href', 'https://example.com/r/1');
  await expect(link).toHaveAttribute('target', '_blank');
  await expect(link).toHaveAttribute('rel', /noopener/);
  await expect(link).toHaveAttribute('rel', /noreferrer/);

  const js = page.locator('.outcome[data-mutation-id="js-1"]');
  await expect(js.locator('a')).toHaveCount(0);
  await expect(page.locator('a[href^="javascript"]')).toHaveCount(0);

  const plain = page.locator('.outcome[data-mutation-id="plain-1"]');
  // In words for the person; the raw name in the title attribute.
  await expect(plain.locator('.outcome-title')).toHaveText('dashboards · create');
  await expect(plain.locator('.outcome-title')).toHaveAttribute('title', 'mcp__dashboards__create');
  await expect(plain.locator('a')).toHaveCount(0);

  // A link on an unknown outcome does not make it read as done.
  const unk = page.locator('.outcome[data-mutation-id="unk-link"]');
  await expect(unk.locator('a:has(.outcome-title)')).toHaveAttribute('href', 'https://example.com/issues/419');
  await expect(unk).toHaveAttribute('data-status', 'outcome_unknown');
  await expect(unk).toContainText('not established');
  expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined();
});

test('the status filter and counts summary; arrow keys and j/k move between rows', async ({ page, request }) => {
  const session = unique('e2e-filter');
  const host = new Host(request, session);
  for (const [id, s] of [['a', 'completed'], ['b', 'failed'], ['c', 'completed'], ['d', 'outcome_unknown']]) {
    await host.settled('t', id, s);
  }
  await page.goto(host.turnPath('t'));
  await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
  const rows = page.locator('.timeline-row');
  await expect(rows).toHaveCount(4);
  await expect(page.locator('.filter[data-filter="completed"] .tabular-nums')).toHaveText('2');
  await expect(page.locator('.filter[data-filter="failed"] .tabular-nums')).toHaveText('1');
  await expect(page.locator('.filter[data-filter="outcome_unknown"] .tabular-nums')).toHaveText('1');
  await page.locator('.filter[data-filter="completed"]').click();
  await expect(page.locator('.filter[data-filter="completed"]')).toHaveAttribute('aria-pressed', 'true');
  await expect(rows).toHaveCount(2);
  expect(await page.locator('.timeline-row .outcome').evaluateAll(es => es.map(e => e.getAttribute('data-mutation-id')))).toEqual(['a', 'c']);
  // Live changes count while filtered.
  await host.settled('t', 'e', 'completed');
  await expect(page.locator('.filter[data-filter="completed"] .tabular-nums')).toHaveText('3');
  await expect(rows).toHaveCount(3);
  await page.getByRole('button', { name: /^All/ }).click();
  await expect(rows).toHaveCount(5);

  await expect(rows.nth(0)).toHaveAccessibleName(/^Completed: /);
  await rows.nth(0).focus();
  await page.keyboard.press('ArrowDown');
  await expect(rows.nth(1)).toBeFocused();
  await page.keyboard.press('j');
  await expect(rows.nth(2)).toBeFocused();
  await page.keyboard.press('k');
  await expect(rows.nth(1)).toBeFocused();
  await page.keyboard.press('ArrowUp');
  await expect(rows.nth(0)).toBeFocused();
  await page.keyboard.press('ArrowUp');
  await expect(rows.nth(0)).toBeFocused();
});
