// The worked example of README "Status checks" (examples/payments.mjs, byte for byte the README's
// block) against a payment-like provider: a real node:http server started here that keeps idempotency
// keys, processes a charge and then DROPS THE CONNECTION before answering (req.socket.destroy()), and
// answers GET /charges?idempotency_key=K with the charge, an explicit "not accepted", or 503 "cannot tell".
// Everything is read back from the real ledger's read APIs (entries, history, unknowns).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Ledger, recordedOutcome, completed, Completed, NotAccepted, Inconclusive, notAccepted, inconclusive } from '../dist/index.js';
import { sharedServer, sessionKey, entries, history } from './helpers.mjs';

const run = promisify(execFile);
const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const TOOL = 'payments.charge';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The provider. POST /charges (Idempotency-Key) makes a charge, or refuses one of amount 13 (it
 * keeps the key as not accepted); either way it then drops the connection (its reply is lost),
 * unless `answer` is set. A repeated key gets the original charge, never a second one. GET
 * /charges?idempotency_key=K: the charge (200), `{status: "not_accepted"}` (200) for a refused key,
 * 404 for a key it never saw, and 503 for a charge of amount 503 (it cannot tell).
 */
async function startProvider() {
  const byKey = new Map();
  let made = 0;
  const provider = {
    answer: false,
    charges: () => [...byKey.values()].filter((c) => c.status === 'succeeded'),
    statusQueries: 0,
  };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://provider');
    const json = (status, body) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && url.pathname === '/charges') {
      provider.statusQueries += 1;
      const charge = byKey.get(url.searchParams.get('idempotency_key'));
      if (charge?.amount === 503) return json(503, { error: 'status unavailable' });
      if (!charge) return json(404, { error: 'no such charge' });
      return json(200, charge);
    }
    if (req.method === 'POST' && url.pathname === '/charges') {
      let body = '';
      for await (const chunk of req) body += chunk;
      const key = req.headers['idempotency-key'];
      if (!key) return json(400, { error: 'Idempotency-Key required' });
      if (!byKey.has(key)) {
        const { amount } = JSON.parse(body);
        const at = new Date().toISOString();
        byKey.set(
          key,
          amount === 13
            ? { idempotency_key: key, status: 'not_accepted', refused_at: at, amount }
            : { id: `ch_${++made}`, idempotency_key: key, status: 'succeeded', created_at: at, amount },
        );
      }
      if (!provider.answer) return req.socket.destroy(); // processed; the reply is lost
      return json(200, byKey.get(key));
    }
    json(404, { error: 'not found' });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  provider.url = `http://127.0.0.1:${server.address().port}`;
  provider.close = () => new Promise((r) => server.close(r));
  return provider;
}

let server;
let provider;
let example;
before(async () => {
  server = await sharedServer();
  provider = await startProvider();
  process.env.PAYMENTS_URL = provider.url;
  process.env.BASE_URL = server.baseUrl;
  process.env.OUTCOMES_HOST_TOKEN = server.token;
  example = await import('../examples/payments.mjs');
});
after(async () => {
  await provider.close();
});

async function entryOf(key, turn, mutationId) {
  return (await entries(server, key, turn)).find((e) => e.outcome.mutation_id === mutationId);
}

/** A charge through the README's `charge()`, whose reply is lost: what it rejected with, the operation id, the time it took. */
async function lostCharge(key, amount, turn = 'turn-pay') {
  const started = Date.now();
  const error = await example.charge({ sessionKey: key, logicalTurnId: turn, amount }).then(
    () => assert.fail('the reply was lost: charge() rejects'),
    (e) => e,
  );
  return { error, mutationId: recordedOutcome(error).mutationId, ms: Date.now() - started };
}

/** An unknown outcome the host settled without a check (a ledger with none), with a charge the provider made for its key. */
async function plainUnknown(key, amount = 2500) {
  const bare = new Ledger({ baseUrl: server.baseUrl, token: server.token });
  const error = await bare
    .protectedWrite({ sessionKey: key, logicalTurnId: 'turn-old', tool: TOOL }, async (op) => {
      await fetch(`${provider.url}/charges`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': op.idempotencyKey },
        body: JSON.stringify({ amount }),
      });
    })
    .catch((e) => e);
  return recordedOutcome(error).mutationId;
}

