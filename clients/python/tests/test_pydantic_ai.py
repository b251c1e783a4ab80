"""The Pydantic AI adapter, run for real with its `FunctionModel` scripted to fixed tool calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pydantic_ai import ModelRetry

from outcomes_ledger import AsyncLedger, NotDispatched, OutsideTurn, ProviderFailed, current_write
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

            return await run_turn(ledger, agent, "go", session_key=session_key)

    # The model is told what the ledger recorded (it used to end the run with the exception).
    assert asyncio.run(main()).output == "done"
    assert tool_returns(seen[1])["pyd_boom"] == (
        "The outcome of this tool call is unknown (operation id pyd_boom): it may or may not have taken effect. "
        "Do not call the tool again for this request; tell the user the result is being checked and give them "
        "the operation id.")
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

    asyncio.run(main())
    assert tool_returns(seen[1])["pyd_nd"] == "The tool call was not executed (operation id pyd_nd); nothing was done."
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


def test_several_tool_calls_in_one_response_each_settle_by_their_own_outcome(server, reads, session_key):
    # One model response with three calls: a provider refusal, a success that takes a while, a timeout.
    # Each settles by its own outcome and the model is told each; one failure used to abort the run
    # (cancelling the slow success into outcome_unknown, and the timeout losing execution_timeout).
    seen: list[list[ModelMessage]] = []
    charged: list[str] = []

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_tool(ledger, tool="payments.refund")
            async def refund(order: str) -> str:
                raise ProviderFailed("the provider declined the refund")

            @protected_tool(ledger, tool="payments.charge")
            async def charge(order: str) -> str:
                await asyncio.sleep(0.3)
                charged.append(order)
                return f"charged {order}"

            @protected_tool(ledger, tool="codehost.create_issue")
            async def create_issue(title: str) -> str:
                await asyncio.sleep(0.3)
                raise TimeoutError

            agent = Agent(scripted([("pyd_m1", "refund", {"order": "o-1"}),
                                    ("pyd_m2", "charge", {"order": "o-2"}),
                                    ("pyd_m3", "create_issue", {"title": "t"})], seen),
                          tools=[refund, charge, create_issue])
            return await run_turn(ledger, agent, "go", session_key=session_key, logical_turn_id="run-m")

    assert asyncio.run(main()).output == "done"
    assert charged == ["o-2"]
    records = reads.by_id(session_key)
    assert {k: (v["status"], v.get("reason")) for k, v in records.items()} == {
        "pyd_m1": ("failed", None),
        "pyd_m2": ("completed", None),
        "pyd_m3": ("outcome_unknown", "execution_timeout"),
    }
    told = tool_returns(seen[1])
    assert told["pyd_m1"] == "The tool call failed (operation id pyd_m1): the provider refused it; nothing was done."
    assert told["pyd_m2"] == "charged o-2"
    assert told["pyd_m3"].startswith("The outcome of this tool call is unknown (operation id pyd_m3)")


def test_model_retry_records_failed_and_the_framework_retries(server, reads, session_key):
    seen: list[list[ModelMessage]] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("create_issue", {"title": ""}, tool_call_id="pyd_r1")])
        if len(seen) == 2:
            return ModelResponse(parts=[ToolCallPart("create_issue", {"title": "Refunds"}, tool_call_id="pyd_r2")])
        return ModelResponse(parts=[TextPart("done")])

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_tool(ledger, tool="codehost.create_issue")
            async def create_issue(title: str) -> str:
                if not title:
                    raise ModelRetry("the title must not be empty")
                return "issue #7"

            agent = Agent(FunctionModel(answer), tools=[create_issue])
            return await run_turn(ledger, agent, "go", session_key=session_key, logical_turn_id="run-r")

    assert asyncio.run(main()).output == "done"
    records = reads.by_id(session_key)
    assert {k: v["status"] for k, v in records.items()} == {"pyd_r1": "failed", "pyd_r2": "completed"}
    # The framework's own retry prompt reached the model (the ModelRetry was re-raised, not swallowed).
    retry_parts = [p for m in seen[1] if isinstance(m, ModelRequest) for p in m.parts
                   if getattr(p, "tool_call_id", None) == "pyd_r1"]
    assert retry_parts and "the title must not be empty" in str(retry_parts[0].content)


def test_a_forgotten_run_turn_raises_for_the_developer(server, reads, session_key):
    ran: list[str] = []

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_tool(ledger, tool="mcp__dashboards__create")
            async def create_dashboard(title: str) -> str:
                ran.append(title)
                return "ok"

            agent = Agent(scripted([("pyd_nt", "create_dashboard", {"title": "x"})], []), tools=[create_dashboard])
            await agent.run("go")  # not run_turn

    with pytest.raises(OutsideTurn, match=r"run_turn"):
        asyncio.run(main())
    assert ran == []
