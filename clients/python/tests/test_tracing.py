"""The host's OpenTelemetry context travels with a protected write's approve (docs/api.md "Host write
API", `traceparent`; docs/operations.md "OpenTelemetry"): the real OpenTelemetry SDK and Pydantic AI's
own instrumentation, the value read back from the ledger's file (`entries.traceparent`)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from typing import Any, Optional

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from outcomes_ledger import AsyncLedger, InvalidRequest, Ledger, ops
from outcomes_ledger.adapters.pydantic_ai import protected_tool, run_turn

TOOL = "mcp__dashboards__create"


def stored_traceparent(own_server: Any, mutation_id: str) -> Optional[str]:
    db = sqlite3.connect(os.path.join(own_server.data_dir, "ledger.sqlite"))
    try:
        rows = db.execute("SELECT traceparent FROM entries WHERE mutation_id = ?", (mutation_id,)).fetchall()
    finally:
        db.close()
    assert len(rows) == 1, rows
    return rows[0][0]


def traceparent_of(span: Any) -> str:
    """The span's W3C form: its trace flags as the SDK set them (`01` sampled, `03` when the SDK also
    marks its trace id random, W3C Trace Context Level 2)."""
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp, exporter


def test_a_protected_write_in_a_span_sends_that_span_as_its_traceparent(own_server):
    tp, exporter = provider()
    tracer = tp.get_tracer("host")
    with Ledger(own_server.base_url, own_server.token) as ledger:
        with tracer.start_as_current_span("host tool call"):
            with ledger.protected_write(session_key="traced", logical_turn_id="t1", mutation_id="m-in-span",
                                        tool=TOOL) as op:
                pass
        with ledger.protected_write(session_key="traced", logical_turn_id="t1", mutation_id="m-no-span",
                                    tool=TOOL) as plain:
            pass
    (host,) = exporter.get_finished_spans()
    assert op.traceparent == traceparent_of(host)
    assert stored_traceparent(own_server, "m-in-span") == traceparent_of(host)
    # Outside every span (the API's invalid context): nothing sent, the write in its session's trace.
    assert plain.traceparent is None
    assert stored_traceparent(own_server, "m-no-span") is None


def test_a_span_not_sampled_is_sent_with_its_flags(own_server):
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    tracer = TracerProvider(sampler=ALWAYS_OFF).get_tracer("host")
    with Ledger(own_server.base_url, own_server.token) as ledger:
        with tracer.start_as_current_span("not sampled") as span:
            with ledger.protected_write(session_key="traced", logical_turn_id="t1", mutation_id="m-unsampled",
                                        tool=TOOL):
                pass
    assert not span.get_span_context().trace_flags.sampled
    assert stored_traceparent(own_server, "m-unsampled") == traceparent_of(span)


def test_pydantic_ai_execute_tool_span_is_the_parent_of_the_write(own_server):
    tp, exporter = provider()
    seen: list[list[ModelMessage]] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="create_dashboard", args={"title": "Latency"},
                                                     tool_call_id="pyd_traced")])
        return ModelResponse(parts=[TextPart("done")])

    async def main() -> Any:
        async with AsyncLedger(own_server.base_url, own_server.token) as ledger:
            @protected_tool(ledger, tool=TOOL)
            async def create_dashboard(title: str) -> str:
                """Create a dashboard titled `title`."""
                return f"created {title}"

            agent = Agent(FunctionModel(answer), tools=[create_dashboard],
                          capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=tp))])
            return await run_turn(ledger, agent, "make it", session_key="traced-agent", logical_turn_id="run-1")

    assert asyncio.run(main()).output == "done"
    tool_spans = [s for s in exporter.get_finished_spans()
                  if (s.attributes or {}).get("gen_ai.tool.call.id") == "pyd_traced"]
    assert len(tool_spans) == 1, [(s.name, dict(s.attributes or {})) for s in exporter.get_finished_spans()]
    assert tool_spans[0].name == "execute_tool create_dashboard"
    assert stored_traceparent(own_server, "pyd_traced") == traceparent_of(tool_spans[0])


def test_an_explicit_traceparent_is_checked_by_the_ledger(own_server):
    good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    with Ledger(own_server.base_url, own_server.token) as ledger:
        entry = ledger.approve("explicit", "t1", "m-good", TOOL, traceparent=good)
        assert entry.ledger_status == "approved"
        with pytest.raises(InvalidRequest) as err:
            ledger.approve("explicit", "t1", "m-bad", TOOL, traceparent=good.upper())
        assert (err.value.status, err.value.field) == (422, "traceparent")
        (result,) = ledger.batch([ops.approve("explicit", "t1", "m-batch", TOOL, traceparent=good[:-1])])
        assert (result.status, result.error and result.error.field) == (422, "traceparent")
    assert stored_traceparent(own_server, "m-good") == good
