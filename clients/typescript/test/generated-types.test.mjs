// The committed types cannot drift from the server: regenerating them from the running server's
// GET /api/openapi.json with the pinned openapi-typescript gives the committed file byte for byte,
// and the committed dist/ is what tsc builds from src/.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { sharedServer } from './helpers.mjs';

const run = promisify(execFile);
const pkgDir = fileURLToPath(new URL('..', import.meta.url));
let server;
before(async () => {
  server = await sharedServer();
});

test('regenerating src/generated/openapi.ts from the server changes nothing', async () => {
  const { stdout } = await run(process.execPath, ['scripts/generate-types.mjs', '--check'], {
    cwd: pkgDir,
    env: { ...process.env, BASE_URL: server.baseUrl },
  });
  assert.match(stdout, /generated types are up to date/);
  const generated = readFileSync(new URL('../src/generated/openapi.ts', import.meta.url), 'utf8');
  // the host operations the client calls are all in it, each path with its own operation
  for (const path of [
    '/api/host/batch',
    '/api/host/sessions/{session_key}',
    '/api/host/sessions/{session_key}/mutations',
    '/api/host/sessions/{session_key}/mutations/{mutation_id}/intent',
    '/api/host/sessions/{session_key}/mutations/{mutation_id}/settlement',
    '/api/host/sessions/{session_key}/mutations/{mutation_id}/cancellation',
    '/api/host/sessions/{session_key}/mutations/{mutation_id}/reconciliation',
    '/api/host/sessions/{session_key}/mutations/{mutation_id}/metadata',
    '/api/host/sessions/{session_key}/mutations/{mutation_id}/attempts',
    '/api/host/sessions/{session_key}/viewer-links',
  ]) {
    assert.ok(generated.includes(`    "${path}": {`), path);
  }
});

test('the committed dist/ is what tsc builds from src/', async () => {
  const { stdout } = await run('git', ['status', '--porcelain', '--', 'dist', 'src'], { cwd: pkgDir }).catch(() => ({ stdout: 'not a git checkout' }));
  // ci.sh runs `npm run build` before the suite, so a src/ change without its dist/ shows here
  assert.equal(stdout, '', `uncommitted or stale build output:\n${stdout}`);
});
