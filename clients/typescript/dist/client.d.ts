import type { RecoverSummary, StatusCheck } from './status.js';
import type { BatchItem, BatchResult, EntryState, Evidence, HostMetadata, MutationOutcome, ViewerLinkCreated, ViewerLinksRevoked } from './types.js';
/** How a call is retried: on 503 and 429 (honouring `Retry-After`) and on connection errors. */
export interface RetryOptions {
    /** Requests sent at most, the first included. Default 10. */
    maxAttempts?: number;
    /** Milliseconds a call may spend retrying, from its first request; a wait that would pass it is not taken. Default 30000. */
    maxTotalMs?: number;
    /** First backoff ceiling in milliseconds, doubled per try (full jitter: a random wait up to the ceiling). Default 100. */
    baseDelayMs?: number;
    /** Highest backoff ceiling in milliseconds. Default 2000. */
    maxDelayMs?: number;
}
/** Options of {@link Ledger}. */
export interface LedgerOptions {
    /** The server's origin, e.g. `http://127.0.0.1:3000` (the host API is under `/api/host`, docs/api.md). */
    baseUrl: string;
    /**
     * The host token (`--host-token` / `OUTCOMES_HOST_TOKEN`, else `<data dir>/host-token`), sent as
     * `Authorization: Bearer`. Required: `undefined` (e.g. an unset `process.env.OUTCOMES_HOST_TOKEN`,
     * which the type takes as it is) or an empty string is a `TypeError` naming where to find it.
     */
    token: string | undefined;
    /** Retries (see {@link RetryOptions}). */
    retry?: RetryOptions;
    /** Milliseconds one request may take before it counts as a connection failure (and is retried). Default 30000. */
    requestTimeoutMs?: number;
    /** The `fetch` to use; default the global one (Node 18+, browsers). */
    fetch?: typeof fetch;
    /**
     * Where the client reports what must never break a protected block: a deadline extension that
     * failed (docs/api.md "Deadlines"). Default `console` (`console.warn`).
     */
    logger?: {
        warn(message: string): void;
    };
    /**
     * Status checks by tool name (README "Status checks"), copied into {@link Ledger.statusChecks}: run
     * after a protected write of that tool ends unknown, and by {@link Ledger.recover}.
     */
    statusChecks?: Record<string, StatusCheck>;
    /**
     * Milliseconds between a write's unknown settlement and its status check's first try; doubled before
     * each further try. Finite, at least 0, at most 3 600 000 (1 hour), else a RangeError. Default 1000.
     */
    statusDelayMs?: number;
    /**
     * Tries of a status check after a write ends unknown (an inconclusive answer, a throw, an invalid
     * answer or a timeout is tried again). An integer of at least 1, else a RangeError. Default 3.
     */
    statusAttempts?: number;
    /**
     * How long one call of a status check may take, in milliseconds (after a write and in `recover()`):
     * a check that has not answered by then counts as an error of that try. Finite, more than 0, at most
     * 3 600 000 (1 hour), else a RangeError. Default 30 000.
     */
    statusTimeoutMs?: number;
    /**
     * Milliseconds the calls before a protected block (the ledger id, approve + intent) may take in
     * all, retries included; past it `protectedWrite` rejects with a `LedgerConnectionError` and the
     * block never runs. Default 5000.
     */
    connectBudgetMs?: number;
}
/** The server's default `--in-flight-deadline-secs` (docs/api.md "Deadlines"): the deadline of an intent sent without `deadlineSecs`, so the one a protected write extends when none was given. */
export declare const DEFAULT_DEADLINE_SECS = 900;
/** The longest deadline the ledger takes: 7 days (the shortest is 1 s). */
export declare const MAX_DEADLINE_SECS = 604800;
/** Identifies a protected write: one ledger entry `(sessionKey, mutationId)` of one logical turn. */
export interface ProtectedWriteOptions {
    sessionKey: string;
    logicalTurnId: string;
    /** The operation id, unique in the session (a framework's tool call id); default a new UUID. */
    mutationId?: string;
    /** The tool's name as the dashboard shows it, e.g. `mcp__dashboards__create`. */
    tool: string;
    /** Another mutation of the session this new work follows (e.g. after an unknown outcome). */
    commissionedAfter?: string;
    /**
     * Seconds the write may stay in flight before the ledger settles it `outcome_unknown`
     * (`execution_timeout`) itself, 1 to 604800 (docs/api.md "Deadlines"). Sent with the intent;
     * default none sent, i.e. the server's `--in-flight-deadline-secs` (900). While the block runs it
     * is extended every third of it (of 900 s when not given).
     */
    deadlineSecs?: number;
    /**
     * This write's status check (README "Status checks"); default `ledger.statusChecks[tool]`. Run
     * when the block ends unknown, after the `outcome_unknown` settlement and before `protectedWrite`
     * rejects.
     */
    status?: StatusCheck;
    /** Default the Ledger's `statusDelayMs` (1000). */
    statusDelayMs?: number;
    /** Default the Ledger's `statusAttempts` (3). */
    statusAttempts?: number;
    /** Default the Ledger's `statusTimeoutMs` (30 000). */
    statusTimeoutMs?: number;
}
/** What a protected write's block receives. */
export interface ProtectedWriteOp {
    readonly sessionKey: string;
    readonly logicalTurnId: string;
    readonly mutationId: string;
    /** The attempt id this client minted and recorded with the intent (a UUID). */
    readonly attemptId: string;
    readonly tool: string;
    /**
     * The W3C trace context current when the protected write began (OpenTelemetry active in the host),
     * sent with its approve so the ledger's span of the write is its child; else `undefined`.
     */
    readonly traceparent: string | undefined;
    /**
     * The operation's idempotency key for the provider (`ol_` + 32 base32 characters): stable for the
     * operation (the same from a restarted host, and for a fresh attempt after a confirmed
     * `not_executed`), distinct across ledgers. Give it to a provider that keeps idempotency keys, so
     * that a status check can ask it about this operation (README "Status checks").
     */
    readonly idempotencyKey: string;
    /** Settle `failed` when the block returns: the provider stated that the operation failed. */
    failed(): void;
    /** Cancel (published `not_executed`) when the block returns: the tool was provably never called. */
    notExecuted(options?: {
        reason?: 'pre_dispatch_deadline';
    }): void;
    /** Attach host metadata now (docs/api.md "Host write API", attach host metadata); resolves to the entry's state. */
    attach(metadata: HostMetadata): Promise<EntryState>;
}
/** A logical turn of a session, from {@link Ledger.turn}. */
export interface LedgerTurn {
    readonly sessionKey: string;
    readonly logicalTurnId: string;
    protectedWrite<T>(options: Omit<ProtectedWriteOptions, 'sessionKey' | 'logicalTurnId'>, block: (op: ProtectedWriteOp) => Promise<T> | T): Promise<T>;
}
/**
 * What the ledger holds for a protected write that ended in an error (see {@link recordedOutcome}):
 * `outcome_unknown` (also when the block returned or failed but its settlement could not be
 * recorded: the entry is then in flight, published `outcome_unknown`), `failed`, `not_executed`,
 * or `not_called` (the ledger could not record the intent, so the block never ran).
 */
