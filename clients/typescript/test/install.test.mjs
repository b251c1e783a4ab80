// `npm install ./clients/typescript` works on a fresh checkout: the package's committed files
// alone (git ls-files: no node_modules, no build step) are installed into a new project, as a
// link (npm's default for a folder) and as a copy (--install-links), and the installed package
// records a protected write on the real server. And the README's documented way (README "Install"):
// `npm pack` of the checkout, the tarball installed in a project ELSEWHERE with the frameworks, where
// `outcomes-ledger/openai-agents` finds the project's `@openai/agents` (a linked folder outside the
// project resolves its peers from its own location: ERR_MODULE_NOT_FOUND), and `npx outcomes-ledger`
// is the CLI.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, mkdirSync, copyFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
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

test("the README's way: npm pack, the tarball installed in a project elsewhere with @openai/agents, ai and zod: every entry point imports, a protected tool records its call, npx outcomes-ledger recover runs", async () => {
  const root = mkdtempSync(join(tmpdir(), 'outcomes-ts-pack-'));
  try {
    const checkout = join(root, 'repo', 'clients', 'typescript');
    mkdirSync(checkout, { recursive: true });
    await freshCheckout(checkout);
    // exactly the README's commands (offline here: ci.sh's npm ci filled the cache with the pinned versions)
    const { stdout: packed } = await run('npm', ['pack', '--silent', '--pack-destination', root], { cwd: checkout });
    const tarball = join(root, packed.trim().split('\n').at(-1));
    const project = join(root, 'app'); // not an ancestor of the checkout
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'agent-app', private: true, type: 'module' }));
    const dev = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).devDependencies;
    await run(
      'npm',
      ['install', '--offline', '--no-audit', '--no-fund', tarball, `@openai/agents@${dev['@openai/agents']}`, `ai@${dev.ai}`, `zod@${dev.zod}`],
      { cwd: project, timeout: 120_000 },
    );
    const key = sessionKey('pack');
    writeFileSync(
      join(project, 'agent.mjs'),
      `import { Agent, run, Usage, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';
import { Ledger } from 'outcomes-ledger';
import { protectTools, protectedTool as aiTool } from 'outcomes-ledger/ai-sdk';
import { protectedTool, runTurn } from 'outcomes-ledger/openai-agents';
if (typeof protectTools !== 'function' || typeof aiTool !== 'function') throw new Error('ai-sdk exports missing');
setTracingDisabled(true);
const script = [
  [{ type: 'function_call', callId: 'call_1', name: 'create_issue', arguments: '{"title":"t"}', status: 'completed' }],
  [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Filed.' }] }],
];
const model = { async getResponse() { return { usage: new Usage(), output: script.shift() }; }, async *getStreamedResponse() {} };
const ledger = new Ledger({ baseUrl: process.env.BASE_URL, token: process.env.OUTCOMES_HOST_TOKEN });
const createIssue = protectedTool(ledger, {
  name: 'create_issue', description: 'Create an issue', parameters: z.object({ title: z.string() }),
  execute: async ({ title }, runContext, details, op) => { await op.attach({ title }); throw new Error('reply lost'); },
});
const result = await runTurn(ledger, new Agent({ name: 'triage', model, tools: [createIssue] }), 'go', { sessionKey: process.env.KEY, logicalTurnId: 'turn-pack' });
console.log(result.finalOutput);
`,
    );
    writeFileSync(
      join(project, 'checks.mjs'),
      `import { completed } from 'outcomes-ledger';
export default { create_issue: (op) => completed({ reference: 'issue-' + op.idempotencyKey, observedAt: '2026-12-07T00:00:00Z' }) };
`,
    );
    const env = { ...process.env, BASE_URL: server.baseUrl, OUTCOMES_HOST_TOKEN: server.token, KEY: key };
    const { stdout } = await run(process.execPath, ['agent.mjs'], { cwd: project, env });
    assert.equal(stdout.trim(), 'Filed.');
    assert.deepEqual((await outcomes(server, key)).map((r) => [r.logical_turn_id, r.mutation_id, r.status]), [['turn-pack', 'call_1', 'outcome_unknown']]);
    const { stdout: printed } = await run('npx', ['--offline', 'outcomes-ledger', 'recover', '--checks', './checks.mjs', '--session', key], {
      cwd: project,
      env,
      timeout: 60_000,
    });
    const summary = JSON.parse(printed);
    assert.deepEqual([summary.completed, summary.errors, summary.skipped], [1, 0, 0]);
    assert.deepEqual((await outcomes(server, key)).map((r) => r.status), ['completed']);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
