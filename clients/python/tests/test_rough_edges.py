"""Issue 40's rough edges: an answer that is not the ledger's, a ledger that cannot be reached within
the pre-block budget, `mutation_outcomes()` and the two clients' public methods, the logical turn ids."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, StaticServer, free_port
from outcomes_ledger import (
    AsyncLedger,
    Ledger,
    LedgerConnectionError,
    NotFound,
    UnexpectedResponse,
    recorded_outcome,
)
from outcomes_ledger._client import DEFAULT_CONNECT_BUDGET_SECS

TOOL = "mcp__dashboards__create"


# An answer that is not the ledger's ------------------------------------------------------------


@pytest.mark.parametrize("status, ctype, body", [
    (204, "", b""),                                   # no body where the ledger answers one
    (200, "application/json", b'{"status": "ok"}'),   # another service's JSON
    (200, "text/html", b"<html><title>Welcome</title></html>"),
])
def test_a_protected_write_against_a_non_ledger_raises_unexpected_response(status, ctype, body, session_key):
    page = StaticServer(status, ctype, body)
    ran = 0
    try:
        with Ledger(page.base_url, "t") as ledger:
            with pytest.raises(UnexpectedResponse) as info:
                with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="op-1",
                                            tool=TOOL):
                    ran += 1
            assert (info.value.status, info.value.code) == (status, "unexpected_response")
            assert "not the ledger's JSON" in str(info.value)
            assert recorded_outcome(info.value).outcome == "not_called"
            # The single calls too (a 204 used to be TypeError: 'NoneType' object is not subscriptable).
            with pytest.raises(UnexpectedResponse):
                ledger.approve(session_key, "t", "op-1", TOOL)
            with pytest.raises(UnexpectedResponse):
                ledger.mutation_outcomes(session_key)
            with pytest.raises(UnexpectedResponse):
                ledger.recover(sessions=[session_key])
    finally:
        page.stop()
    assert ran == 0


def test_the_async_client_raises_unexpected_response_on_a_204(session_key):
    page = StaticServer(204, "", b"")

    async def main() -> None:
        async with AsyncLedger(page.base_url, "t") as ledger:
            with pytest.raises(UnexpectedResponse, match="no body where the ledger answers one"):
                async with ledger.protected_write(session_key=session_key, logical_turn_id="t",
                                                  mutation_id="op-1", tool=TOOL):
                    raise AssertionError("the block ran")
            with pytest.raises(UnexpectedResponse):
                await ledger.settle(session_key, "op-1", "att-1", "completed")

    try:
        asyncio.run(main())
    finally:
        page.stop()


# The ledger unreachable: the pre-block budget ----------------------------------------------------


def test_an_unreachable_ledger_gives_up_within_the_connect_budget():
    assert DEFAULT_CONNECT_BUDGET_SECS == 5.0
    ran = 0
    started = time.monotonic()
    # Nothing listens on the port: connection refused, retried until the budget is spent.
    with Ledger(f"http://127.0.0.1:{free_port()}", "t", connect_budget=2) as ledger:
        with pytest.raises(LedgerConnectionError) as info:
            with ledger.protected_write(session_key="py-budget", logical_turn_id="t", tool=TOOL):
                ran += 1
    elapsed = time.monotonic() - started
    assert ran == 0
    # The budget is spent, never given up early: the last wait is cut to leave the last try 0.1 s.
    assert 2 - 0.25 <= elapsed < 2 + 1, elapsed
    assert info.value.tries >= 2 and "ConnectError" in str(info.value)


def test_a_black_hole_ledger_gives_up_within_the_default_budget():
    # A socket that accepts connections (the kernel completes them) and never answers.
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    url = f"http://127.0.0.1:{hole.getsockname()[1]}"
    ran = 0
    try:
        started = time.monotonic()
        with Ledger(url, "t") as ledger:  # default connect_budget: 5 s (timeout 10 s, retries 30 s)
            with pytest.raises(LedgerConnectionError) as info:
                with ledger.protected_write(session_key="py-budget", logical_turn_id="t", tool=TOOL):
                    ran += 1
        elapsed = time.monotonic() - started
    finally:
        hole.close()
    assert ran == 0
    assert 4.0 <= elapsed < 5 + 1, elapsed
    assert "Timeout" in str(info.value)

    async def main() -> None:
        hole2 = socket.socket()
        hole2.bind(("127.0.0.1", 0))
        hole2.listen(64)
        try:
            async with AsyncLedger(f"http://127.0.0.1:{hole2.getsockname()[1]}", "t", connect_budget=1.5) as al:
                with pytest.raises(LedgerConnectionError):
                    async with al.protected_write(session_key="py-budget", logical_turn_id="t", tool=TOOL):
                        raise AssertionError("the block ran")
        finally:
            hole2.close()

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 1.5 + 1


# mutation_outcomes(), and the two clients' public methods ------------------------------------------


def test_mutation_outcomes_answers_the_sessions_records(server, reads, session_key):
    with Ledger(server.base_url, server.token) as ledger:
        with ledger.protected_write(session_key=session_key, logical_turn_id="turn-1", mutation_id="op-1",
                                    tool=TOOL) as op:
            op.attach(id="dash-1", url="https://app.example.com/d/1", title="One")
        with pytest.raises(ProcessLookupError):
            with ledger.protected_write(session_key=session_key, logical_turn_id="turn-1", mutation_id="op-2",
                                        tool=TOOL):
                raise ProcessLookupError
        records = ledger.mutation_outcomes(session_key)
        with pytest.raises(NotFound):
            ledger.mutation_outcomes(session_key + "-none")

    async def main() -> Any:
        async with AsyncLedger(server.base_url, server.token) as al:
            return await al.mutation_outcomes(session_key)

    assert records == reads.outcomes(session_key) == asyncio.run(main())
    assert [(r["mutation_id"], r["status"], r["title"]) for r in records] == [
        ("op-1", "completed", "One"), ("op-2", "outcome_unknown", None)]


# The documented differences between the clients' public methods (Python name -> why).
PYTHON_ONLY = {
    "close": "Python: the httpx connection pool is closed (also `with Ledger(...)`); TypeScript's fetch holds none",
    "protect": "Python: a decorator form of protected_write; TypeScript wraps a function with protectedWrite",
}
TYPESCRIPT_ONLY: dict[str, str] = {}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def python_methods(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def test_both_clients_have_the_same_public_methods():
    node = shutil.which("node")
    dist = REPO / "clients" / "typescript" / "dist" / "index.js"
    if node is None:
        pytest.skip("node is not installed")
    if not dist.exists():
        pytest.skip("clients/typescript/dist is not built (clients/typescript/ci.sh builds it)")
    out = subprocess.run(
        [node, "-e", "import(process.argv[1]).then(m => console.log(JSON.stringify("
                     "Object.getOwnPropertyNames(m.Ledger.prototype))))", dist.as_uri()],
        capture_output=True, text=True, timeout=60, check=True)
    ts = {n for n in json.loads(out.stdout) if n != "constructor" and not n.startswith("#")}
    # A dist older than its source would compare the wrong class: the source's methods must be its (the
    # dist is committed, and clients/typescript/ci.sh fails when it differs from a build of the source).
    source = (REPO / "clients" / "typescript" / "src" / "client.ts").read_text(encoding="utf-8")
    body = source[source.index("export class Ledger"):]
    declared = set(re.findall(r"^  (?:async )?([a-z][A-Za-z]*)\(", body, re.M)) - {"constructor"}
    assert declared <= ts, (
        f"clients/typescript/dist is older than src/client.ts (missing {sorted(declared - ts)}): "
        "npm run build in clients/typescript, then commit dist/")

    py = python_methods(Ledger)
    ts_snake = {snake(n): n for n in ts}
    only_py = py - set(ts_snake) - set(PYTHON_ONLY)
    only_ts = {ts_snake[n] for n in set(ts_snake) - py} - set(TYPESCRIPT_ONLY)
    assert not only_py, f"Python Ledger methods with no TypeScript counterpart, not in PYTHON_ONLY: {sorted(only_py)}"
    assert not only_ts, f"TypeScript Ledger methods with no Python counterpart, not in TYPESCRIPT_ONLY: {sorted(only_ts)}"
    # The async client has the sync one's methods (aclose for close).
    assert python_methods(AsyncLedger) - {"aclose"} == py - {"close"}


# Logical turn ids ----------------------------------------------------------------------------------


TURN_ID = re.compile(r"^turn-[0-9a-f]{32}$")


def test_generated_logical_turn_ids_are_turn_and_32_lowercase_hex(server, reads, session_key):
    with Ledger(server.base_url, server.token) as ledger:
        ids = {ledger.turn(session_key).turn.logical_turn_id for _ in range(20)}
        with ledger.turn(session_key) as turn:
            with ledger.protected_write(tool=TOOL):
                pass
    assert len(ids) == 20 and all(TURN_ID.match(i) for i in ids), ids
    assert TURN_ID.match(turn.logical_turn_id)
    assert reads.turns(session_key) == [turn.logical_turn_id]

    async def main() -> str:
        async with AsyncLedger(server.base_url, server.token) as al:
            async with al.turn(session_key) as t:
                return t.logical_turn_id

    assert TURN_ID.match(asyncio.run(main()))
    # The adapters' run_turn without a logical_turn_id.
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from outcomes_ledger.adapters.pydantic_ai import protected_tool, run_turn

    def answer(messages: Any, info: Any) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("create", {"title": "x"}, tool_call_id="pyd_turn_id")])
        return ModelResponse(parts=[TextPart("done")])

    async def run_agent() -> None:
        async with AsyncLedger(server.base_url, server.token) as al:
            @protected_tool(al, tool=TOOL)
            async def create(title: str) -> str:
                return "ok"

            await run_turn(al, Agent(FunctionModel(answer), tools=[create]), "go", session_key=session_key)

    asyncio.run(run_agent())
    turns = reads.turns(session_key)
    assert len(turns) == 2 and TURN_ID.match(turns[1]), turns