export interface RecordedOutcome {
    /**
     * `completed`: the block ended unknown (its error is rethrown) but its status check found the
     * provider's record, and the ledger holds it completed; `not_executed` also after the provider
     * stated it did not accept the operation.
     */
    outcome: 'outcome_unknown' | 'failed' | 'not_executed' | 'not_called' | 'completed';
    mutationId: string;
}
/** What the ledger recorded for an error `protectedWrite` rejected with; `undefined` for any other value. */
export declare function recordedOutcome(error: unknown): RecordedOutcome | undefined;
/**
 * The message an agent framework should give the model for a protected tool call that threw: what
 * the ledger recorded, so that the model does not call again what may have happened (an unknown
 * outcome is not resent; new work is a new operation). `callId` names the operation when the error
 * carries no record.
 */
export declare function outcomeMessage(error: unknown, callId?: string): string;
/**
 * A client of the outcome ledger's host write API (docs/api.md "Host write API"), one method per
 * operation, each resolving to the entry's state (`EntryState`: `ledger_status`, `attempt_id`,
 * `revision`, …) and rejecting with a {@link LedgerError}.
 *
 * Retries: a 503 or 429 is retried after its `Retry-After` (seconds), a connection error after a
 * backoff with full jitter, within `retry.maxTotalMs`. A retry is safe because the ledger refuses
 * redelivery: a 409 whose `current` already shows the requested change (same `ledger_status`,
 * `attempt_id` and `reason`) means an earlier try landed, and resolves as success whatever its
 * code (a retried settle answers `not_in_flight`, a retried reconcile `already_settled`). Any other
 * 409 rejects, with `current`.
 */
