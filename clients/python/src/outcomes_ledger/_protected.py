"""The protected write (README "The protected write", with docs/api.md's transitions), the logical turn context."""

from __future__ import annotations

import base64
import contextvars
import hashlib
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

from . import ops
from ._core import batch_error
from ._deadline import DEFAULT_DEADLINE_SECS, Extender
from ._status import StatusAnswer, StatusCheck, UnknownOperation, now_rfc3339
from ._trace import current_traceparent
from ._types import BatchResult, Entry
from .errors import LedgerError, LedgerSettleError, NotDispatched, ProviderFailed


@dataclass(frozen=True)
class Turn:
    """The session and logical turn that protected writes without explicit ids belong to."""

    session_key: str
    logical_turn_id: str


_turn: contextvars.ContextVar[Optional[Turn]] = contextvars.ContextVar("outcomes_ledger_turn", default=None)
_write: contextvars.ContextVar[Optional["Operation"]] = contextvars.ContextVar("outcomes_ledger_write", default=None)


def current_turn() -> Optional[Turn]:
    """The innermost `ledger.turn(...)` around the caller, or `None`."""
    return _turn.get()


def current_write() -> Optional["Operation"]:
    """The innermost protected write around the caller (inside a `protect`-decorated function or an
    adapter's tool), or `None`: lets such a function call `op.attach(...)`, `op.failed()`."""
    return _write.get()


class TurnScope:
    """`with ledger.turn(session_key, logical_turn_id) as turn:` (also `async with`): protected
    writes inside it that do not name a session and turn belong to this one. Without a
    `logical_turn_id` one is generated (`turn-<32 hex>`)."""

    def __init__(self, session_key: str, logical_turn_id: Optional[str] = None) -> None:
        self.turn = Turn(session_key, logical_turn_id or f"turn-{uuid.uuid4().hex}")
        self._token: Optional[contextvars.Token[Optional[Turn]]] = None

    def __enter__(self) -> Turn:
        self._token = _turn.set(self.turn)
        return self.turn

    def __exit__(self, *exc: Any) -> None:
        assert self._token is not None
        _turn.reset(self._token)

    async def __aenter__(self) -> Turn:
        return self.__enter__()

    async def __aexit__(self, *exc: Any) -> None:
        self.__exit__(*exc)


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def idempotency_key(ledger_id: str, session_key: str, mutation_id: str) -> str:
    """The idempotency key of an operation, to hand to a provider that keeps keys (README "Status
    checks"): `ol_` + the first 32 characters of the lowercase RFC 4648 base32 of SHA-256 over the UTF-8
    of `ledger_id`, a zero byte, `session_key`, a zero byte and `mutation_id` (35 characters). The same
    for the operation whoever computes it (a restarted host, a fresh attempt), distinct across ledgers
    (`ledger_id` is `GET /api/host/ledger`'s). The TypeScript client derives the same
    (clients/idempotency-key-vectors.json)."""
    digest = hashlib.sha256(b"\0".join(v.encode("utf-8") for v in (ledger_id, session_key, mutation_id))).digest()
    return "ol_" + base64.b32encode(digest).decode("ascii").lower()[:32]