test('status answers: classes with a kind, and their constructors', () => {
  const c = completed({ reference: 'ch_1', observedAt: '2026-12-07T00:00:00Z' });
  assert.ok(c instanceof Completed);
  assert.deepEqual({ ...c }, { kind: 'completed', reference: 'ch_1', observedAt: '2026-12-07T00:00:00Z' });
  assert.ok(notAccepted({ reference: 'k' }) instanceof NotAccepted);
  assert.equal(inconclusive({ why: '503' }).kind, 'inconclusive');
  assert.ok(new Inconclusive({ why: 'x' }) instanceof Inconclusive);
});

test('a lost reply ends completed by the provider status within 2 s: established_by status_check, provider_status evidence', async () => {
  const key = sessionKey('lost-reply');
  const { error, mutationId, ms } = await lostCharge(key, 2500);
  assert.match(String(error.cause ?? error), /socket|fetch failed|other side closed/i);
  assert.ok(ms < 2000, `reconciled ${ms} ms after the charge started`);
  assert.deepEqual(recordedOutcome(error), { outcome: 'completed', mutationId });
  const entry = await entryOf(key, 'turn-pay', mutationId);
  assert.equal(entry.ledger_status, 'completed');
  assert.equal(entry.outcome.status, 'completed');
  assert.equal(entry.established_by, 'status_check');
  const { changes } = await history(server, key, mutationId);
  assert.deepEqual(changes.map((c) => c.kind), ['approval', 'intent', 'settlement', 'reconciliation']);
  assert.equal(changes[2].ledger_status, 'outcome_unknown');
  const last = changes.at(-1);
  assert.equal(last.established_by, 'status_check');
  assert.equal(last.evidence.source, `status:${TOOL}`);
  assert.match(last.evidence.reference, /^ch_\d+$/);
  const made = provider.charges().find((c) => c.id === last.evidence.reference);
  assert.ok(made, 'the reference is the charge the provider made');
  assert.equal(last.evidence.observed_at, made.created_at);
  // provider_status is sent with the evidence (completed), and the ledger keeps it on the history's row
  assert.equal(last.evidence.provider_status, 'completed');
});

test('a charge the provider never accepted ends not_executed (its explicit statement, not a search)', async () => {
  const key = sessionKey('refused');
  const { error, mutationId } = await lostCharge(key, 13);
  assert.deepEqual(recordedOutcome(error), { outcome: 'not_executed', mutationId });
  const entry = await entryOf(key, 'turn-pay', mutationId);
  assert.equal(entry.outcome.status, 'not_executed');
  assert.equal(entry.established_by, 'status_check');
  const last = (await history(server, key, mutationId)).changes.at(-1);
  assert.equal(last.kind, 'reconciliation');
  assert.equal(last.evidence.source, `status:${TOOL}`);
  assert.equal(last.evidence.provider_status, 'not_accepted');
  assert.match(last.evidence.reference, /^ol_[a-z2-7]{32}$/);
});

test('a provider that cannot tell (503) leaves the outcome unknown after its tries; no guess', async () => {
  const key = sessionKey('cannot-tell');
  const before = provider.statusQueries;
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token, statusChecks: example.checks, statusDelayMs: 200, statusAttempts: 3, logger: { warn() {} } });
  const error = await ledger
    .protectedWrite({ sessionKey: key, logicalTurnId: 'turn-pay', tool: TOOL }, async (op) => {
      await fetch(`${provider.url}/charges`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': op.idempotencyKey },
        body: JSON.stringify({ amount: 503 }),
      });
    })
    .catch((e) => e);
  const mutationId = recordedOutcome(error).mutationId;
  assert.equal(recordedOutcome(error).outcome, 'outcome_unknown');
  assert.equal(provider.statusQueries - before, 3, 'asked three times');
  const entry = await entryOf(key, 'turn-pay', mutationId);
  assert.equal(entry.ledger_status, 'outcome_unknown');
  assert.equal(entry.established_by, null);
  assert.deepEqual((await history(server, key, mutationId)).changes.map((c) => c.kind), ['approval', 'intent', 'settlement']);
  // recover() cannot tell either: counted inconclusive, still unknown
  const summary = await example.ledger.recover({ sessions: [key] });
  assert.deepEqual([summary.completed, summary.notAccepted, summary.inconclusive, summary.errors, summary.skipped], [0, 0, 1, 0, 0]);
  assert.equal((await entryOf(key, 'turn-pay', mutationId)).ledger_status, 'outcome_unknown');
});

