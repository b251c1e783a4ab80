// A host that writes to the ledger through the host write API, as an agent host would.
import { APIRequestContext, expect } from '@playwright/test';

const token = process.env.OUTCOMES_HOST_TOKEN ?? '';

export const enc = encodeURIComponent;

export function unique(prefix: string): string {
  return `${prefix}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
}

export class Host {
  constructor(private request: APIRequestContext, private session: string) {}

  private async call(method: 'post' | 'put', path: string, data: unknown, expected = [200, 201]) {
    const r = await this.request[method](path, { data, headers: { Authorization: `Bearer ${token}` } });
    expect(expected, `${method} ${path}: ${r.status()} ${await r.text()}`).toContain(r.status());
    return r.json();
  }

  approve(turn: string, mutation: string, tool = 'mcp__dashboards__create') {
    return this.call('post', `/api/host/sessions/${enc(this.session)}/mutations`,
      { logical_turn_id: turn, mutation_id: mutation, tool });
  }

  intent(mutation: string, attempt = 'att-1') {
    return this.call('post', `/api/host/sessions/${enc(this.session)}/mutations/${enc(mutation)}/intent`, { attempt_id: attempt });
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
}
