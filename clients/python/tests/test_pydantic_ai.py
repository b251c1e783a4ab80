"""The Pydantic AI adapter, run for real with its `FunctionModel` scripted to fixed tool calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from outcomes_ledger import AsyncLedger, NotDispatched, current_write
from outcomes_ledger.adapters.pydantic_ai import protected_tool, run_turn


def scripted(calls: list[tuple[str, str, dict[str, Any]]], seen: list[list[ModelMessage]]) -> FunctionModel:
    """First answer: the fixed tool calls; later answers: "done"."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)
                                        for call_id, name, args in calls])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(answer)


def tool_returns(messages: list[ModelMessage]) -> dict[str, Any]:
    return {part.tool_call_id: part.content for m in messages if isinstance(m, ModelRequest)
            for part in m.parts if isinstance(part, ToolReturnPart)}


def test_two_tool_calls_in_one_run_are_two_entries_of_one_turn(server, reads, session_key):
    created: list[str] = []
    seen: list[list[ModelMessage]] = []

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_tool(ledger, tool="mcp__dashboards__create")
            async def create_dashboard(title: str) -> str:
                """Create a dashboard titled `title`."""
                created.append(title)
                current_write().attach(id="dash-9", url="https://app.example.com/d/9", title=title)
                return f"created {title}"

            @protected_tool(ledger, tool="mcp__codehost__create_issue")
            def create_issue(ctx: RunContext[None], title: str) -> str:
                created.append(f"issue:{title}:{ctx.tool_call_id}")
                return "issue #419"

            agent = Agent(scripted([("pyd_call_1", "create_dashboard", {"title": "Service overview"}),
                                    ("pyd_call_2", "create_issue", {"title": "Refund rounds down"})], seen),
                          tools=[create_dashboard, create_issue])
            return await run_turn(ledger, agent, "make them", session_key=session_key, logical_turn_id="run-1")

    result = asyncio.run(main())
    assert result.output == "done"
    assert sorted(created) == ["Service overview", "issue:Refund rounds down:pyd_call_2"]
    assert tool_returns(seen[1]) == {"pyd_call_1": "created Service overview", "pyd_call_2": "issue #419"}
    assert reads.turns(session_key) == ["run-1"]
    records = reads.by_id(session_key)
    assert {k: (v["logical_turn_id"], v["tool"], v["status"]) for k, v in records.items()} == {
        "pyd_call_1": ("run-1", "mcp__dashboards__create", "completed"),
        "pyd_call_2": ("run-1", "mcp__codehost__create_issue", "completed"),
    }
    assert records["pyd_call_1"]["url"] == "https://app.example.com/d/9"


def test_a_tool_that_raises_is_outcome_unknown(server, reads, session_key):
    seen: list[list[ModelMessage]] = []

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            agent = Agent(scripted([("pyd_boom", "create_issue", {"title": "x"})], seen))

            @agent.tool
            @protected_tool(ledger, tool="mcp__codehost__create_issue")
            async def create_issue(ctx: RunContext[None], title: str) -> str:
                raise ConnectionResetError("the reply was lost")

            await run_turn(ledger, agent, "go", session_key=session_key)

    with pytest.raises(ConnectionResetError):
        asyncio.run(main())
    [turn] = reads.turns(session_key)
    assert turn.startswith("turn-")
    [record] = reads.outcomes(session_key)
    assert (record["mutation_id"], record["status"], record["logical_turn_id"]) == ("pyd_boom", "outcome_unknown", turn)
    assert "reason" not in record


def test_not_dispatched_in_a_tool_is_not_executed(server, reads, session_key):
    seen: list[list[ModelMessage]] = []

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_tool(ledger, tool="mcp__dashboards__create")
            async def create_dashboard(title: str) -> str:
                raise NotDispatched("deadline passed", reason="pre_dispatch_deadline")

            agent = Agent(scripted([("pyd_nd", "create_dashboard", {"title": "x"})], seen), tools=[create_dashboard])
            await run_turn(ledger, agent, "go", session_key=session_key, logical_turn_id="run-nd")

    with pytest.raises(NotDispatched):
        asyncio.run(main())
    [record] = reads.outcomes(session_key)
    assert (record["mutation_id"], record["status"], record["reason"]) == ("pyd_nd", "not_executed", "pre_dispatch_deadline")


def test_run_sync_in_fresh_event_loops_reuses_one_ledger(server, reads, session_key):
    # Agent.run_sync runs each run in its own event loop; the AsyncLedger follows the loop.
    seen_a: list[list[ModelMessage]] = []
    seen_b: list[list[ModelMessage]] = []
    ledger = AsyncLedger(server.base_url, server.token)

    @protected_tool(ledger, tool="mcp__dashboards__create")
    def create_dashboard(title: str) -> str:
        return "ok"

    for seen, call_id, turn in ((seen_a, "sync_1", "run-a"), (seen_b, "sync_2", "run-b")):
        agent = Agent(scripted([(call_id, "create_dashboard", {"title": "t"})], seen), tools=[create_dashboard])
        with ledger.turn(session_key, turn):
            assert agent.run_sync("go").output == "done"
    assert {k: (v["logical_turn_id"], v["status"]) for k, v in reads.by_id(session_key).items()} == {
        "sync_1": ("run-a", "completed"), "sync_2": ("run-b", "completed")}
