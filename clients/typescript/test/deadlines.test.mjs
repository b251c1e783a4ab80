// Deadlines (docs/api.md "Deadlines") against the real server: the protected write sends
// `deadlineSecs` with its intent and extends it every third of it while the block runs; an
// extension that fails is logged and never reaches the block; a settle after the ledger's own
// deadline settlement is taken once, and its retry after a lost answer resolves.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, run, Usage, setTracingDisabled } from '@openai/agents';
import { Ledger, LedgerError, DEFAULT_DEADLINE_SECS } from 'outcomes-ledger';
import { protectTools } from 'outcomes-ledger/ai-sdk';
import { protectedTool } from 'outcomes-ledger/openai-agents';
import { sharedServer, sessionKey, outcomes, entries, history, readStatus } from './helpers.mjs';

setTracingDisabled(true);

const TOOL = 'mcp__dashboards__create';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let server;
before(async () => {
  server = await sharedServer();
});

/** A `fetch` that counts (and may break) the requests to one kind of path. */
function watchingFetch(breakIt = () => false) {
  const seen = [];
  const wrapped = async (url, init) => {
    const path = new URL(url).pathname;
    seen.push(`${init?.method ?? 'GET'} ${path}`);
    return breakIt(path, seen) ? Promise.reject(new TypeError('fetch failed (the test cut this request)')) : fetch(url, init);
  };
  return { fetch: wrapped, seen };
}

async function entryOf(key, turn, mutationId) {
  const found = (await entries(server, key, turn)).filter((e) => e.outcome.mutation_id === mutationId);
  assert.equal(found.length, 1);
  return found[0];
}

test('the default deadline is the server default, 900 s', () => {
  assert.equal(DEFAULT_DEADLINE_SECS, 900);
});

test('deadlineSecs 3 and a 10 s block: extended every second, never settled by the ledger, ends completed', async () => {
  const key = sessionKey('live');
  const watch = watchingFetch();
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token, fetch: watch.fetch });
  const seen = new Set();
  let running = true;
  const polling = (async () => {
    await sleep(300);
    while (running) {
      for (const e of await entries(server, key, 'turn-1')) seen.add(`${e.ledger_status}/${e.settled_by}`);
      await sleep(250);
    }
  })();
  const value = await ledger.protectedWrite(
    { sessionKey: key, logicalTurnId: 'turn-1', mutationId: 'op-live', tool: TOOL, deadlineSecs: 3 },
    async () => {
      await sleep(10_000);
      // the polls end inside the block, before the settlement: a poll still in flight when the write
      // resolved could otherwise read its own completion (seen under load in ci.sh)
      running = false;
      await polling;
      return 'done';
    },
  );
  assert.equal(value, 'done');
  assert.deepEqual([...seen], ['execution_started/null']);
  const extensions = watch.seen.filter((s) => s.endsWith('/op-live/deadline')).length;
  assert.ok(extensions >= 7 && extensions <= 10, `${extensions} extensions`);
  // No extension after the settlement: the last request is the settle.
  assert.match(watch.seen.at(-1), /\/op-live\/settlement$/);
  const entry = await entryOf(key, 'turn-1', 'op-live');
  assert.equal(entry.ledger_status, 'completed');
  assert.equal(entry.settled_by, 'host');
  const changes = (await history(server, key, 'op-live')).changes;
  assert.deepEqual(changes.map((c) => [c.kind, c.actor]), [['approval', 'host'], ['intent', 'host'], ['settlement', 'host']]);
  const given = (Date.parse(changes[1].deadline_at) - Date.parse(changes[1].at)) / 1000;
  assert.ok(given >= 2.5 && given <= 3.5, `the intent's deadline: ${given} s`);
});

