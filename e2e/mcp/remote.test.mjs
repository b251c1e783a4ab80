// `outcomes mcp-proxy --url` (issue 42 step 1): the proxy in front of a remote MCP server over Streamable
// HTTP, the client side stdio. The real "everything" server (@modelcontextprotocol/server-everything) in
// its `streamableHttp` mode (express + the official SDK's StreamableHTTPServerTransport, SSE answers), one
// per test on a port of its own; the official MCP TypeScript SDK's client over stdio to the proxy, and its
// StreamableHTTPClientTransport for the direct comparison. The rules are docs/mcp-proxy.md's "Remote
// servers (Streamable HTTP)".
//
// A 401 from the server: server-everything has no authentication of its own, so `authGate` puts a
// bearer-token check in front of it (as a reverse proxy or an API gateway does); the whole status table is
// the Rust unit test `the_status_table`.
//
// Run by scripts/test.sh (`node --test e2e/mcp/`). Alone, against a server of your own:
//   OUTCOMES_HOST_TOKEN=t target/debug/outcomes serve --addr 127.0.0.1:3350 --data-dir "$(mktemp -d)" &
//   BASE_URL=http://127.0.0.1:3350 OUTCOMES_HOST_TOKEN=t OUTCOMES_BIN=target/debug/outcomes \
//     node --test e2e/mcp/remote.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  EVERYTHING_NAME, base, close, closedPort, connect, everythingHttp, forwarder, ledgerOf, outcomesBin, sessionKey, settledLedger, token, until,
} from './support.mjs';

const LONG = 'trigger-long-running-operation';
// Not annotated read-only by the server: protected by default.
const WRITE = 'toggle-simulated-logging';
const tool = (name) => `mcp__${EVERYTHING_NAME}__${name}`;

/**
 * An HTTP gate in front of 127.0.0.1:`port` that lets through only requests with `Authorization: Bearer
 * <secret>` (streamed both ways, SSE included) and answers every other one 401 with a JSON error, as an
 * API gateway does. `revoke()` makes it refuse every request from then on (a token revoked or expired
 * mid-session). `refused()`: how many requests it answered 401.
 */
