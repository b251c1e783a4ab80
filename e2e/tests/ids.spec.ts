// Ids round-trip exactly (docs/design.md "What the person sees"): every page, link, search and copy carries an
// id holding `%41`, `%25`, `%2F`, `/`, spaces, `+`, non-ASCII or 256 bytes through unchanged. Before,
// the pages decoded their address twice: a session `pct%41` opened as "pctA" with "No session with this id".
import { test, expect, Page } from '@playwright/test';
import { Host, enc, unique } from './host';

/** Ids with the hard parts, each made unique; the last is exactly 256 bytes. */
function hardIds(): string[] {
  const u = unique('id');
  const ids = [
    `${u} pct%41`,
    `${u}%2541`,
    `${u}%2F/a/b`,
    `${u} a+b two words`,
    `${u} op%20pct%2F%zz`,
    `${u}-Grüße-ключ-鍵`,
  ];
  let long = `${u}-`;
  while (Buffer.byteLength(long) + 2 <= 256) long += 'é';
  while (Buffer.byteLength(long) < 256) long += 'x';
  expect(Buffer.byteLength(long)).toBe(256);
  ids.push(long);
  return ids;
}

async function heading(page: Page) {
  return (await page.locator('h1 bdi').first().textContent()) ?? '';
}

test('ids with %41, %25, %2F, /, spaces, +, non-ASCII and 256 bytes open their pages, links, find and copy exactly', async ({ page, request, context }) => {
  test.setTimeout(120_000);
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const errors: string[] = [];
  page.on('pageerror', e => errors.push(String(e)));
  for (const id of hardIds()) {
    // The id is the session key, the turn and the operation id at once.
    const host = new Host(request, id);
    await host.settled(id, id, 'outcome_unknown');

    // The session page, opened by its link from the turn page's breadcrumb and directly.
    const session = await page.goto(host.sessionPath());
    expect(session?.status(), id).toBe(200);
    expect(await heading(page)).toBe(id);

    // The turn page, by following the session page's link (the browser, not the router, follows it).
    await page.locator(`a[href="${host.turnPath(id)}"]`).first().click();
    await expect(page).toHaveURL(new RegExp(`${host.turnPath(id).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    const row = page.locator('.outcome').first();
    await expect(row).toHaveAttribute('data-mutation-id', id);
    await expect(row.locator('.operation-id')).toHaveText(id);

    // Copy gives the raw id (once the page is interactive: the live indicator says so).
    await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
    const copy = row.locator('.copy-operation-id').first();
    await copy.click();
    await expect(row.getByRole('status').filter({ hasText: 'Copied' })).toHaveText('Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(id);

    // The operation page, by the row's history link.
    await row.locator('xpath=ancestor::li[1]').locator('a.history-link').click();
    await expect(page.locator('h1')).toContainText(id);
    expect(page.url()).toContain(`/sessions/${enc(id)}/operations/${enc(id)}`);

    // The look-up by operation id lists this one match, and links back to its session exactly.
    await page.goto(`/operations/${enc(id)}`);
    await expect(page.locator('.operation')).toHaveCount(1);
    await expect(page.locator('.operation .operation-id')).toHaveText(id);
    await page.locator(`.operation a[href="${host.sessionPath()}"]`).click();
    expect(await heading(page)).toBe(id);

    // Find, typed into the search box: the id is both a session and an operation, so both are listed,
    // and the box still holds the id exactly.
    await page.goto('/');
    await page.getByRole('searchbox', { name: 'Session id or operation id' }).fill(id);
    await page.getByRole('button', { name: 'Find' }).click();
    await expect(page.locator('.find-result a')).toHaveCount(2);
    await expect(page.getByRole('searchbox')).toHaveValue(id);
    await page.locator('.find-result a', { hasText: 'Session' }).click();
    await expect(page.locator('h1 bdi').first()).toHaveText(id);
  }
  expect(errors).toEqual([]);
});

test('find of an id naming one session goes straight to it, with and without JavaScript', async ({ browser, request }) => {
  const id = `${unique('only')} a%2Fb+c%41`;
  await new Host(request, id).approve('t', `${id}-op`);
  for (const javaScriptEnabled of [true, false]) {
    const context = await browser.newContext({ javaScriptEnabled });
    const page = await context.newPage();
    await page.goto(`/find?q=${enc(id)}`);
    await expect(page).toHaveURL(new RegExp(`/sessions/${enc(id).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    await expect(page.locator('h1 bdi').first()).toHaveText(id);
    await context.close();
  }
});
