// `outcomes mcp-proxy` in front of the real "everything" MCP server (@modelcontextprotocol/server-everything),
// driven by the official MCP TypeScript SDK's client, with its long-running tool (progress notifications, a
// duration in seconds): progress still reaches the client, and what the proxy did not see is recorded
// outcome_unknown, never guessed: the child killed mid-call, the client's cancellation, a call past
// --call-timeout-secs (then reconciled by the server's late success). The tool is annotated read-only, so
// the tests protect it with --protect. The rules are docs/mcp-proxy.md's.
//
// Run by scripts/test.sh (`node --test e2e/mcp/`). Alone, against a server of your own:
//   OUTCOMES_HOST_TOKEN=t target/debug/outcomes serve --addr 127.0.0.1:3350 --data-dir "$(mktemp -d)" &
//   BASE_URL=http://127.0.0.1:3350 OUTCOMES_HOST_TOKEN=t OUTCOMES_BIN=target/debug/outcomes \
//     node --test e2e/mcp/everything.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { CreateMessageRequestSchema, ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  EVERYTHING_NAME, childrenOf, close, everythingEntry, ledgerOf, proxied, sessionKey, settledLedger,
} from './support.mjs';

const LONG = 'trigger-long-running-operation';
const LONG_TOOL = `mcp__${EVERYTHING_NAME}__${LONG}`;

/** The proxy in front of the everything server, the long-running tool protected; the tools listed first. */
async function start(label, proxyArgs = [], opts = {}) {
  const session = sessionKey(label);
  const conn = await proxied({ session, server: everythingEntry, proxyArgs: ['--protect', LONG, ...proxyArgs], ...opts });
  await conn.client.listTools();
  return { session, conn };
}

const kinds = (l, id) => l.histories[id].changes.map((c) => c.kind);

