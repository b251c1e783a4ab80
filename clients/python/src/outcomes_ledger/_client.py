"""`Ledger` (sync) and `AsyncLedger` (async): the host write API (docs/api.md "Host write API")."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
import time
from typing import Any, Awaitable, Callable, Literal, Mapping, Optional, Sequence, TypeVar, Union

import httpx

from . import _calls
from ._core import RETRYABLE_TRANSPORT, Backoff, Call, Retry, exhausted, interpret, request_kwargs
from ._deadline import DEFAULT_DEADLINE_SECS, check_deadline_secs
from ._protected import (
    Operation,
    TurnScope,
    _write,
    current_turn,
    idempotency_key,
    mark,
    new_id,
    settle_failed,
)
from ._status import (
    DEFAULT_STATUS_ATTEMPTS,
    DEFAULT_STATUS_DELAY_SECS,
    DEFAULT_STATUS_TIMEOUT_SECS,
    StatusTimeout,
    check_status_options,
    RecoveredItem,
    RecoverySummary,
    StatusAnswer,
    StatusCheck,
    UnknownOperation,
    attempt_of,
    conclusion,
    describe,
    log_unresolved,
    logger,
    retry_wait,
)
from ._types import BatchResult, Entry, Evidence, SettleStatus, ViewerLink
from .errors import Conflict, LedgerError, LedgerUnavailable

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_TIMEOUT_SECS = 10.0
DEFAULT_RETRY_TOTAL_SECS = 30.0
DEFAULT_CONNECT_BUDGET_SECS = 5.0
"""The most wall time a protected write spends before its block (approve + intent, the ledger's id),
retries and waits for answers included: past it the block does not run and the error is raised."""


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Accept": "application/json",
            "User-Agent": "outcomes-ledger-python/0.1"}


def _resolve_ids(session_key: Optional[str], logical_turn_id: Optional[str]) -> tuple[str, str]:
    if session_key is not None and logical_turn_id is not None:
        return session_key, logical_turn_id
    turn = current_turn()
    if turn is None:
        raise ValueError(
            "a protected write needs session_key and logical_turn_id, or to run inside "
            "ledger.turn(session_key, logical_turn_id)"
        )
    if session_key is not None and session_key != turn.session_key:
        raise ValueError("session_key differs from the enclosing ledger.turn(...); name both or neither")
    return turn.session_key, logical_turn_id or turn.logical_turn_id


def _pop_mutation_id(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], Optional[str]]:
    takes = "mutation_id" in inspect.signature(fn).parameters

    def pick(kwargs: dict[str, Any]) -> Optional[str]:
        return kwargs.get("mutation_id") if takes else kwargs.pop("mutation_id", None)

    return pick


def _timeout(timeout: float, until: Optional[float]) -> dict[str, Any]:
    """The per-request timeout: the client's, cut to what is left before `until`."""
    if until is None:
        return {}
    return {"timeout": max(0.01, min(timeout, until - time.monotonic()))}


def _whole(streamed: httpx.Response, raw: bytes) -> httpx.Response:
    """A read response made of a streamed one's status, headers and raw (still encoded) body."""
    return httpx.Response(streamed.status_code, headers=streamed.headers, content=raw,
                          request=streamed.request, extensions=streamed.extensions)


def _sessions(sessions: Union[Sequence[str], Literal["all"]]) -> list[Optional[str]]:
    if sessions == "all":
        return [None]
    if isinstance(sessions, str) or not all(isinstance(k, str) and k for k in sessions):
        raise TypeError('sessions is a list of session keys, or "all" for every session')
    return list(dict.fromkeys(sessions))


def _match_operation(match: dict[str, Any]) -> tuple[str, str, str, str, str, str]:
    """(session_key, logical_turn_id, mutation_id, tool, recorded_at, ledger_status) of one
    `/api/unknowns` match."""
    entry = match["entry"]
    outcome = entry["outcome"]
    return (str(match["session_key"]), str(outcome["logical_turn_id"]), str(outcome["mutation_id"]),
            str(outcome["tool"]), str(entry.get("recorded_at") or ""), str(entry.get("ledger_status")))


def _match_attempt(match: dict[str, Any]) -> Optional[str]:
    """The entry's current attempt id, as the `/api/unknowns` item names it (`attempt_id`, docs/api.md
    "Support queue"); `None` from a server that predates it (then its history is read instead)."""
    attempt = match.get("attempt_id")
    return attempt if isinstance(attempt, str) and attempt else None


def _stop(summary: RecoverySummary, match: dict[str, Any], err: LedgerUnavailable) -> None:
    """The ledger went away during `recover`: the item it stopped at is an error, the summary so far
    goes with the error (`err.summary`) and the run stops (the remaining unknowns are not looked at)."""
    session, _, mutation, tool, _, _ = _match_operation(match)
    summary.add(RecoveredItem(session, mutation, tool, "error", f"the ledger could not be reached: {err}"))
    err.summary = summary


def _conflict_result(err: Conflict, completed: bool) -> tuple[str, str]:
    """A reconciliation refused with 409: someone else settled it meanwhile (skipped), else an error.
    (A 409 whose `current` shows this very reconciliation was already turned into success.)"""
    current = err.current
    if current is not None and current.ledger_status != "outcome_unknown":
        return "skipped", f"settled meanwhile ({current.published_status}): {err.message}"
    return "error", str(err)


def _call_check(check: StatusCheck, query: UnknownOperation) -> Any:
    result = check(query)
    if inspect.isawaitable(result):
        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


def _sync_answer(check: StatusCheck, query: UnknownOperation, timeout: float) -> Any:
    """The check's answer, from a daemon thread given at most `timeout` seconds: past it
    `StatusTimeout` and the thread is abandoned (it may still run to its end; its answer is ignored)."""
    done: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            done.append((True, _call_check(check, query)))
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            done.append((False, err))

    context = contextvars.copy_context()  # the check sees the caller's context variables
    thread = threading.Thread(target=context.run, args=(run,), name=f"outcomes-ledger-status {query.mutation_id}",
                              daemon=True)
    thread.start()
    thread.join(timeout)
    if not done:
        raise StatusTimeout(f"the status check did not answer within {timeout:g} s")
    ok, value = done[0]
    if not ok:
        raise value
    return value


async def _async_answer(check: StatusCheck, query: UnknownOperation, timeout: float) -> Any:
    """The check's answer within `timeout` seconds (`asyncio.wait_for`; a sync check runs in a thread,
    abandoned past it), else `StatusTimeout`."""
    async def answer() -> Any:
        if inspect.iscoroutinefunction(check):
            return await check(query)
        result = await asyncio.to_thread(check, query)
        if inspect.isawaitable(result):
            result = await result
        return result

    try:
        return await asyncio.wait_for(answer(), timeout)
    except asyncio.TimeoutError:
        raise StatusTimeout(f"the status check did not answer within {timeout:g} s") from None


class _Base:
    def __init__(self, base_url: str, token: str, *, timeout: float, retry_total_secs: float,
                 status_delay: float = DEFAULT_STATUS_DELAY_SECS,
                 status_attempts: int = DEFAULT_STATUS_ATTEMPTS,
                 connect_budget: float = DEFAULT_CONNECT_BUDGET_SECS,
                 status_timeout: float = DEFAULT_STATUS_TIMEOUT_SECS) -> None:
        if not base_url:
            raise ValueError("base_url is the ledger server's URL, e.g. http://127.0.0.1:3000")
        if not token:
            raise ValueError("token is the host token (the server's OUTCOMES_HOST_TOKEN)")
        self.base_url = base_url.rstrip("/")
        self.retry_total_secs = retry_total_secs
        self._timeout = timeout
        self._token = token
        self._ledger_id: Optional[str] = None
        if not connect_budget > 0:
            raise ValueError("connect_budget is a number of seconds above 0")
        self.connect_budget = connect_budget
        check_status_options(status_delay, status_attempts, status_timeout)
        self.status_delay = status_delay
        self.status_attempts = status_attempts
        self.status_timeout = status_timeout
        self.status_checks: dict[str, StatusCheck] = {}
        """The status check of each tool (`ledger.status_checks["payments.charge"] = check`): run after
        a protected write of that tool ends unknown (unless it names its own with `status=`), and by
        `recover()` unless it is given `checks=`."""

    def _check_for(self, op: Operation) -> Optional[StatusCheck]:
        return op.status_check or self.status_checks.get(op.tool)

    def turn(self, session_key: str, logical_turn_id: Optional[str] = None) -> TurnScope:
        """`with ledger.turn(session_key, logical_turn_id):` the session and logical turn of the
        protected writes inside that name none (`protected_write(tool=...)`, `@ledger.protect`).
        Without `logical_turn_id` one is generated. No request is made."""
        return TurnScope(session_key, logical_turn_id)


class Ledger(_Base):
    """Sync client of the host write API.

    `Ledger(base_url, token)`: `base_url` is the server (`http://127.0.0.1:3000`), `token` the host
    token. Each call answers the entry's state (`Entry`) or raises a `LedgerError` subclass with the
    JSON error's `code`, `field`, `current` (docs/api.md "Errors").

    Retries: a connection error (refused, reset, timed out after `timeout` seconds) or a 503/429
    answer is tried again with exponential backoff and full jitter, honouring `Retry-After`, for at
    most `retry_total_secs` seconds in total, then `LedgerUnavailable`. Sending again is safe: the
    ledger refuses redelivery, and a 409 whose `current` already shows the requested change (same
    `ledger_status`, `attempt_id`, `reason`) is returned as success whatever its code.

    Before a protected block (approve + intent, the ledger's id) the client spends at most
    `connect_budget` seconds (default 5; capped by `retry_total_secs`), retries and waits for answers
    included, then raises and the block does not run: an unreachable or silent ledger never stalls a
    tool call for the whole retry budget. `status_delay` (1 s) and `status_attempts` (3) pace the
    status check after a block that ended unknown (README "Status checks").
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT_SECS,
                 retry_total_secs: float = DEFAULT_RETRY_TOTAL_SECS,
                 transport: Optional[httpx.BaseTransport] = None,
                 status_delay: float = DEFAULT_STATUS_DELAY_SECS,
                 status_attempts: int = DEFAULT_STATUS_ATTEMPTS,
                 connect_budget: float = DEFAULT_CONNECT_BUDGET_SECS,
                 status_timeout: float = DEFAULT_STATUS_TIMEOUT_SECS) -> None:
        super().__init__(base_url, token, timeout=timeout, retry_total_secs=retry_total_secs,
                         status_delay=status_delay, status_attempts=status_attempts,
                         connect_budget=connect_budget, status_timeout=status_timeout)
        self._http = httpx.Client(base_url=self.base_url, headers=_headers(token), timeout=timeout,
                                  transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _run(self, call: Call[T], until: Optional[float] = None) -> T:
        """Send `call`, retried by the rules above; with `until` (a `time.monotonic()` instant) every
        try and wait ends by then (the pre-block budget, `connect_budget`)."""
        backoff = Backoff(self.retry_total_secs if until is None else until - time.monotonic())
        attempt = 0
        while True:
            attempt += 1
            try:
                if until is None:
                    response = self._http.request(call.method, call.path, **request_kwargs(call))
                else:
                    response = self._request_by(call, until)
                return interpret(self.base_url, call, response, attempt)
            except (Retry, *RETRYABLE_TRANSPORT) as exc:
                wait = backoff.next_wait(exc.retry_after if isinstance(exc, Retry) else None)
                if wait is None:
                    raise exhausted(self.base_url, call, backoff, exc) from (
                        exc.cause if isinstance(exc, Retry) else exc)
                time.sleep(wait)

    def _request_by(self, call: Call[Any], until: float) -> httpx.Response:
        """One try of `call` that ends by `until` (`httpx.ReadTimeout` past it): it runs in a daemon
        thread the caller waits for until then at most, so that a server trickling its headers cannot
        hold the caller past it (the thread is then abandoned: it ends by itself, see `_stream_by`)."""
        done: list[tuple[bool, Any]] = []

        def run() -> None:
            try:
                done.append((True, self._stream_by(call, until)))
            except BaseException as err:  # noqa: BLE001 - handed to the caller
                done.append((False, err))

        thread = threading.Thread(target=run, name=f"outcomes-ledger {call.operation}", daemon=True)
        thread.start()
        thread.join(max(0.0, until - time.monotonic()) + 0.05)
        if not done:
            raise httpx.ReadTimeout("the answer did not arrive within connect_budget")
        ok, value = done[0]
        if not ok:
            raise value
        response: httpx.Response = value
        return response

    def _stream_by(self, call: Call[Any], until: float) -> httpx.Response:
        """`call` with each wait for bytes cut to what is left before `until`, the answer's body read
        chunk by chunk and given up (`httpx.ReadTimeout`) once `until` has passed, so that a server
        trickling its body cannot hold it past `until`."""
        with self._http.stream(call.method, call.path, **_timeout(self._timeout, until),
                               **request_kwargs(call)) as streamed:
            chunks: list[bytes] = []
            for chunk in streamed.iter_raw():
                chunks.append(chunk)
                if time.monotonic() >= until:
                    raise httpx.ReadTimeout("the answer did not arrive within connect_budget", request=streamed.request)
            return _whole(streamed, b"".join(chunks))

    def _get_ledger_id(self, until: Optional[float] = None) -> str:
        """The ledger's id (`GET /api/host/ledger`), read once per client."""
        if self._ledger_id is None:
            ledger_id: str = self._run(_calls.ledger_id(), until)
            self._ledger_id = ledger_id
        return self._ledger_id

    def ledger_id(self) -> str:
        """The ledger's id (`GET /api/host/ledger`, 32 lowercase hex digits, docs/api.md "The ledger's
        id"), read once per client and cached; a failed read is tried again next time. Idempotency keys
        are derived from it."""
        return self._get_ledger_id()

    def idempotency_key(self, session_key: str, mutation_id: str) -> str:
        """The idempotency key of operation `(session_key, mutation_id)` in this ledger
        (`op.idempotency_key`: `ol_` + 32 base32 characters)."""
        return idempotency_key(self._get_ledger_id(), session_key, mutation_id)

    # One method per host operation ----------------------------------------------

    def approve(self, session_key: str, logical_turn_id: str, mutation_id: str, tool: str, *,
                commissioned_after: Optional[str] = None, traceparent: Optional[str] = None) -> Entry:
        """Approve a mutation (201): `POST /api/host/sessions/{session_key}/mutations`. Ids are
        non-empty, at most 256 bytes, no control characters (422 `invalid_field` otherwise).
        `traceparent`: the host's W3C trace context of the tool call (lowercase
        `00-<32 hex>-<16 hex>-<2 hex>`, else 422 naming it); the ledger's OpenTelemetry span of the
        write becomes its child (docs/operations.md "OpenTelemetry")."""
        return self._run(_calls.approve(session_key, logical_turn_id, mutation_id, tool, commissioned_after,
                                        traceparent))

    def intent(self, session_key: str, mutation_id: str, attempt_id: str, *,
               deadline_secs: Optional[int] = None) -> Entry:
        """Record intent before dispatch: the entry is then `execution_started` (in flight) until it
        is settled or its deadline passes (`deadline_secs` from now, 1 to 604800; default the
        server's `--in-flight-deadline-secs`, 900), when the ledger settles it `outcome_unknown`
        with `execution_timeout` itself (docs/api.md "Deadlines")."""
        return self._run(_calls.intent(session_key, mutation_id, attempt_id, check_deadline_secs(deadline_secs)))

    def extend_deadline(self, session_key: str, mutation_id: str, attempt_id: str, *,
                        deadline_secs: int) -> Entry:
        """Extend the deadline of the attempt in flight to now + `deadline_secs` (1 to 604800), never
        earlier than it was: `POST …/deadline`. `Conflict` (409) unless `execution_started` under
        that attempt (docs/api.md "Deadlines"). The protected write does this by itself."""
        return self._run(_calls.extend_deadline(session_key, mutation_id, attempt_id, deadline_secs))

    def settle(self, session_key: str, mutation_id: str, attempt_id: str, status: SettleStatus, *,
               reason: Optional[str] = None) -> Entry:
        """Settle an in-flight entry: `completed`, `failed` or `outcome_unknown` (only that one
        takes `reason="execution_timeout"`)."""
        return self._run(_calls.settle(session_key, mutation_id, attempt_id, status, reason))

    def cancel(self, session_key: str, mutation_id: str, attempt_id: str, *,
               reason: Optional[str] = None) -> Entry:
        """Cancel before the router (publishes `not_executed`); `reason` may be
        `"pre_dispatch_deadline"`."""
        return self._run(_calls.cancel(session_key, mutation_id, attempt_id, reason))

    def reconcile(self, session_key: str, mutation_id: str, attempt_id: str, *, completed: bool,
                  evidence: Evidence) -> Entry:
        """Reconcile an `outcome_unknown` entry with evidence about the original attempt."""
        return self._run(_calls.reconcile(session_key, mutation_id, attempt_id, completed, evidence))

    def attach_metadata(self, session_key: str, mutation_id: str, *, id: Optional[str] = None,
                        url: Optional[str] = None, title: Optional[str] = None) -> Entry:
        """Attach host metadata (all three at once; missing or empty → `null`). Only after intent
        (409 `not_published` before)."""
        return self._run(_calls.attach_metadata(session_key, mutation_id, id, url, title))

    def fresh_attempt(self, session_key: str, mutation_id: str, attempt_id: str, *,
                      deadline_secs: Optional[int] = None) -> Entry:
        """A fresh attempt of a `not_executed` entry (never a used attempt id): in flight again, with
        a deadline as `intent`'s."""
        return self._run(_calls.fresh_attempt(session_key, mutation_id, attempt_id,
                                              check_deadline_secs(deadline_secs)))

    def _extend_once(self, op: Operation, timeout: float) -> Entry:
        """One extension of a protected write's deadline, one try of at most `timeout` seconds (the
        `Extender` tries again itself); raises on any failure."""
        call = _calls.extend_deadline(op.session_key, op.mutation_id, op.attempt_id,
                                      op.deadline_secs or DEFAULT_DEADLINE_SECS)
        response = self._http.request(call.method, call.path, timeout=min(self._timeout, timeout),
                                      **request_kwargs(call))
        return interpret(self.base_url, call, response, 1)

    def delete_session(self, session_key: str) -> None:
        """Delete a session and everything in it (204). A retried delete whose first try was taken
        (404 on the retry) counts as done."""
        self._run(_calls.delete_session(session_key))

    def batch(self, operations: Sequence[dict[str, Any]]) -> list[BatchResult]:
        """Up to 1000 operations (`outcomes_ledger.ops` builds them) in one transaction; one
        `BatchResult` per operation, in order. Failed items are returned, not raised."""
        return self._run(_calls.batch(operations))

    def mint_viewer_link(self, session_key: str, *, expires_in_secs: Optional[int] = None) -> ViewerLink:
        """A link (`/v/<token>`) that lets an end user read this one session; default 7 days, at
        most 366 days (31,622,400 s). A retry may mint a second link; both work."""
        return self._run(_calls.mint_viewer_link(session_key, expires_in_secs))

    def revoke_viewer_links(self, session_key: str) -> int:
        """Revoke every viewer link of the session; answers how many were revoked."""
        return self._run(_calls.revoke_viewer_links(session_key))

    def mutation_outcomes(self, session_key: str) -> list[dict[str, Any]]:
        """The session's published outcomes (`mutation_outcome/v1` records), oldest logical turn
        first: `GET /api/mutation-outcomes?session_id=` (docs/api.md "History"). `NotFound` for an
        unknown or expired session."""
        return self._run(_calls.mutation_outcomes(session_key))

    # Status checks ----------------------------------------------------------------

    def recover(self, *, sessions: Union[Sequence[str], Literal["all"]],
                checks: Optional[Mapping[str, StatusCheck]] = None) -> RecoverySummary:
        """Run the status check of each open unknown of `sessions` (a list of session keys, or
        `"all"`) and reconcile those it settles (README "Status checks"). `checks` maps a tool to its
        check (default: `status_checks`). Only settled unknowns (`GET /api/unknowns?state=unknown`,
        those the ledger settled at a deadline included), never a write in flight. Each check runs
        once per entry; an inconclusive answer, an exception or a refusal leaves the outcome unknown.
        Idempotent: run it again, or twice at once, and nothing more changes. Each call of a check
        gets at most `status_timeout` seconds (past it: an `error` item; a sync check's thread is
        abandoned and may still run to its end). Raises a `LedgerError` only when the open unknowns
        cannot be read, and `LedgerUnavailable` (its `summary`: the items looked at until then) as
        soon as the ledger cannot be reached during the run (after the client's usual retries): the
        run stops there, the remaining open unknowns are not looked at."""
        table = dict(self.status_checks if checks is None else checks)
        summary = RecoverySummary()
        for key in _sessions(sessions):
            after: Optional[str] = None
            while True:
                try:
                    matches, after = self._run(_calls.unknowns(key, after))
                except LedgerUnavailable as err:
                    err.summary = summary
                    raise
                for match in matches:
                    try:
                        summary.add(self._recover_one(match, table))
                    except LedgerUnavailable as err:
                        _stop(summary, match, err)
                        raise
                if after is None:
                    break
        return summary

    def _recover_one(self, match: dict[str, Any], checks: Mapping[str, StatusCheck]) -> RecoveredItem:
        session, turn, mutation, tool, recorded_at, status = _match_operation(match)

        def item(result: Any, detail: str) -> RecoveredItem:
            return RecoveredItem(session, mutation, tool, result, detail)

        check = checks.get(tool)
        if status != "outcome_unknown":
            return item("skipped", f"not a settled unknown ({status})")
        if check is None:
            return item("skipped", f"no status check for tool {tool!r}")
        try:
            attempt = _match_attempt(match) or self._attempt_id(session, mutation)
            query = UnknownOperation(session, turn, mutation, tool, attempt,
                                     idempotency_key(self._get_ledger_id(), session, mutation), recorded_at)
        except LedgerUnavailable:
            raise
        except LedgerError as err:
            return item("error", str(err))
        try:
            answer = _sync_answer(check, query, self.status_timeout)
            concluded = conclusion(query, answer)
        except Exception as err:  # noqa: BLE001 - a check's failure leaves the outcome unknown
            return item("error", f"the check raised {type(err).__name__}: {err}")
        if concluded is None:
            return item("inconclusive", describe(answer))
        completed, evidence = concluded
        try:
            self.reconcile(session, mutation, attempt, completed=completed, evidence=evidence)
        except Conflict as err:
            result, detail = _conflict_result(err, completed)
            return item(result, detail)
        except LedgerUnavailable:
            raise
        except LedgerError as err:
            return item("error", str(err))
        return item("completed" if completed else "not_accepted", evidence.reference)

    def _attempt_id(self, session_key: str, mutation_id: str) -> str:
        """The attempt id of the newest history row that has one: only for a server whose unknowns
        items do not name it (`_match_attempt`)."""
        after: Optional[str] = None
        while True:
            changes, after = self._run(_calls.history_newest(session_key, mutation_id, after))
            found = attempt_of(changes)
            if found is not None:
                return found
            if after is None:
                raise LedgerError(f"history of {mutation_id!r}: no attempt id in its history", code="no_attempt")

    def _status_after_block(self, op: Operation, check: StatusCheck) -> None:
        """A block ended unknown and its settlement is recorded: run its status check (after
        `status_delay`, up to `status_attempts` times, doubling the wait) and reconcile on a
        conclusive answer. Never raises: the outcome then stays unknown (logged)."""
        query = op.unknown_operation()
        for attempt in range(self.status_attempts):
            time.sleep(retry_wait(self.status_delay, attempt))
            try:
                answer = _sync_answer(check, query, self.status_timeout)
                concluded = conclusion(query, answer)
            except Exception as err:  # noqa: BLE001 - nothing may replace the block's exception
                log_unresolved(query, f"{type(err).__name__}: {err}")
                continue
            if concluded is None:
                log_unresolved(query, describe(answer))
                continue
            completed, evidence = concluded
            try:
                op.entry = self.reconcile(op.session_key, op.mutation_id, op.attempt_id,
                                          completed=completed, evidence=evidence)
            except LedgerError as err:
                logger.warning("outcomes_ledger: the ledger did not take the reconciliation of %r: %s",
                               op.mutation_id, err)
                return
            op.status_answer = answer
            op.outcome = "completed" if completed else "not_executed"
            return

    # The protected write ------------------------------------------------------

    def protected_write(self, *, tool: str, session_key: Optional[str] = None,
                        logical_turn_id: Optional[str] = None,
                        mutation_id: Optional[str] = None,
                        deadline_secs: Optional[int] = None,
                        status: Optional[StatusCheck] = None) -> "ProtectedWrite":
        """`with ledger.protected_write(session_key=…, logical_turn_id=…, mutation_id=…, tool=…) as op:`

        Before the block: approve + intent in one batch; if the ledger does not record them the
        block never runs (the `LedgerError` is raised). When the block returns: `completed`, or what
        it called (`op.failed()`, `op.not_executed()`). When it raises: `NotDispatched` →
        cancellation (`not_executed`), `ProviderFailed` → `failed`, a built-in `TimeoutError` →
        `outcome_unknown` with `execution_timeout`, anything else → `outcome_unknown`; the exception
        is re-raised. Session and turn default to the enclosing `ledger.turn(...)`; `mutation_id`
        defaults to a generated `op-<32 hex>`.

        Deadline (docs/api.md "Deadlines"): `deadline_secs` (1 to 604800, else `ValueError` before
        anything is sent) is sent with the intent; `None` sends none, so the server's default
        (`--in-flight-deadline-secs`, 900) applies. While the block runs, a daemon thread extends the
        deadline every third of it (`deadline_secs`, else 900 s) and stops when the block ends,
        before the settlement is sent. A failed extension never reaches the block: it is logged
        (logger `outcomes_ledger`). If this process dies, nothing extends it, and past the deadline
        the ledger settles the write `outcome_unknown` (`execution_timeout`) itself; a settlement
        this client sends after that is still taken once as the original report.

        Status check (README "Status checks"): `status=` (else `status_checks[tool]`) runs when the
        block ended unknown, once that settlement is recorded, after `status_delay` and up to
        `status_attempts` times; a conclusive answer reconciles the entry (`op.outcome` becomes
        `completed` or `not_executed`), and then the block's exception is re-raised.
        """
        s, t = _resolve_ids(session_key, logical_turn_id)
        op = Operation(s, t, mutation_id or new_id("op"), tool, new_id("att"), check_deadline_secs(deadline_secs))
        op.status_check = status
        return ProtectedWrite(self, op)

    def protect(self, *, tool: str, deadline_secs: Optional[int] = None,
                status: Optional[StatusCheck] = None) -> Callable[[F], F]:
        """Decorator: each call of the function is one protected write of `tool` in the enclosing
        `ledger.turn(...)`, with `deadline_secs` and `status` as `protected_write`'s. The mutation id is the
        call's `mutation_id=` keyword (taken out of the call unless the function has such a
        parameter) or generated. Inside, `current_write()` is the `op`."""
        check_deadline_secs(deadline_secs)

        def decorate(fn: F) -> F:
            if inspect.iscoroutinefunction(fn):
                raise TypeError("Ledger.protect decorates a sync function; use AsyncLedger.protect for an async def")
            pick = _pop_mutation_id(fn)

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                with self.protected_write(tool=tool, mutation_id=pick(kwargs), deadline_secs=deadline_secs,
                                          status=status) as op:
                    op.result = fn(*args, **kwargs)
                    return op.result

            return wrapper  # type: ignore[return-value]

        return decorate


class ProtectedWrite:
    """The context manager of `Ledger.protected_write`."""

    def __init__(self, ledger: Ledger, op: Operation) -> None:
        self._ledger = ledger
        self.op = op
        self._token: Any = None

    def __enter__(self) -> Operation:
        try:
            until = time.monotonic() + min(self._ledger.connect_budget, self._ledger.retry_total_secs)
            results = self._ledger._run(_calls.batch(self.op.start_ops()), until)
            try:
                self.op.check_start(results)
                # op.idempotency_key: the ledger's id is read once per client, before the block.
                self.op.set_ledger_id(self._ledger._get_ledger_id(until))
            except LedgerError:
                if results[1].ok:  # intent recorded, yet the block will not run: say so
                    self._ledger.cancel(self.op.session_key, self.op.mutation_id, self.op.attempt_id)
                raise
        except Exception as exc:
            mark(exc, "not_called", self.op.mutation_id)
            raise
        self._token = _write.set(self.op)
        self.op.start_extending(functools.partial(self._ledger._extend_once, self.op))
        return self.op

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> Literal[False]:
        self.op.stop_extending()
        _write.reset(self._token)
        batch, outcome = self.op.finish_ops(exc)
        if exc is not None:
            mark(exc, outcome, self.op.mutation_id)  # type: ignore[arg-type]
        try:
            self.op.check_finish(self._ledger.batch(batch))
        except LedgerError as err:
            settle_error = settle_failed(err, self.op, exc)
            if settle_error is not None:
                raise settle_error from err
            return False
        check = self._ledger._check_for(self.op)
        # Not after a cancellation or an interrupt (BaseException): those must not wait for a check;
        # recover() finds such unknowns later.
        if isinstance(exc, Exception) and outcome == "outcome_unknown" and check is not None:
            self._ledger._status_after_block(self.op, check)
            if self.op.outcome != "outcome_unknown":
                mark(exc, self.op.outcome, self.op.mutation_id)  # type: ignore[arg-type]
        return False


class AsyncLedger(_Base):
    """Async client of the host write API: the same operations, rules and retries as `Ledger`,
    each method a coroutine; `async with ledger.protected_write(...) as op:`."""

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT_SECS,
                 retry_total_secs: float = DEFAULT_RETRY_TOTAL_SECS,
                 transport: Optional[httpx.AsyncBaseTransport] = None,
                 status_delay: float = DEFAULT_STATUS_DELAY_SECS,
                 status_attempts: int = DEFAULT_STATUS_ATTEMPTS,
                 connect_budget: float = DEFAULT_CONNECT_BUDGET_SECS,
                 status_timeout: float = DEFAULT_STATUS_TIMEOUT_SECS) -> None:
        super().__init__(base_url, token, timeout=timeout, retry_total_secs=retry_total_secs,
                         status_delay=status_delay, status_attempts=status_attempts,
                         connect_budget=connect_budget, status_timeout=status_timeout)
        self._transport = transport
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}
        # The deadline extensions of protected writes go out from a thread (so that a block which
        # blocks the event loop is extended too), over a sync client of their own.
        self._extend_http: Optional[httpx.Client] = None
        self._extend_lock = threading.Lock()

    def _client(self) -> httpx.AsyncClient:
        # An httpx.AsyncClient's connections belong to one event loop; frameworks that run each
        # agent run in a new loop (`run_sync`) get a client per loop.
        loop = asyncio.get_running_loop()
        held = self._clients.get(id(loop))
        if held is None or held[0] is not loop:
            for key, (old_loop, _) in list(self._clients.items()):
                if old_loop.is_closed():
                    del self._clients[key]
            client = httpx.AsyncClient(base_url=self.base_url, headers=_headers(self._token),
                                       timeout=self._timeout, transport=self._transport)
            self._clients[id(loop)] = (loop, client)
            return client
        return held[1]

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        held = self._clients.pop(id(loop), None)
        if held is not None:
            await held[1].aclose()
        with self._extend_lock:
            extend_http, self._extend_http = self._extend_http, None
        if extend_http is not None:
            extend_http.close()

    def _extend_once(self, op: Operation, timeout: float) -> Entry:
        """See `Ledger._extend_once` (called from the extending thread, not the event loop)."""
        with self._extend_lock:
            if self._extend_http is None:
                self._extend_http = httpx.Client(base_url=self.base_url, headers=_headers(self._token),
                                                 timeout=self._timeout)
            http = self._extend_http
        call = _calls.extend_deadline(op.session_key, op.mutation_id, op.attempt_id,
                                      op.deadline_secs or DEFAULT_DEADLINE_SECS)
        response = http.request(call.method, call.path, timeout=min(self._timeout, timeout),
                                **request_kwargs(call))
        return interpret(self.base_url, call, response, 1)

    async def __aenter__(self) -> "AsyncLedger":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _run(self, call: Call[T], until: Optional[float] = None) -> T:
        """See `Ledger._run`."""
        backoff = Backoff(self.retry_total_secs if until is None else until - time.monotonic())
        attempt = 0
        while True:
            attempt += 1
            try:
                if until is None:
                    response = await self._client().request(call.method, call.path, **request_kwargs(call))
                else:
                    response = await self._request_by(call, until)
                return interpret(self.base_url, call, response, attempt)
            except (Retry, *RETRYABLE_TRANSPORT) as exc:
                wait = backoff.next_wait(exc.retry_after if isinstance(exc, Retry) else None)
                if wait is None:
                    raise exhausted(self.base_url, call, backoff, exc) from (
                        exc.cause if isinstance(exc, Retry) else exc)
                await asyncio.sleep(wait)

    async def _request_by(self, call: Call[Any], until: float) -> httpx.Response:
        """See `Ledger._request_by` (here the whole try runs under `asyncio.wait_for` too)."""
        async def send() -> httpx.Response:
            async with self._client().stream(call.method, call.path, **_timeout(self._timeout, until),
                                             **request_kwargs(call)) as streamed:
                chunks: list[bytes] = []
                async for chunk in streamed.aiter_raw():
                    chunks.append(chunk)
                return _whole(streamed, b"".join(chunks))

        try:
            return await asyncio.wait_for(send(), max(0.01, until - time.monotonic()))
        except asyncio.TimeoutError:
            raise httpx.ReadTimeout("the answer did not arrive within connect_budget") from None

    async def _get_ledger_id(self, until: Optional[float] = None) -> str:
        """See `Ledger._get_ledger_id`."""
        if self._ledger_id is None:
            ledger_id: str = await self._run(_calls.ledger_id(), until)
            self._ledger_id = ledger_id
        return self._ledger_id

    async def ledger_id(self) -> str:
        """See `Ledger.ledger_id`."""
        return await self._get_ledger_id()

    async def idempotency_key(self, session_key: str, mutation_id: str) -> str:
        """See `Ledger.idempotency_key`."""
        return idempotency_key(await self._get_ledger_id(), session_key, mutation_id)

    async def approve(self, session_key: str, logical_turn_id: str, mutation_id: str, tool: str, *,
                      commissioned_after: Optional[str] = None, traceparent: Optional[str] = None) -> Entry:
        """See `Ledger.approve`."""
        return await self._run(_calls.approve(session_key, logical_turn_id, mutation_id, tool, commissioned_after,
                                              traceparent))

    async def intent(self, session_key: str, mutation_id: str, attempt_id: str, *,
                     deadline_secs: Optional[int] = None) -> Entry:
        """See `Ledger.intent`."""
        return await self._run(_calls.intent(session_key, mutation_id, attempt_id, check_deadline_secs(deadline_secs)))

    async def extend_deadline(self, session_key: str, mutation_id: str, attempt_id: str, *,
                              deadline_secs: int) -> Entry:
        """See `Ledger.extend_deadline`."""
        return await self._run(_calls.extend_deadline(session_key, mutation_id, attempt_id, deadline_secs))

    async def settle(self, session_key: str, mutation_id: str, attempt_id: str, status: SettleStatus, *,
                     reason: Optional[str] = None) -> Entry:
        """See `Ledger.settle`."""
        return await self._run(_calls.settle(session_key, mutation_id, attempt_id, status, reason))

    async def cancel(self, session_key: str, mutation_id: str, attempt_id: str, *,
                     reason: Optional[str] = None) -> Entry:
        """See `Ledger.cancel`."""
        return await self._run(_calls.cancel(session_key, mutation_id, attempt_id, reason))

    async def reconcile(self, session_key: str, mutation_id: str, attempt_id: str, *, completed: bool,
                        evidence: Evidence) -> Entry:
        """See `Ledger.reconcile`."""
        return await self._run(_calls.reconcile(session_key, mutation_id, attempt_id, completed, evidence))

    async def attach_metadata(self, session_key: str, mutation_id: str, *, id: Optional[str] = None,
                              url: Optional[str] = None, title: Optional[str] = None) -> Entry:
        """See `Ledger.attach_metadata`."""
        return await self._run(_calls.attach_metadata(session_key, mutation_id, id, url, title))

    async def fresh_attempt(self, session_key: str, mutation_id: str, attempt_id: str, *,
                            deadline_secs: Optional[int] = None) -> Entry:
        """See `Ledger.fresh_attempt`."""
        return await self._run(_calls.fresh_attempt(session_key, mutation_id, attempt_id,
                                                    check_deadline_secs(deadline_secs)))

    async def delete_session(self, session_key: str) -> None:
        """See `Ledger.delete_session`."""
        await self._run(_calls.delete_session(session_key))

    async def batch(self, operations: Sequence[dict[str, Any]]) -> list[BatchResult]:
        """See `Ledger.batch`."""
        return await self._run(_calls.batch(operations))

    async def mint_viewer_link(self, session_key: str, *, expires_in_secs: Optional[int] = None) -> ViewerLink:
        """See `Ledger.mint_viewer_link`."""
        return await self._run(_calls.mint_viewer_link(session_key, expires_in_secs))

    async def revoke_viewer_links(self, session_key: str) -> int:
        """See `Ledger.revoke_viewer_links`."""
        return await self._run(_calls.revoke_viewer_links(session_key))

    async def mutation_outcomes(self, session_key: str) -> list[dict[str, Any]]:
        """See `Ledger.mutation_outcomes`."""
        return await self._run(_calls.mutation_outcomes(session_key))

    async def recover(self, *, sessions: Union[Sequence[str], Literal["all"]],
                      checks: Optional[Mapping[str, StatusCheck]] = None) -> RecoverySummary:
        """See `Ledger.recover` (checks may be sync or async; a sync one runs in a thread)."""
        table = dict(self.status_checks if checks is None else checks)
        summary = RecoverySummary()
        for key in _sessions(sessions):
            after: Optional[str] = None
            while True:
                try:
                    matches, after = await self._run(_calls.unknowns(key, after))
                except LedgerUnavailable as err:
                    err.summary = summary
                    raise
                for match in matches:
                    try:
                        summary.add(await self._recover_one(match, table))
                    except LedgerUnavailable as err:
                        _stop(summary, match, err)
                        raise
                if after is None:
                    break
        return summary

    async def _recover_one(self, match: dict[str, Any], checks: Mapping[str, StatusCheck]) -> RecoveredItem:
        session, turn, mutation, tool, recorded_at, status = _match_operation(match)

        def item(result: Any, detail: str) -> RecoveredItem:
            return RecoveredItem(session, mutation, tool, result, detail)

        check = checks.get(tool)
        if status != "outcome_unknown":
            return item("skipped", f"not a settled unknown ({status})")
        if check is None:
            return item("skipped", f"no status check for tool {tool!r}")
        try:
            attempt = _match_attempt(match) or await self._attempt_id(session, mutation)
            query = UnknownOperation(session, turn, mutation, tool, attempt,
                                     idempotency_key(await self._get_ledger_id(), session, mutation), recorded_at)
        except LedgerUnavailable:
            raise
        except LedgerError as err:
            return item("error", str(err))
        try:
            answer = await _async_answer(check, query, self.status_timeout)
            concluded = conclusion(query, answer)
        except Exception as err:  # noqa: BLE001 - a check's failure leaves the outcome unknown
            return item("error", f"the check raised {type(err).__name__}: {err}")
        if concluded is None:
            return item("inconclusive", describe(answer))
        completed, evidence = concluded
        try:
            await self.reconcile(session, mutation, attempt, completed=completed, evidence=evidence)
        except Conflict as err:
            result, detail = _conflict_result(err, completed)
            return item(result, detail)
        except LedgerUnavailable:
            raise
        except LedgerError as err:
            return item("error", str(err))
        return item("completed" if completed else "not_accepted", evidence.reference)

    async def _attempt_id(self, session_key: str, mutation_id: str) -> str:
        """See `Ledger._attempt_id`."""
        after: Optional[str] = None
        while True:
            changes, after = await self._run(_calls.history_newest(session_key, mutation_id, after))
            found = attempt_of(changes)
            if found is not None:
                return found
            if after is None:
                raise LedgerError(f"history of {mutation_id!r}: no attempt id in its history", code="no_attempt")

    async def _status_after_block(self, op: Operation, check: StatusCheck) -> None:
        """See `Ledger._status_after_block`."""
        query = op.unknown_operation()
        for attempt in range(self.status_attempts):
            await asyncio.sleep(retry_wait(self.status_delay, attempt))
            try:
                answer = await _async_answer(check, query, self.status_timeout)
                concluded = conclusion(query, answer)
            except Exception as err:  # noqa: BLE001 - nothing may replace the block's exception
                log_unresolved(query, f"{type(err).__name__}: {err}")
                continue
            if concluded is None:
                log_unresolved(query, describe(answer))
                continue
            completed, evidence = concluded
            try:
                op.entry = await self.reconcile(op.session_key, op.mutation_id, op.attempt_id,
                                                completed=completed, evidence=evidence)
            except LedgerError as err:
                logger.warning("outcomes_ledger: the ledger did not take the reconciliation of %r: %s",
                               op.mutation_id, err)
                return
            op.status_answer = answer
            op.outcome = "completed" if completed else "not_executed"
            return

    def protected_write(self, *, tool: str, session_key: Optional[str] = None,
                        logical_turn_id: Optional[str] = None,
                        mutation_id: Optional[str] = None,
                        deadline_secs: Optional[int] = None,
                        status: Optional[StatusCheck] = None) -> "AsyncProtectedWrite":
        """`async with ledger.protected_write(...) as op:`, the rules of `Ledger.protected_write`,
        its deadline included: the extensions go out from a daemon thread over a sync `httpx.Client`
        of their own (not `transport`), so a block that blocks the event loop is extended too."""
        s, t = _resolve_ids(session_key, logical_turn_id)
        op = Operation(s, t, mutation_id or new_id("op"), tool, new_id("att"), check_deadline_secs(deadline_secs))
        op.status_check = status
        return AsyncProtectedWrite(self, op)

    def protect(self, *, tool: str, deadline_secs: Optional[int] = None,
                status: Optional[StatusCheck] = None) -> Callable[[F], F]:
        """Decorator of an `async def`: see `Ledger.protect`."""
        check_deadline_secs(deadline_secs)

        def decorate(fn: F) -> F:
            if not inspect.iscoroutinefunction(fn):
                raise TypeError("AsyncLedger.protect decorates an async def; use Ledger.protect for a sync function")
            pick = _pop_mutation_id(fn)

            @functools.wraps(fn)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                async with self.protected_write(tool=tool, mutation_id=pick(kwargs),
                                                deadline_secs=deadline_secs, status=status) as op:
                    op.result = await fn(*args, **kwargs)
                    return op.result

            return wrapper  # type: ignore[return-value]

        return decorate


