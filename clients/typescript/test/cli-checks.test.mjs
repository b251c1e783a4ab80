// The CLI's usage errors (issue 40, second attack): a checks module that is missing, raises at import,
// does not parse, or whose checks object is not a mapping of tool name to function exits 2 with one line
// on stderr; a session without open unknowns is said so. Against the real server.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger } from '../dist/index.js';
import { sharedServer, startServer, sessionKey } from './helpers.mjs';

const run = promisify(execFile);
const pkgDir = fileURLToPath(new URL('..', import.meta.url));

let server;
before(async () => {
  server = await sharedServer();
});

test('the CLI: a checks module that is missing, fails at import or is not a mapping of callables exits 2 in one line; an unknown session says so', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ts-checks-'));
  const modules = {
    'syntax.mjs': 'export default {',
    'raises.mjs': 'throw new Error("import-time failure");',
    'mixed.mjs': 'export const checks = { "t.pay": 5 }; export function other() {}',
    'noncall.mjs': 'export default { "t.pay": "nope" };',
    'emptydefault.mjs': 'export default {};',
    'nothing.mjs': 'export const x = 1;',
  };
  for (const [name, text] of Object.entries(modules)) writeFileSync(join(dir, name), text);
  const env = { ...process.env, BASE_URL: server.baseUrl, OUTCOMES_HOST_TOKEN: server.token };
  const key = sessionKey('cli-none');
  for (const name of [...Object.keys(modules), 'missing.mjs']) {
    const result = await run(process.execPath, ['dist/cli.js', 'recover', '--checks', join(dir, name), '--session', key], { cwd: pkgDir, env }).then(
      () => ({ code: 0, stderr: '' }),
      (e) => e,
    );
    assert.equal(result.code, 2, `${name}: ${result.stderr}`);
    assert.equal(result.stderr.trim().split('\n').length, 1, `${name}: ${result.stderr}`);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
  }
  const raises = await run(process.execPath, ['dist/cli.js', 'recover', '--checks', join(dir, 'raises.mjs'), '--all'], { cwd: pkgDir, env }).catch((e) => e);
  assert.match(raises.stderr, /import-time failure/);
  // a session without open unknowns: an empty summary, exit 0, and a line saying none were found
  writeFileSync(join(dir, 'ok.mjs'), 'export default { "t.pay": () => ({ kind: "inconclusive", why: "x" }) };');
  const none = await run(process.execPath, ['dist/cli.js', 'recover', '--checks', join(dir, 'ok.mjs'), '--session', key], { cwd: pkgDir, env });
  assert.equal(JSON.parse(none.stdout).items.length, 0);
  assert.match(none.stderr, /no open unknowns were found in the given sessions/);
});

test('the CLI: the ledger going away mid-run exits 1 naming the ledger, after one item (the rest not looked at)', { timeout: 90_000 }, async () => {
  const own = await startServer();
  try {
    const dir = mkdtempSync(join(tmpdir(), 'ts-checks-'));
    const signal = join(dir, 'asked');
    // The check tells the test it was asked, waits until the ledger is gone, then answers completed.
    writeFileSync(
      join(dir, 'outage.mjs'),
      `import { writeFileSync } from 'node:fs';
export default { 't.pay': async () => {
  writeFileSync(${JSON.stringify(signal)}, 'x');
  for (let i = 0; i < 200; i++) {
    try { await fetch(process.env.BASE_URL + '/healthz'); } catch { break; }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { kind: 'completed', reference: 'ch_1' };
} };
`,
    );
    const ledger = new Ledger({ baseUrl: own.baseUrl, token: own.token, logger: { warn() {} } });
    const key = sessionKey('cli-outage');
    for (const id of ['m1', 'm2', 'm3']) {
      await assert.rejects(
        ledger.protectedWrite({ sessionKey: key, logicalTurnId: 'turn', mutationId: id, tool: 't.pay' }, async () => {
          throw new Error('lost');
        }),
      );
    }
    const env = { ...process.env, BASE_URL: own.baseUrl, OUTCOMES_HOST_TOKEN: own.token };
    const child = run(process.execPath, ['dist/cli.js', 'recover', '--checks', join(dir, 'outage.mjs'), '--session', key], { cwd: pkgDir, env }).catch((e) => e);
    while (!existsSync(signal)) await new Promise((r) => setTimeout(r, 50));
    await own.kill9();
    const result = await child;
    assert.equal(result.code, 1, result.stderr);
    assert.ok(result.stderr.includes(own.baseUrl), result.stderr);
    const partial = JSON.parse(result.stdout);
    assert.equal(partial.incomplete, true);
    assert.deepEqual(partial.items.map((i) => i.result), ['error', 'not_looked_at', 'not_looked_at']);
  } finally {
    await own.stop();
  }
});
