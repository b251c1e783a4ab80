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
import { newId, outcomeMessage } from '../client.js';
const turnsByRun = new WeakMap();
/** The adapter's default `errorFunction`: what the ledger recorded for the call, in words for the model. */
export function toolErrorMessage(_runContext, error, details) {
    return outcomeMessage(error, details?.toolCall?.callId);
}
function resolve(value, runContext) {
    return typeof value === 'function' ? value(runContext) : value;
}
function turnOf(turn, runContext) {
    if (turn.logicalTurnId !== undefined)
        return resolve(turn.logicalTurnId, runContext);
    if (!runContext)
        throw new TypeError('protected tool: no run context, so no agent run to name a logical turn after');
    let id = turnsByRun.get(runContext);
    if (id === undefined) {
        id = newId();
        turnsByRun.set(runContext, id);
    }
    return id;
}
/** Build an `@openai/agents` function tool whose every call is a protected write. */
export function protectedTool(ledger, turn, options) {
    const execute = options.execute;
    const name = options.name;
    const wrapped = async (input, runContext, details) => {
        const callId = details?.toolCall?.callId;
        if (typeof callId !== 'string' || callId === '') {
            throw new TypeError(`protected tool ${name}: the SDK gave no tool call id, the mutation id`);
        }
        return ledger.protectedWrite({
            sessionKey: resolve(turn.sessionKey, runContext),
            logicalTurnId: turnOf(turn, runContext),
            mutationId: callId,
            tool: name,
            deadlineSecs: turn.deadlineSecs,
        }, async (op) => execute(input, runContext, details, op));
    };
    const errorFunction = options.errorFunction === undefined ? toolErrorMessage : options.errorFunction;
    return tool({ ...options, errorFunction, execute: wrapped });
}
/** The logical turn id the adapter uses for an agent run (its `RunContext`), if it has made one. */
export function logicalTurnOf(runContext) {
    return turnsByRun.get(runContext);
}
