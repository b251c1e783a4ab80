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

test("the README's AI SDK example, verbatim, compiles as TypeScript with tsc --strict --noEmit (ai 6)", async () => {
  const { readFileSync, writeFileSync, mkdirSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const readme = readFileSync(join(pkgDir, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Vercel AI SDK'));
  const block = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block && block.includes("from 'outcomes-ledger/ai-sdk'"), 'the AI SDK section has its example');
  const aiVersion = JSON.parse(readFileSync(join(pkgDir, 'node_modules/ai/package.json'), 'utf8')).version;
  assert.match(aiVersion, /^6\./, 'the pinned ai is 6');
  // inside the package (test/typecheck/.readme/, ignored by git), so that 'outcomes-ledger' resolves to it
  const dir = join(pkgDir, 'test/typecheck/.readme');
  mkdirSync(dir, { recursive: true });
  try {
    writeFileSync(join(dir, 'readme-ai-sdk.ts'), block);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { types: ['node'], strict: true, noEmit: true }, files: ['readme-ai-sdk.ts'] }),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: pkgDir }).catch((e) => e);
    assert.equal(result.code ?? 0, 0, `${result.stdout ?? ''}${result.stderr ?? ''}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
