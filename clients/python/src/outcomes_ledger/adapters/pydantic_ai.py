"""Pydantic AI adapter: protected tools.

    from pydantic_ai import Agent
    from outcomes_ledger import AsyncLedger
    from outcomes_ledger.adapters.pydantic_ai import protected_tool, run_turn

    ledger = AsyncLedger("http://127.0.0.1:3000", token)

    @protected_tool(ledger, tool="mcp__dashboards__create")
    async def create_dashboard(title: str) -> str:
        ...

    agent = Agent(model, tools=[create_dashboard])
    result = await run_turn(ledger, agent, "Make a dashboard", session_key="chat-42")

`protected_tool` returns a function taking `RunContext` first, usable in `Agent(tools=[...])` or
under `@agent.tool`. Each call is one protected write (`AsyncLedger.protected_write`): its
`mutation_id` is the model's tool call id (`RunContext.tool_call_id`), its session and logical turn
those of the enclosing `run_turn(...)` (one agent run = one logical turn) or `ledger.turn(...)`.
Inside the tool, `outcomes_ledger.current_write()` is the `op`.

A tool that raises settles by the client's rules (any exception but `NotDispatched` /
`ProviderFailed` → `outcome_unknown`; a `TimeoutError` adds `execution_timeout`), and the model is
told what the ledger recorded (`outcome_message`: an unknown outcome is "do not call the tool again",
with the operation id) through Pydantic AI's `ToolFailed`, so several tool calls of one model response
each settle by their own outcome and one failure does not abort the run (nor cancel its siblings).
Pydantic AI's own signals raised by the tool: `ModelRetry` and `ToolFailed` settle `failed` (the
tool says the call did not do it) and are re-raised, so the framework retries or reports as usual;
`CallDeferred` and `ApprovalRequired` cancel (`not_executed`: raise them before the write) and are
re-raised. Pass `failure_message=None` to let other exceptions end the run instead. A tool called
outside a turn raises `OutsideTurn` before it runs and records nothing; that error always ends the
run.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, TypeVar

try:
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.agent import AgentRunResult
    from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"outcomes_ledger.adapters.pydantic_ai needs pydantic-ai-slim: pip install 'outcomes-ledger[pydantic-ai]' ({exc})"
    ) from exc

from .._client import AsyncLedger
from .._deadline import check_deadline_secs
from .._protected import outcome_message
from .._status import StatusCheck
from . import require_turn, takes_context, tool_name, with_context_signature

F = TypeVar("F", bound=Callable[..., Any])


def tool_error_message(ctx: RunContext[Any], error: Exception) -> str:
    """The message the model gets for a protected tool that raised (see the module's doc):
    `outcomes_ledger.outcome_message(error, tool call id)`."""
    return outcome_message(error, ctx.tool_call_id)


_FAILED = (ModelRetry, ToolFailed)
_NOT_RUN = (CallDeferred, ApprovalRequired)


def protected_tool(ledger: AsyncLedger, *, tool: Optional[str] = None,
                   deadline_secs: Optional[int] = None,
                   status: Optional[StatusCheck] = None,
                   failure_message: Optional[Callable[[RunContext[Any], Exception], str]] = tool_error_message,
                   ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: `fn` (sync or async, optionally taking `RunContext` first) becomes a tool
    function taking `RunContext` first whose every call is a protected write of `tool` (default:
    the function's name) with `deadline_secs` (1 to 604800; default none sent: the server's, 900 s),
    extended every third of it while the call runs (`AsyncLedger.protected_write`, docs/api.md
    "Deadlines"), and `status` its status check (README "Status checks"; default the ledger's
    `status_checks[tool]`). `failure_message(ctx, error)` is the text the model gets (as `ToolFailed`)
    for a call that raised (default `tool_error_message`); `None` lets the exception end the run."""
    check_deadline_secs(deadline_secs)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        ledger_tool = tool_name(fn, tool)
        fn_takes_ctx = takes_context(fn, (RunContext,))

        @functools.wraps(fn)
        async def wrapper(ctx: RunContext[Any], *args: Any, **kwargs: Any) -> Any:
            turn = require_turn(ledger_tool)
            if not ctx.tool_call_id:
                raise RuntimeError(f"the protected tool {ledger_tool!r} was called without a tool call id")
            signal: Optional[Exception] = None
            try:
                async with ledger.protected_write(
                    session_key=turn.session_key,
                    logical_turn_id=turn.logical_turn_id,
                    mutation_id=ctx.tool_call_id,
                    tool=ledger_tool,
                    deadline_secs=deadline_secs,
                    status=status,
                ) as op:
                    try:
                        result = fn(ctx, *args, **kwargs) if fn_takes_ctx else fn(*args, **kwargs)
                        if inspect.isawaitable(result):
                            result = await result
                    except _FAILED as exc:  # the tool says it did not do it: failed, the framework goes on
                        op.failed()
                        signal, result = exc, None
                    except _NOT_RUN as exc:  # deferred before the write: not executed
                        op.not_executed()
                        signal, result = exc, None
                    op.result = result
            except Exception as exc:
                if failure_message is None:
                    raise
                raise ToolFailed(failure_message(ctx, exc)) from exc
            if signal is not None:
                raise signal
            return result

        with_context_signature(wrapper, fn, RunContext[Any], fn_takes_ctx)
        return wrapper

    return decorate


async def run_turn(
    ledger: AsyncLedger,
    agent: Agent[Any, Any],
    user_prompt: Any = None,
    *,
    session_key: str,
    logical_turn_id: Optional[str] = None,
    **run_kwargs: Any,
) -> AgentRunResult[Any]:
    """`agent.run(user_prompt, **run_kwargs)` as one logical turn of `session_key`
    (`logical_turn_id` generated when not given)."""
    async with ledger.turn(session_key, logical_turn_id):
        return await agent.run(user_prompt, **run_kwargs)
