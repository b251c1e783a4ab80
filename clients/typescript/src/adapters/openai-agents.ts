/**
 * OpenAI Agents SDK for JS (`@openai/agents`) adapter: function tools whose calls are protected writes.
 *
 * `protectedTool(ledger, turn, options)` takes the options of the SDK's `tool()` and builds the
 * tool with `tool()`, its `execute` wrapped: each call is one protected write (see
 * `Ledger.protectedWrite`) whose `mutation_id` is the SDK's tool call id
 * (`details.toolCall.callId`), whose `tool` is the tool's name, and whose logical turn is the
 * agent run: by default one new turn id (`turn-` + 32 hex digits) per run (per `RunContext`), or `turn.logicalTurnId` (a
 * string, or a function of the run context). The original `execute(input, runContext, details)`
 * gets a fourth argument, the protected write's `op`. A tool that throws settles by the protected
 * write's rules; the error then reaches the SDK unchanged. The SDK's own default tells the model
 * "Please try again", which for an unknown outcome invites a second write of what may have
 * happened; so this adapter's default `errorFunction` is {@link toolErrorMessage}: the model is told
 * what the ledger recorded (unknown: do not call again, quote the operation id; not executed;
 * failed; not called because the ledger could not record it). Pass `errorFunction` to replace it,
 * or `null` to let the error end the run.
 *
 * ```js
 * const createIssue = protectedTool(ledger, { sessionKey: 'chat-42' }, { name: 'create_issue', description, parameters, execute });
 * await run(new Agent({ name: 'triage', model, tools: [createIssue] }), 'File the bug');
 * ```
 */
import { tool, run, RunContext } from '@openai/agents';
import type { Agent, FunctionTool, ToolExecuteArgument, ToolInputParameters } from '@openai/agents';
import type { Ledger, ProtectedWriteOp } from '../client.js';
import type { StatusCheck } from '../status.js';
import { newTurnId, outcomeMessage } from '../client.js';
import { ProtectedToolUsageError } from '../errors.js';

type ContextValue = string | ((runContext: RunContext<any> | undefined) => string);

