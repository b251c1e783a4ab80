import type { EntryState } from './types.js';

/**
 * Every failure of a ledger call (docs/api.md "Errors").
 *
 * - A JSON error from the server: `status` is the HTTP status, `code`, `message`, `field` and
 *   `current` are the body's `{"error": {"code", "message", "field"?, "current"?}}` (`current` is
 *   the entry's unchanged state on a 409 refusal, `null` otherwise; `field` names the request
 *   field at fault, `null` otherwise). A wrong host token is `status` 401, `code` `unauthorized`.
 * - An answer that is not the ledger's JSON (a proxy's HTML error page, a web server at the wrong
 *   address): `code` `unexpected_response`, `status` the HTTP status, `contentType` what came back.
 * - No answer at all after the retries (connection refused or reset, DNS, a request timeout):
 *   {@link LedgerConnectionError}, `code` `connection_failed`, `status` `null`.
 * - The block of a protected write returned but its settlement could not be recorded:
 *   `code` `settle_failed` (see {@link LedgerSettleError}).
 */
export class LedgerError extends Error {
  /** The JSON error's `code`, or one of this client's: `unexpected_response`, `connection_failed`, `settle_failed`. */
  readonly code: string;
  /** The HTTP status, `null` when no answer came. */
  readonly status: number | null;
  /** The request field at fault (`mutation_id`, `evidence.source`, `operations[1].attempt_id`…), else `null`. */
  readonly field: string | null;
  /** On a 409: the entry's unchanged state, else `null`. */
  readonly current: EntryState | null;
  /** The operation that failed (`approve`, `settle`, `batch`…). */
  readonly operation: string;
  /** `METHOD url` of the request. */
  readonly request: string;

  constructor(init: {
    message: string;
    code: string;
    status?: number | null;
    field?: string | null;
    current?: EntryState | null;
    operation: string;
    request: string;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'LedgerError';
    this.code = init.code;
    this.status = init.status ?? null;
    this.field = init.field ?? null;
    this.current = init.current ?? null;
    this.operation = init.operation;
    this.request = init.request;
  }
}

/** No answer from the ledger after every retry (`code` `connection_failed`, `status` `null`); `cause` is the last network error. */
export class LedgerConnectionError extends LedgerError {
  /** How many requests were sent. */
  readonly attempts: number;
  constructor(init: { message: string; operation: string; request: string; attempts: number; cause: unknown }) {
    super({ ...init, code: 'connection_failed', status: null });
    this.name = 'LedgerConnectionError';
    this.attempts = init.attempts;
  }
}

/**
 * The block of a protected write returned, but its settlement could not be recorded (the ledger
 * stayed down past the retries, or refused it). The entry stays `execution_started`, which the
 * ledger publishes as `outcome_unknown`: the side effect may well have happened, so do not run
 * it again; reconcile the entry (docs/api.md "Host write API", reconcile) with this `attemptId` once you know.
 * `result` is what the block returned; `cause` the settlement's own error.
 */
export class LedgerSettleError extends LedgerError {
  readonly result: unknown;
  readonly mutationId: string;
  readonly attemptId: string;
  readonly intendedStatus: string;
  constructor(init: {
    cause: LedgerError;
    result: unknown;
    mutationId: string;
    attemptId: string;
    intendedStatus: string;
  }) {
    super({
      message:
        `the block of mutation ${init.mutationId} (attempt ${init.attemptId}) returned, but its settlement ` +
        `(${init.intendedStatus}) could not be recorded: ${init.cause.message}. The entry stays in flight ` +
        `(published outcome_unknown); do not run it again, reconcile it with this attempt id`,
      code: 'settle_failed',
      status: init.cause.status,
      field: init.cause.field,
      current: init.cause.current,
      operation: init.cause.operation,
      request: init.cause.request,
      cause: init.cause,
    });
    this.name = 'LedgerSettleError';
    this.result = init.result;
    this.mutationId = init.mutationId;
    this.attemptId = init.attemptId;
    this.intendedStatus = init.intendedStatus;
  }
}

/**
 * Throw from a protected write's block when the tool was provably never called (the request was
 * never sent): the entry is cancelled before the router and published `not_executed`
 * (docs/api.md "Host write API", cancel before the router). `reason` `pre_dispatch_deadline` when a deadline
 * stopped it. The error is rethrown after the cancellation is recorded.
 */
export class NotDispatched extends Error {
  readonly reason: 'pre_dispatch_deadline' | null;
  constructor(message = 'the tool was not dispatched', options?: { reason?: 'pre_dispatch_deadline'; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NotDispatched';
    this.reason = options?.reason ?? null;
  }
}

/**
 * Throw from a protected write's block when the provider stated that the operation failed (an
 * authoritative refusal, not a lost answer): the entry settles `failed`. The error is rethrown
 * after the settlement is recorded. A timeout or a lost connection is NOT a provider failure:
 * let those errors through and the entry settles `outcome_unknown`.
 */
export class ProviderFailed extends Error {
  constructor(message = 'the provider reported that the operation failed', options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ProviderFailed';
  }
}

/**
 * What the AI SDK adapter throws to the SDK for a protected tool call that threw: its `message` is
 * the model-facing `outcomeMessage` (what the ledger recorded: an unknown outcome says not to call
 * the tool again and names the operation id), `cause` the tool's own error, `outcome` and
 * `mutationId` what was recorded.
 */
export class ProtectedToolError extends Error {
  readonly outcome: 'outcome_unknown' | 'failed' | 'not_executed' | 'not_called' | 'completed' | null;
  readonly mutationId: string;
  constructor(init: {
    message: string;
    cause: unknown;
    outcome: 'outcome_unknown' | 'failed' | 'not_executed' | 'not_called' | 'completed' | null;
    mutationId: string;
  }) {
    super(init.message, { cause: init.cause });
    this.name = 'ProtectedToolError';
    this.outcome = init.outcome;
    this.mutationId = init.mutationId;
  }
}

/**
 * A protected tool used in a way that cannot be recorded, a mistake in the host's code rather than
 * an outcome: an OpenAI Agents tool without a session key called outside `runTurn(...)`, an AI SDK
 * `protectedTool(...)` not wrapped by `protectTools(...)`, a framework that gave no tool call id.
 * Nothing was recorded and the tool did not run. The adapters let it end the run (the SDKs would
 * otherwise hand it to the model as a tool error, and the run would finish as if nothing were wrong).
 */
export class ProtectedToolUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtectedToolUsageError';
  }
}
