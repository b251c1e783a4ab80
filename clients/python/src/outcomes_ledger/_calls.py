"""One request builder per host operation (docs/api.md "Host write API"), shared by `Ledger` and
`AsyncLedger`."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence
from urllib.parse import urlencode

from ._core import HOST, Call, Requested, mutation_path, parse_batch, seg
from ._types import BatchResult, Entry, Evidence, SettleStatus, ViewerLink


def entry(data: Any) -> Entry:
    return data if isinstance(data, Entry) else Entry.from_json(data)


def approve(session_key: str, logical_turn_id: str, mutation_id: str, tool: str,
            commissioned_after: Optional[str], traceparent: Optional[str] = None) -> Call[Entry]:
    body: dict[str, Any] = {"logical_turn_id": logical_turn_id, "mutation_id": mutation_id, "tool": tool}
    if commissioned_after is not None:
        body["commissioned_after"] = commissioned_after
    if traceparent is not None:
        body["traceparent"] = traceparent
    return Call("approve", "POST", f"{HOST}/sessions/{seg(session_key)}/mutations", body, entry,
                requested=Requested("approved", None, None, logical_turn_id))


def _attempt_body(attempt_id: str, deadline_secs: Optional[int]) -> dict[str, Any]:
    body: dict[str, Any] = {"attempt_id": attempt_id}
    if deadline_secs is not None:
        body["deadline_secs"] = deadline_secs
    return body


def intent(session_key: str, mutation_id: str, attempt_id: str, deadline_secs: Optional[int] = None) -> Call[Entry]:
    return Call("intent", "POST", mutation_path(session_key, mutation_id, "intent"),
                _attempt_body(attempt_id, deadline_secs), entry,
                requested=Requested("execution_started", attempt_id))


def extend_deadline(session_key: str, mutation_id: str, attempt_id: str, deadline_secs: int) -> Call[Entry]:
    # No `requested`: a 409 means the write is no longer in flight under this attempt, never that an
    # earlier try of this extension landed (a landed one leaves the entry execution_started: 200 again).
    return Call("extend_deadline", "POST", mutation_path(session_key, mutation_id, "deadline"),
                {"attempt_id": attempt_id, "deadline_secs": deadline_secs}, entry)


def settle(session_key: str, mutation_id: str, attempt_id: str, status: SettleStatus,
           reason: Optional[str]) -> Call[Entry]:
    body: dict[str, Any] = {"attempt_id": attempt_id, "status": status}
    if reason is not None:
        body["reason"] = reason
    return Call("settle", "POST", mutation_path(session_key, mutation_id, "settlement"), body, entry,
                requested=Requested(status, attempt_id, reason))


def cancel(session_key: str, mutation_id: str, attempt_id: str, reason: Optional[str]) -> Call[Entry]:
    body: dict[str, Any] = {"attempt_id": attempt_id}
    if reason is not None:
        body["reason"] = reason
    return Call("cancel", "POST", mutation_path(session_key, mutation_id, "cancellation"), body, entry,
                requested=Requested("approved", attempt_id, reason))


def reconcile(session_key: str, mutation_id: str, attempt_id: str, completed: bool,
              evidence: Evidence) -> Call[Entry]:
    body = {"attempt_id": attempt_id, "completed": completed, "evidence": evidence.to_json()}
    return Call("reconcile", "POST", mutation_path(session_key, mutation_id, "reconciliation"), body, entry,
                requested=Requested("completed" if completed else "approved", attempt_id))


def attach_metadata(session_key: str, mutation_id: str, id: Optional[str], url: Optional[str],
                    title: Optional[str]) -> Call[Entry]:
    return Call("attach_metadata", "PUT", mutation_path(session_key, mutation_id, "metadata"),
                {"id": id, "url": url, "title": title}, entry)


def fresh_attempt(session_key: str, mutation_id: str, attempt_id: str,
                  deadline_secs: Optional[int] = None) -> Call[Entry]:
    return Call("fresh_attempt", "POST", mutation_path(session_key, mutation_id, "attempts"),
                _attempt_body(attempt_id, deadline_secs), entry,
                requested=Requested("execution_started", attempt_id))


def delete_session(session_key: str) -> Call[None]:
    return Call("delete_session", "DELETE", f"{HOST}/sessions/{seg(session_key)}", None,
                lambda data: None, has_body=False, retried_404_is_success=True)


def batch(operations: Sequence[dict[str, Any]]) -> Call[list[BatchResult]]:
    ops = [dict(op) for op in operations]
    return Call("batch", "POST", f"{HOST}/batch", {"operations": ops}, parse_batch(ops),
                batch_ops=ops)


def mint_viewer_link(session_key: str, expires_in_secs: Optional[int]) -> Call[ViewerLink]:
    body = None if expires_in_secs is None else {"expires_in_secs": expires_in_secs}
    return Call("mint_viewer_link", "POST", f"{HOST}/sessions/{seg(session_key)}/viewer-links", body,
                lambda data: ViewerLink(url=data["url"], expires_at=data["expires_at"]),
                has_body=body is not None)


def revoke_viewer_links(session_key: str) -> Call[int]:
    return Call("revoke_viewer_links", "DELETE", f"{HOST}/sessions/{seg(session_key)}/viewer-links",
                None, lambda data: int(data["revoked"]), has_body=False)



def _ledger_id(data: Any) -> str:
    value = data["ledger_id"] if isinstance(data, dict) else None
    if not isinstance(value, str) or not value:
        raise ValueError("ledger_id is a non-empty string")
    return value


def ledger_id() -> Call[str]:
    """`GET /api/host/ledger` -> `{"ledger_id"}` (docs/api.md "The ledger's id")."""
    return Call("ledger_id", "GET", f"{HOST}/ledger", None, _ledger_id, has_body=False)


Page = tuple[list[dict[str, Any]], Optional[str]]


def _page(key: str) -> Callable[[Any], Page]:
    def parse(data: Any) -> Page:
        items = data[key] if isinstance(data, dict) else None
        nxt = data.get("next") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ValueError(f"{key} is a list of objects")
        if nxt is not None and not isinstance(nxt, str):
            raise ValueError("next is a cursor or null")
        return items, nxt

    return parse


def unknowns(session_key: Optional[str], after: Optional[str], limit: int = 200) -> Call[Page]:
    """One page of `GET /api/unknowns?state=unknown` (docs/api.md "Support queue"): settled unknowns
    only, those the ledger settled at a deadline included, never a write in flight."""
    params: dict[str, str] = {"state": "unknown", "limit": str(limit)}
    if session_key is not None:
        params["session_key"] = session_key
    if after is not None:
        params["after"] = after
    return Call("unknowns", "GET", f"/api/unknowns?{urlencode(params)}", None, _page("matches"), has_body=False)


def history_newest(session_key: str, mutation_id: str, after: Optional[str]) -> Call[Page]:
    """One page of an operation's history, newest change first (docs/api.md "Operation history")."""
    params = {"order": "newest", "limit": "20"}
    if after is not None:
        params["after"] = after
    path = f"/api/sessions/{seg(session_key)}/mutations/{seg(mutation_id)}/history?{urlencode(params)}"
    return Call("history", "GET", path, None, _page("changes"), has_body=False)


def _outcomes(data: Any) -> list[dict[str, Any]]:
    items = data["mutation_outcomes"] if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError("mutation_outcomes is a list of objects")
    return items


def mutation_outcomes(session_key: str) -> Call[list[dict[str, Any]]]:
    """`GET /api/mutation-outcomes?session_id=` (docs/api.md "History")."""
    return Call("mutation_outcomes", "GET", f"/api/mutation-outcomes?{urlencode({'session_id': session_key})}",
                None, _outcomes, has_body=False)
