import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { Ledger } from 'outcomes-ledger';
import { protectTools, protectedTool } from 'outcomes-ledger/ai-sdk';

// A scripted model (the AI SDK's own test model) that asks for one tool call; use your real model instead.
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const model = new MockLanguageModelV3({
  doGenerate: [
    { content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'create_issue', input: '{"title":"Refund rounds down"}' }], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] },
    { content: [{ type: 'text', text: 'Filed.' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] },
  ],
});

const ledger = new Ledger({ baseUrl: process.env.BASE_URL ?? 'http://127.0.0.1:3000', token: process.env.OUTCOMES_HOST_TOKEN });
const tools = protectTools(ledger, { sessionKey: 'chat-43', logicalTurnId: 'turn-1' }, {
  // protectedTool: an AI SDK tool whose execute gets the protected write's op third (typed: input from the schema)
  create_issue: protectedTool({
    description: 'Create an issue',
    inputSchema: z.object({ title: z.string() }),
    execute: async ({ title }, options, op) => {
      await op.attach({ id: '419', url: 'https://code.example.com/acme/shop/issues/419', title });
      return { number: 419 };
    },
  }),
});
const { text } = await generateText({ model, tools, stopWhen: stepCountIs(2), prompt: 'File the refund bug' });
console.log(text);
