// Access control in the browser (docs/access.md): every page works under its Content Security Policy and
// the app hydrates; staff sign in and out on a server with `--access signed-in`; a viewer link shows one
// session and nothing else, until the host revokes it. Screenshots of the new pages, desktop and phone,
// light and dark, go to test-results/screenshots/.
//
// The signed-in server is the second server scripts/test.sh starts (SIGNED_IN_URL) with one staff account
// (STAFF_NAME, STAFF_PASSWORD); the open server is BASE_URL. Both take the same host token.
import { test, expect, request as pwRequest, BrowserContext, Page, APIRequestContext } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { Host, unique, enc, layOutAllRows } from './host';

const signedInUrl = process.env.SIGNED_IN_URL ?? '';
const staffName = process.env.STAFF_NAME ?? '';
const staffPassword = process.env.STAFF_PASSWORD ?? '';
const needsSignedIn = () => test.skip(!signedInUrl, 'SIGNED_IN_URL (a server with --access signed-in) is not set');

/** Console messages about the Content Security Policy, and any other console error or uncaught exception. */
function watch(page: Page) {
  const csp: string[] = [];
  const errors: string[] = [];
  // Set once the test ends the caller's access: the app's reads may then be refused (401) while it learns so.
  const state = { accessEnded: false, denied: [] as string[] };
  page.on('console', m => {
    const text = m.text();
    const url = m.location().url;
    if (/Content Security Policy|Refused to/i.test(text)) csp.push(`${page.url()}: ${text}`);
    // The 401/404 of a page that answers so on purpose is logged as a failed load of the document itself.
    else if (m.type() === 'error' && text.startsWith('Failed to load resource') && url === page.url()) return;
    else if (m.type() === 'error' && state.accessEnded && text.includes('status of 401') && new URL(url).pathname.startsWith('/api/'))
      state.denied.push(url);
    else if (m.type() === 'error') errors.push(`${page.url()}: ${text} (${url})`);
  });
  page.on('pageerror', e => errors.push(`${page.url()}: uncaught ${e}`));
  return { csp, errors, state };
}

/** Every page also reports CSP violations it sees itself, as a console error the watcher catches. */
async function reportViolations(context: BrowserContext) {
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', e => {
      console.error(`Content Security Policy violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`);
    });
  });
}

/** Waits until the app is hydrated: its router listens for clicks on the window (leptos_router). */
async function hydrated(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  try {
    await expect.poll(async () => {
      const { result } = await cdp.send('Runtime.evaluate', { expression: 'window' });
      const { listeners } = await cdp.send('DOMDebugger.getEventListeners', { objectId: result.objectId! });
      const types = new Set(listeners.map(l => l.type));
      return types.has('click') && types.has('popstate');
    }, { message: `the app hydrates on ${page.url()}`, timeout: 15_000 }).toBe(true);
  } finally {
    await cdp.detach();
  }
}

/** A click on a header link is a client-side navigation: same document, no page load. */
async function navigatesInPlace(page: Page, link: string, url: RegExp, heading: string | RegExp) {
  await page.evaluate(() => { (window as any).__sameDocument = true; });
  const documents: string[] = [];
  const onRequest = (r: { resourceType(): string; url(): string }) => { if (r.resourceType() === 'document') documents.push(r.url()); };
  page.on('request', onRequest);
  await page.locator('header').getByRole('link', { name: link, exact: true }).click();
  await expect(page).toHaveURL(url);
  await expect(page.locator('main h1')).toHaveText(heading);
  page.off('request', onRequest);
  expect(documents, 'a client-side navigation loads no document').toEqual([]);
  expect(await page.evaluate(() => (window as any).__sameDocument)).toBe(true);
}

