"""The OpenAI Agents SDK adapter, run for real with a scripted `Model` (no network, no model API)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

from agents import Agent, RunConfig, RunContextWrapper
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import pytest

from outcomes_ledger import AsyncLedger, OutsideTurn, current_write
from outcomes_ledger.adapters.openai_agents import protected_function_tool, run_turn

NO_TRACING = RunConfig(tracing_disabled=True)


class ScriptedModel(Model):
    """Answers the first request with fixed tool calls, every later one with a final message; keeps
    every input it was sent."""

    def __init__(self, calls: list[tuple[str, str, dict[str, Any]]]) -> None:
        self.calls = calls
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None,
                           **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        if len(self.inputs) == 1:
            output: list[Any] = [
                ResponseFunctionToolCall(type="function_call", call_id=call_id, name=name,
                                         arguments=json.dumps(args), id=f"fc_{call_id}", status="completed")
                for call_id, name, args in self.calls
            ]
        else:
            output = [ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text="done", annotations=[])])]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


def function_outputs(model: ScriptedModel) -> dict[str, str]:
    """The tool results the SDK sent back to the model, by call id."""
    second = model.inputs[1]
    return {item["call_id"]: item["output"] for item in second
            if isinstance(item, dict) and item.get("type") == "function_call_output"}


def test_two_tool_calls_in_one_run_are_two_entries_of_one_turn(server, reads, session_key):
    created: list[str] = []

    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_function_tool(ledger, tool="mcp__dashboards__create")
            async def create_dashboard(title: str) -> str:
                """Create a dashboard.

                Args:
                    title: The dashboard's title.
                """
                created.append(title)
                op = current_write()
                op.attach(id="dash-7f3a", url="https://app.example.com/d/dash-7f3a", title=title)
                return f"created {title}"

            @protected_function_tool(ledger, tool="mcp__codehost__create_issue")
            def create_issue(ctx: RunContextWrapper[Any], title: str) -> str:
                created.append(f"issue:{title}:{ctx.tool_call_id}")
                return "issue #419"

            model = ScriptedModel([
                ("call_dash_1", "create_dashboard", {"title": "Service overview"}),
                ("call_issue_2", "create_issue", {"title": "Refund rounds down"}),
            ])
            agent = Agent(name="builder", instructions="build", model=model, tools=[create_dashboard, create_issue])
            result = await run_turn(ledger, agent, "make them", session_key=session_key,
                                    logical_turn_id="run-1", run_config=NO_TRACING)
            return model, result

    model, result = asyncio.run(main())
    assert result.final_output == "done"
    assert sorted(created) == ["Service overview", "issue:Refund rounds down:call_issue_2"]
    assert function_outputs(model) == {"call_dash_1": "created Service overview", "call_issue_2": "issue #419"}
    assert reads.turns(session_key) == ["run-1"]
    records = reads.by_id(session_key)
    assert {k: (v["logical_turn_id"], v["tool"], v["status"]) for k, v in records.items()} == {
        "call_dash_1": ("run-1", "mcp__dashboards__create", "completed"),
        "call_issue_2": ("run-1", "mcp__codehost__create_issue", "completed"),
    }
    assert (records["call_dash_1"]["resource_id"], records["call_dash_1"]["title"]) == ("dash-7f3a", "Service overview")
    assert len(reads.entries(session_key, "run-1")) == 2


def test_a_tool_that_raises_is_outcome_unknown_and_the_model_is_told(server, reads, session_key):
    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_function_tool(ledger, tool="mcp__codehost__create_issue")
            async def create_issue(title: str) -> str:
                raise ConnectionResetError("the reply was lost")

            @protected_function_tool(ledger, tool="mcp__dashboards__create")
            async def create_dashboard(title: str) -> str:
                raise TimeoutError("no answer within 30 s")

            model = ScriptedModel([("call_a", "create_issue", {"title": "x"}),
                                   ("call_b", "create_dashboard", {"title": "y"})])
            agent = Agent(name="builder", model=model, tools=[create_issue, create_dashboard])
            # Two runs of one session: two logical turns, ids generated.
            await run_turn(ledger, agent, "go", session_key=session_key, run_config=NO_TRACING)
            return model

    model = asyncio.run(main())
    outputs = function_outputs(model)
    assert set(outputs) == {"call_a", "call_b"}
    for call_id in ("call_a", "call_b"):
        assert outputs[call_id].startswith(f"The outcome of this tool call is unknown (operation id {call_id})")
        assert "Do not call the tool again" in outputs[call_id]
    [turn] = reads.turns(session_key)
    assert turn.startswith("turn-")
    got = {k: (v["status"], v.get("reason"), v["logical_turn_id"]) for k, v in reads.by_id(session_key).items()}
    assert got == {"call_a": ("outcome_unknown", None, turn),
                   "call_b": ("outcome_unknown", "execution_timeout", turn)}


def test_a_protected_tool_outside_a_turn_records_nothing_and_does_not_run(server):
    ran: list[str] = []

    async def main():
        from agents import Runner

        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_function_tool(ledger)
            async def create_dashboard(title: str) -> str:
                ran.append(title)
                return "ok"

            model = ScriptedModel([("call_z", "create_dashboard", {"title": "x"})])
            agent = Agent(name="builder", model=model, tools=[create_dashboard])
            await Runner.run(agent, "go", run_config=NO_TRACING)
            return model

    # A forgotten run_turn is the developer's error: it ends the run, naming run_turn (it used to be
    # turned into a message for the model by the SDK's failure_error_function, and the run ended "done").
    with pytest.raises(OutsideTurn, match=r"run_turn\(\.\.\.\)") as info:
        asyncio.run(main())
    assert ran == []
    assert "outside a ledger turn" in str(info.value) and "nothing was recorded" in str(info.value)


def test_a_forgotten_run_turn_raises_also_with_a_failure_function_of_ones_own(server):
    told: list[str] = []

    def my_failure(ctx: RunContextWrapper[Any], error: Exception) -> str:
        told.append(type(error).__name__)
        return "sorry"

    async def main():
        from agents import Runner

        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_function_tool(ledger, failure_error_function=my_failure)
            async def create_dashboard(title: str) -> str:
                return "ok"

            model = ScriptedModel([("call_y", "create_dashboard", {"title": "x"})])
            await Runner.run(Agent(name="b", model=model, tools=[create_dashboard]), "go", run_config=NO_TRACING)

    with pytest.raises(OutsideTurn):
        asyncio.run(main())
    assert told == []


def test_a_forgotten_run_turn_raises_also_without_a_failure_function(server):
    async def main():
        from agents import Runner

        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_function_tool(ledger, failure_error_function=None)
            async def create_dashboard(title: str) -> str:
                return "ok"

            model = ScriptedModel([("call_x", "create_dashboard", {"title": "x"})])
            await Runner.run(Agent(name="b", model=model, tools=[create_dashboard]), "go", run_config=NO_TRACING)

    with pytest.raises(OutsideTurn, match="run_turn"):
        asyncio.run(main())


def test_ledger_down_the_tool_does_not_run_and_the_model_is_told(session_key):
    from conftest import free_port

    ran: list[str] = []

    async def main():
        async with AsyncLedger(f"http://127.0.0.1:{free_port()}", "t", retry_total_secs=0.3) as ledger:
            @protected_function_tool(ledger)
            async def create_dashboard(title: str) -> str:
                ran.append(title)
                return "ok"

            model = ScriptedModel([("call_d", "create_dashboard", {"title": "x"})])
            agent = Agent(name="builder", model=model, tools=[create_dashboard])
            await run_turn(ledger, agent, "go", session_key=session_key, run_config=NO_TRACING)
            return model

    model = asyncio.run(main())
    assert ran == []
    assert function_outputs(model)["call_d"] == (
        "The tool was not called: the outcome ledger could not record the call (LedgerConnectionError "
        "connection_failed); nothing was done.")


def test_timeout_seconds_is_applied_inside_the_block_as_execution_timeout(server, reads, session_key):
    async def main():
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @protected_function_tool(ledger, tool="mcp__codehost__create_issue", timeout_seconds=0.05)
            async def create_issue(title: str) -> str:
                await asyncio.sleep(5)
                return "never"

            model = ScriptedModel([("call_slow", "create_issue", {"title": "x"})])
            agent = Agent(name="builder", model=model, tools=[create_issue])
            await run_turn(ledger, agent, "go", session_key=session_key, logical_turn_id="run-t", run_config=NO_TRACING)
            return model

    model = asyncio.run(main())
    assert function_outputs(model)["call_slow"].startswith("The outcome of this tool call is unknown (operation id call_slow)")
    record = reads.by_id(session_key)["call_slow"]
    assert (record["status"], record["reason"]) == ("outcome_unknown", "execution_timeout")
