// `outcomes mcp-proxy` at its edges: a client that sends the whole handshake and its first calls at once
// (raw JSON-RPC lines on stdin, no SDK), and what is refused at start before the server is run.
// The rules are docs/mcp-proxy.md's ("Ordering", "Options").
//
// Run by scripts/test.sh (`node --test e2e/mcp/`). Alone, against a server of your own:
//   OUTCOMES_HOST_TOKEN=t target/debug/outcomes serve --addr 127.0.0.1:3350 --data-dir "$(mktemp -d)" &
//   BASE_URL=http://127.0.0.1:3350 OUTCOMES_HOST_TOKEN=t OUTCOMES_BIN=target/debug/outcomes \
//     node --test e2e/mcp/startup.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { FILESYSTEM_NAME, base, filesystemEntry, outcomesBin, sessionKey, settledLedger, token } from './support.mjs';

/** Runs `outcomes <args>` with `input` on stdin until it exits: {code, signal, stdout, stderr}. */
function run(args, { env = { OUTCOMES_HOST_TOKEN: token }, input = '', timeoutMs = 20_000 } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(outcomesBin, args, { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c) => (stdout += c));
    p.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`outcomes ${args.join(' ')}: still running after ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    p.on('exit', (code, signal) => {
      clearTimeout(timer);
      // 'exit' can come before the pipes are drained
      setImmediate(() => resolve({ code, signal, stdout, stderr }));
    });
    p.stdin.on('error', () => {}); // a proxy that exits at once closes its stdin
    p.stdin.end(input);
  });
}

test('a client that pipelines initialize, tools/list and its calls: classified by the tools/list answer, named by serverInfo', async () => {
  const dir = await mkdtemp(`${tmpdir()}/mcp-fs-pipelined-`);
  const session = sessionKey('pipelined');
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_directory', arguments: { path: dir } } },
    { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'piped' } } },
  ];
  // All at once, then stdin closed: the proxy closes the server's stdin, forwards its answers, exits 0.
  const input = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
  const out = await run(['mcp-proxy', '--server', base, '--session-key', session, '--', process.execPath, filesystemEntry, dir], { input });
  assert.equal(out.code, 0, out.stderr);
  const answers = out.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(answers.map((a) => a.id), [1, 2, 3, 4]);
  assert.equal(answers[0].result.serverInfo.name, FILESYSTEM_NAME);
  assert.notEqual(answers[2].result.isError, true); // list_directory: read-only once tools/list was answered
  assert.notEqual(answers[3].result.isError, true);
  assert.equal(await readFile(`${dir}/a.txt`, 'utf8'), 'piped');
  const l = await settledLedger(session, 1);
  assert.equal(l.records[0].tool, `mcp__${FILESYSTEM_NAME}__write_file`);
  assert.equal(l.records[0].status, 'completed');
});

test('a tools/call sent as a notification (no id, never answered) is recorded outcome_unknown once forwarded', async () => {
  const dir = await mkdtemp(`${tmpdir()}/mcp-fs-notification-`);
  const session = sessionKey('call-notification');
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', method: 'tools/call', params: { name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'n' } } },
    { jsonrpc: '2.0', id: 3, method: 'ping' },
  ];
  const input = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
  const out = await run(['mcp-proxy', '--server', base, '--session-key', session, '--', process.execPath, filesystemEntry, dir], { input });
  assert.equal(out.code, 0, out.stderr);
  assert.deepEqual(out.stdout.trim().split('\n').map((l) => JSON.parse(l).id), [1, 2, 3]);
  const l = await settledLedger(session, 1);
  assert.equal(l.records[0].tool, `mcp__${FILESYSTEM_NAME}__write_file`);
  assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
  assert.equal('reason' in l.records[0], false);
});

// [what, options, exit status (1: the proxy's own check; 2: clap's usage error), what stderr says]
const refusedAtStart = [
  ['a tool both in --protect and --skip', ['--protect', 'write_file', '--skip', 'write_file'], 1,
    /^outcomes: mcp-proxy: --protect and --skip both name write_file/m],
  ['a session key with a control character', ['--session-key', 'bad\tkey'], 1,
    /^outcomes: mcp-proxy: --session-key "bad\\tkey": an identifier is 1 to 256 bytes without control characters/m],
  ['an unknown --on-ledger-down', ['--on-ledger-down', 'maybe'], 2, /invalid value 'maybe' for '--on-ledger-down/],
  ['a --metadata key that is not id, url or title', ['--metadata', 'name=/x'], 1,
    /^outcomes: mcp-proxy: --metadata key "name" is not one of id, url, title/m],
];
for (const [what, extra, status, says] of refusedAtStart) {
  test(`refused at start, the server never run: ${what}`, async () => {
    const dir = await mkdtemp(`${tmpdir()}/mcp-start-`);
    const marker = `${dir}/server-ran`;
    const out = await run([
      'mcp-proxy', '--server', base, ...(extra.includes('--session-key') ? [] : ['--session-key', sessionKey('refused')]), ...extra,
      '--', process.execPath, '-e', 'require("fs").writeFileSync(process.argv[1], "ran")', marker,
    ]);
    assert.equal(out.code, status, out.stderr);
    assert.match(out.stderr, says);
    assert.equal(out.stdout, '');
    assert.equal(existsSync(marker), false);
  });
}

test('refused at start without a host token (none given, none in the data directory)', async () => {
  const dir = await mkdtemp(`${tmpdir()}/mcp-start-`);
  const marker = `${dir}/server-ran`;
  const out = await run(
    ['mcp-proxy', '--server', base, '--data-dir', dir, '--', process.execPath, '-e', 'require("fs").writeFileSync(process.argv[1], "ran")', marker],
    { env: {} },
  );
  assert.equal(out.code, 1, out.stderr);
  assert.match(out.stderr, /^outcomes: mcp-proxy: /m);
  assert.equal(existsSync(marker), false);
});

test('a server command that cannot be started is an error at start', async () => {
  const out = await run(['mcp-proxy', '--server', base, '--session-key', sessionKey('nocmd'), '--', '/nonexistent/mcp-server']);
  assert.equal(out.code, 1, out.stderr);
  assert.match(out.stderr, /cannot start the MCP server "\/nonexistent\/mcp-server"/);
  assert.equal(out.stdout, '');
});

test('a server that takes 11 s to start, with a pipelining client: still named by serverInfo, still classified by tools/list', async () => {
  const dir = await mkdtemp(`${tmpdir()}/mcp-fs-slow-start-`);
  const session = sessionKey('slow-start');
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_directory', arguments: { path: dir } } },
    { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'slow' } } },
  ];
  const input = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
  // As `npx -y` on a cold cache: the server answers nothing for 11 s (more than the proxy's 10 s wait for
  // a tools/list). Before: the calls were classified and named without the answers (`mcp__sh__write_file`,
  // and the read-only list_directory recorded).
  const slow = `sleep 11; exec "$0" "$@"`;
  const out = await run(
    ['mcp-proxy', '--server', base, '--session-key', session, '--', 'sh', '-c', slow, process.execPath, filesystemEntry, dir],
    { input, timeoutMs: 45_000 },
  );
  assert.equal(out.code, 0, out.stderr);
  assert.deepEqual(out.stdout.trim().split('\n').map((l) => JSON.parse(l).id), [1, 2, 3, 4]);
  const l = await settledLedger(session, 1);
  assert.deepEqual(l.records.map((r) => [r.tool, r.status]), [[`mcp__${FILESYSTEM_NAME}__write_file`, 'completed']]);
});
