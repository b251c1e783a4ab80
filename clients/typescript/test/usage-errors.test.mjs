// A forgotten runTurn (or protectTools) is the host's mistake, not an outcome: the run rejects with a
// ProtectedToolUsageError naming what is missing, the tool never runs and nothing is recorded. (The
// SDKs hand a tool's error to the model and let the run finish: without this the run ended "done",
// and only the model knew.) The real SDKs with scripted models, the real server.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, run, Usage, setTracingDisabled } from '@openai/agents';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { Ledger, ProtectedToolUsageError } from 'outcomes-ledger';
import { protectedTool, runTurn, logicalTurnOf } from 'outcomes-ledger/openai-agents';
import { protectTools, protectedTool as aiSdkTool } from 'outcomes-ledger/ai-sdk';
import { sharedServer, sessionKey, outcomes, entries } from './helpers.mjs';

setTracingDisabled(true);

let server;
let ledger;
before(async () => {
  server = await sharedServer();
  ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
});

/** The ProtectedToolUsageError a run rejected with: itself, or as the Agents SDK's ToolCallError's `error`. */
function usageError(error) {
  if (error instanceof ProtectedToolUsageError) return error;
  if (error?.error instanceof ProtectedToolUsageError) return error.error;
  return undefined;
}

function agentModel() {
  const script = [
    [{ type: 'function_call', callId: 'call_1', name: 'create_issue', arguments: '{"title":"Refund rounds down"}', status: 'completed' }],
    [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }],
  ];
  return {
    async getResponse() {
      return { usage: new Usage(), output: script.shift() };
    },
    async *getStreamedResponse() {
      throw new Error('not scripted');
    },
  };
}

function issueTool(ran, extra = {}) {
  return protectedTool(ledger, {
    name: 'create_issue',
    description: 'Create an issue',
    parameters: z.object({ title: z.string() }),
    execute: async ({ title }, runContext, details, op) => {
      ran.push(title);
      await op.attach({ title });
      return 'created';
    },
    ...extra,
  });
}

test('OpenAI Agents: a protected tool without a session, run with plain run() (runTurn forgotten): run() rejects naming runTurn; the tool never ran', async () => {
  const ran = [];
  const agent = new Agent({ name: 'triage', model: agentModel(), tools: [issueTool(ran)] });
  // the SDK rejects with its ToolCallError, whose message carries ours and whose .error is ours
  await assert.rejects(run(agent, 'File the refund bug'), (error) => {
    assert.ok(usageError(error), String(error));
    assert.match(error.message, /outside runTurn\(ledger, agent, input, \{ sessionKey \}\)/);
    assert.match(error.message, /nothing was recorded and the tool did not run/);
    return true;
  });
  assert.deepEqual(ran, []);
  // also with an errorFunction of the host's own: it is not asked about a usage error
  const asked = [];
  const withOwn = new Agent({ name: 'triage', model: agentModel(), tools: [issueTool(ran, { errorFunction: (_c, e) => (asked.push(e), 'x') })] });
  await assert.rejects(run(withOwn, 'File the refund bug'), (error) => usageError(error) !== undefined);
  assert.deepEqual([ran, asked], [[], []]);
});

test('OpenAI Agents: the same tool under runTurn records its call in the turn; a session key function that gives nothing is a usage error too', async () => {
  const ran = [];
  const key = sessionKey('run-turn');
  const agent = new Agent({ name: 'triage', model: agentModel(), tools: [issueTool(ran)] });
  const result = await runTurn(ledger, agent, 'File the refund bug', { sessionKey: key, logicalTurnId: 'turn-run-1' });
  assert.equal(result.finalOutput, 'done');
  assert.deepEqual(ran, ['Refund rounds down']);
  const [record] = await outcomes(server, key);
  assert.deepEqual([record.logical_turn_id, record.mutation_id, record.status, record.title], ['turn-run-1', 'call_1', 'completed', 'Refund rounds down']);
  // without a logicalTurnId: a new turn- + 32 hex digits id for the run
  const key2 = sessionKey('run-turn-default');
  const again = await runTurn(ledger, new Agent({ name: 'triage', model: agentModel(), tools: [issueTool(ran)] }), 'again', { sessionKey: key2 });
  const [second] = await outcomes(server, key2);
  assert.match(second.logical_turn_id, /^turn-[0-9a-f]{32}$/);
  assert.equal(logicalTurnOf(again.state._context), second.logical_turn_id);
  // a sessionKey function whose context was not passed
  const byContext = protectedTool(ledger, { sessionKey: (rc) => rc?.context?.sessionKey }, {
    name: 'create_issue',
    description: 'Create an issue',
    parameters: z.object({ title: z.string() }),
    execute: async () => {
      ran.push('never');
      return 'x';
    },
  });
  await assert.rejects(run(new Agent({ name: 'triage', model: agentModel(), tools: [byContext] }), 'go'), (error) => {
    assert.ok(usageError(error), String(error));
    assert.match(error.message, /its sessionKey is undefined, not a non-empty string/);
    return true;
  });
  assert.equal(ran.includes('never'), false);
});

test('AI SDK: a protectedTool(...) not wrapped by protectTools: generateText rejects naming protectTools; wrapped, it records its call', async () => {
  const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };
  const model = () =>
    new MockLanguageModelV3({
      doGenerate: [
        { content: [{ type: 'tool-call', toolCallId: 'call_ai', toolName: 'create_issue', input: '{"title":"Refund rounds down"}' }], finishReason: { unified: 'tool-calls' }, usage, warnings: [] },
        { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop' }, usage, warnings: [] },
      ],
    });
  const ran = [];
  const createIssue = aiSdkTool({
    description: 'Create an issue',
    inputSchema: z.object({ title: z.string() }),
    execute: async ({ title }, options, op) => {
      ran.push(title);
      await op.attach({ title });
      return { number: 419 };
    },
  });
  await assert.rejects(generateText({ model: model(), tools: { create_issue: createIssue }, stopWhen: stepCountIs(2), prompt: 'go' }), (error) => {
    assert.ok(error instanceof ProtectedToolUsageError, String(error));
    assert.match(error.message, /without protectTools\(ledger, \{ sessionKey \}, tools\)/);
    return true;
  });
  assert.deepEqual(ran, []);
  const key = sessionKey('ai-wrapped');
  const tools = protectTools(ledger, { sessionKey: key, logicalTurnId: 'turn-ai-1' }, { create_issue: createIssue });
  const { text } = await generateText({ model: model(), tools, stopWhen: stepCountIs(2), prompt: 'go' });
  assert.equal(text, 'done');
  assert.deepEqual(ran, ['Refund rounds down']);
  const [entry] = await entries(server, key, 'turn-ai-1');
  assert.deepEqual([entry.outcome.mutation_id, entry.outcome.status, entry.outcome.title], ['call_ai', 'completed', 'Refund rounds down']);
});
