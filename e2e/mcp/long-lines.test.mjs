// `outcomes mcp-proxy` with lines of any length and a server that exits in the middle of a batch (issue 38
// item 5): a line over --max-line-bytes is streamed, never held whole, and a call it answers is settled
// outcome_unknown; a client line over it is not forwarded; every request a dying server left unanswered
// gets a JSON-RPC error, a batch's in one array. A scripted raw MCP server (scripted-server.mjs) and a raw
// JSON-RPC client: the SDKs write neither 128 MiB lines nor batches. The rules are docs/mcp-proxy.md's
// ("Long lines", "Failure behaviour").
//
// Run by scripts/test.sh (`node --test e2e/mcp/`). Alone, against a server of your own:
//   OUTCOMES_HOST_TOKEN=t target/debug/outcomes serve --addr 127.0.0.1:3350 --data-dir "$(mktemp -d)" &
//   BASE_URL=http://127.0.0.1:3350 OUTCOMES_HOST_TOKEN=t OUTCOMES_BIN=target/debug/outcomes \
//     node --test e2e/mcp/long-lines.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { base, outcomesBin, repo, sessionKey, settledLedger, token } from './support.mjs';

const scripted = `${repo}e2e/mcp/scripted-server.mjs`;
const MiB = 1024 * 1024;
const WRITE = 'mcp__scripted__write';

/**
 * The proxy in front of the scripted server, spoken to with raw lines: {send(msg or raw string), next(pred)
 * (the next output line, a Buffer, that `pred` accepts; earlier ones skipped), proc, stderr(), exited}.
 */
function start(session, proxyArgs = []) {
  const proc = spawn(
    outcomesBin,
    ['mcp-proxy', '--server', base, '--session-key', session, ...proxyArgs, '--', process.execPath, scripted],
    { env: { PATH: process.env.PATH, OUTCOMES_HOST_TOKEN: token }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  proc.stderr.on('data', (c) => (stderr += c));
  const lines = [];
  let waiting = null;
  let pending = [];
  proc.stdout.on('data', (chunk) => {
    let at = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, at)) {
      pending.push(chunk.subarray(at, i));
      lines.push(Buffer.concat(pending));
      pending = [];
      at = i + 1;
    }
    if (at < chunk.length) pending.push(chunk.subarray(at));
    waiting?.();
  });
  let closed = false;
  proc.stdout.on('close', () => {
    closed = true;
    waiting?.();
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  proc.stdin.on('error', () => {});
  return {
    proc,
    exited,
    stderr: () => stderr,
    send: (m) => proc.stdin.write(`${typeof m === 'string' ? m : JSON.stringify(m)}\n`),
    /** The next line `pred(buffer)` accepts, within `ms`. */
    async next(pred = () => true, ms = 60_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        while (lines.length) {
          const l = lines.shift();
          if (pred(l)) return l;
        }
        if (closed || Date.now() > deadline) {
          assert.fail(`no such line ${closed ? 'before the output ended' : `within ${ms} ms`}; stderr: ${stderr.slice(-2000)}`);
        }
        await new Promise((r) => {
          waiting = r;
          setTimeout(r, 200);
        });
      }
    },
  };
}

const json = (l) => JSON.parse(l.toString('utf8'));
/** Whether a line (small enough to parse, and JSON) is the response to `id`. */
const answers = (id) => (l) => {
  try {
    return l.length < MiB && json(l).id === id && ('result' in json(l) || 'error' in json(l));
  } catch {
    return false;
  }
};
const call = (id, name, args = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

async function handshake(p) {
  p.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  await p.next(answers(1));
  p.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  p.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  await p.next(answers(2));
}

/** The proxy's peak resident memory so far (VmHWM), in bytes. */
async function peak(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)[1]) * 1024;
}

/** The sha256 of each line over 1 MiB the scripted server wrote, in order (from its stderr). */
const wroteHashes = (stderr) => [...stderr.matchAll(/^scripted: wrote (\d+) bytes sha256 ([0-9a-f]{64})$/gm)].map((m) => [Number(m[1]), m[2]]);

