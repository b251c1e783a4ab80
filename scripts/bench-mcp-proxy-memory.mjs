#!/usr/bin/env node
// The memory one JSON-RPC line costs `outcomes mcp-proxy` (docs/mcp-proxy.md "Long lines": a line within
// --max-line-bytes costs about its own size, whatever it holds; issue 38 item 5).
//
//   node scripts/bench-mcp-proxy-memory.mjs                      # lines of 16 MiB (the default limit)
//   node scripts/bench-mcp-proxy-memory.mjs --mib 4              # smaller lines
//   OUTCOMES_BIN=target/debug/outcomes node scripts/bench-mcp-proxy-memory.mjs   # another binary
//
// The MCP server behind the proxy is `cat`: every line the client sends comes back as a line from the
// server, so each line passes the proxy twice (client -> server, then server -> client) and is read on
// both ways. No ledger is needed: the tool called is `--skip`ped, and `outcomes serve` is not started.
// For each case, two fresh proxies run the same exchange, one with a small line (1 KiB) and one with a
// big line (--mib MiB, within --max-line-bytes); after the line came back and a small line after it did
// too, the proxy's peak resident memory (VmHWM, /proc/<pid>/status) is read. The figure is the ratio
// (peak with the big line - peak with the small line) / the big line's size: what one byte of a line
// costs the proxy, measured against the same exchange in the same run.
//
// Cases (the big parts are `[0,0,0,…]`, the costliest JSON for a parsed tree: 2 bytes an element):
//   result     the answer to the client's `initialize` (id 1): {"jsonrpc":"2.0","id":1,"result":[0,0,…]}
//   arguments  a tools/call: {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"w","arguments":{"a":[0,0,…]}}}
//   batch      a batch of numbers: [0,0,0,…]
//   nested     an answer of nested arrays: {"jsonrpc":"2.0","id":1,"result":[[[[0,0,…]]],[[[0,0,…]]],…]}
//   requests   a batch of small requests [{"jsonrpc":"2.0","id":0,"method":"x/y"},…]: the proxy remembers
//              each request's id until its answer (cat never answers), so this one costs more per byte
//
// It prints figures; it asserts nothing about them (a memory figure is never a test). Exit status 1 only
// when a line does not come back byte for byte, or the proxy dies.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({ options: { mib: { type: 'string', default: '16' } } });
const MiB = 1024 * 1024;
const big = Math.floor(Number(opts.mib) * MiB) - 64;
if (!(big > 1024 && big <= 16 * MiB)) {
  console.error('--mib is above 0.01 and at most 16 (the default --max-line-bytes)');
  process.exit(2);
}
const repo = fileURLToPath(new URL('../', import.meta.url));
const bin =
  process.env.OUTCOMES_BIN ??
  [`${repo}target/release/outcomes`, `${repo}target/debug/outcomes`].find((p) => existsSync(p));

/** `prefix` + `[0,0,…]`-like filler + `suffix`, `n` bytes in all. */
function zeros(n, prefix, suffix) {
  const room = n - prefix.length - suffix.length - 2;
  const count = Math.max(1, Math.floor((room + 1) / 2));
  return `${prefix}[${'0,'.repeat(count - 1)}0]${suffix}`;
}

/** Nested arrays `[[[[0,…,0]]],…]`, `n` bytes about. */
function nested(n, prefix, suffix) {
  const unit = `[[[${'0,'.repeat(7)}0]]]`;
  const count = Math.max(1, Math.floor((n - prefix.length - suffix.length) / (unit.length + 1)));
  return `${prefix}[${Array(count).fill(unit).join(',')}]${suffix}`;
}

/** A batch of small requests `[{"jsonrpc":"2.0","id":0,"method":"x/y"},…]`, `n` bytes at most. */
function requests(n) {
  const items = [];
  let total = 2;
  for (let id = 0; ; id += 1) {
    const item = `{"jsonrpc":"2.0","id":${id},"method":"x/y"}`;
    if (total + item.length + 1 > n) break;
    items.push(item);
    total += item.length + 1;
  }
  return `[${items.join(',')}]`;
}

const init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}';
const cases = {
  result: (n) => [init, zeros(n, '{"jsonrpc":"2.0","id":1,"result":', '}')],
  arguments: (n) => [zeros(n, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"w","arguments":{"a":', '}}}')],
  batch: (n) => [zeros(n, '', '')],
  nested: (n) => [init, nested(n, '{"jsonrpc":"2.0","id":1,"result":', '}')],
  requests: (n) => [requests(n)],
};

/** Runs one proxy in front of `cat`, sends `lines` then a small one, waits for each to come back; its VmHWM. */
async function run(lines) {
  const proc = spawn(bin, ['mcp-proxy', '--server', 'http://127.0.0.1:9', '--skip', 'w', '--', 'cat'], {
    env: { PATH: process.env.PATH, OUTCOMES_HOST_TOKEN: 'bench' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const back = [];
  let pending = [];
  let wake = () => {};
  proc.stdout.on('data', (chunk) => {
    let at = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, at)) {
      pending.push(chunk.subarray(at, i));
      back.push(Buffer.concat(pending));
      pending = [];
      at = i + 1;
    }
    if (at < chunk.length) pending.push(chunk.subarray(at));
    wake();
  });
  proc.stdout.on('close', () => wake());
  const sha = (b) => createHash('sha256').update(b).digest('hex');
  const last = '{"jsonrpc":"2.0","method":"notifications/bench","params":{}}';
  for (const line of [...lines, last]) {
    proc.stdin.write(`${line}\n`);
    const deadline = Date.now() + 120_000;
    while (back.length === 0) {
      if (proc.exitCode !== null || proc.signalCode !== null || Date.now() > deadline) {
        throw new Error(`the proxy died or did not answer: ${stderr.slice(-2000)}`);
      }
      await new Promise((r) => {
        wake = r;
        setTimeout(r, 100);
      });
    }
    const got = back.shift();
    if (got.length !== Buffer.byteLength(line) || sha(got) !== sha(line)) {
      throw new Error(`a line of ${Buffer.byteLength(line)} bytes came back as ${got.length} bytes, changed`);
    }
  }
  // A background read of the answer (a watched call's) has had its time.
  await new Promise((r) => setTimeout(r, 300));
  const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
  const peak = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)[1]) * 1024;
  proc.stdin.end();
  const exit = await exited;
  if (exit.code !== 0) throw new Error(`the proxy exited ${JSON.stringify(exit)}: ${stderr.slice(-2000)}`);
  return peak;
}

const mib = (b) => (b / MiB).toFixed(1);
console.log(`binary: ${bin}`);
console.log('case       line MiB  peak small MiB  peak big MiB  grown MiB  grown / line');
let failed = false;
for (const [name, make] of Object.entries(cases)) {
  try {
    const small = await run(make(1024));
    const lines = make(big);
    const size = Buffer.byteLength(lines.at(-1));
    const peak = await run(lines);
    const grown = peak - small;
    console.log(
      `${name.padEnd(10)} ${mib(size).padStart(8)}  ${mib(small).padStart(14)}  ${mib(peak).padStart(12)}  ${mib(grown).padStart(9)}  ${(grown / size).toFixed(2).padStart(12)}`,
    );
  } catch (e) {
    console.log(`${name.padEnd(10)} FAILED: ${e.message}`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
