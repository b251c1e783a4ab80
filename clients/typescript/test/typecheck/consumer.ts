// Compiled (never run) by test/typecheck.test.mjs: the published types give typed results and
// errors, and refuse what the server would refuse by its schema.
import { Ledger, LedgerError, NotDispatched, ProviderFailed } from 'outcomes-ledger';
import type { EntryState, LedgerStatus, BatchResult, ProtectedWriteOp } from 'outcomes-ledger';
import { protectTools, protectedTool as aiSdkTool } from 'outcomes-ledger/ai-sdk';
import { protectedTool, runTurn } from 'outcomes-ledger/openai-agents';
import { completed, notAccepted, inconclusive } from 'outcomes-ledger';
import type { StatusCheck, RecoverSummary } from 'outcomes-ledger';
import { z } from 'zod';

// Status checks: typed answers, sync or async; recover's summary.
export const check: StatusCheck = async (op) => {
  const key: string = op.idempotencyKey;
  if (key.length === 0) return inconclusive({ why: 'no key' });
  return op.tool === 'refund' ? notAccepted({ reference: key }) : completed({ reference: key, observedAt: new Date() });
};
export async function recovered(ledger: Ledger): Promise<number> {
  const summary: RecoverSummary = await ledger.recover({ sessions: ['chat-42'], checks: { pay: check } });
  await ledger.recover({ sessions: 'all' });
  // @ts-expect-error: sessions is a list or 'all'
  await ledger.recover({ sessions: 'chat-42' });
  return summary.completed + summary.notAccepted;
}

// The OpenAI Agents adapter's protectedTool: input from the zod schema, op never undefined.
export function agentsTools(ledger: Ledger) {
  const typed = protectedTool(ledger, { sessionKey: 's' }, {
    name: 'create_issue',
    description: 'Create an issue',
    parameters: z.object({ title: z.string(), labels: z.array(z.string()) }),
    status: check,
    execute: async (input, _runContext, _details, op) => {
      const title: string = input.title;
      const labels: string[] = input.labels;
      // @ts-expect-error: not in the schema
      void input.assignee;
      await op.attach({ id: '1', title });
      return `${title}${labels.length}${op.idempotencyKey}`;
    },
  });
  const inTurn = protectedTool(ledger, {
    name: 'close_issue',
    description: 'Close an issue',
    parameters: z.object({ number: z.number() }),
    execute: async ({ number }, _runContext, _details, op) => `${number + 1}${op.mutationId}`,
  });
  void runTurn;
  return [typed, inTurn];
}

// The AI SDK adapter's protectedTool: input from inputSchema, op never undefined.
export function aiSdkTools(ledger: Ledger) {
  return protectTools(ledger, { sessionKey: 's' }, {
    create_issue: aiSdkTool({
      description: 'Create an issue',
      inputSchema: z.object({ title: z.string() }),
      status: check,
      execute: async ({ title }, options, op) => {
        const upper: string = title.toUpperCase();
        // @ts-expect-error: title is a string (from the schema), not any
        const wrong: number = title;
        void wrong;
        await op.attach({ title: upper });
        return { number: 419, call: options.toolCallId };
      },
    }),
  });
}

export async function use(ledger: Ledger): Promise<string> {
  const entry: EntryState = await ledger.settle({ sessionKey: 's', mutationId: 'm', attemptId: 'a', status: 'outcome_unknown', reason: 'execution_timeout' });
  const status: LedgerStatus = entry.ledger_status;
  const revision: number | null | undefined = entry.revision;
  // @ts-expect-error: not a settlement status
  await ledger.settle({ sessionKey: 's', mutationId: 'm', attemptId: 'a', status: 'done' });
  // @ts-expect-error: a settlement reason is only execution_timeout
  await ledger.settle({ sessionKey: 's', mutationId: 'm', attemptId: 'a', status: 'outcome_unknown', reason: 'pre_dispatch_deadline' });
  const results: BatchResult[] = await ledger.batch([{ op: 'intent', session_key: 's', mutation_id: 'm', attempt_id: 'a' }]);
  const code: string | undefined = results[0]?.error?.code;
  const link = await ledger.mintViewerLink({ sessionKey: 's' });
  const href: string = link.href + link.expires_at;
  const value: number = await ledger.protectedWrite({ sessionKey: 's', logicalTurnId: 't', tool: 'x' }, async (op: ProtectedWriteOp) => {
    const attempt: string = op.attemptId;
    op.notExecuted({ reason: 'pre_dispatch_deadline' });
    return attempt.length;
  });
  try {
    throw new NotDispatched('x', { reason: 'pre_dispatch_deadline' });
  } catch (error) {
    if (error instanceof LedgerError) {
      const field: string | null = error.field;
      const current: EntryState | null = error.current;
      return `${error.code}${field}${current?.ledger_status}`;
    }
  }
  void new ProviderFailed();
  void protectTools;
  void protectedTool;
  return `${status}${revision}${code}${href}${value}`;
}
