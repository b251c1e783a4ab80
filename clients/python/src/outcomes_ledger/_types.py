"""Typed answers of the host write API (docs/api.md "Host write API")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Optional

LedgerStatus = Literal["approved", "execution_started", "completed", "failed", "outcome_unknown"]
"""Ledger status of an entry (docs/ledger.md "Entries and their states")."""

PublishedStatus = Literal["completed", "failed", "not_executed", "outcome_unknown"]
"""Status of the published `mutation_outcome/v1` record."""

SettleStatus = Literal["completed", "failed", "outcome_unknown"]


@dataclass(frozen=True)
class Entry:
    """The ledger state of one entry, as every successful host write answers it, and as `current`
    on a 409 refusal: `{"session_key", "logical_turn_id", "mutation_id", "ledger_status",
    "intent_recorded", "attempt_id", "revision", "reason"?}` (docs/api.md "Host write API").

    `revision` is `None` until intent is recorded; `reason` is `"execution_timeout"` or
    `"pre_dispatch_deadline"` where the entry has one.
    """

    session_key: str
    logical_turn_id: str
    mutation_id: str
    ledger_status: LedgerStatus
    intent_recorded: bool
    attempt_id: Optional[str]
    revision: Optional[int]
    reason: Optional[str] = None

    @property
    def published_status(self) -> Optional[PublishedStatus]:
        """What the entry publishes (docs/ledger.md): `None` for an approval never started (no
        record), `not_executed` for a cancelled one (`approved` with intent recorded),
        `outcome_unknown` while in flight (`execution_started`), else the ledger status."""
        if self.ledger_status == "approved":
            return "not_executed" if self.intent_recorded else None
        if self.ledger_status == "execution_started":
            return "outcome_unknown"
        return self.ledger_status

    @classmethod
    def from_json(cls, data: Any) -> "Entry":
        if not isinstance(data, dict):
            raise TypeError(f"an entry is a JSON object, got {type(data).__name__}")
        return cls(
            session_key=data["session_key"],
            logical_turn_id=data["logical_turn_id"],
            mutation_id=data["mutation_id"],
            ledger_status=data["ledger_status"],
            intent_recorded=bool(data["intent_recorded"]),
            attempt_id=data.get("attempt_id"),
            revision=data.get("revision"),
            reason=data.get("reason"),
        )


@dataclass(frozen=True)
class Evidence:
    """Evidence about the original attempt for a reconciliation (docs/api.md "Host write API"):
    `source`, `reference` and `observed_at` (RFC 3339, or a timezone-aware `datetime`) must be
    non-blank; `provider_status`, when given, must be conclusive: `"completed"` with
    `completed=True`, `"not_accepted"` with `completed=False` (anything else is a 422)."""

    source: str
    reference: str
    observed_at: str | datetime
    provider_status: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        observed = self.observed_at
        if isinstance(observed, datetime):
            if observed.tzinfo is None:
                raise ValueError("evidence.observed_at needs a timezone (RFC 3339)")
            observed = observed.isoformat()
        body: dict[str, Any] = {
            "source": self.source,
            "reference": self.reference,
            "observed_at": observed,
        }
        if self.provider_status is not None:
            body["provider_status"] = self.provider_status
        return body


@dataclass(frozen=True)
class ViewerLink:
    """A minted viewer link: `url` is relative to the server (`/v/<token>`), valid until
    `expires_at` (RFC 3339 UTC). docs/api.md "Host write API", docs/access.md "Viewer links"."""

    url: str
    expires_at: str


@dataclass(frozen=True)
class ErrorDetail:
    """One JSON error: `{"code", "message", "field"?, "current"?}` (docs/api.md)."""

    code: str
    message: str
    field: Optional[str] = None
    current: Optional[Entry] = None

    @classmethod
    def from_json(cls, data: Any) -> "ErrorDetail":
        current = data.get("current")
        return cls(
            code=str(data.get("code")),
            message=str(data.get("message", "")),
            field=data.get("field"),
            current=Entry.from_json(current) if isinstance(current, dict) else None,
        )


@dataclass(frozen=True)
class BatchResult:
    """One result of `batch()`, in the order of the operations: `status` is the HTTP status the
    single call would have answered; `entry` on success, `error` otherwise.

    A 409 whose `current` already shows the requested change is turned into a success by the
    client (status 200, `entry` = `current`, `redelivered=True`), as for the single calls.
    """

    status: int
    entry: Optional[Entry] = None
    error: Optional[ErrorDetail] = None
    redelivered: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and 200 <= self.status < 300
