// A third-party client of the replay endpoint: the npm `eventsource` package, a standard EventSource that
// reconnects by itself with Last-Event-ID. It replays a turn, reconnects while the host keeps writing, and
// must end with exactly the state the history API returns. Run by scripts/test.sh with `node --test`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventSource } from 'eventsource';

const base = process.env.BASE_URL ?? 'http://127.0.0.1:3100';
const token = process.env.OUTCOMES_HOST_TOKEN ?? '';
const session = `node-client-${Date.now()}`;
const enc = encodeURIComponent;

async function host(method, path, body) {
  const r = await fetch(`${base}/api/host/sessions/${enc(session)}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

const approve = (m) => host('POST', '/mutations', { logical_turn_id: 'turn-1', mutation_id: m, tool: 'mcp__dashboards__create' });
const intent = (m) => host('POST', `/mutations/${enc(m)}/intent`, { attempt_id: 'a1' });
const settle = (m, status) => host('POST', `/mutations/${enc(m)}/settlement`, { attempt_id: 'a1', status });

test('a standard EventSource replays, resumes with Last-Event-ID, and ends with the history state', async () => {
  await approve('m1'); await intent('m1'); await settle('m1', 'completed'); // revisions 1, 2
  await approve('m2'); await intent('m2'); await settle('m2', 'outcome_unknown'); // 3, 4
  await approve('m3'); await intent('m3'); // 5 (in flight)

  const sentLastEventIds = [];
  const recordingFetch = (url, init) => {
    const headers = new Headers(init?.headers);
    sentLastEventIds.push(headers.get('last-event-id'));
    return fetch(url, init);
  };
  const state = new Map();
  const revisions = new Map();
  const url = `${base}/api/mutation-events?session_id=${enc(session)}&logical_turn_id=turn-1`;
  const es = new EventSource(url, { fetch: recordingFetch });
  let wroteMore = false;
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out; state ${JSON.stringify([...state])}`)), 30_000);
    es.addEventListener('mutation_outcome', async (e) => {
      const revision = Number(e.lastEventId);
      const record = JSON.parse(e.data);
      // Upsert by mutation_id, keeping the higher revision.
      if (!revisions.has(record.mutation_id) || revision > revisions.get(record.mutation_id)) {
        revisions.set(record.mutation_id, revision);
        state.set(record.mutation_id, record);
      }
      if (!wroteMore && state.size === 3) {
        wroteMore = true;
        // Written after the first snapshot: only a reconnect can deliver them.
        await settle('m3', 'failed'); // 6
        await host('PUT', '/mutations/m1/metadata', { id: 'dash-1', url: 'https://app.example.com/d/dash-1?x=1', title: 'Service overview' }); // 7
      }
      if (state.get('m3')?.status === 'failed' && state.get('m1')?.title === 'Service overview') {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  await done;
  es.close();

  // First request: no cursor (full replay). The reconnect resumed from the snapshot's final id (5), never lower.
  assert.equal(sentLastEventIds[0], null);
  assert.ok(sentLastEventIds.length >= 2, `reconnected: ${sentLastEventIds}`);
  assert.equal(sentLastEventIds[1], '5');
  for (let i = 2; i < sentLastEventIds.length; i++) {
    assert.ok(Number(sentLastEventIds[i]) >= Number(sentLastEventIds[i - 1]), `ids never go back: ${sentLastEventIds}`);
  }

  const history = await (await fetch(`${base}/api/mutation-outcomes?session_id=${enc(session)}`)).json();
  assert.deepEqual([...state.values()], history.mutation_outcomes);
  assert.equal(state.get('m1').url, 'https://app.example.com/d/dash-1');
  assert.equal(state.get('m2').status, 'outcome_unknown');
});
