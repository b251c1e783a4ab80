// `outcomes mcp-proxy` in front of the real filesystem MCP server (@modelcontextprotocol/server-filesystem),
// driven by the official MCP TypeScript SDK's client: what each tool call records in the ledger (read back
// through the public read APIs), and that a write the ledger cannot record never happens (fail closed).
// The rules are docs/mcp-proxy.md's.
//
// Run by scripts/test.sh (`node --test e2e/mcp/`). Alone, against a server of your own:
//   OUTCOMES_HOST_TOKEN=t target/debug/outcomes serve --addr 127.0.0.1:3350 --data-dir "$(mktemp -d)" &
//   BASE_URL=http://127.0.0.1:3350 OUTCOMES_HOST_TOKEN=t OUTCOMES_BIN=target/debug/outcomes \
//     node --test e2e/mcp/filesystem.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  FILESYSTEM_NAME, base, close, closedPort, countBy, faultyLedger, filesystemEntry, isSettle, ledgerOf, proxied, sessionKey, settledLedger, token, until,
} from './support.mjs';

const WRITE = `mcp__${FILESYSTEM_NAME}__write_file`;

/**
 * A fresh allowed directory, a fresh session, and the proxy in front of the filesystem server. Like every
 * real MCP client, it lists the tools first (`list: false` leaves that out): the proxy learns the read-only
 * annotations only from a `tools/list` answer it forwarded.
 */
async function start(label, { list = true, ...opts } = {}) {
  const dir = await mkdtemp(`${tmpdir()}/mcp-fs-${label}-`);
  const session = sessionKey(label);
  const conn = await proxied({ session, server: filesystemEntry, serverArgs: [dir], ...opts });
  if (list) await conn.client.listTools();
  return { dir, session, conn };
}

const text = (result) => result.content.map((c) => c.text).join('');

const settled = (session, n) => settledLedger(session, n);

/** The published record for a proxy-recorded call, with its ids taken from the record itself. */
function expectRecord(r, tool, status) {
  assert.equal(typeof r.mutation_id, 'string');
  assert.ok(r.mutation_id.length > 0);
  assert.equal(typeof r.logical_turn_id, 'string');
  assert.deepEqual(r, {
    schema: 'mutation_outcome/v1',
    logical_turn_id: r.logical_turn_id,
    mutation_id: r.mutation_id,
    tool,
    status,
    resource_id: null,
    url: null,
    title: null,
  });
}

const kinds = (l, id) => l.histories[id].changes.map((c) => c.kind);

