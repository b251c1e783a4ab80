"""`Ledger` (sync) and `AsyncLedger` (async): the host write API (docs/api.md "Host write API")."""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import time
from typing import Any, Callable, Literal, Optional, Sequence, TypeVar

import httpx

from . import _calls
from ._core import RETRYABLE_TRANSPORT, Backoff, Call, Retry, exhausted, interpret, request_kwargs
from ._deadline import DEFAULT_DEADLINE_SECS, check_deadline_secs
from ._protected import Operation, TurnScope, _write, current_turn, mark, new_id, settle_failed
from ._types import BatchResult, Entry, Evidence, SettleStatus, ViewerLink
from .errors import LedgerError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_TIMEOUT_SECS = 10.0
DEFAULT_RETRY_TOTAL_SECS = 30.0


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


class _Base:
    def __init__(self, base_url: str, token: str, *, timeout: float, retry_total_secs: float) -> None:
        if not base_url:
            raise ValueError("base_url is the ledger server's URL, e.g. http://127.0.0.1:3000")
        if not token:
            raise ValueError("token is the host token (the server's OUTCOMES_HOST_TOKEN)")
        self.base_url = base_url.rstrip("/")
        self.retry_total_secs = retry_total_secs
        self._timeout = timeout
        self._token = token

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
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT_SECS,
                 retry_total_secs: float = DEFAULT_RETRY_TOTAL_SECS,
                 transport: Optional[httpx.BaseTransport] = None) -> None:
        super().__init__(base_url, token, timeout=timeout, retry_total_secs=retry_total_secs)
        self._http = httpx.Client(base_url=self.base_url, headers=_headers(token), timeout=timeout,
                                  transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _run(self, call: Call[T]) -> T:
        backoff = Backoff(self.retry_total_secs)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(call.method, call.path, **request_kwargs(call))
                return interpret(self.base_url, call, response, attempt)
            except (Retry, *RETRYABLE_TRANSPORT) as exc:
                wait = backoff.next_wait(exc.retry_after if isinstance(exc, Retry) else None)
                if wait is None:
                    raise exhausted(self.base_url, call, backoff, exc) from (
                        exc.cause if isinstance(exc, Retry) else exc)
                time.sleep(wait)

    # One method per host operation ----------------------------------------------

    def approve(self, session_key: str, logical_turn_id: str, mutation_id: str, tool: str, *,
                commissioned_after: Optional[str] = None) -> Entry:
        """Approve a mutation (201): `POST /api/host/sessions/{session_key}/mutations`. Ids are
        non-empty, at most 256 bytes, no control characters (422 `invalid_field` otherwise)."""
        return self._run(_calls.approve(session_key, logical_turn_id, mutation_id, tool, commissioned_after))

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

    # The protected write ------------------------------------------------------

    def protected_write(self, *, tool: str, session_key: Optional[str] = None,
                        logical_turn_id: Optional[str] = None,
                        mutation_id: Optional[str] = None,
                        deadline_secs: Optional[int] = None) -> "ProtectedWrite":
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
        """
        s, t = _resolve_ids(session_key, logical_turn_id)
        return ProtectedWrite(self, Operation(s, t, mutation_id or new_id("op"), tool, new_id("att"),
                                              check_deadline_secs(deadline_secs)))

    def protect(self, *, tool: str, deadline_secs: Optional[int] = None) -> Callable[[F], F]:
        """Decorator: each call of the function is one protected write of `tool` in the enclosing
        `ledger.turn(...)`, with `deadline_secs` as `protected_write`'s. The mutation id is the
        call's `mutation_id=` keyword (taken out of the call unless the function has such a
        parameter) or generated. Inside, `current_write()` is the `op`."""
        check_deadline_secs(deadline_secs)

        def decorate(fn: F) -> F:
            if inspect.iscoroutinefunction(fn):
                raise TypeError("Ledger.protect decorates a sync function; use AsyncLedger.protect for an async def")
            pick = _pop_mutation_id(fn)

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                with self.protected_write(tool=tool, mutation_id=pick(kwargs), deadline_secs=deadline_secs) as op:
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
            results = self._ledger.batch(self.op.start_ops())
            try:
                self.op.check_start(results)
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


class AsyncLedger(_Base):
    """Async client of the host write API: the same operations, rules and retries as `Ledger`,
    each method a coroutine; `async with ledger.protected_write(...) as op:`."""

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT_SECS,
                 retry_total_secs: float = DEFAULT_RETRY_TOTAL_SECS,
                 transport: Optional[httpx.AsyncBaseTransport] = None) -> None:
        super().__init__(base_url, token, timeout=timeout, retry_total_secs=retry_total_secs)
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

    async def _run(self, call: Call[T]) -> T:
        backoff = Backoff(self.retry_total_secs)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._client().request(call.method, call.path, **request_kwargs(call))
                return interpret(self.base_url, call, response, attempt)
            except (Retry, *RETRYABLE_TRANSPORT) as exc:
                wait = backoff.next_wait(exc.retry_after if isinstance(exc, Retry) else None)
                if wait is None:
                    raise exhausted(self.base_url, call, backoff, exc) from (
                        exc.cause if isinstance(exc, Retry) else exc)
                await asyncio.sleep(wait)

    async def approve(self, session_key: str, logical_turn_id: str, mutation_id: str, tool: str, *,
                      commissioned_after: Optional[str] = None) -> Entry:
        """See `Ledger.approve`."""
        return await self._run(_calls.approve(session_key, logical_turn_id, mutation_id, tool, commissioned_after))

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

    def protected_write(self, *, tool: str, session_key: Optional[str] = None,
                        logical_turn_id: Optional[str] = None,
                        mutation_id: Optional[str] = None,
                        deadline_secs: Optional[int] = None) -> "AsyncProtectedWrite":
        """`async with ledger.protected_write(...) as op:`, the rules of `Ledger.protected_write`,
        its deadline included: the extensions go out from a daemon thread over a sync `httpx.Client`
        of their own (not `transport`), so a block that blocks the event loop is extended too."""
        s, t = _resolve_ids(session_key, logical_turn_id)
        return AsyncProtectedWrite(self, Operation(s, t, mutation_id or new_id("op"), tool, new_id("att"),
                                                   check_deadline_secs(deadline_secs)))

    def protect(self, *, tool: str, deadline_secs: Optional[int] = None) -> Callable[[F], F]:
        """Decorator of an `async def`: see `Ledger.protect`."""
        check_deadline_secs(deadline_secs)

        def decorate(fn: F) -> F:
            if not inspect.iscoroutinefunction(fn):
                raise TypeError("AsyncLedger.protect decorates an async def; use Ledger.protect for a sync function")
            pick = _pop_mutation_id(fn)

            @functools.wraps(fn)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                async with self.protected_write(tool=tool, mutation_id=pick(kwargs),
                                                deadline_secs=deadline_secs) as op:
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
            results = await self._ledger.batch(self.op.start_ops())
            try:
                self.op.check_start(results)
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
