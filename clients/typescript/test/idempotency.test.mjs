// op.idempotencyKey: `ol_` + the first 32 characters of the lowercase RFC 4648 base32 of SHA-256 over
// ledger_id \0 session_key \0 mutation_id. The shared vector (clients/idempotency-key-vectors.json, the
// same file the Python client's test reads), RFC 4648's own base32 vectors, and the key a protected
// write's block sees, derived from the ledger id the real server answers (read once per Ledger).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { Ledger, idempotencyKey, base32 } from '../dist/index.js';
import { sharedServer, sessionKey } from './helpers.mjs';

const vectors = JSON.parse(readFileSync(new URL('../../idempotency-key-vectors.json', import.meta.url), 'utf8'));

let server;
before(async () => {
  server = await sharedServer();
});

test('the shared vector: every idempotency key as clients/idempotency-key-vectors.json says', async () => {
  assert.equal(vectors.length, 4);
  for (const v of vectors) {
    assert.equal(await idempotencyKey(v.ledger_id, v.session_key, v.mutation_id), v.idempotency_key, JSON.stringify(v));
    assert.match(v.idempotency_key, /^ol_[a-z2-7]{32}$/);
  }
  // Independently of this client's SHA-256 and base32: node:crypto and the RFC's alphabet.
  const v = vectors[3];
  const digest = createHash('sha256').update(`${v.ledger_id}\0${v.session_key}\0${v.mutation_id}`, 'utf8').digest();
  assert.equal(`ol_${base32(digest).slice(0, 32)}`, v.idempotency_key);
});

test('base32 is RFC 4648 (section 10 test vectors, lowercase, no padding)', () => {
  const enc = (s) => base32(new TextEncoder().encode(s));
  assert.deepEqual(
    ['', 'f', 'fo', 'foo', 'foob', 'fooba', 'foobar'].map(enc),
    ['', 'my', 'mzxq', 'mzxw6', 'mzxw6yq', 'mzxw6ytb', 'mzxw6ytboi'],
  );
});

test("a protected write's op.idempotencyKey is derived from GET /api/host/ledger, read once per Ledger, the same from a new Ledger", async () => {
  const r = await fetch(`${server.baseUrl}/api/host/ledger`, { headers: { Authorization: `Bearer ${server.token}` } });
  const { ledger_id: ledgerId } = await r.json();
  assert.match(ledgerId, /^[0-9a-f]{32}$/);
  let reads = 0;
  const counting = (url, init) => {
    if (String(url).endsWith('/api/host/ledger')) reads += 1;
    return fetch(url, init);
  };
  const ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token, fetch: counting });
  const key = sessionKey('idem');
  const seen = [];
  for (const mutationId of ['refund-1', 'refund-2']) {
    seen.push(await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 'turn-a', mutationId, tool: 'pay' }, async (op) => op.idempotencyKey));
  }
  assert.equal(reads, 1);
  assert.deepEqual(seen, [await idempotencyKey(ledgerId, key, 'refund-1'), await idempotencyKey(ledgerId, key, 'refund-2')]);
  // A restarted host (a new Ledger) derives the same key for the same operation.
  const again = new Ledger({ baseUrl: server.baseUrl, token: server.token });
  assert.equal(await again.idempotencyKey({ sessionKey: key, mutationId: 'refund-1' }), seen[0]);
});
