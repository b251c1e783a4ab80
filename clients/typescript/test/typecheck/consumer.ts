// Compiled (never run) by test/typecheck.test.mjs: the published types give typed results and
// errors, and refuse what the server would refuse by its schema.
import { Ledger, LedgerError, NotDispatched, ProviderFailed } from 'outcomes-ledger';
import type { EntryState, LedgerStatus, BatchResult, ProtectedWriteOp } from 'outcomes-ledger';
import { protectTools } from 'outcomes-ledger/ai-sdk';
import { protectedTool } from 'outcomes-ledger/openai-agents';

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