test('write_file is recorded completed and the file is on disk; read-only tools record nothing', async () => {
  const { dir, session, conn } = await start('write');
  try {
    // Read-only tools (annotated readOnlyHint: true) first: forwarded, nothing recorded.
    const listed = await conn.client.callTool({ name: 'list_directory', arguments: { path: dir } });
    assert.notEqual(listed.isError, true);
    assert.equal(await ledgerOf(session), null);

    const res = await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'hello' } });
    assert.notEqual(res.isError, true, text(res));
    assert.equal(await readFile(`${dir}/a.txt`, 'utf8'), 'hello');

    const read = await conn.client.callTool({ name: 'read_file', arguments: { path: `${dir}/a.txt` } });
    assert.equal(text(read), 'hello');
    const listed2 = await conn.client.callTool({ name: 'list_directory', arguments: { path: dir } });
    assert.equal(text(listed2), '[FILE] a.txt');

    const l = await settled(session, 1);
    expectRecord(l.records[0], WRITE, 'completed');
    assert.equal(l.entries[0].ledger_status, 'completed');
    const id = l.records[0].mutation_id;
    assert.deepEqual(kinds(l, id), ['approval', 'intent', 'settlement']);
    // Approve and intent in one batch (one group: one time), before the call was forwarded.
    const [approval, intent] = l.histories[id].changes;
    assert.equal(approval.at, intent.at);

    // A second write in the same turn (well within --turn-gap-secs 30): its own operation id.
    await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/b.txt`, content: 'again' } });
    const l2 = await settled(session, 2);
    assert.deepEqual(countBy(l2.records), { completed: 2 });
    assert.notEqual(l2.records[1].mutation_id, id);
    assert.equal(l2.records[1].logical_turn_id, l2.records[0].logical_turn_id);
    assert.deepEqual(conn.errors, []);
  } finally {
    await close(conn);
  }
});

test('a session of read-only calls only is never created', async () => {
  const { dir, session, conn } = await start('readonly');
  try {
    for (const name of ['list_directory', 'list_allowed_directories', 'directory_tree', 'get_file_info']) {
      const r = await conn.client.callTool({ name, arguments: { path: dir } });
      assert.notEqual(r.isError, true, `${name}: ${text(r)}`);
    }
  } finally {
    await close(conn);
  }
  assert.equal(await ledgerOf(session), null);
});

test('a tool the proxy has not seen in a tools/list answer is protected, read-only or not', async () => {
  const { dir, session, conn } = await start('unlisted', { list: false });
  try {
    const listed = await conn.client.callTool({ name: 'list_directory', arguments: { path: dir } });
    assert.notEqual(listed.isError, true);
    const l = await settled(session, 1);
    expectRecord(l.records[0], `mcp__${FILESYSTEM_NAME}__list_directory`, 'completed');
    // Once the client has listed the tools, the annotation counts: no second record.
    await conn.client.listTools();
    await conn.client.callTool({ name: 'list_directory', arguments: { path: dir } });
    await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'x' } });
    const l2 = await settled(session, 2);
    assert.deepEqual(l2.records.map((r) => r.tool), [`mcp__${FILESYSTEM_NAME}__list_directory`, WRITE]);
  } finally {
    await close(conn);
  }
});

test('a path outside the allowed directory (isError) is recorded failed', async () => {
  const { session, conn } = await start('outside');
  const outside = `${await mkdtemp(`${tmpdir()}/mcp-fs-not-allowed-`)}/x.txt`;
  try {
    const res = await conn.client.callTool({ name: 'write_file', arguments: { path: outside, content: 'no' } });
    assert.equal(res.isError, true);
    assert.match(text(res), /Access denied - path outside allowed directories/);
    assert.equal(existsSync(outside), false);
    const l = await settled(session, 1);
    expectRecord(l.records[0], WRITE, 'failed');
    assert.equal(l.entries[0].ledger_status, 'failed');
    assert.equal('reason' in l.records[0], false);
  } finally {
    await close(conn);
  }
});

test('a JSON-RPC error other than -32601/-32602 is forwarded unchanged and recorded outcome_unknown', async () => {
  const { dir, session, conn } = await start('rpc-error');
  try {
    // `arguments` must be an object: the SDK server answers -32603 (internal error), the kind of error that
    // proves nothing about what the tool did.
    const err = await conn.client
      .request({ method: 'tools/call', params: { name: 'write_file', arguments: 'not an object' } }, CallToolResultSchema)
      .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    assert.ok(err instanceof McpError, `${err}`);
    assert.equal(err.code, -32603);
    assert.match(err.message, /expected record, received string/);
    const l = await settled(session, 1);
    expectRecord(l.records[0], WRITE, 'outcome_unknown');
    assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
    assert.deepEqual(await readdir(dir), []);
  } finally {
    await close(conn);
  }
});

test('--is-error-as unknown records an isError answer as outcome_unknown (settled, no reason)', async () => {
  const { session, conn } = await start('iserror-unknown', { proxyArgs: ['--is-error-as', 'unknown'] });
  const outside = `${await mkdtemp(`${tmpdir()}/mcp-fs-not-allowed-`)}/x.txt`;
  try {
    const res = await conn.client.callTool({ name: 'write_file', arguments: { path: outside, content: 'no' } });
    assert.equal(res.isError, true);
    const l = await settled(session, 1);
    expectRecord(l.records[0], WRITE, 'outcome_unknown');
    assert.equal(l.entries[0].ledger_status, 'outcome_unknown');
  } finally {
    await close(conn);
  }
});

test('the ledger unreachable: the write is refused with a JSON-RPC error, the file never appears, read-only calls go on', async () => {
  const port = await closedPort();
  const { dir, session, conn } = await start('ledger-down', { ledger: `http://127.0.0.1:${port}` });
  try {
    const t0 = Date.now();
    const err = await conn.client
      .callTool({ name: 'write_file', arguments: { path: `${dir}/never.txt`, content: 'no' } })
      .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    assert.ok(err instanceof McpError, `${err}`);
    assert.match(err.message, /ledger/i, `after ${Date.now() - t0} ms`);
    // docs/mcp-proxy.md "Failure behaviour": -32010, the tool was not called, with the operation id.
    assert.equal(err.code, -32010);
    assert.equal(err.data.tool_called, false);
    assert.match(err.data.operation_id, /^op-[0-9a-f]{12}-1$/);
    assert.ok(err.message.includes(err.data.operation_id));
    assert.match(err.message, /the tool was NOT called/);
    // The connection is still up (a JSON-RPC error, not a closed pipe), and read-only calls need no ledger.
    const listed = await conn.client.callTool({ name: 'list_directory', arguments: { path: dir } });
    assert.notEqual(listed.isError, true);
    assert.deepEqual(await readdir(dir), []);
    assert.deepEqual(conn.errors, []);
  } finally {
    await close(conn);
  }
  assert.equal(existsSync(`${dir}/never.txt`), false);
  assert.equal(await ledgerOf(session), null);
});

