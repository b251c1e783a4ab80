// The published .d.ts files type a consumer's code: test/typecheck/consumer.ts compiles with
// tsc --strict against dist/ (through the package's own exports), and its @ts-expect-error lines
// (a settle status or reason the server's schema refuses) must be errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const run = promisify(execFile);
const pkgDir = fileURLToPath(new URL('..', import.meta.url));

test('a strict TypeScript consumer compiles against the published types', async () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = await run(process.execPath, [tsc, '-p', 'test/typecheck/tsconfig.json'], { cwd: pkgDir }).catch((e) => e);
  assert.equal(result.code ?? 0, 0, `${result.stdout ?? ''}${result.stderr ?? ''}`);
});