class Operation:
    """The protected write in progress, as the block sees it (`as op`).

    `mutation_id` (the operation id people quote), `attempt_id` (fresh per protected write),
    `idempotency_key` (stable for the operation: send it to a provider that keeps idempotency keys),
    `entry` (the ledger's state after intent), `deadline_secs` (as given; `None`: the server's
    default, 900 s). `failed()`, `not_executed()` state the outcome when the block returns;
    `attach(id=, url=, title=)` sends host metadata with the settlement.
    """

    def __init__(self, session_key: str, logical_turn_id: str, mutation_id: str, tool: str,
                 attempt_id: str, deadline_secs: Optional[int] = None) -> None:
        self.session_key = session_key
        self.logical_turn_id = logical_turn_id
        self.mutation_id = mutation_id
        self.tool = tool
        self.attempt_id = attempt_id
        self.deadline_secs = deadline_secs
        self.traceparent: Optional[str] = current_traceparent()
        """The W3C trace context current when the protected write began (OpenTelemetry active in the
        host), sent with its approve so the ledger's span of the write is its child; else `None`."""
        self.extender: Optional[Extender] = None
        """While and after the block: what extended the deadline (`extended`, `failures`)."""
        self.entry: Optional[Entry] = None
        """The entry after intent; after the block, the settled entry."""
        self.result: Any = None
        """What the block returned, when a `protect`-decorated function was the block."""
        self.outcome: Optional[str] = None
        """After the block: `completed`, `failed`, `not_executed` or `outcome_unknown`."""
        self._declared: Optional[tuple[str, Optional[str]]] = None
        self._metadata: Optional[dict[str, Optional[str]]] = None
        self._idempotency_key: Optional[str] = None
        self.status_check: Optional[StatusCheck] = None
        """The status check to run if the block ends unknown (`status=`, else the client's
        `status_checks[tool]`)."""
        self.started_at: Optional[str] = None
        """When the intent was recorded (host clock, RFC 3339)."""
        self.status_answer: Optional[StatusAnswer] = None
        """After a block that ended unknown and whose status check concluded: that answer (the entry
        is then reconciled: `outcome` is `completed` or `not_executed`)."""

    def unknown_operation(self) -> UnknownOperation:
        """This write as a status check is asked about it."""
        return UnknownOperation(self.session_key, self.logical_turn_id, self.mutation_id, self.tool,
                                self.attempt_id, self.idempotency_key, self.started_at or now_rfc3339())

    @property
    def idempotency_key(self) -> str:
        """`ol_` + 32 base32 characters, derived from the ledger's id, `session_key` and `mutation_id`
        (`outcomes_ledger.idempotency_key`): the same from a restarted host and for a fresh attempt
        of the same operation. Known once the protected write has started (inside the block)."""
        if self._idempotency_key is None:
            raise RuntimeError("op.idempotency_key is known once the protected write has started (inside the block)")
        return self._idempotency_key

    def set_ledger_id(self, ledger_id: str) -> None:
        self._idempotency_key = idempotency_key(ledger_id, self.session_key, self.mutation_id)

    def failed(self) -> None:
        """The provider answered that the write failed: settle `failed` when the block returns."""
        self._declared = ("failed", None)

    def not_executed(self, reason: Optional[str] = None) -> None:
        """The write was never dispatched: cancel (publishes `not_executed`) when the block returns.
        `reason` may be `"pre_dispatch_deadline"`."""
        self._declared = ("not_executed", reason)

    def attach(self, id: Optional[str] = None, url: Optional[str] = None, title: Optional[str] = None) -> None:
        """Host metadata of the written resource (the server's confirmed id, url, title), sent in
        the same batch as the settlement, before it. All three are set at once; a missing or empty
        one is published as `null`; the server sanitises them (docs/api.md "Limits")."""
        self._metadata = {"id": id, "url": url, "title": title}

    # The batches -------------------------------------------------------------

    def start_ops(self) -> list[dict[str, Any]]:
        return [
            ops.approve(self.session_key, self.logical_turn_id, self.mutation_id, self.tool,
                        traceparent=self.traceparent),
            ops.intent(self.session_key, self.mutation_id, self.attempt_id, self.deadline_secs),
        ]

    def start_extending(self, extend: Callable[[float], Any]) -> None:
        """Extend the deadline every third of it until `stop_extending()` (docs/api.md "Deadlines");
        `extend(timeout)` sends one extension to `deadline_secs` (or the default 900 s)."""
        what = f"operation {self.mutation_id!r} (attempt {self.attempt_id!r})"
        self.extender = Extender(extend, what, self.deadline_secs or DEFAULT_DEADLINE_SECS).start()

    def stop_extending(self) -> None:
        if self.extender is not None:
            self.extender.stop()

    def check_start(self, results: list[BatchResult]) -> None:
        """Approve + intent must both be recorded. A redelivered approve (409 `already_recorded`)
        is fine exactly when the intent of this attempt (fresh, never used before) is recorded."""
        approve, intent = results
        if not intent.ok:
            if not approve.ok:
                raise batch_error(approve, "approve")
            raise batch_error(intent, "intent")
        if not approve.ok:
            current = approve.error.current if approve.error else None
            ours = (
                approve.status == 409
                and current is not None
                and current.attempt_id == self.attempt_id
                and current.logical_turn_id == self.logical_turn_id
            )
            if not ours:
                raise batch_error(approve, "approve")
        self.entry = intent.entry
        self.started_at = now_rfc3339()

    def finish_ops(self, exc: Optional[BaseException]) -> tuple[list[dict[str, Any]], str]:
        """The settlement for how the block ended (README "The protected write"): returned → what
        the block declared, else `completed`; `NotDispatched` → cancellation; `ProviderFailed` →
        `failed`; a built-in `TimeoutError` → `outcome_unknown` + `execution_timeout`; any other
        exception (cancellation and interrupts included) → `outcome_unknown`."""
        s, m, a = self.session_key, self.mutation_id, self.attempt_id
        if exc is None:
            kind, reason = self._declared or ("completed", None)
        elif isinstance(exc, NotDispatched):
            kind, reason = "not_executed", exc.reason
        elif isinstance(exc, ProviderFailed):
            kind, reason = "failed", None
        elif isinstance(exc, TimeoutError):
            kind, reason = "outcome_unknown", "execution_timeout"
        else:
            kind, reason = "outcome_unknown", None
        self.outcome = kind
        if kind == "not_executed":
            last = ops.cancel(s, m, a, reason)
        else:
            last = ops.settle(s, m, a, kind, reason)  # type: ignore[arg-type]
        batch = []
        if self._metadata is not None:
            batch.append(ops.metadata(s, m, **self._metadata))
        batch.append(last)
        return batch, kind

    def check_finish(self, results: list[BatchResult]) -> None:
        for op, result in zip(self._finish_names(len(results)), results):
            if not result.ok:
                raise batch_error(result, op)
        self.entry = results[-1].entry

    def _finish_names(self, n: int) -> list[str]:
        return (["attach_metadata"] if n == 2 else []) + ["settle"]


