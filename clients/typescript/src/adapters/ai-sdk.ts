/**
 * Vercel AI SDK (`ai`) adapter: protected tools for one `generateText` / `streamText` run.
 *
 * Each call of a wrapped tool's `execute` is one protected write (see `Ledger.protectedWrite`):
 * the SDK's `toolCallId` is the `mutation_id`, the tool's key in the tools object its `tool`
 * name, and the run one logical turn (`logicalTurnId`, a new turn id, `turn-` + 32 hex digits, when not given: wrap the
 * tools once per run). The original `execute(input, options)` is called with a third argument,
 * the protected write's `op` (`op.attach`, `op.failed()`, `op.notExecuted()`). A tool that
 * throws settles by the protected write's rules; the SDK then gets a `ProtectedToolError` whose
 * message is what the ledger recorded, which the SDK hands to the model as the tool error (an
 * unknown outcome: do not call again, quote the operation id; the SDK's model would otherwise read
 * a bare error as an invitation to retry, a second write of what may have happened). The tool's
 * own error is its `cause`.
 *
 * ```js
 * const tools = protectTools(ledger, { sessionKey: 'chat-42' }, { create_issue: tool({ … }) });
 * await generateText({ model, tools, prompt });
 * ```
 */
import type { FlexibleSchema, Tool, ToolExecutionOptions } from 'ai';
import type { Ledger, ProtectedWriteOp } from '../client.js';
import type { StatusCheck } from '../status.js';
import { newTurnId, outcomeMessage, recordedOutcome } from '../client.js';
import { ProtectedToolError, ProtectedToolUsageError } from '../errors.js';

/** The one logical turn a run's tool calls belong to. */
export interface TurnOptions {
  sessionKey: string;
  /** Default: a new turn id (`turn-` + 32 hex digits) per `protectTools` / `protectTool` call, i.e. per run. */
  logicalTurnId?: string;
  /**
   * Each call's deadline, 1 to 604800 s (`ProtectedWriteOptions.deadlineSecs`, docs/api.md
   * "Deadlines"): default none sent (the server's, 900 s); extended every third of it while the
   * tool runs.
   */
  deadlineSecs?: number;
  /** Status checks' first delay, tries and time limit (`ProtectedWriteOptions.statusDelayMs` / `statusAttempts` / `statusTimeoutMs`). */
  statusDelayMs?: number;
  statusAttempts?: number;
  statusTimeoutMs?: number;
}

/** The part of an AI SDK tool this adapter touches: its `execute(input, options)` (`options.toolCallId`). */
export interface ExecutableTool {
  execute?: (input: any, options: any, op?: ProtectedWriteOp) => any;
  /**
   * The tool's status check (README "Status checks"): run when a call ends unknown; also registered
   * as `ledger.statusChecks[name]` (unless one is registered already) for `ledger.recover()`. Not
   * passed on to the SDK.
   */
  status?: StatusCheck;
  [key: string]: any;
}

const DEFINITION = Symbol('outcomes-ledger.protectedTool');

/** What {@link protectedTool} takes: an AI SDK tool whose `execute` gets the protected write's `op` third. */
export type ProtectedToolDefinition<INPUT, OUTPUT> = {
  description?: string;
  title?: string;
  inputSchema: FlexibleSchema<INPUT>;
  execute: (input: INPUT, options: ToolExecutionOptions, op: ProtectedWriteOp) => PromiseLike<OUTPUT> | OUTPUT;
  /** The tool's status check (README "Status checks"). */
  status?: StatusCheck;
  onInputAvailable?: (options: { input: INPUT } & Record<string, unknown>) => void | PromiseLike<void>;
  [option: string]: unknown;
};

/**
 * An AI SDK tool (what `tool()` makes) whose `execute(input, options, op)` is typed: `input` from
 * `inputSchema`, `op` the protected write's (never undefined). Wrap it with {@link protectTools}
 * (once per run); used without it, the run rejects with a `ProtectedToolUsageError` before the tool
 * runs (it cannot be recorded), instead of the SDK telling only the model.
 */
export function protectedTool<INPUT, OUTPUT>(definition: ProtectedToolDefinition<INPUT, OUTPUT>): Tool<INPUT, OUTPUT> {
  if (!definition || typeof definition.execute !== 'function') throw new TypeError('protectedTool({ inputSchema, execute }): execute is required');
  const notWrapped = () =>
    new ProtectedToolUsageError(
      'a protectedTool(...) of outcomes-ledger/ai-sdk was called without protectTools(ledger, { sessionKey }, tools): ' +
        'nothing was recorded and the tool did not run; wrap the tools of each run with protectTools',
    );
  const tool = {
    ...definition,
    // generateText awaits this before executing and does not catch what it throws: the run rejects.
    onInputAvailable: () => {
      throw notWrapped();
    },
    execute: () => {
      throw notWrapped();
    },
  } as Record<string | symbol, unknown>;
  Object.defineProperty(tool, DEFINITION, { value: definition, enumerable: false });
  return tool as unknown as Tool<INPUT, OUTPUT>;
}

/**
 * Wrap one AI SDK tool so that each of its calls is a protected write named `name`.
 * A tool without `execute` (run on the client, or by the provider) is returned unchanged.
 */
export function protectTool<T extends ExecutableTool>(ledger: Ledger, turn: TurnOptions, name: string, tool: T): T {
  const logicalTurnId = turn.logicalTurnId ?? newTurnId();
  const definition = (tool as Record<symbol, unknown>)[DEFINITION] as ExecutableTool | undefined;
  const source = definition ?? tool;
  const { status, ...sdkTool } = source;
  const execute = source.execute;
  if (typeof execute !== 'function') return tool;
  if (status !== undefined && typeof status !== 'function') throw new TypeError(`protected tool ${name}: status is a function (a status check)`);
  if (status) ledger.statusChecks[name] ??= status;
  const wrapped = (input: unknown, options: { toolCallId: string }) => {
    if (!options || typeof options.toolCallId !== 'string' || options.toolCallId === '') {
      throw new ProtectedToolUsageError(`protected tool ${name}: the AI SDK gave no toolCallId, the mutation id`);
    }
    const mutationId = options.toolCallId;
    return ledger
      .protectedWrite(
        {
          sessionKey: turn.sessionKey,
          logicalTurnId,
          mutationId,
          tool: name,
          deadlineSecs: turn.deadlineSecs,
          status,
          statusDelayMs: turn.statusDelayMs,
          statusAttempts: turn.statusAttempts,
          statusTimeoutMs: turn.statusTimeoutMs,
        },
        async (op) => execute.call(source, input, options, op),
      )
      .catch((error: unknown) => {
        throw new ProtectedToolError({
          message: outcomeMessage(error, mutationId),
          cause: error,
          outcome: recordedOutcome(error)?.outcome ?? null,
          mutationId,
        });
      });
  };
  return { ...sdkTool, execute: wrapped } as T;
}

/** Wrap every tool of an AI SDK tools object (`{ name: tool(…) }`) for one run: one logical turn. */
export function protectTools<T extends Record<string, ExecutableTool>>(ledger: Ledger, turn: TurnOptions, tools: T): T {
  const logicalTurnId = turn.logicalTurnId ?? newTurnId();
  const out: Record<string, ExecutableTool> = {};
  for (const [name, tool] of Object.entries(tools)) {
    out[name] = protectTool(ledger, { ...turn, logicalTurnId }, name, tool);
  }
  return out as T;
}