/** Where an agent run's tool calls are recorded. */
export interface AgentTurnOptions {
  /**
   * The session key, or a function of the run context. Default: the session of the enclosing
   * {@link runTurn}; a call outside one ends the run with a `ProtectedToolUsageError`.
   */
  sessionKey?: ContextValue;
  /** The logical turn; default the enclosing `runTurn`'s, else one new turn id (`turn-` + 32 hex digits) per agent run (per `RunContext`). */
  logicalTurnId?: ContextValue;
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

/** What the SDK passes a tool's `execute` third: the call (`toolCall.callId`), its abort signal. */
export type ToolCallDetails = { toolCall?: { callId: string; name: string; arguments: string }; signal?: AbortSignal } & Record<string, unknown>;

/**
 * The SDK's `tool()` options, with `execute` receiving the protected write's `op` fourth (never
 * undefined) and its `input` typed from `parameters` (a zod object: its output type).
 */
export type ProtectedToolOptions<TParameters extends ToolInputParameters = any, Context = any> = {
  name: string;
  description: string;
  parameters: TParameters;
  execute: (
    input: ToolExecuteArgument<TParameters>,
    runContext: RunContext<Context> | undefined,
    details: ToolCallDetails | undefined,
    op: ProtectedWriteOp,
  ) => unknown;
  /**
   * The tool's status check (README "Status checks"): run when a call ends unknown; also registered
   * as `ledger.statusChecks[name]` (unless one is registered already) for `ledger.recover()`.
   */
  status?: StatusCheck;
  /** As the SDK's (default here {@link toolErrorMessage}); a `ProtectedToolUsageError` is rethrown before it is asked. `null`: every error ends the run. */
  errorFunction?: ((runContext: RunContext<Context>, error: unknown, details?: any) => unknown) | null;
  [option: string]: unknown;
};

const turnsByRun = new WeakMap<object, string>();
const runTurns = new WeakMap<object, { sessionKey: string; logicalTurnId: string }>();

/** The adapter's default `errorFunction`: what the ledger recorded for the call, in words for the model. */
export function toolErrorMessage(_runContext: unknown, error: unknown, details?: { toolCall?: { callId?: string } }): string {
  return outcomeMessage(error, details?.toolCall?.callId);
}

function resolve(what: string, name: string, value: ContextValue, runContext: RunContext<any> | undefined): string {
  let resolved: unknown;
  try {
    resolved = typeof value === 'function' ? value(runContext) : value;
  } catch (cause) {
    throw Object.assign(new ProtectedToolUsageError(`protected tool ${name}: its ${what} function threw: ${cause instanceof Error ? cause.message : String(cause)}`), { cause });
  }
  if (typeof resolved !== 'string' || resolved === '') {
    throw new ProtectedToolUsageError(`protected tool ${name}: its ${what} is ${JSON.stringify(resolved) ?? String(resolved)}, not a non-empty string; nothing was recorded and the tool did not run`);
  }
  return resolved;
}

function turnOf(turn: AgentTurnOptions, name: string, runContext: RunContext<any> | undefined): { sessionKey: string; logicalTurnId: string } {
  const enclosing = runContext ? runTurns.get(runContext) : undefined;
  if (turn.sessionKey === undefined && !enclosing) {
    throw new ProtectedToolUsageError(
      `protected tool ${name} was called outside runTurn(ledger, agent, input, { sessionKey }) and has no sessionKey of its own: ` +
        'nothing was recorded and the tool did not run. Run the agent with runTurn from outcomes-ledger/openai-agents ' +
        '(one agent run = one logical turn), or give protectedTool a sessionKey',
    );
  }
  const sessionKey = turn.sessionKey !== undefined ? resolve('sessionKey', name, turn.sessionKey, runContext) : enclosing!.sessionKey;
  if (turn.logicalTurnId !== undefined) return { sessionKey, logicalTurnId: resolve('logicalTurnId', name, turn.logicalTurnId, runContext) };
  if (enclosing) return { sessionKey, logicalTurnId: enclosing.logicalTurnId };
  if (!runContext) throw new ProtectedToolUsageError(`protected tool ${name}: no run context, so no agent run to name a logical turn after`);
  let id = turnsByRun.get(runContext);
  if (id === undefined) {
    id = newTurnId();
    turnsByRun.set(runContext, id);
  }
  return { sessionKey, logicalTurnId: id };
}

/**
 * Build an `@openai/agents` function tool whose every call is a protected write:
 * `protectedTool(ledger, options)` (session and turn from the enclosing {@link runTurn}) or
 * `protectedTool(ledger, { sessionKey, logicalTurnId?, deadlineSecs? }, options)`.
 */
export function protectedTool<TParameters extends ToolInputParameters, Context = any>(
  ledger: Ledger,
  options: ProtectedToolOptions<TParameters, Context>,
): FunctionTool<Context, TParameters, unknown>;
export function protectedTool<TParameters extends ToolInputParameters, Context = any>(
  ledger: Ledger,
  turn: AgentTurnOptions,
  options: ProtectedToolOptions<TParameters, Context>,
): FunctionTool<Context, TParameters, unknown>;
export function protectedTool(ledger: Ledger, turnOrOptions: AgentTurnOptions | ProtectedToolOptions, maybeOptions?: ProtectedToolOptions): FunctionTool<any, any, unknown> {
  const [turn, options] =
    maybeOptions === undefined ? [{} as AgentTurnOptions, turnOrOptions as ProtectedToolOptions] : [turnOrOptions as AgentTurnOptions, maybeOptions];
  if (!options || typeof options.execute !== 'function') throw new TypeError('protectedTool(ledger, [turn,] options): options.execute is required');
  const { status, ...sdkOptions } = options;
  const execute = options.execute;
  const name = options.name;
  if (status !== undefined && typeof status !== 'function') throw new TypeError(`protectedTool ${name}: status is a function (a status check)`);
  if (status) ledger.statusChecks[name] ??= status;
  const wrapped = async (input: unknown, runContext?: RunContext<any>, details?: ToolCallDetails) => {
    const callId = details?.toolCall?.callId;
    if (typeof callId !== 'string' || callId === '') {
      throw new ProtectedToolUsageError(`protected tool ${name}: the SDK gave no tool call id, the mutation id`);
    }
    const { sessionKey, logicalTurnId } = turnOf(turn, name, runContext);
    return ledger.protectedWrite(
      {
        sessionKey,
        logicalTurnId,
        mutationId: callId,
        tool: name,
        deadlineSecs: turn.deadlineSecs,
        status,
        statusDelayMs: turn.statusDelayMs,
        statusAttempts: turn.statusAttempts,
        statusTimeoutMs: turn.statusTimeoutMs,
      },
      async (op) => execute(input as never, runContext, details, op),
    );
  };
  const given = options.errorFunction === undefined ? toolErrorMessage : options.errorFunction;
  // A usage error is the host's mistake, not the tool's outcome: it ends the run (the SDK rethrows
  // what an errorFunction throws) instead of becoming a message only the model reads.
  const errorFunction =
    given === null
      ? null
      : (runContext: RunContext<any>, error: unknown, details?: unknown) => {
          if (error instanceof ProtectedToolUsageError) throw error;
          return given(runContext, error, details);
        };
  return tool({ ...sdkOptions, errorFunction, execute: wrapped } as any) as FunctionTool<any, any, unknown>;
}

/**
 * Run `agent` on `input` as one logical turn of session `sessionKey` (the SDK's `run()`, its other
 * options passed on; `context` is the run's context value): the protected tools without a session
 * of their own record their calls under it, and `logicalTurnId` (default a new `turn-` + 32 hex
 * digits id). Resolves to the SDK's result.
 */
export async function runTurn<TContext = undefined>(
  ledger: Ledger,
  agent: Agent<any, any>,
  input: Parameters<typeof run>[1],
  options: { sessionKey: string; logicalTurnId?: string; context?: TContext; [option: string]: unknown },
): Promise<Awaited<ReturnType<typeof run>>> {
  void ledger;
  if (!options || typeof options.sessionKey !== 'string' || options.sessionKey === '') {
    throw new TypeError('runTurn(ledger, agent, input, { sessionKey }): sessionKey is required');
  }
  const { sessionKey, logicalTurnId, context, ...runOptions } = options;
  const runContext = context instanceof RunContext ? context : new RunContext(context);
  const id = logicalTurnId ?? newTurnId();
  runTurns.set(runContext, { sessionKey, logicalTurnId: id });
  turnsByRun.set(runContext, id);
  return run(agent, input, { ...runOptions, context: runContext } as any) as Promise<Awaited<ReturnType<typeof run>>>;
}

/** The logical turn id the adapter uses for an agent run (its `RunContext`), if it has made one. */
export function logicalTurnOf(runContext: object): string | undefined {
  return turnsByRun.get(runContext);
}
