"""The protected write's rules (README "The protected write"), read back from the real server."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from outcomes_ledger import (
    AsyncLedger,
    Conflict,
    InvalidRequest,
    Ledger,
    LedgerConnectionError,
    LedgerSettleError,
    LedgerUnavailable,
    NotDispatched,
    ProviderFailed,
    RecordedOutcome,
    current_write,
    recorded_outcome,
)

from conftest import free_port

TOOL = "mcp__dashboards__create"


@pytest.fixture
def ledger(server):
    with Ledger(server.base_url, server.token) as ledger:
        yield ledger


def write(ledger, session_key, mutation_id, turn="turn-1"):
    return ledger.protected_write(session_key=session_key, logical_turn_id=turn, mutation_id=mutation_id, tool=TOOL)


def test_block_that_returns_settles_completed(ledger, reads, session_key):
    ran = []
    with write(ledger, session_key, "op-1") as op:
        assert op.entry.ledger_status == "execution_started"
        assert op.entry.attempt_id == op.attempt_id
        ran.append(op.mutation_id)
    assert ran == ["op-1"]
    assert op.entry.ledger_status == "completed"
    [record] = reads.outcomes(session_key)
    assert (record["mutation_id"], record["tool"], record["status"], record["logical_turn_id"]) == (
        "op-1", TOOL, "completed", "turn-1")
    assert reads.history_kinds(session_key, "op-1") == ["approval", "intent", "settlement"]


def test_op_failed_settles_failed(ledger, reads, session_key):
    with write(ledger, session_key, "op-f") as op:
        op.failed()
    assert op.entry.ledger_status == "failed"
    assert reads.by_id(session_key)["op-f"]["status"] == "failed"


def test_provider_failed_settles_failed_and_is_reraised(ledger, reads, session_key):
    with pytest.raises(ProviderFailed, match="quota") as info:
        with write(ledger, session_key, "op-pf"):
            raise ProviderFailed("quota exceeded: the provider refused the write")
    assert reads.by_id(session_key)["op-pf"]["status"] == "failed"
    assert recorded_outcome(info.value) == RecordedOutcome("failed", "op-pf")


def test_op_not_executed_cancels(ledger, reads, session_key):
    with write(ledger, session_key, "op-n") as op:
        op.not_executed()
    record = reads.by_id(session_key)["op-n"]
    assert record["status"] == "not_executed"
    assert "reason" not in record
    assert reads.history_kinds(session_key, "op-n") == ["approval", "intent", "cancellation"]


def test_not_dispatched_cancels_with_its_reason_and_is_reraised(ledger, reads, session_key):
    with pytest.raises(NotDispatched) as info:
        with write(ledger, session_key, "op-nd"):
            raise NotDispatched("deadline passed before dispatch", reason="pre_dispatch_deadline")
    assert recorded_outcome(info.value) == RecordedOutcome("not_executed", "op-nd")
    record = reads.by_id(session_key)["op-nd"]
    assert (record["status"], record["reason"]) == ("not_executed", "pre_dispatch_deadline")


def test_arbitrary_exception_is_outcome_unknown_and_reraised(ledger, reads, session_key):
    with pytest.raises(KeyError) as info:
        with write(ledger, session_key, "op-u"):
            raise KeyError("the provider's answer had no id")
    assert recorded_outcome(info.value) == RecordedOutcome("outcome_unknown", "op-u")
    record = reads.by_id(session_key)["op-u"]
    assert record["status"] == "outcome_unknown"
    assert "reason" not in record
    # Settled unknown, not still in flight.
    [entry] = reads.entries(session_key, "turn-1")
    assert entry["ledger_status"] == "outcome_unknown" and entry["settled_at"] is not None


def test_an_exception_wins_over_a_declared_failure(ledger, reads, session_key):
    # The block said failed, then raised: what happened after that is not known.
    with pytest.raises(RuntimeError):
        with write(ledger, session_key, "op-x") as op:
            op.failed()
            raise RuntimeError("connection reset while reading the answer")
    assert reads.by_id(session_key)["op-x"]["status"] == "outcome_unknown"


def test_timeout_error_is_outcome_unknown_with_execution_timeout(ledger, reads, session_key):
    with pytest.raises(TimeoutError):
        with write(ledger, session_key, "op-t"):
            raise TimeoutError("the provider did not answer within 30 s")
    record = reads.by_id(session_key)["op-t"]
    assert (record["status"], record["reason"]) == ("outcome_unknown", "execution_timeout")


def test_asyncio_timeout_inside_the_block_is_execution_timeout(server, reads, session_key):
    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            async with ledger.protected_write(session_key=session_key, logical_turn_id="turn-1",
                                              mutation_id="op-at", tool=TOOL):
                await asyncio.wait_for(asyncio.sleep(5), timeout=0.05)

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    record = reads.by_id(session_key)["op-at"]
    assert (record["status"], record["reason"]) == ("outcome_unknown", "execution_timeout")


def test_attach_publishes_host_metadata_with_the_settlement(ledger, reads, session_key):
    with write(ledger, session_key, "op-a") as op:
        op.attach(id="dash-7f3a", url="https://user:pw@app.example.com/d/dash-7f3a?tab=2#top", title="Service overview")
    record = reads.by_id(session_key)["op-a"]
    assert record["status"] == "completed"
    assert (record["resource_id"], record["url"], record["title"]) == (
        "dash-7f3a", "https://app.example.com/d/dash-7f3a", "Service overview")
    # One batch: metadata then settlement, so the settled record carries the link.
    assert reads.history_kinds(session_key, "op-a") == ["approval", "intent", "metadata", "settlement"]


def test_attach_on_an_unknown_outcome_keeps_it_unknown(ledger, reads, session_key):
    with pytest.raises(ValueError):
        with write(ledger, session_key, "op-au") as op:
            op.attach(id="issue-419", url="https://code.example.com/i/419", title="Refund rounds down")
            raise ValueError("reply lost")
    record = reads.by_id(session_key)["op-au"]
    assert (record["status"], record["resource_id"]) == ("outcome_unknown", "issue-419")


def test_block_never_runs_when_the_ledger_is_down(reads):
    side_effects = 0
    down = Ledger(f"http://127.0.0.1:{free_port()}", "any-token", retry_total_secs=0.5)
    with pytest.raises(LedgerConnectionError) as info:
        with down.protected_write(session_key="py-down", logical_turn_id="turn-1", mutation_id="op-d", tool=TOOL):
            side_effects += 1
    assert side_effects == 0
    assert (info.value.code, info.value.status) == ("connection_failed", None)
    assert str(info.value).startswith("no answer from the ledger at http://127.0.0.1:")
    assert "for batch after" in str(info.value) and "ConnectError" in str(info.value)
    assert recorded_outcome(info.value) == RecordedOutcome("not_called", "op-d")
    assert reads.outcomes_status("py-down") == 404


def test_block_never_runs_when_the_ledger_refuses_the_intent(ledger, reads, session_key):
    with write(ledger, session_key, "op-once"):
        pass
    side_effects = 0
    with pytest.raises(Conflict) as info:
        with write(ledger, session_key, "op-once"):
            side_effects += 1
    assert side_effects == 0
    assert info.value.code == "already_recorded"
    assert info.value.current.ledger_status == "completed"
    assert reads.history_kinds(session_key, "op-once") == ["approval", "intent", "settlement"]


def test_block_never_runs_for_an_id_over_256_bytes(ledger, reads, session_key):
    side_effects = 0
    with pytest.raises(InvalidRequest) as info:
        with write(ledger, session_key, "é" * 129):  # 129 characters, 258 bytes
            side_effects += 1
    assert side_effects == 0
    assert (info.value.status, info.value.code, info.value.field) == (422, "invalid_field", "mutation_id")
    assert "256 bytes" in str(info.value)
    assert reads.outcomes_status(session_key) == 404


def test_turn_and_protect_decorator(ledger, reads, session_key):
    calls = []

    @ledger.protect(tool="mcp__codehost__create_issue")
    def create_issue(title):
        op = current_write()
        calls.append((title, op.mutation_id))
        op.attach(id="419", url="https://code.example.com/i/419", title=title)
        return 419

    with ledger.turn(session_key, "turn-7") as turn:
        assert create_issue("first", mutation_id="op-given") == 419
        assert create_issue("second") == 419
    assert turn.logical_turn_id == "turn-7"
    generated = calls[1][1]
    assert calls[0] == ("first", "op-given") and generated.startswith("op-")
    records = reads.outcomes(session_key)
    assert [(r["mutation_id"], r["logical_turn_id"], r["status"], r["tool"], r["title"]) for r in records] == [
        ("op-given", "turn-7", "completed", "mcp__codehost__create_issue", "first"),
        (generated, "turn-7", "completed", "mcp__codehost__create_issue", "second"),
    ]


def test_protect_outside_a_turn_is_refused_before_anything(ledger):
    @ledger.protect(tool=TOOL)
    def create():
        raise AssertionError("must not run")

    with pytest.raises(ValueError, match="ledger.turn"):
        create()


def test_async_protected_write_and_decorator(server, reads, session_key):
    side_effects = []

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @ledger.protect(tool=TOOL)
            async def create(name):
                side_effects.append(name)
                if name == "bad":
                    raise ProviderFailed("refused")

            async with ledger.turn(session_key, "turn-a"):
                await create("good", mutation_id="op-good")
                with pytest.raises(ProviderFailed):
                    await create("bad", mutation_id="op-bad")
                async with ledger.protected_write(tool=TOOL, mutation_id="op-ne") as op:
                    op.not_executed(reason="pre_dispatch_deadline")
                with pytest.raises(OSError):
                    async with ledger.protected_write(tool=TOOL, mutation_id="op-os"):
                        raise OSError("connection reset by peer")

    asyncio.run(main())
    assert side_effects == ["good", "bad"]
    got = {k: (v["status"], v.get("reason")) for k, v in reads.by_id(session_key).items()}
    assert got == {
        "op-good": ("completed", None),
        "op-bad": ("failed", None),
        "op-ne": ("not_executed", "pre_dispatch_deadline"),
        "op-os": ("outcome_unknown", None),
    }


def test_64_concurrent_async_protected_writes(server, reads, session_key):
    counter = 0

    async def one(ledger, i):
        nonlocal counter
        async with ledger.protected_write(session_key=session_key, logical_turn_id="turn-c",
                                          mutation_id=f"op-{i:02d}", tool=TOOL) as op:
            await asyncio.sleep(0.01)
            counter += 1
            if i % 4 == 1:
                op.failed()
            elif i % 4 == 2:
                raise TimeoutError
        return op.entry.ledger_status

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            return await asyncio.gather(*(one(ledger, i) for i in range(64)), return_exceptions=True)

    results = asyncio.run(main())
    assert counter == 64
    assert sum(isinstance(r, TimeoutError) for r in results) == 16
    records = reads.by_id(session_key)
    assert len(records) == 64
    want = {0: ("completed", None), 1: ("failed", None), 2: ("outcome_unknown", "execution_timeout"), 3: ("completed", None)}
    for i in range(64):
        r = records[f"op-{i:02d}"]
        assert (r["status"], r.get("reason")) == want[i % 4], (i, r)
    assert len(reads.entries(session_key, "turn-c")) == 64


def test_64_concurrent_sync_protected_writes_from_threads(ledger, reads, session_key):
    counter = 0
    lock = threading.Lock()

    def one(i):
        nonlocal counter
        with write(ledger, session_key, f"op-{i:02d}", turn="turn-t"):
            with lock:
                counter += 1

    with ThreadPoolExecutor(max_workers=64) as pool:
        list(pool.map(one, range(64)))
    assert counter == 64
    records = reads.outcomes(session_key)
    assert sorted(r["mutation_id"] for r in records) == [f"op-{i:02d}" for i in range(64)]
    assert {r["status"] for r in records} == {"completed"}


def test_a_pre_approved_mutation_runs_in_its_own_turn(ledger, reads, session_key):
    # An approval given beforehand (same turn) is the approval of this write.
    ledger.approve(session_key, "turn-1", "op-pre", TOOL)
    with write(ledger, session_key, "op-pre") as op:
        pass
    assert op.entry.ledger_status == "completed"
    assert reads.history_kinds(session_key, "op-pre") == ["approval", "intent", "settlement"]


def test_a_mutation_approved_in_another_turn_is_refused_and_not_left_in_flight(ledger, reads, session_key):
    ledger.approve(session_key, "turn-A", "op-other", TOOL)
    side_effects = 0
    with pytest.raises(Conflict) as info:
        with write(ledger, session_key, "op-other", turn="turn-B"):
            side_effects += 1
    assert side_effects == 0
    assert info.value.code == "already_recorded" and info.value.current.logical_turn_id == "turn-A"
    # The batch recorded the intent before the approval's refusal was known: it is cancelled, so
    # the entry says "not executed" rather than staying in flight.
    record = reads.by_id(session_key)["op-other"]
    assert (record["status"], record["logical_turn_id"]) == ("not_executed", "turn-A")


def test_a_cancelled_task_is_outcome_unknown(server, reads, session_key):
    started = asyncio.Event()

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            async def tool():
                async with ledger.protected_write(session_key=session_key, logical_turn_id="turn-1",
                                                  mutation_id="op-c", tool=TOOL):
                    started.set()
                    await asyncio.sleep(10)

            task = asyncio.create_task(tool())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    record = reads.by_id(session_key)["op-c"]
    assert (record["status"], record.get("reason")) == ("outcome_unknown", None)
    [entry] = reads.entries(session_key, "turn-1")
    assert entry["ledger_status"] == "outcome_unknown"


def test_a_settlement_the_ledger_cannot_take_is_raised_never_silent(lossy_proxy, server, reads, session_key):
    # Request 1 (approve + intent) goes through; every later request answers 503.
    proxy = lossy_proxy({i: "busy" for i in range(2, 100)}, retry_after="0")
    with Ledger(proxy.base_url, server.token, retry_total_secs=0.5) as ledger, ledger.turn(session_key, "turn-1"):
        @ledger.protect(tool=TOOL)
        def create():
            return {"id": "dash-1"}

        with pytest.raises(LedgerSettleError) as info:
            create(mutation_id="op-s")
    err = info.value
    assert (err.code, err.status, err.mutation_id, err.intended) == ("settle_failed", 503, "op-s", "completed")
    assert err.result == {"id": "dash-1"}  # what the block returned is not lost
    assert isinstance(err.__cause__, LedgerUnavailable) and err.__cause__.code == "busy"
    assert "stays in flight (published outcome_unknown); do not run it again" in str(err)
    assert recorded_outcome(err) == RecordedOutcome("outcome_unknown", "op-s")
    assert proxy.seen[0][2] == "forward"
    # The block's own exception wins; the lost settlement is added as a note.
    proxy2 = lossy_proxy({i: "busy" for i in range(2, 100)}, retry_after="0")
    with Ledger(proxy2.base_url, server.token, retry_total_secs=0.5) as ledger:
        with pytest.raises(ProviderFailed) as info2:
            with write(ledger, session_key, "op-s2"):
                raise ProviderFailed("refused")
    assert any("stays in flight" in n for n in info2.value.__notes__)
    assert recorded_outcome(info2.value) == RecordedOutcome("outcome_unknown", "op-s2")
    entries = {e["outcome"]["mutation_id"]: e for e in reads.entries(session_key, "turn-1")}
    assert entries["op-s"]["ledger_status"] == "execution_started"  # in flight: published unknown
    assert entries["op-s"]["outcome"]["status"] == "outcome_unknown"
    assert entries["op-s2"]["ledger_status"] == "execution_started"


def test_protect_refuses_the_wrong_kind_of_function(server):
    async def coro():
        pass

    def plain():
        pass

    with Ledger(server.base_url, server.token) as ledger:
        with pytest.raises(TypeError, match="AsyncLedger.protect"):
            ledger.protect(tool=TOOL)(coro)
    with pytest.raises(TypeError, match="Ledger.protect"):
        AsyncLedger(server.base_url, server.token).protect(tool=TOOL)(plain)
