// `outcomes mcp-proxy --listen` (issue 42 step 2): the proxy serves MCP Streamable HTTP to its clients,
// one upstream session per client session, in front of (a) the real "everything" server
// (@modelcontextprotocol/server-everything) over stdio, a child per client session, and (b) the same
// server in its `streamableHttp` mode through `--url`. The client is the official MCP TypeScript SDK's
// StreamableHTTPClientTransport. The rules are docs/mcp-proxy.md's "Clients by URL (--listen)".
//
// Run by scripts/test.sh (`node --test e2e/mcp/`). Alone, against a server of your own:
//   OUTCOMES_HOST_TOKEN=t target/debug/outcomes serve --addr 127.0.0.1:3350 --data-dir "$(mktemp -d)" &
//   BASE_URL=http://127.0.0.1:3350 OUTCOMES_HOST_TOKEN=t OUTCOMES_BIN=target/debug/outcomes \
//     node --test e2e/mcp/listen.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  EVERYTHING_NAME, base, childrenOf, closedPort, direct, everythingEntry, everythingHttp, forwarder, ledgerOf, ledgerServer, outcomesBin, sessionKey, settledLedger, token,
  until,
} from './support.mjs';

const LONG = 'trigger-long-running-operation';
// Not annotated read-only by the server: protected by default.
const WRITE = 'toggle-simulated-logging';
const tool = (name) => `mcp__${EVERYTHING_NAME}__${name}`;
const TOKEN_HEADER = 'X-Outcomes-Proxy-Token';

/**
 * `outcomes mcp-proxy --server <ledger: BASE_URL> --listen 127.0.0.1:0 <proxyArgs> <upstream>`; resolves once it
 * printed the URL it listens on. Returns {url, pid, stderr(), ledgerSessions() (the ledger session of
 * each client session, from its stderr), kill(signal = SIGTERM), exited}.
 */
async function listening({ proxyArgs = [], upstream, listen = '127.0.0.1:0', ledger = base }) {
  const args = ['mcp-proxy', '--server', ledger, '--listen', listen, ...proxyArgs, ...upstream];
  const log = process.env.RUST_LOG ? { RUST_LOG: process.env.RUST_LOG } : {};
  const child = spawn(outcomesBin, args, { env: { ...process.env, OUTCOMES_HOST_TOKEN: token, ...log }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c) => (err += c.toString('utf8')));
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const url = await until(
    'the proxy listening',
    async () => err.match(/listening on (http:\/\/\S+)/)?.[1] ?? (child.exitCode !== null ? `exited: ${err}` : null),
    15_000,
  );
  assert.match(url, /^http:/, url);
  return {
    url,
    pid: child.pid,
    stderr: () => err,
    ledgerSessions: () => [...err.matchAll(/client session \S+: ledger session (\S+)/g)].map((m) => m[1]),
    kill: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    exited,
  };
}

