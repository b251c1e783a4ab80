// Shared by the MCP proxy tests (e2e/mcp/*.test.mjs): start the real MCP servers from npm directly or
// through `outcomes mcp-proxy` with the official MCP TypeScript SDK's client, and read what the proxy
// recorded through the ledger's public read APIs (docs/api.md "History", "Turn entries", "Dashboard reads").
//
// Environment (scripts/test.sh sets all three):
//   OUTCOMES_BIN         the `outcomes` binary (default: target/release/outcomes, then target/debug/outcomes)
//   BASE_URL             a running `outcomes serve` (default http://127.0.0.1:3100)
//   OUTCOMES_HOST_TOKEN  its host token (the proxy writes with it; the tests read with it as bearer)
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { createServer, connect as tcpConnect } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const repo = fileURLToPath(new URL('../../', import.meta.url));
export const base = (process.env.BASE_URL ?? 'http://127.0.0.1:3100').replace(/\/$/, '');
export const token = process.env.OUTCOMES_HOST_TOKEN ?? '';
export const outcomesBin =
  process.env.OUTCOMES_BIN ??
  [`${repo}target/release/outcomes`, `${repo}target/debug/outcomes`].find((p) => existsSync(p)) ??
  `${repo}target/release/outcomes`;

/** The installed server's entry point (its package.json `bin`), run as `node <entry>`: never npx at test time. */
function serverEntry(pkg) {
  const dir = `${repo}node_modules/@modelcontextprotocol/${pkg}/`;
  const { bin } = JSON.parse(readFileSync(`${dir}package.json`, 'utf8'));
  return dir + (typeof bin === 'string' ? bin : Object.values(bin)[0]);
}
export const filesystemEntry = serverEntry('server-filesystem');
export const everythingEntry = serverEntry('server-everything');
/** `serverInfo.name` of each installed server (checked by tools-list.test.mjs against the real answer). */
export const FILESYSTEM_NAME = 'secure-filesystem-server';
export const EVERYTHING_NAME = 'mcp-servers/everything';

let counter = 0;
/** A session key unique to this run and call: `mcp-e2e-<label>-<ms>-<pid>-<n>`. */
export function sessionKey(label) {
  counter += 1;
  return `mcp-e2e-${label}-${Date.now()}-${process.pid}-${counter}`;
}

/**
 * The SDK's stdio transport, also keeping every byte the process wrote to stdout (`raw`), so a test can
 * compare a message byte for byte. `start()` resolves on spawn, before any output, so nothing is missed.
 */
export class RecordingStdioTransport extends StdioClientTransport {
  constructor(params) {
    super(params);
    this.raw = [];
    this.sent = [];
  }
  async start() {
    await super.start();
    // `_process` is the SDK's own child handle (pinned SDK version, package.json).
    this.child = this._process;
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.child.stdout.on('data', (chunk) => this.raw.push(chunk));
  }
  send(message) {
    this.sent.push(message);
    return super.send(message);
  }
  /** Every message the process wrote, parsed, in order. */
  rawMessages() {
    return Buffer.concat(this.raw)
      .toString('utf8')
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l));
  }
  /** The raw lines (without their newline) of the responses to request `id`. */
  rawResponses(id) {
    return Buffer.concat(this.raw)
      .toString('utf8')
      .split('\n')
      .filter((l) => {
        try {
          const m = JSON.parse(l);
          return m.id === id && ('result' in m || 'error' in m);
        } catch {
          return false;
        }
      });
  }
  /** How many responses to request `id` the process wrote. */
  rawResponseCount(id) {
    return this.rawResponses(id).length;
  }
  /** The one raw response line to request `id`. */
  rawResponse(id) {
    const found = this.rawResponses(id);
    assert.equal(found.length, 1, `one response to id ${id}`);
    return found[0];
  }
  /** The JSON-RPC id of the n-th request the client sent with this method (0-based). */
  requestId(method, n = 0) {
    return this.sent.filter((m) => m.method === method && 'id' in m)[n]?.id;
  }
}

