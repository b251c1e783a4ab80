import { LedgerConnectionError, LedgerError, LedgerSettleError, NotDispatched, ProviderFailed } from './errors.js';
import { idempotencyKey } from './idempotency.js';
import { currentTraceparent } from './trace.js';
import type { RecoverSummary, StatusAnswer, StatusCheck, StatusCheckOp } from './status.js';
import type {
  BatchItem,
  BatchResult,
  EntryState,
  Evidence,
  HostMetadata,
  LedgerStatus,
  MutationOutcome,
  Reason,
  ViewerLinkCreated,
  ViewerLinksRevoked,
} from './types.js';

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
  logger?: { warn(message: string): void };
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
export const DEFAULT_DEADLINE_SECS = 900;
/** The longest deadline the ledger takes: 7 days (the shortest is 1 s). */
export const MAX_DEADLINE_SECS = 604_800;

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
  notExecuted(options?: { reason?: 'pre_dispatch_deadline' }): void;
  /** Attach host metadata now (docs/api.md "Host write API", attach host metadata); resolves to the entry's state. */
  attach(metadata: HostMetadata): Promise<EntryState>;
}

/** A logical turn of a session, from {@link Ledger.turn}. */
export interface LedgerTurn {
  readonly sessionKey: string;
  readonly logicalTurnId: string;
  protectedWrite<T>(
    options: Omit<ProtectedWriteOptions, 'sessionKey' | 'logicalTurnId'>,
    block: (op: ProtectedWriteOp) => Promise<T> | T,
  ): Promise<T>;
}

interface Expectation {
  ledger_status: LedgerStatus;
  attempt_id: string | null;
  reason: Reason | null;
  logical_turn_id?: string;
}

interface Sent {
  status: number;
  body: unknown;
}

const RETRYABLE = new Set([429, 503]);
/** What a last try is given at least (100 ms): a backoff wait is cut to leave it, and a try that would start with less is not made. */
const LAST_TRY_MS = 100;

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

const recorded = new WeakMap<object, RecordedOutcome>();

function mark(error: unknown, outcome: RecordedOutcome): void {
  if ((typeof error === 'object' && error !== null) || typeof error === 'function') recorded.set(error as object, outcome);
}

/** What the ledger recorded for an error `protectedWrite` rejected with; `undefined` for any other value. */
export function recordedOutcome(error: unknown): RecordedOutcome | undefined {
  return (typeof error === 'object' && error !== null) || typeof error === 'function' ? recorded.get(error as object) : undefined;
}

/**
 * The message an agent framework should give the model for a protected tool call that threw: what
 * the ledger recorded, so that the model does not call again what may have happened (an unknown
 * outcome is not resent; new work is a new operation). `callId` names the operation when the error
 * carries no record.
 */