/** The page policy of an HTML response, checked; returns its nonce. */
function checkPolicy(csp: string | undefined, what: string): string {
  expect(csp, `${what}: Content-Security-Policy`).toBeTruthy();
  expect(csp).toContain("script-src 'self' 'wasm-unsafe-eval' 'nonce-");
  expect(csp).toContain("style-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  return /'nonce-([^']+)'/.exec(csp!)![1];
}

async function signIn(page: Page, password = staffPassword) {
  await page.getByLabel('Name').fill(staffName);
  await page.getByLabel('Password').fill(password);
  const [response] = await Promise.all([
    page.waitForResponse(r => new URL(r.url()).pathname === '/sign-in' && r.request().method() === 'POST'),
    page.getByRole('button', { name: 'Sign in' }).click(),
  ]);
  return response;
}

function expectSignInPage(page: Page, next: string | null) {
  const url = new URL(page.url());
  expect(url.pathname).toBe('/sign-in');
  expect(url.searchParams.get('next')).toBe(next);
}

test('every page works under its Content Security Policy, and the app hydrates', async ({ page, context, request }) => {
  await reportViolations(context);
  const seen = watch(page);

  const session = unique('e2e-csp');
  const host = new Host(request, session);
  await host.settled('turn-1', `${session}-ok`, 'completed');
  await host.settled('turn-1', `${session}-unk`, 'outcome_unknown', 'execution_timeout');
  await host.approve('turn-1', `${session}-fly`);
  await host.intent(`${session}-fly`);

  // The watcher does see a violation: an inline script without the nonce is refused.
  await page.goto('/');
  await hydrated(page);
  await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.__inlineRan = true';
    document.body.appendChild(s);
  });
  await expect.poll(() => seen.csp.length, { message: 'an inline script is refused and reported' }).toBeGreaterThan(0);
  expect(await page.evaluate(() => (window as any).__inlineRan)).toBeUndefined();
  seen.csp.length = 0;

  const app: [string, string, string | RegExp][] = [
    ['home', '/', 'Outcome ledger'],
    ['session', `/sessions/${enc(session)}`, `Session ${session}`],
    ['turn', host.turnPath('turn-1'), 'Turn 1'],
    ['operation', `/operations/${enc(session + '-unk')}`, new RegExp(`${session}-unk`)],
    ['unknowns', '/unknowns', 'Open unknown outcomes'],
    ['find', `/find?q=${enc('no-such-id-' + session)}`, 'Find'],
  ];
  const nonces = new Set<string>();
  for (const [name, path, heading] of app) {
    const response = await page.goto(path);
    expect(response?.status(), name).toBe(200);
    const nonce = checkPolicy(response?.headers()['content-security-policy'], name);
    nonces.add(nonce);
    // Every script of the page carries this response's nonce (the browser keeps it in the property).
    const scripts = await page.locator('script').evaluateAll(ss => ss.map(s => (s as HTMLScriptElement).nonce));
    expect(scripts.length, `${name} has its hydration scripts`).toBeGreaterThan(0);
    expect(scripts.filter(n => n !== nonce), `${name}: scripts without the nonce`).toEqual([]);
    await expect(page.locator('main h1')).toHaveText(heading);
    await hydrated(page);
    if (name === 'turn') {
      // Hydrated and live: the host settles the in-flight write and the row changes without a reload.
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      await page.evaluate(() => { (window as any).__sameDocument = true; });
      await host.settle(`${session}-fly`, 'failed');
      await expect(page.locator(`.outcome[data-mutation-id="${session}-fly"]`)).toHaveAttribute('data-status', 'failed');
      expect(await page.evaluate(() => (window as any).__sameDocument)).toBe(true);
    }
    if (name === 'home') await navigatesInPlace(page, 'Open unknowns', /\/unknowns$/, 'Open unknown outcomes');
    else await navigatesInPlace(page, 'Outcome ledger', /\/$/, 'Outcome ledger');
    // The stylesheet applies (style-src 'self'): the heading has its utility-class size.
    expect(await page.locator('main h1').evaluate(e => getComputedStyle(e).fontSize)).toBe('24px');
  }
  expect(nonces.size, 'a fresh nonce for every page').toBe(app.length);

  // The pages the server renders outside the app: no script at all, styled by the same stylesheet.
  const standalone: [string, string, number, string][] = [
    ['sign-in', '/sign-in', 200, 'Sign in'],
    ['bad viewer link', '/v/not-a-valid-link', 404, 'This link no longer works.'],
  ];
  for (const [name, path, status, heading] of standalone) {
    const response = await page.goto(path);
    expect(response?.status(), name).toBe(status);
    checkPolicy(response?.headers()['content-security-policy'], name);
    await expect(page.locator('main h1')).toHaveText(heading);
    await expect(page.locator('script')).toHaveCount(0);
    expect(await page.locator('main h1').evaluate(e => getComputedStyle(e).fontSize), name).toBe('24px');
  }

  // The header of the open server says so, with a way to sign in.
  await page.goto('/');
  await expect(page.locator('header [data-access="open"]')).toHaveText('open access');
  await page.locator('header').getByRole('link', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/sign-in$/);

  expect(seen.csp, 'Content Security Policy messages').toEqual([]);
  expect(seen.errors, 'console errors and uncaught exceptions').toEqual([]);
});