class AsyncProtectedWrite:
    """The async context manager of `AsyncLedger.protected_write`."""

    def __init__(self, ledger: AsyncLedger, op: Operation) -> None:
        self._ledger = ledger
        self.op = op
        self._token: Any = None

    async def __aenter__(self) -> Operation:
        try:
            until = time.monotonic() + min(self._ledger.connect_budget, self._ledger.retry_total_secs)
            results = await self._ledger._run(_calls.batch(self.op.start_ops()), until)
            try:
                self.op.check_start(results)
                # op.idempotency_key: the ledger's id is read once per client, before the block.
                self.op.set_ledger_id(await self._ledger._get_ledger_id(until))
            except LedgerError:
                if results[1].ok:  # intent recorded, yet the block will not run: say so
                    await self._ledger.cancel(self.op.session_key, self.op.mutation_id, self.op.attempt_id)
                raise
        except Exception as exc:
            mark(exc, "not_called", self.op.mutation_id)
            raise
        self._token = _write.set(self.op)
        self.op.start_extending(functools.partial(self._ledger._extend_once, self.op))
        return self.op

    async def __aexit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> Literal[False]:
        self.op.stop_extending()
        _write.reset(self._token)
        batch, outcome = self.op.finish_ops(exc)
        if exc is not None:
            mark(exc, outcome, self.op.mutation_id)  # type: ignore[arg-type]
        try:
            self.op.check_finish(await self._ledger.batch(batch))
        except LedgerError as err:
            settle_error = settle_failed(err, self.op, exc)
            if settle_error is not None:
                raise settle_error from err
            return False
        check = self._ledger._check_for(self.op)
        # Not after a cancellation or an interrupt (BaseException): those must not wait for a check;
        # recover() finds such unknowns later.
        if isinstance(exc, Exception) and outcome == "outcome_unknown" and check is not None:
            await self._ledger._status_after_block(self.op, check)
            if self.op.outcome != "outcome_unknown":
                mark(exc, self.op.outcome, self.op.mutation_id)  # type: ignore[arg-type]
        return False
