// Bad input: a wrong token, an id over 256 bytes, a server answering HTML (a proxy's error
// page), nobody listening. Each is a clear error naming the cause, never a silent success, and
// the protected block never runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Ledger, LedgerError, LedgerConnectionError } from 'outcomes-ledger';
import { sharedServer, startServer, sessionKey, readStatus, freePort } from './helpers.mjs';

const TOOL = 'mcp__dashboards__create';
let server;
let ledger;
let own;
before(async () => {
  server = await sharedServer();
  ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
  own = await startServer(); // wrong tokens count against the address's failure limit: not on the shared server
});
after(async () => {
  await own.stop();
});

test('a wrong host token: 401 unauthorized naming the host token, not retried, the block never runs', async () => {
  const wrong = new Ledger({ baseUrl: own.baseUrl, token: 'not-the-token' });
  let runs = 0;
  const started = Date.now();
  await assert.rejects(
    wrong.protectedWrite({ sessionKey: 's', logicalTurnId: 't', mutationId: 'm', tool: TOOL }, async () => {
      runs += 1;
    }),
    (error) => {
      assert.ok(error instanceof LedgerError);
      assert.equal(error.status, 401);
      assert.equal(error.code, 'unauthorized');
      assert.match(error.message, /refused the host token/);
      assert.match(error.message, /OUTCOMES_HOST_TOKEN/);
      return true;
    },
  );
  assert.ok(Date.now() - started < 1000);
  assert.equal(runs, 0);
  await assert.rejects(wrong.approve({ sessionKey: 's', logicalTurnId: 't', mutationId: 'm', tool: TOOL }), { status: 401 });
  assert.equal(await readStatus(own, '/api/mutation-outcomes?session_id=s'), 404, 'nothing was recorded');
});

test('repeated wrong tokens: the server answers 429 too_many_failures with a long Retry-After; raised, not waited out', async () => {
  const wrong = new Ledger({ baseUrl: own.baseUrl, token: 'still-wrong', retry: { maxTotalMs: 2000 } });
  let last;
  for (let i = 0; i < 12; i++) {
    last = await wrong.deleteSession({ sessionKey: 'x' }).catch((e) => e);
  }
  assert.ok(last instanceof LedgerError);
  assert.equal(last.status, 429);
  assert.equal(last.code, 'too_many_failures');
  // the right token is never refused
  const right = new Ledger({ baseUrl: own.baseUrl, token: own.token });
  await right.protectedWrite({ sessionKey: 'after-429', logicalTurnId: 't', mutationId: 'm', tool: TOOL }, async () => {});
});

test('an id over 256 bytes is refused (422 naming the field); nothing stored, the block never runs', async () => {
  const key = sessionKey('long-id');
  let runs = 0;
  const cases = [
    ['mutation_id', { mutationId: 'm'.repeat(257) }],
    ['mutation_id', { mutationId: 'é'.repeat(129) }], // 129 characters, 258 bytes
    ['logical_turn_id', { logicalTurnId: 't'.repeat(300) }],
    ['tool', { tool: 'x'.repeat(257) }],
    ['mutation_id', { mutationId: 'bad\u0007id' }],
  ];
  for (const [field, override] of cases) {
    await assert.rejects(
      ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'ok', tool: TOOL, ...override }, async () => {
        runs += 1;
      }),
      (error) => {
        assert.ok(error instanceof LedgerError, String(error));
        assert.equal(error.status, 422);
        assert.equal(error.field, field);
        assert.match(error.message, new RegExp(`422 \\w+ \\(field ${field}\\)`));
        return true;
      },
    );
  }
  await assert.rejects(ledger.approve({ sessionKey: 's'.repeat(257), logicalTurnId: 't', mutationId: 'm', tool: TOOL }), {
    status: 422,
    field: 'session_key',
  });
  assert.equal(runs, 0);
  assert.equal(await readStatus(server, `/api/mutation-outcomes?session_id=${encodeURIComponent(key)}`), 404);
  // exactly 256 bytes is fine
  await ledger.protectedWrite({ sessionKey: key, logicalTurnId: 't', mutationId: 'm'.repeat(256), tool: TOOL }, async () => {
    runs += 1;
  });
  assert.equal(runs, 1);
});

