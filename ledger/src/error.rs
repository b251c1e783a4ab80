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
    /// The ledger's settlement at a deadline ([`crate::Action::Expire`]) of an entry whose deadline has
    /// not passed (extended meanwhile): never answered to a host, the sweep's no-op.
    DeadlineNotPassed,
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
            Refusal::DeadlineNotPassed => "deadline_not_passed",
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
            Refusal::DeadlineNotPassed => "the entry's deadline has not passed",
        }
    }
}

/// How many times one staff member may claim or release one entry within [`CLAIM_WINDOW_MS`]
/// (docs/api.md "Claims"); the next one is [`LedgerError::TooManyClaims`].
pub const CLAIMS_PER_MINUTE: usize = 10;

/// The window [`CLAIMS_PER_MINUTE`] counts in, in milliseconds of the ledger's clock.
pub const CLAIM_WINDOW_MS: i64 = 60_000;

/// Errors of the ledger. Variants map to HTTP: `Invalid` 422, the `*NotFound`/`SessionExpired` 404,
/// `Refused`/`CursorAhead` 409, `TooManyClaims` 429, `Busy`, `Unavailable`, `StorageFull` and `StorageUnavailable` 503 (with
/// `Retry-After`), `Internal`/`Store`/`Migrate` 500.
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
    /// A claim on an entry another staff member holds (HTTP 409 `already_claimed`, docs/api.md "Claims"):
    /// who (the staff name) and since when.
    #[error("{} is already on it", .claim.by)]
    AlreadyClaimed { claim: crate::wire::Claim },
    /// A claim or release asked by a staff member who already claimed or released this entry
    /// [`CLAIMS_PER_MINUTE`] times in the last 60 s by the ledger's clock (HTTP 429 `too_many_claims`
    /// with `Retry-After`, docs/api.md "Claims"): nothing was changed. `retry_after_ms` is how long until
    /// the oldest of those rows is 60 s old (at least 1 ms).
    #[error("too many claims and releases of this operation; retry in {retry_after_ms} ms")]
    TooManyClaims { retry_after_ms: i64 },
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
    /// The database cannot be reached (Postgres: the connection was lost, or none could be opened):
    /// nothing was changed, and a retry succeeds once it is back (HTTP 503 `unavailable`).
    #[error("the ledger's database cannot be reached; nothing was changed")]
    Unavailable,
    /// The database's storage is full (SQLite `SQLITE_FULL`: the disk, or a size limit; Postgres SQLSTATE
    /// 53100 `disk_full`; an `ENOSPC`): nothing of the write was changed, and writes succeed again by
    /// themselves once space is freed (HTTP 503 `storage_full`; docs/ledger.md "Storage faults").
    #[error("the ledger's storage is full; nothing was changed")]
    StorageFull,
    /// The database's storage refuses writes for another reason (a read-only file or file system,
    /// SQLite `SQLITE_READONLY`/`SQLITE_IOERR`, Postgres `read_only_sql_transaction` or `io_error`):
    /// nothing was changed (HTTP 503 `storage_unavailable`; docs/ledger.md "Storage faults").
    #[error("the ledger's storage cannot be written; nothing was changed")]
    StorageUnavailable,
    /// Opening the ledger: its database (`database`, a URL without its password) cannot be reached or
    /// refused the connection.
    #[error("cannot connect to the ledger database {database}: {reason}")]
    Unreachable { database: String, reason: String },
    /// A fault of the ledger's own code: one of its invariants did not hold (a decision that does not
    /// fit its action, a statement run on the wrong transaction, a value of its own it could not
    /// encode). The text says which; nothing of it reaches a client (HTTP 500 `internal`, logged), and
    /// the write it happened in changed nothing.
    #[error("internal: {0}")]
    Internal(String),
    /// Any other store failure. SQLite's `SQLITE_BUSY`/`SQLITE_LOCKED` never end up here: the `From`
    /// conversion turns them into [`LedgerError::Busy`].
    #[cfg(feature = "store")]
    #[error("store: {0}")]
    Store(sqlx::Error),
    /// The database's schema could not be brought up to date when the ledger opened.
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

    /// A copy of a transient failure (`Busy`, `Unavailable`, `StorageFull`, `StorageUnavailable`):
    /// nothing was changed and the same write may be sent again. `None` for any other error.
    pub fn transient(&self) -> Option<LedgerError> {
        match self {
            LedgerError::Busy => Some(LedgerError::Busy),
            LedgerError::Unavailable => Some(LedgerError::Unavailable),
            LedgerError::StorageFull => Some(LedgerError::StorageFull),
            LedgerError::StorageUnavailable => Some(LedgerError::StorageUnavailable),
            _ => None,
        }
    }

    /// An `Internal` error: `what` invariant of the ledger's own code did not hold.
    #[cfg(feature = "store")]
    pub(crate) fn internal(what: impl Into<String>) -> Self {
        LedgerError::Internal(what.into())
    }

    /// A copy of this error for one more job of a group it failed (a store failure holds sqlx's error,
    /// which cannot be cloned): a transient error and an `Internal` one as they are, any other as a
    /// store failure with this error's text (HTTP 500 either way).
    #[cfg(feature = "store")]
    pub(crate) fn copy_for_job(&self) -> LedgerError {
        if let Some(e) = self.transient() {
            return e;
        }
        match self {
            LedgerError::Internal(what) => LedgerError::Internal(what.clone()),
            other => LedgerError::Store(sqlx::Error::Protocol(other.to_string())),
        }
    }

    /// Whether this is a storage fault (`StorageFull`, `StorageUnavailable`).
    pub fn is_storage_fault(&self) -> bool {
        matches!(
            self,
            LedgerError::StorageFull | LedgerError::StorageUnavailable
        )
    }
}