/**
 * Connects the SDK's client to `command args` over stdio (`capabilities`: the client's, e.g. `{sampling: {}}`;
 * `setup(client)` runs before the handshake). Returns {client, transport, stderr(), errors}:
 * `stderr()` is what the process wrote to stderr so far, `errors` what the client reported through
 * `onerror` (e.g. "Received a response for an unknown message ID").
 */
export async function connect(command, args, { env = {}, clientName = 'outcomes-e2e', capabilities, setup } = {}) {
  const transport = new RecordingStdioTransport({ command, args, env, stderr: 'pipe', cwd: repo });
  let stderrText = '';
  transport.stderr.on('data', (c) => {
    stderrText += c.toString('utf8');
  });
  const client = new Client({ name: clientName, version: '1.0.0' }, capabilities ? { capabilities } : undefined);
  setup?.(client); // request handlers for what the server asks the client (sampling, elicitation)
  const errors = [];
  client.onerror = (e) => errors.push(e);
  try {
    await client.connect(transport);
  } catch (e) {
    await transport.close().catch(() => {});
    throw new Error(`${command} ${args.join(' ')}: the MCP handshake failed: ${e.message}; stderr: ${stderrText}`);
  }
  return { client, transport, stderr: () => stderrText, errors };
}

/** The server directly (no proxy): `node <entry> <args>`. */
export function direct(server, serverArgs = [], opts = {}) {
  return connect(process.execPath, [server, ...serverArgs], opts);
}

/**
 * The server through the proxy: `outcomes mcp-proxy --server <BASE_URL> --session-key <key> <proxyArgs> --
 * node <entry> <serverArgs>`, with OUTCOMES_HOST_TOKEN in its environment.
 */
export function proxied({ session, server, serverArgs = [], proxyArgs = [], ledger = base, env = {}, ...opts }) {
  const args = ['mcp-proxy', '--server', ledger, '--session-key', session, ...proxyArgs, '--', process.execPath, server, ...serverArgs];
  const log = process.env.RUST_LOG ? { RUST_LOG: process.env.RUST_LOG } : {};
  return connect(outcomesBin, args, { env: { OUTCOMES_HOST_TOKEN: token, ...log, ...env }, ...opts });
}

/**
 * Closes a connection, ignoring a transport that is already gone. With MCP_E2E_STDERR=1 in the
 * environment it then prints what the process wrote to stderr (with RUST_LOG=debug: the proxy's log).
 */
export async function close(conn) {
  await conn.client.close().catch(() => {});
  if (process.env.MCP_E2E_STDERR) console.error(conn.stderr());
}

