// `outcomes mcp-proxy` when the ledger answers 503 or loses its answers (issue 24 item 5): the writes are
// retried with backoff, and a retry is safe because the ledger refuses a redelivery (a 409 whose `current`
// already shows the change counts as done). The real `outcomes serve` behind a forwarder that injects the
// faults (support.mjs `faultyLedger`); the real filesystem MCP server; the official SDK client.
// The rules are docs/mcp-proxy.md's ("Failure behaviour").
//
// Run by scripts/test.sh (`node --test e2e/mcp/`). Alone, against a server of your own:
//   OUTCOMES_HOST_TOKEN=t target/debug/outcomes serve --addr 127.0.0.1:3350 --data-dir "$(mktemp -d)" &
//   BASE_URL=http://127.0.0.1:3350 OUTCOMES_HOST_TOKEN=t OUTCOMES_BIN=target/debug/outcomes \
//     node --test e2e/mcp/ledger-faults.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  FILESYSTEM_NAME, close, faultyLedger, filesystemEntry, isApproveBatch, isSettle, ledgerOf, proxied, sessionKey, settledLedger,
} from './support.mjs';

const WRITE = `mcp__${FILESYSTEM_NAME}__write_file`;

async function start(label, ledger) {
  const dir = await mkdtemp(`${tmpdir()}/mcp-fs-${label}-`);
  const session = sessionKey(label);
  const conn = await proxied({ session, server: filesystemEntry, serverArgs: [dir], ledger: ledger.url });
  await conn.client.listTools();
  return { dir, session, conn };
}

const count = (ledger, pred) => ledger.seen.filter(pred).length;

test('approve + intent answered 503 twice: retried, then the call is forwarded and recorded once', async () => {
  let refused = 0;
  const ledger = await faultyLedger((r) => (isApproveBatch(r) && refused++ < 2 ? 503 : 'pass'));
  const { dir, session, conn } = await start('batch-503', ledger);
  try {
    const res = await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'retried' } });
    assert.notEqual(res.isError, true);
    assert.equal(await readFile(`${dir}/a.txt`, 'utf8'), 'retried');
    const l = await settledLedger(session, 1);
    assert.equal(l.records[0].tool, WRITE);
    assert.equal(l.records[0].status, 'completed');
    assert.equal(count(ledger, isApproveBatch), 3);
  } finally {
    await close(conn);
    await ledger.close();
  }
});

test('approve + intent landed but its answer lost: the retry meets the ledger\'s refusal of a redelivery, which counts as recorded', async () => {
  let lost = false;
  const ledger = await faultyLedger((r) => {
    if (isApproveBatch(r) && !lost) {
      lost = true;
      return 'lose';
    }
    return 'pass';
  });
  const { dir, session, conn } = await start('batch-lost', ledger);
  try {
    const res = await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'once' } });
    assert.notEqual(res.isError, true, JSON.stringify(res));
    assert.equal(await readFile(`${dir}/a.txt`, 'utf8'), 'once');
    const l = await settledLedger(session, 1);
    assert.equal(l.records[0].status, 'completed');
    assert.equal(l.entries[0].ledger_status, 'completed');
    // One approval and one intent: the redelivered batch changed nothing.
    assert.deepEqual(l.histories[l.records[0].mutation_id].changes.map((c) => c.kind), ['approval', 'intent', 'settlement']);
    assert.equal(count(ledger, isApproveBatch), 2);
  } finally {
    await close(conn);
    await ledger.close();
  }
});

test('the ledger answering 503 to every approve + intent: refused after the retries, the tool never called', async () => {
  const ledger = await faultyLedger((r) => (isApproveBatch(r) ? 503 : 'pass'));
  const { dir, session, conn } = await start('batch-always-503', ledger);
  try {
    const err = await conn.client
      .callTool({ name: 'write_file', arguments: { path: `${dir}/never.txt`, content: 'no' } })
      .then((r) => assert.fail(`answered ${JSON.stringify(r)}`), (e) => e);
    assert.ok(err instanceof McpError, `${err}`);
    assert.equal(err.code, -32010);
    assert.equal(err.data.tool_called, false);
    assert.ok(count(ledger, isApproveBatch) >= 2, `${count(ledger, isApproveBatch)} tries`);
    assert.deepEqual(await readdir(dir), []);
  } finally {
    await close(conn);
    await ledger.close();
  }
  assert.equal(await ledgerOf(session), null);
});

test('a settle answered 503, then landed with its answer lost: retried until the ledger shows it done; recorded once', async () => {
  let settles = 0;
  const ledger = await faultyLedger((r) => {
    if (!isSettle(r)) return 'pass';
    settles += 1;
    return settles === 1 ? 503 : settles === 2 ? 'lose' : 'pass';
  });
  const { dir, session, conn } = await start('settle-faults', ledger);
  try {
    const res = await conn.client.callTool({ name: 'write_file', arguments: { path: `${dir}/a.txt`, content: 'x' } });
    assert.notEqual(res.isError, true);
    const l = await settledLedger(session, 1);
    assert.equal(l.entries[0].ledger_status, 'completed');
    assert.deepEqual(l.histories[l.records[0].mutation_id].changes.map((c) => c.kind), ['approval', 'intent', 'settlement']);
    // Tried until a try's answer arrived: 503, lost (landed), then the 409 showing it done.
    await settledLedger(session, 1, () => count(ledger, isSettle) === 3);
    assert.doesNotMatch(conn.stderr(), /could not be written| ERROR /);
  } finally {
    await close(conn);
    await ledger.close();
  }
});
