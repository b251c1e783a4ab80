// Installable as a desktop app: the manifest and its icons, the shell's links, and the service worker that
// keeps only the offline page (docs/operations.md "Installing the dashboard"): offline, a navigation shows that page and
// never an outcome.
import { test, expect, chromium, Page } from '@playwright/test';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Host, unique } from './host';

/** Decodes an image in the page and returns its natural size (the page's CSP allows 'self' images). */
async function decoded(page: Page, src: string): Promise<[number, number]> {
  return page.evaluate(async (url) => {
    const img = new Image();
    img.src = url;
    await img.decode();
    return [img.naturalWidth, img.naturalHeight] as [number, number];
  }, src);
}

test('the shell links a manifest with what installing needs, and its icons load at their sizes', async ({ page, request }) => {
  await page.goto('/');
  const head = page.locator('head');
  await expect(head.locator('link[rel="manifest"]')).toHaveAttribute('href', '/manifest.webmanifest');
  await expect(head.locator('meta[name="theme-color"][media="(prefers-color-scheme: light)"]')).toHaveAttribute('content', '#ffffff');
  await expect(head.locator('meta[name="theme-color"][media="(prefers-color-scheme: dark)"]')).toHaveAttribute('content', /^#[0-9a-f]{6}$/);
  await expect(head.locator('link[rel="apple-touch-icon"]')).toHaveAttribute('href', '/apple-touch-icon.png');
  await expect(head.locator('link[rel="icon"]')).toHaveAttribute('href', '/icon.svg');

  const r = await request.get('/manifest.webmanifest');
  expect(r.status()).toBe(200);
  expect(r.headers()['content-type']).toBe('application/manifest+json');
  const manifest = await r.json();
  expect(manifest.name).toBe('Outcome ledger');
  expect(manifest.short_name).toBeTruthy();
  expect(manifest.start_url).toBe('/');
  expect(manifest.scope).toBe('/');
  expect(manifest.display).toBe('standalone');
  // The light look: the page's background is the manifest's colours.
  const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  expect(['rgb(255, 255, 255)', 'oklch(1 0 0)']).toContain(background);
  expect(manifest.theme_color).toBe('#ffffff');
  expect(manifest.background_color).toBe('#ffffff');

  const icons: { src: string; sizes: string; type: string; purpose: string }[] = manifest.icons;
  for (const [sizes, purpose] of [['192x192', 'any'], ['512x512', 'any'], ['any', 'any'], ['512x512', 'maskable']]) {
    expect(icons.some(i => i.sizes === sizes && i.purpose === purpose), `${sizes} ${purpose}`).toBe(true);
  }
  for (const icon of [...icons, { src: '/apple-touch-icon.png', sizes: '180x180', type: 'image/png' }]) {
    const got = await request.get(icon.src);
    expect(got.status(), icon.src).toBe(200);
    expect(got.headers()['content-type'], icon.src).toBe(icon.type);
    const [w, h] = await decoded(page, icon.src);
    if (icon.sizes === 'any') {
      expect(w, icon.src).toBeGreaterThan(0);
      expect(h, icon.src).toBe(w);
    } else {
      expect(`${w}x${h}`, icon.src).toBe(icon.sizes);
    }
  }
});

test('Chromium reads the manifest without errors and finds nothing that stops installing', async ({}, testInfo) => {
  // A profile of its own: Playwright's usual contexts are incognito, where Chromium never offers to install.
  const use = testInfo.project.use;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'install-profile-'));
  const context = await chromium.launchPersistentContext(dir, { ...use.launchOptions, headless: true, baseURL: use.baseURL });
  try {
    const page = context.pages()[0] ?? await context.newPage();
    await page.goto('/');
    await page.evaluate(() => navigator.serviceWorker.ready);
    const cdp = await context.newCDPSession(page);
    const got = await cdp.send('Page.getAppManifest');
    expect(got.url).toMatch(/\/manifest\.webmanifest$/);
    expect(got.errors).toEqual([]);
    expect(JSON.parse(got.data).name).toBe('Outcome ledger');
    // Chromium's own installability check: the reasons an "Install" entry would be missing from its menu.
    const check = await cdp.send('Page.getInstallabilityErrors');
    expect(check.installabilityErrors).toEqual([]);
  } finally {
    await context.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the service worker registers, keeps only shell files, and offline a navigation shows the offline page, never an outcome', async ({ page, context, request }) => {
  const session = unique('e2e-install');
  const host = new Host(request, session);
  await host.settled('t1', `${session}-1`, 'completed');

  await page.goto('/');
  const scope = await page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    return { scope: registration.scope, script: registration.active?.scriptURL };
  });
  expect(new URL(scope.scope).pathname).toBe('/');
  expect(new URL(scope.script!).pathname).toBe('/sw.js');
  // The worker controls the page once it has claimed it.
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);

  // Online, through the worker: the session page is the server's, and it hydrates (the bundle loads).
  await page.goto(`/sessions/${session}`);
  await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true');
  await expect(page.locator('.outcome')).toHaveCount(1);
  await expect(page.locator('.outcome')).toHaveAttribute('data-mutation-id', `${session}-1`);

  // What the worker stored: shell files only, no page, no API answer, nothing of the bundle.
  const cached = await page.evaluate(async () => {
    const paths: string[] = [];
    for (const name of await caches.keys()) {
      for (const r of await (await caches.open(name)).keys()) paths.push(new URL(r.url).pathname);
    }
    return paths.sort();
  });
  expect(cached).toContain('/offline.html');
  for (const path of cached) {
    expect(path, 'a cached path').toMatch(/^\/(offline\.(html|css)|unreachable\.html|manifest\.webmanifest|icon[-a-z0-9]*\.(svg|png)|apple-touch-icon\.png)$/);
  }

  await context.setOffline(true);
  try {
    await page.goto(`/sessions/${session}`);
    await expect(page.locator('h1')).toHaveText('You are offline');
    await expect(page.locator('main')).toContainText('Nothing can be shown while offline');
    await expect(page.locator('main')).toContainText('no outcome is current');
    await expect(page.locator('.outcome')).toHaveCount(0);
    await expect(page.locator('body')).not.toContainText(session);
    // The offline page's own style is there (from the cache).
    const styled = await page.evaluate(() => getComputedStyle(document.querySelector('main')!).maxWidth);
    expect(styled).not.toBe('none');
    // An API read is never answered from a cache.
    const api = await page.evaluate(() => fetch('/api/sessions').then(r => `status ${r.status}`, () => 'failed'));
    expect(api).toBe('failed');
  } finally {
    await context.setOffline(false);
  }

  // Back online: the real page again.
  await page.goto(`/sessions/${session}`);
  await expect(page.locator('.outcome')).toHaveCount(1);
});

