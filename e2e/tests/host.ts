// A host that writes to the ledger through the host write API, as an agent host would.
import { APIRequestContext, Page, expect } from '@playwright/test';

const token = process.env.OUTCOMES_HOST_TOKEN ?? '';

export const enc = encodeURIComponent;

export function unique(prefix: string): string {
  return `${prefix}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
}

export class Host {
  constructor(private request: APIRequestContext, private session: string) {}

  private async call(method: 'post' | 'put' | 'delete', path: string, data: unknown, expected = [200, 201]) {
    // The JSON endpoints answer 415 to a body not sent as application/json (docs/api.md "Errors").
    const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
    const r = await this.request[method](path, { data, headers });
    expect(expected, `${method} ${path}: ${r.status()} ${await r.text()}`).toContain(r.status());
    return r.json();
  }

  approve(turn: string, mutation: string, tool = 'mcp__dashboards__create') {
    return this.call('post', `/api/host/sessions/${enc(this.session)}/mutations`,
      { logical_turn_id: turn, mutation_id: mutation, tool });
  }

  /** Records intent; `deadlineSecs`: its deadline (docs/api.md "Deadlines"), else the server's default. */
  intent(mutation: string, attempt = 'att-1', deadlineSecs?: number) {
    return this.call('post', `/api/host/sessions/${enc(this.session)}/mutations/${enc(mutation)}/intent`,
      deadlineSecs === undefined ? { attempt_id: attempt } : { attempt_id: attempt, deadline_secs: deadlineSecs });
  }

  settle(mutation: string, status: string, reason?: string, attempt = 'att-1') {
    return this.call('post', `/api/host/sessions/${enc(this.session)}/mutations/${enc(mutation)}/settlement`,
      reason ? { attempt_id: attempt, status, reason } : { attempt_id: attempt, status });
  }

  cancel(mutation: string, reason?: string, attempt = 'att-1') {
    return this.call('post', `/api/host/sessions/${enc(this.session)}/mutations/${enc(mutation)}/cancellation`,
      reason ? { attempt_id: attempt, reason } : { attempt_id: attempt });
  }

  metadata(mutation: string, meta: { id?: string; url?: string; title?: string }) {
    return this.call('put', `/api/host/sessions/${enc(this.session)}/mutations/${enc(mutation)}/metadata`, meta);
  }

  async settled(turn: string, mutation: string, status: string, reason?: string) {
    await this.approve(turn, mutation);
    await this.intent(mutation);
    await this.settle(mutation, status, reason);
  }

  turnPath(turn: string) {
    return `/sessions/${enc(this.session)}/turns/${enc(turn)}`;
  }

  sessionPath() {
    return `/sessions/${enc(this.session)}`;
  }

  /** Mints a viewer link for this session: `{url: "/v/<token>", expires_at}` (201). */
  viewerLink(expiresInSecs?: number): Promise<{ url: string; expires_at: string }> {
    return this.call('post', `/api/host/sessions/${enc(this.session)}/viewer-links`,
      expiresInSecs === undefined ? {} : { expires_in_secs: expiresInSecs }, [201]);
  }

  /** Revokes every viewer link of this session: `{revoked: n}`. */
  revokeViewerLinks(): Promise<{ revoked: number }> {
    return this.call('delete', `/api/host/sessions/${enc(this.session)}/viewer-links`, undefined, [200]);
  }
}

/** `POST /api/host/batch` in chunks of at most 1000 operations; every result must be 200/201. */
export async function batch(request: APIRequestContext, ops: object[], base = '') {
  for (let i = 0; i < ops.length; i += 1000) {
    const chunk = ops.slice(i, i + 1000);
    const r = await request.post(`${base}/api/host/batch`, {
      data: { operations: chunk }, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    });
    expect(r.status(), await r.text()).toBe(200);
    const body = await r.json();
    const bad = body.results.filter((x: { status: number }) => x.status !== 200 && x.status !== 201);
    expect(bad, JSON.stringify(bad.slice(0, 3))).toEqual([]);
  }
}

/** The three operations that publish one settled outcome. */
export function settledOps(session: string, turn: string, mutation: string, status: string, tool = 'mcp__dashboards__create') {
  return [
    { op: 'approve', session_key: session, logical_turn_id: turn, mutation_id: mutation, tool },
    { op: 'intent', session_key: session, mutation_id: mutation, attempt_id: 'att-1' },
    { op: 'settle', session_key: session, mutation_id: mutation, attempt_id: 'att-1', status },
  ];
}

/** Lays out every timeline row, as if none were off screen. A row off screen is not laid out until it comes
 *  near (`content-visibility: auto` on `.timeline-row`, docs/performance.md "First load"): until then its text is left
 *  out of `innerText`, what overflows it is clipped, and a full-page screenshot shows it blank. So a check
 *  of a whole page's text or width, and a full-page screenshot, calls this first. (A constructed style
 *  sheet: the page's CSP allows no inline `<style>`.) */
export async function layOutAllRows(page: Page) {
  await page.evaluate(() => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync('.timeline-row { content-visibility: visible !important; }');
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  });
}