const enc = encodeURIComponent;
async function read(path, at = base) {
  const r = await fetch(`${at}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: r.status, text: await r.text() };
}

/**
 * What the ledger holds for a session, through the public read APIs with the host token:
 * `null` when the session is unknown (404 `session_not_found`: nothing was ever recorded), else
 * `{records, entries, histories, consistent}`:
 *   entries   every turn's `GET /api/sessions/{key}/turns/{turn}/entries` ({outcome, ledger_status, …}), in
 *             turn then recorded order, so a test tells a settled outcome_unknown from one still in flight
 *             (both publish `outcome_unknown`)
 *   records   `GET /api/mutation-outcomes?session_id=` (the published mutation_outcome/v1 records, in order),
 *             read after the entries
 *   histories `GET /api/sessions/{key}/mutations/{id}/history` by mutation id (every change, evidence
 *             included), read last
 *   consistent  whether the records equal the entries' outcomes (nothing changed between the reads)
 * `at`: the ledger read (default BASE_URL; a test's own server: `ledgerServer`).
 */
export async function ledgerOf(session, at = base) {
  const turns = await read(`/api/sessions/${enc(session)}/turns?limit=1000`, at);
  if (turns.status === 404) {
    assert.equal(JSON.parse(turns.text).error.code, 'session_not_found', turns.text);
    return null;
  }
  assert.equal(turns.status, 200, turns.text);
  const entries = [];
  for (const t of JSON.parse(turns.text).turns) {
    const e = await read(`/api/sessions/${enc(session)}/turns/${enc(t.logical_turn_id)}/entries?limit=1000`, at);
    assert.equal(e.status, 200, e.text);
    entries.push(...JSON.parse(e.text).entries);
  }
  const h = await read(`/api/mutation-outcomes?session_id=${enc(session)}`, at);
  assert.equal(h.status, 200, h.text);
  const records = JSON.parse(h.text).mutation_outcomes;
  const histories = {};
  for (const r of records) {
    const x = await read(`/api/sessions/${enc(session)}/mutations/${enc(r.mutation_id)}/history`, at);
    assert.equal(x.status, 200, x.text);
    histories[r.mutation_id] = JSON.parse(x.text);
  }
  const consistent = isDeepStrictEqual(records, entries.map((e) => e.outcome));
  return { records, entries, histories, consistent };
}

/**
 * The session's ledger once it has `n` entries, none in flight (`execution_started`), the reads agree, and
 * `ok(ledger)` holds; fails after `ms` with the last read. `at`: as for `ledgerOf`.
 */
export function settledLedger(session, n, ok = () => true, ms = 15_000, at = base) {
  return until(
    `${n} settled entries in ${session}`,
    async () => {
      const l = await ledgerOf(session, at);
      return (
        l && l.consistent && l.entries.length === n && l.entries.every((e) => e.ledger_status !== 'execution_started') && ok(l) && l
      );
    },
    ms,
  );
}

/** Polls `probe()` (async) until it returns a truthy value or `ms` pass; then fails with `what` and the last value. */
export async function until(what, probe, ms = 15_000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await probe();
    if (last) return last;
    if (Date.now() > deadline) assert.fail(`${what}: not reached within ${ms} ms; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The pids whose parent is `pid` (from /proc/<pid>/stat), e.g. the proxy's child server. */
export async function childrenOf(pid) {
  const out = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

/** A loopback port nothing listens on (bound, then closed). */
export async function closedPort() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** Counts of published statuses: {completed: n, …}. */
export function countBy(records, key = 'status') {
  const c = {};
  for (const r of records) c[r[key]] = (c[r[key]] ?? 0) + 1;
  return c;
}

/**
 * A forwarder in front of the real ledger (BASE_URL) that lets a test make the ledger slow or faulty for
 * exactly the requests it names, without a mock: every answer that is not an injected fault is the real
 * server's. `decide({method, path, body, n})` (`n`: how many requests came before this one) answers
 *   'pass'        forward it now (also for anything else returned)
 *   'hold'        keep it until `release()`, then forward it
 *   503 (a number) answer that status with a JSON error body, without forwarding
 *   'lose'        forward it, then answer 503 as if its answer were lost (the write landed)
 * Returns {url, seen (every {method, path, body} in order), held(), release(), close()}.
 */
export async function faultyLedger(decide) {
  let waiting = [];
  let released = false;
  const seen = [];
  const srv = createHttpServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks).toString('utf8');
    const forward = async () => {
      const headers = { ...req.headers };
      delete headers.host;
      delete headers['content-length'];
      delete headers.connection;
      const r = await fetch(`${base}${req.url}`, { method: req.method, headers, body: body.length ? body : undefined });
      return { status: r.status, type: r.headers.get('content-type') ?? 'application/json', bytes: Buffer.from(await r.arrayBuffer()) };
    };
    const send = (a) => {
      res.writeHead(a.status, { 'content-type': a.type });
      res.end(a.bytes);
    };
    const fault = (status) =>
      send({ status, type: 'application/json', bytes: Buffer.from(JSON.stringify({ error: { code: 'unavailable', message: 'injected by the test' } })) });
    const request = { method: req.method, path: req.url, body, n: seen.length };
    seen.push(request);
    const what = released ? 'pass' : decide(request);
    if (what === 'hold') waiting.push(async () => send(await forward()));
    else if (typeof what === 'number') fault(what);
    else if (what === 'lose') {
      await forward();
      fault(503);
    } else send(await forward());
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    seen,
    held: () => waiting.length,
    release: async () => {
      released = true;
      const w = waiting;
      waiting = [];
      await Promise.all(w.map((f) => f()));
    },
    close: () => {
      srv.closeAllConnections();
      return new Promise((r) => srv.close(r));
    },
  };
}

/** Whether a ledger request (as `faultyLedger` sees it) is a settle, alone or in a batch. */
export const isSettle = ({ path, body }) => path.endsWith('/settlement') || /"op"\s*:\s*"settle"/.test(body);
/** Whether a ledger request is an approve + intent batch. */
export const isApproveBatch = ({ path, body }) => path === '/api/host/batch' && /"op"\s*:\s*"approve"/.test(body);

/**
 * `node <everything> streamableHttp` (server-everything's Streamable HTTP mode: express + the official
 * SDK's StreamableHTTPServerTransport, SSE answers) with PORT (a free one unless given) and `env`; resolves
 * once it listens. Returns {url, port, posts() (the POSTs it logged so far), log(), kill(signal), exited}.
 */
export async function everythingHttp(port, env = {}) {
  port ??= await closedPort();
  const child = spawn(process.execPath, [everythingEntry, 'streamableHttp'], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c.toString('utf8')));
  child.stderr.on('data', (c) => (out += c.toString('utf8')));
  const exited = new Promise((r) => child.once('exit', r));
  await until(`server-everything listening on ${port}`, async () => out.includes(`listening on port ${port}`) || child.exitCode !== null, 15_000);
  assert.equal(child.exitCode, null, out);
  return {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    posts: () => out.split('\n').filter((l) => l === 'Received MCP POST request').length,
    log: () => out,
    kill: (signal = 'SIGKILL') => {
      child.kill(signal);
      return exited;
    },
    exited,
  };
}

