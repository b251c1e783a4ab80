// Retries against servers this file owns: kill -9 and restart mid-run, answers lost after the
// ledger committed, and the ledger's own 503 busy with Retry-After. Nothing recorded twice,
// nothing lost, read back from the real server.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Ledger, LedgerError, LedgerSettleError } from 'outcomes-ledger';
import { startServer, outcomes, history, entries } from './helpers.mjs';

const TOOL = 'mcp__dashboards__create';
const servers = [];
after(async () => {
  for (const s of servers) await s.stop();
});
async function own(options) {
  const s = await startServer(options);
  servers.push(s);
  return s;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('kill -9 and restart of the server mid-run: every write recorded once, none lost, each block run once', async () => {
  const server = await own();
  let connectionFailures = 0;
  const countingFetch = async (...args) => {
    try {
      return await fetch(...args);
    } catch (error) {
      connectionFailures += 1;
      throw error;
    }
  };
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token, retry: { maxTotalMs: 20_000 }, fetch: countingFetch });
  const key = 'restart-run';
  const workers = 3;
  const perWorker = 15;
  const runs = new Map();
  let done = 0;
  let killed;
  const killer = (async () => {
    while (done < 10) await sleep(5);
    await server.kill9();
    killed = Date.now();
    await sleep(800);
    await server.restart();
  })();
  const results = await Promise.allSettled(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; i < perWorker; i++) {
        const id = `w${w}-op${i}`;
        await ledger.protectedWrite({ sessionKey: key, logicalTurnId: `turn-${w}`, mutationId: id, tool: TOOL }, async () => {
          runs.set(id, (runs.get(id) ?? 0) + 1);
          await sleep(15);
        });
        done += 1;
      }
    }),
  );
  await killer;
  assert.ok(killed, 'the server was killed mid-run');
  assert.ok(connectionFailures >= 3, `requests failed while it was down and were retried (${connectionFailures})`);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled'], String(results.find((r) => r.reason)?.reason));
  assert.equal(runs.size, workers * perWorker);
  assert.ok([...runs.values()].every((n) => n === 1), 'each block ran once');
  const records = await outcomes(server, key);
  assert.equal(records.length, workers * perWorker);
  assert.equal(new Set(records.map((r) => r.mutation_id)).size, workers * perWorker);
  assert.ok(records.every((r) => r.status === 'completed'), JSON.stringify(records.filter((r) => r.status !== 'completed')));
  for (const r of records) {
    const kinds = (await history(server, key, r.mutation_id)).changes.map((c) => c.kind);
    assert.deepEqual(kinds, ['approval', 'intent', 'settlement'], r.mutation_id);
  }
});

/**
 * A proxy in front of the real server that forwards every request and, for requests `lose`
 * selects, lets the ledger commit and then drops the answer (the connection is destroyed).
 */
