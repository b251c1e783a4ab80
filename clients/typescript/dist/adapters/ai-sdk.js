import { newId, outcomeMessage, recordedOutcome } from '../client.js';
import { ProtectedToolError } from '../errors.js';
/**
 * Wrap one AI SDK tool so that each of its calls is a protected write named `name`.
 * A tool without `execute` (run on the client, or by the provider) is returned unchanged.
 */
export function protectTool(ledger, turn, name, tool) {
    const logicalTurnId = turn.logicalTurnId ?? newId();
    const execute = tool.execute;
    if (typeof execute !== 'function')
        return tool;
    const wrapped = (input, options) => {
        if (!options || typeof options.toolCallId !== 'string' || options.toolCallId === '') {
            throw new TypeError(`protected tool ${name}: the AI SDK gave no toolCallId, the mutation id`);
        }
        const mutationId = options.toolCallId;
        return ledger
            .protectedWrite({ sessionKey: turn.sessionKey, logicalTurnId, mutationId, tool: name, deadlineSecs: turn.deadlineSecs }, async (op) => execute.call(tool, input, options, op))
            .catch((error) => {
            throw new ProtectedToolError({
                message: outcomeMessage(error, mutationId),
                cause: error,
                outcome: recordedOutcome(error)?.outcome ?? null,
                mutationId,
            });
        });
    };
    return { ...tool, execute: wrapped };
}
/** Wrap every tool of an AI SDK tools object (`{ name: tool(…) }`) for one run: one logical turn. */
export function protectTools(ledger, turn, tools) {
    const logicalTurnId = turn.logicalTurnId ?? newId();
    const out = {};
    for (const [name, tool] of Object.entries(tools)) {
        out[name] = protectTool(ledger, { sessionKey: turn.sessionKey, logicalTurnId, deadlineSecs: turn.deadlineSecs }, name, tool);
    }
    return out;
}
