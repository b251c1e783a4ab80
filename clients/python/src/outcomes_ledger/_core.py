"""What the sync and async clients share: building each request, reading each answer, the retry
rule. No I/O here."""

from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Generic, Optional, TypeVar
from urllib.parse import quote

import httpx

from ._types import BatchResult, Entry, ErrorDetail
from .errors import (
    Conflict,
    InvalidRequest,
    LedgerConnectionError,
    LedgerError,
    LedgerUnavailable,
    NotFound,
    Unauthorized,
    UnexpectedResponse,
)

HOST = "/api/host"


def seg(value: str) -> str:
    """One path segment, percent-encoded once (docs/api.md: `/api/sessions/a%2Fb/...`)."""
    return quote(value, safe="")


def mutation_path(session_key: str, mutation_id: str, tail: str = "") -> str:
    path = f"{HOST}/sessions/{seg(session_key)}/mutations/{seg(mutation_id)}"
    return f"{path}/{tail}" if tail else path


@dataclass(frozen=True)
class Requested:
    """The change a write asks for. A 409 whose `current` already shows it (same `ledger_status`,
    `attempt_id` and `reason`, and for an approval the same turn) is a redelivery of a write the
    ledger already took: success, whatever its code (README "The protected write")."""

    ledger_status: str
    attempt_id: Optional[str]
    reason: Optional[str] = None
    logical_turn_id: Optional[str] = None

    def shown_by(self, current: Optional[Entry]) -> bool:
        if current is None:
            return False
        if self.logical_turn_id is not None and current.logical_turn_id != self.logical_turn_id:
            return False
        return (
            current.ledger_status == self.ledger_status
            and current.attempt_id == self.attempt_id
            and (current.reason or None) == self.reason
        )


def requested_for_batch_op(op: dict[str, Any]) -> Optional[Requested]:
    """The requested change of one batch operation (same rule as the single calls)."""
    kind = op.get("op")
    attempt = op.get("attempt_id")
    if kind == "approve":
        return Requested("approved", None, None, op.get("logical_turn_id"))
    if kind == "intent" or kind == "attempt":
        return Requested("execution_started", attempt)
    if kind == "settle":
        return Requested(str(op.get("status")), attempt, op.get("reason"))
    if kind == "cancel":
        return Requested("approved", attempt, op.get("reason"))
    if kind == "reconcile":
        # completed: false means the provider did not take it: the entry publishes not_executed
        # (ledger status approved, intent recorded).
        return Requested("completed" if op.get("completed") else "approved", attempt)
    return None


T = TypeVar("T")


@dataclass
class Call(Generic[T]):
    """One HTTP request of the host API and how to read its success (`parse`)."""

    operation: str
    method: str
    path: str
    body: Any
    parse: Callable[[Any], T]
    has_body: bool = True
    requested: Optional[Requested] = None
    # A retried DELETE of a session whose first try was taken answers 404: success then.
    retried_404_is_success: bool = False
    batch_ops: Optional[list[dict[str, Any]]] = None


