// Logical turn ids the client makes (ledger.turn(), both adapters): one format in both clients,
// `turn-` + 32 lowercase hex digits, a random UUID v4 without its dashes (Python's `turn-{uuid4().hex}`).
// The adapters' and turn()'s own tests check the ids they record have this format.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newTurnId, Ledger } from '../dist/index.js';

const FORMAT = /^turn-[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/;

test('newTurnId(): turn- + 32 lowercase hex digits of a UUID v4, all distinct', () => {
  const ids = Array.from({ length: 1000 }, () => newTurnId());
  for (const id of ids) assert.match(id, FORMAT);
  assert.equal(new Set(ids).size, ids.length);
  assert.equal(ids[0].length, 37);
  const ledger = new Ledger({ baseUrl: 'http://127.0.0.1:9', token: 't' });
  assert.match(ledger.turn({ sessionKey: 's' }).logicalTurnId, FORMAT);
  assert.equal(ledger.turn({ sessionKey: 's', logicalTurnId: 'turn-1' }).logicalTurnId, 'turn-1');
});
