"""Exceptions of the client, and the two a protected block raises to state its outcome.

Every refusal of the ledger is a `LedgerError` carrying the JSON error's `code`, `message`,
`field` and `current` (docs/api.md "Errors"). A subclass names the cause:

- `Unauthorized`: the host token was refused (401, or 429 `too_many_failures`, which only failed
  credentials cause: docs/api.md "Limits").
- `InvalidRequest`: 400, 413, 415 or 422; `field` names the field at fault (an id over 256 bytes:
  `code` `invalid_field`, `field` `mutation_id`).
- `NotFound`: 404 (`session_not_found`, `session_expired`, `mutation_not_found`).
- `Conflict`: 409, a refused transition; `current` is the entry's unchanged state.
- `LedgerUnavailable`: the ledger kept answering 503/429 for the whole retry budget (`code` is
  its last code, e.g. `busy`); `LedgerConnectionError`, its subclass: no answer at all (connection
  refused or reset, timed out), `code` `connection_failed`, `status` `None`.
- `LedgerSettleError`: the block of a protected write returned, but its settlement could not be
  recorded (`code` `settle_failed`): the entry stays in flight, published `outcome_unknown`.
- `UnexpectedResponse`: the answer is not the ledger's JSON (an HTML page from a proxy, another
  service on that address, a 204 or another service's JSON where the ledger answers an entry).

`OutsideTurn` is the developer's error of a protected tool called outside a turn (the agent run with
the framework's own runner instead of the adapter's `run_turn`): it always reaches the developer, never
the model.
"""

from __future__ import annotations

from typing import Any, Optional

from ._types import Entry


class LedgerError(Exception):
    """A request to the ledger did not succeed. `status` is the HTTP status (`None` when there was
    no answer); `code`, `field`, `current` come from the JSON error body when there was one."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: str = "error",
        field: Optional[str] = None,
        current: Optional[Entry] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field
        self.current = current

    def __str__(self) -> str:
        parts = [self.message]
        if self.status:
            parts.append(f"(HTTP {self.status} {self.code}")
            parts[-1] += f", field {self.field})" if self.field else ")"
        return " ".join(parts)


class Unauthorized(LedgerError):
    """The host token was refused: check the token the client was given (the server's
    `--host-token` / `OUTCOMES_HOST_TOKEN`, docs/api.md "Host write API")."""


class InvalidRequest(LedgerError):
    """400, 413, 415 or 422: the request breaks a rule; `field` names the field at fault."""


class NotFound(LedgerError):
    """404: unknown or expired session, unknown mutation."""


class Conflict(LedgerError):
    """409: the ledger refused the transition; `current` is the entry's unchanged state."""


class LedgerUnavailable(LedgerError):
    """The ledger answered 503/429 on every try within the client's retry budget
    (`retry_total_secs`), or could not be reached at all (`LedgerConnectionError`). `tries` is how
    many requests were sent. Raised by `recover()` when the ledger goes away during the run: then
    `summary` is the `RecoverySummary` of the items looked at until then (the one it stopped at is
    an `error` item; the remaining open unknowns were not looked at)."""

    tries: int = 0
    summary: Any = None


class LedgerConnectionError(LedgerUnavailable):
    """No answer from the ledger after every retry (connection refused or reset, a request that
    timed out): `code` `connection_failed`, `status` `None`; `__cause__` is the last network error."""


class LedgerSettleError(LedgerError):
    """The block of a protected write returned, but its settlement could not be recorded (the
    ledger stayed down past the retries, or refused it): `code` `settle_failed`. The entry stays
    `execution_started`, which the ledger publishes as `outcome_unknown`: the side effect may well
    have happened, so do not run it again; reconcile the entry with `attempt_id` once its outcome
    is known. `result` is what the block (a `protect`-decorated function) returned, `intended` the
    outcome that was not recorded; `__cause__` the settlement's own error."""

    def __init__(self, cause: LedgerError, *, mutation_id: str, attempt_id: str, intended: str,
                 result: Any = None) -> None:
        super().__init__(
            f"the block of mutation {mutation_id!r} (attempt {attempt_id!r}) returned, but its settlement "
            f"({intended}) could not be recorded: {cause.message}. The entry stays in flight (published "
            "outcome_unknown); do not run it again, reconcile it with this attempt id",
            status=cause.status, code="settle_failed", field=cause.field, current=cause.current,
        )
        self.mutation_id = mutation_id
        self.attempt_id = attempt_id
        self.intended = intended
        self.result = result


class UnexpectedResponse(LedgerError):
    """The server answered something that is not the ledger's JSON, e.g. a proxy's HTML error page.
    `content_type` and `body_excerpt` (first 200 characters) say what came back."""

    def __init__(self, message: str, *, status: int, content_type: str, body_excerpt: str) -> None:
        super().__init__(message, status=status, code="unexpected_response")
        self.content_type = content_type
        self.body_excerpt = body_excerpt


class NotDispatched(Exception):
    """Raise inside a protected write when the write was provably never sent to the provider (a
    deadline passed before dispatch, a check refused it): the entry is cancelled and publishes
    `not_executed`. `reason` may be `"pre_dispatch_deadline"`. The exception is re-raised."""

    def __init__(self, message: str = "the write was not dispatched", *, reason: Optional[str] = None):
        super().__init__(message)
        self.reason = reason


class ProviderFailed(Exception):
    """Raise inside a protected write when the provider answered that the write failed (a refusal
    that proves nothing was done): the entry settles `failed`. The exception is re-raised."""


class OutsideTurn(RuntimeError):
    """A protected tool was called outside a ledger turn: the agent was run without the adapter's
    `run_turn(...)` (e.g. plain `Runner.run` / `agent.run`) and not inside `ledger.turn(...)`. Nothing
    was recorded and the tool did not run. The adapters let this error end the run (it is never
    turned into a message for the model)."""