test('the ledger refusing (a wrong host token): the write is refused, the file never appears, nothing recorded', async () => {
  const { dir, session, conn } = await start('ledger-refuses', { env: { OUTCOMES_HOST_TOKEN: 'not-the-host-token' } });
  try {
    const err = await conn.client
      .callTool({ name: 'write_file', arguments: { path: `${dir}/never.txt`, content: 'no' } })
      .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    assert.ok(err instanceof McpError, `${err}`);
    assert.match(err.message, /ledger/i);
    assert.equal(err.code, -32010);
    assert.equal(err.data.tool_called, false);
    assert.match(err.message, /401/);
    assert.deepEqual(await readdir(dir), []);
  } finally {
    await close(conn);
  }
  assert.equal(existsSync(`${dir}/never.txt`), false);
  assert.equal(await ledgerOf(session), null);
});

test('--on-ledger-down forward: with the ledger unreachable the write goes through and nothing is recorded', async () => {
  const port = await closedPort();
  const { dir, session, conn } = await start('ledger-down-forward', {
    ledger: `http://127.0.0.1:${port}`,
    proxyArgs: ['--on-ledger-down', 'forward'],
  });
  try {
    const res = await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'through' } });
    assert.notEqual(res.isError, true, text(res));
    assert.equal(await readFile(`${dir}/a.txt`, 'utf8'), 'through');
  } finally {
    await close(conn);
  }
  assert.equal(await ledgerOf(session), null);
});

test('--protect and --skip override the annotations by name; --name names the server in the tool', async () => {
  const { dir, session, conn } = await start('overrides', {
    proxyArgs: ['--protect', 'list_directory', '--skip', 'write_file,create_directory', '--name', 'fs'],
  });
  try {
    await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'x' } });
    await conn.client.callTool({ name: 'create_directory', arguments: { path: `${dir}/d` } });
    assert.equal(await ledgerOf(session), null);
    const listed = await conn.client.callTool({ name: 'list_directory', arguments: { path: dir } });
    assert.equal(text(listed), '[FILE] a.txt\n[DIR] d');
    const l = await settled(session, 1);
    expectRecord(l.records[0], 'mcp__fs__list_directory', 'completed');
  } finally {
    await close(conn);
  }
});

