// The ledger unreachable: the calls before a protected block (the ledger id, approve + intent) give up
// after connectBudgetMs (default 5000 ms, retries included) instead of the retry budget (30 s) or a
// request timeout (30 s): protectedWrite rejects with a LedgerConnectionError within budget + 1 s, and
// the block never ran. A port nothing listens on, and a black hole (accepts, never answers).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Ledger, LedgerConnectionError, recordedOutcome } from '../dist/index.js';
import { freePort } from './helpers.mjs';

async function blackHole() {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket); // accepted, read, never answered
    socket.on('data', () => {});
    socket.on('error', () => {});
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

async function giveUp(baseUrl, options = {}) {
  const ledger = new Ledger({ baseUrl, token: 't', ...options });
  let ran = 0;
  const started = Date.now();
  const error = await ledger
    .protectedWrite({ sessionKey: 's', logicalTurnId: 'turn-1', mutationId: 'm', tool: 'x' }, async () => {
      ran += 1;
    })
    .then(
      () => assert.fail('the ledger is unreachable: protectedWrite rejects'),
      (e) => e,
    );
  return { error, ran, ms: Date.now() - started };
}

test('unreachable ledger (nothing listens, a black hole): protectedWrite rejects within connectBudgetMs (default 5 s) + 1 s; the block never ran', async () => {
  const hole = await blackHole();
  try {
    const refused = `http://127.0.0.1:${await freePort()}`;
    const results = await Promise.all([giveUp(refused), giveUp(hole.url), giveUp(hole.url, { connectBudgetMs: 1500 })]);
    const budgets = [5000, 5000, 1500];
    results.forEach(({ error, ran, ms }, i) => {
      assert.equal(ran, 0, 'the block never ran');
      assert.ok(ms <= budgets[i] + 1000, `gave up after ${ms} ms (budget ${budgets[i]} ms)`);
      assert.ok(error instanceof LedgerConnectionError, String(error));
      assert.equal(error.code, 'connection_failed');
      assert.deepEqual(recordedOutcome(error), { outcome: 'not_called', mutationId: 'm' });
    });
    assert.match(results[0].error.message, /ECONNREFUSED/);
    assert.match(results[1].error.message, /connectBudgetMs 5000 ms|no answer in time/);
    assert.ok(results[1].ms >= 4000, `the black hole was waited for (${results[1].ms} ms)`);
  } finally {
    await hole.close();
  }
});

test('connectBudgetMs is checked: a negative one is a RangeError', () => {
  assert.throws(() => new Ledger({ baseUrl: 'http://127.0.0.1:9', token: 't', connectBudgetMs: -1 }), RangeError);
});
