import { Agent, run, Usage, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';
import { Ledger } from 'outcomes-ledger';
import { protectedTool } from 'outcomes-ledger/openai-agents';

setTracingDisabled(true);

// A scripted Model that asks for one function call, then answers; use your real model instead.
const script = [
  [{ type: 'function_call', callId: 'call_1', name: 'create_issue', arguments: '{"title":"Refund rounds down"}', status: 'completed' }],
  [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Filed.' }] }],
];
const model = {
  async getResponse() { return { usage: new Usage(), output: script.shift() }; },
  async *getStreamedResponse() { throw new Error('not scripted'); },
};

const ledger = new Ledger({ baseUrl: process.env.BASE_URL ?? 'http://127.0.0.1:3000', token: process.env.OUTCOMES_HOST_TOKEN });
const createIssue = protectedTool(ledger, { sessionKey: 'chat-44' }, {
  name: 'create_issue',
  description: 'Create an issue',
  parameters: z.object({ title: z.string() }),
  execute: async ({ title }, runContext, details, op) => {
    await op.attach({ id: '419', url: 'https://code.example.com/acme/shop/issues/419', title });
    return 'created issue 419';
  },
});
const result = await run(new Agent({ name: 'triage', model, tools: [createIssue] }), 'File the refund bug');
console.log(result.finalOutput);