test('logical turns: the client\'s _meta "outcomes/logical_turn_id", else a new turn after --turn-gap-secs', async () => {
  const { dir, session, conn } = await start('turns', { proxyArgs: ['--turn-gap-secs', '2'] });
  const write = (name, _meta) =>
    conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/${name}`, content: name }, ...(_meta ? { _meta } : {}) });
  try {
    await write('1', { 'outcomes/logical_turn_id': 'turn-from-client' });
    await write('2');
    await write('3'); // right after: the same turn as 2
    await new Promise((r) => setTimeout(r, 3_500));
    await write('4'); // after a gap over 2 s: a new turn
    const l = await settled(session, 4);
    const turns = l.records.map((r) => r.logical_turn_id);
    assert.equal(turns[0], 'turn-from-client');
    assert.equal(turns[1], turns[2]);
    assert.notEqual(turns[1], 'turn-from-client');
    assert.notEqual(turns[3], turns[2]);
    assert.notEqual(turns[3], 'turn-from-client');
    assert.deepEqual(countBy(l.records), { completed: 4 });
  } finally {
    await close(conn);
  }
});

test('--turn-gap-secs 0: every call not naming a turn is a turn of its own', async () => {
  const { dir, session, conn } = await start('turns-zero', { proxyArgs: ['--turn-gap-secs', '0'] });
  try {
    for (const name of ['1', '2', '3']) {
      await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/${name}`, content: name } });
    }
    const l = await settled(session, 3);
    assert.equal(new Set(l.records.map((r) => r.logical_turn_id)).size, 3);
  } finally {
    await close(conn);
  }
});

test('two proxy runs with one --session-key: one session, each call its own operation id; a viewer link at start for an existing session', async () => {
  const dir = await mkdtemp(`${tmpdir()}/mcp-fs-shared-`);
  const session = sessionKey('shared');
  const ids = [];
  for (const run of [1, 2]) {
    const conn = await proxied({ session, server: filesystemEntry, serverArgs: [dir], proxyArgs: run === 2 ? ['--viewer-link'] : [] });
    try {
      await conn.client.listTools();
      if (run === 2) {
        // The session exists already: the link is printed at start, before any call.
        assert.match(conn.stderr(), /^outcomes mcp-proxy: viewer link: http:\/\/.*\/v\/[A-Za-z0-9_-]{43}$/m);
      }
      await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/run${run}.txt`, content: `${run}` } });
      const l = await settled(session, run);
      ids.push(l.records[run - 1].mutation_id);
    } finally {
      await close(conn);
    }
  }
  assert.notEqual(ids[0], ids[1]);
  const l = await settled(session, 2);
  assert.deepEqual(l.records.map((r) => r.mutation_id), ids);
  assert.deepEqual(countBy(l.records), { completed: 2 });
});

test('a slow ledger: a settle held in the background holds back neither the answer nor the calls after it', async () => {
  // Every settle (alone or in a batch) waits until the test releases it; approve + intent pass at once.
  const ledger = await faultyLedger((r) => (isSettle(r) ? 'hold' : 'pass'));
  const { dir, session, conn } = await start('slow-ledger', { ledger: ledger.url });
  try {
    const first = await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: '1' } });
    assert.notEqual(first.isError, true);
    // The answer came back while its settle is still held: in flight in the ledger.
    await until('the settle reached the ledger', () => ledger.held() === 1);
    const listed = await conn.client.callTool({ name: 'list_directory', arguments: { path: dir } });
    assert.equal(text(listed), '[FILE] a.txt');
    const second = await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/b.txt`, content: '2' } });
    assert.notEqual(second.isError, true);
    await until('both settles held', () => ledger.held() === 2);
    const inFlight = await ledgerOf(session);
    assert.deepEqual(inFlight.entries.map((e) => e.ledger_status), ['execution_started', 'execution_started']);
    await ledger.release();
    const l = await settled(session, 2);
    assert.deepEqual(countBy(l.records), { completed: 2 });
  } finally {
    await close(conn);
    await ledger.close();
  }
});

test('a stuck ledger (nothing answered): read-only calls are answered, no ledger request made at all', async () => {
  const ledger = await faultyLedger(() => 'hold');
  const { dir, conn } = await start('stuck-ledger', { ledger: ledger.url });
  try {
    for (let i = 0; i < 3; i++) {
      const listed = await conn.client.callTool({ name: 'list_directory', arguments: { path: dir } });
      assert.notEqual(listed.isError, true);
    }
    const info = await conn.client.callTool({ name: 'get_file_info', arguments: { path: dir } });
    assert.notEqual(info.isError, true);
    assert.deepEqual(ledger.seen, []);
  } finally {
    await close(conn);
    await ledger.close();
  }
});

