//! Live delivery (seed 000, "Events"): after an outcome is durably settled, the engine calls the adapter.
//! Delivery is best effort; an adapter error or panic never changes settlement.

use crate::ids::SessionKey;
use crate::wire::MutationOutcome;

/// An adapter failure. Logged by the engine, never surfaced to the writer.
#[derive(Debug, thiserror::Error)]
#[error("adapter: {0}")]
pub struct AdapterError(pub String);

/// Receives each settled change: settlement, cancellation, reconciliation, and host metadata on a settled
/// entry; never in-flight intent, a fresh attempt, or a refusal. Called after the change is committed, in
/// revision order per turn, while the ledger's writer lock is held: implementations must not block.
///
/// Differs from seed 000's `on_mutation_outcome(outcome, mutation_revision)` by also taking the session key:
/// the record itself does not carry it, and live streams are per session.
pub trait Adapter: Send + Sync {
    /// Delivers `outcome` (the entry's current projection) of `session_key` under `mutation_revision`, the
    /// revision of the change. An error is logged and never changes the ledger.
    fn on_mutation_outcome(
        &self,
        session_key: &SessionKey,
        outcome: &MutationOutcome,
        mutation_revision: i64,
    ) -> Result<(), AdapterError>;

    /// The session is gone: deleted by its host, or deleted by the retention sweep after it expired. Called
    /// after the deletion is committed. Live streams of the session end here (docs/api.md, live run
    /// events: `session_ended`). The default does nothing.
    fn on_session_ended(&self, _session_key: &SessionKey, _reason: SessionEnd) {}
}

/// Why a session's history went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// `DELETE /api/host/sessions/{key}` (or `Engine::delete_session`).
    Deleted,
    /// Its time to live ran out and the retention sweep deleted it.
    Expired,
}

impl SessionEnd {
    /// The `reason` of the `session_ended` event: `deleted` or `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEnd::Deleted => "deleted",
            SessionEnd::Expired => "expired",
        }
    }
}

/// An adapter that delivers nothing.
#[derive(Debug, Default)]
pub struct NoAdapter;

impl Adapter for NoAdapter {
    fn on_mutation_outcome(
        &self,
        _: &SessionKey,
        _: &MutationOutcome,
        _: i64,
    ) -> Result<(), AdapterError> {
        Ok(())
    }
}
