"""One method per host operation, the 409-as-redelivery rule and the retries, against the real
server (through a forwarding proxy where an answer must be lost)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from outcomes_ledger import (
    AsyncLedger,
    Conflict,
    Entry,
    Evidence,
    Ledger,
    LedgerUnavailable,
    NotFound,
    ops,
)

TOOL = "mcp__dashboards__create"
EVIDENCE = Evidence(source="codehost-status", reference="issue #419", observed_at="2026-11-29T10:00:00Z",
                    provider_status="completed")


@pytest.fixture
def ledger(server):
    with Ledger(server.base_url, server.token) as ledger:
        yield ledger


def test_every_operation_returns_typed_entries(ledger, reads, session_key, server):
    s = session_key
    e = ledger.approve(s, "turn-1", "op-1", TOOL)
    assert e == Entry(s, "turn-1", "op-1", "approved", False, None, None, None)
    assert e.published_status is None
    e = ledger.intent(s, "op-1", "att-1")
    assert (e.ledger_status, e.attempt_id, e.revision, e.published_status) == (
        "execution_started", "att-1", 1, "outcome_unknown")
    e = ledger.cancel(s, "op-1", "att-1", reason="pre_dispatch_deadline")
    assert (e.ledger_status, e.intent_recorded, e.reason, e.published_status) == (
        "approved", True, "pre_dispatch_deadline", "not_executed")
    e = ledger.fresh_attempt(s, "op-1", "att-2")
    assert (e.ledger_status, e.attempt_id) == ("execution_started", "att-2")
    e = ledger.settle(s, "op-1", "att-2", "outcome_unknown", reason="execution_timeout")
    assert (e.ledger_status, e.reason, e.published_status) == ("outcome_unknown", "execution_timeout", "outcome_unknown")
    e = ledger.reconcile(s, "op-1", "att-2", completed=True, evidence=EVIDENCE)
    assert (e.ledger_status, e.reason) == ("completed", None)
    e = ledger.attach_metadata(s, "op-1", id="dash-1", url="https://app.example.com/d/1", title="Overview")
    assert e.ledger_status == "completed"
    [record] = reads.outcomes(s)
    assert (record["status"], record["resource_id"], record["title"]) == ("completed", "dash-1", "Overview")
    assert reads.history_kinds(s, "op-1") == [
        "approval", "intent", "cancellation", "attempt", "settlement", "reconciliation", "metadata"]

    results = ledger.batch([
        ops.approve(s, "turn-2", "op-2", TOOL),
        ops.intent(s, "op-2", "att-1"),
        ops.metadata(s, "op-2", id="x"),
        ops.settle(s, "op-2", "att-1", "failed"),
        ops.settle(s, "op-2", "att-9", "completed"),
    ])
    assert [r.status for r in results] == [201, 200, 200, 200, 409]
    assert [r.ok for r in results] == [True, True, True, True, False]
    assert results[3].entry.ledger_status == "failed"
    assert (results[4].error.code, results[4].error.current.ledger_status) == ("not_in_flight", "failed")

    link = ledger.mint_viewer_link(s, expires_in_secs=3600)
    assert link.url.startswith("/v/") and len(link.url) == 3 + 43 and link.expires_at.endswith("Z")
    ledger.mint_viewer_link(s)
    assert ledger.revoke_viewer_links(s) == 2
    assert ledger.revoke_viewer_links(s) == 0

    ledger.delete_session(s)
    assert reads.outcomes_status(s) == 404
    with pytest.raises(NotFound) as info:
        ledger.delete_session(s)
    assert info.value.code == "session_not_found"


def test_async_client_has_the_same_operations(server, reads, session_key):
    s = session_key

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            await ledger.approve(s, "turn-1", "op-1", TOOL)
            await ledger.intent(s, "op-1", "att-1")
            await ledger.settle(s, "op-1", "att-1", "outcome_unknown")
            e = await ledger.reconcile(s, "op-1", "att-1", completed=False,
                                       evidence=Evidence("codehost-status", "issue #419", "2026-11-29T10:00:00Z",
                                                         "not_accepted"))
            assert e.published_status == "not_executed"
            await ledger.approve(s, "turn-1", "op-2", TOOL)
            await ledger.intent(s, "op-2", "att-1")
            await ledger.cancel(s, "op-2", "att-1")
            await ledger.fresh_attempt(s, "op-2", "att-2")
            await ledger.settle(s, "op-2", "att-2", "completed")
            await ledger.attach_metadata(s, "op-2", title="T")
            [r] = await ledger.batch([ops.approve(s, "turn-2", "op-3", TOOL)])
            assert r.status == 201
            link = await ledger.mint_viewer_link(s)
            assert link.url.startswith("/v/")
            assert await ledger.revoke_viewer_links(s) == 1

    async def delete():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            return await ledger.delete_session(s)

    asyncio.run(main())
    assert {r["mutation_id"]: r["status"] for r in reads.outcomes(s)} == {
        "op-1": "not_executed", "op-2": "completed"}
    assert asyncio.run(delete()) is None
    assert reads.outcomes_status(s) == 404


def test_redelivered_writes_count_as_success_whatever_the_409_code(ledger, reads, session_key):
    s = session_key
    ledger.approve(s, "turn-1", "op-1", TOOL)
    assert ledger.approve(s, "turn-1", "op-1", TOOL).ledger_status == "approved"  # already_recorded
    ledger.intent(s, "op-1", "att-1")
    assert ledger.intent(s, "op-1", "att-1").attempt_id == "att-1"  # already_recorded
    ledger.settle(s, "op-1", "att-1", "completed")
    assert ledger.settle(s, "op-1", "att-1", "completed").ledger_status == "completed"  # not_in_flight

    ledger.approve(s, "turn-1", "op-2", TOOL)
    ledger.intent(s, "op-2", "att-1")
    ledger.settle(s, "op-2", "att-1", "outcome_unknown", reason="execution_timeout")
    # unknown_outcome_needs_reconciliation, but current shows this very settlement
    assert ledger.settle(s, "op-2", "att-1", "outcome_unknown", reason="execution_timeout").reason == "execution_timeout"
    ledger.reconcile(s, "op-2", "att-1", completed=True, evidence=EVIDENCE)
    assert ledger.reconcile(s, "op-2", "att-1", completed=True, evidence=EVIDENCE).ledger_status == "completed"  # already_settled

    # Each redelivery changed nothing.
    assert reads.history_kinds(s, "op-1") == ["approval", "intent", "settlement"]
    assert reads.history_kinds(s, "op-2") == ["approval", "intent", "settlement", "reconciliation"]


def test_any_other_409_is_raised_with_code_and_current(ledger, session_key):
    s = session_key
    ledger.approve(s, "turn-1", "op-1", TOOL)
    ledger.intent(s, "op-1", "att-1")
    ledger.settle(s, "op-1", "att-1", "completed")
    with pytest.raises(Conflict) as info:
        ledger.settle(s, "op-1", "att-1", "failed")  # a different change
    assert (info.value.status, info.value.code) == (409, "not_in_flight")
    assert info.value.current == Entry(s, "turn-1", "op-1", "completed", True, "att-1", 2, None)
    not_accepted = Evidence("codehost-status", "issue #419", "2026-11-29T10:00:00Z", "not_accepted")
    with pytest.raises(Conflict) as info:
        ledger.reconcile(s, "op-1", "att-1", completed=False, evidence=not_accepted)  # completed, not unknown
    assert info.value.code == "already_settled"
    with pytest.raises(Conflict) as info:
        ledger.approve(s, "turn-2", "op-1", TOOL)  # same id, another turn
    assert info.value.code == "already_recorded" and info.value.current.logical_turn_id == "turn-1"
    with pytest.raises(Conflict) as info:
        ledger.fresh_attempt(s, "op-1", "att-2")
    assert info.value.code == "not_not_executed"


def test_a_settle_whose_answer_is_lost_is_retried_and_recorded_once(lossy_proxy, server, reads, session_key):
    # Request 1 is the approve+intent batch, 2 the settlement: the ledger commits it, the answer is
    # lost; the retry (3) answers 409 whose current shows the settlement: success.
    proxy = lossy_proxy({2: "drop"})
    runs = 0
    with Ledger(proxy.base_url, server.token) as ledger:
        with ledger.protected_write(session_key=session_key, logical_turn_id="turn-1", mutation_id="op-1", tool=TOOL) as op:
            runs += 1
    assert runs == 1
    assert op.entry.ledger_status == "completed"
    assert [a for (_, _, a) in proxy.seen] == ["forward", "drop", "forward"]
    assert reads.history_kinds(session_key, "op-1") == ["approval", "intent", "settlement"]
    assert reads.by_id(session_key)["op-1"]["status"] == "completed"


def test_an_intent_whose_answer_is_lost_runs_the_block_once(lossy_proxy, server, reads, session_key):
    proxy = lossy_proxy({1: "drop"})
    runs = 0

    async def main():
        nonlocal runs
        async with AsyncLedger(proxy.base_url, server.token) as ledger:
            async with ledger.protected_write(session_key=session_key, logical_turn_id="turn-1",
                                              mutation_id="op-1", tool=TOOL):
                runs += 1

    asyncio.run(main())
    assert runs == 1
    assert [a for (_, _, a) in proxy.seen] == ["drop", "forward", "forward"]
    assert reads.history_kinds(session_key, "op-1") == ["approval", "intent", "settlement"]


def test_a_reconcile_whose_answer_is_lost_is_success(lossy_proxy, server, reads, session_key):
    with Ledger(server.base_url, server.token) as direct:
        direct.approve(session_key, "turn-1", "op-1", TOOL)
        direct.intent(session_key, "op-1", "att-1")
        direct.settle(session_key, "op-1", "att-1", "outcome_unknown")
    proxy = lossy_proxy({1: "drop"})
    with Ledger(proxy.base_url, server.token) as ledger:
        e = ledger.reconcile(session_key, "op-1", "att-1", completed=True, evidence=EVIDENCE)
    assert e.ledger_status == "completed"
    assert len(proxy.seen) == 2
    assert reads.history_kinds(session_key, "op-1") == ["approval", "intent", "settlement", "reconciliation"]


def test_503_is_retried_after_retry_after(lossy_proxy, server, reads, session_key):
    proxy = lossy_proxy({1: "busy", 2: "busy"}, retry_after="1")
    started = time.monotonic()
    with Ledger(proxy.base_url, server.token) as ledger:
        e = ledger.approve(session_key, "turn-1", "op-1", TOOL)
    elapsed = time.monotonic() - started
    assert e.ledger_status == "approved"
    assert 2.0 <= elapsed < 5.0, elapsed
    assert [a for (_, _, a) in proxy.seen] == ["busy", "busy", "forward"]


def test_503_past_the_retry_budget_raises_unavailable_with_the_code(lossy_proxy, server, session_key):
    proxy = lossy_proxy({i: "busy" for i in range(1, 50)}, retry_after="1")
    side_effects = 0
    with Ledger(proxy.base_url, server.token, retry_total_secs=2.5) as ledger:
        with pytest.raises(LedgerUnavailable) as info:
            with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="op-1", tool=TOOL):
                side_effects += 1
    assert side_effects == 0
    assert (info.value.status, info.value.code) == (503, "busy")
    assert 2 <= len(proxy.seen) <= 3


def test_connection_errors_are_retried_with_backoff_until_the_budget(reads):
    from conftest import free_port

    port = free_port()
    started = time.monotonic()
    with Ledger(f"http://127.0.0.1:{port}", "t", retry_total_secs=1.0) as ledger:
        with pytest.raises(LedgerUnavailable) as info:
            ledger.approve("s", "t", "m", TOOL)
    elapsed = time.monotonic() - started
    assert elapsed <= 1.5
    assert "tries" in str(info.value) and isinstance(info.value.__cause__, httpx.ConnectError)
    assert info.value.code == "connection_failed" and info.value.tries >= 2
