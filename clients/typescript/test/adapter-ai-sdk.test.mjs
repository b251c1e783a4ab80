// The Vercel AI SDK adapter run for real: generateText with the SDK's own mock language model
// (ai/test) answering fixed tool calls, the real tool() and the real server.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, tool, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { Ledger, ProtectedToolError, ProviderFailed } from 'outcomes-ledger';
import { protectTools } from 'outcomes-ledger/ai-sdk';
import { sharedServer, sessionKey, outcomes, entries, freePort } from './helpers.mjs';

let server;
let ledger;
before(async () => {
  server = await sharedServer();
  ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
});

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A scripted model: the first step asks for `calls`, the second answers text. */
function scriptedModel(calls) {
  return new MockLanguageModelV3({
    doGenerate: [
      {
        content: calls.map(([toolCallId, toolName, input]) => ({
          type: 'tool-call',
          toolCallId,
          toolName,
          input: JSON.stringify(input),
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      },
      {
        content: [{ type: 'text', text: 'done' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      },
    ],
  });
}

test('two tool calls in one generateText run: two entries of one logical turn, mutation ids = the toolCallIds', async () => {
  const key = sessionKey('ai-sdk');
  const created = [];
  const tools = protectTools(ledger, { sessionKey: key, logicalTurnId: 'run-1' }, {
    create_issue: tool({
      description: 'Create an issue',
      inputSchema: z.object({ title: z.string() }),
      execute: async ({ title }, options, op) => {
        created.push(title);
        await op.attach({ id: `issue-${created.length}`, url: `https://code.example.com/i/${created.length}`, title });
        return { number: created.length };
      },
    }),
  });
  const result = await generateText({
    model: scriptedModel([
      ['call_A1', 'create_issue', { title: 'Refund rounds down' }],
      ['call_B2', 'create_issue', { title: 'Export is slow' }],
    ]),
    tools,
    stopWhen: stepCountIs(3),
    prompt: 'File both bugs',
  });
  assert.equal(result.text, 'done');
  assert.deepEqual(created.sort(), ['Export is slow', 'Refund rounds down']);
  const toolResults = result.steps[0].toolResults.map((r) => [r.toolCallId, r.output.number]);
  assert.equal(toolResults.length, 2);
  const records = await outcomes(server, key);
  assert.deepEqual(records.map((r) => r.mutation_id).sort(), ['call_A1', 'call_B2']);
  for (const r of records) {
    assert.equal(r.logical_turn_id, 'run-1');
    assert.equal(r.tool, 'create_issue');
    assert.equal(r.status, 'completed');
    assert.match(r.resource_id, /^issue-[12]$/);
  }
  assert.equal((await entries(server, key, 'run-1')).length, 2);
});

test('a tool that throws lands as outcome_unknown; the SDK gets the error as a tool error and the run goes on', async () => {
  const key = sessionKey('ai-sdk-throw');
  let calls = 0;
  const tools = protectTools(ledger, { sessionKey: key }, {
    charge_card: tool({
      description: 'Charge a card',
      inputSchema: z.object({ cents: z.number() }),
      execute: async () => {
        calls += 1;
        throw new Error('connection reset by the payment provider');
      },
    }),
    send_email: tool({
      description: 'Send an email',
      inputSchema: z.object({ to: z.string() }),
      execute: async () => 'sent',
    }),
  });
  const model = scriptedModel([
    ['call_charge', 'charge_card', { cents: 1299 }],
    ['call_mail', 'send_email', { to: 'a@example.com' }],
  ]);
  const result = await generateText({
    model,
    tools,
    stopWhen: stepCountIs(3),
    prompt: 'Charge and confirm',
  });
  assert.equal(calls, 1);
  const errors = result.steps[0].content.filter((p) => p.type === 'tool-error');
  assert.equal(errors.length, 1);
  const [{ toolCallId, error }] = errors;
  assert.equal(toolCallId, 'call_charge');
  assert.ok(error instanceof ProtectedToolError);
  assert.equal(error.outcome, 'outcome_unknown');
  assert.equal(error.mutationId, 'call_charge');
  assert.equal(error.cause.message, 'connection reset by the payment provider');
  assert.match(error.message, /^The outcome of this tool call is unknown \(operation id call_charge\)/);
  assert.match(error.message, /Do not call the tool again/);
  // and that is what the model reads in the next step
  const toolMessage = model.doGenerateCalls[1].prompt.find((m) => m.role === 'tool');
  assert.match(JSON.stringify(toolMessage.content), /unknown \(operation id call_charge\)/);
  const records = await outcomes(server, key);
  const byId = Object.fromEntries(records.map((r) => [r.mutation_id, r]));
  assert.equal(byId.call_charge.status, 'outcome_unknown');
  assert.equal('reason' in byId.call_charge, false);
  assert.equal(byId.call_charge.tool, 'charge_card');
  assert.equal(byId.call_mail.status, 'completed');
  // no logicalTurnId given: both calls of the run share one generated turn
  assert.equal(byId.call_charge.logical_turn_id, byId.call_mail.logical_turn_id);
  assert.match(byId.call_charge.logical_turn_id, /^turn-[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
});

test('a provider refusal lands as failed, and with the ledger down the tool never runs: the model is told so', async () => {
  const key = sessionKey('ai-sdk-failed');
  let runs = 0;
  const make = (l) =>
    protectTools(l, { sessionKey: key, logicalTurnId: 'run-f' }, {
      create_issue: tool({
        description: 'Create an issue',
        inputSchema: z.object({ title: z.string() }),
        execute: async () => {
          runs += 1;
          throw new ProviderFailed('422 from the code host: title too long');
        },
      }),
    });
  const first = await generateText({ model: scriptedModel([['call_f1', 'create_issue', { title: 'x' }]]), tools: make(ledger), stopWhen: stepCountIs(3), prompt: 'p' });
  const [refused] = first.steps[0].content.filter((p) => p.type === 'tool-error');
  assert.equal(refused.error.outcome, 'failed');
  assert.match(refused.error.message, /^The tool call failed \(operation id call_f1\)/);
  assert.equal(runs, 1);
  const r = (await outcomes(server, key))[0];
  assert.deepEqual([r.mutation_id, r.status], ['call_f1', 'failed']);

  const down = new Ledger({ baseUrl: `http://127.0.0.1:${await freePort()}`, token: 't', retry: { maxTotalMs: 200, baseDelayMs: 10 } });
  const second = await generateText({ model: scriptedModel([['call_f2', 'create_issue', { title: 'y' }]]), tools: make(down), stopWhen: stepCountIs(3), prompt: 'p' });
  const [notCalled] = second.steps[0].content.filter((p) => p.type === 'tool-error');
  assert.equal(notCalled.error.outcome, 'not_called');
  assert.equal(notCalled.error.cause.code, 'connection_failed');
  assert.match(notCalled.error.message, /^The tool was not called: the outcome ledger could not record the call/);
  assert.equal(runs, 1, 'the tool never ran');
});
