"""The host's OpenTelemetry trace context, passed with a protected write's approve (docs/api.md "Host
write API", the field `traceparent`): the ledger's span `mutation_outcome {tool}` is then a child of the
span current when the protected write began (an agent framework's `execute_tool` span, for instance),
docs/operations.md "OpenTelemetry"."""

from __future__ import annotations

import logging
from typing import Optional

logger = logging.getLogger("outcomes_ledger")


def current_traceparent() -> Optional[str]:
    """The W3C `traceparent` of the current OpenTelemetry context, or `None`.

    `None` when the `opentelemetry` API is not installed, when no span is current (or only the API's
    no-op one: no SDK configured), or when the host's configured propagators do not write
    `traceparent` (`OTEL_PROPAGATORS` without `tracecontext`): the write is then in its session's own
    trace. Written by the API's global propagator (`opentelemetry.propagate.inject`), never by hand.
    Never raises: a tracing fault is logged and the write goes on without it."""
    try:
        from opentelemetry import propagate
    except ImportError:
        return None
    carrier: dict[str, str] = {}
    try:
        propagate.inject(carrier)
    except Exception as err:  # noqa: BLE001 - tracing never stops a write
        logger.warning("outcomes_ledger: the OpenTelemetry context could not be read: %s", err)
        return None
    value = carrier.get("traceparent")
    return value if isinstance(value, str) and value else None