test('progress notifications of a protected call reach the client; the call is recorded completed', async () => {
  const { session, conn } = await start('progress');
  try {
    const progress = [];
    const res = await conn.client.callTool({ name: LONG, arguments: { duration: 1, steps: 4 } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    assert.equal(res.content[0].text, 'Long running operation completed. Duration: 1 seconds, Steps: 4.');
    // What the proxy wrote to the client: the 4 notifications, in order, then the answer.
    const callId = conn.transport.requestId('tools/call');
    const token = conn.transport.sent.find((m) => m.id === callId).params._meta.progressToken;
    const forCall = conn.transport
      .rawMessages()
      .filter((m) => m.id === callId || m.params?.progressToken === token)
      .map((m) => (m.id === callId ? 'answer' : `${m.method} ${m.params.progress}/${m.params.total}`));
    assert.deepEqual(forCall, [1, 2, 3, 4].map((i) => `notifications/progress ${i}/4`).concat('answer'));
    // The SDK's client runs notification handlers a microtask after a response read in the same chunk, so
    // the last one may come after the answer and be reported as for an unknown token (the same directly).
    assert.deepEqual(progress.slice(0, 3), [1, 2, 3].map((i) => ({ progress: i, total: 4 })));
    const late = (e) => String(e).startsWith('Error: Received a progress notification for an unknown token') && /"progress":4,/.test(String(e));
    assert.equal(progress.length + conn.errors.filter(late).length, 4);
    conn.errors.splice(0, conn.errors.length, ...conn.errors.filter((e) => !late(e)));
    // A read-only tool on the same server: no record.
    const echoed = await conn.client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    assert.equal(echoed.content[0].text, 'Echo: hi');
    const l = await settledLedger(session, 1);
    assert.equal(l.records[0].tool, LONG_TOOL);
    assert.equal(l.records[0].status, 'completed');
    assert.deepEqual(kinds(l, l.records[0].mutation_id), ['approval', 'intent', 'settlement']);
    assert.deepEqual(conn.errors, []);
  } finally {
    await close(conn);
  }
});

test('the child killed mid-call: the client gets an error, the proxy ends with its status, recorded outcome_unknown', async () => {
  const { session, conn } = await start('kill');
  let firstProgress;
  const started = new Promise((r) => (firstProgress = r));
  const call = conn.client
    .callTool({ name: LONG, arguments: { duration: 30, steps: 30 } }, undefined, { onprogress: () => firstProgress() })
    .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
  await started; // the server is inside the tool
  // Approve + intent were recorded before the call was forwarded: in flight now.
  const inFlight = await ledgerOf(session);
  assert.deepEqual(inFlight.entries.map((e) => e.ledger_status), ['execution_started']);
  assert.equal(inFlight.records[0].status, 'outcome_unknown');
  const kids = await childrenOf(conn.transport.pid);
  assert.equal(kids.length, 1, `children of the proxy ${conn.transport.pid}: ${kids}`);
  const cmdline = (await readFile(`/proc/${kids[0]}/cmdline`, 'utf8')).split('\0');
  assert.ok(cmdline.includes(everythingEntry), cmdline.join(' '));
  process.kill(kids[0], 'SIGKILL');

  const err = await call;
  assert.ok(err instanceof McpError, `${err}`);
  const exit = await conn.transport.exited;
  // The child's status: killed by SIGKILL, 128 + 9 (docs/mcp-proxy.md "Failure behaviour").
  assert.deepEqual(exit, { code: 137, signal: null });
  const l = await settledLedger(session, 1);
  assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
  assert.equal(l.records[0].status, 'outcome_unknown');
  assert.equal(l.records[0].tool, LONG_TOOL);
  assert.equal('reason' in l.records[0], false);
  assert.deepEqual(kinds(l, l.records[0].mutation_id), ['approval', 'intent', 'settlement']);
  await close(conn);
});

test('a protected call longer than its deadline stays in flight while the proxy extends it, then completes', async () => {
  // docs/api.md "Deadlines": the proxy records each intent with --deadline-secs and extends it every third
  // of it while the call waits: a live proxy keeps a long call in flight.
  const { session, conn } = await start('extended', ['--deadline-secs', '3']);
  try {
    const call = conn.client.callTool({ name: LONG, arguments: { duration: 8, steps: 8 } });
    await new Promise((r) => setTimeout(r, 5_000)); // past the first deadline
    const running = await ledgerOf(session);
    assert.deepEqual(running.entries.map((e) => e.ledger_status), ['execution_started']);
    assert.equal(running.entries[0].settled_by, null);
    const res = await call;
    assert.equal(res.content[0].text, 'Long running operation completed. Duration: 8 seconds, Steps: 8.');
    const l = await settledLedger(session, 1);
    assert.equal(l.entries[0].ledger_status, 'completed');
    assert.equal(l.entries[0].settled_by, 'host');
    // Extensions take no revision and leave no history row.
    assert.deepEqual(kinds(l, l.records[0].mutation_id), ['approval', 'intent', 'settlement']);
  } finally {
    await close(conn);
  }
});

test('the proxy killed -9 mid-call: the ledger settles the call outcome_unknown at its deadline', async () => {
  const { session, conn } = await start('proxy-killed', ['--deadline-secs', '3']);
  let firstProgress;
  const started = new Promise((r) => (firstProgress = r));
  const call = conn.client
    .callTool({ name: LONG, arguments: { duration: 30, steps: 30 } }, undefined, { onprogress: () => firstProgress() })
    .catch((e) => e);
  await started;
  const kids = await childrenOf(conn.transport.pid);
  const killedAt = Date.now();
  process.kill(conn.transport.pid, 'SIGKILL');
  for (const k of kids) process.kill(k, 'SIGKILL');
  await call;
  // Nobody settles it: the ledger does, within about the deadline (3 s) and its sweep.
  const l = await settledLedger(session, 1, () => true, 10_000);
  assert.ok(Date.now() - killedAt < 9_000, `${Date.now() - killedAt} ms`);
  assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
  assert.equal(l.entries[0].settled_by, 'ledger');
  assert.equal(l.records[0].reason, 'execution_timeout');
  const changes = l.histories[l.records[0].mutation_id].changes;
  assert.deepEqual(changes.map((c) => [c.kind, c.actor]), [['approval', 'host'], ['intent', 'host'], ['settlement', 'ledger']]);
  await close(conn);
});

test("the client's cancellation (notifications/cancelled) mid-call is recorded outcome_unknown", async () => {
  const { session, conn } = await start('cancel');
  try {
    const abort = new AbortController();
    const call = conn.client
      .callTool({ name: LONG, arguments: { duration: 30, steps: 30 } }, undefined, {
        onprogress: () => abort.abort('the user stopped it'),
        signal: abort.signal,
      })
      .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    const err = await call;
    assert.match(String(err), /the user stopped it/);
    assert.equal(conn.transport.sent.filter((m) => m.method === 'notifications/cancelled').length, 1);
    const l = await settledLedger(session, 1);
    assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
    assert.equal(l.records[0].status, 'outcome_unknown');
    assert.equal('reason' in l.records[0], false);
    // The proxy and its server still answer after the cancelled call.
    const echoed = await conn.client.callTool({ name: 'echo', arguments: { message: 'still here' } });
    assert.equal(echoed.content[0].text, 'Echo: still here');
  } finally {
    await close(conn);
  }
});

test('a call past --call-timeout-secs: an error naming the operation id, outcome_unknown execution_timeout, then reconciled completed by the late success', async () => {
  const { session, conn } = await start('timeout', ['--call-timeout-secs', '2']);
  try {
    // The server answers after 6 s; the proxy gives up after 2 s.
    const err = await conn.client
      .callTool({ name: LONG, arguments: { duration: 6, steps: 2 } })
      .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    assert.ok(err instanceof McpError, `${err}`);
    const callId = conn.transport.requestId('tools/call');

    const unknown = await settledLedger(session, 1);
    const id = unknown.records[0].mutation_id;
    assert.ok(err.message.includes(id), `the error names the operation id ${id}: ${err.message}`);
    // docs/mcp-proxy.md "Outcome rules": -32001 (the MCP SDKs' request timeout) with the operation id.
    assert.equal(err.code, -32001);
    assert.deepEqual(err.data, { operation_id: id, outcome: 'outcome_unknown', reason: 'execution_timeout' });
    assert.match(err.message, /the outcome is unknown/);
    assert.equal(unknown.entries[0].ledger_status, 'outcome_unknown');
    assert.equal(unknown.records[0].status, 'outcome_unknown');
    assert.equal(unknown.records[0].reason, 'execution_timeout');
    assert.equal(unknown.records[0].tool, LONG_TOOL);

    const done = await settledLedger(session, 1, (l) => l.entries[0].ledger_status === 'completed', 20_000);
    assert.equal(done.records[0].mutation_id, id);
    assert.equal(done.records[0].status, 'completed');
    assert.equal('reason' in done.records[0], false);
    const changes = done.histories[id].changes;
    assert.deepEqual(changes.map((c) => c.kind), ['approval', 'intent', 'settlement', 'reconciliation']);
    assert.equal(changes[2].ledger_status, 'outcome_unknown');
    assert.equal(changes[2].reason, 'execution_timeout');
    const { evidence } = changes[3];
    assert.equal(evidence.source, 'mcp-late-answer');
    assert.equal(evidence.reference, `${EVERYTHING_NAME} request ${callId}`);
    assert.ok(!Number.isNaN(Date.parse(evidence.observed_at)), evidence.observed_at);

    // The late answer was evidence only: not forwarded (the SDK would report an unknown message id).
    const echoed = await conn.client.callTool({ name: 'echo', arguments: { message: 'after' } });
    assert.equal(echoed.content[0].text, 'Echo: after');
    assert.deepEqual(conn.errors.map(String), []);
    assert.equal(conn.transport.rawResponseCount(callId), 1);
  } finally {
    await close(conn);
  }
});

test('sampling and elicitation requests from the server reach the client through the proxy and its answers go back; both calls recorded completed', async () => {
  const asked = [];
  const { session, conn } = await start('server-requests', [], {
    capabilities: { sampling: {}, elicitation: {} },
    setup: (client) => {
      client.setRequestHandler(CreateMessageRequestSchema, (req) => {
        asked.push(req.method);
        return { model: 'scripted-model', role: 'assistant', content: { type: 'text', text: `scripted answer to ${req.params.messages[0].content.text}` } };
      });
      client.setRequestHandler(ElicitRequestSchema, (req) => {
        asked.push(req.method);
        return { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
      });
    },
  });
  try {
    const sampled = await conn.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 5 } });
    assert.notEqual(sampled.isError, true);
    assert.match(sampled.content[0].text, /scripted answer to Resource trigger-sampling-request context: hello/);
    const elicited = await conn.client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    assert.notEqual(elicited.isError, true);
    assert.equal(elicited.content[1].text, 'User inputs:\n- Name: Ada Lovelace\n- Agreed to terms: true');
    assert.deepEqual(asked, ['sampling/createMessage', 'elicitation/create']);
    const l = await settledLedger(session, 2);
    assert.deepEqual(
      l.records.map((r) => [r.tool, r.status]),
      [
        [`mcp__${EVERYTHING_NAME}__trigger-sampling-request`, 'completed'],
        [`mcp__${EVERYTHING_NAME}__trigger-elicitation-request`, 'completed'],
      ],
    );
    assert.deepEqual(conn.errors, []);
  } finally {
    await close(conn);
  }
});