test('staff sign in and out on a server that requires it', async ({ page, context }) => {
  needsSignedIn();
  await reportViolations(context);
  const seen = watch(page);

  // Without a credential, a page sends the browser to the sign-in form, which comes back to it.
  const first = await page.goto(signedInUrl + '/');
  expect(first?.status()).toBe(200);
  const redirect = first!.request().redirectedFrom();
  expect(redirect?.url()).toBe(signedInUrl + '/');
  expect((await redirect!.response())?.status()).toBe(303);
  expectSignInPage(page, '/');
  expect.soft(page.url(), 'the redirect target is exactly /sign-in?next=%2F').toBe(`${signedInUrl}/sign-in?next=%2F`);
  await expect(page.locator('main h1')).toHaveText('Sign in');
  // Nothing about the ledger is on the form page.
  await expect(page.locator('header')).not.toContainText('Open unknowns');

  // A wrong password: 401, the form again with the error, still coming back to `/`.
  const wrong = await signIn(page, staffPassword + '-wrong');
  expect(wrong.status()).toBe(401);
  await expect(page.getByRole('alert')).toHaveText('The name or the password is wrong.');
  expect(new URL(page.url()).pathname).toBe('/sign-in');
  await expect(page.locator('input[name="next"]')).toHaveValue('/');
  expect((await context.cookies()).map(c => c.name)).not.toContain('outcomes_sign_in');

  // The right one: 303 to `/`, signed in, with an HttpOnly cookie scripts cannot read.
  const right = await signIn(page);
  expect(right.status()).toBe(303);
  await expect(page).toHaveURL(signedInUrl + '/');
  await expect(page.locator('main h1')).toHaveText('Outcome ledger');
  const who = page.locator('header [data-access="staff"]');
  await expect(who).toHaveText(`Signed in as ${staffName}`);
  await expect(page.locator('header [data-access="open"]')).toHaveCount(0);
  await expect(page.locator('header').getByRole('link', { name: 'Open unknowns' })).toBeVisible();
  const cookie = (await context.cookies()).find(c => c.name === 'outcomes_sign_in');
  expect(cookie?.httpOnly).toBe(true);
  expect(cookie?.sameSite).toBe('Lax');
  expect(await page.evaluate(() => document.cookie)).not.toContain('outcomes_sign_in');

  // A reload keeps the sign-in; so does the hydrated app's own reading (client-side navigation).
  await page.reload();
  await expect(who).toHaveText(`Signed in as ${staffName}`);
  await hydrated(page);
  await navigatesInPlace(page, 'Open unknowns', /\/unknowns$/, 'Open unknown outcomes');
  await expect(who).toHaveText(`Signed in as ${staffName}`);

  // Sign out: back at the sign-in form, the cookie gone, and `/` asks again.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(signedInUrl + '/sign-in');
  await expect(page.locator('main h1')).toHaveText('Sign in');
  expect((await context.cookies()).map(c => c.name)).not.toContain('outcomes_sign_in');
  await page.goto(signedInUrl + '/');
  expectSignInPage(page, '/');

  // A deep link survives the detour through the sign-in form.
  await page.goto(signedInUrl + '/unknowns');
  expectSignInPage(page, '/unknowns');
  await signIn(page);
  await expect(page).toHaveURL(signedInUrl + '/unknowns');
  await expect(who).toHaveText(`Signed in as ${staffName}`);
  // The read API answers the browser that is signed in, and nobody else.
  expect((await page.request.get(signedInUrl + '/api/sessions')).status()).toBe(200);
  const anonymous = await pwRequest.newContext();
  try {
    expect((await anonymous.get(signedInUrl + '/api/sessions')).status()).toBe(401);
  } finally {
    await anonymous.dispose();
  }

  expect(seen.csp, 'Content Security Policy messages').toEqual([]);
  expect(seen.errors, 'console errors and uncaught exceptions').toEqual([]);
});

