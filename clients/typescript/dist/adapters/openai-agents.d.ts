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
import { run, RunContext } from '@openai/agents';
import type { Agent, FunctionTool, ToolExecuteArgument, ToolInputParameters } from '@openai/agents';
import type { Ledger, ProtectedWriteOp } from '../client.js';
import type { StatusCheck } from '../status.js';
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
export type ToolCallDetails = {
    toolCall?: {
        callId: string;
        name: string;
        arguments: string;
    };
    signal?: AbortSignal;
} & Record<string, unknown>;
/**
 * The SDK's `tool()` options, with `execute` receiving the protected write's `op` fourth (never
 * undefined) and its `input` typed from `parameters` (a zod object: its output type).
 */
export type ProtectedToolOptions<TParameters extends ToolInputParameters = any, Context = any> = {
    name: string;
    description: string;
    parameters: TParameters;
    execute: (input: ToolExecuteArgument<TParameters>, runContext: RunContext<Context> | undefined, details: ToolCallDetails | undefined, op: ProtectedWriteOp) => unknown;
    /**
     * The tool's status check (README "Status checks"): run when a call ends unknown; also registered
     * as `ledger.statusChecks[name]` (unless one is registered already) for `ledger.recover()`.
     */
    status?: StatusCheck;
    /** As the SDK's (default here {@link toolErrorMessage}); a `ProtectedToolUsageError` is rethrown before it is asked. `null`: every error ends the run. */
    errorFunction?: ((runContext: RunContext<Context>, error: unknown, details?: any) => unknown) | null;
    [option: string]: unknown;
};
/** The adapter's default `errorFunction`: what the ledger recorded for the call, in words for the model. */
export declare function toolErrorMessage(_runContext: unknown, error: unknown, details?: {
    toolCall?: {
        callId?: string;
    };
}): string;
/**
 * Build an `@openai/agents` function tool whose every call is a protected write:
 * `protectedTool(ledger, options)` (session and turn from the enclosing {@link runTurn}) or
 * `protectedTool(ledger, { sessionKey, logicalTurnId?, deadlineSecs? }, options)`.
 */
export declare function protectedTool<TParameters extends ToolInputParameters, Context = any>(ledger: Ledger, options: ProtectedToolOptions<TParameters, Context>): FunctionTool<Context, TParameters, unknown>;
export declare function protectedTool<TParameters extends ToolInputParameters, Context = any>(ledger: Ledger, turn: AgentTurnOptions, options: ProtectedToolOptions<TParameters, Context>): FunctionTool<Context, TParameters, unknown>;
/**
 * Run `agent` on `input` as one logical turn of session `sessionKey` (the SDK's `run()`, its other
 * options passed on; `context` is the run's context value): the protected tools without a session
 * of their own record their calls under it, and `logicalTurnId` (default a new `turn-` + 32 hex
 * digits id). Resolves to the SDK's result.
 */
export declare function runTurn<TContext = undefined>(ledger: Ledger, agent: Agent<any, any>, input: Parameters<typeof run>[1], options: {
    sessionKey: string;
    logicalTurnId?: string;
    context?: TContext;
    [option: string]: unknown;
}): Promise<Awaited<ReturnType<typeof run>>>;
/** The logical turn id the adapter uses for an agent run (its `RunContext`), if it has made one. */
export declare function logicalTurnOf(runContext: object): string | undefined;
export {};
