// One method per host operation (docs/api.md "Host write API") against the real server, and the
// 409 rule: a refusal whose `current` already shows the requested change is success.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { Ledger, LedgerError } from 'outcomes-ledger';
import { sharedServer, sessionKey, outcomes, history, readStatus, byMutation } from './helpers.mjs';

let server;
let ledger;
before(async () => {
  server = await sharedServer();
  ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
});

const TOOL = 'mcp__codehost__create_issue';

test('approve, intent, settle, attachMetadata answer the entry; a repeated intent is refused with current', async () => {
  const key = sessionKey('ops');
  const ids = { sessionKey: key, mutationId: 'op-1' };
  const approved = await ledger.approve({ ...ids, logicalTurnId: 'turn-1', tool: TOOL });
  assert.deepEqual(
    [approved.ledger_status, approved.intent_recorded, approved.attempt_id, approved.logical_turn_id],
    ['approved', false, null, 'turn-1'],
  );
  const started = await ledger.intent({ ...ids, attemptId: 'att-1' });
  assert.deepEqual([started.ledger_status, started.attempt_id, started.revision], ['execution_started', 'att-1', 1]);
  const settled = await ledger.settle({ ...ids, attemptId: 'att-1', status: 'completed' });
  assert.deepEqual([settled.ledger_status, settled.revision], ['completed', 2]);
  const attached = await ledger.attachMetadata({ ...ids, id: '419', url: 'https://code.example.com/o/r/issues/419', title: 'Refund rounds down' });
  assert.equal(attached.revision, 3);
  const [record] = await outcomes(server, key);
  assert.deepEqual([record.status, record.resource_id, record.url, record.title], [
    'completed',
    '419',
    'https://code.example.com/o/r/issues/419',
    'Refund rounds down',
  ]);
  // another attempt id than the recorded one: not the requested change, so the 409 is raised
  await assert.rejects(ledger.intent({ ...ids, attemptId: 'att-2' }), (error) => {
    assert.ok(error instanceof LedgerError);
    assert.equal(error.status, 409);
    assert.equal(error.code, 'already_recorded');
    assert.equal(error.current.ledger_status, 'completed');
    assert.equal(error.current.attempt_id, 'att-1');
    assert.equal(error.operation, 'intent');
    return true;
  });
});

test('a retried settle (409 not_in_flight) and a retried reconcile (409 already_settled) showing the change are success; a different one is raised', async () => {
  const key = sessionKey('retry409');
  const ids = { sessionKey: key, mutationId: 'op-1' };
  await ledger.approve({ ...ids, logicalTurnId: 't', tool: TOOL });
  await ledger.intent({ ...ids, attemptId: 'a1' });
  const first = await ledger.settle({ ...ids, attemptId: 'a1', status: 'outcome_unknown', reason: 'execution_timeout' });
  const again = await ledger.settle({ ...ids, attemptId: 'a1', status: 'outcome_unknown', reason: 'execution_timeout' });
  assert.deepEqual(again, first);
  // same status without the reason is not what was recorded
  await assert.rejects(ledger.settle({ ...ids, attemptId: 'a1', status: 'outcome_unknown' }), {
    code: 'unknown_outcome_needs_reconciliation',
    status: 409,
  });
  await assert.rejects(ledger.settle({ ...ids, attemptId: 'a1', status: 'completed' }), { status: 409 });

  const evidence = { source: 'codehost-status', reference: 'issue #419', observedAt: new Date('2026-11-29T10:00:00Z'), providerStatus: 'completed' };
  const reconciled = await ledger.reconcile({ ...ids, attemptId: 'a1', completed: true, evidence });
  assert.equal(reconciled.ledger_status, 'completed');
  assert.equal(reconciled.reason ?? null, null);
  const reconciledAgain = await ledger.reconcile({ ...ids, attemptId: 'a1', completed: true, evidence });
  assert.deepEqual(reconciledAgain, reconciled);
  await assert.rejects(ledger.reconcile({ ...ids, attemptId: 'a1', completed: false, evidence: { ...evidence, providerStatus: 'not_accepted' } }), {
    code: 'already_settled',
    status: 409,
  });
  const changes = (await history(server, key, 'op-1')).changes.map((c) => c.kind);
  assert.deepEqual(changes, ['approval', 'intent', 'settlement', 'reconciliation']);
  assert.equal((await outcomes(server, key))[0].status, 'completed');
});

test('an inconclusive provider status is refused (422 naming the field) and the outcome stays unknown', async () => {
  const key = sessionKey('inconclusive');
  const ids = { sessionKey: key, mutationId: 'op-1' };
  await ledger.approve({ ...ids, logicalTurnId: 't', tool: TOOL });
  await ledger.intent({ ...ids, attemptId: 'a1' });
  await ledger.settle({ ...ids, attemptId: 'a1', status: 'outcome_unknown' });
  await assert.rejects(
    ledger.reconcile({
      ...ids,
      attemptId: 'a1',
      completed: true,
      evidence: { source: 'codehost-status', reference: 'issue #419', observedAt: '2026-11-29T10:00:00Z', providerStatus: 'pending' },
    }),
    { status: 422, field: 'evidence.provider_status' },
  );
  assert.equal((await outcomes(server, key))[0].status, 'outcome_unknown');
});

