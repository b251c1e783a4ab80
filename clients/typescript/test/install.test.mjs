// `npm install ./clients/typescript` works on a fresh checkout: the package's committed files
// alone (git ls-files: no node_modules, no build step) are installed into a new project, as a
// link (npm's default for a folder) and as a copy (--install-links), and the installed package
// records a protected write on the real server.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, mkdirSync, copyFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedServer, sessionKey, outcomes } from './helpers.mjs';

const run = promisify(execFile);
const pkgDir = fileURLToPath(new URL('..', import.meta.url));
let server;
before(async () => {
  server = await sharedServer();
});

async function freshCheckout(into) {
  const { stdout } = await run('git', ['ls-files', '-z', '--', '.'], { cwd: pkgDir });
  const files = stdout.split('\0').filter(Boolean);
  assert.ok(files.includes('dist/index.js'), 'dist/index.js is committed');
  for (const f of files) {
    mkdirSync(dirname(join(into, f)), { recursive: true });
    copyFileSync(join(pkgDir, f), join(into, f));
  }
}

for (const mode of ['link', 'copy']) {
  test(`npm install of a fresh checkout of the package (${mode}) works and records a protected write`, async () => {
    const root = mkdtempSync(join(tmpdir(), 'outcomes-ts-install-'));
    try {
      const checkout = join(root, 'repo', 'clients', 'typescript');
      mkdirSync(checkout, { recursive: true });
      await freshCheckout(checkout);
      const project = join(root, 'repo');
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'agent-app', private: true, type: 'module' }));
      // copy: the packed package alone, which has no dependency: fully offline. link: npm also resolves
      // the folder's devDependencies, from the cache that ci.sh's install steps filled (no network here).
      const args =
        mode === 'copy'
          ? ['install', '--install-links', '--offline', '--no-audit', '--no-fund', './clients/typescript']
          : ['install', '--prefer-offline', '--no-audit', '--no-fund', './clients/typescript'];
      await run('npm', args, { cwd: project, timeout: 120_000 });
      const key = sessionKey(`install-${mode}`);
      writeFileSync(
        join(project, 'agent.mjs'),
        `import { Ledger, LedgerError, NotDispatched, ProviderFailed } from 'outcomes-ledger';
import { protectTools } from 'outcomes-ledger/ai-sdk';
if (typeof protectTools !== 'function' || typeof NotDispatched !== 'function' || typeof ProviderFailed !== 'function') throw new Error('exports missing');
const ledger = new Ledger({ baseUrl: process.env.BASE_URL, token: process.env.OUTCOMES_HOST_TOKEN });
console.log(await ledger.protectedWrite({ sessionKey: process.env.KEY, logicalTurnId: 't', mutationId: 'm', tool: 'x' }, async () => 'ran'));
`,
      );
      const { stdout } = await run(process.execPath, ['agent.mjs'], {
        cwd: project,
        env: { ...process.env, BASE_URL: server.baseUrl, OUTCOMES_HOST_TOKEN: server.token, KEY: key },
      });
      assert.equal(stdout.trim(), 'ran');
      assert.deepEqual((await outcomes(server, key)).map((r) => r.status), ['completed']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
}