class Retry(Exception):
    """Internal: the answer says to try again (503/429), after `retry_after` seconds if given."""

    def __init__(self, cause: LedgerError, retry_after: Optional[float]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.retry_after = retry_after


RETRYABLE_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
"""Connection refused or reset, timeouts, a connection closed mid-answer: the request may or may
not have reached the ledger; sending it again is safe because the ledger refuses redelivery."""


class Backoff:
    """Exponential backoff with full jitter, bounded in total time.

    Waits `uniform(0, min(cap, base * 2**n))` seconds before try n+1, cut so that the try has
    `LAST_TRY_SECS` of `total_secs` (counted from the first try) left (so the last try is made as
    the time runs out, never early); or the server's `Retry-After` (plus up to 10% jitter) when it
    sent one, giving up when that would end past `total_secs`. Gives up when less than
    `LAST_TRY_SECS` is left.
    """

    #: What a last try is given at least (0.1 s): one that would start with less is not made.
    LAST_TRY_SECS = 0.1

    def __init__(self, total_secs: float, base: float = 0.1, cap: float = 2.0) -> None:
        self.total_secs = total_secs
        self.base = base
        self.cap = cap
        self.started = time.monotonic()
        self.tries = 0

    def next_wait(self, retry_after: Optional[float]) -> Optional[float]:
        self.tries += 1
        left = self.total_secs - (time.monotonic() - self.started)
        if retry_after is not None:
            wait = retry_after * (1 + random.uniform(0, 0.1))
            return wait if wait <= left else None
        if left <= self.LAST_TRY_SECS:
            return None
        wait = random.uniform(0, min(self.cap, self.base * (2 ** (self.tries - 1))))
        return min(max(wait, 0.01), left - self.LAST_TRY_SECS)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def exhausted(base_url: str, call: Call[Any], backoff: Backoff, last: BaseException) -> LedgerUnavailable:
    cause = last.cause if isinstance(last, Retry) else last
    tries = f"{backoff.tries} tr{'y' if backoff.tries == 1 else 'ies'} in {backoff.elapsed():.1f} s"
    err: LedgerUnavailable
    if isinstance(cause, LedgerError):
        err = LedgerUnavailable(
            f"the ledger at {base_url} did not take {call.operation} after {tries}; last: {cause.message}",
            status=cause.status, code=cause.code,
        )
    else:
        what = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        err = LedgerConnectionError(
            f"no answer from the ledger at {base_url} for {call.operation} after {tries}; last: {what}",
            status=None, code="connection_failed",
        )
    err.tries = backoff.tries
    return err


def request_kwargs(call: Call[Any]) -> dict[str, Any]:
    if call.body is None and not call.has_body:
        return {}
    content = json.dumps(call.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return {"content": content, "headers": {"Content-Type": "application/json"}}


def _retry_after(response: httpx.Response) -> Optional[float]:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return None


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


def _not_json(base_url: str, call: Call[Any], response: httpx.Response, ctype: str, why: str) -> UnexpectedResponse:
    text = response.text
    excerpt = text[:200]
    title = _TITLE.search(text)
    shown = f"page titled {title.group(1).strip()[:120]!r}" if title else f"body {excerpt[:120]!r}"
    return UnexpectedResponse(
        f"{call.operation}: the server at {base_url} answered HTTP {response.status_code} "
        f"with {ctype or 'no Content-Type'} ({shown}), {why}: this is not the ledger's JSON "
        "answer (a proxy's or another service's page?); nothing is known to be recorded",
        status=response.status_code,
        content_type=ctype,
        body_excerpt=excerpt,
    )


def interpret(base_url: str, call: Call[T], response: httpx.Response, attempt: int) -> T:
    """Read one answer: return the parsed success, raise `Retry`, or raise the `LedgerError`."""
    status = response.status_code
    if status == 204:
        try:
            return call.parse(None)
        except (KeyError, TypeError, ValueError):  # the ledger answers this call with a body
            raise _not_json(base_url, call, response, response.headers.get("Content-Type", ""),
                            "no body where the ledger answers one") from None
    ctype = response.headers.get("Content-Type", "")
    media = ctype.split(";")[0].strip().lower()
    if media != "application/json":
        err = _not_json(base_url, call, response, ctype, "not JSON")
        if status in (429, 503):
            raise Retry(err, _retry_after(response))
        raise err
    try:
        data = response.json()
    except ValueError:
        err = _not_json(base_url, call, response, ctype, "which does not parse as JSON")
        if status in (429, 503):
            raise Retry(err, _retry_after(response))
        raise err from None
    if 200 <= status < 300:
        try:
            return call.parse(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise _not_json(base_url, call, response, ctype, f"whose shape is not the documented one ({exc})") from None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict) or "code" not in error:
        raise _not_json(base_url, call, response, ctype, "without the ledger's error body")
    detail = ErrorDetail.from_json(error)
    message = f"{call.operation}: {detail.message}"
    if status == 401:
        raise make(Unauthorized, (
            f"{call.operation}: the ledger refused the host token (check the token given to the "
            f"client: the server's --host-token / OUTCOMES_HOST_TOKEN): {detail.message}"), status, detail)
    if status == 429 and detail.code == "too_many_failures":
        raise make(Unauthorized, (
            f"{call.operation}: the ledger refuses this address after repeated failed credentials "
            f"(a right token is never refused, so the host token is wrong): {detail.message}"), status, detail)
    if status in (429, 503):
        raise Retry(make(LedgerError, message, status, detail), _retry_after(response))
    if status == 409:
        if call.requested is not None and call.requested.shown_by(detail.current):
            return call.parse(detail.current)
        raise make(Conflict, message, status, detail)
    if status == 404:
        if call.retried_404_is_success and attempt > 1:
            return call.parse(None)
        raise make(NotFound, message, status, detail)
    if status in (400, 413, 415, 422):
        raise make(InvalidRequest, message, status, detail)
    raise make(LedgerError, message, status, detail)


def make(cls: type[LedgerError], message: str, status: int, detail: ErrorDetail) -> LedgerError:
    return cls(message, status=status, code=detail.code, field=detail.field, current=detail.current)


def parse_batch(ops: list[dict[str, Any]]) -> Callable[[Any], list[BatchResult]]:
    def parse(data: Any) -> list[BatchResult]:
        results = data["results"]
        if not isinstance(results, list) or len(results) != len(ops):
            raise ValueError(f"{len(ops)} results expected")
        out: list[BatchResult] = []
        for op, item in zip(ops, results):
            status = int(item["status"])
            entry = item.get("entry")
            error = item.get("error")
            detail = ErrorDetail.from_json(error) if isinstance(error, dict) else None
            if detail is not None and status == 409:
                requested = requested_for_batch_op(op)
                if requested is not None and requested.shown_by(detail.current):
                    out.append(BatchResult(200, detail.current, None, redelivered=True))
                    continue
            out.append(
                BatchResult(
                    status,
                    Entry.from_json(entry) if isinstance(entry, dict) else None,
                    detail,
                )
            )
        return out

    return parse


def batch_error(result: BatchResult, operation: str) -> LedgerError:
    """The exception the single call would have raised for a failed batch result."""
    detail = result.error
    assert detail is not None
    status = result.status
    message = f"{operation}: {detail.message}"
    if status == 409:
        return make(Conflict, message, status, detail)
    if status == 404:
        return make(NotFound, message, status, detail)
    if status in (400, 413, 415, 422):
        return make(InvalidRequest, message, status, detail)
    if status == 401:
        return make(Unauthorized, message, status, detail)
    return make(LedgerError, message, status, detail)