test('a 128 MiB answer (8 x the default --max-line-bytes) passes intact in bounded memory; its call is settled outcome_unknown', async () => {
  const session = sessionKey('long-answer');
  const p = start(session);
  try {
    await handshake(p);
    p.send(call(3, 'write'));
    assert.equal(json(await p.next(answers(3))).result.content[0].text, 'written');
    // Settled, so the baseline includes a ledger round trip.
    await settledLedger(session, 1);
    const baseline = await peak(p.proc.pid);

    // A 64 MiB notification while call 4 is in flight answers nothing: call 4 stays in flight until its
    // own (small) answer, and is completed.
    p.send(call(4, 'write', { noise: 64 * MiB }));
    const noise = await p.next((l) => l.length > MiB);
    assert.equal(json(await p.next(answers(4))).result.content[0].text, 'written');

    // Call 5's answer is a 128 MiB line with its id last: forwarded intact, unread.
    p.send(call(5, 'write', { size: 128 * MiB }));
    const long = await p.next((l) => l.length > MiB);
    const grown = (await peak(p.proc.pid)) - baseline;

    // The proxy still works after it.
    p.send(call(6, 'write'));
    assert.equal(json(await p.next(answers(6))).result.content[0].text, 'written');

    const sha = (b) => createHash('sha256').update(b).digest('hex');
    assert.deepEqual([[noise.length, sha(noise)], [long.length, sha(long)]], wroteHashes(p.stderr()));
    assert.equal(long.length, 128 * MiB);
    assert.match(long.subarray(-40).toString(), /"jsonrpc":"2.0","id":5}$/);
    // Before: the line was held whole (a 300 MB line took the proxy to 603 MB). Now about one
    // --max-line-bytes (16 MiB) at most; 3 x that is the bound, robust on a busy machine.
    assert.ok(grown < 3 * 16 * MiB, `peak resident memory grew by ${(grown / MiB).toFixed(1)} MiB`);
    console.log(`# proxy peak RSS: baseline ${(baseline / MiB).toFixed(1)} MiB, grown by ${(grown / MiB).toFixed(1)} MiB over the 64 + 128 MiB lines`);

    p.proc.stdin.end();
    assert.deepEqual(await p.exited, { code: 0, signal: null });
    const l = await settledLedger(session, 4);
    assert.deepEqual(
      l.entries.map((e) => [e.outcome.tool, e.ledger_status]),
      [[WRITE, 'completed'], [WRITE, 'completed'], [WRITE, 'outcome_unknown'], [WRITE, 'completed']],
    );
    assert.equal('reason' in l.records[2], false);
    const op = l.records[2].mutation_id;
    const logged = p.stderr().split('\n').filter((x) => x.includes(op) && x.includes('over --max-line-bytes, forwarded unread: recorded outcome_unknown'));
    assert.equal(logged.length, 1, p.stderr().slice(-3000));
  } finally {
    p.proc.kill('SIGKILL');
  }
});

test('a client line over --max-line-bytes is not forwarded: its requests get -32011, a batch\'s in an array; nothing recorded or called', async () => {
  const session = sessionKey('long-request');
  const max = 1 * MiB;
  const p = start(session, ['--max-line-bytes', String(max)]);
  try {
    await handshake(p);
    // As the TypeScript SDK writes a request: its id last, after 2 MiB of arguments.
    const big = 'x'.repeat(2 * MiB);
    p.send(`{"method":"tools/call","params":{"name":"write","arguments":{"content":"${big}"}},"jsonrpc":"2.0","id":"big-1"}`);
    const refused = json(await p.next(answers('big-1')));
    assert.deepEqual(refused.error, {
      code: -32011,
      message: `outcomes mcp-proxy: this message is over --max-line-bytes (${max} bytes), so the proxy could not read it and did NOT forward it to the MCP server: nothing was called`,
      data: { forwarded: false, max_line_bytes: max },
    });
    p.send(JSON.stringify([call(7, 'write', { content: big }), { jsonrpc: '2.0', method: 'notifications/progress', params: {} }, call(8, 'read')]));
    const batch = json(await p.next((l) => l[0] === 0x5b));
    assert.deepEqual(batch.map((a) => [a.id, a.error.code]), [[7, -32011], [8, -32011]]);
    // A line of exactly --max-line-bytes is read whole and forwarded.
    const pad = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write","arguments":{"pad":"`;
    const exact = `${pad}${'y'.repeat(max - pad.length - 4)}"}}}`;
    assert.equal(Buffer.byteLength(exact), max);
    p.send(exact);
    assert.equal(json(await p.next(answers(9))).result.content[0].text, 'written');
    p.proc.stdin.end();
    assert.deepEqual(await p.exited, { code: 0, signal: null });
    // The server read the handshake, the line of exactly max bytes, and nothing longer.
    const read = [...p.stderr().matchAll(/^scripted: read (\d+) bytes$/gm)].map((m) => Number(m[1]));
    assert.equal(Math.max(...read), max);
    assert.equal(read.length, 4);
    const l = await settledLedger(session, 1);
    assert.deepEqual(l.records.map((r) => [r.tool, r.status]), [[WRITE, 'completed']]);
  } finally {
    p.proc.kill('SIGKILL');
  }
});