/** A web server that is not the ledger: answers every request with `status` and an HTML page. */
async function htmlServer(status, headers = {}) {
  let requests = 0;
  const s = http.createServer((req, res) => {
    requests += 1;
    req.resume();
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end('<!doctype html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>');
  });
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${s.address().port}`, requests: () => requests, close: () => new Promise((r) => s.close(r)) };
}

test("a proxy's HTML error page (502, and even a 200 HTML page) is a clear error, never a success", async () => {
  for (const status of [502, 200, 404]) {
    const html = await htmlServer(status);
    try {
      const wrong = new Ledger({ baseUrl: html.url, token: 't' });
      let runs = 0;
      await assert.rejects(
        wrong.protectedWrite({ sessionKey: 's', logicalTurnId: 't', mutationId: 'm', tool: TOOL }, async () => {
          runs += 1;
        }),
        (error) => {
          assert.ok(error instanceof LedgerError);
          assert.equal(error.code, 'unexpected_response');
          assert.equal(error.status, status);
          assert.match(error.message, new RegExp(`answered ${status} text/html`));
          assert.match(error.message, /"502 Bad Gateway"/);
          assert.match(error.message, /not the ledger's JSON/);
          return true;
        },
      );
      assert.equal(runs, 0);
      await assert.rejects(wrong.settle({ sessionKey: 's', mutationId: 'm', attemptId: 'a', status: 'completed' }), {
        code: 'unexpected_response',
      });
      await assert.rejects(wrong.deleteSession({ sessionKey: 's' }), { code: 'unexpected_response' });
    } finally {
      await html.close();
    }
  }
});

test('a 503 HTML page is retried (Retry-After honoured), then raised naming the HTML', async () => {
  const html = await htmlServer(503, { 'retry-after': '0' });
  try {
    const wrong = new Ledger({ baseUrl: html.url, token: 't', retry: { maxAttempts: 3 } });
    await assert.rejects(wrong.intent({ sessionKey: 's', mutationId: 'm', attemptId: 'a' }), (error) => {
      assert.equal(error.code, 'unexpected_response');
      assert.equal(error.status, 503);
      assert.match(error.message, /text\/html/);
      return true;
    });
    assert.equal(html.requests(), 3);
  } finally {
    await html.close();
  }
});

test('nobody listening: LedgerConnectionError after bounded retries, naming the address and the cause', async () => {
  const port = await freePort();
  const down = new Ledger({ baseUrl: `http://127.0.0.1:${port}/`, token: 't', retry: { maxAttempts: 4, baseDelayMs: 10 } });
  await assert.rejects(down.settle({ sessionKey: 's', mutationId: 'm', attemptId: 'a', status: 'completed' }), (error) => {
    assert.ok(error instanceof LedgerConnectionError);
    assert.equal(error.attempts, 4);
    assert.equal(error.operation, 'settle');
    assert.match(error.message, new RegExp(`could not reach the ledger at http://127\\.0\\.0\\.1:${port}/api/host/sessions/s/mutations/m/settlement \\(settle\\) after 4 tries`));
    assert.match(error.message, /ECONNREFUSED/);
    return true;
  });
});

test('constructor: a missing token or base URL is refused at once', () => {
  assert.throws(() => new Ledger({ baseUrl: 'http://127.0.0.1:1' }), /token is required/);
  assert.throws(() => new Ledger({ baseUrl: 'http://127.0.0.1:1', token: '' }), /token is required/);
  assert.throws(() => new Ledger({ token: 't' }), /baseUrl is required/);
  assert.throws(() => new Ledger({ baseUrl: 'localhost:3000', token: 't' }), /http or https|absolute URL/);
});
