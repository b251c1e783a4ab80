// The OpenAI Agents SDK for JS adapter run for real: the SDK's Agent and run() with a scripted
// Model (a Model implementation returning fixed function calls), its tool() and the real server.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, run, Usage, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';
import { Ledger, NotDispatched } from 'outcomes-ledger';
import { protectedTool, logicalTurnOf } from 'outcomes-ledger/openai-agents';
import { sharedServer, sessionKey, outcomes, entries, freePort } from './helpers.mjs';

setTracingDisabled(true); // no trace export: no network

let server;
let ledger;
before(async () => {
  server = await sharedServer();
  ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
});

/** A Model that answers each request with the next scripted output: function calls first, then a message. */
class ScriptedModel {
  constructor(turns) {
    this.turns = turns;
    this.requests = [];
  }
  async getResponse(request) {
    this.requests.push(request);
    const output = this.turns.shift();
    if (!output) throw new Error('the script has no more turns');
    return { usage: new Usage(), output, responseId: `resp_${this.requests.length}` };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('streaming is not scripted');
  }
}

const functionCall = (callId, name, args) => ({
  type: 'function_call',
  id: `fc_${callId}`,
  callId,
  name,
  arguments: JSON.stringify(args),
  status: 'completed',
});
const message = (text) => ({
  type: 'message',
  id: 'msg_1',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text }],
});

test('two function calls in one agent run: two entries of one logical turn, mutation ids = the call ids', async () => {
  const key = sessionKey('agents');
  const created = [];
  let runContextSeen;
  const createIssue = protectedTool(ledger, { sessionKey: key }, {
    name: 'create_issue',
    description: 'Create an issue',
    parameters: z.object({ title: z.string() }),
    execute: async ({ title }, runContext, details, op) => {
      runContextSeen = runContext;
      created.push(title);
      await op.attach({ id: `issue-${created.length}`, url: null, title });
      return `created ${title}`;
    },
  });
  const model = new ScriptedModel([
    [functionCall('call_A1', 'create_issue', { title: 'Refund rounds down' }), functionCall('call_B2', 'create_issue', { title: 'Export is slow' })],
    [message('filed both')],
  ]);
  const agent = new Agent({ name: 'triage', instructions: 'File issues', model, tools: [createIssue] });
  const result = await run(agent, 'File both bugs');
  assert.equal(result.finalOutput, 'filed both');
  assert.deepEqual(created.sort(), ['Export is slow', 'Refund rounds down']);
  const turn = logicalTurnOf(runContextSeen);
  assert.match(turn, /^turn-[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
  const records = await outcomes(server, key);
  assert.deepEqual(records.map((r) => r.mutation_id).sort(), ['call_A1', 'call_B2']);
  for (const r of records) {
    assert.equal(r.logical_turn_id, turn);
    assert.equal(r.tool, 'create_issue');
    assert.equal(r.status, 'completed');
    assert.match(r.title, /^(Refund rounds down|Export is slow)$/);
  }
  assert.equal((await entries(server, key, turn)).length, 2);

  // a second run is a second logical turn
  const again = new ScriptedModel([[functionCall('call_C3', 'create_issue', { title: 'Third' })], [message('ok')]]);
  await run(new Agent({ name: 'triage', model: again, tools: [createIssue] }), 'One more');
  const third = (await outcomes(server, key)).find((r) => r.mutation_id === 'call_C3');
  assert.equal(third.status, 'completed');
  assert.notEqual(third.logical_turn_id, turn);
});

test('a tool that throws lands as outcome_unknown; the SDK tells the model and the run goes on', async () => {
  const key = sessionKey('agents-throw');
  const chargeCard = protectedTool(ledger, { sessionKey: key, logicalTurnId: 'run-7' }, {
    name: 'charge_card',
    description: 'Charge a card',
    parameters: z.object({ cents: z.number() }),
    execute: async () => {
      throw new Error('connection reset by the payment provider');
    },
  });
  const model = new ScriptedModel([[functionCall('call_charge', 'charge_card', { cents: 1299 })], [message('could not tell')]]);
  const result = await run(new Agent({ name: 'payments', model, tools: [chargeCard] }), 'Charge it');
  assert.equal(result.finalOutput, 'could not tell');
  // the SDK handed the error to the model as the tool's output
  const toolOutput = model.requests[1].input.find((item) => item.type === 'function_call_result');
  assert.equal(toolOutput.callId, 'call_charge');
  // what the ledger recorded, not the SDK's default "Please try again"
  const said = JSON.stringify(toolOutput.output);
  assert.match(said, /The outcome of this tool call is unknown \(operation id call_charge\)/);
  assert.match(said, /Do not call the tool again/);
  assert.doesNotMatch(said, /try again/i);
  const records = await outcomes(server, key);
  assert.equal(records.length, 1);
  assert.equal(records[0].mutation_id, 'call_charge');
  assert.equal(records[0].logical_turn_id, 'run-7');
  assert.equal(records[0].status, 'outcome_unknown');
  assert.equal('reason' in records[0], false);
});

test('NotDispatched lands as not_executed; with the ledger down the tool never runs; the model is told each', async () => {
  const key = sessionKey('agents-not-run');
  let runs = 0;
  const make = (l) =>
    protectedTool(l, { sessionKey: key, logicalTurnId: 'run-n' }, {
      name: 'send_email',
      description: 'Send an email',
      parameters: z.object({ to: z.string() }),
      execute: async () => {
        runs += 1;
        throw new NotDispatched('the mail relay refused the connection before the request');
      },
    });
  const first = new ScriptedModel([[functionCall('call_n1', 'send_email', { to: 'a@example.com' })], [message('ok')]]);
  await run(new Agent({ name: 'mail', model: first, tools: [make(ledger)] }), 'Send it');
  const told1 = JSON.stringify(first.requests[1].input.find((i) => i.type === 'function_call_result').output);
  assert.match(told1, /The tool call was not executed \(operation id call_n1\); nothing was done/);
  assert.equal(runs, 1);
  const [record] = await outcomes(server, key);
  assert.deepEqual([record.mutation_id, record.status], ['call_n1', 'not_executed']);

  const down = new Ledger({ baseUrl: `http://127.0.0.1:${await freePort()}`, token: 't', retry: { maxTotalMs: 200, baseDelayMs: 10 } });
  const second = new ScriptedModel([[functionCall('call_n2', 'send_email', { to: 'b@example.com' })], [message('ok')]]);
  await run(new Agent({ name: 'mail', model: second, tools: [make(down)] }), 'Send it');
  const told2 = JSON.stringify(second.requests[1].input.find((i) => i.type === 'function_call_result').output);
  assert.match(told2, /The tool was not called: the outcome ledger could not record the call \(LedgerConnectionError connection_failed\)/);
  assert.equal(runs, 1, 'the tool never ran');
});