async function lossyProxy(upstream, lose) {
  const seen = [];
  const proxy = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    seen.push(`${req.method} ${req.url}`);
    const answer = await fetch(upstream + req.url, {
      method: req.method,
      headers: { authorization: req.headers.authorization ?? '', 'content-type': req.headers['content-type'] ?? '' },
      body: body.length ? body : undefined,
    });
    const text = await answer.text();
    if (lose(req, seen.filter((s) => s === `${req.method} ${req.url}`).length)) {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(text);
  });
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${proxy.address().port}`, seen, close: () => new Promise((r) => proxy.close(r)) };
}

test('answers lost after the ledger committed: the retried batch, settle and reconcile resolve, nothing twice', async () => {
  const server = await own();
  const key = 'lost-answers';
  // lose the first answer of every request: each one lands, its answer never arrives
  const proxy = await lossyProxy(server.baseUrl, (req, nth) => nth === 1);
  try {
    const ledger = new Ledger({ baseUrl: proxy.url, token: server.token, retry: { baseDelayMs: 10 } });
    let runs = 0;
    await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'op-1', tool: TOOL }, async () => {
      runs += 1;
    });
    assert.equal(runs, 1);
    const settle = `POST /api/host/sessions/${key}/mutations/op-1/settlement`;
    // The ledger's id (for op.idempotencyKey) is read once, beside the batch; its lost answer is retried too.
    assert.deepEqual(
      [...proxy.seen].sort(),
      ['GET /api/host/ledger', 'GET /api/host/ledger', 'POST /api/host/batch', 'POST /api/host/batch', settle, settle].sort(),
    );
    assert.deepEqual(proxy.seen.slice(-2), [settle, settle]);
    assert.deepEqual((await history(server, key, 'op-1')).changes.map((c) => c.kind), ['approval', 'intent', 'settlement']);

    // an unknown outcome reconciled: the reconcile's answer is lost, its retry answers already_settled
    await assert.rejects(
      ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'op-2', tool: TOOL }, async () => {
        throw new Error('reply lost');
      }),
      /reply lost/,
    );
    const { changes } = await history(server, key, 'op-2');
    const attemptId = changes.find((c) => c.kind === 'intent').attempt_id;
    const reconciled = await ledger.reconcile({
      sessionKey: key,
      mutationId: 'op-2',
      attemptId,
      completed: true,
      evidence: { source: 'codehost-status', reference: 'issue #419', observedAt: '2026-11-29T10:00:00Z' },
    });
    assert.equal(reconciled.ledger_status, 'completed');
    assert.equal(proxy.seen.filter((s) => s.endsWith('op-2/reconciliation')).length, 2);
    assert.deepEqual((await history(server, key, 'op-2')).changes.map((c) => c.kind), [
      'approval',
      'intent',
      'settlement',
      'reconciliation',
    ]);
    const records = await outcomes(server, key);
    assert.deepEqual(records.map((r) => [r.mutation_id, r.status]), [
      ['op-1', 'completed'],
      ['op-2', 'completed'],
    ]);

    // a session delete whose answer is lost: the retry finds it gone, which is what was asked
    await ledger.deleteSession({ sessionKey: key });
    assert.equal(proxy.seen.filter((s) => s === `DELETE /api/host/sessions/${key}`).length, 2);
  } finally {
    await proxy.close();
  }
});

/**
 * Holds SQLite's write lock on the server's ledger file from another process for `ms` (Python's
 * sqlite3 module: BEGIN IMMEDIATE, as a backup or the sqlite3 shell would), resolving once released.
 */
function holdWriteLock(dataDir, ms) {
  const script = [
    'import sqlite3, sys, time',
    'c = sqlite3.connect(sys.argv[1], isolation_level=None)',
    "c.execute('BEGIN IMMEDIATE')",
    "print('locked', flush=True)",
    'time.sleep(float(sys.argv[2]))',
    "c.execute('COMMIT')",
  ].join('\n');
  const holder = spawn('python3', ['-c', script, join(dataDir, 'ledger.sqlite'), String(ms / 1000)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const locked = new Promise((resolve, reject) => {
    holder.stdout.once('data', () => resolve());
    holder.once('exit', (code) => reject(new Error(`the lock holder exited with ${code} before locking`)));
  });
  const released = new Promise((resolve) => holder.once('exit', resolve));
  return { locked, released };
}

test('the ledger busy (503 busy, Retry-After: 1) is retried after Retry-After; past the budget it is raised and the block never runs', async () => {
  const server = await own({ extraArgs: ['--write-wait-ms', '100'] });
  const sent = [];
  const loggingFetch = async (url, init) => {
    sent.push({ url: String(url), at: Date.now() });
    return fetch(url, init);
  };
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token, fetch: loggingFetch });
  const impatient = new Ledger({ baseUrl: server.baseUrl, token: server.token, retry: { maxTotalMs: 500 } });
  const key = 'busy';
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'warm', tool: TOOL }, async () => {});

  const lock = holdWriteLock(server.dataDir, 2000);
  await lock.locked;
  let runs = 0;
  await assert.rejects(
    impatient.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'impatient', tool: TOOL }, async () => {
      runs += 1;
    }),
    (error) => {
      assert.ok(error instanceof LedgerError);
      assert.equal(error.status, 503);
      assert.equal(error.code, 'busy');
      return true;
    },
  );
  assert.equal(runs, 0);
  const started = Date.now();
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'patient', tool: TOOL }, async () => {
    runs += 1;
  });
  const waited = Date.now() - started;
  assert.equal(await lock.released, 0);
  assert.equal(runs, 1);
  assert.ok(waited >= 1000, `waited ${waited} ms: at least Retry-After`);
  // each retry came Retry-After (1 s) after the previous try, which had waited --write-wait-ms
  const batches = sent.filter((r) => r.at >= started && r.url.endsWith('/api/host/batch'));
  assert.ok(batches.length >= 2 && batches.length <= 4, `${batches.length} tries of the batch`);
  for (let i = 1; i < batches.length; i++) {
    assert.ok(batches[i].at - batches[i - 1].at >= 1000, `try ${i + 1} came ${batches[i].at - batches[i - 1].at} ms after try ${i}`);
  }
  const records = await outcomes(server, key);
  assert.deepEqual(records.map((r) => [r.mutation_id, r.status]), [
    ['warm', 'completed'],
    ['patient', 'completed'],
  ]);
});

test('the ledger dies while the block runs and stays down: LedgerSettleError carries the result; the entry stays outcome_unknown', async () => {
  const server = await own();
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token, retry: { maxTotalMs: 300, baseDelayMs: 20 } });
  const key = 'dies';
  await assert.rejects(
    ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'op-1', tool: TOOL }, async () => {
      await server.kill9();
      return 'dash-9';
    }),
    (error) => {
      assert.ok(error instanceof LedgerSettleError);
      assert.equal(error.code, 'settle_failed');
      assert.equal(error.result, 'dash-9');
      assert.equal(error.mutationId, 'op-1');
      assert.equal(error.intendedStatus, 'completed');
      assert.equal(error.cause.code, 'connection_failed');
      assert.match(error.message, /could not be recorded/);
      return true;
    },
  );
  await server.restart();
  const [entry] = await entries(server, key, 't');
  assert.equal(entry.ledger_status, 'execution_started');
  assert.equal(entry.outcome.status, 'outcome_unknown');
});
