//! The write side of the ledger: every transition of DESIGN "Ledger entry and its states". Each visible
//! change takes the turn's next revision in the same transaction; refusals change nothing and emit nothing;
//! the adapter is called only after the change is durable.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use sqlx::{Sqlite, SqliteConnection, Transaction};

use crate::adapter::SessionEnd;
use crate::error::{LedgerError, Refusal};
use crate::ids::{AttemptId, LogicalTurnId, MutationId, SessionKey, ToolName};
use crate::projection::{project, published_status, HostMetadata, LedgerEntry};
use crate::sanitize::sanitize_metadata;
use crate::store::Inner;
use crate::wire::{EntryState, LedgerStatus, MutationOutcome, PublishedStatus, Reason};

/// How an in-flight attempt settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// The tool reported success: `completed`.
    Completed,
    /// The tool reported failure: `failed`.
    Failed,
    /// The result is not established (e.g. a timeout after the router was entered): `outcome_unknown`.
    OutcomeUnknown,
}

/// Authoritative evidence about the ORIGINAL attempt (seed 002, "Authenticated status of the original
/// attempt resolves the outcome"). An empty source or reference is not evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The qualified status provider that answered.
    pub source: String,
    /// The provider's reference for the original operation (e.g. `issue #419`).
    pub reference: String,
    /// When the provider observed the status: an RFC 3339 time (anything else is refused).
    pub observed_at: String,
}

/// One write operation. The host write API and its batch map onto these.
///
/// Every variant names its entry by `session_key` and `mutation_id`; `attempt_id` is the dispatcher's attempt
/// (the new one for `RecordIntent`/`FreshAttempt`, the current one otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are described above
pub enum Operation {
    /// Records an approved mutation in `logical_turn_id` (creating the session and turn when new). Not
    /// published, no revision.
    Approve {
        session_key: SessionKey,
        logical_turn_id: LogicalTurnId,
        mutation_id: MutationId,
        tool: ToolName,
    },
    /// Dispatch is about to enter the router: `approved` → `execution_started` under `attempt_id`.
    RecordIntent {
        session_key: SessionKey,
        mutation_id: MutationId,
        attempt_id: AttemptId,
    },
    /// The in-flight attempt settled; `reason` may only be `execution_timeout` with `OutcomeUnknown`.
    Settle {
        session_key: SessionKey,
        mutation_id: MutationId,
        attempt_id: AttemptId,
        settlement: Settlement,
        reason: Option<Reason>,
    },
    /// The in-flight attempt never entered the router: back to `approved` after intent (`not_executed`);
    /// `reason` may only be `pre_dispatch_deadline`.
    Cancel {
        session_key: SessionKey,
        mutation_id: MutationId,
        attempt_id: AttemptId,
        reason: Option<Reason>,
    },
    /// Authoritative evidence about the original attempt settles an in-flight or unknown entry:
    /// `completed`, or `not_executed` when `completed` is false.
    Reconcile {
        session_key: SessionKey,
        mutation_id: MutationId,
        attempt_id: AttemptId,
        completed: bool,
        evidence: Evidence,
    },
    /// Sets the host metadata (id, url, title) of a published entry. Any raw size is accepted; what is
    /// stored is the sanitised metadata (`sanitize::sanitize_metadata`), and metadata identical to the
    /// stored one once sanitised is a no-op (no revision, no event).
    AttachMetadata {
        session_key: SessionKey,
        mutation_id: MutationId,
        metadata: HostMetadata,
    },
    /// Starts a new attempt of a `not_executed` entry under an attempt id the entry never had.
    FreshAttempt {
        session_key: SessionKey,
        mutation_id: MutationId,
        attempt_id: AttemptId,
    },
}

/// A change to announce to the adapter once committed.
struct Announcement {
    session_key: SessionKey,
    outcome: MutationOutcome,
    revision: i64,
}