test('cancel, then a fresh attempt, then settle; reconcile completed:false makes not_executed', async () => {
  const key = sessionKey('cancel');
  const a = { sessionKey: key, mutationId: 'a' };
  await ledger.approve({ ...a, logicalTurnId: 't', tool: TOOL });
  await ledger.intent({ ...a, attemptId: 'a1' });
  const cancelled = await ledger.cancel({ ...a, attemptId: 'a1', reason: 'pre_dispatch_deadline' });
  assert.deepEqual([cancelled.ledger_status, cancelled.reason], ['approved', 'pre_dispatch_deadline']);
  assert.deepEqual(await ledger.cancel({ ...a, attemptId: 'a1', reason: 'pre_dispatch_deadline' }), cancelled);
  assert.equal(byMutation(await outcomes(server, key)).a.status, 'not_executed');
  const fresh = await ledger.freshAttempt({ ...a, attemptId: 'a2' });
  assert.deepEqual([fresh.ledger_status, fresh.attempt_id, fresh.reason ?? null], ['execution_started', 'a2', null]);
  assert.deepEqual(await ledger.freshAttempt({ ...a, attemptId: 'a2' }), fresh);
  await assert.rejects(ledger.freshAttempt({ ...a, attemptId: 'a1' }), { status: 409 });
  await ledger.settle({ ...a, attemptId: 'a2', status: 'failed' });

  const b = { sessionKey: key, mutationId: 'b' };
  await ledger.approve({ ...b, logicalTurnId: 't', tool: TOOL });
  await ledger.intent({ ...b, attemptId: 'b1' });
  await ledger.reconcile({
    ...b,
    attemptId: 'b1',
    completed: false,
    evidence: { source: 'provider-status', reference: 'req 9', observedAt: '2026-11-29T10:00:00Z', providerStatus: 'not_accepted' },
  });
  const r = byMutation(await outcomes(server, key));
  assert.equal(r.a.status, 'failed');
  assert.equal(r.b.status, 'not_executed');
});

test('batch answers one result per operation; a refused one does not reject the call', async () => {
  const key = sessionKey('batch');
  const results = await ledger.batch([
    { op: 'approve', session_key: key, logical_turn_id: 't', mutation_id: 'm1', tool: TOOL },
    { op: 'intent', session_key: key, mutation_id: 'm1', attempt_id: 'x1' },
    { op: 'settle', session_key: key, mutation_id: 'm1', attempt_id: 'x1', status: 'completed' },
    { op: 'settle', session_key: key, mutation_id: 'm1', attempt_id: 'x1', status: 'failed' },
  ]);
  assert.deepEqual(results.map((r) => r.status), [201, 200, 200, 409]);
  assert.equal(results[2].entry.ledger_status, 'completed');
  assert.equal(results[3].error.code, 'not_in_flight');
  assert.equal(results[3].error.current.ledger_status, 'completed');
  assert.equal((await outcomes(server, key))[0].status, 'completed');
});

test('mintViewerLink, revokeViewerLinks, deleteSession', async () => {
  const key = sessionKey('links');
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'm', tool: TOOL }, async () => {});
  const link = await ledger.mintViewerLink({ sessionKey: key, expiresInSecs: 3600 });
  assert.match(link.url, /^\/v\/[A-Za-z0-9_-]{43}$/);
  assert.equal(link.href, server.baseUrl + link.url);
  const expires = Date.parse(link.expires_at) - Date.now();
  assert.ok(expires > 3500_000 && expires <= 3600_000, `expires in ${expires} ms`);
  const opened = await fetch(link.href, { redirect: 'manual' });
  await opened.arrayBuffer();
  assert.ok(opened.status < 400, `the link opens (${opened.status})`);
  const second = await ledger.mintViewerLink({ sessionKey: key });
  const week = Date.parse(second.expires_at) - Date.now();
  assert.ok(week > 7 * 86400_000 - 60_000 && week <= 7 * 86400_000, 'default 7 days');
  assert.deepEqual(await ledger.revokeViewerLinks({ sessionKey: key }), { revoked: 2 });
  const revoked = await fetch(link.href, { redirect: 'manual' });
  await revoked.arrayBuffer();
  assert.ok(revoked.status >= 400, `a revoked link no longer opens (${revoked.status})`);

  await ledger.deleteSession({ sessionKey: key });
  assert.equal(await readStatus(server, `/api/mutation-outcomes?session_id=${encodeURIComponent(key)}`), 404);
  await assert.rejects(ledger.deleteSession({ sessionKey: key }), { status: 404, code: 'session_not_found' });
  await assert.rejects(ledger.mintViewerLink({ sessionKey: key }), { status: 404, code: 'session_not_found' });
});
