//! The ledger's one error type. The server maps each variant once to an HTTP status and JSON body.

use crate::wire::EntryState;

/// Why a refused transition was refused (HTTP 409). Every refusal changes nothing and emits nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Approve or record intent of a mutation that is already recorded (a redelivery).
    AlreadyRecorded,
    /// The request names an attempt other than the entry's current one.
    AttemptMismatch,
    /// Settle or cancel of an entry that is not in flight (`execution_started`).
    NotInFlight,
    /// A settle or fresh attempt on an unknown outcome: only reconciliation changes it (seed 002).
    UnknownNeedsReconciliation,
    /// Reconcile of an entry that is neither in flight nor unknown.
    AlreadySettled,
    /// A fresh attempt on an entry that is not `not_executed`.
    NotNotExecuted,
    /// Host metadata on an entry that is not published yet (approved, never started).
    NotPublished,
    /// A fresh attempt that reuses an attempt id the entry already had (current or earlier).
    AttemptReused,
}

impl Refusal {
    /// The error `code` of the JSON body.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::AlreadyRecorded => "already_recorded",
            Refusal::AttemptMismatch => "attempt_mismatch",
            Refusal::NotInFlight => "not_in_flight",
            Refusal::UnknownNeedsReconciliation => "unknown_outcome_needs_reconciliation",
            Refusal::AlreadySettled => "already_settled",
            Refusal::NotNotExecuted => "not_not_executed",
            Refusal::NotPublished => "not_published",
            Refusal::AttemptReused => "attempt_reused",
        }
    }

    /// A plain sentence for the JSON body's `message`.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::AlreadyRecorded => "the mutation is already recorded; a redelivery changes nothing",
            Refusal::AttemptMismatch => "the request names an attempt other than the entry's current attempt",
            Refusal::NotInFlight => "the entry is not in flight (execution_started)",
            Refusal::UnknownNeedsReconciliation => {
                "the outcome is unknown; only reconciliation with evidence for the original attempt changes it"
            }
            Refusal::AlreadySettled => "the entry is settled and not unknown; there is nothing to reconcile",
            Refusal::NotNotExecuted => "a fresh attempt is allowed only for a not_executed entry",
            Refusal::NotPublished => "the entry has no recorded intent yet, so it has no published outcome",
            Refusal::AttemptReused => "a fresh attempt needs a new attempt id",
        }
    }
}

/// Errors of the ledger. Variants map to HTTP: `Invalid` 422, the `*NotFound`/`SessionExpired` 404,
/// `Refused`/`CursorAhead` 409, `Busy` 503 (with `Retry-After`), `Store`/`Migrate` 500.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// A field breaks a rule; `field` names it (e.g. `reason`, `evidence.source`).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("unknown session")]
    SessionNotFound,
    /// The conversation's time to live ran out (counted from its last write).
    #[error("the session has expired")]
    SessionExpired,
    #[error("unknown logical turn")]
    TurnNotFound,
    #[error("unknown mutation")]
    MutationNotFound,
    /// An approve's `commissioned_after` names no other mutation recorded in its session (itself, an
    /// unknown one, or another session's).
    #[error("commissioned_after names no other mutation recorded in this session")]
    CommissionedAfterNotFound,
    /// A refused transition; `current` is the entry's state, unchanged.
    #[error("{}", .refusal.message())]
    Refused {
        refusal: Refusal,
        current: Box<EntryState>,
    },
    /// A replay cursor past the turn's latest revision.
    #[error("cursor {cursor} is past the turn's latest revision {latest}")]
    CursorAhead { cursor: i64, latest: i64 },
    /// The write lock could not be had within the configured wait (`LedgerOptions::write_wait`): another
    /// writer (this process or another one on the same database) held it. Nothing was changed; the caller
    /// may retry (docs/ledger.md "Contention").
    #[error(
        "the ledger is busy: another writer held the write lock longer than the configured wait"
    )]
    Busy,
    /// Any other store failure. SQLite's `SQLITE_BUSY`/`SQLITE_LOCKED` never end up here: the `From`
    /// conversion turns them into [`LedgerError::Busy`].
    #[cfg(feature = "store")]
    #[error("store: {0}")]
    Store(sqlx::Error),
    #[cfg(feature = "store")]
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl LedgerError {
    /// An `Invalid` error for `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        LedgerError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[cfg(feature = "store")]
impl From<sqlx::Error> for LedgerError {
    /// `SQLITE_BUSY` (5) and `SQLITE_LOCKED` (6), with any extended code, and a pool that had no free
    /// connection within its acquire timeout become [`LedgerError::Busy`] (the waiting is already done);
    /// everything else is [`LedgerError::Store`].
    fn from(e: sqlx::Error) -> Self {
        // Every pooled connection stayed busy for the pool's whole acquire timeout: load, not a fault.
        if matches!(e, sqlx::Error::PoolTimedOut) {
            return LedgerError::Busy;
        }
        if let sqlx::Error::Database(db) = &e {
            let primary = db
                .code()
                .and_then(|c| c.parse::<i64>().ok())
                .map(|c| c & 0xff);
            if matches!(primary, Some(5) | Some(6)) {
                return LedgerError::Busy;
            }
        }
        LedgerError::Store(e)
    }
}
