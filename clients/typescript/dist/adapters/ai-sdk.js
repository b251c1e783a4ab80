import { newTurnId, outcomeMessage, recordedOutcome } from '../client.js';
import { ProtectedToolError, ProtectedToolUsageError } from '../errors.js';
const DEFINITION = Symbol('outcomes-ledger.protectedTool');
/**
 * An AI SDK tool (what `tool()` makes) whose `execute(input, options, op)` is typed: `input` from
 * `inputSchema`, `op` the protected write's (never undefined). Wrap it with {@link protectTools}
 * (once per run); used without it, the run rejects with a `ProtectedToolUsageError` before the tool
 * runs (it cannot be recorded), instead of the SDK telling only the model.
 */
export function protectedTool(definition) {
    if (!definition || typeof definition.execute !== 'function')
        throw new TypeError('protectedTool({ inputSchema, execute }): execute is required');
    const notWrapped = () => new ProtectedToolUsageError('a protectedTool(...) of outcomes-ledger/ai-sdk was called without protectTools(ledger, { sessionKey }, tools): ' +
        'nothing was recorded and the tool did not run; wrap the tools of each run with protectTools');
    const tool = {
        ...definition,
        // generateText awaits this before executing and does not catch what it throws: the run rejects.
        onInputAvailable: () => {
            throw notWrapped();
        },
        execute: () => {
            throw notWrapped();
        },
    };
    Object.defineProperty(tool, DEFINITION, { value: definition, enumerable: false });
    return tool;
}
/**
 * Wrap one AI SDK tool so that each of its calls is a protected write named `name`.
 * A tool without `execute` (run on the client, or by the provider) is returned unchanged.
 */
export function protectTool(ledger, turn, name, tool) {
    const logicalTurnId = turn.logicalTurnId ?? newTurnId();
    const definition = tool[DEFINITION];
    const source = definition ?? tool;
    const { status, ...sdkTool } = source;
    const execute = source.execute;
    if (typeof execute !== 'function')
        return tool;
    if (status !== undefined && typeof status !== 'function')
        throw new TypeError(`protected tool ${name}: status is a function (a status check)`);
    if (status)
        ledger.statusChecks[name] ??= status;
    const wrapped = (input, options) => {
        if (!options || typeof options.toolCallId !== 'string' || options.toolCallId === '') {
            throw new ProtectedToolUsageError(`protected tool ${name}: the AI SDK gave no toolCallId, the mutation id`);
        }
        const mutationId = options.toolCallId;
        return ledger
            .protectedWrite({
            sessionKey: turn.sessionKey,
            logicalTurnId,
            mutationId,
            tool: name,
            deadlineSecs: turn.deadlineSecs,
            status,
            statusDelayMs: turn.statusDelayMs,
            statusAttempts: turn.statusAttempts,
            statusTimeoutMs: turn.statusTimeoutMs,
        }, async (op) => execute.call(source, input, options, op))
            .catch((error) => {
            throw new ProtectedToolError({
                message: outcomeMessage(error, mutationId),
                cause: error,
                outcome: recordedOutcome(error)?.outcome ?? null,
                mutationId,
            });
        });
    };
    return { ...sdkTool, execute: wrapped };
}
/** Wrap every tool of an AI SDK tools object (`{ name: tool(…) }`) for one run: one logical turn. */
export function protectTools(ledger, turn, tools) {
    const logicalTurnId = turn.logicalTurnId ?? newTurnId();
    const out = {};
    for (const [name, tool] of Object.entries(tools)) {
        out[name] = protectTool(ledger, { ...turn, logicalTurnId }, name, tool);
    }
    return out;
}
