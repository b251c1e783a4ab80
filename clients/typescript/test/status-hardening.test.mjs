// Status checks and recover() under hostile answers, options and outages (issue 40, second attack):
// a bad observedAt is an error item (never a crash, never the block's error replaced), option values
// are refused at construction, a check that never answers times out, and the ledger going away stops a
// recover run. All against the real server.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { Ledger, LedgerConnectionError, recordedOutcome, completed } from '../dist/index.js';
import { sharedServer, startServer, sessionKey, entries } from './helpers.mjs';

const quiet = { warn() {} };
const TOOL = 't.pay';

let server;
before(async () => {
  server = await sharedServer();
});

const ledgerFor = (s, extra = {}) => new Ledger({ baseUrl: s.baseUrl, token: s.token, logger: quiet, ...extra });

/** One protected write whose block throws `lost` (no check): an open unknown. */
async function unknownWrite(ledger, key, mutationId) {
  await assert.rejects(
    ledger.protectedWrite({ sessionKey: key, logicalTurnId: 'turn', mutationId, tool: TOOL, status: undefined }, async () => {
      throw new Error('lost');
    }),
    /lost/,
  );
}

const statusOf = async (key, mutationId) =>
  (await entries(server, key, 'turn')).find((e) => e.outcome.mutation_id === mutationId).ledger_status;

for (const [label, bad] of [
  ['an invalid Date', () => new Date('nope')],
  ['a number', () => 12345],
  ['a string that is not RFC 3339', () => 'yesterday'],
]) {
  test(`a check answering observedAt as ${label}: the block's own error, the outcome unknown; recover() counts an error item`, async () => {
    const ledger = ledgerFor(server, { statusDelayMs: 0, statusAttempts: 1 });
    const key = sessionKey('bad-observed');
    let calls = 0;
    const check = () => {
      calls += 1;
      return completed({ reference: 'ch_1', observedAt: bad() });
    };
    const blockError = new Error('the block failed');
    const thrown = await ledger
      .protectedWrite({ sessionKey: key, logicalTurnId: 'turn', mutationId: 'm1', tool: TOOL, status: check }, async () => {
        throw blockError;
      })
      .then(() => undefined, (e) => e);
    assert.equal(thrown, blockError);
    assert.equal(recordedOutcome(thrown).outcome, 'outcome_unknown');
    assert.equal(calls, 1);
    assert.equal(await statusOf(key, 'm1'), 'outcome_unknown');
    const summary = await ledger.recover({ sessions: [key], checks: { [TOOL]: check } });
    assert.deepEqual([summary.completed, summary.errors], [0, 1]);
    assert.match(summary.items[0].detail, /observedAt/);
    assert.equal(await statusOf(key, 'm1'), 'outcome_unknown');
  });
}

test('option values: statusAttempts an integer >= 1, statusDelayMs / statusTimeoutMs finite, >= 0, at most 1 hour (RangeError naming the option)', async () => {
  const base = { baseUrl: server.baseUrl, token: server.token };
  for (const [name, value] of [
    ['statusAttempts', 0],
    ['statusAttempts', -1],
    ['statusAttempts', 1.5],
    ['statusAttempts', NaN],
    ['statusDelayMs', -5],
    ['statusDelayMs', NaN],
    ['statusDelayMs', Infinity],
    ['statusDelayMs', 3e9],
    ['statusTimeoutMs', 0],
    ['statusTimeoutMs', NaN],
    ['statusTimeoutMs', 3_600_001],
  ]) {
    assert.throws(() => new Ledger({ ...base, [name]: value }), (e) => e instanceof RangeError && e.message.includes(name), `${name}=${value}`);
  }
  new Ledger({ ...base, statusAttempts: 1, statusDelayMs: 0, statusTimeoutMs: 3_600_000 });
  // a protected write's own options too: refused before anything is sent, the check never called
  const ledger = ledgerFor(server);
  const key = sessionKey('opts');
  let calls = 0;
  for (const [name, value] of [['statusAttempts', 0], ['statusDelayMs', 3e9], ['statusTimeoutMs', -1]]) {
    await assert.rejects(
      ledger.protectedWrite({ sessionKey: key, logicalTurnId: 'turn', mutationId: `m-${name}`, tool: TOOL, status: () => (calls++, completed({ reference: 'r' })), [name]: value }, async () => 'ok'),
      (e) => e instanceof RangeError && e.message.includes(name),
    );
  }
  assert.equal(calls, 0);
  assert.deepEqual(await entries(server, key, 'turn').catch(() => []), []);
});

test('a check that never answers times out (statusTimeoutMs): each try an error, the block error rethrown; recover() goes on to the next', { timeout: 20_000 }, async () => {
  const ledger = ledgerFor(server, { statusDelayMs: 0, statusAttempts: 2, statusTimeoutMs: 300 });
  const key = sessionKey('hang');
  let calls = 0;
  const hang = () => {
    calls += 1;
    return new Promise(() => {});
  };
  const started = Date.now();
  await assert.rejects(
    ledger.protectedWrite({ sessionKey: key, logicalTurnId: 'turn', mutationId: 'm1', tool: TOOL, status: hang }, async () => {
      throw new Error('lost');
    }),
    /lost/,
  );
  assert.equal(calls, 2);
  assert.ok(Date.now() - started < 5000);
  await unknownWrite(ledger, key, 'm2');
  const summary = await ledger.recover({ sessions: [key], checks: { [TOOL]: hang } });
  assert.equal(summary.errors, 2);
  assert.ok(summary.items.every((i) => /did not answer within 300 ms/.test(i.detail)), JSON.stringify(summary.items));
  assert.equal(await statusOf(key, 'm1'), 'outcome_unknown');
});

test('the ledger going away mid-recover stops the run: it rejects with the connection error, the rest not looked at', { timeout: 30_000 }, async () => {
  const own = await startServer();
  try {
    const ledger = ledgerFor(own, { retry: { maxTotalMs: 500, maxAttempts: 3 }, connectBudgetMs: 500 });
    const key = sessionKey('outage');
    for (const id of ['m1', 'm2', 'm3', 'm4']) await unknownWrite(ledger, key, id);
    let calls = 0;
    const check = async () => {
      calls += 1;
      await own.kill9();
      return completed({ reference: 'ch_1' });
    };
    const started = Date.now();
    const error = await ledger.recover({ sessions: [key], checks: { [TOOL]: check } }).then(() => undefined, (e) => e);
    assert.ok(error instanceof LedgerConnectionError, String(error));
    assert.equal(calls, 1);
    assert.ok(Date.now() - started < 10_000);
    const summary = error.summary;
    assert.equal(summary.incomplete, true);
    assert.equal(summary.errors, 1);
    assert.equal(summary.notLookedAt, 3);
    assert.deepEqual(summary.items.map((i) => i.result), ['error', 'not_looked_at', 'not_looked_at', 'not_looked_at']);
  } finally {
    await own.stop();
  }
});