test('the page loads a content-hashed bundle, compressed and cached for good; the worker scripts keep their names', async ({ page, request }) => {
  const bundle: { url: string; status: number; headers: Record<string, string> }[] = [];
  page.on('response', (r) => {
    if (new URL(r.url()).pathname.startsWith('/pkg/')) bundle.push({ url: r.url(), status: r.status(), headers: r.headers() });
  });
  const nav = await page.goto('/');
  expect(nav!.headers()['cache-control']).toBe('no-store');
  // Hydrated: the hashed glue and wasm loaded and ran.
  await expect(page.locator('html')).toHaveAttribute('data-interactive', 'true');
  const names = bundle.map((r) => new URL(r.url).pathname);
  expect(names).toHaveLength(3);
  // One of each, in whatever order their hashes sort.
  const named = (re: RegExp) => names.filter((n) => re.test(n));
  expect(named(/^\/pkg\/outcomes\.[0-9a-f]{16}\.css$/), names.join(' ')).toHaveLength(1);
  expect(named(/^\/pkg\/outcomes\.[0-9a-f]{16}\.js$/), names.join(' ')).toHaveLength(1);
  const [wasm] = named(/^\/pkg\/outcomes_bg\.[0-9a-f]{16}\.wasm$/);
  expect(wasm, names.join(' ')).toBeDefined();
  for (const r of bundle) {
    expect(r.status, r.url).toBe(200);
    expect(r.headers['cache-control'], r.url).toBe('public, max-age=31536000, immutable');
    // Chromium asks for br over http only on some origins; whichever it takes, the build made it.
    expect(['br', 'gzip'], r.url).toContain(r.headers['content-encoding']);
  }
  for (const [name, encoding] of [[wasm, 'br'], [wasm, 'gzip']] as const) {
    const r = await request.get(name, { headers: { 'accept-encoding': encoding } });
    expect(r.headers()['content-encoding']).toBe(encoding);
  }
  // An old or unknown name is a plain 404, not a page.
  const old = await request.get('/pkg/outcomes_bg.wasm');
  expect(old.status()).toBe(404);
  expect(old.headers()['content-type'] ?? '').not.toContain('text/html');
  for (const name of ['/sw.js', '/sw-register.js']) {
    const r = await request.get(name);
    expect(r.status(), name).toBe(200);
    expect(r.headers()['cache-control'], name).toBe('no-store');
  }
});
