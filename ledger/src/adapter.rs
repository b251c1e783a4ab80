//! Live delivery (seed 000, "Events"): after an outcome is durably settled, the engine calls the adapter.
//! Delivery is best effort; an adapter error or panic never changes settlement.
//!
//! Announcing lives here too ([`announce`], [`announce_turn`] with what they deliver, [`Announcement`] and
//! [`TurnChange`]): the group commit builds them, the engine's writer (SQLite) and the store's Postgres
//! listener hand them to the adapter, and neither of those imports the other (docs/ledger.md "Layers").

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use crate::ids::{LogicalTurnId, SessionKey};
use crate::wire::MutationOutcome;

/// An adapter failure. Logged by the engine, never surfaced to the writer.
#[derive(Debug, thiserror::Error)]
#[error("adapter: {0}")]
pub struct AdapterError(pub String);

/// Receives each settled change: settlement, cancellation, reconciliation, and host metadata on a settled
/// entry; never in-flight intent, a fresh attempt, or a refusal ([`Self::on_mutation_outcome`]); and, after
/// them, one hint per turn a commit changed visibly, in flight included ([`Self::on_turn_changed`]). Called after the change is committed, in
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

    /// A hint that the turn `logical_turn_id` of `session_key` changed visibly: called once per turn touched
    /// by a committed group, after that group's [`Self::on_mutation_outcome`] calls, in commit order, for
    /// every change that takes a revision (docs/ledger.md "Entries and their states": intent, settlement,
    /// cancellation, reconciliation, changed metadata, a fresh attempt), in flight or settled.
    /// `latest_revision` is the turn's latest revision after the commit. Never called for an approve, a
    /// note, an identical attach or a refusal. Live streams send it as `turn_changed` (docs/api.md "Live
    /// run events"). An error is logged and never changes the ledger. The default does nothing.
    fn on_turn_changed(
        &self,
        _session_key: &SessionKey,
        _logical_turn_id: &LogicalTurnId,
        _latest_revision: i64,
    ) -> Result<(), AdapterError> {
        Ok(())
    }

    /// The session is gone: deleted by its host, or deleted by the retention sweep after it expired. Called
    /// after the deletion is committed. Live streams of the session end here (docs/api.md, live run
    /// events: `session_ended`). The default does nothing.
    fn on_session_ended(&self, _session_key: &SessionKey, _reason: SessionEnd) {}

    /// Live delivery may have missed changes (Postgres: the listener lost its connection, so what was
    /// committed meanwhile was not emitted here): every subscriber should resync (replay after its
    /// cursor). Called on the listener task; must not block. Default: nothing.
    fn on_resync(&self) {}

    /// The viewer links of a session were revoked by another instance (Postgres): viewers' live
    /// streams of the session close (docs/access.md). The instance that revoked them acts itself.
    /// Default: nothing.
    fn on_viewer_links_revoked(&self, _session_key: &SessionKey) {}

    /// Who holds the claim of `mutation_id` (in turn `logical_turn_id`, empty when unknown) of
    /// `session_key` changed: a claim, a release or an assignment was committed (docs/api.md "Claims").
    /// Called once per change, on the instance that made it and, on Postgres, on every other instance
    /// through the ledger's notifications; staff live streams send it as `claim_changed`. Best effort
    /// (an instance that dies between the commit and the notification tells nobody; pages see the claim
    /// at their next read). Must not block. Default: nothing.
    fn on_claim_changed(
        &self,
        _session_key: &SessionKey,
        _mutation_id: &str,
        _logical_turn_id: &str,
    ) {
    }
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

/// A change to announce to the adapter once committed: the entry's record as of `revision`.
pub(crate) struct Announcement {
    pub session_key: SessionKey,
    pub outcome: MutationOutcome,
    pub revision: i64,
}

/// A turn a committed group changed visibly, with its latest revision after the group (the
/// `turn_changed` hint, [`Adapter::on_turn_changed`]).
pub(crate) struct TurnChange {
    pub session_key: SessionKey,
    pub logical_turn_id: LogicalTurnId,
    pub latest_revision: i64,
}

/// Tells the adapter of a committed change; its failure or panic never changes settlement.
pub(crate) fn announce(adapter: &Arc<dyn Adapter>, a: Announcement) {
    let delivered = std::panic::catch_unwind(AssertUnwindSafe(|| {
        adapter.on_mutation_outcome(&a.session_key, &a.outcome, a.revision)
    }));
    match delivered {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, revision = a.revision, "live delivery failed"),
        Err(_) => tracing::error!(revision = a.revision, "live delivery panicked"),
    }
}

/// Tells the adapter a turn changed (`turn_changed`); its failure or panic never changes settlement.
pub(crate) fn announce_turn(adapter: &Arc<dyn Adapter>, t: TurnChange) {
    let delivered = std::panic::catch_unwind(AssertUnwindSafe(|| {
        adapter.on_turn_changed(&t.session_key, &t.logical_turn_id, t.latest_revision)
    }));
    match delivered {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, revision = t.latest_revision, "turn hint delivery failed")
        }
        Err(_) => tracing::error!(revision = t.latest_revision, "turn hint delivery panicked"),
    }
}