export function outcomeMessage(error: unknown, callId?: string): string {
  const record = recordedOutcome(error);
  const op = record?.mutationId ?? callId ?? '?';
  switch (record?.outcome) {
    case 'outcome_unknown':
      return (
        `The outcome of this tool call is unknown (operation id ${op}): it may or may not have taken effect. ` +
        'Do not call the tool again for this request; tell the user the result is being checked and give them the operation id.'
      );
    case 'completed':
      return (
        `The tool call took effect (operation id ${op}): its reply was lost, and the provider's own record confirms it. ` +
        'Do not call the tool again for this request.'
      );
    case 'not_executed':
      return `The tool call was not executed (operation id ${op}); nothing was done.`;
    case 'failed':
      return `The tool call failed (operation id ${op}): the provider refused it; nothing was done.`;
    case 'not_called':
      return `The tool was not called: the outcome ledger could not record the call (${errorName(error)}); nothing was done.`;
    default:
      return `The tool was not called: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function errorName(error: unknown): string {
  return error instanceof LedgerError ? `${error.name} ${error.code}` : error instanceof Error ? error.name : typeof error;
}

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
export class Ledger {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;
  readonly #retry: Required<RetryOptions>;
  readonly #requestTimeoutMs: number;
  readonly #logger: { warn(message: string): void };
  #ledgerId: Promise<string> | undefined;
  readonly #statusDelayMs: number;
  readonly #statusAttempts: number;
  readonly #statusTimeoutMs: number;
  readonly #connectBudgetMs: number;
  /**
   * Status checks by tool name (README "Status checks"): `ledger.statusChecks.pay = async (op) => …`.
   * A protected write's `status` option, and the adapters' `status` option, take precedence for their writes.
   */
  readonly statusChecks: Record<string, StatusCheck>;

  constructor(options: LedgerOptions) {
    if (!options || typeof options.baseUrl !== 'string' || options.baseUrl === '') {
      throw new TypeError('new Ledger({ baseUrl, token }): baseUrl is required, e.g. http://127.0.0.1:3000');
    }
    if (typeof options.token !== 'string' || options.token === '') {
      throw new TypeError(
        'new Ledger({ baseUrl, token }): token is required: the host token (OUTCOMES_HOST_TOKEN or <data dir>/host-token)',
      );
    }
    let parsed: URL;
    try {
      parsed = new URL(options.baseUrl);
    } catch {
      throw new TypeError(`new Ledger: baseUrl ${JSON.stringify(options.baseUrl)} is not an absolute URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new TypeError(`new Ledger: baseUrl must be http or https, not ${parsed.protocol}`);
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') {
      throw new TypeError('new Ledger: no global fetch (Node 18+ or a browser), pass options.fetch');
    }
    this.#fetch = fetchImpl.bind(globalThis);
    this.#retry = {
      maxAttempts: options.retry?.maxAttempts ?? 10,
      maxTotalMs: options.retry?.maxTotalMs ?? 30_000,
      baseDelayMs: options.retry?.baseDelayMs ?? 100,
      maxDelayMs: options.retry?.maxDelayMs ?? 2_000,
    };
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.#logger = options.logger ?? console;
    this.statusChecks = { ...(options.statusChecks ?? {}) };
    this.#statusDelayMs = statusDelayOption('new Ledger', 'statusDelayMs', options.statusDelayMs, 1000);
    this.#statusAttempts = statusAttemptsOption('new Ledger', options.statusAttempts, 3);
    this.#statusTimeoutMs = statusTimeoutOption('new Ledger', options.statusTimeoutMs, 30_000);
    this.#connectBudgetMs = nonNegative('connectBudgetMs', options.connectBudgetMs, 5000);
  }

  // ---- host operations (docs/api.md "Host write API") ----

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
  }): Promise<EntryState> {
    const body: Record<string, unknown> = {
      logical_turn_id: args.logicalTurnId,
      mutation_id: args.mutationId,
      tool: args.tool,
    };
    if (args.commissionedAfter !== undefined) body.commissioned_after = args.commissionedAfter;
    if (args.traceparent !== undefined) body.traceparent = args.traceparent;
    return this.#entry('approve', 'POST', `/api/host/sessions/${seg(args.sessionKey)}/mutations`, body, {
      ledger_status: 'approved',
      attempt_id: null,
      reason: null,
      logical_turn_id: args.logicalTurnId,
    });
  }

  /**
   * Record intent (the dispatcher captured the attempt): `approved` → `execution_started`, in flight
   * until settled or until its deadline (`deadlineSecs` from now, 1 to 604800; default the server's
   * `--in-flight-deadline-secs`, 900), when the ledger settles it `outcome_unknown` with
   * `execution_timeout` itself (docs/api.md "Deadlines").
   */
  intent(args: { sessionKey: string; mutationId: string; attemptId: string; deadlineSecs?: number }): Promise<EntryState> {
    return this.#entry('intent', 'POST', `${mutationPath(args)}/intent`, attemptBody(args), {
      ledger_status: 'execution_started',
      attempt_id: args.attemptId,
      reason: null,
    });
  }

  /**
   * Extend the deadline of the attempt in flight to now + `deadlineSecs` (1 to 604800), never
   * earlier than it was: `POST …/deadline`. Rejects with 409 unless `execution_started` under that
   * attempt (docs/api.md "Deadlines"). `protectedWrite` does this by itself.
   */
  extendDeadline(args: { sessionKey: string; mutationId: string; attemptId: string; deadlineSecs: number }): Promise<EntryState> {
    return this.#entry('extendDeadline', 'POST', `${mutationPath(args)}/deadline`, {
      attempt_id: args.attemptId,
      deadline_secs: args.deadlineSecs,
    });
  }

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
  }): Promise<EntryState> {
    const body: Record<string, unknown> = { attempt_id: args.attemptId, status: args.status };
    if (args.reason !== undefined) body.reason = args.reason;
    return this.#entry('settle', 'POST', `${mutationPath(args)}/settlement`, body, {
      ledger_status: args.status,
      attempt_id: args.attemptId,
      reason: args.reason ?? null,
    });
  }

  /** Cancel before the router (the tool was never called): published `not_executed`. */
  cancel(args: {
    sessionKey: string;
    mutationId: string;
    attemptId: string;
    reason?: 'pre_dispatch_deadline';
  }): Promise<EntryState> {
    const body: Record<string, unknown> = { attempt_id: args.attemptId };
    if (args.reason !== undefined) body.reason = args.reason;
    return this.#entry('cancel', 'POST', `${mutationPath(args)}/cancellation`, body, {
      ledger_status: 'approved',
      attempt_id: args.attemptId,
      reason: args.reason ?? null,
    });
  }

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
  }): Promise<EntryState> {
    const evidence: Record<string, unknown> = {
      source: args.evidence.source,
      reference: args.evidence.reference,
      observed_at:
        args.evidence.observedAt instanceof Date ? args.evidence.observedAt.toISOString() : args.evidence.observedAt,
    };
    if (args.evidence.providerStatus !== undefined) evidence.provider_status = args.evidence.providerStatus;
    return this.#entry(
      'reconcile',
      'POST',
      `${mutationPath(args)}/reconciliation`,
      { attempt_id: args.attemptId, completed: args.completed, evidence },
      { ledger_status: args.completed ? 'completed' : 'approved', attempt_id: args.attemptId, reason: null },
    );
  }

  /** Attach host metadata (all three at once; missing or empty → `null`; identical → no change). */
  attachMetadata(args: { sessionKey: string; mutationId: string } & HostMetadata): Promise<EntryState> {
    return this.#entry('attachMetadata', 'PUT', `${mutationPath(args)}/metadata`, {
      id: args.id ?? null,
      url: args.url ?? null,
      title: args.title ?? null,
    });
  }

  /** A fresh attempt of a `not_executed` entry (never after an unknown outcome; never a used attempt id), with a deadline as `intent`'s. */
  freshAttempt(args: { sessionKey: string; mutationId: string; attemptId: string; deadlineSecs?: number }): Promise<EntryState> {
    return this.#entry('freshAttempt', 'POST', `${mutationPath(args)}/attempts`, attemptBody(args), {
      ledger_status: 'execution_started',
      attempt_id: args.attemptId,
      reason: null,
    });
  }

  /**
   * Delete a session and everything in it (204). A retry after a lost answer that finds the
   * session gone (404 `session_not_found`) resolves too.
   */
  async deleteSession(args: { sessionKey: string }): Promise<void> {
    await this.#send('deleteSession', 'DELETE', `/api/host/sessions/${seg(args.sessionKey)}`, undefined, {
      goneIsDone: true,
    });
  }

  /**
   * Apply up to 1000 operations in one transaction (docs/api.md "Batch"): `[{op, session_key, …}]`
   * with `op` one of `approve`, `intent`, `settle`, `cancel`, `reconcile`, `metadata`, `attempt`, `deadline`.
   * Resolves to one result per operation, `{status, entry?, error?}`, as the server answered them:
   * an invalid or refused operation does not reject the call, read each result's `status`.
   */
  batch(operations: BatchItem[]): Promise<BatchResult[]> {
    return this.#batch(operations, undefined);
  }

  async #batch(operations: BatchItem[], deadline: number | undefined): Promise<BatchResult[]> {
    const sent = await this.#send('batch', 'POST', '/api/host/batch', { operations }, { deadline });
    const results = (sent.body as { results?: unknown })?.results;
    if (!Array.isArray(results) || results.length !== operations.length) {
      throw this.#unexpected('batch', 'POST', '/api/host/batch', sent.status, 'a batch answer without one result per operation');
    }
    return results as BatchResult[];
  }

  /**
   * Mint a viewer link to one session (201): `{url: "/v/<token>", expires_at}`, plus `href`, the
   * link made absolute on `baseUrl`. `expiresInSecs` defaults to 7 days, at most 366 days.
   */
  async mintViewerLink(args: { sessionKey: string; expiresInSecs?: number }): Promise<ViewerLinkCreated & { href: string }> {
    const body = args.expiresInSecs === undefined ? undefined : { expires_in_secs: args.expiresInSecs };
    const path = `/api/host/sessions/${seg(args.sessionKey)}/viewer-links`;
    const sent = await this.#send('mintViewerLink', 'POST', path, body);
    const link = sent.body as ViewerLinkCreated;
    if (!link || typeof link.url !== 'string' || typeof link.expires_at !== 'string') {
      throw this.#unexpected('mintViewerLink', 'POST', path, sent.status, 'a viewer link answer without url and expires_at');
    }
    return { ...link, href: new URL(link.url, this.baseUrl + '/').toString() };
  }

  /** Revoke every viewer link of a session: `{revoked: n}`. */
  async revokeViewerLinks(args: { sessionKey: string }): Promise<ViewerLinksRevoked> {
    const path = `/api/host/sessions/${seg(args.sessionKey)}/viewer-links`;
    const sent = await this.#send('revokeViewerLinks', 'DELETE', path, undefined);
    const body = sent.body as ViewerLinksRevoked;
    if (!body || typeof body.revoked !== 'number') {
      throw this.#unexpected('revokeViewerLinks', 'DELETE', path, sent.status, 'an answer without revoked');
    }
    return body;
  }

  /** The session's published outcomes, oldest logical turn first (`GET /api/mutation-outcomes?session_id=`). */
  async mutationOutcomes(args: { sessionKey: string }): Promise<MutationOutcome[]> {
    const path = `/api/mutation-outcomes?session_id=${encodeURIComponent(args.sessionKey)}`;
    const sent = await this.#send('mutationOutcomes', 'GET', path, undefined);
    const list = (sent.body as { mutation_outcomes?: unknown })?.mutation_outcomes;
    if (!Array.isArray(list)) {
      throw this.#unexpected('mutationOutcomes', 'GET', path, sent.status, 'an answer without mutation_outcomes');
    }
    return list as MutationOutcome[];
  }

  /**
   * The ledger's id (`GET /api/host/ledger`, 32 lowercase hex digits), read once per `Ledger` (on
   * first need: before the first protected write's intent) and cached; a failed read is tried again
   * next time. Idempotency keys are derived from it.
   */
  ledgerId(): Promise<string> {
    return this.#ledgerIdWithin(undefined);
  }

  #ledgerIdWithin(deadline: number | undefined): Promise<string> {
    this.#ledgerId ??= this.#readLedgerId(deadline).catch((error: unknown) => {
      this.#ledgerId = undefined;
      throw error;
    });
    return this.#ledgerId;
  }

  async #readLedgerId(deadline: number | undefined): Promise<string> {
    const path = '/api/host/ledger';
    const sent = await this.#send('ledgerId', 'GET', path, undefined, { deadline });
    const id = (sent.body as { ledger_id?: unknown } | undefined)?.ledger_id;
    if (typeof id !== 'string' || id === '') throw this.#unexpected('ledgerId', 'GET', path, sent.status, 'an answer without ledger_id');
    return id;
  }

  /** The idempotency key of operation `(sessionKey, mutationId)` in this ledger (`op.idempotencyKey`). */
  async idempotencyKey(args: { sessionKey: string; mutationId: string }): Promise<string> {
    return idempotencyKey(await this.ledgerId(), args.sessionKey, args.mutationId);
  }

  // ---- the protected write (its rules: clients/typescript/README.md "The protected write") ----

  /**
   * One logical turn of a session (an agent run): `turn.protectedWrite({ mutationId?, tool }, block)`
   * is `ledger.protectedWrite` with this turn's `sessionKey` and `logicalTurnId` (a new `turn-` + 32 hex
   * digits when not given). Nothing is recorded until a write.
   */
  turn(args: { sessionKey: string; logicalTurnId?: string }): LedgerTurn {
    const sessionKey = args.sessionKey;
    const logicalTurnId = args.logicalTurnId ?? newTurnId();
    return {
      sessionKey,
      logicalTurnId,
      protectedWrite: (options, block) => this.protectedWrite({ ...options, sessionKey, logicalTurnId }, block),
    };
  }

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
  async protectedWrite<T>(options: ProtectedWriteOptions, block: (op: ProtectedWriteOp) => Promise<T> | T): Promise<T> {
    if (typeof block !== 'function') throw new TypeError('protectedWrite(options, block): block must be a function');
    const sessionKey = options.sessionKey;
    const logicalTurnId = options.logicalTurnId;
    const mutationId = options.mutationId ?? newId();
    const tool = options.tool;
    const attemptId = newId();
    const deadlineSecs = checkDeadlineSecs(options.deadlineSecs);
    const statusDelayMs = statusDelayOption('protectedWrite', 'statusDelayMs', options.statusDelayMs, this.#statusDelayMs);
    const statusAttempts = statusAttemptsOption('protectedWrite', options.statusAttempts, this.#statusAttempts);
    const statusTimeoutMs = statusTimeoutOption('protectedWrite', options.statusTimeoutMs, this.#statusTimeoutMs);

    const approve: Record<string, unknown> = {
      op: 'approve',
      session_key: sessionKey,
      logical_turn_id: logicalTurnId,
      mutation_id: mutationId,
      tool,
    };
    if (options.commissionedAfter !== undefined) approve.commissioned_after = options.commissionedAfter;
    // The span current as the write begins (OpenTelemetry active in the host) is its trace parent.
    const traceparent = await currentTraceparent();
    if (traceparent !== undefined) approve.traceparent = traceparent;
    const intent: Record<string, unknown> = { op: 'intent', session_key: sessionKey, mutation_id: mutationId, attempt_id: attemptId };
    if (deadlineSecs !== undefined) intent.deadline_secs = deadlineSecs;
    let approved: BatchResult;
    let started: BatchResult;
    // The ledger's id (read once per Ledger) for op.idempotencyKey, alongside the batch: one round trip.
    // connectBudgetMs: the calls before the block, retries included, end by this time.
    const deadline = Date.now() + this.#connectBudgetMs;
    const keyed = this.#ledgerIdWithin(deadline)
      .then((ledgerId) => idempotencyKey(ledgerId, sessionKey, mutationId))
      .then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    try {
      [approved, started] = (await this.#batch([approve as BatchItem, intent as BatchItem], deadline)) as [BatchResult, BatchResult];
    } catch (error) {
      await keyed;
      mark(error, { outcome: 'not_called', mutationId });
      throw error;
    }
    const intentLanded =
      started.status === 200 ||
      (started.status === 409 &&
        matches(started.error?.current ?? null, {
          ledger_status: 'execution_started',
          attempt_id: attemptId,
          reason: null,
          logical_turn_id: logicalTurnId,
        }));
    if (!intentLanded) {
      const failed = approved.status === 201 || approved.status === 409 ? started : approved;
      const error = this.#batchItemError('protectedWrite', failed, approved === failed ? 'approve' : 'intent');
      mark(error, { outcome: 'not_called', mutationId });
      throw error;
    }
    const keyResult = await keyed;
    if (!keyResult.ok) {
      // The intent is recorded but the block cannot have its key: it never runs, so cancel (not_executed).
      let outcome: RecordedOutcome['outcome'] = 'outcome_unknown';
      try {
        await this.cancel({ sessionKey, mutationId, attemptId });
        outcome = 'not_executed';
      } catch {}
      mark(keyResult.error, { outcome, mutationId });
      throw keyResult.error;
    }
    const key = keyResult.value;

    let outcome = 'completed' as 'completed' | 'failed' | 'not_executed';
    let cancelReason = undefined as 'pre_dispatch_deadline' | undefined;
    const ledger = this;
    const op: ProtectedWriteOp = {
      sessionKey,
      logicalTurnId,
      mutationId,
      attemptId,
      tool,
      traceparent,
      idempotencyKey: key,
      failed() {
        outcome = 'failed';
      },
      notExecuted(opts) {
        outcome = 'not_executed';
        cancelReason = opts?.reason;
      },
      attach(metadata: HostMetadata) {
        return ledger.attachMetadata({ sessionKey, mutationId, ...metadata });
      },
    };
    const ids = { sessionKey, mutationId, attemptId };

    const extender = this.#extendWhileRunning(ids, deadlineSecs ?? DEFAULT_DEADLINE_SECS);
    let result: T;
    try {
      try {
        result = await block(op);
      } finally {
        extender.stop();
      }
    } catch (error) {
      let settled: RecordedOutcome['outcome'] = 'outcome_unknown';
      let unknownSettled = true;
      try {
        if (error instanceof NotDispatched) {
          await this.cancel({ ...ids, ...(error.reason ? { reason: error.reason } : {}) });
          settled = 'not_executed';
        } else if (error instanceof ProviderFailed) {
          await this.settle({ ...ids, status: 'failed' });
          settled = 'failed';
        } else if (isTimeout(error)) {
          await this.settle({ ...ids, status: 'outcome_unknown', reason: 'execution_timeout' });
        } else {
          await this.settle({ ...ids, status: 'outcome_unknown' });
        }
      } catch {
        // The entry stays execution_started, published outcome_unknown: honest whatever the
        // block's error said. The block's own error is what the caller must see. No status check:
        // a reconciliation needs the settled unknown (ledger.recover() runs it later).
        settled = 'outcome_unknown';
        unknownSettled = false;
      }
      const check = options.status ?? this.statusChecks[tool];
      if (settled === 'outcome_unknown' && unknownSettled && typeof check === 'function') {
        const result = await this.#checkAfterUnknown(
          { sessionKey, logicalTurnId, mutationId, attemptId, tool, idempotencyKey: key, recordedAt: null },
          check,
          statusDelayMs,
          statusAttempts,
          statusTimeoutMs,
        );
        if (result === 'completed') settled = 'completed';
        else if (result === 'not_accepted') settled = 'not_executed';
      }
      mark(error, { outcome: settled, mutationId });
      throw error;
    }

    try {
      if (outcome === 'not_executed') {
        await this.cancel({ ...ids, ...(cancelReason ? { reason: cancelReason } : {}) });
      } else {
        await this.settle({ ...ids, status: outcome });
      }
    } catch (error) {
      if (error instanceof LedgerError) {
        const settleError = new LedgerSettleError({ cause: error, result, mutationId, attemptId, intendedStatus: outcome });
        mark(settleError, { outcome: 'outcome_unknown', mutationId });
        throw settleError;
      }
      throw error;
    }
    return result;
  }

  /**
   * A write's status check after it ended unknown: tries after `delayMs`, `2 × delayMs`, … (at most
   * `attempts`), stopping at the first conclusive answer, which reconciles the original attempt.
   * Never throws: what it could not do is logged, and the outcome stays unknown.
   */
  async #checkAfterUnknown(op: StatusCheckOp, check: StatusCheck, delayMs: number, attempts: number, timeoutMs: number): Promise<string> {
    let last = 'inconclusive';
    for (let i = 0; i < attempts; i++) {
      // doubled before each further try, never past the longest delay a timer takes
      await sleep(Math.min(delayMs * 2 ** i, MAX_STATUS_MS));
      let result: CheckResult;
      try {
        result = await this.#checkOnce(op, check, timeoutMs);
      } catch (error) {
        // never the block's own error replaced by the check's trouble
        result = { result: 'error', detail: describe(error) };
      }
      if (result.result === 'completed' || result.result === 'not_accepted') return result.result;
      last = result.result;
      if (result.final) break;
      this.#logger.warn(
        `outcomes-ledger: the status check of ${op.tool} for operation ${JSON.stringify(op.mutationId)} ` +
          `(try ${i + 1} of ${attempts}) could not tell: ${result.detail ?? result.result}`,
      );
    }
    return last;
  }

  /**
   * Runs a status check once and reconciles a conclusive answer. `final`: do not try again (the
   * ledger refused the reconciliation: the entry is no longer this open unknown).
   */
  async #checkOnce(op: StatusCheckOp, check: StatusCheck, timeoutMs: number): Promise<CheckResult> {
    let answer: StatusAnswer;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = Symbol('timed out');
    try {
      // The timer is cleared as soon as the check answers: it holds the process only while waiting.
      const raced = await Promise.race([
        Promise.resolve().then(() => check(op)),
        new Promise<typeof timedOut>((resolve) => {
          timer = setTimeout(() => resolve(timedOut), timeoutMs);
        }),
      ]);
      if (raced === timedOut) {
        return { result: 'error', detail: `the check did not answer within ${timeoutMs} ms (statusTimeoutMs)` };
      }
      answer = raced as StatusAnswer;
    } catch (error) {
      return { result: 'error', detail: `the check threw: ${describe(error)}` };
    } finally {
      clearTimeout(timer);
    }
    const kind = (answer as { kind?: unknown } | null | undefined)?.kind;
    if (kind === 'inconclusive') return { result: 'inconclusive', detail: String((answer as { why?: unknown }).why ?? '') };
    if (kind !== 'completed' && kind !== 'not_accepted') {
      return { result: 'error', detail: 'the check answered neither Completed, NotAccepted nor Inconclusive' };
    }
    const { reference, observedAt } = answer as { reference?: unknown; observedAt?: unknown };
    if (typeof reference !== 'string' || reference === '') {
      return { result: 'error', detail: `a ${kind} answer without its reference (the provider's record of the operation)` };
    }
    const observed = observedAtOf(observedAt);
    if (observed === undefined) {
      return {
        result: 'error',
        detail: `a ${kind} answer whose observedAt is neither a valid Date nor an RFC 3339 string: ${describeValue(observedAt)}`,
      };
    }
    try {
      await this.reconcile({
        sessionKey: op.sessionKey,
        mutationId: op.mutationId,
        attemptId: op.attemptId,
        completed: kind === 'completed',
        evidence: { source: `status:${op.tool}`, reference, observedAt: observed, providerStatus: kind },
      });
    } catch (error) {
      const refused = error instanceof LedgerError && error.status !== null && error.status >= 400 && error.status < 500;
      this.#logger.warn(
        `outcomes-ledger: the status check of ${op.tool} answered ${kind} for operation ${JSON.stringify(op.mutationId)} ` +
          `but the ledger did not take the reconciliation: ${describe(error)}`,
      );
      return { result: 'error', detail: describe(error), final: refused, ...(error instanceof LedgerConnectionError ? { unreachable: error } : {}) };
    }
    return { result: kind };
  }

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
  async recover(args: { sessions: string[] | 'all'; checks?: Record<string, StatusCheck> }): Promise<RecoverSummary> {
    const sessions = args?.sessions;
    if (sessions !== 'all' && !(Array.isArray(sessions) && sessions.every((k) => typeof k === 'string' && k !== ''))) {
      throw new TypeError("recover({ sessions }): sessions is a list of session keys, or 'all' for every session");
    }
    const checks = args.checks ?? this.statusChecks;
    const summary: RecoverSummary = { completed: 0, notAccepted: 0, inconclusive: 0, errors: 0, skipped: 0, items: [] };
    const scopes: Array<string | null> = sessions === 'all' ? [null] : [...new Set(sessions)];
    try {
      for (const scope of scopes) {
        let after: string | null = null;
        do {
          const query = new URLSearchParams({ state: 'unknown', limit: '200' });
          if (scope !== null) query.set('session_key', scope);
          if (after !== null) query.set('after', after);
          const path = `/api/unknowns?${query}`;
          const sent = await this.#send('recover', 'GET', path, undefined);
          const page = sent.body as { matches?: unknown; next?: unknown };
          if (!page || !Array.isArray(page.matches)) throw this.#unexpected('recover', 'GET', path, sent.status, 'an answer without matches');
          const matches = page.matches as Array<{ session_key: string; entry: Record<string, any> }>;
          for (let i = 0; i < matches.length; i++) {
            const unreachable = await this.#recoverOne(matches[i]!, checks, summary);
            if (unreachable) {
              // The ledger cannot be reached (past the client's retries): stop the run here. The
              // rest of this page is not looked at (nor are further pages and sessions).
              for (const rest of matches.slice(i + 1)) {
                if (rest?.entry?.ledger_status !== 'outcome_unknown') continue;
                const outcome = rest.entry.outcome ?? {};
                summary.items.push({
                  sessionKey: rest.session_key,
                  mutationId: String(outcome.mutation_id),
                  tool: String(outcome.tool),
                  result: 'not_looked_at',
                  detail: 'the ledger could not be reached: the run stopped',
                });
                summary.notLookedAt = (summary.notLookedAt ?? 0) + 1;
              }
              throw unreachable;
            }
          }
          after = typeof page.next === 'string' ? page.next : null;
        } while (after !== null);
      }
    } catch (error) {
      if (error instanceof LedgerError) {
        summary.notLookedAt ??= 0;
        summary.incomplete = true;
        (error as LedgerError & { summary?: RecoverSummary }).summary = summary;
      }
      throw error;
    }
    return summary;
  }

  async #recoverOne(
    match: { session_key: string; entry: Record<string, any>; attempt_id?: string | null },
    checks: Record<string, StatusCheck>,
    summary: RecoverSummary,
  ): Promise<LedgerConnectionError | undefined> {
    const entry = match.entry;
    const sessionKey = match.session_key;
    const outcome = entry?.outcome ?? {};
    const mutationId = String(outcome.mutation_id);
    const tool = String(outcome.tool);
    // Only a settled unknown: a write in flight may still be running in another process.
    if (entry?.ledger_status !== 'outcome_unknown') return;
    const item = (result: RecoverSummary['items'][number]['result'], detail?: string, unreachable?: unknown) => {
      summary.items.push({ sessionKey, mutationId, tool, result, ...(detail ? { detail } : {}) });
      if (result === 'completed') summary.completed += 1;
      else if (result === 'not_accepted') summary.notAccepted += 1;
      else if (result === 'inconclusive') summary.inconclusive += 1;
      else if (result === 'error') summary.errors += 1;
      else summary.skipped += 1;
      return unreachable instanceof LedgerConnectionError ? unreachable : undefined;
    };
    const check = checks[tool];
    if (typeof check !== 'function') return item('skipped', `no status check for ${tool}`);
    // The queue's item names the entry's current attempt (docs/api.md "Support queue"); a server that
    // predates `attempt_id` there has its history read instead.
    let attemptId: string | undefined =
      typeof match.attempt_id === 'string' && match.attempt_id !== '' ? match.attempt_id : undefined;
    if (attemptId === undefined) {
      try {
        const path = `${historyPath(sessionKey, mutationId)}?order=newest&limit=50`;
        const sent = await this.#send('recover', 'GET', path, undefined);
        const changes = (sent.body as { changes?: Array<{ attempt_id?: string | null }> })?.changes ?? [];
        attemptId = changes.find((c) => typeof c.attempt_id === 'string' && c.attempt_id !== '')?.attempt_id ?? undefined;
      } catch (error) {
        return item('error', `its history could not be read: ${describe(error)}`, error);
      }
    }
    if (attemptId === undefined) return item('error', 'no attempt in its history');
    let key: string;
    try {
      key = await this.idempotencyKey({ sessionKey, mutationId });
    } catch (error) {
      return item('error', `its idempotency key could not be made (the ledger's id): ${describe(error)}`, error);
    }
    const op: StatusCheckOp = {
      sessionKey,
      logicalTurnId: String(outcome.logical_turn_id),
      mutationId,
      attemptId,
      tool,
      idempotencyKey: key,
      recordedAt: typeof entry.recorded_at === 'string' ? entry.recorded_at : null,
    };
    let result: CheckResult;
    try {
      result = await this.#checkOnce(op, check, this.#statusTimeoutMs);
    } catch (error) {
      result = { result: 'error', detail: describe(error) };
    }
    return item(result.result, result.detail, result.unreachable);
  }

  /**
   * Extends one protected write's deadline every third of it until `stop()`: one request each, of
   * at most that third; after a network error, a timeout or another non-4xx answer the next try is
   * after a ninth; after a 4xx (409: no longer in flight under this attempt) none follows. Each
   * failure is logged; nothing rejects. The timer is unref'd: it never keeps the process alive.
   */
  #extendWhileRunning(ids: { sessionKey: string; mutationId: string; attemptId: string }, deadlineSecs: number): { stop(): void } {
    const intervalMs = (deadlineSecs * 1000) / 3;
    const what = `operation ${JSON.stringify(ids.mutationId)} (attempt ${JSON.stringify(ids.attemptId)})`;
    const url = `${this.baseUrl}${mutationPath(ids)}/deadline`;
    const body = JSON.stringify({ attempt_id: ids.attemptId, deadline_secs: deadlineSecs });
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const schedule = (ms: number) => {
      if (stopped) return;
      timer = setTimeout(tick, ms);
      (timer as { unref?: () => void }).unref?.();
    };
    const tick = async () => {
      let problem: string;
      let final = false;
      try {
        const response = await this.#fetch(url, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${this.#token}`,
            Accept: 'application/json',
            'Content-Type': 'application/json',
          },
          body,
          signal: AbortSignal.timeout(Math.ceil(Math.min(this.#requestTimeoutMs, intervalMs))),
        });
        const text = await response.text();
        if (response.ok) {
          schedule(intervalMs);
          return;
        }
        let code = '';
        try {
          code = String((JSON.parse(text) as { error?: { code?: unknown } }).error?.code ?? '');
        } catch {}
        final = response.status >= 400 && response.status < 500 && response.status !== 429;
        problem = `${response.status}${code ? ` ${code}` : ''}`;
      } catch (cause) {
        problem = describe(cause);
      }
      if (stopped) return;
      if (final) {
        this.#logger.warn(`outcomes-ledger: the ledger refused to extend the deadline of ${what}; no further extensions: ${problem}`);
        return;
      }
      const retryMs = Math.max(intervalMs / 3, 100);
      this.#logger.warn(
        `outcomes-ledger: could not extend the deadline of ${what} (trying again in ${(retryMs / 1000).toFixed(1)} s): ${problem}`,
      );
      schedule(retryMs);
    };
    schedule(intervalMs);
    return {
      stop() {
        stopped = true;
        if (timer !== undefined) clearTimeout(timer);
      },
    };
  }

  // ---- transport ----

  async #entry(operation: string, method: string, path: string, body: unknown, expect?: Expectation): Promise<EntryState> {
    const sent = await this.#send(operation, method, path, body, { expect });
    const entry = sent.body as EntryState;
    if (!entry || typeof entry !== 'object' || typeof entry.ledger_status !== 'string') {
      throw this.#unexpected(operation, method, path, sent.status, 'an answer without the entry\'s ledger_status');
    }
    return entry;
  }

  async #send(
    operation: string,
    method: string,
    path: string,
    body: unknown,
    options: { expect?: Expectation; goneIsDone?: boolean; deadline?: number } = {},
  ): Promise<Sent> {
    const deadline = options.deadline;
    const url = this.baseUrl + path;
    const request = `${method} ${url}`;
    const headers: Record<string, string> = { Authorization: `Bearer ${this.#token}`, Accept: 'application/json' };
    let payload: string | undefined;
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const started = Date.now();
    let attempt = 0;
    let mayHaveLanded = false;
    for (;;) {
      attempt += 1;
      let response: Response;
      let text: string;
      try {
        const left = deadline === undefined ? this.#requestTimeoutMs : Math.min(this.#requestTimeoutMs, deadline - Date.now());
        if (left <= 0) throw Object.assign(new Error('no time left in the connect budget'), { name: 'TimeoutError' });
        response = await this.#fetch(url, {
          method,
          headers,
          body: payload,
          signal: AbortSignal.timeout(Math.ceil(left)),
        });
        text = await response.text();
      } catch (cause) {
        mayHaveLanded = true;
        // The wait is cut to leave the last try LAST_TRY_MS of the time (made as it runs out, never early).
        const leftTotal = this.#retry.maxTotalMs - (Date.now() - started);
        const leftBudget = deadline === undefined ? Infinity : deadline - Date.now();
        const pastBudget = leftBudget <= LAST_TRY_MS;
        const wait = Math.min(this.#backoff(attempt), leftTotal - LAST_TRY_MS, leftBudget - LAST_TRY_MS);
        if (attempt >= this.#retry.maxAttempts || leftTotal <= LAST_TRY_MS || pastBudget) {
          const seconds = ((Date.now() - started) / 1000).toFixed(1);
          const budget = deadline !== undefined && pastBudget ? ` (the connect budget, connectBudgetMs ${this.#connectBudgetMs} ms, is used up)` : '';
          throw new LedgerConnectionError({
            message:
              `could not reach the ledger at ${url} (${operation}) after ${attempt} ${attempt === 1 ? 'try' : 'tries'} ` +
              `over ${seconds} s${budget}: ${describe(cause)}`,
            operation,
            request,
            attempts: attempt,
            cause,
          });
        }
        await sleep(wait);
        continue;
      }

      const status = response.status;
      const contentType = response.headers.get('content-type') ?? '';
      let json: unknown = undefined;
      const isJson = /^application\/json\b/i.test(contentType.trim());
      if (isJson && text !== '') {
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
      }
      const emptyOk = status === 204 && text === '';
      if (!emptyOk && json === undefined) {
        if (RETRYABLE.has(status) && (await this.#waitToRetry(attempt, started, response, deadline))) continue;
        throw new LedgerError({
          message:
            `the server at ${url} (${operation}) answered ${status} ${contentType || 'without a Content-Type'}, not ` +
            `the ledger's JSON${htmlHint(text)}: is baseUrl the ledger's own address (not a proxy's error page or another site)?`,
          code: 'unexpected_response',
          status,
          operation,
          request,
        });
      }

      if (status >= 200 && status < 300) return { status, body: json };

      const detail = (json as { error?: Record<string, unknown> } | undefined)?.error;
      if (!detail || typeof detail !== 'object' || typeof detail.code !== 'string') {
        throw new LedgerError({
          message: `the server at ${url} (${operation}) answered ${status} with JSON that is not the ledger's error body`,
          code: 'unexpected_response',
          status,
          operation,
          request,
        });
      }
      const current = (detail.current ?? null) as EntryState | null;
      if (status === 409 && options.expect && matches(current, options.expect)) {
        return { status, body: current };
      }
      if (status === 404 && options.goneIsDone && mayHaveLanded && detail.code === 'session_not_found') {
        return { status: 204, body: undefined };
      }
      if (RETRYABLE.has(status) && (await this.#waitToRetry(attempt, started, response, deadline))) continue;
      throw new LedgerError({
        message: errorMessage(operation, status, detail),
        code: detail.code,
        status,
        field: typeof detail.field === 'string' ? detail.field : null,
        current,
        operation,
        request,
      });
    }
  }

  /**
   * Waits before another try of a 503/429; false when the tries or the time are used up. A backoff wait
   * is cut to leave the try `LAST_TRY_MS` of `retry.maxTotalMs` (and of `deadline`), so the last try is
   * made as the time runs out, never early; a `Retry-After` that would end past it gives up at once.
   */
  async #waitToRetry(attempt: number, started: number, response: Response, deadline?: number): Promise<boolean> {
    if (attempt >= this.#retry.maxAttempts) return false;
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
    let left = this.#retry.maxTotalMs - (Date.now() - started);
    if (deadline !== undefined) left = Math.min(left, deadline - Date.now());
    let wait: number;
    if (retryAfter !== null) {
      wait = retryAfter + Math.random() * 100;
      if (wait > left) return false;
    } else {
      if (left <= LAST_TRY_MS) return false;
      wait = Math.min(this.#backoff(attempt), left - LAST_TRY_MS);
    }
    await sleep(wait);
    return true;
  }

  #backoff(attempt: number): number {
    const ceiling = Math.min(this.#retry.maxDelayMs, this.#retry.baseDelayMs * 2 ** (attempt - 1));
    return Math.random() * ceiling;
  }

  #unexpected(operation: string, method: string, path: string, status: number, what: string): LedgerError {
    return new LedgerError({
      message: `the server at ${this.baseUrl + path} (${operation}) answered ${status} with ${what}: is baseUrl the ledger?`,
      code: 'unexpected_response',
      status,
      operation,
      request: `${method} ${this.baseUrl + path}`,
    });
  }

  #batchItemError(operation: string, item: BatchResult, which: string): LedgerError {
    const detail = item.error;
    return new LedgerError({
      message: errorMessage(`${operation} (${which})`, item.status, {
        code: detail?.code ?? 'unexpected_response',
        message: detail?.message ?? 'no error in the batch result',
        field: detail?.field ?? undefined,
      }),
      code: detail?.code ?? 'unexpected_response',
      status: item.status,
      field: detail?.field ?? null,
      current: detail?.current ?? null,
      operation,
      request: `POST ${this.baseUrl}/api/host/batch`,
    });
  }
}

function matches(current: EntryState | null, expect: Expectation): boolean {
  if (!current) return false;
  if (current.ledger_status !== expect.ledger_status) return false;
  if ((current.attempt_id ?? null) !== expect.attempt_id) return false;
  if ((current.reason ?? null) !== expect.reason) return false;
  if (expect.logical_turn_id !== undefined && current.logical_turn_id !== expect.logical_turn_id) return false;
  return true;
}

function attemptBody(args: { attemptId: string; deadlineSecs?: number }): Record<string, unknown> {
  const body: Record<string, unknown> = { attempt_id: args.attemptId };
  if (args.deadlineSecs !== undefined) body.deadline_secs = args.deadlineSecs;
  return body;
}

/** `deadlineSecs` as given (`undefined`: the server's default), or a RangeError unless a whole number of seconds from 1 to 604800. */
function checkDeadlineSecs(deadlineSecs: number | undefined): number | undefined {
  if (deadlineSecs === undefined) return undefined;
  if (typeof deadlineSecs !== 'number' || !Number.isInteger(deadlineSecs) || deadlineSecs < 1 || deadlineSecs > MAX_DEADLINE_SECS) {
    throw new RangeError(`deadlineSecs is a whole number of seconds from 1 to ${MAX_DEADLINE_SECS} (7 days), not ${String(deadlineSecs)}`);
  }
  return deadlineSecs;
}

function errorMessage(operation: string, status: number, detail: Record<string, unknown>): string {
  const code = String(detail.code);
  const field = typeof detail.field === 'string' ? ` (field ${detail.field})` : '';
  if (status === 401) {
    return (
      `the ledger refused the host token (${operation}: 401 ${code}): pass the server's host token ` +
      `(its --host-token / OUTCOMES_HOST_TOKEN, else <data dir>/host-token) as new Ledger({ token })`
    );
  }
  return `${operation}: ${status} ${code}${field}: ${String(detail.message ?? '')}`;
}

function htmlHint(text: string): string {
  const title = /<title[^>]*>([^<]{1,200})<\/title>/i.exec(text)?.[1]?.trim();
  if (title) return ` (an HTML page titled ${JSON.stringify(title)})`;
  if (/^\s*</.test(text)) return ' (an HTML or XML page)';
  if (text === '') return ' (an empty body)';
  return ` (${JSON.stringify(text.slice(0, 80))})`;
}

function parseRetryAfter(value: string | null): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (!Number.isNaN(date)) return Math.max(0, date - Date.now());
  return null;
}