/// The write side. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct EntryRow {
    pub seq: i64,
    pub session_key: String,
    pub logical_turn_id: String,
    pub mutation_id: String,
    pub tool: String,
    pub status: String,
    pub intent_recorded: bool,
    pub attempt_id: Option<String>,
    pub reason: Option<String>,
    pub meta_attached: bool,
    pub meta_id: Option<String>,
    pub meta_url: Option<String>,
    pub meta_title: Option<String>,
    pub revision: Option<i64>,
    pub recorded_at: i64,
    pub settled_at: Option<i64>,
}

pub(crate) const ENTRY_COLUMNS: &str =
    "seq, session_key, logical_turn_id, mutation_id, tool, status, \
     intent_recorded, attempt_id, reason, meta_attached, meta_id, meta_url, meta_title, revision, \
     recorded_at, settled_at";

impl EntryRow {
    pub(crate) fn ledger_status(&self) -> LedgerStatus {
        // The CHECK constraint admits only the five spellings.
        LedgerStatus::parse(&self.status).unwrap_or(LedgerStatus::OutcomeUnknown)
    }

    pub(crate) fn reason(&self) -> Option<Reason> {
        self.reason.as_deref().and_then(Reason::parse)
    }

    pub(crate) fn metadata(&self) -> Option<HostMetadata> {
        self.meta_attached.then(|| HostMetadata {
            id: self.meta_id.clone(),
            url: self.meta_url.clone(),
            title: self.meta_title.clone(),
        })
    }

    pub(crate) fn ledger_entry(&self) -> LedgerEntry {
        LedgerEntry {
            logical_turn_id: self.logical_turn_id.clone(),
            mutation_id: self.mutation_id.clone(),
            tool: self.tool.clone(),
            status: self.ledger_status(),
            intent_recorded: self.intent_recorded,
            reason: self.reason(),
            metadata: self.metadata(),
        }
    }

    pub(crate) fn published(&self) -> Option<PublishedStatus> {
        published_status(self.ledger_status(), self.intent_recorded)
    }

    pub(crate) fn state(&self) -> EntryState {
        EntryState {
            session_key: self.session_key.clone(),
            logical_turn_id: self.logical_turn_id.clone(),
            mutation_id: self.mutation_id.clone(),
            ledger_status: self.ledger_status(),
            intent_recorded: self.intent_recorded,
            attempt_id: self.attempt_id.clone(),
            revision: self.revision,
            reason: self.reason(),
        }
    }

    fn refuse(&self, refusal: Refusal) -> LedgerError {
        LedgerError::Refused {
            refusal,
            current: Box::new(self.state()),
        }
    }

    fn check_attempt(&self, attempt_id: &AttemptId) -> Result<(), LedgerError> {
        if self.attempt_id.as_deref() == Some(attempt_id.as_str()) {
            Ok(())
        } else {
            Err(self.refuse(Refusal::AttemptMismatch))
        }
    }
}

impl Engine {
    pub(crate) fn new(inner: Arc<Inner>) -> Self {
        Engine { inner }
    }

    /// Applies one operation in its own transaction. Returns the entry's state after it.
    pub async fn apply(&self, op: Operation) -> Result<EntryState, LedgerError> {
        let mut results = self.apply_batch(vec![op]).await?;
        results.pop().unwrap_or(Err(LedgerError::MutationNotFound))
    }