test('extensions that fail are logged and never reach the block: the ledger settles it, the late report is taken', async () => {
  const key = sessionKey('cut');
  const warnings = [];
  const watch = watchingFetch((path) => path.endsWith('/deadline'));
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token, fetch: watch.fetch, logger: { warn: (m) => warnings.push(m) } });
  let byLedger;
  const value = await ledger.protectedWrite(
    { sessionKey: key, logicalTurnId: 'turn-1', mutationId: 'op-cut', tool: TOOL, deadlineSecs: 2 },
    async (op) => {
      // The ledger's sweep settles it within about 2 s of its 2 s deadline.
      for (let i = 0; i < 60; i++) {
        byLedger = await entryOf(key, 'turn-1', 'op-cut');
        if (byLedger.ledger_status !== 'execution_started') break;
        await sleep(100);
      }
      op.failed();
      return 'refused by the provider';
    },
  );
  assert.equal(value, 'refused by the provider');
  assert.deepEqual([byLedger.ledger_status, byLedger.outcome.reason, byLedger.settled_by], ['outcome_unknown', 'execution_timeout', 'ledger']);
  assert.ok(warnings.length >= 1);
  assert.match(warnings[0], /^outcomes-ledger: could not extend the deadline of operation "op-cut" \(attempt "[0-9a-f-]{36}"\) \(trying again in 0\.2 s\): fetch failed \(the test cut this request\)$/);
  const entry = await entryOf(key, 'turn-1', 'op-cut');
  assert.deepEqual([entry.ledger_status, entry.outcome.status, entry.settled_by], ['failed', 'failed', 'host']);
  const changes = (await history(server, key, 'op-cut')).changes;
  assert.deepEqual(changes.map((c) => [c.kind, c.actor, c.ledger_status]), [
    ['approval', 'host', 'approved'],
    ['intent', 'host', 'execution_started'],
    ['settlement', 'ledger', 'outcome_unknown'],
    ['settlement', 'host', 'failed'],
  ]);
  // A second, different late report is refused.
  const attemptId = changes[1].attempt_id;
  await assert.rejects(
    new Ledger({ baseUrl: server.baseUrl, token: server.token }).settle({ sessionKey: key, mutationId: 'op-cut', attemptId, status: 'completed' }),
    (err) => err instanceof LedgerError && err.status === 409 && err.code === 'not_in_flight' && err.current?.ledger_status === 'failed',
  );
});

test('a late settle whose answer is lost: the retry sees its own report in the 409 and resolves; another report is refused', async () => {
  const key = sessionKey('late');
  const direct = new Ledger({ baseUrl: server.baseUrl, token: server.token });
  await direct.approve({ sessionKey: key, logicalTurnId: 'turn-1', mutationId: 'op-late', tool: TOOL });
  await direct.intent({ sessionKey: key, mutationId: 'op-late', attemptId: 'att-1', deadlineSecs: 1 });
  for (let i = 0; i < 60 && (await entryOf(key, 'turn-1', 'op-late')).settled_by !== 'ledger'; i++) await sleep(100);
  assert.equal((await entryOf(key, 'turn-1', 'op-late')).settled_by, 'ledger');

  // The first settle reaches the ledger, its answer is lost.
  let settles = 0;
  const losing = async (url, init) => {
    const answer = await fetch(url, init);
    if (new URL(url).pathname.endsWith('/settlement') && ++settles === 1) {
      await answer.text();
      throw new TypeError('fetch failed (the answer was lost)');
    }
    return answer;
  };
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token, fetch: losing, retry: { baseDelayMs: 10 } });
  const settled = await ledger.settle({ sessionKey: key, mutationId: 'op-late', attemptId: 'att-1', status: 'failed' });
  assert.deepEqual([settled.ledger_status, settled.attempt_id, settled.reason ?? null], ['failed', 'att-1', null]);
  assert.equal(settles, 2);
  await assert.rejects(
    direct.settle({ sessionKey: key, mutationId: 'op-late', attemptId: 'att-1', status: 'completed' }),
    (err) => err instanceof LedgerError && err.status === 409 && err.code === 'not_in_flight',
  );
  const changes = (await history(server, key, 'op-late')).changes;
  assert.deepEqual(changes.map((c) => [c.kind, c.actor]), [['approval', 'host'], ['intent', 'host'], ['settlement', 'ledger'], ['settlement', 'host']]);
});