function isTimeout(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'TimeoutError';
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    const innerText = inner instanceof Error ? `: ${(inner as { code?: string }).code ?? inner.message}` : '';
    return `${cause.name === 'TimeoutError' ? 'no answer in time' : cause.message}${innerText}`;
  }
  return String(cause);
}

/** One try of a status check; `unreachable`: the ledger could not be reached to reconcile. */
type CheckResult = {
  result: 'completed' | 'not_accepted' | 'inconclusive' | 'error';
  detail?: string;
  final?: boolean;
  unreachable?: LedgerConnectionError;
};

/** The longest status delay and status timeout: 1 hour (well within a timer's 2^31-1 ms). */
const MAX_STATUS_MS = 3_600_000;

function statusAttemptsOption(where: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new RangeError(`${where}: statusAttempts is an integer of at least 1, not ${describeValue(value)}`);
  }
  return value;
}

function statusDelayOption(where: string, name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_STATUS_MS) {
    throw new RangeError(`${where}: ${name} is a finite number of milliseconds from 0 to ${MAX_STATUS_MS} (1 hour), not ${describeValue(value)}`);
  }
  return value;
}

function statusTimeoutOption(where: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_STATUS_MS) {
    throw new RangeError(`${where}: statusTimeoutMs is a finite number of milliseconds above 0, at most ${MAX_STATUS_MS} (1 hour), not ${describeValue(value)}`);
  }
  return value;
}

