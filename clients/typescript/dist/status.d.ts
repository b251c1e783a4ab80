/**
 * Status checks (clients/typescript/README.md "Status checks"): a host function that asks the
 * provider "did operation K happen?" about one operation whose outcome is unknown, and answers with
 * the provider's own record: {@link Completed}, {@link NotAccepted} or {@link Inconclusive}.
 *
 * Evidence must be bound to the operation (its idempotency key, or the client's own reference at the
 * provider): an empty search, a list without it or an unqualified answer is not evidence, it is
 * `Inconclusive`. Only a conclusive answer changes the ledger (a reconciliation of the original
 * attempt); an inconclusive one, an error or an exception leaves the outcome unknown for a person.
 */
/** What a status check is told about the operation. */
export interface StatusCheckOp {
    readonly sessionKey: string;
    readonly logicalTurnId: string;
    readonly mutationId: string;
    /** The original attempt (the one a reconciliation is about). */
    readonly attemptId: string;
    readonly tool: string;
    /** `op.idempotencyKey` of the write: the key the provider was given. */
    readonly idempotencyKey: string;
    /** When the ledger recorded the write (RFC 3339), `null` when not known. */
    readonly recordedAt: string | null;
}
/**
 * A time the provider stated: an RFC 3339 string (with its offset, e.g. `2026-12-07T03:00:00Z`) or a
 * valid `Date`; omitted: the host's clock when the answer is read. Anything else (an invalid `Date`, a
 * number, another string) makes the answer invalid: an error, the outcome stays unknown.
 */
export type ObservedAt = string | Date;
/** The provider's own record of the operation (e.g. its object id): it took effect. */
export declare class Completed {
    readonly kind: "completed";
    readonly reference: string;
    readonly observedAt: ObservedAt | undefined;
    constructor(args: {
        reference: string;
        observedAt?: ObservedAt;
    });
}
/**
 * The provider's explicit statement that it did not accept that key or reference (it refused it, or
 * says it never took it). A "not found" from a search is NOT this: it is {@link Inconclusive}.
 */
export declare class NotAccepted {
    readonly kind: "not_accepted";
    readonly reference: string;
    readonly observedAt: ObservedAt | undefined;
    constructor(args: {
        reference: string;
        observedAt?: ObservedAt;
    });
}
/** The provider cannot tell (down, a 503, a search without the operation): the outcome stays unknown. */
export declare class Inconclusive {
    readonly kind: "inconclusive";
    readonly why: string;
    readonly observedAt: ObservedAt | undefined;
    constructor(args: {
        why: string;
        observedAt?: ObservedAt;
    });
}
/** `new Completed({ reference, observedAt? })`. */
export declare function completed(args: {
    reference: string;
    observedAt?: ObservedAt;
}): Completed;
/** `new NotAccepted({ reference, observedAt? })`. */
export declare function notAccepted(args: {
    reference: string;
    observedAt?: ObservedAt;
}): NotAccepted;
/** `new Inconclusive({ why, observedAt? })`. */
export declare function inconclusive(args: {
    why: string;
    observedAt?: ObservedAt;
}): Inconclusive;
/**
 * A status answer. Read by its `kind`, so a plain object `{ kind: 'completed', reference }` counts
 * too (e.g. from a checks module that imports another copy of this package).
 */
export type StatusAnswer = Completed | NotAccepted | Inconclusive;
/**
 * A status check: sync or async; a throw, an invalid answer, or no answer within `statusTimeoutMs`
 * (default 30 s) counts as an error of that try (the outcome stays unknown).
 */
export type StatusCheck = (op: StatusCheckOp) => StatusAnswer | Promise<StatusAnswer>;
/** What `ledger.recover()` did: counts, and one line per open unknown it looked at. */
export interface RecoverSummary {
    /** Reconciled `completed` on the provider's record. */
    completed: number;
    /** Reconciled `completed: false` (published `not_executed`) on the provider's statement. */
    notAccepted: number;
    /** Left unknown: the check could not tell. */
    inconclusive: number;
    /** Left unknown: the check threw, answered something else, or the ledger refused the reconciliation. */
    errors: number;
    /** Left unknown: no check for its tool. */
    skipped: number;
    /**
     * Left unknown, not looked at: the ledger could not be reached during the run, which stopped there
     * (only set on the summary of a rejected run: `error.summary`, see {@link Ledger.recover}).
     */
    notLookedAt?: number;
    /** `true` on the partial summary of a run the ledger's going away stopped (`error.summary`). */
    incomplete?: boolean;
    items: Array<{
        sessionKey: string;
        mutationId: string;
        tool: string;
        result: 'completed' | 'not_accepted' | 'inconclusive' | 'error' | 'skipped' | 'not_looked_at';
        detail?: string;
    }>;
}
