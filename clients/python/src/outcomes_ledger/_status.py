"""Status checks (README "Status checks"): an unknown outcome resolved by the provider's own record of
the operation, without a person. What the sync and async clients share: the answers a check gives,
the operation it is asked about, the evidence a conclusive answer becomes, the summary of `recover`.
No I/O here."""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Literal, Optional, Union

from ._types import Evidence

logger = logging.getLogger("outcomes_ledger")

DEFAULT_STATUS_DELAY_SECS = 1.0
"""How long after a protected block ended unknown its status check first runs (the provider may need
a moment to record what it did); each further try waits twice as long as the one before."""

DEFAULT_STATUS_ATTEMPTS = 3
"""How many times the check runs after a block ended unknown while it answers `Inconclusive` or raises
(1 s, then 2 s, then 4 s later with the defaults: about 7 s at most)."""

DEFAULT_STATUS_TIMEOUT_SECS = 30.0
"""The longest one call of a status check may take: past it that try counts as an error (the outcome
stays unknown unless a later try settles it)."""

MAX_STATUS_SECS = 3600.0
"""The longest `status_delay` / `status_timeout` the clients take (1 hour)."""


def check_status_options(delay: Any, attempts: Any, timeout: Any) -> None:
    """`ValueError` naming the option unless `status_attempts` is an integer >= 1 and `status_delay`
    (>= 0) / `status_timeout` (> 0) are finite numbers of seconds of at most 1 hour."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"status_attempts is an integer of at least 1, not {attempts!r}")
    for name, value, low_ok in (("status_delay", delay, True), ("status_timeout", timeout, False)):
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or value < 0 or (value == 0 and not low_ok) or value > MAX_STATUS_SECS):
            low = "at least 0" if low_ok else "above 0"
            raise ValueError(f"{name} is a finite number of seconds, {low} and at most 3600 (1 hour), not {value!r}")


class StatusTimeout(Exception):
    """A call of a status check did not answer within `status_timeout` (that try counts as an error)."""


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def check_observed_at(value: Any) -> Union[str, datetime, None]:
    """An answer's `observed_at` as given if it is `None`, a timezone-aware `datetime` or an RFC 3339
    string; `TypeError` otherwise (an invalid answer: the outcome stays unknown)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise TypeError(f"observed_at is a timezone-aware datetime or an RFC 3339 string, not the naive {value!r}")
        return value
    if isinstance(value, str) and _RFC3339.match(value):
        try:
            datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
        except ValueError:
            pass
        else:
            return value
    raise TypeError(f"observed_at is a timezone-aware datetime or an RFC 3339 string, not {value!r}")


@dataclass(frozen=True)
class Completed:
    """The provider's own record of this operation says it took effect: `reference` is the provider's
    id of what it did (a charge id, an issue number). `observed_at` is when the provider said so (RFC
    3339 or a timezone-aware `datetime`); `None`: the host's clock when the answer came."""

    reference: str
    observed_at: Union[str, datetime, None] = None


@dataclass(frozen=True)
class NotAccepted:
    """The provider stated explicitly that it did not accept this operation (its key or reference):
    the ledger then publishes `not_executed`. Only from such a statement: a search that found nothing
    is `Inconclusive`."""

    reference: str
    observed_at: Union[str, datetime, None] = None


@dataclass(frozen=True)
class Inconclusive:
    """The provider could not tell (down, a search without the operation, an answer not bound to it):
    the outcome stays unknown for a person, never a guess. `why` is shown in the client's log and
    `recover`'s summary."""

    why: str
    observed_at: Union[str, datetime, None] = None


StatusAnswer = Union[Completed, NotAccepted, Inconclusive]


@dataclass(frozen=True)
class UnknownOperation:
    """What a status check is asked about: one operation whose outcome is unknown. Hand
    `idempotency_key` (or your own reference derived from `mutation_id`) to the provider's status
    query; `recorded_at` is when its intent was recorded (RFC 3339; the host's clock right after a
    block, the ledger's in `recover`)."""

    session_key: str
    logical_turn_id: str
    mutation_id: str
    tool: str
    attempt_id: str
    idempotency_key: str
    recorded_at: str


