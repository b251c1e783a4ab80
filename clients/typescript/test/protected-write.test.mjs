// ledger.protectedWrite against the real server: every settle rule (README.md "The protected write")
// and docs/api.md, read back from the published records and the entries API.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { Ledger, LedgerError, LedgerConnectionError, NotDispatched, ProviderFailed, recordedOutcome } from 'outcomes-ledger';
import { sharedServer, sessionKey, outcomes, entries, history, byMutation, freePort } from './helpers.mjs';

let server;
let ledger;
before(async () => {
  server = await sharedServer();
  ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
});

const TOOL = 'mcp__dashboards__create';

test('a block that returns settles completed, resolves to its value; op carries the ids the ledger recorded', async () => {
  const key = sessionKey('completed');
  let seen;
  const value = await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 'turn-1', mutationId: 'op-1', tool: TOOL }, async (op) => {
    seen = { mutationId: op.mutationId, attemptId: op.attemptId, sessionKey: op.sessionKey, tool: op.tool };
    return 'dash-1';
  });
  assert.equal(value, 'dash-1');
  assert.equal(seen.mutationId, 'op-1');
  assert.equal(seen.sessionKey, key);
  assert.match(seen.attemptId, /^[0-9a-f-]{36}$/);
  const records = await outcomes(server, key);
  assert.deepEqual(records, [
    {
      schema: 'mutation_outcome/v1',
      logical_turn_id: 'turn-1',
      mutation_id: 'op-1',
      tool: TOOL,
      status: 'completed',
      resource_id: null,
      url: null,
      title: null,
    },
  ]);
  const [entry] = await entries(server, key, 'turn-1');
  assert.equal(entry.ledger_status, 'completed');
  const changes = (await history(server, key, 'op-1')).changes;
  assert.deepEqual(changes.map((c) => c.kind), ['approval', 'intent', 'settlement']);
  assert.deepEqual([...new Set(changes.filter((c) => c.attempt_id).map((c) => c.attempt_id))], [seen.attemptId]);
});

test('a mutation id is generated when none is given', async () => {
  const key = sessionKey('generated');
  let id;
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', tool: TOOL }, async (op) => {
    id = op.mutationId;
  });
  assert.match(id, /^[0-9a-f-]{36}$/);
  assert.deepEqual((await outcomes(server, key)).map((r) => [r.mutation_id, r.status]), [[id, 'completed']]);
});

test('op.failed() settles failed, op.notExecuted() cancels (not_executed), with pre_dispatch_deadline when given', async () => {
  const key = sessionKey('marks');
  const a = await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'failed', tool: TOOL }, async (op) => {
    op.failed();
    return 'provider said 422';
  });
  assert.equal(a, 'provider said 422');
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'skipped', tool: TOOL }, async (op) => {
    op.notExecuted();
  });
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'late', tool: TOOL }, async (op) => {
    op.notExecuted({ reason: 'pre_dispatch_deadline' });
  });
  const r = byMutation(await outcomes(server, key));
  assert.equal(r.failed.status, 'failed');
  assert.equal('reason' in r.failed, false);
  assert.equal(r.skipped.status, 'not_executed');
  assert.equal('reason' in r.skipped, false);
  assert.equal(r.late.status, 'not_executed');
  assert.equal(r.late.reason, 'pre_dispatch_deadline');
  const e = Object.fromEntries((await entries(server, key, 't')).map((x) => [x.outcome.mutation_id, x.ledger_status]));
  assert.deepEqual(e, { failed: 'failed', skipped: 'approved', late: 'approved' });
});

