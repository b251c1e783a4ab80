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
import { newTurnId, outcomeMessage } from '../client.js';
import { ProtectedToolUsageError } from '../errors.js';
const turnsByRun = new WeakMap();
const runTurns = new WeakMap();
/** The adapter's default `errorFunction`: what the ledger recorded for the call, in words for the model. */
export function toolErrorMessage(_runContext, error, details) {
    return outcomeMessage(error, details?.toolCall?.callId);
}
function resolve(what, name, value, runContext) {
    let resolved;
    try {
        resolved = typeof value === 'function' ? value(runContext) : value;
    }
    catch (cause) {
        throw Object.assign(new ProtectedToolUsageError(`protected tool ${name}: its ${what} function threw: ${cause instanceof Error ? cause.message : String(cause)}`), { cause });
    }
    if (typeof resolved !== 'string' || resolved === '') {
        throw new ProtectedToolUsageError(`protected tool ${name}: its ${what} is ${JSON.stringify(resolved) ?? String(resolved)}, not a non-empty string; nothing was recorded and the tool did not run`);
    }
    return resolved;
}
function turnOf(turn, name, runContext) {
    const enclosing = runContext ? runTurns.get(runContext) : undefined;
    if (turn.sessionKey === undefined && !enclosing) {
        throw new ProtectedToolUsageError(`protected tool ${name} was called outside runTurn(ledger, agent, input, { sessionKey }) and has no sessionKey of its own: ` +
            'nothing was recorded and the tool did not run. Run the agent with runTurn from outcomes-ledger/openai-agents ' +
            '(one agent run = one logical turn), or give protectedTool a sessionKey');
    }
    const sessionKey = turn.sessionKey !== undefined ? resolve('sessionKey', name, turn.sessionKey, runContext) : enclosing.sessionKey;
    if (turn.logicalTurnId !== undefined)
        return { sessionKey, logicalTurnId: resolve('logicalTurnId', name, turn.logicalTurnId, runContext) };
    if (enclosing)
        return { sessionKey, logicalTurnId: enclosing.logicalTurnId };
    if (!runContext)
        throw new ProtectedToolUsageError(`protected tool ${name}: no run context, so no agent run to name a logical turn after`);
    let id = turnsByRun.get(runContext);
    if (id === undefined) {
        id = newTurnId();
        turnsByRun.set(runContext, id);
    }
    return { sessionKey, logicalTurnId: id };
}
export function protectedTool(ledger, turnOrOptions, maybeOptions) {
    const [turn, options] = maybeOptions === undefined ? [{}, turnOrOptions] : [turnOrOptions, maybeOptions];
    if (!options || typeof options.execute !== 'function')
        throw new TypeError('protectedTool(ledger, [turn,] options): options.execute is required');
    const { status, ...sdkOptions } = options;
    const execute = options.execute;
    const name = options.name;
    if (status !== undefined && typeof status !== 'function')
        throw new TypeError(`protectedTool ${name}: status is a function (a status check)`);
    if (status)
        ledger.statusChecks[name] ??= status;
    const wrapped = async (input, runContext, details) => {
        const callId = details?.toolCall?.callId;
        if (typeof callId !== 'string' || callId === '') {
            throw new ProtectedToolUsageError(`protected tool ${name}: the SDK gave no tool call id, the mutation id`);
        }
        const { sessionKey, logicalTurnId } = turnOf(turn, name, runContext);
        return ledger.protectedWrite({
            sessionKey,
            logicalTurnId,
            mutationId: callId,
            tool: name,
            deadlineSecs: turn.deadlineSecs,
            status,
            statusDelayMs: turn.statusDelayMs,
            statusAttempts: turn.statusAttempts,
            statusTimeoutMs: turn.statusTimeoutMs,
        }, async (op) => execute(input, runContext, details, op));
    };
    const given = options.errorFunction === undefined ? toolErrorMessage : options.errorFunction;
    // A usage error is the host's mistake, not the tool's outcome: it ends the run (the SDK rethrows
    // what an errorFunction throws) instead of becoming a message only the model reads.
    const errorFunction = given === null
        ? null
        : (runContext, error, details) => {
            if (error instanceof ProtectedToolUsageError)
                throw error;
            return given(runContext, error, details);
        };
    return tool({ ...sdkOptions, errorFunction, execute: wrapped });
}
/**
 * Run `agent` on `input` as one logical turn of session `sessionKey` (the SDK's `run()`, its other
 * options passed on; `context` is the run's context value): the protected tools without a session
 * of their own record their calls under it, and `logicalTurnId` (default a new `turn-` + 32 hex
 * digits id). Resolves to the SDK's result.
 */
export async function runTurn(ledger, agent, input, options) {
    void ledger;
    if (!options || typeof options.sessionKey !== 'string' || options.sessionKey === '') {
        throw new TypeError('runTurn(ledger, agent, input, { sessionKey }): sessionKey is required');
    }
    const { sessionKey, logicalTurnId, context, ...runOptions } = options;
    const runContext = context instanceof RunContext ? context : new RunContext(context);
    const id = logicalTurnId ?? newTurnId();
    runTurns.set(runContext, { sessionKey, logicalTurnId: id });
    turnsByRun.set(runContext, id);
    return run(agent, input, { ...runOptions, context: runContext });
}
/** The logical turn id the adapter uses for an agent run (its `RunContext`), if it has made one. */
export function logicalTurnOf(runContext) {
    return turnsByRun.get(runContext);
}