test('--metadata maps the result\'s structuredContent to the record (id, title); nothing else from tool output is published', async () => {
  const { session, conn } = await start('metadata', [
    '--protect', 'get-structured-content,get-sum',
    '--metadata', 'id=/temperature,title=/conditions',
  ]);
  try {
    const res = await conn.client.callTool({ name: 'get-structured-content', arguments: { location: 'Chicago' } });
    assert.deepEqual(res.structuredContent, { temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 });
    // No structuredContent: nothing attached.
    const sum = await conn.client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
    assert.equal(sum.structuredContent, undefined);
    const l = await settledLedger(session, 2, (x) => x.records[0].title !== null);
    assert.equal(l.records[0].tool, `mcp__${EVERYTHING_NAME}__get-structured-content`);
    assert.equal(l.records[0].status, 'completed');
    assert.equal(l.records[0].resource_id, '36');
    assert.equal(l.records[0].title, 'Light rain / drizzle');
    assert.equal(l.records[0].url, null);
    assert.deepEqual(
      l.histories[l.records[0].mutation_id].changes.map((c) => c.kind),
      ['approval', 'intent', 'settlement', 'metadata'],
    );
    assert.equal(l.records[1].tool, `mcp__${EVERYTHING_NAME}__get-sum`);
    assert.deepEqual([l.records[1].status, l.records[1].resource_id, l.records[1].url, l.records[1].title], ['completed', null, null, null]);
  } finally {
    await close(conn);
  }
});