test('a bad deadlineSecs is a RangeError before anything is sent; extendDeadline is one call too', async () => {
  const key = sessionKey('bad-deadline');
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
  let ran = 0;
  for (const bad of [0, 604801, 2.5, '3', Number.NaN]) {
    await assert.rejects(
      ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', tool: TOOL, deadlineSecs: bad }, () => ran++),
      (err) => err instanceof RangeError && /^deadlineSecs is a whole number of seconds from 1 to 604800 \(7 days\), not /.test(err.message),
    );
  }
  assert.equal(ran, 0);
  assert.equal(await readStatus(server, `/api/mutation-outcomes?session_id=${encodeURIComponent(key)}`), 404);

  await ledger.approve({ sessionKey: key, logicalTurnId: 't', mutationId: 'op-ext', tool: TOOL });
  await ledger.intent({ sessionKey: key, mutationId: 'op-ext', attemptId: 'att-1', deadlineSecs: 5 });
  const extended = await ledger.extendDeadline({ sessionKey: key, mutationId: 'op-ext', attemptId: 'att-1', deadlineSecs: 60 });
  assert.deepEqual([extended.ledger_status, extended.attempt_id], ['execution_started', 'att-1']);
  await assert.rejects(
    ledger.extendDeadline({ sessionKey: key, mutationId: 'op-ext', attemptId: 'att-2', deadlineSecs: 60 }),
    (err) => err instanceof LedgerError && err.status === 409 && err.code === 'attempt_mismatch',
  );
  await assert.rejects(
    ledger.extendDeadline({ sessionKey: key, mutationId: 'op-ext', attemptId: 'att-1', deadlineSecs: 0 }),
    (err) => err instanceof LedgerError && err.status === 422 && err.field === 'deadline_secs',
  );
});

test('both adapters send deadlineSecs and extend it: a 3.5 s call under a 2 s deadline completes', async () => {
  const key = sessionKey('adapters');
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
  const tools = protectTools(ledger, { sessionKey: key, logicalTurnId: 'turn-ai', deadlineSecs: 2 }, {
    slow_write: { description: 'write slowly', execute: async () => (await sleep(3500), 'written') },
  });
  const slowWrite = protectedTool(ledger, { sessionKey: key, logicalTurnId: 'turn-agents', deadlineSecs: 2 }, {
    name: 'slow_write',
    description: 'write slowly',
    parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
    strict: true,
    execute: async () => (await sleep(3500), 'written'),
  });
  const model = {
    turns: [
      [{ type: 'function_call', id: 'fc_1', callId: 'call-agents', name: 'slow_write', arguments: '{}', status: 'completed' }],
      [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }],
    ],
    async getResponse() {
      return { usage: new Usage(), output: this.turns.shift(), responseId: 'resp' };
    },
    // eslint-disable-next-line require-yield
    async *getStreamedResponse() {
      throw new Error('not scripted');
    },
  };
  const [written, result] = await Promise.all([
    tools.slow_write.execute({}, { toolCallId: 'call-ai' }),
    run(new Agent({ name: 'slow', model, tools: [slowWrite] }), 'go'),
  ]);
  assert.equal(written, 'written');
  assert.equal(result.finalOutput, 'done');
  for (const [turn, mutationId] of [['turn-ai', 'call-ai'], ['turn-agents', 'call-agents']]) {
    const entry = await entryOf(key, turn, mutationId);
    assert.deepEqual([entry.ledger_status, entry.settled_by], ['completed', 'host'], mutationId);
    const changes = (await history(server, key, mutationId)).changes;
    assert.deepEqual(changes.map((c) => [c.kind, c.actor]), [['approval', 'host'], ['intent', 'host'], ['settlement', 'host']]);
    const given = (Date.parse(changes[1].deadline_at) - Date.parse(changes[1].at)) / 1000;
    assert.ok(given >= 1.5 && given <= 2.5, `${mutationId}: the intent's deadline ${given} s`);
  }
  assert.deepEqual((await outcomes(server, key)).map((r) => r.status), ['completed', 'completed']);
});