RecordedKind = Literal["outcome_unknown", "failed", "not_executed", "not_called", "completed"]


@dataclass(frozen=True)
class RecordedOutcome:
    """What the ledger recorded for an exception that left a protected write: `not_called` when the
    ledger could not record the intent (the block never ran), else how the block's end was settled
    (`outcome_unknown` also when its settlement could not be recorded: the entry stays in flight), or,
    when the block ended unknown and its status check concluded, what the provider's status
    established (`completed`, `not_executed`)."""

    outcome: RecordedKind
    mutation_id: str


_MARK = "__outcomes_ledger_recorded__"


def mark(exc: BaseException, outcome: RecordedKind, mutation_id: str) -> None:
    try:
        setattr(exc, _MARK, RecordedOutcome(outcome, mutation_id))
    except AttributeError:  # an exception type with __slots__: nothing to note on
        pass


def recorded_outcome(exc: BaseException) -> Optional[RecordedOutcome]:
    """What the ledger recorded for an exception a protected write raised or re-raised; `None` for
    any other exception."""
    found = getattr(exc, _MARK, None)
    return found if isinstance(found, RecordedOutcome) else None


def outcome_message(exc: BaseException, call_id: Optional[str] = None) -> str:
    """The message an agent framework should give the model for a protected tool call that raised:
    what the ledger recorded, so that the model does not call again what may have happened (an
    unknown outcome is not resent; new work is a new operation). `call_id` names the operation when
    the exception carries no record."""
    record = recorded_outcome(exc)
    op = record.mutation_id if record else (call_id or "?")
    kind = record.outcome if record else None
    if kind == "outcome_unknown":
        return (f"The outcome of this tool call is unknown (operation id {op}): it may or may not "
                "have taken effect. Do not call the tool again for this request; tell the user the "
                "result is being checked and give them the operation id.")
    if kind == "completed":
        return (f"The tool call's answer was lost, but the provider's own record shows it took effect "
                f"(operation id {op}). Do not call the tool again for this request.")
    if kind == "not_executed":
        return f"The tool call was not executed (operation id {op}); nothing was done."
    if kind == "failed":
        return f"The tool call failed (operation id {op}): the provider refused it; nothing was done."
    if kind == "not_called":
        name = f"{type(exc).__name__} {exc.code}" if isinstance(exc, LedgerError) else type(exc).__name__
        return f"The tool was not called: the outcome ledger could not record the call ({name}); nothing was done."
    return f"The tool was not called: {exc}"


def settle_failed(err: LedgerError, op: Operation, exc: Optional[BaseException]) -> Optional[LedgerError]:
    """The settlement after the block could not be recorded. With the block's own exception: note it
    on that exception (which is re-raised) and answer `None`; after a block that returned: answer
    the `LedgerSettleError` to raise."""
    if exc is not None:
        exc.add_note(
            f"outcomes_ledger: the ledger did not record this block's end ({op.outcome}): {err}. "
            f"Operation {op.mutation_id!r} (attempt {op.attempt_id!r}) stays in flight, published as "
            "outcome_unknown; do not run it again, reconcile it once its outcome is known."
        )
        mark(exc, "outcome_unknown", op.mutation_id)
        return None
    settle_error = LedgerSettleError(err, mutation_id=op.mutation_id, attempt_id=op.attempt_id,
                                     intended=op.outcome or "completed", result=op.result)
    settle_error.__cause__ = err
    mark(settle_error, "outcome_unknown", op.mutation_id)
    return settle_error
