"""Builders of `batch()` operations (docs/api.md "Batch"): each returns the JSON object of one
operation, the single call's fields plus `op` and `session_key`.

    ledger.batch([
        ops.approve("chat-42", "turn-1", "op-1", "mcp__dashboards__create"),
        ops.intent("chat-42", "op-1", "att-1"),
    ])
"""

from __future__ import annotations

from typing import Any, Optional

from ._types import Evidence, SettleStatus


def approve(session_key: str, logical_turn_id: str, mutation_id: str, tool: str,
            commissioned_after: Optional[str] = None, traceparent: Optional[str] = None) -> dict[str, Any]:
    """Approve; `traceparent`, the host's W3C trace context of the tool call (`00-<32 hex>-<16 hex>-<2
    hex>`), makes the ledger's OpenTelemetry span of the write a child of that span."""
    op: dict[str, Any] = {"op": "approve", "session_key": session_key, "logical_turn_id": logical_turn_id,
                          "mutation_id": mutation_id, "tool": tool}
    if commissioned_after is not None:
        op["commissioned_after"] = commissioned_after
    if traceparent is not None:
        op["traceparent"] = traceparent
    return op


def intent(session_key: str, mutation_id: str, attempt_id: str, deadline_secs: Optional[int] = None) -> dict[str, Any]:
    """Record intent; `deadline_secs` (1 to 604800) when the write may stay in flight other than the
    server's default (docs/api.md "Deadlines")."""
    op: dict[str, Any] = {"op": "intent", "session_key": session_key, "mutation_id": mutation_id,
                          "attempt_id": attempt_id}
    if deadline_secs is not None:
        op["deadline_secs"] = deadline_secs
    return op


def settle(session_key: str, mutation_id: str, attempt_id: str, status: SettleStatus,
           reason: Optional[str] = None) -> dict[str, Any]:
    op: dict[str, Any] = {"op": "settle", "session_key": session_key, "mutation_id": mutation_id,
                          "attempt_id": attempt_id, "status": status}
    if reason is not None:
        op["reason"] = reason
    return op


def cancel(session_key: str, mutation_id: str, attempt_id: str, reason: Optional[str] = None) -> dict[str, Any]:
    op: dict[str, Any] = {"op": "cancel", "session_key": session_key, "mutation_id": mutation_id,
                          "attempt_id": attempt_id}
    if reason is not None:
        op["reason"] = reason
    return op


def reconcile(session_key: str, mutation_id: str, attempt_id: str, completed: bool,
              evidence: Evidence) -> dict[str, Any]:
    return {"op": "reconcile", "session_key": session_key, "mutation_id": mutation_id,
            "attempt_id": attempt_id, "completed": completed, "evidence": evidence.to_json()}


def metadata(session_key: str, mutation_id: str, id: Optional[str] = None, url: Optional[str] = None,
             title: Optional[str] = None) -> dict[str, Any]:
    return {"op": "metadata", "session_key": session_key, "mutation_id": mutation_id,
            "id": id, "url": url, "title": title}


def attempt(session_key: str, mutation_id: str, attempt_id: str, deadline_secs: Optional[int] = None) -> dict[str, Any]:
    """A fresh attempt of a `not_executed` entry (the single call `fresh_attempt`)."""
    op: dict[str, Any] = {"op": "attempt", "session_key": session_key, "mutation_id": mutation_id,
                          "attempt_id": attempt_id}
    if deadline_secs is not None:
        op["deadline_secs"] = deadline_secs
    return op


def deadline(session_key: str, mutation_id: str, attempt_id: str, deadline_secs: int) -> dict[str, Any]:
    """Extend the deadline of the attempt in flight to now + `deadline_secs` (the single call
    `extend_deadline`; docs/api.md "Deadlines")."""
    return {"op": "deadline", "session_key": session_key, "mutation_id": mutation_id,
            "attempt_id": attempt_id, "deadline_secs": deadline_secs}