/**
 * A ledger of the test's own: `outcomes serve` on a free loopback port and a new data directory, with the
 * tests' host token, so a test may kill it. Resolves once `/healthz` answers. Returns {url, kill(signal)
 * (resolves on exit), restart() (the same port and data directory), stop() (kill and remove the data)}.
 */
export async function ledgerServer() {
  const port = await closedPort();
  const dir = await mkdtemp(`${tmpdir()}/outcomes-e2e-ledger-`);
  const url = `http://127.0.0.1:${port}`;
  let child;
  let log = '';
  const start = async () => {
    child = spawn(outcomesBin, ['serve', '--addr', `127.0.0.1:${port}`, '--data-dir', dir], {
      env: { ...process.env, OUTCOMES_HOST_TOKEN: token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (c) => (log += c.toString('utf8')));
    child.stderr.on('data', (c) => (log += c.toString('utf8')));
    const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
    child.exited = exited;
    await until(
      `outcomes serve on ${port}`,
      async () => child.exitCode !== null || (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)),
      30_000,
    );
    assert.equal(child.exitCode, null, log);
  };
  await start();
  const kill = (signal = 'SIGKILL') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return child.exited;
  };
  return {
    url,
    log: () => log,
    kill,
    restart: start,
    stop: async () => {
      await kill('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A TCP forwarder to 127.0.0.1:`port` (bytes passed unchanged, nothing read): the network between the
 * proxy and the server (or a client and the proxy), so a test can cut it. `hold()` stops passing the server's bytes on the
 * connections open now; `cut()` destroys them (new ones are still forwarded); `close()` also stops
 * listening (connections refused from then on).
 */
export async function forwarder(port) {
  const open = new Set();
  const srv = createServer((a) => {
    const b = tcpConnect(port, '127.0.0.1');
    const pair = { a, b };
    open.add(pair);
    a.pipe(b);
    b.pipe(a);
    const end = () => {
      open.delete(pair);
      a.destroy();
      b.destroy();
    };
    a.on('error', end).on('close', end);
    b.on('error', end).on('close', end);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const cut = () => {
    for (const { a, b } of open) {
      a.destroy();
      b.destroy();
    }
    open.clear();
  };
  return {
    url: `http://127.0.0.1:${srv.address().port}/mcp`,
    hold: () => {
      for (const { a, b } of open) {
        b.unpipe(a);
        b.pause();
      }
    },
    cut,
    close: () => {
      const closed = new Promise((r) => srv.close(r));
      cut();
      return closed;
    },
  };
}
