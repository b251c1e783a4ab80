"""Retries across a kill -9 and restart of `outcomes serve` mid-run: nothing recorded twice,
nothing lost."""

from __future__ import annotations

import asyncio
import threading
import time

from conftest import OwnServer, Reads
from outcomes_ledger import AsyncLedger, Ledger

TOOL = "mcp__dashboards__create"
WRITES = 40


def check_every_write_once(own: OwnServer, session_key: str, ran: list[str], turn: str) -> None:
    reads = Reads(own.base_url, own.token)
    try:
        assert sorted(ran) == [f"op-{i:02d}" for i in range(WRITES)]  # each block ran exactly once
        records = reads.outcomes(session_key)
        assert sorted(r["mutation_id"] for r in records) == sorted(ran)  # nothing lost
        assert {(r["status"], r["logical_turn_id"]) for r in records} == {("completed", turn)}
        for mutation_id in ran:  # nothing recorded twice
            assert reads.history_kinds(session_key, mutation_id) == ["approval", "intent", "settlement"]
        assert len(reads.entries(session_key, turn)) == WRITES
    finally:
        reads.http.close()


def restart_after(own: OwnServer, done: list[str], at: int, down_secs: float, killed: threading.Event) -> None:
    while len(done) < at:
        time.sleep(0.005)
    own.kill9()
    killed.set()
    time.sleep(down_secs)
    own.start()


def test_sync_writes_survive_a_kill_and_restart(own_server: OwnServer):
    session_key = "py-restart-sync"
    ran: list[str] = []
    killed = threading.Event()
    t = threading.Thread(target=restart_after, args=(own_server, ran, 12, 0.8, killed))
    t.start()
    with Ledger(own_server.base_url, own_server.token, retry_total_secs=30) as ledger:
        with ledger.turn(session_key, "turn-1"):
            for i in range(WRITES):
                with ledger.protected_write(tool=TOOL, mutation_id=f"op-{i:02d}"):
                    ran.append(f"op-{i:02d}")
                    if i == 11:  # the server dies while this block runs: its settlement crosses the restart
                        assert killed.wait(5)
                    time.sleep(0.01)
    t.join()
    assert killed.is_set()
    check_every_write_once(own_server, session_key, ran, "turn-1")


def test_concurrent_async_writes_survive_a_kill_and_restart(own_server: OwnServer):
    session_key = "py-restart-async"
    ran: list[str] = []
    killed = threading.Event()
    t = threading.Thread(target=restart_after, args=(own_server, ran, 8, 0.8, killed))
    t.start()

    async def worker(ledger: AsyncLedger, ids: list[int]) -> None:
        for i in ids:
            async with ledger.protected_write(session_key=session_key, logical_turn_id="turn-1",
                                              mutation_id=f"op-{i:02d}", tool=TOOL):
                ran.append(f"op-{i:02d}")
                if len(ran) == 8:  # the server dies while this block (and others) run
                    assert await asyncio.to_thread(killed.wait, 5)
                await asyncio.sleep(0.02)

    async def main() -> None:
        async with AsyncLedger(own_server.base_url, own_server.token, retry_total_secs=30) as ledger:
            await asyncio.gather(*(worker(ledger, list(range(w, WRITES, 8))) for w in range(8)))

    asyncio.run(main())
    t.join()
    assert killed.is_set()
    check_every_write_once(own_server, session_key, ran, "turn-1")
