"""OpenAI Agents SDK (`openai-agents`) adapter: protected function tools.

    from agents import Agent
    from outcomes_ledger import AsyncLedger
    from outcomes_ledger.adapters.openai_agents import protected_function_tool, run_turn

    ledger = AsyncLedger("http://127.0.0.1:3000", token)

    @protected_function_tool(ledger, tool="mcp__dashboards__create")
    async def create_dashboard(title: str) -> str:
        ...

    agent = Agent(name="builder", tools=[create_dashboard])
    result = await run_turn(ledger, agent, "Make a dashboard", session_key="chat-42")

Each call of the tool is one protected write (`AsyncLedger.protected_write`): its `mutation_id` is
the model's tool call id (`ToolContext.tool_call_id`), its session and logical turn those of the
enclosing `run_turn(...)` (one agent run = one logical turn) or `ledger.turn(...)`. Inside the tool,
`outcomes_ledger.current_write()` is the `op` (`attach`, `failed`, `not_executed`).

A tool that raises settles by the client's rules (any exception but `NotDispatched` /
`ProviderFailed` → `outcome_unknown`; a `TimeoutError` adds `execution_timeout`); the exception
then goes on to the SDK. The SDK's own default tells the model "Please try again", which for an
unknown outcome invites a second write; so the adapter's default `failure_error_function` is
`tool_error_message`, which tells the model what the ledger recorded (unknown: do not call again,
quote the operation id; not executed; failed; not run because the ledger could not record it).
Pass `failure_error_function=` to replace it, or `None` to let the exception end the run. A tool
called outside a turn (the agent run with plain `Runner.run`, not `run_turn`) raises `OutsideTurn`
before it runs and records nothing; that error always ends the run (the adapter's failure function,
or yours wrapped, re-raises it instead of telling the model).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Callable, Optional

try:
    from agents import Agent, FunctionTool, RunContextWrapper, Runner, function_tool
    from agents.exceptions import AgentsException
    from agents.result import RunResult
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"outcomes_ledger.adapters.openai_agents needs openai-agents: pip install 'outcomes-ledger[openai-agents]' ({exc})"
    ) from exc

from .._client import AsyncLedger
from .._deadline import check_deadline_secs
from .._protected import outcome_message
from .._status import StatusCheck
from ..errors import OutsideTurn
from . import require_turn, takes_context, tool_name, with_context_signature


def tool_error_message(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """The message the model gets for a protected tool that raised (see the module's doc):
    `outcomes_ledger.outcome_message(error, tool call id)`."""
    return outcome_message(error, getattr(ctx, "tool_call_id", None))


class OutsideTurnError(OutsideTurn, AgentsException):
    """`OutsideTurn` as the SDK lets it through as is: the runner wraps a tool's other exceptions in
    `UserError("Error running tool ...")`, never an `AgentsException`."""


def _outside_turn_propagates(fn: Callable[[RunContextWrapper[Any], Exception], Any]) -> Callable[..., Any]:
    """The SDK hands every exception of a tool to its `failure_error_function` and gives the model
    what it returns; a failure function that raises ends the run with that exception. `OutsideTurn`
    (the agent was run without `run_turn`) is the developer's error, not the model's: raise it."""

    @functools.wraps(fn)
    def failure(ctx: RunContextWrapper[Any], error: Exception) -> Any:
        if isinstance(error, OutsideTurnError):
            raise error
        if isinstance(error, OutsideTurn):
            raise OutsideTurnError(str(error)) from error
        return fn(ctx, error)

    return failure


def protected_function_tool(
    ledger: AsyncLedger, *, tool: Optional[str] = None, deadline_secs: Optional[int] = None,
    status: Optional[StatusCheck] = None, **function_tool_kwargs: Any
) -> Callable[[Callable[..., Any]], FunctionTool]:
    """Decorator: `fn` (sync or async, optionally taking `RunContextWrapper`/`ToolContext` first)
    becomes an SDK `FunctionTool` whose every call is a protected write of `tool` (default: the
    function's name) with `deadline_secs` (1 to 604800; default none sent: the server's, 900 s),
    extended every third of it while the call runs (`AsyncLedger.protected_write`, docs/api.md
    "Deadlines"), and `status` its status check (README "Status checks"; default the ledger's
    `status_checks[tool]`). Other keywords go to `agents.function_tool` (`name_override`,
    `failure_error_function`, …), except `timeout_seconds` for an async `fn`: the adapter applies
    it inside the protected block, so a call that runs out of time is recorded `outcome_unknown`
    with `execution_timeout` (the SDK's own timeout cancels the block from outside, which records
    `outcome_unknown` without a reason)."""

    check_deadline_secs(deadline_secs)

    def decorate(fn: Callable[..., Any]) -> FunctionTool:
        ledger_tool = tool_name(fn, tool)
        fn_takes_ctx = takes_context(fn, (RunContextWrapper,))
        timeout: Optional[float] = None
        if inspect.iscoroutinefunction(fn):
            timeout = function_tool_kwargs.pop("timeout_seconds", None)

        @functools.wraps(fn)
        async def wrapper(ctx: ToolContext[Any], *args: Any, **kwargs: Any) -> Any:
            try:
                turn = require_turn(ledger_tool)
            except OutsideTurn as exc:
                raise OutsideTurnError(str(exc)) from None
            async with ledger.protected_write(
                session_key=turn.session_key,
                logical_turn_id=turn.logical_turn_id,
                mutation_id=ctx.tool_call_id,
                tool=ledger_tool,
                deadline_secs=deadline_secs,
                status=status,
            ) as op:
                result = fn(ctx, *args, **kwargs) if fn_takes_ctx else fn(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await (result if timeout is None else asyncio.wait_for(result, timeout))
                op.result = result
                return result

        with_context_signature(wrapper, fn, ToolContext, fn_takes_ctx)
        kwargs = dict(function_tool_kwargs)
        failure = kwargs.get("failure_error_function", tool_error_message)
        if failure is not None:
            kwargs["failure_error_function"] = _outside_turn_propagates(failure)
        return function_tool(wrapper, **kwargs)

    return decorate


async def run_turn(
    ledger: AsyncLedger,
    agent: Agent[Any],
    input: Any,
    *,
    session_key: str,
    logical_turn_id: Optional[str] = None,
    **runner_kwargs: Any,
) -> RunResult:
    """`Runner.run(agent, input, **runner_kwargs)` as one logical turn of `session_key`
    (`logical_turn_id` generated when not given). The turn is `result.context_wrapper`-independent:
    read it back with `outcomes_ledger.current_turn()` inside tools."""
    async with ledger.turn(session_key, logical_turn_id):
        return await Runner.run(agent, input, **runner_kwargs)