    /// Applies operations in order in ONE transaction, one result each: a refused or invalid operation
    /// changes nothing and the others still apply; all that applied are committed together (group commit).
    /// The outer error is a store failure, in which case nothing was committed.
    pub async fn apply_batch(
        &self,
        ops: Vec<Operation>,
    ) -> Result<Vec<Result<EntryState, LedgerError>>, LedgerError> {
        let _writer = self.inner.writer().await?;
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.begin_write().await?;
        let mut results = Vec::with_capacity(ops.len());
        let mut announcements = Vec::new();
        for op in ops {
            sqlx::query("SAVEPOINT op").execute(&mut *tx).await?;
            match self.apply_in(&mut tx, op, now).await {
                Ok((state, announcement)) => {
                    sqlx::query("RELEASE op").execute(&mut *tx).await?;
                    announcements.extend(announcement);
                    results.push(Ok(state));
                }
                Err(e @ (LedgerError::Store(_) | LedgerError::Busy)) => return Err(e),
                Err(e) => {
                    sqlx::query("ROLLBACK TO op").execute(&mut *tx).await?;
                    sqlx::query("RELEASE op").execute(&mut *tx).await?;
                    results.push(Err(e));
                }
            }
        }
        tx.commit().await?;
        for a in announcements {
            self.announce(a);
        }
        Ok(results)
    }

    /// Deletes a session with its turns, entries and evidence, then tells the adapter
    /// (`on_session_ended`, `Deleted`). `SessionNotFound` when there is none.
    pub async fn delete_session(&self, session_key: &SessionKey) -> Result<(), LedgerError> {
        let _writer = self.inner.writer().await?;
        let done = sqlx::query("DELETE FROM sessions WHERE session_key = ?")
            .bind(session_key.as_str())
            .execute(&self.inner.write)
            .await?;
        if done.rows_affected() == 0 {
            return Err(LedgerError::SessionNotFound);
        }
        self.end_session(session_key, SessionEnd::Deleted);
        Ok(())
    }

    /// Deletes every session whose time to live ran out, then tells the adapter of each
    /// (`on_session_ended`, `Expired`). Returns how many were deleted.
    pub async fn purge_expired(&self) -> Result<u64, LedgerError> {
        let _writer = self.inner.writer().await?;
        let since = self.inner.live_since(self.inner.clock.now_ms());
        let mut tx = self.inner.begin_write().await?;
        let keys: Vec<String> = sqlx::query_scalar(
            "DELETE FROM sessions WHERE last_write_at < ? RETURNING session_key",
        )
        .bind(since)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        for key in &keys {
            if let Ok(key) = SessionKey::parse(key.clone()) {
                self.end_session(&key, SessionEnd::Expired);
            }
        }
        Ok(keys.len() as u64)
    }

    fn end_session(&self, session_key: &SessionKey, reason: SessionEnd) {
        let adapter = self.inner.adapter.clone();
        if std::panic::catch_unwind(AssertUnwindSafe(|| {
            adapter.on_session_ended(session_key, reason)
        }))
        .is_err()
        {
            tracing::error!("live delivery of a session end panicked");
        }
    }

    /// Imports an entry recorded before revisions existed (legacy ledger rows): stored with no revision, so
    /// it appears only in a full replay. Refused like an approve when the mutation is already recorded.
    pub async fn import_legacy(
        &self,
        session_key: &SessionKey,
        entry: &LedgerEntry,
    ) -> Result<(), LedgerError> {
        let turn = LogicalTurnId::parse(entry.logical_turn_id.clone())
            .map_err(|e| LedgerError::invalid("logical_turn_id", e.to_string()))?;
        let mutation = MutationId::parse(entry.mutation_id.clone())
            .map_err(|e| LedgerError::invalid("mutation_id", e.to_string()))?;
        let tool = ToolName::parse(entry.tool.clone())
            .map_err(|e| LedgerError::invalid("tool", e.to_string()))?;
        let _writer = self.inner.writer().await?;
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.begin_write().await?;
        self.approve(&mut tx, session_key, &turn, &mutation, &tool, now)
            .await?;
        // Stored sanitised, like an attach (secrets at rest).
        let meta = entry.metadata.as_ref().map(sanitize_metadata);
        let settled = !matches!(
            entry.status,
            LedgerStatus::Approved | LedgerStatus::ExecutionStarted
        );
        sqlx::query(
            "UPDATE entries SET status = ?, intent_recorded = ?, reason = ?, meta_attached = ?, meta_id = ?, \
             meta_url = ?, meta_title = ?, settled_at = ? WHERE session_key = ? AND mutation_id = ?",
        )
        .bind(entry.status.as_str())
        .bind(entry.intent_recorded)
        .bind(entry.reason.map(Reason::as_str))
        .bind(meta.is_some())
        .bind(meta.as_ref().and_then(|m| m.id.clone()))
        .bind(meta.as_ref().and_then(|m| m.url.clone()))
        .bind(meta.as_ref().and_then(|m| m.title.clone()))
        .bind(settled.then_some(now))
        .bind(session_key.as_str())
        .bind(mutation.as_str())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    fn announce(&self, a: Announcement) {
        let adapter = self.inner.adapter.clone();
        let delivered = std::panic::catch_unwind(AssertUnwindSafe(|| {
            adapter.on_mutation_outcome(&a.session_key, &a.outcome, a.revision)
        }));
        match delivered {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, revision = a.revision, "live delivery failed"),
            Err(_) => tracing::error!(revision = a.revision, "live delivery panicked"),
        }
    }

