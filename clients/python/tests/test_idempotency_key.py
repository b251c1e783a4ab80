"""`op.idempotency_key` (README "Status checks"): the shared vector both clients test
(clients/idempotency-key-vectors.json), and the key a protected write hands its block, derived from
the real ledger's id (`GET /api/host/ledger`)."""

from __future__ import annotations

import asyncio
import json

import httpx

from conftest import REPO
from outcomes_ledger import AsyncLedger, Ledger, idempotency_key

VECTORS = REPO / "clients" / "idempotency-key-vectors.json"


def test_the_shared_vector():
    rows = json.loads(VECTORS.read_text(encoding="utf-8"))
    assert len(rows) == 4
    for row in rows:
        key = idempotency_key(row["ledger_id"], row["session_key"], row["mutation_id"])
        assert key == row["idempotency_key"], row
        assert len(key) == 35 and key.startswith("ol_")
    # The file's bytes, as the TypeScript helper writes them (2-space JSON, non-ASCII as is, newline).
    assert VECTORS.read_text(encoding="utf-8") == json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


def _ledger_id(server) -> str:
    r = httpx.get(server.base_url + "/api/host/ledger", headers={"Authorization": f"Bearer {server.token}"})
    assert r.status_code == 200, r.text
    return r.json()["ledger_id"]


def test_the_block_gets_the_key_of_its_operation(server, session_key):
    expected = idempotency_key(_ledger_id(server), session_key, "refund-1")
    seen = []
    with Ledger(server.base_url, server.token) as ledger:
        with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="refund-1",
                                    tool="payments.refund") as op:
            seen.append(op.idempotency_key)
        assert ledger._ledger_id is not None  # read once, kept for the client's life
        with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="refund-2",
                                    tool="payments.refund") as op:
            seen.append(op.idempotency_key)
    # A restarted host (a new client) derives the same key for the same operation.
    with Ledger(server.base_url, server.token) as again:
        with again.protected_write(session_key=session_key + "-b", logical_turn_id="t", mutation_id="refund-1",
                                   tool="payments.refund") as op:
            other_session = op.idempotency_key
        assert again.ledger_id() == _ledger_id(server)
        assert again.idempotency_key(session_key, "refund-1") == expected
    assert seen[0] == expected
    assert seen[1] == idempotency_key(_ledger_id(server), session_key, "refund-2") != expected
    assert other_session == idempotency_key(_ledger_id(server), session_key + "-b", "refund-1")


def test_the_async_block_gets_the_same_key(server, session_key):
    async def main() -> str:
        async with AsyncLedger(server.base_url, server.token) as ledger:
            async with ledger.protected_write(session_key=session_key, logical_turn_id="t",
                                              mutation_id="refund-1", tool="payments.refund") as op:
                assert await ledger.idempotency_key(session_key, "refund-1") == op.idempotency_key
                assert await ledger.ledger_id() == _ledger_id(server)
                return op.idempotency_key

    assert asyncio.run(main()) == idempotency_key(_ledger_id(server), session_key, "refund-1")
