// A 40-turn session written through the host API (`POST /api/host/batch`), the size of the one the issue 26
// tester read: 1 to 4 outcomes a turn (100 in all), mostly completed, some failed, one cancelled, two
// settled unknown (turns 12 and 31), one in flight in the newest turn; titles with links on some, a resource
// id without a title on one (turn 3).
import { APIRequestContext } from '@playwright/test';
import { batch } from './host';

export const FORTY = { turns: 40, unknownTurns: [12, 31], outcomes: 100, inFlightTurn: 40 };

/** Outcomes of turn `i` (1-based): 1 to 4, 100 over the 40 turns. */
export function outcomesOf(i: number): number {
  return 1 + ((i * 7) % 4);
}

export async function writeFortyTurns(request: APIRequestContext, session: string): Promise<void> {
  const ops: object[] = [];
  for (let i = 1; i <= FORTY.turns; i++) {
    const turn = `turn-${i}`;
    const n = outcomesOf(i);
    for (let j = 0; j < n; j++) {
      const m = `${session}-t${i}-m${j}`;
      const tool = j % 2 === 0 ? 'mcp__dashboards__create' : 'mcp__github__create_issue';
      ops.push({ op: 'approve', session_key: session, logical_turn_id: turn, mutation_id: m, tool });
      if (i === FORTY.inFlightTurn && j === n - 1) {
        ops.push({ op: 'intent', session_key: session, mutation_id: m, attempt_id: 'att-1' });
        continue;
      }
      if (i === 20 && j === 0) {
        ops.push({ op: 'intent', session_key: session, mutation_id: m, attempt_id: 'att-1' });
        ops.push({ op: 'cancel', session_key: session, mutation_id: m, attempt_id: 'att-1', reason: 'pre_dispatch_deadline' });
        continue;
      }
      ops.push({ op: 'intent', session_key: session, mutation_id: m, attempt_id: 'att-1' });
      const unknown = FORTY.unknownTurns.includes(i) && j === 0;
      const failed = !unknown && (i * 3 + j) % 11 === 0;
      ops.push(unknown
        ? { op: 'settle', session_key: session, mutation_id: m, attempt_id: 'att-1', status: 'outcome_unknown', reason: 'execution_timeout' }
        : { op: 'settle', session_key: session, mutation_id: m, attempt_id: 'att-1', status: failed ? 'failed' : 'completed' });
      if (!unknown && !failed && j === 0 && i !== 3) {
        ops.push({ op: 'metadata', session_key: session, mutation_id: m, id: `${400 + i}`,
          title: `Dashboard "Week ${i}" created`, url: `https://example.com/d/${400 + i}` });
      }
      if (i === 3 && j === 0) ops.push({ op: 'metadata', session_key: session, mutation_id: m, id: '478' });
    }
  }
  await batch(request, ops);
}