function describeValue(value: unknown): string {
  if (value instanceof Date) return `Date(${String(value)})`;
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** RFC 3339 date-time: full date, `T`, time, optional fraction, `Z` or an offset. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** A status answer's `observedAt` as RFC 3339; `undefined` when it is neither a valid Date nor an RFC 3339 string. */
function observedAtOf(value: unknown): string | undefined {
  if (value === undefined) return new Date().toISOString();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
  if (typeof value === 'string' && RFC3339.test(value) && !Number.isNaN(Date.parse(value))) return value;
  return undefined;
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError(`new Ledger: ${name} is a number of at least 0, not ${String(value)}`);
  }
  return value;
}

function historyPath(sessionKey: string, mutationId: string): string {
  return `/api/sessions/${seg(sessionKey)}/mutations/${seg(mutationId)}/history`;
}

function seg(id: string): string {
  return encodeURIComponent(id);
}

function mutationPath(args: { sessionKey: string; mutationId: string }): string {
  return `/api/host/sessions/${seg(args.sessionKey)}/mutations/${seg(args.mutationId)}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A new logical turn id: `turn-` + 32 lowercase hex digits (a random UUID v4 without its dashes), the
 * one format of both clients (Python's `turn-{uuid4().hex}`).
 */
export function newTurnId(): string {
  return `turn-${newId().replace(/-/g, '')}`;
}

/** A new UUID (v4) for mutation and attempt ids. */
export function newId(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  const bytes = new Uint8Array(16);
  if (c && typeof c.getRandomValues === 'function') c.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