/** The SDK's client over StreamableHTTPClientTransport to `url` (`headers`: on every request). */
async function client(url, headers = {}) {
  const c = new Client({ name: 'outcomes-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await c.connect(transport);
  return { client: c, transport };
}

/** The two upstreams of the proxy: a command (a child per client session), and a URL. */
const upstreams = {
  stdio: async () => ({ upstream: ['--', process.execPath, everythingEntry], stop: async () => {} }),
  url: async () => {
    const server = await everythingHttp();
    return { upstream: ['--url', server.url], server, stop: () => server.kill('SIGTERM') };
  },
};

for (const [kind, make] of Object.entries(upstreams)) {
  test(`${kind}: the tools listed through --listen are the direct ones; a write is recorded completed, a read-only call not; progress reaches the client`, async () => {
    const up = await make();
    const proxy = await listening({ proxyArgs: ['--protect', LONG], upstream: up.upstream });
    const straight = await direct(everythingEntry);
    let c;
    try {
      c = await client(proxy.url);
      assert.ok(c.transport.sessionId, 'the proxy gave a session id');
      const logged = [];
      c.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logged.push(n));
      const through = await c.client.listTools();
      assert.deepEqual(through, await straight.client.listTools());
      assert.deepEqual(c.client.getServerVersion(), straight.client.getServerVersion());

      const res = await c.client.callTool({ name: WRITE, arguments: {} });
      assert.notEqual(res.isError, true);
      assert.match(res.content[0].text, /logging/i);
      const echoed = await c.client.callTool({ name: 'echo', arguments: { message: 'hi' } });
      assert.equal(echoed.content[0].text, 'Echo: hi');

      const progress = [];
      const long = await c.client.callTool({ name: LONG, arguments: { duration: 2, steps: 2 } }, undefined, {
        onprogress: (p) => progress.push(p.progress),
      });
      assert.notEqual(long.isError, true);
      assert.deepEqual(progress, [1, 2]);
      // The server's own messages (the simulated log the write turned on, tied to no request): on the
      // GET stream.
      const message = await until('a notifications/message from the server', async () => logged[0], 8_000);
      assert.match(message.params.data, /level.message/);

      const [session] = proxy.ledgerSessions();
      assert.match(session, /^mcp-[0-9a-f]{12}$/);
      const l = await settledLedger(session, 2);
      assert.deepEqual(l.records.map((r) => [r.tool, r.status]), [
        [tool(WRITE), 'completed'],
        [tool(LONG), 'completed'],
      ]);
    } finally {
      await c?.transport.terminateSession().catch(() => {});
      await c?.client.close();
      await straight.client.close();
      await proxy.kill();
      await up.stop();
    }
  });
}

test('two clients at once get two upstream sessions and two ledger sessions', async () => {
  const proxy = await listening({ upstream: ['--', process.execPath, everythingEntry] });
  const [a, b] = await Promise.all([client(proxy.url), client(proxy.url)]);
  try {
    assert.notEqual(a.transport.sessionId, b.transport.sessionId);
    assert.equal((await childrenOf(proxy.pid)).length, 2, 'a child per client session');
    await Promise.all([a, b].map((c) => c.client.callTool({ name: WRITE, arguments: {} })));
    const keys = proxy.ledgerSessions();
    assert.equal(new Set(keys).size, 2, proxy.stderr());
    for (const k of keys) {
      const l = await settledLedger(k, 1);
      assert.equal(l.records[0].status, 'completed');
    }
  } finally {
    for (const c of [a, b]) await c.client.close();
    await proxy.kill();
  }
});

test('--session-key puts every client session in one ledger session', async () => {
  const session = sessionKey('listen-shared');
  const proxy = await listening({ proxyArgs: ['--session-key', session], upstream: ['--', process.execPath, everythingEntry] });
  const [a, b] = await Promise.all([client(proxy.url), client(proxy.url)]);
  try {
    await Promise.all([a, b].map((c) => c.client.callTool({ name: WRITE, arguments: {} })));
    const l = await settledLedger(session, 2);
    assert.equal(new Set(l.records.map((r) => r.mutation_id)).size, 2);
  } finally {
    for (const c of [a, b]) await c.client.close();
    await proxy.kill();
  }
});

for (const [kind, make] of Object.entries(upstreams)) {
  test(`${kind}: DELETE ends the client session: the upstream session ended, the call in flight settled outcome_unknown, the session id refused after`, async () => {
    const up = await make();
    const proxy = await listening({ proxyArgs: ['--protect', LONG], upstream: up.upstream });
    const c = await client(proxy.url);
    try {
      assert.equal((await childrenOf(proxy.pid)).length, kind === 'stdio' ? 1 : 0);
      let started;
      const first = new Promise((r) => (started = r));
      const call = c.client.callTool({ name: LONG, arguments: { duration: 30, steps: 30 } }, undefined, { onprogress: () => started() });
      await first;
      const id = c.transport.sessionId;
      await c.transport.terminateSession();
      const err = await call.then(
        () => assert.fail('the call was answered'),
        (e) => e,
      );
      assert.ok(err instanceof McpError, String(err));
      assert.match(err.message, /outcome is unknown/);
      await until('the child killed', async () => (await childrenOf(proxy.pid)).length === 0, 5_000);
      if (up.server) await until('the remote session ended', async () => /Received session termination request/.test(up.server.log()), 5_000);
      const [session] = proxy.ledgerSessions();
      const l = await settledLedger(session, 1);
      assert.equal(l.records[0].status, 'outcome_unknown');
      assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
      const after = await fetch(proxy.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': id },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      });
      assert.equal(after.status, 404);
    } finally {
      await c.client.close();
      await proxy.kill();
      await up.stop();
    }
  });
}

test('a listen address that is not loopback is refused at start without --listen-token', async () => {
  const child = spawn(outcomesBin, ['mcp-proxy', '--server', base, '--listen', '0.0.0.0:0', '--', process.execPath, everythingEntry], {
    env: { ...process.env, OUTCOMES_HOST_TOKEN: token },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (c) => (err += c.toString('utf8')));
  const code = await new Promise((r) => child.once('exit', r));
  assert.notEqual(code, 0);
  assert.match(err, /--listen 0\.0\.0\.0:0: not a loopback address.*--listen-token/s);
});

test('a browser page not on localhost is refused (Origin, 403); a localhost page is not', async () => {
  const proxy = await listening({ upstream: ['--', process.execPath, everythingEntry] });
  try {
    const init = (origin) => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', origin },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    const evil = await fetch(proxy.url, init('http://evil.example'));
    assert.equal(evil.status, 403);
    assert.equal((await childrenOf(proxy.pid)).length, 0, 'no upstream session was made');
    const local = await fetch(proxy.url, init('http://localhost:5173'));
    assert.equal(local.status, 200);
    assert.ok(local.headers.get('mcp-session-id'));
    await local.body?.cancel();
  } finally {
    await proxy.kill();
  }
});

/**
 * An HTTP forwarder to `target` that notes the headers of every request (the requests and answers passed
 * as streams, unchanged): what the server behind the proxy sees.
 */
async function headerTap(target) {
  const seen = [];
  const to = new URL(target);
  const srv = createHttpServer((req, res) => {
    seen.push(req.headers);
    const up = httpRequest({ host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}${to.pathname}`,
    seen,
    close: () => {
      srv.closeAllConnections();
      return new Promise((r) => srv.close(r));
    },
  };
}

test('with --listen-token a request without X-Outcomes-Proxy-Token gets 401; the token is not sent upstream', async () => {
  const server = await everythingHttp();
  const tap = await headerTap(server.url);
  const secret = `s3cret-${process.pid}`;
  const proxy = await listening({ proxyArgs: ['--listen-token', secret], upstream: ['--url', tap.url] });
  let c;
  try {
    const bare = new Client({ name: 'outcomes-e2e', version: '1.0.0' });
    await assert.rejects(bare.connect(new StreamableHTTPClientTransport(new URL(proxy.url))), /needs its --listen-token/);
    for (const headers of [{}, { [TOKEN_HEADER]: 'nope' }]) {
      const r = await fetch(proxy.url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });
      assert.equal(r.status, 401);
    }
    assert.equal(tap.seen.length, 0, 'nothing reached the server');
    c = await client(proxy.url, { [TOKEN_HEADER]: secret });
    const res = await c.client.callTool({ name: WRITE, arguments: {} });
    assert.notEqual(res.isError, true);
    assert.ok(tap.seen.length >= 2, 'the server saw the session');
    for (const h of tap.seen) {
      assert.equal(h['x-outcomes-proxy-token'], undefined);
      assert.ok(!JSON.stringify(h).includes(secret), JSON.stringify(h));
    }
    const [session] = proxy.ledgerSessions();
    assert.equal((await settledLedger(session, 1)).records[0].status, 'completed');
  } finally {
    await c?.client.close();
    await proxy.kill();
    await tap.close();
    await server.kill();
  }
});

test('read-only calls alone record nothing: the ledger does not know the session', async () => {
  const proxy = await listening({ upstream: ['--', process.execPath, everythingEntry] });
  const c = await client(proxy.url);
  try {
    // The annotations are learned from the tools list (an unlisted tool is recorded: docs/mcp-proxy.md).
    await c.client.listTools();
    assert.equal((await c.client.callTool({ name: 'echo', arguments: { message: 'x' } })).content[0].text, 'Echo: x');
    const [session] = proxy.ledgerSessions();
    assert.equal(await ledgerOf(session), null);
  } finally {
    await c.client.close();
    await proxy.kill();
  }
});

for (const [kind, make] of Object.entries(upstreams)) {
  test(`${kind}: the ledger killed (kill -9) while a protected call runs: the answer reaches the client, a new protected call is refused; after the restart the first is recorded completed, once`, async () => {
    const up = await make();
    const ledger = await ledgerServer();
    const session = sessionKey('listen-ledger-kill');
    const proxy = await listening({ ledger: ledger.url, proxyArgs: ['--protect', LONG, '--session-key', session], upstream: up.upstream });
    let c;
    try {
      c = await client(proxy.url);
      let started;
      const first = new Promise((r) => (started = r));
      const call = c.client.callTool({ name: LONG, arguments: { duration: 2, steps: 2 } }, undefined, { onprogress: () => started() });
      await first;
      const inFlight = await ledgerOf(session, ledger.url);
      assert.deepEqual(inFlight.entries.map((e) => e.ledger_status), ['execution_started']);
      assert.deepEqual(await ledger.kill('SIGKILL'), { code: null, signal: 'SIGKILL' });
      // The tool ran to its end: its answer is the truth and reaches the client at once (the settle runs in
      // the background, retried for about 30 s: docs/mcp-proxy.md "Failure behaviour").
      const res = await call;
      assert.equal(res.content[0].text, 'Long running operation completed. Duration: 2 seconds, Steps: 2.');
      // A new protected call while the ledger is down: refused, NOT forwarded (fail closed).
      const refused = await c.client.callTool({ name: WRITE, arguments: {} }).then(
        (r) => assert.fail(`answered ${JSON.stringify(r)}`),
        (e) => e,
      );
      assert.ok(refused instanceof McpError, String(refused));
      assert.equal(refused.code, -32010);
      assert.equal(refused.data.tool_called, false);
      await ledger.restart();
      // The intent survived kill -9 (committed before the proxy was answered); the retried settle lands.
      const l = await settledLedger(session, 1, undefined, 35_000, ledger.url);
      assert.equal(l.records[0].tool, tool(LONG));
      assert.equal(l.records[0].status, 'completed');
      assert.equal(l.entries[0].ledger_status, 'completed');
      assert.deepEqual(
        l.histories[l.records[0].mutation_id].changes.map((x) => x.kind),
        ['approval', 'intent', 'settlement'],
      );
      assert.notEqual(refused.data.operation_id, l.records[0].mutation_id);
    } finally {
      await c?.client.close();
      await proxy.kill();
      await up.stop();
      await ledger.stop();
    }
  });

  test(`${kind}: 32 concurrent protected calls over 4 client sessions: each gets its own answer, each recorded once`, async () => {
    const up = await make();
    const session = sessionKey('listen-concurrent');
    // echo is read-only by its annotations: --protect records it, and its answer names its call.
    const proxy = await listening({ proxyArgs: ['--protect', 'echo', '--session-key', session], upstream: up.upstream });
    const clients = await Promise.all([0, 1, 2, 3].map(() => client(proxy.url)));
    try {
      const calls = [];
      for (let i = 0; i < 8; i += 1) {
        for (const [k, c] of clients.entries()) {
          const message = `client ${k} call ${i}`;
          calls.push(c.client.callTool({ name: 'echo', arguments: { message } }).then((r) => ({ message, r })));
        }
      }
      const answers = await Promise.all(calls);
      for (const { message, r } of answers) assert.equal(r.content[0].text, `Echo: ${message}`);
      const l = await settledLedger(session, 32);
      assert.equal(l.records.filter((r) => r.status === 'completed' && r.tool === tool('echo')).length, 32);
      assert.equal(new Set(l.records.map((r) => r.mutation_id)).size, 32);
      for (const h of Object.values(l.histories)) {
        assert.deepEqual(h.changes.map((x) => x.kind), ['approval', 'intent', 'settlement']);
      }
      assert.equal(proxy.ledgerSessions().length, 4);
    } finally {
      for (const c of clients) await c.client.close();
      await proxy.kill();
      await up.stop();
    }
  });
}

test('the connection to the client cut mid SSE answer: the client resumes with Last-Event-ID, gets the rest once, recorded completed once', async () => {
  const session = sessionKey('listen-resume');
  const proxy = await listening({ proxyArgs: ['--protect', LONG, '--session-key', session], upstream: ['--', process.execPath, everythingEntry] });
  const net = await forwarder(Number(new URL(proxy.url).port));
  const c = await client(net.url); // the SDK's client through a TCP forwarder the test cuts
  const errors = [];
  c.transport.onerror = (e) => errors.push(String(e));
  try {
    const progress = [];
    let started;
    const first = new Promise((r) => (started = r));
    const call = c.client.callTool({ name: LONG, arguments: { duration: 3, steps: 3 } }, undefined, {
      timeout: 20_000,
      onprogress: (p) => {
        progress.push(p.progress);
        started();
      },
    });
    await first;
    net.cut();
    const res = await call;
    assert.equal(res.content[0].text, 'Long running operation completed. Duration: 3 seconds, Steps: 3.');
    assert.deepEqual(progress, [1, 2, 3], 'each progress once, in order');
    assert.ok(errors.some((e) => /SSE stream disconnected/.test(e)), `the stream was cut: ${errors}`);
    const l = await settledLedger(session, 1);
    assert.equal(l.records[0].status, 'completed');
    assert.deepEqual(l.histories[l.records[0].mutation_id].changes.map((x) => x.kind), ['approval', 'intent', 'settlement']);
  } finally {
    await c.client.close();
    await net.close();
    await proxy.kill();
  }
});

test('SSE answers carry event ids (a priming event first for 2025-11-25); GET with Last-Event-ID replays the events after it', async () => {
  const proxy = await listening({ upstream: ['--', process.execPath, everythingEntry] });
  const c = await client(proxy.url);
  try {
    const headers = { accept: 'text/event-stream', 'mcp-session-id': c.transport.sessionId, 'mcp-protocol-version': '2025-11-25' };
    const cut = new AbortController();
    const r = await fetch(proxy.url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 'e-1', method: 'tools/call',
        params: { name: LONG, arguments: { duration: 2, steps: 2 }, _meta: { progressToken: 'p-1' } },
      }),
      signal: cut.signal,
    });
    assert.equal(r.headers.get('content-type'), 'text/event-stream');
    // Read up to the first progress notification, then drop the connection.
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!/"progress":1/.test(text)) {
      const { value, done } = await reader.read();
      assert.ok(!done, text);
      text += value;
    }
    cut.abort();
    const ids = [...text.matchAll(/^id: ?(\S+)$/gm)].map((m) => m[1]);
    const [stream, prime] = ids[0].split('-');
    assert.equal(prime, '0', `the priming event first: ${text}`);
    assert.deepEqual(ids, [`${stream}-0`, `${stream}-1`], text);
    const again = await fetch(proxy.url, { headers: { ...headers, 'last-event-id': ids[1] } });
    assert.equal(again.status, 200);
    const replay = await again.text();
    const events = replay.split('\n\n').filter((e) => /^data: ?\{/m.test(e));
    assert.deepEqual(
      events.map((e) => e.match(/^id: ?(\S+)$/m)?.[1]),
      [`${stream}-2`, `${stream}-3`],
      replay,
    );
    assert.match(events[0], /"progress":2/);
    assert.match(events[1], /"id":"e-1"/);
    assert.match(events[1], /Long running operation completed/);
  } finally {
    await c.client.close();
    await proxy.kill();
  }
});

test('a stream that ended with an error answer: the SDK\'s resume GET gets 405 and it asks nothing more (no GET churn)', async () => {
  // The ledger down: the protected call is answered -32010 on its (primed) stream. The TypeScript SDK
  // resumes a stream that ended without a result; an ordinary GET stream in answer would replace the
  // session's own, and the SDK reopens every GET stream that ends: one GET a second for ever.
  const proxy = await listening({ ledger: `http://127.0.0.1:${await closedPort()}`, upstream: ['--', process.execPath, everythingEntry] });
  const asked = [];
  const transport = new StreamableHTTPClientTransport(new URL(proxy.url), {
    fetch: async (url, init) => {
      const r = await fetch(url, init);
      asked.push(`${init?.method ?? 'GET'} ${new Headers(init?.headers).get('last-event-id') ?? '-'} ${r.status}`);
      return r;
    },
  });
  const c = new Client({ name: 'outcomes-e2e', version: '1.0.0' });
  await c.connect(transport);
  const errors = [];
  c.onerror = (e) => errors.push(String(e));
  try {
    await c.listTools();
    const from = asked.length;
    const err = await c.callTool({ name: WRITE, arguments: {} }).then(
      (r) => assert.fail(`answered ${JSON.stringify(r)}`),
      (e) => e,
    );
    assert.equal(err.code, -32010);
    await new Promise((r) => setTimeout(r, 3_500));
    const after = asked.slice(from);
    assert.equal(after[0], 'POST - 200');
    assert.deepEqual(after.slice(1).map((a) => a.replace(/^GET \d+-\d+ /, 'GET <id> ')), ['GET <id> 405'], after.join(', '));
    assert.deepEqual(errors, []);
  } finally {
    await c.close();
    await proxy.kill();
  }
});

/**
 * A ledger of its own, a `--listen` proxy in front of the everything server (stdio) with LONG protected, and a
 * 30-step LONG call in flight through it (its first progress seen). `call` resolves with the error the
 * call ends in (a result fails the test). The caller kills or stops the proxy; `done()` closes the client and
 * stops the ledger.
 */
async function longCallInFlight(label, { proxyArgs = [], timeout }) {
  const ledger = await ledgerServer();
  const session = sessionKey(label);
  const proxy = await listening({
    ledger: ledger.url,
    proxyArgs: ['--protect', LONG, '--session-key', session, ...proxyArgs],
    upstream: ['--', process.execPath, everythingEntry],
  });
  const c = await client(proxy.url);
  const done = async () => {
    await c.client.close().catch(() => {});
    await ledger.stop();
  };
  try {
    let started;
    const first = new Promise((r) => (started = r));
    const call = c.client
      .callTool({ name: LONG, arguments: { duration: 30, steps: 30 } }, undefined, { onprogress: () => started(), timeout })
      .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    await first;
    return { ledger, session, proxy, call, done };
  } catch (e) {
    await proxy.kill();
    await done();
    throw e;
  }
}

test('the ledger and the proxy both killed (kill -9) mid-call, the ledger restarted: the client gets an error; the write, in flight, is settled outcome_unknown by its deadline, never guessed', async () => {
  // --deadline-secs 10: extended every ~3.3 s while the call runs, so the deadline is still ahead when the
  // ledger is back (one that passed while it was down would be moved to its start + 60 s: docs/api.md).
  const { ledger, session, proxy, call, done } = await longCallInFlight('listen-both-killed', { proxyArgs: ['--deadline-secs', '10'], timeout: 8_000 });
  try {
    const inFlight = await ledgerOf(session, ledger.url);
    assert.deepEqual(inFlight.entries.map((e) => e.ledger_status), ['execution_started']);
    await ledger.kill('SIGKILL');
    assert.deepEqual(await proxy.kill('SIGKILL'), { code: null, signal: 'SIGKILL' });
    await ledger.restart();
    // The answer's stream cut and its resumption refused (the proxy is gone): the call ends in an error
    // (the SDK's own timeout here), never in a result.
    const err = await call;
    assert.ok(err instanceof Error, String(err));
    const l = await settledLedger(session, 1, undefined, 25_000, ledger.url);
    assert.equal(l.records[0].status, 'outcome_unknown');
    assert.equal(l.records[0].reason, 'execution_timeout');
    assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
    assert.equal(l.entries[0].settled_by, 'ledger');
  } finally {
    await done();
  }
});

test('a second SIGTERM ends the proxy at once, whatever its ordered end still waits for (here: the ledger down, a call in flight to give up)', async () => {
  const { ledger, proxy, call, done } = await longCallInFlight('listen-second-signal', { timeout: 20_000 });
  try {
    await ledger.kill('SIGKILL');
    // The ordered end now settles the call outcome_unknown against a ledger that is gone: its writes are
    // retried for up to 5 s (docs/mcp-proxy.md "Failure behaviour"). A second signal does not wait for them.
    const exited = proxy.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    const second = Date.now();
    process.kill(proxy.pid, 'SIGTERM');
    assert.deepEqual(await exited, { code: 128 + 15, signal: null });
    const took = Date.now() - second;
    assert.ok(took < 2_500, `exited ${took} ms after the second SIGTERM`);
    assert.match(proxy.stderr(), /a second signal after signal 15: exiting now/);
    assert.ok((await call) instanceof Error);
  } finally {
    await done();
  }
});