async function authGate(port, secret) {
  let revoked = false;
  let refused = 0;
  const srv = createHttpServer((req, res) => {
    if (revoked || req.headers.authorization !== `Bearer ${secret}`) {
      refused += 1;
      req.resume();
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(JSON.stringify({ error: 'invalid_token' }));
      return;
    }
    const up = httpRequest({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}/mcp`,
    revoke: () => (revoked = true),
    refused: () => refused,
    close: () => {
      srv.closeAllConnections();
      return new Promise((r) => srv.close(r));
    },
  };
}

/** The proxy (`outcomes mcp-proxy --url <url>`) over stdio, connected with the SDK's client. */
function proxiedUrl({ session, url, proxyArgs = [], ledger = base, headers = [] }) {
  const args = ['mcp-proxy', '--server', ledger, '--session-key', session, ...proxyArgs, '--url', url, ...headers.flatMap((h) => ['--header', h])];
  const log = process.env.RUST_LOG ? { RUST_LOG: process.env.RUST_LOG } : {};
  return connect(outcomesBin, args, { env: { OUTCOMES_HOST_TOKEN: token, ...log } });
}

/**
 * A server and the proxy in front of it (`through`: a forwarder between them), the long-running tool
 * protected, the tools listed.
 */
async function start(label, { proxyArgs = [], ledger, through = false, env } = {}) {
  const server = await everythingHttp(undefined, env);
  const net = through ? await forwarder(server.port) : null;
  const session = sessionKey(label);
  const url = net ? net.url : server.url;
  const conn = await proxiedUrl({ session, url, proxyArgs: ['--protect', LONG, ...proxyArgs], ledger });
  await conn.client.listTools();
  return { server, net, session, conn };
}

async function stop({ server, net, conn }) {
  await close(conn);
  await net?.close();
  await server.kill('SIGTERM');
}

/** Calls the long-running tool (`seconds`, one progress step a second); resolves `started` at the first progress. */
function longCall(conn, seconds) {
  let firstProgress;
  const started = new Promise((r) => (firstProgress = r));
  const progress = [];
  const call = conn.client.callTool({ name: LONG, arguments: { duration: seconds, steps: seconds } }, undefined, {
    onprogress: (p) => {
      progress.push(p.progress);
      firstProgress();
    },
  });
  return { started, progress, call };
}

test('the tools listed through the proxy are the ones listed directly over Streamable HTTP', async () => {
  const s = await start('list');
  const direct = new Client({ name: 'outcomes-e2e', version: '1.0.0' });
  await direct.connect(new StreamableHTTPClientTransport(new URL(s.server.url)));
  try {
    const through = await s.conn.client.listTools();
    const straight = await direct.listTools();
    assert.deepEqual(through, straight);
    assert.ok(through.tools.some((t) => t.name === WRITE));
    assert.deepEqual(s.conn.client.getServerVersion(), direct.getServerVersion());
  } finally {
    await direct.close();
    await stop(s);
  }
});

test('a write is recorded completed; a read-only call is not recorded; the session is ended with DELETE', async () => {
  const s = await start('write');
  try {
    const res = await s.conn.client.callTool({ name: WRITE, arguments: {} });
    assert.notEqual(res.isError, true);
    assert.match(res.content[0].text, /logging/i);
    const echoed = await s.conn.client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    assert.equal(echoed.content[0].text, 'Echo: hi');
    const l = await settledLedger(s.session, 1);
    assert.equal(l.records[0].tool, tool(WRITE));
    assert.equal(l.records[0].status, 'completed');
    assert.deepEqual(
      l.histories[l.records[0].mutation_id].changes.map((c) => c.kind),
      ['approval', 'intent', 'settlement'],
    );
    await close(s.conn);
    const exit = await s.conn.transport.exited;
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.match(s.server.log(), /Received session termination request/);
  } finally {
    await stop(s);
  }
});

test('the server\'s own messages (its GET stream) reach the client: the simulated log notifications', async () => {
  const s = await start('get-stream');
  try {
    await s.conn.client.callTool({ name: WRITE, arguments: {} });
    // One at once, then one every 5 s; not tied to a request, so they come on the GET stream.
    const logged = await until(
      'a notifications/message from the server',
      async () => s.conn.transport.rawMessages().find((m) => m.method === 'notifications/message'),
      8_000,
    );
    assert.match(logged.params.data, /level.message - SessionId /);
    assert.match(s.server.log(), /Establishing new SSE stream for session/);
  } finally {
    await stop(s);
  }
});

test('progress notifications of a protected call (SSE events) reach the client; recorded completed', async () => {
  const s = await start('progress');
  try {
    const progress = [];
    const res = await s.conn.client.callTool({ name: LONG, arguments: { duration: 1, steps: 4 } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    assert.equal(res.content[0].text, 'Long running operation completed. Duration: 1 seconds, Steps: 4.');
    const callId = s.conn.transport.requestId('tools/call');
    const progressToken = s.conn.transport.sent.find((m) => m.id === callId).params._meta.progressToken;
    const forCall = s.conn.transport
      .rawMessages()
      .filter((m) => m.id === callId || m.params?.progressToken === progressToken)
      .map((m) => (m.id === callId ? 'answer' : `${m.method} ${m.params.progress}/${m.params.total}`));
    assert.deepEqual(forCall, [1, 2, 3, 4].map((i) => `notifications/progress ${i}/4`).concat('answer'));
    const l = await settledLedger(s.session, 1);
    assert.equal(l.records[0].tool, tool(LONG));
    assert.equal(l.records[0].status, 'completed');
  } finally {
    await stop(s);
  }
});

test('the server killed mid-call (its SSE answer cut): the client gets an error, recorded outcome_unknown', async () => {
  const s = await start('kill');
  try {
    let firstProgress;
    const started = new Promise((r) => (firstProgress = r));
    const call = s.conn.client
      .callTool({ name: LONG, arguments: { duration: 30, steps: 30 } }, undefined, { onprogress: () => firstProgress() })
      .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    await started;
    const inFlight = await ledgerOf(s.session);
    assert.deepEqual(inFlight.entries.map((e) => e.ledger_status), ['execution_started']);
    await s.server.kill('SIGKILL');
    const err = await call;
    assert.ok(err instanceof McpError, `${err}`);
    assert.equal(err.code, -32000);
    assert.match(err.message, /outcome is unknown/);
    assert.equal(err.data.outcome, 'outcome_unknown');
    const l = await settledLedger(s.session, 1);
    assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
    assert.equal(l.records[0].status, 'outcome_unknown');
    assert.equal(err.data.operation_id, l.records[0].mutation_id);
  } finally {
    await stop(s);
  }
});

test('the connection cut mid SSE answer, the server still running: resumed with Last-Event-ID, the answer arrives, recorded completed', async () => {
  // server-everything's event store replays the events stored after Last-Event-ID but registers the
  // resumed stream under an event id instead of its stream id, so events stored after the replay never
  // reach it: the connection is held until the tool has finished (its answer stored), then cut.
  const s = await start('resume', { through: true });
  try {
    const { started, progress, call } = longCall(s.conn, 2);
    await started;
    s.net.hold();
    await new Promise((r) => setTimeout(r, 3_000));
    s.net.cut();
    const res = await call;
    assert.equal(res.content[0].text, 'Long running operation completed. Duration: 2 seconds, Steps: 2.');
    // What the proxy wrote to the client: each progress event once, in order, then the answer (the
    // replay after Last-Event-ID repeats none). The SDK's client may report the last progress as late
    // when it is read with the answer (as in the progress test), so the raw lines are compared.
    assert.equal(progress[0], 1);
    const callId = s.conn.transport.requestId('tools/call');
    const progressToken = s.conn.transport.sent.find((m) => m.id === callId).params._meta.progressToken;
    const forCall = s.conn.transport
      .rawMessages()
      .filter((m) => m.id === callId || m.params?.progressToken === progressToken)
      .map((m) => (m.id === callId ? 'answer' : `${m.method} ${m.params.progress}/${m.params.total}`));
    assert.deepEqual(forCall, ['notifications/progress 1/2', 'notifications/progress 2/2', 'answer']);
    const l = await settledLedger(s.session, 1);
    assert.equal(l.records[0].status, 'completed');
    assert.equal(s.conn.transport.rawResponseCount(s.conn.transport.requestId('tools/call')), 1);
  } finally {
    await stop(s);
  }
});

test('the connection cut mid SSE answer and the server no longer reachable: the client gets an error, recorded outcome_unknown', async () => {
  const s = await start('cut', { through: true });
  try {
    const { started, call } = longCall(s.conn, 5);
    await started;
    await s.net.close();
    const err = await call.then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    assert.equal(err.code, -32000);
    assert.match(err.message, /event stream .* cut before the answer.*Last-Event-ID failed.*outcome is unknown/);
    const l = await settledLedger(s.session, 1);
    assert.equal(l.records[0].status, 'outcome_unknown');
  } finally {
    await stop(s);
  }
});

test('SIGTERM to the proxy mid-call: the call recorded outcome_unknown, the session ended with DELETE, exit 128 + 15', async () => {
  const s = await start('sigterm');
  try {
    const { started, call } = longCall(s.conn, 30);
    await started;
    process.kill(s.conn.transport.pid, 'SIGTERM');
    const err = await call.then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    assert.ok(err instanceof McpError, `${err}`);
    assert.deepEqual(await s.conn.transport.exited, { code: 143, signal: null });
    const l = await settledLedger(s.session, 1);
    assert.equal(l.records[0].status, 'outcome_unknown');
    await until('the session ended', async () => /Received session termination request/.test(s.server.log()), 5_000);
  } finally {
    await stop(s);
  }
});

test('an answer over --max-line-bytes + 64 KiB is not read: the client gets an error, recorded outcome_unknown; the session goes on', async () => {
  // get-env answers the server's environment: 100 KB in one variable makes its answer (one SSE event)
  // longer than 1024 + 65536 bytes. Smaller answers over 1024 (tools/list) pass unread, as long lines.
  const s = await start('over-limit', { env: { OUTCOMES_E2E_BIG: 'x'.repeat(100_000) }, proxyArgs: ['--max-line-bytes', '1024', '--protect', 'get-env'] });
  try {
    const err = await s.conn.client.callTool({ name: 'get-env', arguments: {} }).then(
      (r) => assert.fail(`answered ${JSON.stringify(r).length} bytes`),
      (e) => e,
    );
    assert.equal(err.code, -32000);
    assert.match(err.message, /over --max-line-bytes \(1024 bytes\).*outcome is unknown/);
    const echoed = await s.conn.client.callTool({ name: 'echo', arguments: { message: 'after' } });
    assert.equal(echoed.content[0].text, 'Echo: after');
    // The initialize and tools/list answers (over 1024 bytes) passed unread: the server name is the
    // URL's host, and echo, not learned read-only, is recorded too ("Long lines").
    const l = await settledLedger(s.session, 2);
    assert.deepEqual(
      l.records.map((r) => [r.tool, r.status]),
      [['mcp__127.0.0.1__get-env', 'outcome_unknown'], ['mcp__127.0.0.1__echo', 'completed']],
    );
    assert.equal(l.records[0].mutation_id, err.data.operation_id);
  } finally {
    await stop(s);
  }
});

test('the server gone between calls (connection refused): not sent, recorded not_executed; restarted without the session (HTTP 400): not_executed', async () => {
  const s = await start('refused');
  try {
    await s.server.kill('SIGKILL');
    const refused = await s.conn.client.callTool({ name: WRITE, arguments: {} }).then(
      (r) => assert.fail(`answered ${JSON.stringify(r)}`),
      (e) => e,
    );
    assert.ok(refused instanceof McpError, `${refused}`);
    assert.equal(refused.code, -32012);
    assert.match(refused.message, /cannot connect .* NOT execute/);
    assert.equal(refused.data.tool_called, false);
    // The same port, a new process: it does not know the proxy's session and answers 400.
    s.server = await everythingHttp(s.server.port);
    const unknown = await s.conn.client.callTool({ name: WRITE, arguments: {} }).then(
      (r) => assert.fail(`answered ${JSON.stringify(r)}`),
      (e) => e,
    );
    assert.equal(unknown.code, -32012);
    assert.equal(unknown.data.http_status, 400);
    assert.match(unknown.message, /HTTP 400 Bad Request/);
    const l = await settledLedger(s.session, 2);
    assert.deepEqual(l.records.map((r) => r.status), ['not_executed', 'not_executed']);
    assert.deepEqual(l.records.map((r) => r.mutation_id), [refused.data.operation_id, unknown.data.operation_id]);
  } finally {
    await stop(s);
  }
});

test('the server answers 401 (a wrong or missing --header token): the client is told the URL and the status; nothing is left in flight', async () => {
  const server = await everythingHttp();
  const gate = await authGate(server.port, 'right-token');
  const fails = async (session, headers) => {
    const conn = proxiedUrl({ session, url: gate.url, headers });
    return conn.then(
      async (c) => {
        await close(c);
        assert.fail('the handshake passed the gate');
      },
      (e) => e,
    );
  };
  try {
    // No token, and a wrong one: the handshake itself is refused, nothing reaches the server, and the
    // error names the server's URL and the status (the SDK's connect wraps the proxy's -32012 answer).
    for (const headers of [[], ['Authorization: Bearer wrong-token']]) {
      const session = sessionKey('401-handshake');
      const err = await fails(session, headers);
      assert.match(err.message, new RegExp(`${gate.url.replace(/[.]/g, '\\.')} answered HTTP 401 Unauthorized`), err.message);
      assert.match(err.message, /did NOT execute/);
      assert.equal(await ledgerOf(session), null, 'nothing recorded for a handshake');
    }
    assert.ok(gate.refused() >= 2);
    assert.doesNotMatch(server.log(), /Received MCP POST request/, 'no request passed the gate');

    // The right token, then revoked mid-session: the protected call is refused before the server read
    // it, so it is recorded not_executed (settled at once, never left in flight); the read-only call gets
    // the same error and records nothing.
    const session = sessionKey('401-revoked');
    const conn = await proxiedUrl({ session, url: gate.url, headers: ['Authorization: Bearer right-token'] });
    try {
      await conn.client.listTools();
      const ok = await conn.client.callTool({ name: WRITE, arguments: {} });
      assert.notEqual(ok.isError, true);
      gate.revoke();
      const posts = server.posts();
      const err = await conn.client.callTool({ name: WRITE, arguments: {} }).then(
        (r) => assert.fail(`answered ${JSON.stringify(r)}`),
        (e) => e,
      );
      assert.ok(err instanceof McpError, `${err}`);
      assert.equal(err.code, -32012);
      assert.ok(err.message.includes(`the MCP server at ${gate.url} answered HTTP 401 Unauthorized`), err.message);
      assert.match(err.message, /did NOT execute this request \(operation op-/);
      assert.equal(err.data.http_status, 401);
      assert.equal(err.data.tool_called, false);
      const read = await conn.client.callTool({ name: 'echo', arguments: { message: 'x' } }).then(
        (r) => assert.fail(`answered ${JSON.stringify(r)}`),
        (e) => e,
      );
      assert.equal(read.code, -32012);
      assert.equal(read.data.http_status, 401);
      assert.equal(read.data.operation_id, undefined, 'a read-only call has no operation');
      assert.equal(server.posts(), posts, 'nothing reached the server after the revocation');
      const l = await settledLedger(session, 2);
      assert.deepEqual(l.records.map((r) => r.status), ['completed', 'not_executed']);
      assert.equal(l.records[1].mutation_id, err.data.operation_id);
      // A cancellation takes the entry back to `approved` (no attempt in flight; docs/ledger.md), published
      // not_executed: nothing execution_started is left for the ledger's deadline to settle unknown.
      assert.deepEqual(l.entries.map((e) => e.ledger_status), ['completed', 'approved']);
      assert.deepEqual(
        l.histories[err.data.operation_id].changes.map((c) => c.kind),
        ['approval', 'intent', 'cancellation'],
      );
    } finally {
      await close(conn);
    }
  } finally {
    await gate.close();
    await server.kill('SIGTERM');
  }
});

test('the ledger down: the protected call is refused and NOT sent to the server; a read-only one is', async () => {
  const s = await start('ledger-down', { ledger: `http://127.0.0.1:${await closedPort()}` });
  try {
    const before = s.server.posts();
    const err = await s.conn.client.callTool({ name: WRITE, arguments: {} }).then(
      (r) => assert.fail(`answered ${JSON.stringify(r)}`),
      (e) => e,
    );
    assert.equal(err.code, -32010);
    assert.equal(err.data.tool_called, false);
    const echoed = await s.conn.client.callTool({ name: 'echo', arguments: { message: 'still' } });
    assert.equal(echoed.content[0].text, 'Echo: still');
    // The server's log line of the read-only call's POST (written before it answered) read, exactly one
    // POST came after the refused call's: none for it.
    await until('the POST of the read-only call logged', async () => s.server.posts() > before);
    assert.equal(s.server.posts(), before + 1, 'one POST, for the read-only call only');
  } finally {
    await stop(s);
  }
});

test('32 concurrent protected calls over one session: each answered, each recorded once', async () => {
  const s = await start('concurrent');
  try {
    const results = await Promise.all(Array.from({ length: 32 }, () => s.conn.client.callTool({ name: WRITE, arguments: {} })));
    assert.equal(results.filter((r) => r.isError !== true).length, 32);
    const l = await settledLedger(s.session, 32);
    assert.equal(l.records.filter((r) => r.status === 'completed').length, 32);
    assert.equal(new Set(l.records.map((r) => r.mutation_id)).size, 32);
  } finally {
    await stop(s);
  }
});
