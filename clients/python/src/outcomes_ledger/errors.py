"""Exceptions of the client, and the two a protected block raises to state its outcome.

Every refusal of the ledger is a `LedgerError` carrying the JSON error's `code`, `message`,
`field` and `current` (docs/api.md "Errors"). A subclass names the cause:

- `Unauthorized`: the host token was refused (401, or 429 `too_many_failures`, which only failed
  credentials cause: docs/api.md "Limits").
- `InvalidRequest`: 400, 413, 415 or 422; `field` names the field at fault (an id over 256 bytes:
  `code` `invalid_field`, `field` `mutation_id`).
- `NotFound`: 404 (`session_not_found`, `session_expired`, `mutation_not_found`).
- `Conflict`: 409, a refused transition; `current` is the entry's unchanged state.
- `LedgerUnavailable`: the ledger could not be reached, or kept answering 503/429, for the whole
  retry budget; nothing is known to be recorded by the last try.
- `UnexpectedResponse`: the answer is not the ledger's JSON (an HTML page from a proxy, another
  service on that address).
"""

from __future__ import annotations

from typing import Optional

from ._types import Entry


class LedgerError(Exception):
    """A request to the ledger did not succeed. `status` is the HTTP status (0 when there was no
    answer); `code`, `field`, `current` come from the JSON error body when there was one."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
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
    """The ledger could not be reached (connection refused, reset, timed out) or answered 503/429
    on every try within the client's retry budget (`retry_total_secs`)."""


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
