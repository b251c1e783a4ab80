"""Client of the outcome ledger's host write API (docs/api.md "Host write API").

    from outcomes_ledger import Ledger

    ledger = Ledger("http://127.0.0.1:3000", token)
    with ledger.protected_write(session_key="chat-42", logical_turn_id="turn-1",
                                mutation_id="op-1", tool="mcp__dashboards__create") as op:
        create_dashboard()

The block runs only once the ledger recorded its intent; how it ends is settled honestly:
returned → `completed` (or `op.failed()` / `op.not_executed()`), `NotDispatched` →
`not_executed`, `ProviderFailed` → `failed`, `TimeoutError` → `outcome_unknown` with
`execution_timeout`, any other exception → `outcome_unknown`. While the block runs its deadline
(`deadline_secs=`, default the server's 900 s) is extended every third of it; a process that dies
leaves the write to the ledger, which settles it `outcome_unknown` at the deadline (docs/api.md
"Deadlines").
"""

from ._client import AsyncLedger, AsyncProtectedWrite, Ledger, ProtectedWrite
from ._protected import (
    Operation,
    RecordedOutcome,
    Turn,
    TurnScope,
    current_turn,
    current_write,
    idempotency_key,
    outcome_message,
    recorded_outcome,
)
from ._deadline import DEFAULT_DEADLINE_SECS
from ._status import (
    Completed,
    Inconclusive,
    NotAccepted,
    RecoveredItem,
    RecoverySummary,
    StatusAnswer,
    StatusCheck,
    UnknownOperation,
)
from ._types import BatchResult, Entry, ErrorDetail, Evidence, LedgerStatus, PublishedStatus, ViewerLink
from .errors import (
    Conflict,
    InvalidRequest,
    LedgerConnectionError,
    LedgerError,
    LedgerSettleError,
    LedgerUnavailable,
    NotDispatched,
    NotFound,
    OutsideTurn,
    ProviderFailed,
    Unauthorized,
    UnexpectedResponse,
)
from . import ops

__all__ = [
    "AsyncLedger",
    "AsyncProtectedWrite",
    "BatchResult",
    "Completed",
    "Conflict",
    "DEFAULT_DEADLINE_SECS",
    "Entry",
    "ErrorDetail",
    "Evidence",
    "Inconclusive",
    "InvalidRequest",
    "Ledger",
    "LedgerConnectionError",
    "LedgerError",
    "LedgerSettleError",
    "LedgerStatus",
    "LedgerUnavailable",
    "NotAccepted",
    "NotDispatched",
    "NotFound",
    "Operation",
    "OutsideTurn",
    "ProtectedWrite",
    "ProviderFailed",
    "PublishedStatus",
    "RecordedOutcome",
    "RecoveredItem",
    "RecoverySummary",
    "StatusAnswer",
    "StatusCheck",
    "Turn",
    "TurnScope",
    "Unauthorized",
    "UnexpectedResponse",
    "UnknownOperation",
    "ViewerLink",
    "current_turn",
    "current_write",
    "idempotency_key",
    "outcome_message",
    "recorded_outcome",
    "ops",
]
__version__ = "0.1.0"
