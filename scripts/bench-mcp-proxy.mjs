#!/usr/bin/env node
// The latency `outcomes mcp-proxy` adds to an MCP tool call (docs/performance.md "MCP proxy latency", docs/mcp-proxy.md; target:
// p50 under 1 ms per read-only call, loopback, ledger answers excluded).
//
//   node scripts/bench-mcp-proxy.mjs                         # 2,000 calls each way after 200 of warm-up
//   node scripts/bench-mcp-proxy.mjs --calls 200 --warmup 20 # a short run (a smoke test)
//   node scripts/bench-mcp-proxy.mjs --server filesystem     # list_allowed_directories of server-filesystem
//   OUTCOMES_BIN=target/debug/outcomes node scripts/bench-mcp-proxy.mjs   # another binary
//   node scripts/bench-mcp-proxy.mjs --remote                # server-everything over Streamable HTTP (--url, --listen)
//
// Each connection lists the tools first, as MCP clients do (the proxy records a tool it has not seen in a
// tools/list answer). It starts an `outcomes serve` of its own (default the release binary target/release/outcomes, a free
// loopback port, a temporary data directory, a random host token) and, with the official MCP TypeScript
// SDK's client (npm, package.json), two connections to the same real MCP server from npm: one to the
// server directly (`node <entry>`), one through `outcomes mcp-proxy -- node <entry>`. It calls one read-only
// tool (server-everything's `echo`, or server-filesystem's `list_allowed_directories`) in rounds of 100
// calls on each connection in turn (so a busy moment of a shared machine falls on both), one call at a time,
// timing each call from the request to its answer (process.hrtime). It then prints, per connection, the
// p50, p99, mean and max in milliseconds, and the proxy's added latency: the difference of the p50s and of
// the p99s. Unless `--no-protected`, a third connection protects the same
// tool (`--protect`), so each call also writes its approve + intent batch to the ledger before it is
// forwarded: that line shows what a protected call costs, the ledger's answer included.
//
// With `--remote` the server is server-everything in its `streamableHttp` mode (one process, a free loopback
// port) and the connections are: the SDK's StreamableHTTPClientTransport to the server directly; the SDK's
// stdio client through `outcomes mcp-proxy --url <server>`; the SDK's StreamableHTTPClientTransport through
// `outcomes mcp-proxy --listen 127.0.0.1:0 --url <server>` (HTTP on both sides, the like-for-like figure);
// and, unless `--no-protected`, `--url` with the tool protected. Added latency is against the direct HTTP
// connection (docs/mcp-proxy.md "Remote servers (Streamable HTTP)", "Clients by URL (--listen)").
//
// It prints figures; it asserts nothing (a speed figure is never a test). Exit status 1 only when a call
// fails or the server does not start.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const { values: opts } = parseArgs({
  options: {
    calls: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '200' },
    round: { type: 'string', default: '100' },
    server: { type: 'string', default: 'everything' },
    'no-protected': { type: 'boolean', default: false },
    remote: { type: 'boolean', default: false },
  },
});
const calls = Number(opts.calls);
const warmup = Number(opts.warmup);
const round = Number(opts.round);
if (!(calls > 0 && warmup >= 0 && round > 0)) {
  console.error('--calls and --round are whole numbers above 0, --warmup 0 or more');
  process.exit(2);
}
const repo = fileURLToPath(new URL('../', import.meta.url));
const bin = process.env.OUTCOMES_BIN ?? `${repo}target/release/outcomes`;
if (!existsSync(bin)) {
  console.error(`${bin} is missing: cargo build --release -p server --bin outcomes (or set OUTCOMES_BIN)`);
  process.exit(1);
}

const servers = {
  everything: { pkg: 'server-everything', args: [], tool: 'echo', arguments: { message: 'ping' } },
  filesystem: { pkg: 'server-filesystem', args: [mkdtempSync(`${tmpdir()}/bench-mcp-fs-`)], tool: 'list_allowed_directories', arguments: {} },
};
const target = servers[opts.server];
if (!target) {
  console.error(`--server is one of ${Object.keys(servers).join(', ')}`);
  process.exit(2);
}
if (opts.remote && opts.server !== 'everything') {
  console.error('--remote measures server-everything (the one with a Streamable HTTP mode)');
  process.exit(2);
}
const pkgDir = `${repo}node_modules/@modelcontextprotocol/${target.pkg}/`;
const binField = JSON.parse(readFileSync(`${pkgDir}package.json`, 'utf8')).bin;
const entry = pkgDir + (typeof binField === 'string' ? binField : Object.values(binField)[0]);