test('recover() reconciles the open unknowns of a session; a second run, and two at once, change nothing more', async () => {
  const key = sessionKey('recover');
  const ids = [await plainUnknown(key, 2500), await plainUnknown(key, 13), await plainUnknown(key, 2600)];
  const other = sessionKey('recover-other');
  const otherId = await plainUnknown(other, 2500);
  const [a, b] = await Promise.all([example.ledger.recover({ sessions: [key] }), example.ledger.recover({ sessions: [key] })]);
  for (const s of [a, b]) assert.equal(s.errors, 0, JSON.stringify(s));
  assert.ok(a.completed + b.completed >= 2 && a.notAccepted + b.notAccepted >= 1, JSON.stringify([a, b]));
  const statuses = async () => Promise.all(ids.map(async (id) => (await entryOf(key, 'turn-old', id)).outcome.status));
  assert.deepEqual(await statuses(), ['completed', 'not_executed', 'completed']);
  const rows = async () => Promise.all(ids.map(async (id) => (await history(server, key, id)).changes.length));
  assert.deepEqual(await rows(), [4, 4, 4], 'one reconciliation each');
  const again = await example.ledger.recover({ sessions: [key] });
  assert.deepEqual([again.completed, again.notAccepted, again.inconclusive, again.errors, again.skipped, again.items.length], [0, 0, 0, 0, 0, 0]);
  assert.deepEqual(await rows(), [4, 4, 4]);
  // the other session was not asked for: untouched
  assert.equal((await entryOf(other, 'turn-old', otherId)).ledger_status, 'outcome_unknown');
  // 'all' reaches it
  const all = await example.ledger.recover({ sessions: 'all' });
  assert.ok(all.items.some((i) => i.sessionKey === other && i.result === 'completed'), JSON.stringify(all.items.filter((i) => i.sessionKey === other)));
  assert.equal((await entryOf(other, 'turn-old', otherId)).outcome.status, 'completed');
});

test('recover() reconciles a write the LEDGER settled at its deadline, and never touches a write in flight', async () => {
  const key = sessionKey('deadline');
  const bare = new Ledger({ baseUrl: server.baseUrl, token: server.token });
  const write = async (mutationId, deadlineSecs) => {
    await bare.approve({ sessionKey: key, logicalTurnId: 'turn-dl', mutationId, tool: TOOL });
    await bare.intent({ sessionKey: key, mutationId, attemptId: `${mutationId}-a1`, deadlineSecs });
    // the provider made the charge under its key; no settle ever comes (the host died)
    const k = await bare.idempotencyKey({ sessionKey: key, mutationId });
    await fetch(`${provider.url}/charges`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': k },
      body: JSON.stringify({ amount: 4200 }),
    }).catch(() => {});
  };
  await write('op-dead', 1);
  await write('op-running', 600);
  await sleep(3000);
  assert.equal((await entryOf(key, 'turn-dl', 'op-dead')).settled_by, 'ledger');
  // (this Ledger keeps what it sends, and every address it asks: the queue's item names the attempt,
  // so no history is read)
  const sent = [];
  const asked = [];
  const watching = (url, init) => {
    asked.push(String(url));
    if (String(url).endsWith('/reconciliation')) sent.push(JSON.parse(init.body));
    return fetch(url, init);
  };
  const recovering = new Ledger({ baseUrl: server.baseUrl, token: server.token, fetch: watching });
  const summary = await recovering.recover({ sessions: [key], checks: example.checks });
  assert.deepEqual([summary.completed, summary.items.length], [1, 1], JSON.stringify(summary));
  assert.equal(sent.length, 1);
  assert.deepEqual(Object.keys(sent[0].evidence).sort(), ['observed_at', 'provider_status', 'reference', 'source']);
  assert.equal(sent[0].evidence.provider_status, 'completed');
  assert.equal(sent[0].completed, true);
  assert.equal(sent[0].attempt_id, 'op-dead-a1');
  assert.deepEqual(asked.filter((u) => new URL(u).pathname.endsWith('/history')), []);
  const reconciled = (await history(server, key, 'op-dead')).changes.at(-1);
  assert.deepEqual([reconciled.kind, reconciled.attempt_id, reconciled.evidence.provider_status], ['reconciliation', 'op-dead-a1', 'completed']);
  const dead = await entryOf(key, 'turn-dl', 'op-dead');
  assert.equal(dead.outcome.status, 'completed');
  assert.equal(dead.established_by, 'status_check');
  const running = await entryOf(key, 'turn-dl', 'op-running');
  assert.equal(running.ledger_status, 'execution_started');
  assert.deepEqual((await history(server, key, 'op-running')).changes.map((c) => c.kind), ['approval', 'intent']);
});

