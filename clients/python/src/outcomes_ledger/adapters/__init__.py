"""Adapters of agent frameworks: `outcomes_ledger.adapters.openai_agents` (OpenAI Agents SDK,
`pip install "outcomes-ledger[openai-agents]"`) and `outcomes_ledger.adapters.pydantic_ai`
(Pydantic AI, `pip install "outcomes-ledger[pydantic-ai]"`). In both, the framework's tool call id
is the `mutation_id` and one agent run is one logical turn."""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable, Optional

from .._protected import Turn, current_turn
from ..errors import OutsideTurn


def require_turn(tool: str) -> Turn:
    turn = current_turn()
    if turn is None:
        raise OutsideTurn(
            f"the protected tool {tool!r} ran outside a ledger turn: run the agent with the adapter's "
            "run_turn(...) or inside ledger.turn(session_key); nothing was recorded and the tool did not run"
        )
    return turn


def takes_context(fn: Callable[..., Any], context_types: tuple[type, ...]) -> bool:
    """Whether `fn`'s first parameter is annotated with one of the framework's context types."""
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        return False
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    ann = hints.get(params[0].name, params[0].annotation)
    origin = typing.get_origin(ann) or ann if ann is not inspect.Parameter.empty else None
    return isinstance(origin, type) and issubclass(origin, context_types)


def with_context_signature(wrapper: Callable[..., Any], fn: Callable[..., Any], ctx_type: Any,
                           fn_takes_ctx: bool) -> None:
    """Give `wrapper` the signature of `fn` with a first parameter `ctx: ctx_type`, so the
    framework builds the tool's JSON schema from `fn` and hands the wrapper its run context."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    annotations = dict(getattr(fn, "__annotations__", {}))
    if fn_takes_ctx:
        first = params[0].replace(annotation=ctx_type)
        annotations[first.name] = ctx_type
        params = [first] + params[1:]
    else:
        name = "ctx"
        while name in sig.parameters:
            name = "_" + name
        params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ctx_type)] + params
        annotations = {name: ctx_type, **annotations}
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = annotations


def tool_name(fn: Callable[..., Any], tool: Optional[str]) -> str:
    return tool or str(getattr(fn, "__name__", "tool"))