test('errors settle by their kind and are rethrown unchanged', async () => {
  const key = sessionKey('errors');
  class TimeoutError extends Error {
    constructor() {
      super('tool took too long');
      this.name = 'TimeoutError';
    }
  }
  const cases = [
    ['not-dispatched', new NotDispatched('circuit open'), 'not_executed', undefined, 'approved'],
    ['not-dispatched-deadline', new NotDispatched('deadline', { reason: 'pre_dispatch_deadline' }), 'not_executed', 'pre_dispatch_deadline', 'approved'],
    ['provider-failed', new ProviderFailed('HTTP 422 from the provider'), 'failed', undefined, 'failed'],
    ['timeout-class', new TimeoutError(), 'outcome_unknown', 'execution_timeout', 'outcome_unknown'],
    ['arbitrary', new Error('socket hang up'), 'outcome_unknown', undefined, 'outcome_unknown'],
    ['type-error', new TypeError('x is undefined'), 'outcome_unknown', undefined, 'outcome_unknown'],
    ['thrown-string', 'not even an Error', 'outcome_unknown', undefined, 'outcome_unknown'],
  ];
  for (const [id, error, status] of cases) {
    await assert.rejects(
      ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: id, tool: TOOL }, async () => {
        throw error;
      }),
      (thrown) => thrown === error,
    );
    if (typeof error === 'object') assert.deepEqual(recordedOutcome(error), { outcome: status, mutationId: id });
  }
  const r = byMutation(await outcomes(server, key));
  const e = Object.fromEntries((await entries(server, key, 't')).map((x) => [x.outcome.mutation_id, x.ledger_status]));
  for (const [id, , status, reason, ledgerStatus] of cases) {
    assert.equal(r[id].status, status, id);
    assert.equal(r[id].reason, reason, id);
    assert.equal('reason' in r[id], reason !== undefined, id);
    assert.equal(e[id], ledgerStatus, id);
  }
});

test("AbortSignal.timeout()'s DOMException (name TimeoutError) settles outcome_unknown with execution_timeout", async () => {
  const key = sessionKey('abort-timeout');
  let thrown;
  await assert.rejects(
    ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'slow', tool: TOOL }, async () => {
      // a provider call that does not answer within 50 ms (a local server that never answers)
      const signal = AbortSignal.timeout(50);
      const keepAlive = setTimeout(() => {}, 5000); // AbortSignal.timeout's timer does not hold the event loop
      try {
        await new Promise((resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
        });
      } finally {
        clearTimeout(keepAlive);
      }
    }),
    (error) => {
      thrown = error;
      return true;
    },
  );
  assert.equal(thrown.name, 'TimeoutError');
  const [record] = await outcomes(server, key);
  assert.equal(record.status, 'outcome_unknown');
  assert.equal(record.reason, 'execution_timeout');
  // an AbortError (the caller cancelled) is not a timeout: unknown without a reason
  const controller = new AbortController();
  await assert.rejects(
    ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'aborted', tool: TOOL }, async () => {
      controller.abort();
      controller.signal.throwIfAborted();
    }),
    { name: 'AbortError' },
  );
  const r = byMutation(await outcomes(server, key));
  assert.equal(r.aborted.status, 'outcome_unknown');
  assert.equal('reason' in r.aborted, false);
});

test('op.attach publishes sanitised host metadata', async () => {
  const key = sessionKey('attach');
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'op-1', tool: TOOL }, async (op) => {
    const state = await op.attach({
      id: 'dash-7f3a',
      url: 'https://user:pw@app.example.com/d/dash-7f3a?tab=2#top',
      title: 'Service overview',
    });
    assert.equal(state.ledger_status, 'execution_started');
  });
  const [record] = await outcomes(server, key);
  assert.equal(record.status, 'completed');
  assert.equal(record.resource_id, 'dash-7f3a');
  assert.equal(record.url, 'https://app.example.com/d/dash-7f3a');
  assert.equal(record.title, 'Service overview');
});

test('64 concurrent protected writes: 64 entries, each completed once, each block run once', async () => {
  const key = sessionKey('concurrent');
  let sideEffects = 0;
  const ids = Array.from({ length: 64 }, (_, i) => `op-${i}`);
  const values = await Promise.all(
    ids.map((id) =>
      ledger.protectedWrite({ sessionKey: key, logicalTurnId: 'turn-c', mutationId: id, tool: TOOL }, async (op) => {
        sideEffects += 1;
        await new Promise((r) => setTimeout(r, 5));
        return op.mutationId;
      }),
    ),
  );
  assert.deepEqual(values, ids);
  assert.equal(sideEffects, 64);
  const records = await outcomes(server, key);
  assert.equal(records.length, 64);
  assert.deepEqual(records.map((r) => r.mutation_id).sort(), [...ids].sort());
  assert.ok(records.every((r) => r.status === 'completed' && r.logical_turn_id === 'turn-c'));
});