async function freePort() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// The ledger the proxy writes to: a server of our own.
const port = await freePort();
const data = mkdtempSync(`${tmpdir()}/bench-mcp-ledger-`);
const token = randomBytes(24).toString('base64url');
const base = `http://127.0.0.1:${port}`;
const serve = spawn(bin, ['serve', '--addr', `127.0.0.1:${port}`, '--data-dir', data], {
  env: { ...process.env, OUTCOMES_HOST_TOKEN: token },
  stdio: ['ignore', 'ignore', 'pipe'],
});
let serveLog = '';
serve.stderr.on('data', (c) => (serveLog += c));
const children = [];
const cleanup = () => {
  for (const c of children) c.kill('SIGTERM');
  serve.kill('SIGTERM');
  rmSync(data, { recursive: true, force: true });
  if (target.args[0]) rmSync(target.args[0], { recursive: true, force: true });
};
process.on('exit', cleanup);
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/healthz`)).ok) break;
  } catch {
    // not listening yet
  }
  if (i > 100) {
    console.error(`outcomes serve did not start:\n${serveLog}`);
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 100));
}

async function connect(label, command, args, env = {}) {
  const transport = new StdioClientTransport({ command, args, env, stderr: 'pipe' });
  transport.stderr.on('data', () => {});
  return ready(label, transport);
}

async function ready(label, transport) {
  const client = new Client({ name: 'bench-mcp-proxy', version: '1.0.0' });
  await client.connect(transport);
  // As every MCP client does before calling: the proxy learns which tools are read-only only from a
  // tools/list answer it forwarded (a tool it has not seen listed is protected, so recorded).
  await client.listTools();
  return { label, client, times: [] };
}

/** Spawns `command args` and resolves with the first match of `pattern` in its stdout + stderr. */
async function started(command, args, env, pattern) {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const look = (c) => {
      out += c;
      const m = out.match(pattern);
      if (m) resolve(m);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.once('exit', (code) => reject(new Error(`${command} exited ${code} before it was ready:\n${out}`)));
  });
}

const session = `bench-mcp-proxy-${Date.now()}`;
const proxyArgs = (extra) => ['mcp-proxy', '--server', base, '--session-key', session, ...extra, '--', process.execPath, entry, ...target.args];
const conns = [];
if (opts.remote) {
  const serverPort = await freePort();
  await started(process.execPath, [entry, 'streamableHttp'], { PORT: String(serverPort) }, new RegExp(`listening on port ${serverPort}`));
  const url = `http://127.0.0.1:${serverPort}/mcp`;
  const urlArgs = (extra) => ['mcp-proxy', '--server', base, '--session-key', session, ...extra, '--url', url];
  conns.push(await ready('direct (Streamable HTTP)', new StreamableHTTPClientTransport(new URL(url))));
  conns.push(await connect('through the proxy --url (client on stdio)', bin, urlArgs([]), { OUTCOMES_HOST_TOKEN: token }));
  const [, listenUrl] = await started(bin, urlArgs(['--listen', '127.0.0.1:0']), { OUTCOMES_HOST_TOKEN: token }, /listening on (http:\/\/\S+)/);
  conns.push(await ready('through the proxy --listen --url (HTTP both sides)', new StreamableHTTPClientTransport(new URL(listenUrl))));
  if (!opts['no-protected']) {
    conns.push(await connect(`through the proxy --url, --protect ${target.tool}`, bin, urlArgs(['--protect', target.tool]), { OUTCOMES_HOST_TOKEN: token }));
  }
} else {
  conns.push(await connect('direct', process.execPath, [entry, ...target.args]));
  conns.push(await connect('through the proxy', bin, proxyArgs([]), { OUTCOMES_HOST_TOKEN: token }));
  if (!opts['no-protected']) {
    conns.push(await connect(`through the proxy, --protect ${target.tool}`, bin, proxyArgs(['--protect', target.tool]), { OUTCOMES_HOST_TOKEN: token }));
  }
}

async function call(conn) {
  const t0 = process.hrtime.bigint();
  const res = await conn.client.callTool({ name: target.tool, arguments: target.arguments });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (res.isError) throw new Error(`${conn.label}: ${target.tool} answered isError: ${JSON.stringify(res)}`);
  return ms;
}

const startedAt = Date.now();
for (const conn of conns) for (let i = 0; i < warmup; i++) await call(conn);
for (let done = 0; done < calls; done += round) {
  const n = Math.min(round, calls - done);
  for (const conn of conns) for (let i = 0; i < n; i++) conn.times.push(await call(conn));
}
const elapsed = (Date.now() - startedAt) / 1000;

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const fmt = (ms) => ms.toFixed(3).padStart(8);
const stats = conns.map((c) => {
  const s = [...c.times].sort((a, b) => a - b);
  return { label: c.label, p50: pct(s, 50), p99: pct(s, 99), mean: s.reduce((a, b) => a + b, 0) / s.length, max: s[s.length - 1] };
});
console.log(`MCP proxy latency${opts.remote ? ' (--remote: Streamable HTTP)' : ''}: ${calls} calls of ${opts.server}'s read-only ${target.tool} per connection after ${warmup} of warm-up, one at a time, rounds of ${round} (${elapsed.toFixed(1)} s)`);
console.log(`binary ${bin}`);
console.log(`${'connection'.padEnd(58)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'mean ms'.padStart(8)} ${'max ms'.padStart(8)}`);
for (const s of stats) console.log(`${s.label.padEnd(58)} ${fmt(s.p50)} ${fmt(s.p99)} ${fmt(s.mean)} ${fmt(s.max)}`);
const [d, ...rest] = stats;
for (const x of rest) {
  const added50 = x.p50 - d.p50;
  const protectedCall = x.label.includes('--protect');
  const what = protectedCall ? 'protected, ledger round trip included' : 'read-only';
  const verdict = protectedCall ? '' : `; target p50 < 1 ms: ${added50 < 1 ? 'PASS' : 'MISS'}`;
  const by = x.label.replace(/^through /, 'by ').replace(/, --protect \S+$/, '');
  console.log(`added ${by} (${what}): p50 ${added50.toFixed(3)} ms, p99 ${(x.p99 - d.p99).toFixed(3)} ms${verdict}`);
}

for (const c of conns) await c.client.close();
process.exit(0);