test('SIGTERM to the proxy mid-call: passed on to the child, the call recorded outcome_unknown, the proxy ends with the child\'s status', async () => {
  const { session, conn } = await start('sigterm');
  let firstProgress;
  const started = new Promise((r) => (firstProgress = r));
  const call = conn.client
    .callTool({ name: LONG, arguments: { duration: 30, steps: 30 } }, undefined, { onprogress: () => firstProgress() })
    .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
  await started;
  const [child] = await childrenOf(conn.transport.pid);
  process.kill(conn.transport.pid, 'SIGTERM');
  assert.ok((await call) instanceof McpError);
  // Node ends on SIGTERM by the signal: 128 + 15.
  assert.deepEqual(await conn.transport.exited, { code: 143, signal: null });
  await assert.rejects(readFile(`/proc/${child}/stat`), { code: 'ENOENT' }); // the child is gone too
  const l = await settledLedger(session, 1);
  assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
  assert.equal('reason' in l.records[0], false);
  await close(conn);
});

test('the client closes stdin with a call in flight: the server finishes it, the answer settles it completed, the proxy exits 0', async () => {
  const { session, conn } = await start('stdin-closed');
  let firstProgress;
  const started = new Promise((r) => (firstProgress = r));
  const call = conn.client
    .callTool({ name: LONG, arguments: { duration: 2, steps: 2 } }, undefined, { onprogress: () => firstProgress() })
    .then((r) => r, (e) => e);
  await started;
  conn.transport.child.stdin.end(); // what a client does to stop a stdio server
  assert.deepEqual(await conn.transport.exited, { code: 0, signal: null });
  const answer = await call;
  assert.equal(answer.content?.[0]?.text, 'Long running operation completed. Duration: 2 seconds, Steps: 2.', `${answer}`);
  const l = await settledLedger(session, 1);
  assert.equal(l.entries[0].ledger_status, 'completed');
  await close(conn);
});