export declare class Ledger {
    #private;
    readonly baseUrl: string;
    /**
     * Status checks by tool name (README "Status checks"): `ledger.statusChecks.pay = async (op) => …`.
     * A protected write's `status` option, and the adapters' `status` option, take precedence for their writes.
     */
    readonly statusChecks: Record<string, StatusCheck>;
    constructor(options: LedgerOptions);
    /** Approve a mutation: `POST /api/host/sessions/{session_key}/mutations` → `approved`, no intent (201). */
    approve(args: {
        sessionKey: string;
        logicalTurnId: string;
        mutationId: string;
        tool: string;
        commissionedAfter?: string;
        /**
         * The host's W3C trace context of the tool call (lowercase `00-<32 hex>-<16 hex>-<2 hex>`, else
         * 422 naming `traceparent`): the ledger's OpenTelemetry span of the write becomes its child
         * (docs/operations.md "OpenTelemetry").
         */
        traceparent?: string;
    }): Promise<EntryState>;
    /**
     * Record intent (the dispatcher captured the attempt): `approved` → `execution_started`, in flight
     * until settled or until its deadline (`deadlineSecs` from now, 1 to 604800; default the server's
     * `--in-flight-deadline-secs`, 900), when the ledger settles it `outcome_unknown` with
     * `execution_timeout` itself (docs/api.md "Deadlines").
     */
    intent(args: {
        sessionKey: string;
        mutationId: string;
        attemptId: string;
        deadlineSecs?: number;
    }): Promise<EntryState>;
    /**
     * Extend the deadline of the attempt in flight to now + `deadlineSecs` (1 to 604800), never
     * earlier than it was: `POST …/deadline`. Rejects with 409 unless `execution_started` under that
     * attempt (docs/api.md "Deadlines"). `protectedWrite` does this by itself.
     */
    extendDeadline(args: {
        sessionKey: string;
        mutationId: string;
        attemptId: string;
        deadlineSecs: number;
    }): Promise<EntryState>;
    /**
     * Settle the in-flight attempt: `completed`, `failed`, or `outcome_unknown` (with `reason`
     * `execution_timeout` only). A timeout is not a failure: settle it `outcome_unknown`.
     */
    settle(args: {
        sessionKey: string;
        mutationId: string;
        attemptId: string;
        status: 'completed' | 'failed' | 'outcome_unknown';
        reason?: 'execution_timeout';
    }): Promise<EntryState>;
    /** Cancel before the router (the tool was never called): published `not_executed`. */
    cancel(args: {
        sessionKey: string;
        mutationId: string;
        attemptId: string;
        reason?: 'pre_dispatch_deadline';
    }): Promise<EntryState>;
    /**
     * Reconcile the ORIGINAL attempt with authoritative evidence: `completed: true` → `completed`,
     * `false` → `not_executed`. Inconclusive provider statuses are refused (422): the outcome stays unknown.
     */
    reconcile(args: {
        sessionKey: string;
        mutationId: string;
        attemptId: string;
        completed: boolean;
        evidence: Evidence;
    }): Promise<EntryState>;
    /** Attach host metadata (all three at once; missing or empty → `null`; identical → no change). */
    attachMetadata(args: {
        sessionKey: string;
        mutationId: string;
    } & HostMetadata): Promise<EntryState>;
    /** A fresh attempt of a `not_executed` entry (never after an unknown outcome; never a used attempt id), with a deadline as `intent`'s. */
    freshAttempt(args: {
        sessionKey: string;
        mutationId: string;
        attemptId: string;
        deadlineSecs?: number;
    }): Promise<EntryState>;
    /**
     * Delete a session and everything in it (204). A retry after a lost answer that finds the
     * session gone (404 `session_not_found`) resolves too.
     */
    deleteSession(args: {
        sessionKey: string;
    }): Promise<void>;
    /**
     * Apply up to 1000 operations in one transaction (docs/api.md "Batch"): `[{op, session_key, …}]`
     * with `op` one of `approve`, `intent`, `settle`, `cancel`, `reconcile`, `metadata`, `attempt`, `deadline`.
     * Resolves to one result per operation, `{status, entry?, error?}`, as the server answered them:
     * an invalid or refused operation does not reject the call, read each result's `status`.
     */
    batch(operations: BatchItem[]): Promise<BatchResult[]>;
    /**
     * Mint a viewer link to one session (201): `{url: "/v/<token>", expires_at}`, plus `href`, the
     * link made absolute on `baseUrl`. `expiresInSecs` defaults to 7 days, at most 366 days.
     */
    mintViewerLink(args: {
        sessionKey: string;
        expiresInSecs?: number;
    }): Promise<ViewerLinkCreated & {
        href: string;
    }>;
    /** Revoke every viewer link of a session: `{revoked: n}`. */
    revokeViewerLinks(args: {
        sessionKey: string;
    }): Promise<ViewerLinksRevoked>;
    /** The session's published outcomes, oldest logical turn first (`GET /api/mutation-outcomes?session_id=`). */
    mutationOutcomes(args: {
        sessionKey: string;
    }): Promise<MutationOutcome[]>;
    /**
     * The ledger's id (`GET /api/host/ledger`, 32 lowercase hex digits), read once per `Ledger` (on
     * first need: before the first protected write's intent) and cached; a failed read is tried again
     * next time. Idempotency keys are derived from it.
     */
    ledgerId(): Promise<string>;
    /** The idempotency key of operation `(sessionKey, mutationId)` in this ledger (`op.idempotencyKey`). */
    idempotencyKey(args: {
        sessionKey: string;
        mutationId: string;
    }): Promise<string>;
    /**
     * One logical turn of a session (an agent run): `turn.protectedWrite({ mutationId?, tool }, block)`
     * is `ledger.protectedWrite` with this turn's `sessionKey` and `logicalTurnId` (a new `turn-` + 32 hex
     * digits when not given). Nothing is recorded until a write.
     */
    turn(args: {
        sessionKey: string;
        logicalTurnId?: string;
    }): LedgerTurn;
    /**
     * Run `block` as one protected write.
     *
     * Before the block: approve + intent in one batch (one round trip, a fresh attempt id). If the
     * ledger cannot record the intent (down past the retries, a refusal, a bad id), this rejects with
     * a {@link LedgerError} and the block never runs.
     *
     * After the block:
     * - it returned → settle `completed`, or `failed` if it called `op.failed()`, or cancel
     *   (`not_executed`) if it called `op.notExecuted()`; resolves to the block's value. If that
     *   settlement cannot be recorded, rejects with a {@link LedgerSettleError} (the entry stays
     *   `outcome_unknown`; it carries the block's `result`).
     * - it threw → {@link NotDispatched}: cancel (`not_executed`, its `reason`); {@link ProviderFailed}:
     *   settle `failed`; an error named `TimeoutError` (also `AbortSignal.timeout()`'s DOMException):
     *   `outcome_unknown` with `execution_timeout`; anything else: `outcome_unknown`. The block's
     *   error is then rethrown unchanged (also when its settlement could not be recorded: the entry
     *   then stays in flight, which publishes `outcome_unknown`).
     *
     * Deadline (docs/api.md "Deadlines"): `options.deadlineSecs` (1 to 604800, else a `RangeError`
     * before anything is sent) goes with the intent; without it none is sent and the server's default
     * (900 s) applies. While the block runs, a timer extends the deadline every third of it
     * (`deadlineSecs`, else 900 s), one try each of at most that third (a failed one is tried again
     * after a ninth), and stops when the block ends, before the settlement is sent. A failed
     * extension never reaches the block: it is logged (`options.logger`); a refused one (409: no
     * longer in flight, e.g. the ledger settled it at its deadline) is not tried again. If this
     * process dies, nothing extends it and past the deadline the ledger settles the write
     * `outcome_unknown` itself; a settlement sent after that is still taken once, as the original report.
     */
    protectedWrite<T>(options: ProtectedWriteOptions, block: (op: ProtectedWriteOp) => Promise<T> | T): Promise<T>;
    /**
     * Runs the status checks over the open unknowns of `sessions` (a list of session keys, or `'all'`
     * for every session): each settled `outcome_unknown` (`GET /api/unknowns?state=unknown`, the ones
     * the ledger settled at a deadline included; never a write in flight, which another process may
     * still be running) whose tool has a check in `checks` (default {@link Ledger.statusChecks}). A
     * conclusive answer reconciles the original attempt with evidence `{source: "status:<tool>",
     * reference, observed_at, provider_status}`; an inconclusive one, an error or a throw leaves it
     * unknown. Idempotent: running it again, or twice at once, changes nothing more. Rejects only
     * when the ledger cannot be read.
     */
    recover(args: {
        sessions: string[] | 'all';
        checks?: Record<string, StatusCheck>;
    }): Promise<RecoverSummary>;
}
/**
 * A new logical turn id: `turn-` + 32 lowercase hex digits (a random UUID v4 without its dashes), the
 * one format of both clients (Python's `turn-{uuid4().hex}`).
 */
export declare function newTurnId(): string;
/** A new UUID (v4) for mutation and attempt ids. */
export declare function newId(): string;