test('the block never runs when the ledger is down: a LedgerConnectionError, the side-effect counter stays 0', async () => {
  const port = await freePort(); // nothing listens there
  const down = new Ledger({ baseUrl: `http://127.0.0.1:${port}`, token: 't', retry: { maxTotalMs: 400, baseDelayMs: 20 } });
  let sideEffects = 0;
  const started = Date.now();
  await assert.rejects(
    down.protectedWrite({ sessionKey: 's', logicalTurnId: 't', mutationId: 'm', tool: TOOL }, async () => {
      sideEffects += 1;
    }),
    (error) => {
      assert.ok(error instanceof LedgerConnectionError);
      assert.ok(error instanceof LedgerError);
      assert.equal(error.code, 'connection_failed');
      assert.equal(error.status, null);
      assert.ok(error.attempts >= 2, `retried (${error.attempts} tries)`);
      assert.match(error.message, new RegExp(`could not reach the ledger at http://127\\.0\\.0\\.1:${port}/api/host/batch`));
      assert.match(error.message, /ECONNREFUSED/);
      assert.deepEqual(recordedOutcome(error), { outcome: 'not_called', mutationId: 'm' });
      return true;
    },
  );
  assert.ok(Date.now() - started < 2000, 'bounded by maxTotalMs');
  assert.equal(sideEffects, 0);
});

test('the block never runs when the ledger refuses the intent (a reused mutation id): 409 with current', async () => {
  const key = sessionKey('refused');
  let sideEffects = 0;
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'op-1', tool: TOOL }, async () => {
    sideEffects += 1;
  });
  await assert.rejects(
    ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'op-1', tool: TOOL }, async () => {
      sideEffects += 1;
    }),
    (error) => {
      assert.ok(error instanceof LedgerError);
      assert.equal(error.status, 409);
      assert.equal(error.code, 'already_recorded');
      assert.equal(error.current.ledger_status, 'completed');
      assert.equal(error.current.mutation_id, 'op-1');
      return true;
    },
  );
  assert.equal(sideEffects, 1);
  assert.deepEqual((await outcomes(server, key)).map((r) => r.status), ['completed']);
});

test('new work after an unknown outcome is a new mutation commissioned after it; the original stays unknown', async () => {
  const key = sessionKey('commissioned');
  await assert.rejects(
    ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'first', tool: TOOL }, async () => {
      throw new Error('connection reset after the request was sent');
    }),
  );
  await ledger.protectedWrite(
    { sessionKey: key, logicalTurnId: 't', mutationId: 'second', tool: TOOL, commissionedAfter: 'first' },
    async () => 'ok',
  );
  const r = byMutation(await outcomes(server, key));
  assert.equal(r.first.status, 'outcome_unknown');
  assert.equal(r.second.status, 'completed');
  assert.deepEqual((await history(server, key, 'first')).commissioned, ['second']);
});

test('ledger.turn: writes of one turn share its session and logical turn (a new turn- + 32 hex digits when not given)', async () => {
  const key = sessionKey('turn');
  const turn = ledger.turn({ sessionKey: key });
  assert.match(turn.logicalTurnId, /^turn-[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
  await turn.protectedWrite({ mutationId: 'a', tool: TOOL }, async () => {});
  await assert.rejects(
    turn.protectedWrite({ mutationId: 'b', tool: TOOL }, async () => {
      throw new ProviderFailed('refused');
    }),
    ProviderFailed,
  );
  const named = ledger.turn({ sessionKey: key, logicalTurnId: 'turn-2' });
  await named.protectedWrite({ mutationId: 'c', tool: TOOL }, async () => {});
  const records = await outcomes(server, key);
  assert.deepEqual(records.map((r) => [r.mutation_id, r.logical_turn_id, r.status]), [
    ['a', turn.logicalTurnId, 'completed'],
    ['b', turn.logicalTurnId, 'failed'],
    ['c', 'turn-2', 'completed'],
  ]);
});