test('a session key with a space, a slash, non-ASCII and %: recorded under that exact key; the printed page URL opens it', async () => {
  const dir = await mkdtemp(`${tmpdir()}/mcp-fs-key-`);
  const session = `${sessionKey('odd')} chat/ü%`;
  const conn = await proxied({ session, server: filesystemEntry, serverArgs: [dir] });
  try {
    await conn.client.listTools();
    await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'x' } });
    const l = await settled(session, 1);
    assert.equal(l.records[0].status, 'completed');
    const page = `${base}/sessions/${encodeURIComponent(session)}`;
    assert.ok(conn.stderr().split('\n').includes(`outcomes mcp-proxy: session ${session}: ${page}`), conn.stderr());
    const r = await fetch(page, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200);
    assert.ok((await r.text()).includes(l.records[0].mutation_id));
  } finally {
    await close(conn);
  }
});

test('large messages (a 2 MiB file) pass through unchanged both ways', async () => {
  const { dir, session, conn } = await start('large');
  const content = 'ü'.repeat(1024 * 1024) + '\n' + 'end'; // 2 MiB of UTF-8 and a newline inside the JSON string
  try {
    const w = await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/big.txt`, content } });
    assert.notEqual(w.isError, true);
    assert.equal(await readFile(`${dir}/big.txt`, 'utf8'), content);
    const r = await conn.client.callTool({ name: 'read_text_file', arguments: { path: `${dir}/big.txt` } });
    assert.equal(text(r), content);
    const l = await settled(session, 1);
    assert.equal(l.records[0].status, 'completed');
  } finally {
    await close(conn);
  }
});

test('16 concurrent calls: 16 entries, each with its own operation id and the right status', async () => {
  const { dir, session, conn } = await start('concurrent');
  const outside = await mkdtemp(`${tmpdir()}/mcp-fs-not-allowed-`);
  try {
    const calls = Array.from({ length: 16 }, (_, i) => {
      const path = i % 8 < 5 ? `${dir}/f${i}.txt` : `${outside}/f${i}.txt`; // 10 inside, 6 outside
      return conn.client.callTool({ name: 'write_file', arguments: { path, content: `content ${i}` } });
    });
    const results = await Promise.all(calls);
    assert.deepEqual(countBy(results.map((r) => ({ status: r.isError === true ? 'failed' : 'completed' }))), {
      completed: 10,
      failed: 6,
    });
    assert.equal((await readdir(dir)).length, 10);
    assert.deepEqual(await readdir(outside), []);
    const l = await settled(session, 16);
    assert.deepEqual(countBy(l.records), { completed: 10, failed: 6 });
    assert.deepEqual(countBy(l.entries, 'ledger_status'), { completed: 10, failed: 6 });
    assert.equal(new Set(l.records.map((r) => r.mutation_id)).size, 16);
    for (const r of l.records) assert.equal(r.tool, WRITE);
    assert.deepEqual(conn.errors, []);
  } finally {
    await close(conn);
  }
});

test('--viewer-link prints a viewer link to the session that opens it', async () => {
  const { dir, session, conn } = await start('viewer', { proxyArgs: ['--viewer-link'] });
  try {
    await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'v' } });
    await settled(session, 1);
    const prefix = 'outcomes mcp-proxy: viewer link: ';
    const line = await until('the viewer link line on stderr', () =>
      conn.stderr().split('\n').find((l) => l.startsWith(prefix)),
    );
    const link = line.slice(prefix.length);
    assert.match(link, new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/v/[A-Za-z0-9_-]{43}$`));
    const opened = await fetch(link, { redirect: 'manual' });
    assert.equal(opened.status, 303);
    assert.equal(opened.headers.get('location'), `/sessions/${session}`);
    assert.match(opened.headers.get('set-cookie') ?? '', /^outcomes_viewer=/);
  } finally {
    await close(conn);
  }
});