    async fn apply_in(
        &self,
        tx: &mut Transaction<'static, Sqlite>,
        op: Operation,
        now: i64,
    ) -> Result<(EntryState, Option<Announcement>), LedgerError> {
        match op {
            Operation::Approve {
                session_key,
                logical_turn_id,
                mutation_id,
                tool,
            } => {
                let row = self
                    .approve(tx, &session_key, &logical_turn_id, &mutation_id, &tool, now)
                    .await?;
                Ok((row.state(), None))
            }
            Operation::RecordIntent {
                session_key,
                mutation_id,
                attempt_id,
            } => {
                let row =
                    load_for_write(tx, &session_key, &mutation_id, self.inner.live_since(now))
                        .await?;
                if row.ledger_status() != LedgerStatus::Approved || row.intent_recorded {
                    return Err(row.refuse(Refusal::AlreadyRecorded));
                }
                self.change(tx, &row, now, Change::start(&attempt_id), false)
                    .await
            }
            Operation::Settle {
                session_key,
                mutation_id,
                attempt_id,
                settlement,
                reason,
            } => {
                let status = match settlement {
                    Settlement::Completed => LedgerStatus::Completed,
                    Settlement::Failed => LedgerStatus::Failed,
                    Settlement::OutcomeUnknown => LedgerStatus::OutcomeUnknown,
                };
                if let Some(r) = reason {
                    if r != Reason::ExecutionTimeout || status != LedgerStatus::OutcomeUnknown {
                        return Err(LedgerError::invalid(
                            "reason",
                            "a settlement reason is only execution_timeout, with status outcome_unknown",
                        ));
                    }
                }
                let row =
                    load_for_write(tx, &session_key, &mutation_id, self.inner.live_since(now))
                        .await?;
                match row.ledger_status() {
                    LedgerStatus::ExecutionStarted => row.check_attempt(&attempt_id)?,
                    LedgerStatus::OutcomeUnknown => {
                        return Err(row.refuse(Refusal::UnknownNeedsReconciliation))
                    }
                    _ => return Err(row.refuse(Refusal::NotInFlight)),
                }
                let change = Change {
                    status,
                    intent_recorded: true,
                    attempt_id: row.attempt_id.clone(),
                    reason,
                    settled: true,
                };
                self.change(tx, &row, now, change, true).await
            }
            Operation::Cancel {
                session_key,
                mutation_id,
                attempt_id,
                reason,
            } => {
                if let Some(r) = reason {
                    if r != Reason::PreDispatchDeadline {
                        return Err(LedgerError::invalid(
                            "reason",
                            "a cancellation reason is only pre_dispatch_deadline",
                        ));
                    }
                }
                let row =
                    load_for_write(tx, &session_key, &mutation_id, self.inner.live_since(now))
                        .await?;
                match row.ledger_status() {
                    LedgerStatus::ExecutionStarted => row.check_attempt(&attempt_id)?,
                    LedgerStatus::OutcomeUnknown => {
                        return Err(row.refuse(Refusal::UnknownNeedsReconciliation))
                    }
                    _ => return Err(row.refuse(Refusal::NotInFlight)),
                }
                let change = Change {
                    status: LedgerStatus::Approved,
                    intent_recorded: true,
                    attempt_id: row.attempt_id.clone(),
                    reason,
                    settled: true,
                };
                self.change(tx, &row, now, change, true).await
            }
            Operation::Reconcile {
                session_key,
                mutation_id,
                attempt_id,
                completed,
                evidence,
            } => {
                for (field, value) in [
                    ("evidence.source", &evidence.source),
                    ("evidence.reference", &evidence.reference),
                    ("evidence.observed_at", &evidence.observed_at),
                ] {
                    if value.trim().is_empty() {
                        return Err(LedgerError::invalid(field, "empty: this is not evidence"));
                    }
                }
                if time::OffsetDateTime::parse(
                    &evidence.observed_at,
                    &time::format_description::well_known::Rfc3339,
                )
                .is_err()
                {
                    return Err(LedgerError::invalid(
                        "evidence.observed_at",
                        "an RFC 3339 time, e.g. 2026-11-29T10:00:00Z",
                    ));
                }
                let row =
                    load_for_write(tx, &session_key, &mutation_id, self.inner.live_since(now))
                        .await?;
                match row.ledger_status() {
                    LedgerStatus::ExecutionStarted | LedgerStatus::OutcomeUnknown => {
                        row.check_attempt(&attempt_id)?
                    }
                    _ => return Err(row.refuse(Refusal::AlreadySettled)),
                }
                sqlx::query(
                    "INSERT INTO reconciliations (entry_seq, attempt_id, completed, source, reference, \
                     observed_at, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(row.seq)
                .bind(attempt_id.as_str())
                .bind(completed)
                .bind(&evidence.source)
                .bind(&evidence.reference)
                .bind(&evidence.observed_at)
                .bind(now)
                .execute(&mut **tx)
                .await?;
                let change = Change {
                    status: if completed {
                        LedgerStatus::Completed
                    } else {
                        LedgerStatus::Approved
                    },
                    intent_recorded: true,
                    attempt_id: row.attempt_id.clone(),
                    reason: None,
                    settled: true,
                };
                self.change(tx, &row, now, change, true).await
            }
            Operation::AttachMetadata {
                session_key,
                mutation_id,
                metadata,
            } => {
                // Secrets at rest (docs/design.md): only the sanitised metadata is stored, of any raw size
                // (a withheld field stores NULL), so a credential sent by mistake never reaches the
                // database. Reads sanitise again, which changes nothing (the sanitisers are idempotent).
                let metadata = sanitize_metadata(&metadata);
                let row =
                    load_for_write(tx, &session_key, &mutation_id, self.inner.live_since(now))
                        .await?;
                if row.published().is_none() {
                    return Err(row.refuse(Refusal::NotPublished));
                }
                // Identical means identical once sanitised (rows written before this rule hold raw values).
                if row.metadata().map(|m| sanitize_metadata(&m)).as_ref() == Some(&metadata) {
                    return Ok((row.state(), None));
                }
                let revision = next_revision(tx, &row).await?;
                sqlx::query(
                    "UPDATE entries SET meta_attached = 1, meta_id = ?, meta_url = ?, meta_title = ?, \
                     revision = ?, updated_at = ? WHERE seq = ?",
                )
                .bind(&metadata.id)
                .bind(&metadata.url)
                .bind(&metadata.title)
                .bind(revision)
                .bind(now)
                .bind(row.seq)
                .execute(&mut **tx)
                .await?;
                touch_session(tx, &row.session_key, now).await?;
                let updated = reload(tx, row.seq).await?;
                // Metadata on an in-flight entry is a visible change but is not emitted live.
                let live = updated.ledger_status() != LedgerStatus::ExecutionStarted;
                Ok(announce_if(updated, revision, live))
            }
            Operation::FreshAttempt {
                session_key,
                mutation_id,
                attempt_id,
            } => {
                let row =
                    load_for_write(tx, &session_key, &mutation_id, self.inner.live_since(now))
                        .await?;
                match row.published() {
                    Some(PublishedStatus::NotExecuted) => {}
                    Some(PublishedStatus::OutcomeUnknown) => {
                        return Err(row.refuse(Refusal::UnknownNeedsReconciliation))
                    }
                    _ => return Err(row.refuse(Refusal::NotNotExecuted)),
                }
                let used: Option<i64> = sqlx::query_scalar(
                    "SELECT 1 FROM attempts WHERE entry_seq = ? AND attempt_id = ?",
                )
                .bind(row.seq)
                .bind(attempt_id.as_str())
                .fetch_optional(&mut **tx)
                .await?;
                if used.is_some() || row.attempt_id.as_deref() == Some(attempt_id.as_str()) {
                    return Err(row.refuse(Refusal::AttemptReused));
                }
                self.change(tx, &row, now, Change::start(&attempt_id), false)
                    .await
            }
        }
    }

    async fn approve(
        &self,
        tx: &mut SqliteConnection,
        session_key: &SessionKey,
        turn: &LogicalTurnId,
        mutation: &MutationId,
        tool: &ToolName,
        now: i64,
    ) -> Result<EntryRow, LedgerError> {
        let last_write: Option<i64> =
            sqlx::query_scalar("SELECT last_write_at FROM sessions WHERE session_key = ?")
                .bind(session_key.as_str())
                .fetch_optional(&mut *tx)
                .await?;
        match last_write {
            Some(t) if t < self.inner.live_since(now) => return Err(LedgerError::SessionExpired),
            Some(_) => {}
            None => {
                sqlx::query(
                    "INSERT INTO sessions (session_key, created_at, last_write_at) VALUES (?, ?, ?)",
                )
                .bind(session_key.as_str())
                .bind(now)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
        }
        if let Some(existing) = find_entry(&mut *tx, session_key, mutation).await? {
            return Err(existing.refuse(Refusal::AlreadyRecorded));
        }
        sqlx::query(
            "INSERT INTO turns (session_key, logical_turn_id, created_at) VALUES (?, ?, ?) \
             ON CONFLICT (session_key, logical_turn_id) DO NOTHING",
        )
        .bind(session_key.as_str())
        .bind(turn.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let seq: i64 = sqlx::query_scalar(
            "INSERT INTO entries (session_key, logical_turn_id, mutation_id, tool, status, recorded_at, \
             updated_at) VALUES (?, ?, ?, ?, 'approved', ?, ?) RETURNING seq",
        )
        .bind(session_key.as_str())
        .bind(turn.as_str())
        .bind(mutation.as_str())
        .bind(tool.as_str())
        .bind(now)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        touch_session(&mut *tx, session_key.as_str(), now).await?;
        reload(&mut *tx, seq).await
    }

    /// Writes a visible state change under the turn's next revision.
    async fn change(
        &self,
        tx: &mut SqliteConnection,
        row: &EntryRow,
        now: i64,
        change: Change,
        live: bool,
    ) -> Result<(EntryState, Option<Announcement>), LedgerError> {
        let revision = next_revision(&mut *tx, row).await?;
        if let Some(attempt) = &change.attempt_id {
            sqlx::query(
                "INSERT INTO attempts (entry_seq, attempt_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            )
            .bind(row.seq)
            .bind(attempt)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "UPDATE entries SET status = ?, intent_recorded = ?, attempt_id = ?, reason = ?, revision = ?, \
             settled_at = ?, updated_at = ? WHERE seq = ?",
        )
        .bind(change.status.as_str())
        .bind(change.intent_recorded)
        .bind(&change.attempt_id)
        .bind(change.reason.map(Reason::as_str))
        .bind(revision)
        .bind(change.settled.then_some(now))
        .bind(now)
        .bind(row.seq)
        .execute(&mut *tx)
        .await?;
        touch_session(&mut *tx, &row.session_key, now).await?;
        let updated = reload(&mut *tx, row.seq).await?;
        Ok(announce_if(updated, revision, live))
    }
}

struct Change {
    status: LedgerStatus,
    intent_recorded: bool,
    attempt_id: Option<String>,
    reason: Option<Reason>,
    settled: bool,
}

impl Change {
    /// `execution_started` under a new attempt; clears any old reason.
    fn start(attempt_id: &AttemptId) -> Change {
        Change {
            status: LedgerStatus::ExecutionStarted,
            intent_recorded: true,
            attempt_id: Some(attempt_id.as_str().to_owned()),
            reason: None,
            settled: false,
        }
    }
}

fn announce_if(row: EntryRow, revision: i64, live: bool) -> (EntryState, Option<Announcement>) {
    let announcement = if live {
        project(&row.ledger_entry()).and_then(|outcome| {
            SessionKey::parse(row.session_key.clone())
                .ok()
                .map(|session_key| Announcement {
                    session_key,
                    outcome,
                    revision,
                })
        })
    } else {
        None
    };
    (row.state(), announcement)
}

async fn next_revision(tx: &mut SqliteConnection, row: &EntryRow) -> Result<i64, LedgerError> {
    Ok(sqlx::query_scalar(
        "UPDATE turns SET latest_revision = latest_revision + 1 \
         WHERE session_key = ? AND logical_turn_id = ? RETURNING latest_revision",
    )
    .bind(&row.session_key)
    .bind(&row.logical_turn_id)
    .fetch_one(&mut *tx)
    .await?)
}

async fn touch_session(
    tx: &mut SqliteConnection,
    session_key: &str,
    now: i64,
) -> Result<(), LedgerError> {
    sqlx::query("UPDATE sessions SET last_write_at = ? WHERE session_key = ?")
        .bind(now)
        .bind(session_key)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

async fn reload(tx: &mut SqliteConnection, seq: i64) -> Result<EntryRow, LedgerError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM entries WHERE seq = ?"
    ))
    .bind(seq)
    .fetch_one(&mut *tx)
    .await?)
}

async fn find_entry(
    tx: &mut SqliteConnection,
    session_key: &SessionKey,
    mutation: &MutationId,
) -> Result<Option<EntryRow>, LedgerError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM entries WHERE session_key = ? AND mutation_id = ?"
    ))
    .bind(session_key.as_str())
    .bind(mutation.as_str())
    .fetch_optional(&mut *tx)
    .await?)
}

/// `Ok` when the session is stored and was written to at or after `live_since`;
/// [`LedgerError::SessionNotFound`] / [`LedgerError::SessionExpired`] otherwise.
pub(crate) async fn check_session_live(
    tx: &mut SqliteConnection,
    session_key: &SessionKey,
    live_since: i64,
) -> Result<(), LedgerError> {
    let last_write: Option<i64> =
        sqlx::query_scalar("SELECT last_write_at FROM sessions WHERE session_key = ?")
            .bind(session_key.as_str())
            .fetch_optional(&mut *tx)
            .await?;
    match last_write {
        None => Err(LedgerError::SessionNotFound),
        Some(t) if t < live_since => Err(LedgerError::SessionExpired),
        Some(_) => Ok(()),
    }
}

/// The entry a write targets: 404 for an unknown or expired session, or an unknown mutation.
async fn load_for_write(
    tx: &mut SqliteConnection,
    session_key: &SessionKey,
    mutation: &MutationId,
    live_since: i64,
) -> Result<EntryRow, LedgerError> {
    check_session_live(tx, session_key, live_since).await?;
    find_entry(tx, session_key, mutation)
        .await?
        .ok_or(LedgerError::MutationNotFound)
}