test('the server exits in the middle of a batch of 5 protected calls: 5 errors in one array, each naming its operation; recorded outcome_unknown', async () => {
  const session = sessionKey('exit-batch');
  const p = start(session);
  try {
    await handshake(p);
    // A read-only call the server never answers, then the batch it dies on, in the middle of its answer
    // to the first call (a line cut short: no answer).
    p.send(call(10, 'read'));
    p.send(JSON.stringify([11, 12, 13, 14, 15].map((id) => call(id, 'write', { n: id }))));
    // The cut line is forwarded as it came, and ended, so that the proxy's answers are lines of their own.
    await p.next((l) => l.toString() === '{"jsonrpc":"2.0","id":11,"result":{"content":[');
    const single = json(await p.next(answers(10)));
    assert.deepEqual(single.error, { code: -32000, message: "outcomes mcp-proxy: the MCP server's output ended before it answered this request" });
    const batch = json(await p.next((l) => l[0] === 0x5b));
    assert.deepEqual(await p.exited, { code: 3, signal: null });
    const l = await settledLedger(session, 5);
    assert.deepEqual(l.entries.map((e) => e.ledger_status), Array(5).fill('outcome_unknown'));
    assert.equal(batch.length, 5);
    // Each error names its own call's operation: the ledger's entry recorded for that request.
    const ops = l.records.map((r) => r.mutation_id);
    assert.deepEqual(batch.map((a) => a.id), [11, 12, 13, 14, 15]);
    batch.forEach((a, i) => {
      assert.equal(a.jsonrpc, '2.0');
      assert.deepEqual(a.error, {
        code: -32000,
        message: `outcomes mcp-proxy: the MCP server's output ended before it answered; the outcome is unknown (operation ${ops[i]}): the tool may or may not have run, do not repeat it blindly`,
        data: { operation_id: ops[i], outcome: 'outcome_unknown' },
      });
    });
  } finally {
    p.proc.kill('SIGKILL');
  }
});

test('a request reusing the id of a call in flight gets -32600 and is not forwarded; the call in flight keeps its id and its answer at the server\'s exit', async () => {
  const session = sessionKey('duplicate-id');
  const p = start(session);
  try {
    await handshake(p);
    // Call 20 hangs at the server; a second request with id 20 (JSON-RPC forbids it) is refused at once.
    p.send(call(20, 'write', { hang: true }));
    p.send(call(20, 'write'));
    const refused = json(await p.next(answers(20)));
    assert.deepEqual(refused, {
      jsonrpc: '2.0',
      id: 20,
      error: {
        code: -32600,
        message: 'outcomes mcp-proxy: request id 20 is already in use by a request in flight (JSON-RPC forbids reusing it before its answer), so this request was NOT forwarded: nothing was called',
        data: { forwarded: false },
      },
    });
    // The server then exits on call 21: both calls in flight get the proxy's error, call 20 naming its own
    // operation (the first call's, the only one recorded for id 20).
    p.send(call(21, 'write', { exit: true }));
    const gone = [json(await p.next(answers(20))), json(await p.next(answers(21)))];
    assert.deepEqual(await p.exited, { code: 3, signal: null });
    const l = await settledLedger(session, 2);
    assert.deepEqual(l.entries.map((e) => e.ledger_status), ['outcome_unknown', 'outcome_unknown']);
    const ops = l.records.map((r) => r.mutation_id);
    assert.deepEqual(gone.map((a) => [a.id, a.error.code, a.error.data.operation_id]), [[20, -32000, ops[0]], [21, -32000, ops[1]]]);
    // The scripted server read the handshake's three lines and two calls: never the duplicate.
    assert.equal([...p.stderr().matchAll(/^scripted: read /gm)].length, 5, p.stderr());
  } finally {
    p.proc.kill('SIGKILL');
  }
});

test('an id the proxy gave up on (its --call-timeout-secs) stays in use: reusing it gets -32600; the late answer reconciles the first call', async () => {
  const session = sessionKey('reuse-after-timeout');
  const p = start(session, ['--call-timeout-secs', '1']);
  try {
    await handshake(p);
    p.send(call(30, 'write', { delay: 2500 }));
    assert.equal(json(await p.next(answers(30))).error.code, -32001);
    // The server may still answer 30: a new request with that id is refused, not forwarded.
    p.send(call(30, 'write'));
    const refused = json(await p.next(answers(30)));
    assert.equal(refused.error.code, -32600);
    assert.deepEqual(refused.error.data, { forwarded: false });
    // The late answer reconciles the first call, the only one recorded.
    const l = await settledLedger(session, 1, (l) => l.entries[0].ledger_status === 'completed');
    assert.equal(l.entries[0].established_by, 'late_answer');
  } finally {
    p.proc.kill('SIGKILL');
  }
});

test('a number id in another spelling than the server\'s echo (40.0 answered as 40) is matched: the call completes', async () => {
  const session = sessionKey('id-spelling');
  const p = start(session);
  try {
    await handshake(p);
    p.send('{"jsonrpc":"2.0","id":40.0,"method":"tools/call","params":{"name":"write","arguments":{}}}');
    const answer = json(await p.next(answers(40)));
    assert.equal(answer.result.content[0].text, 'written');
    const l = await settledLedger(session, 1);
    assert.deepEqual(l.entries.map((e) => e.ledger_status), ['completed']);
    // 40 and 40.0 are one id: while a call holds it, the other spelling is refused.
    p.send(call(41, 'write', { hang: true }));
    p.send('{"jsonrpc":"2.0","id":41.0,"method":"tools/call","params":{"name":"write","arguments":{}}}');
    assert.equal(json(await p.next(answers(41))).error.code, -32600);
  } finally {
    p.proc.kill('SIGKILL');
  }
});
