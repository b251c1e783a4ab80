/**
 * OpenAI Agents SDK for JS (`@openai/agents`) adapter: function tools whose calls are protected writes.
 *
 * `protectedTool(ledger, turn, options)` takes the options of the SDK's `tool()` and builds the
 * tool with `tool()`, its `execute` wrapped: each call is one protected write (see
 * `Ledger.protectedWrite`) whose `mutation_id` is the SDK's tool call id
 * (`details.toolCall.callId`), whose `tool` is the tool's name, and whose logical turn is the
 * agent run: by default one new UUID per run (per `RunContext`), or `turn.logicalTurnId` (a
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
import { tool } from '@openai/agents';
import type { RunContext } from '@openai/agents';
import type { Ledger, ProtectedWriteOp } from '../client.js';
type ContextValue = string | ((runContext: RunContext<any> | undefined) => string);
/** Where an agent run's tool calls are recorded. */
export interface AgentTurnOptions {
    /** The session key, or a function of the run context. */
    sessionKey: ContextValue;
    /** The logical turn; default one new UUID per agent run (per `RunContext`). */
    logicalTurnId?: ContextValue;
    /**
     * Each call's deadline, 1 to 604800 s (`ProtectedWriteOptions.deadlineSecs`, docs/api.md
     * "Deadlines"): default none sent (the server's, 900 s); extended every third of it while the
     * tool runs.
     */
    deadlineSecs?: number;
}
/** The SDK's `tool()` options, with `execute` receiving the protected write's `op` fourth. */
export type ProtectedToolOptions = {
    name: string;
    execute: (input: any, runContext?: RunContext<any>, details?: any, op?: ProtectedWriteOp) => unknown;
    [option: string]: any;
};
/** The adapter's default `errorFunction`: what the ledger recorded for the call, in words for the model. */
export declare function toolErrorMessage(_runContext: unknown, error: unknown, details?: {
    toolCall?: {
        callId?: string;
    };
}): string;
/** Build an `@openai/agents` function tool whose every call is a protected write. */
export declare function protectedTool(ledger: Ledger, turn: AgentTurnOptions, options: ProtectedToolOptions): ReturnType<typeof tool>;
/** The logical turn id the adapter uses for an agent run (its `RunContext`), if it has made one. */
export declare function logicalTurnOf(runContext: object): string | undefined;
export {};