StatusCheck = Callable[[UnknownOperation], Union[StatusAnswer, Awaitable[StatusAnswer]]]
"""A status check: given the operation, answers `Completed`, `NotAccepted` or `Inconclusive` (or an
awaitable of one: sync and async checks both work with both clients)."""


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def conclusion(op: UnknownOperation, answer: Any) -> Optional[tuple[bool, Evidence]]:
    """`(completed, evidence)` for a conclusive answer, `None` for an inconclusive one; `TypeError` for
    anything else (an error of the check: the outcome stays unknown)."""
    if isinstance(answer, Inconclusive):
        return None
    if not isinstance(answer, (Completed, NotAccepted)):
        raise TypeError(f"a status check answers Completed, NotAccepted or Inconclusive, not {answer!r}")
    if not isinstance(answer.reference, str) or not answer.reference.strip():
        raise TypeError(f"{type(answer).__name__}.reference is the provider's non-blank reference, not {answer.reference!r}")
    observed_at = check_observed_at(answer.observed_at)
    completed = isinstance(answer, Completed)
    evidence = Evidence(
        source=f"status:{op.tool}",
        reference=answer.reference,
        observed_at=observed_at if observed_at is not None else now_rfc3339(),
        provider_status="completed" if completed else "not_accepted",
    )
    return completed, evidence


RecoveryResult = Literal["completed", "not_accepted", "inconclusive", "error", "skipped"]


@dataclass(frozen=True)
class RecoveredItem:
    """One open unknown `recover` looked at: `result` is `completed` / `not_accepted` (reconciled, or
    found reconciled so by a concurrent run), `inconclusive`, `error` (the check raised, answered
    something else, or the ledger refused the reconciliation) or `skipped` (no check for its tool, or
    settled otherwise meanwhile); `detail` says why."""

    session_key: str
    mutation_id: str
    tool: str
    result: RecoveryResult
    detail: str = ""


@dataclass
class RecoverySummary:
    """What `recover` did: counts by result and each item."""

    completed: int = 0
    not_accepted: int = 0
    inconclusive: int = 0
    errors: int = 0
    skipped: int = 0
    items: list[RecoveredItem] = field(default_factory=list)

    def add(self, item: RecoveredItem) -> None:
        self.items.append(item)
        if item.result == "completed":
            self.completed += 1
        elif item.result == "not_accepted":
            self.not_accepted += 1
        elif item.result == "inconclusive":
            self.inconclusive += 1
        elif item.result == "error":
            self.errors += 1
        else:
            self.skipped += 1

    def counts(self) -> dict[str, int]:
        return {"completed": self.completed, "not_accepted": self.not_accepted,
                "inconclusive": self.inconclusive, "errors": self.errors, "skipped": self.skipped}

    def to_json(self) -> dict[str, Any]:
        return {**self.counts(), "items": [
            {"session_key": i.session_key, "mutation_id": i.mutation_id, "tool": i.tool,
             "result": i.result, "detail": i.detail} for i in self.items]}

    def __str__(self) -> str:
        return (f"reconciled completed: {self.completed}, reconciled not_accepted: {self.not_accepted}, "
                f"inconclusive: {self.inconclusive}, errors: {self.errors}, skipped: {self.skipped}")


def describe(answer: Any) -> str:
    if isinstance(answer, Inconclusive):
        return answer.why
    if isinstance(answer, (Completed, NotAccepted)):
        return answer.reference
    return repr(answer)


def attempt_of(changes: list[Any]) -> Optional[str]:
    """The attempt id of the newest history row that has one (the settlement of the unknown)."""
    for change in changes:
        if isinstance(change, dict) and isinstance(change.get("attempt_id"), str) and change["attempt_id"]:
            return str(change["attempt_id"])
    return None


def retry_wait(delay: float, attempt: int) -> float:
    """The wait before try `attempt` (0-based) of a check after a block: `delay`, then doubling."""
    return float(delay * 2.0 ** attempt)


def log_unresolved(op: UnknownOperation, why: str) -> None:
    logger.warning("outcomes_ledger: the status check of operation %r (%s) was not conclusive; the "
                   "outcome stays unknown for a person: %s", op.mutation_id, op.tool, why)