#[cfg(feature = "store")]
impl From<sqlx::Error> for LedgerError {
    fn from(e: sqlx::Error) -> Self {
        // Every pooled connection stayed busy for the pool's whole acquire timeout: load, not a fault.
        if matches!(e, sqlx::Error::PoolTimedOut) {
            return LedgerError::Busy;
        }
        // Out of space writing a file (`ENOSPC`), or a read-only file system (`EROFS`).
        if let sqlx::Error::Io(io) = &e {
            match io.raw_os_error() {
                Some(28) => return LedgerError::StorageFull,
                Some(30) => return LedgerError::StorageUnavailable,
                _ => {}
            }
        }
        // The connection is gone (Postgres restarted, the network cut): a retry may succeed.
        if matches!(
            e,
            sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed
        ) {
            return LedgerError::Unavailable;
        }
        if let sqlx::Error::Database(db) = &e {
            // sqlx's own SQLite errors, and those of the group commit's direct path (`direct`).
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
                || db.try_downcast_ref::<SqliteFailure>().is_some()
            {
                let primary = db
                    .code()
                    .and_then(|c| c.parse::<i64>().ok())
                    .map(|c| c & 0xff);
                match primary {
                    // SQLITE_BUSY, SQLITE_LOCKED.
                    Some(5) | Some(6) => return LedgerError::Busy,
                    // SQLITE_FULL: the disk (ENOSPC) or the database's size limit.
                    Some(13) => return LedgerError::StorageFull,
                    // SQLITE_READONLY (a read-only file, directory or file system), SQLITE_IOERR.
                    Some(8) | Some(10) => return LedgerError::StorageUnavailable,
                    _ => {}
                }
            } else if let Some(code) = db.code() {
                match code.as_ref() {
                    // lock_not_available (lock_timeout), serialization_failure, deadlock_detected,
                    // query_canceled (a statement_timeout, ours or one a DBA set on the role).
                    "55P03" | "40001" | "40P01" | "57014" => return LedgerError::Busy,
                    // disk_full.
                    "53100" => return LedgerError::StorageFull,
                    // read_only_sql_transaction (a standby, or a read-only default), io_error.
                    "25006" | "58030" => return LedgerError::StorageUnavailable,
                    // Connection exceptions, the server shutting down or out of connections.
                    c if c.starts_with("08") || c.starts_with("57P") || c == "53300" => {
                        return LedgerError::Unavailable
                    }
                    _ => {}
                }
            }
        }
        LedgerError::Store(e)
    }
}

/// An SQLite error of the group commit's direct path (`direct`, through `rusqlite`): its extended result
/// code and SQLite's message. Shown as sqlx shows its own (`(code: 13) database or disk is full`). Defined
/// here, below the direct path, so the `From<sqlx::Error>` conversion reads it without importing it.
#[cfg(feature = "store")]
#[derive(Debug)]
pub(crate) struct SqliteFailure {
    code: i32,
    message: String,
}

#[cfg(feature = "store")]
impl SqliteFailure {
    /// The failure of SQLite's extended result `code` with SQLite's `message`.
    pub(crate) fn new(code: i32, message: String) -> SqliteFailure {
        SqliteFailure { code, message }
    }
}

#[cfg(feature = "store")]
impl std::fmt::Display for SqliteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "(code: {}) {}", self.code, self.message)
    }
}

#[cfg(feature = "store")]
impl std::error::Error for SqliteFailure {}

#[cfg(feature = "store")]
impl sqlx::error::DatabaseError for SqliteFailure {
    fn message(&self) -> &str {
        &self.message
    }

    /// The extended result code in decimal, as sqlx's `SqliteError` gives it.
    fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(std::borrow::Cow::Owned(self.code.to_string()))
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> sqlx::error::ErrorKind {
        use sqlx::error::ErrorKind;
        match self.code {
            // SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY, _FOREIGNKEY, _NOTNULL, _CHECK.
            2067 | 1555 => ErrorKind::UniqueViolation,
            787 => ErrorKind::ForeignKeyViolation,
            1299 => ErrorKind::NotNullViolation,
            275 => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}
