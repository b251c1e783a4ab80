import { LedgerConnectionError, LedgerError, LedgerSettleError, NotDispatched, ProviderFailed } from './errors.js';
/** The server's default `--in-flight-deadline-secs` (docs/api.md "Deadlines"): the deadline of an intent sent without `deadlineSecs`, so the one a protected write extends when none was given. */
export const DEFAULT_DEADLINE_SECS = 900;
/** The longest deadline the ledger takes: 7 days (the shortest is 1 s). */
export const MAX_DEADLINE_SECS = 604_800;
const RETRYABLE = new Set([429, 503]);
const recorded = new WeakMap();
function mark(error, outcome) {
    if ((typeof error === 'object' && error !== null) || typeof error === 'function')
        recorded.set(error, outcome);
}
/** What the ledger recorded for an error `protectedWrite` rejected with; `undefined` for any other value. */
export function recordedOutcome(error) {
    return (typeof error === 'object' && error !== null) || typeof error === 'function' ? recorded.get(error) : undefined;
}
/**
 * The message an agent framework should give the model for a protected tool call that threw: what
 * the ledger recorded, so that the model does not call again what may have happened (an unknown
 * outcome is not resent; new work is a new operation). `callId` names the operation when the error
 * carries no record.
 */
export function outcomeMessage(error, callId) {
    const record = recordedOutcome(error);
    const op = record?.mutationId ?? callId ?? '?';
    switch (record?.outcome) {
        case 'outcome_unknown':
            return (`The outcome of this tool call is unknown (operation id ${op}): it may or may not have taken effect. ` +
                'Do not call the tool again for this request; tell the user the result is being checked and give them the operation id.');
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
function errorName(error) {
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
    baseUrl;
    #token;
    #fetch;
    #retry;
    #requestTimeoutMs;
    #logger;
    constructor(options) {
        if (!options || typeof options.baseUrl !== 'string' || options.baseUrl === '') {
            throw new TypeError('new Ledger({ baseUrl, token }): baseUrl is required, e.g. http://127.0.0.1:3000');
        }
        if (typeof options.token !== 'string' || options.token === '') {
            throw new TypeError('new Ledger({ baseUrl, token }): token is required: the host token (OUTCOMES_HOST_TOKEN or <data dir>/host-token)');
        }
        let parsed;
        try {
            parsed = new URL(options.baseUrl);
        }
        catch {
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
    }
    // ---- host operations (docs/api.md "Host write API") ----
    /** Approve a mutation: `POST /api/host/sessions/{session_key}/mutations` → `approved`, no intent (201). */
    approve(args) {
        const body = {
            logical_turn_id: args.logicalTurnId,
            mutation_id: args.mutationId,
            tool: args.tool,
        };
        if (args.commissionedAfter !== undefined)
            body.commissioned_after = args.commissionedAfter;
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
    intent(args) {
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
    extendDeadline(args) {
        return this.#entry('extendDeadline', 'POST', `${mutationPath(args)}/deadline`, {
            attempt_id: args.attemptId,
            deadline_secs: args.deadlineSecs,
        });
    }
    /**
     * Settle the in-flight attempt: `completed`, `failed`, or `outcome_unknown` (with `reason`
     * `execution_timeout` only). A timeout is not a failure: settle it `outcome_unknown`.
     */
    settle(args) {
        const body = { attempt_id: args.attemptId, status: args.status };
        if (args.reason !== undefined)
            body.reason = args.reason;
        return this.#entry('settle', 'POST', `${mutationPath(args)}/settlement`, body, {
            ledger_status: args.status,
            attempt_id: args.attemptId,
            reason: args.reason ?? null,
        });
    }
    /** Cancel before the router (the tool was never called): published `not_executed`. */
    cancel(args) {
        const body = { attempt_id: args.attemptId };
        if (args.reason !== undefined)
            body.reason = args.reason;
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
    reconcile(args) {
        const evidence = {
            source: args.evidence.source,
            reference: args.evidence.reference,
            observed_at: args.evidence.observedAt instanceof Date ? args.evidence.observedAt.toISOString() : args.evidence.observedAt,
        };
        if (args.evidence.providerStatus !== undefined)
            evidence.provider_status = args.evidence.providerStatus;
        return this.#entry('reconcile', 'POST', `${mutationPath(args)}/reconciliation`, { attempt_id: args.attemptId, completed: args.completed, evidence }, { ledger_status: args.completed ? 'completed' : 'approved', attempt_id: args.attemptId, reason: null });
    }
    /** Attach host metadata (all three at once; missing or empty → `null`; identical → no change). */
    attachMetadata(args) {
        return this.#entry('attachMetadata', 'PUT', `${mutationPath(args)}/metadata`, {
            id: args.id ?? null,
            url: args.url ?? null,
            title: args.title ?? null,
        });
    }
    /** A fresh attempt of a `not_executed` entry (never after an unknown outcome; never a used attempt id), with a deadline as `intent`'s. */
    freshAttempt(args) {
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
    async deleteSession(args) {
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
    async batch(operations) {
        const sent = await this.#send('batch', 'POST', '/api/host/batch', { operations });
        const results = sent.body?.results;
        if (!Array.isArray(results) || results.length !== operations.length) {
            throw this.#unexpected('batch', 'POST', '/api/host/batch', sent.status, 'a batch answer without one result per operation');
        }
        return results;
    }
    /**
     * Mint a viewer link to one session (201): `{url: "/v/<token>", expires_at}`, plus `href`, the
     * link made absolute on `baseUrl`. `expiresInSecs` defaults to 7 days, at most 366 days.
     */
    async mintViewerLink(args) {
        const body = args.expiresInSecs === undefined ? undefined : { expires_in_secs: args.expiresInSecs };
        const path = `/api/host/sessions/${seg(args.sessionKey)}/viewer-links`;
        const sent = await this.#send('mintViewerLink', 'POST', path, body);
        const link = sent.body;
        if (!link || typeof link.url !== 'string' || typeof link.expires_at !== 'string') {
            throw this.#unexpected('mintViewerLink', 'POST', path, sent.status, 'a viewer link answer without url and expires_at');
        }
        return { ...link, href: new URL(link.url, this.baseUrl + '/').toString() };
    }
    /** Revoke every viewer link of a session: `{revoked: n}`. */
    async revokeViewerLinks(args) {
        const path = `/api/host/sessions/${seg(args.sessionKey)}/viewer-links`;
        const sent = await this.#send('revokeViewerLinks', 'DELETE', path, undefined);
        const body = sent.body;
        if (!body || typeof body.revoked !== 'number') {
            throw this.#unexpected('revokeViewerLinks', 'DELETE', path, sent.status, 'an answer without revoked');
        }
        return body;
    }
    /** The session's published outcomes, oldest logical turn first (`GET /api/mutation-outcomes?session_id=`). */
    async mutationOutcomes(args) {
        const path = `/api/mutation-outcomes?session_id=${encodeURIComponent(args.sessionKey)}`;
        const sent = await this.#send('mutationOutcomes', 'GET', path, undefined);
        const list = sent.body?.mutation_outcomes;
        if (!Array.isArray(list)) {
            throw this.#unexpected('mutationOutcomes', 'GET', path, sent.status, 'an answer without mutation_outcomes');
        }
        return list;
    }
    // ---- the protected write (its rules: clients/typescript/README.md "The protected write") ----
    /**
     * One logical turn of a session (an agent run): `turn.protectedWrite({ mutationId?, tool }, block)`
     * is `ledger.protectedWrite` with this turn's `sessionKey` and `logicalTurnId` (a new UUID when not
     * given). Nothing is recorded until a write.
     */
    turn(args) {
        const sessionKey = args.sessionKey;
        const logicalTurnId = args.logicalTurnId ?? newId();
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
    async protectedWrite(options, block) {
        if (typeof block !== 'function')
            throw new TypeError('protectedWrite(options, block): block must be a function');
        const sessionKey = options.sessionKey;
        const logicalTurnId = options.logicalTurnId;
        const mutationId = options.mutationId ?? newId();
        const tool = options.tool;
        const attemptId = newId();
        const deadlineSecs = checkDeadlineSecs(options.deadlineSecs);
        const approve = {
            op: 'approve',
            session_key: sessionKey,
            logical_turn_id: logicalTurnId,
            mutation_id: mutationId,
            tool,
        };
        if (options.commissionedAfter !== undefined)
            approve.commissioned_after = options.commissionedAfter;
        const intent = { op: 'intent', session_key: sessionKey, mutation_id: mutationId, attempt_id: attemptId };
        if (deadlineSecs !== undefined)
            intent.deadline_secs = deadlineSecs;
        let approved;
        let started;
        try {
            [approved, started] = (await this.batch([approve, intent]));
        }
        catch (error) {
            mark(error, { outcome: 'not_called', mutationId });
            throw error;
        }
        const intentLanded = started.status === 200 ||
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
        let outcome = 'completed';
        let cancelReason = undefined;
        const ledger = this;
        const op = {
            sessionKey,
            logicalTurnId,
            mutationId,
            attemptId,
            tool,
            failed() {
                outcome = 'failed';
            },
            notExecuted(opts) {
                outcome = 'not_executed';
                cancelReason = opts?.reason;
            },
            attach(metadata) {
                return ledger.attachMetadata({ sessionKey, mutationId, ...metadata });
            },
        };
        const ids = { sessionKey, mutationId, attemptId };
        const extender = this.#extendWhileRunning(ids, deadlineSecs ?? DEFAULT_DEADLINE_SECS);
        let result;
        try {
            try {
                result = await block(op);
            }
            finally {
                extender.stop();
            }
        }
        catch (error) {
            let settled = 'outcome_unknown';
            try {
                if (error instanceof NotDispatched) {
                    await this.cancel({ ...ids, ...(error.reason ? { reason: error.reason } : {}) });
                    settled = 'not_executed';
                }
                else if (error instanceof ProviderFailed) {
                    await this.settle({ ...ids, status: 'failed' });
                    settled = 'failed';
                }
                else if (isTimeout(error)) {
                    await this.settle({ ...ids, status: 'outcome_unknown', reason: 'execution_timeout' });
                }
                else {
                    await this.settle({ ...ids, status: 'outcome_unknown' });
                }
            }
            catch {
                // The entry stays execution_started, published outcome_unknown: honest whatever the
                // block's error said. The block's own error is what the caller must see.
                settled = 'outcome_unknown';
            }
            mark(error, { outcome: settled, mutationId });
            throw error;
        }
        try {
            if (outcome === 'not_executed') {
                await this.cancel({ ...ids, ...(cancelReason ? { reason: cancelReason } : {}) });
            }
            else {
                await this.settle({ ...ids, status: outcome });
            }
        }
        catch (error) {
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
     * Extends one protected write's deadline every third of it until `stop()`: one request each, of
     * at most that third; after a network error, a timeout or another non-4xx answer the next try is
     * after a ninth; after a 4xx (409: no longer in flight under this attempt) none follows. Each
     * failure is logged; nothing rejects. The timer is unref'd: it never keeps the process alive.
     */
    #extendWhileRunning(ids, deadlineSecs) {
        const intervalMs = (deadlineSecs * 1000) / 3;
        const what = `operation ${JSON.stringify(ids.mutationId)} (attempt ${JSON.stringify(ids.attemptId)})`;
        const url = `${this.baseUrl}${mutationPath(ids)}/deadline`;
        const body = JSON.stringify({ attempt_id: ids.attemptId, deadline_secs: deadlineSecs });
        let stopped = false;
        let timer;
        const schedule = (ms) => {
            if (stopped)
                return;
            timer = setTimeout(tick, ms);
            timer.unref?.();
        };
        const tick = async () => {
            let problem;
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
                    code = String(JSON.parse(text).error?.code ?? '');
                }
                catch { }
                final = response.status >= 400 && response.status < 500 && response.status !== 429;
                problem = `${response.status}${code ? ` ${code}` : ''}`;
            }
            catch (cause) {
                problem = describe(cause);
            }
            if (stopped)
                return;
            if (final) {
                this.#logger.warn(`outcomes-ledger: the ledger refused to extend the deadline of ${what}; no further extensions: ${problem}`);
                return;
            }
            const retryMs = Math.max(intervalMs / 3, 100);
            this.#logger.warn(`outcomes-ledger: could not extend the deadline of ${what} (trying again in ${(retryMs / 1000).toFixed(1)} s): ${problem}`);
            schedule(retryMs);
        };
        schedule(intervalMs);
        return {
            stop() {
                stopped = true;
                if (timer !== undefined)
                    clearTimeout(timer);
            },
        };
    }
    // ---- transport ----
    async #entry(operation, method, path, body, expect) {
        const sent = await this.#send(operation, method, path, body, { expect });
        const entry = sent.body;
        if (!entry || typeof entry !== 'object' || typeof entry.ledger_status !== 'string') {
            throw this.#unexpected(operation, method, path, sent.status, 'an answer without the entry\'s ledger_status');
        }
        return entry;
    }
    async #send(operation, method, path, body, options = {}) {
        const url = this.baseUrl + path;
        const request = `${method} ${url}`;
        const headers = { Authorization: `Bearer ${this.#token}`, Accept: 'application/json' };
        let payload;
        if (body !== undefined) {
            headers['Content-Type'] = 'application/json';
            payload = JSON.stringify(body);
        }
        const started = Date.now();
        let attempt = 0;
        let mayHaveLanded = false;
        for (;;) {
            attempt += 1;
            let response;
            let text;
            try {
                response = await this.#fetch(url, {
                    method,
                    headers,
                    body: payload,
                    signal: AbortSignal.timeout(this.#requestTimeoutMs),
                });
                text = await response.text();
            }
            catch (cause) {
                mayHaveLanded = true;
                const wait = this.#backoff(attempt);
                if (attempt >= this.#retry.maxAttempts || Date.now() - started + wait > this.#retry.maxTotalMs) {
                    const seconds = ((Date.now() - started) / 1000).toFixed(1);
                    throw new LedgerConnectionError({
                        message: `could not reach the ledger at ${url} (${operation}) after ${attempt} ${attempt === 1 ? 'try' : 'tries'} ` +
                            `over ${seconds} s: ${describe(cause)}`,
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
            let json = undefined;
            const isJson = /^application\/json\b/i.test(contentType.trim());
            if (isJson && text !== '') {
                try {
                    json = JSON.parse(text);
                }
                catch {
                    json = undefined;
                }
            }
            const emptyOk = status === 204 && text === '';
            if (!emptyOk && json === undefined) {
                if (RETRYABLE.has(status) && (await this.#waitToRetry(attempt, started, response)))
                    continue;
                throw new LedgerError({
                    message: `the server at ${url} (${operation}) answered ${status} ${contentType || 'without a Content-Type'}, not ` +
                        `the ledger's JSON${htmlHint(text)}: is baseUrl the ledger's own address (not a proxy's error page or another site)?`,
                    code: 'unexpected_response',
                    status,
                    operation,
                    request,
                });
            }
            if (status >= 200 && status < 300)
                return { status, body: json };
            const detail = json?.error;
            if (!detail || typeof detail !== 'object' || typeof detail.code !== 'string') {
                throw new LedgerError({
                    message: `the server at ${url} (${operation}) answered ${status} with JSON that is not the ledger's error body`,
                    code: 'unexpected_response',
                    status,
                    operation,
                    request,
                });
            }
            const current = (detail.current ?? null);
            if (status === 409 && options.expect && matches(current, options.expect)) {
                return { status, body: current };
            }
            if (status === 404 && options.goneIsDone && mayHaveLanded && detail.code === 'session_not_found') {
                return { status: 204, body: undefined };
            }
            if (RETRYABLE.has(status) && (await this.#waitToRetry(attempt, started, response)))
                continue;
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
    /** Waits before another try of a 503/429; false when the tries or the time are used up. */
    async #waitToRetry(attempt, started, response) {
        if (attempt >= this.#retry.maxAttempts)
            return false;
        const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
        const wait = retryAfter === null ? this.#backoff(attempt) : retryAfter + Math.random() * 100;
        if (Date.now() - started + wait > this.#retry.maxTotalMs)
            return false;
        await sleep(wait);
        return true;
    }
    #backoff(attempt) {
        const ceiling = Math.min(this.#retry.maxDelayMs, this.#retry.baseDelayMs * 2 ** (attempt - 1));
        return Math.random() * ceiling;
    }
    #unexpected(operation, method, path, status, what) {
        return new LedgerError({
            message: `the server at ${this.baseUrl + path} (${operation}) answered ${status} with ${what}: is baseUrl the ledger?`,
            code: 'unexpected_response',
            status,
            operation,
            request: `${method} ${this.baseUrl + path}`,
        });
    }
    #batchItemError(operation, item, which) {
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
function matches(current, expect) {
    if (!current)
        return false;
    if (current.ledger_status !== expect.ledger_status)
        return false;
    if ((current.attempt_id ?? null) !== expect.attempt_id)
        return false;
    if ((current.reason ?? null) !== expect.reason)
        return false;
    if (expect.logical_turn_id !== undefined && current.logical_turn_id !== expect.logical_turn_id)
        return false;
    return true;
}
function attemptBody(args) {
    const body = { attempt_id: args.attemptId };
    if (args.deadlineSecs !== undefined)
        body.deadline_secs = args.deadlineSecs;
    return body;
}
/** `deadlineSecs` as given (`undefined`: the server's default), or a RangeError unless a whole number of seconds from 1 to 604800. */
function checkDeadlineSecs(deadlineSecs) {
    if (deadlineSecs === undefined)
        return undefined;
    if (typeof deadlineSecs !== 'number' || !Number.isInteger(deadlineSecs) || deadlineSecs < 1 || deadlineSecs > MAX_DEADLINE_SECS) {
        throw new RangeError(`deadlineSecs is a whole number of seconds from 1 to ${MAX_DEADLINE_SECS} (7 days), not ${String(deadlineSecs)}`);
    }
    return deadlineSecs;
}
function errorMessage(operation, status, detail) {
    const code = String(detail.code);
    const field = typeof detail.field === 'string' ? ` (field ${detail.field})` : '';
    if (status === 401) {
        return (`the ledger refused the host token (${operation}: 401 ${code}): pass the server's host token ` +
            `(its --host-token / OUTCOMES_HOST_TOKEN, else <data dir>/host-token) as new Ledger({ token })`);
    }
    return `${operation}: ${status} ${code}${field}: ${String(detail.message ?? '')}`;
}
function htmlHint(text) {
    const title = /<title[^>]*>([^<]{1,200})<\/title>/i.exec(text)?.[1]?.trim();
    if (title)
        return ` (an HTML page titled ${JSON.stringify(title)})`;
    if (/^\s*</.test(text))
        return ' (an HTML or XML page)';
    if (text === '')
        return ' (an empty body)';
    return ` (${JSON.stringify(text.slice(0, 80))})`;
}
function parseRetryAfter(value) {
    if (value === null)
        return null;
    const trimmed = value.trim();
    if (/^\d+$/.test(trimmed))
        return Number(trimmed) * 1000;
    const date = Date.parse(trimmed);
    if (!Number.isNaN(date))
        return Math.max(0, date - Date.now());
    return null;
}
function isTimeout(error) {
    return typeof error === 'object' && error !== null && error.name === 'TimeoutError';
}
function describe(cause) {
    if (cause instanceof Error) {
        const inner = cause.cause;
        const innerText = inner instanceof Error ? `: ${inner.code ?? inner.message}` : '';
        return `${cause.name === 'TimeoutError' ? 'no answer in time' : cause.message}${innerText}`;
    }
    return String(cause);
}
function seg(id) {
    return encodeURIComponent(id);
}
function mutationPath(args) {
    return `/api/host/sessions/${seg(args.sessionKey)}/mutations/${seg(args.mutationId)}`;
}
function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}
/** A new UUID (v4) for mutation and attempt ids. */
export function newId() {
    const c = globalThis.crypto;
    if (c && typeof c.randomUUID === 'function')
        return c.randomUUID();
    const bytes = new Uint8Array(16);
    if (c && typeof c.getRandomValues === 'function')
        c.getRandomValues(bytes);
    else
        for (let i = 0; i < 16; i++)
            bytes[i] = Math.floor(Math.random() * 256);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
