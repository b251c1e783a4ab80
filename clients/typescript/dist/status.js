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
/** The provider's own record of the operation (e.g. its object id): it took effect. */
export class Completed {
    kind = 'completed';
    reference;
    observedAt;
    constructor(args) {
        this.reference = args.reference;
        this.observedAt = args.observedAt;
    }
}
/**
 * The provider's explicit statement that it did not accept that key or reference (it refused it, or
 * says it never took it). A "not found" from a search is NOT this: it is {@link Inconclusive}.
 */
export class NotAccepted {
    kind = 'not_accepted';
    reference;
    observedAt;
    constructor(args) {
        this.reference = args.reference;
        this.observedAt = args.observedAt;
    }
}
/** The provider cannot tell (down, a 503, a search without the operation): the outcome stays unknown. */
export class Inconclusive {
    kind = 'inconclusive';
    why;
    observedAt;
    constructor(args) {
        this.why = args.why;
        this.observedAt = args.observedAt;
    }
}
/** `new Completed({ reference, observedAt? })`. */
export function completed(args) {
    return new Completed(args);
}
/** `new NotAccepted({ reference, observedAt? })`. */
export function notAccepted(args) {
    return new NotAccepted(args);
}
/** `new Inconclusive({ why, observedAt? })`. */
export function inconclusive(args) {
    return new Inconclusive(args);
}