test('the CLI: node dist/cli.js recover --checks examples/payments.mjs --session K prints the summary and exits 0', async () => {
  const key = sessionKey('cli');
  const id = await plainUnknown(key, 2500);
  const env = { ...process.env, PAYMENTS_URL: provider.url, BASE_URL: '', OUTCOMES_HOST_TOKEN: '' };
  const { stdout } = await run(
    process.execPath,
    ['dist/cli.js', 'recover', '--checks', './examples/payments.mjs', '--session', key, '--base-url', server.baseUrl, '--token', server.token],
    { cwd: pkgDir, env: { ...env, BASE_URL: server.baseUrl, OUTCOMES_HOST_TOKEN: server.token } },
  );
  const summary = JSON.parse(stdout);
  assert.deepEqual([summary.completed, summary.notAccepted, summary.inconclusive, summary.errors, summary.skipped], [1, 0, 0, 0, 0]);
  assert.equal((await entryOf(key, 'turn-old', id)).established_by, 'status_check');
  // a usage error exits 2
  const usage = await run(process.execPath, ['dist/cli.js', 'recover', '--checks', './examples/payments.mjs'], { cwd: pkgDir, env }).catch((e) => e);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--session KEY .* or --all/);
});

test("both adapters' status option: a tool call whose reply is lost ends completed by the provider's status; the model is told it took effect", async () => {
  const { generateText, tool, stepCountIs } = await import('ai');
  const { MockLanguageModelV3 } = await import('ai/test');
  const { Agent, run: runAgent, Usage, setTracingDisabled } = await import('@openai/agents');
  const { z } = await import('zod');
  const { protectTools } = await import('outcomes-ledger/ai-sdk');
  const { protectedTool } = await import('outcomes-ledger/openai-agents');
  setTracingDisabled(true);
  const key = sessionKey('adapters-status');
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token }); // no checks registered: the adapters' option
  const pay = async ({ amount }, op) => {
    const r = await fetch(`${provider.url}/charges`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': op.idempotencyKey },
      body: JSON.stringify({ amount }),
    });
    return r.json();
  };
  // AI SDK
  const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };
  const model = new MockLanguageModelV3({
    doGenerate: [
      { content: [{ type: 'tool-call', toolCallId: 'call_ai', toolName: 'charge', input: '{"amount":2700}' }], finishReason: { unified: 'tool-calls' }, usage, warnings: [] },
      { content: [{ type: 'text', text: 'ok' }], finishReason: { unified: 'stop' }, usage, warnings: [] },
    ],
  });
  const tools = protectTools(ledger, { sessionKey: key, logicalTurnId: 'turn-ai', statusDelayMs: 300 }, {
    charge: { ...tool({ description: 'Charge', inputSchema: z.object({ amount: z.number() }) }), execute: (input, options, op) => pay(input, op), status: example.chargeStatus },
  });
  assert.equal('status' in tools.charge, false, 'not passed on to the SDK');
  const result = await generateText({ model, tools, stopWhen: stepCountIs(2), prompt: 'charge' });
  const toolError = result.steps[0].content.find((p) => p.type === 'tool-error');
  assert.match(String(toolError.error.message), /took effect \(operation id call_ai\)/);
  assert.equal((await entryOf(key, 'turn-ai', 'call_ai')).established_by, 'status_check');
  // OpenAI Agents SDK
  const script = [
    [{ type: 'function_call', callId: 'call_oa', name: 'charge', arguments: '{"amount":2800}', status: 'completed' }],
    [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }],
  ];
  const agentModel = { async getResponse() { return { usage: new Usage(), output: script.shift() }; }, async *getStreamedResponse() { throw new Error('not scripted'); } };
  const charge = protectedTool(ledger, { sessionKey: key, logicalTurnId: 'turn-oa', statusDelayMs: 300 }, {
    name: 'charge',
    description: 'Charge',
    parameters: z.object({ amount: z.number() }),
    execute: (input, runContext, details, op) => pay(input, op),
    status: example.chargeStatus,
  });
  const agentRun = await runAgent(new Agent({ name: 'payer', model: agentModel, tools: [charge] }), 'charge');
  const output = agentRun.newItems.find((i) => i.type === 'tool_call_output_item');
  assert.match(JSON.stringify(output.rawItem), /took effect \(operation id call_oa\)/);
  const entry = await entryOf(key, 'turn-oa', 'call_oa');
  assert.equal(entry.outcome.status, 'completed');
  assert.equal(entry.established_by, 'status_check');
  assert.equal(ledger.statusChecks.charge, example.chargeStatus, 'registered for recover()');
});
