// The README examples run as written: each code block of the package README is byte for byte
// an example file, and each example file is run here against a server of its own; what the README
// says the dashboard shows is read back from the server's API and the session's page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startServer, outcomes } from './helpers.mjs';

const run = promisify(execFile);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const example = (name) => readFileSync(here(`../examples/${name}.mjs`), 'utf8');

function jsBlocks(markdown) {
  return [...markdown.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
}

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.stop();
});

async function runExample(name) {
  const { stdout } = await run(process.execPath, [here(`../examples/${name}.mjs`)], {
    env: { ...process.env, BASE_URL: server.baseUrl, OUTCOMES_HOST_TOKEN: server.token },
    timeout: 30_000,
  });
  return stdout;
}

test("the package README's blocks are the three example files", () => {
  const readme = readFileSync(here('../README.md'), 'utf8');
  assert.deepEqual(jsBlocks(readme), [example('quickstart'), example('payments'), example('ai-sdk'), example('openai-agents')]);
});

test('the quickstart runs and the dashboard shows what the README says', async () => {
  await runExample('quickstart');
  assert.deepEqual(await outcomes(server, 'chat-42'), [
    {
      schema: 'mutation_outcome/v1',
      logical_turn_id: 'turn-1',
      mutation_id: 'op-1',
      tool: 'mcp__dashboards__create',
      status: 'completed',
      resource_id: 'dash-7f3a',
      url: 'https://app.example.com/d/dash-7f3a',
      title: 'Service overview',
    },
  ]);
  const page = await (await fetch(`${server.baseUrl}/sessions/chat-42`)).text();
  assert.match(page, /Completed/);
  assert.match(page, /Service overview/);
  assert.match(page, /href="https:\/\/app\.example\.com\/d\/dash-7f3a"/);
  const sessions = await (await fetch(`${server.baseUrl}/api/sessions`, { headers: { Authorization: `Bearer ${server.token}` } })).json();
  assert.ok(sessions.sessions.some((s) => s.session_key === 'chat-42' && s.counts.completed === 1));
});

test('the AI SDK example runs: one completed entry named by the toolCallId', async () => {
  assert.equal((await runExample('ai-sdk')).trim(), 'Filed.');
  const [record] = await outcomes(server, 'chat-43');
  assert.deepEqual(
    [record.mutation_id, record.logical_turn_id, record.tool, record.status, record.resource_id],
    ['call_1', 'turn-1', 'create_issue', 'completed', '419'],
  );
});

test('the OpenAI Agents example runs: one completed entry named by the call id', async () => {
  assert.equal((await runExample('openai-agents')).trim(), 'Filed.');
  const [record] = await outcomes(server, 'chat-44');
  assert.deepEqual([record.mutation_id, record.tool, record.status, record.title], ['call_1', 'create_issue', 'completed', 'Refund rounds down']);
  assert.match(record.logical_turn_id, /^turn-[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
});