test.describe('on the signed-in server', () => {
  let api: APIRequestContext;
  test.beforeAll(async () => {
    if (signedInUrl) api = await pwRequest.newContext({ baseURL: signedInUrl });
  });
  test.afterAll(async () => { await api?.dispose(); });

  test('a viewer link shows one session, live, and nothing else, until the host revokes it', async ({ browser }) => {
    needsSignedIn();
    const a = unique('e2e-viewer-a');
    const b = unique('e2e-viewer-b');
    const hostA = new Host(api, a);
    const hostB = new Host(api, b);
    await hostA.settled('turn-1', `${a}-ok`, 'completed');
    await hostA.settled('turn-1', `${a}-unk`, 'outcome_unknown', 'execution_timeout');
    await hostA.approve('turn-1', `${a}-fly`);
    await hostA.intent(`${a}-fly`);
    await hostB.settled('turn-1', `${b}-ok`, 'completed');

    const link = await hostA.viewerLink();
    expect(link.url).toMatch(/^\/v\/[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(link.expires_at)).toBeGreaterThan(Date.now() + 6 * 24 * 3600 * 1000);

    const context = await browser.newContext({ baseURL: signedInUrl });
    await reportViolations(context);
    const page = await context.newPage();
    const seen = watch(page);
    try {
      // Opening the link lands on the session's page, as a viewer.
      await page.goto(link.url);
      await expect(page).toHaveURL(`${signedInUrl}/sessions/${enc(a)}`);
      await expect(page.locator('main h1')).toHaveText(`Session ${a}`);
      const notice = page.locator('.viewer-notice');
      await expect(notice).toContainText('Shared with you: what your agent did.');
      await expect(notice).toContainText('quote its operation id to the support of the service you used.');
      const access = page.locator('header [data-access="viewer"]');
      await expect(access).toContainText('Shared with you: one session');
      await expect(page.locator('header').getByRole('button', { name: 'Leave' })).toBeVisible();
      await expect(page.locator('header').getByRole('link', { name: 'Open unknowns' })).toHaveCount(0);
      await expect(page.locator('header a[href="/"]')).toHaveCount(0);
      await expect(page.locator('header').getByRole('link', { name: 'Sign in' })).toHaveCount(0);
      const cookie = (await context.cookies()).find(c => c.name === 'outcomes_viewer');
      expect(cookie?.httpOnly).toBe(true);
      expect(cookie?.sameSite).toBe('Lax');
      // The link is not left in the address bar or history: the page is the session's own address.
      expect(page.url()).not.toContain('/v/');

      // The turn: the unknown outcome with its operation id to quote; live updates reach the viewer.
      await hydrated(page);
      await page.locator('.turn h2 a').click();
      await expect(page).toHaveURL(`${signedInUrl}${hostA.turnPath('turn-1')}`);
      await expect(page.locator('.viewer-notice')).toBeVisible();
      const unk = page.locator(`.outcome[data-mutation-id="${a}-unk"]`);
      await expect(unk).toHaveAttribute('data-status', 'outcome_unknown');
      await expect(unk.locator('.operation-id')).toHaveText(`${a}-unk`);
      await expect(unk.locator('.operation-id')).toBeVisible();
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      await hostA.settle(`${a}-fly`, 'completed');
      await expect(page.locator(`.outcome[data-mutation-id="${a}-fly"]`)).toHaveAttribute('data-status', 'completed');
      await hostA.settled('turn-1', `${a}-later`, 'failed');
      await expect(page.locator(`.outcome[data-mutation-id="${a}-later"]`)).toHaveAttribute('data-status', 'failed');
      await expect(page.locator('.timeline-row')).toHaveCount(4);

      // Its own operation page reads; nothing of another session does, exactly as if it did not exist.
      const own = await page.goto(`/operations/${enc(a + '-unk')}`);
      expect(own?.status()).toBe(200);
      await expect(page.locator('.operation .operation-id')).toHaveText(`${a}-unk`);
      const nowhere = await page.goto(`/sessions/${enc(unique('no-such-session'))}`);
      expect(nowhere?.status()).toBe(404);
      const nowhereText = await page.locator('main').innerText();
      const other = await page.goto(`/sessions/${enc(b)}`);
      expect(other?.status()).toBe(404);
      // The middleware answers before rendering: the same plain 404 page as for a session that does not exist.
      await expect(page.locator('main h1')).toHaveText('Page not found.');
      await expect(page.locator('main a')).toHaveAttribute('href', hostA.sessionPath());
      expect((await page.locator('main').innerText()).replace(b, 'X')).toBe(nowhereText.replace(/no-such-session-[\w-]+/, 'X'));
      await expect(page.locator('main')).not.toContainText(`${b}-ok`);
      // A path under its own session that names no page: the app's 404 page, whose way back is the
      // viewer's own session, never the sessions list it may not read (before: "All sessions", a link to
      // a 404), also once hydrated.
      const noPage = await page.goto(`${hostA.sessionPath()}/no-such-page`);
      expect(noPage?.status()).toBe(404);
      await expect(page.locator('main a')).toHaveAttribute('href', hostA.sessionPath());
      await hydrated(page);
      await expect(page.locator('main a')).toHaveText('Back to the session shared with you');
      await expect(page.locator('main a')).toHaveAttribute('href', hostA.sessionPath());
      const gone: [string, string][] = [
        [`/sessions/${enc(b)}/turns/turn-1`, '.timeline-row'],
        [`/operations/${enc(b + '-ok')}`, '.operation'],
        ['/', '.session'],
        ['/unknowns', 'main li'],
        [`/find?q=${enc(b)}`, '.find-result a'],
      ];
      for (const [path, content] of gone) {
        const r = await page.goto(path);
        // Soft: a wrong status is reported, and the rest of the viewer's journey is still checked.
        expect.soft(r?.status(), `a viewer opens ${path}`).toBe(404);
        await expect(page.locator(content), path).toHaveCount(0);
        await expect(page.locator('main'), path).not.toContainText(a);
        if (!path.includes(enc(b))) await expect(page.locator('main'), path).not.toContainText(b);
        await expect(page.locator('main'), path).not.toContainText('Completed');
      }
      for (const path of [`/api/sessions/${enc(b)}/turns`, '/api/sessions', '/api/unknowns']) {
        expect((await page.request.get(path)).status(), `a viewer reads ${path}`).toBe(404);
      }
      expect((await page.request.get(`/api/sessions/${enc(a)}/turns`)).status()).toBe(200);

      // The host revokes: the open page stops being live, and a reload asks for a sign-in.
      await page.goto(hostA.turnPath('turn-1'));
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
      seen.state.accessEnded = true;
      expect(await hostA.revokeViewerLinks()).toEqual({ revoked: 1 });
      // The page says so and stops: no reconnecting with a credential that no longer holds.
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'access_ended', { timeout: 15_000 });
      await expect(page.locator('.connection')).toContainText('your access ended');
      await page.waitForTimeout(4_000);
      await expect(page.locator('.connection')).toHaveAttribute('data-state', 'access_ended');
      // Only reads of its own session were refused while it learnt so: one or two, not a retry loop.
      expect(seen.state.denied.length).toBeLessThanOrEqual(3);
      for (const url of seen.state.denied) expect(url).toContain(enc(a));
      // A reload: the end user's plain page (this link no longer works), never the staff sign-in form.
      const ended = await page.reload();
      expect(ended?.status()).toBe(404);
      await expect(page.locator('main h1')).toHaveText('This link no longer works.');
      await expect(page.locator('input[type="password"]')).toHaveCount(0);
      expect((await context.cookies()).map(c => c.name)).not.toContain('outcomes_viewer');
      expect((await page.request.get(`/api/sessions/${enc(a)}/turns`)).status()).toBe(401);
      // The revoked link and a made-up one are not valid.
      const revoked = await page.goto(link.url);
      expect(revoked?.status()).toBe(404);
      await expect(page.locator('main h1')).toHaveText('This link no longer works.');
      const bad = await page.goto('/v/' + 'x'.repeat(43));
      expect(bad?.status()).toBe(404);
      await expect(page.locator('main h1')).toHaveText('This link no longer works.');
      await expect(page.locator('main')).toContainText('Ask whoever shared it with you for a new link.');
      await expect(page.getByRole('link', { name: 'sign in' })).toHaveCount(0);

      expect(seen.csp, 'Content Security Policy messages').toEqual([]);
      expect(seen.errors, 'console errors and uncaught exceptions').toEqual([]);
    } finally {
      await context.close();
    }
  });

  test('a viewer can leave: the cookie goes, the session asks for a sign-in, the link still opens it', async ({ browser }) => {
    needsSignedIn();
    const a = unique('e2e-leave');
    const host = new Host(api, a);
    await host.settled('turn-1', `${a}-ok`, 'completed');
    const link = await host.viewerLink(3600);
    const context = await browser.newContext({ baseURL: signedInUrl });
    try {
      const page = await context.newPage();
      await page.goto(link.url);
      await expect(page.locator('header [data-access="viewer"]')).toBeVisible();
      await page.locator('header').getByRole('button', { name: 'Leave' }).click();
      // The click starts the form's navigation; its URL is read once the sign-in page has loaded (read at
      // once, it was the session's URL in one CI-like run).
      await page.waitForURL(u => u.pathname === '/sign-in');
      expectSignInPage(page, null);
      expect((await context.cookies()).map(c => c.name)).not.toContain('outcomes_viewer');
      await page.goto(host.sessionPath());
      expectSignInPage(page, host.sessionPath());
      await page.goto(link.url);
      await expect(page).toHaveURL(`${signedInUrl}${host.sessionPath()}`);
      await expect(page.locator('.viewer-notice')).toBeVisible();
    } finally {
      await context.close();
    }
  });

  test('axe: no serious or critical violations on the sign-in page, a viewer\'s session, a staff home, the bad-link page', async ({ browser }) => {
    needsSignedIn();
    const a = unique('e2e-axe');
    const host = new Host(api, a);
    await host.settled('turn-1', `${a}-unk`, 'outcome_unknown', 'execution_timeout');
    const link = await host.viewerLink(3600);
    for (const colorScheme of ['light', 'dark'] as const) {
      const staff = await browser.newContext({ baseURL: signedInUrl, colorScheme });
      const viewer = await browser.newContext({ baseURL: signedInUrl, colorScheme });
      try {
        const page = await staff.newPage();
        const bad: string[] = [];
        const check = async (p: Page, name: string) => {
          const result = await new AxeBuilder({ page: p }).analyze();
          bad.push(...result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => `${colorScheme} ${name} ${v.id}: ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`));
        };
        const v = await viewer.newPage();
        await v.goto(link.url);
        await expect(v.locator('.viewer-notice')).toBeVisible();
        await check(v, 'viewer session');
        await v.goto(host.turnPath('turn-1'));
        await expect(v.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
        await check(v, 'viewer turn');
        await v.goto('/v/not-a-valid-link');
        await check(v, 'link not valid');
        await page.goto('/');
        await check(page, 'sign-in');
        await signIn(page, staffPassword + '-wrong');
        await expect(page.getByRole('alert')).toHaveText('The name or the password is wrong.');
        await check(page, 'sign-in with its error');
        await page.screenshot({ path: `test-results/screenshots/sign-in-error-desktop-${colorScheme}.png`, fullPage: true });
        await signIn(page);
        await expect(page.locator('header [data-access="staff"]')).toBeVisible();
        await check(page, 'staff home');
        expect(bad).toEqual([]);
      } finally {
        await staff.close();
        await viewer.close();
      }
    }
  });

  // Screenshots: the sign-in form and a viewer's pages in one test, a staff's home (it needs a sign-in) in
  // another, each at desktop and phone size, light and dark.
  const sizes = [['desktop', 1280, 800], ['phone', 390, 844]] as const;
  const schemes = ['light', 'dark'] as const;

  async function look(p: Page, name: string, device: string, colorScheme: string) {
    await layOutAllRows(p);
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, `${name} ${device} ${colorScheme} overflows`).toBeLessThanOrEqual(0);
    const bg = await p.evaluate(() => getComputedStyle(document.body).backgroundColor);
    if (colorScheme === 'light') expect(bg, name).toBe('rgb(255, 255, 255)');
    else expect(bg, name).not.toBe('rgb(255, 255, 255)');
    await p.screenshot({ path: `test-results/screenshots/${name}-${device}-${colorScheme}.png`, fullPage: true });
  }

  test('screenshots of the sign-in page and a viewer\'s session and turn: desktop and phone, light and dark', async ({ browser }) => {
    needsSignedIn();
    test.setTimeout(120_000);
    const a = unique('e2e-shot');
    const host = new Host(api, a);
    await host.settled('turn-1', `${a}-ok`, 'completed');
    await host.metadata(`${a}-ok`, { title: 'Dashboard "Revenue Q3" created', url: 'https://example.com/d/42' });
    await host.settled('turn-1', `${a}-unk`, 'outcome_unknown', 'execution_timeout');
    await host.settled('turn-2', `${a}-bad`, 'failed');
    const link = await host.viewerLink(3600);
    for (const [device, width, height] of sizes) {
      for (const colorScheme of schemes) {
        const context = await browser.newContext({ baseURL: signedInUrl, viewport: { width, height }, colorScheme });
        try {
          const page = await context.newPage();
          await page.goto('/');
          await expect(page.locator('main h1')).toHaveText('Sign in');
          await look(page, 'sign-in', device, colorScheme);
          await page.goto(link.url);
          await expect(page.locator('.viewer-notice')).toBeVisible();
          await look(page, 'viewer-session', device, colorScheme);
          await page.goto(host.turnPath('turn-1'));
          await expect(page.locator('.connection')).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
          await look(page, 'viewer-turn', device, colorScheme);
        } finally {
          await context.close();
        }
      }
    }
  });

  test('screenshots of a staff\'s home with the header: desktop and phone, light and dark', async ({ browser }) => {
    needsSignedIn();
    test.setTimeout(120_000);
    const a = unique('e2e-shot-staff');
    const host = new Host(api, a);
    await host.settled('turn-1', `${a}-ok`, 'completed');
    await host.settled('turn-1', `${a}-unk`, 'outcome_unknown', 'execution_timeout');
    for (const [device, width, height] of sizes) {
      for (const colorScheme of schemes) {
        const context = await browser.newContext({ baseURL: signedInUrl, viewport: { width, height }, colorScheme });
        try {
          const page = await context.newPage();
          await page.goto('/');
          await signIn(page);
          await expect(page.locator('header [data-access="staff"]')).toHaveText(`Signed in as ${staffName}`);
          await expect(page.locator(`.session a[href="/sessions/${a}"]`)).toBeVisible();
          await look(page, 'staff-home', device, colorScheme);
        } finally {
          await context.close();
        }
      }
    }
  });
});
