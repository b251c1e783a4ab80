// The host's OpenTelemetry context travels with a protected write's approve (docs/api.md "Host write
// API", `traceparent`; docs/operations.md "OpenTelemetry"): the real OpenTelemetry Node SDK, the AI
// SDK's own telemetry, the value read back from the ledger's file (entries.traceparent, with python3's
// sqlite3 as retries.test.mjs does).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { NodeTracerProvider, SimpleSpanProcessor, InMemorySpanExporter, AlwaysOffSampler } from '@opentelemetry/sdk-trace-node';
import { generateText, tool, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { Ledger, LedgerError } from 'outcomes-ledger';
import { protectTools } from 'outcomes-ledger/ai-sdk';
import { startServer } from './helpers.mjs';

const TOOL = 'mcp__dashboards__create';
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
// Global: the tracer provider, the AsyncLocalStorage context manager and the W3C propagator.
provider.register();
const tracer = trace.getTracer('host');

let server;
let ledger;
before(async () => {
  server = await startServer();
  ledger = new Ledger({ baseUrl: server.baseUrl, token: server.token });
});
after(async () => {
  await server.stop();
  await provider.shutdown();
});

function stored(mutationId) {
  const script = [
    'import json, sqlite3, sys',
    'c = sqlite3.connect(sys.argv[1])',
    'print(json.dumps(c.execute("SELECT traceparent FROM entries WHERE mutation_id = ?", (sys.argv[2],)).fetchall()))',
  ].join('\n');
  const rows = JSON.parse(execFileSync('python3', ['-c', script, join(server.dataDir, 'ledger.sqlite'), mutationId], { encoding: 'utf8' }));
  assert.equal(rows.length, 1, `${mutationId}: ${JSON.stringify(rows)}`);
  return rows[0][0];
}

/** The span's W3C form, with its trace flags as the SDK set them. */
function traceparentOf(span) {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}

test('a protected write inside a span sends that span as its traceparent; outside every span, none', async () => {
  let seen;
  const host = await tracer.startActiveSpan('host tool call', async (span) => {
    await ledger.protectedWrite({ sessionKey: 'traced', logicalTurnId: 't1', mutationId: 'm-in-span', tool: TOOL }, (op) => {
      seen = op.traceparent;
    });
    span.end();
    return span;
  });
  assert.equal(seen, traceparentOf(host));
  assert.equal(stored('m-in-span'), traceparentOf(host));
  let plain = 'unset';
  await ledger.protectedWrite({ sessionKey: 'traced', logicalTurnId: 't1', mutationId: 'm-no-span', tool: TOOL }, (op) => {
    plain = op.traceparent;
  });
  assert.equal(plain, undefined);
  assert.equal(stored('m-no-span'), null);
});

test('a span not sampled is sent with its flags 00', async () => {
  const unsampled = new NodeTracerProvider({ sampler: new AlwaysOffSampler() }).getTracer('host');
  const span = await unsampled.startActiveSpan('not sampled', async (span) => {
    await ledger.protectedWrite({ sessionKey: 'traced', logicalTurnId: 't1', mutationId: 'm-unsampled', tool: TOOL }, () => {});
    span.end();
    return span;
  });
  assert.equal(span.spanContext().traceFlags & 1, 0);
  assert.equal(stored('m-unsampled'), traceparentOf(span));
});

test("the AI SDK's ai.toolCall span is the parent of the write", async () => {
  exporter.reset();
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 5, text: 5, reasoning: undefined },
  };
  const model = new MockLanguageModelV3({
    doGenerate: [
      {
        content: [{ type: 'tool-call', toolCallId: 'call_traced', toolName: 'create_dashboard', input: '{"title":"Latency"}' }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      },
      { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] },
    ],
  });
  const tools = protectTools(ledger, { sessionKey: 'traced-agent', logicalTurnId: 'run-1' }, {
    create_dashboard: tool({
      description: 'Create a dashboard',
      inputSchema: z.object({ title: z.string() }),
      execute: async ({ title }) => `created ${title}`,
    }),
  });
  const result = await generateText({
    model,
    tools,
    stopWhen: stepCountIs(3),
    prompt: 'make it',
    experimental_telemetry: { isEnabled: true },
  });
  assert.equal(result.text, 'done');
  const spans = exporter.getFinishedSpans().filter((s) => s.attributes['ai.toolCall.id'] === 'call_traced');
  assert.deepEqual(spans.map((s) => s.name), ['ai.toolCall']);
  assert.equal(stored('call_traced'), traceparentOf(spans[0]));
});

test('an explicit traceparent is checked by the ledger: 422 naming it', async () => {
  const good = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const entry = await ledger.approve({ sessionKey: 'explicit', logicalTurnId: 't1', mutationId: 'm-good', tool: TOOL, traceparent: good });
  assert.equal(entry.ledger_status, 'approved');
  await assert.rejects(
    ledger.approve({ sessionKey: 'explicit', logicalTurnId: 't1', mutationId: 'm-bad', tool: TOOL, traceparent: good.toUpperCase() }),
    (err) => err instanceof LedgerError && err.status === 422 && err.field === 'traceparent',
  );
  assert.equal(stored('m-good'), good);
});
