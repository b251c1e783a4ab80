//! The write side of the ledger (docs/ledger.md "Writing"): every transition of "States and transitions"
//! as load → decide ([`crate::machine::decide`], pure) → write → announce. Each visible change takes the
//! turn's next revision in the same transaction; refusals change nothing and emit nothing.
//!
//! Group commit: one writer task owns the write connection. [`Engine::apply`] and [`Engine::apply_batch`]
//! queue their operations and wait; the writer takes everything queued (at most [`GROUP_OPERATIONS`]
//! operations, whole jobs), opens ONE `BEGIN IMMEDIATE` transaction, applies each operation in order,
//! commits once, then announces the changes in revision order and answers each caller. Nobody is
//! answered, and nothing is announced, before the commit that holds the change returned. A refusal is
//! decided before anything is written, so it needs no savepoint: it changes nothing by construction. A
//! store failure aborts the group; when the group held several jobs, each is then applied alone, so one
//! job's fault is answered to that job only.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use sqlx::SqliteConnection;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::adapter::{Adapter, SessionEnd};
use crate::error::LedgerError;
use crate::ids::{LogicalTurnId, MutationId, SessionKey, ToolName};
use crate::machine::{decide, Decision, Given, Rejection, SessionState};
use crate::projection::{project, LedgerEntry};
use crate::rows::{load_for_write, EntryRow, ENTRY_COLUMNS};
use crate::sanitize::sanitize_metadata;
use crate::store::Inner;
use crate::wire::{EntryState, LedgerStatus, MutationOutcome, Reason};

pub use crate::command::{Action, Command, EntryKey, Evidence, Settlement};

/// Operations at most in one group commit (whole jobs: a batch is never split; a group holds at least
/// one job).
pub const GROUP_OPERATIONS: usize = 2_000;

/// Jobs that may wait in the writer's queue; a caller that finds it full waits up to the write wait,
/// then is refused with [`LedgerError::Busy`].
pub const QUEUED_JOBS: usize = 4_096;

/// A change to announce to the adapter once committed.
struct Announcement {
    session_key: SessionKey,
    outcome: MutationOutcome,
    revision: i64,
}

/// What one operation did: the entry's state after it, its live announcement if any, and whether it
/// wrote anything (an identical attach writes nothing and does not count as the session's activity).
struct Done {
    state: EntryState,
    announcement: Option<Announcement>,
    wrote: bool,
}

type Applied = Result<Done, LedgerError>;

/// The answer to a job: one result per operation, or a store failure (nothing committed).
type JobAnswer = Result<Vec<Result<EntryState, LedgerError>>, LedgerError>;

/// Operations queued for the writer, with the caller waiting on `answer`.
struct Job {
    ops: Vec<Command>,
    /// Past this, a job not yet started is refused with [`LedgerError::Busy`] (the write wait).
    deadline: Instant,
    answer: oneshot::Sender<JobAnswer>,
}

/// The writer task: owns the write connection for group commits. It ends when the last [`Engine`] (the
/// last sender of its queue) is gone.
struct Writer {
    store: Arc<Inner>,
}

impl Writer {
    async fn run(self, mut queue: mpsc::Receiver<Job>) {
        while let Some(first) = queue.recv().await {
            let mut count = first.ops.len();
            let mut jobs = vec![first];
            while count < GROUP_OPERATIONS {
                match queue.try_recv() {
                    Ok(job) => {
                        count += job.ops.len();
                        jobs.push(job);
                    }
                    Err(_) => break,
                }
            }
            let now = Instant::now();
            let (late, jobs): (Vec<Job>, Vec<Job>) =
                jobs.into_iter().partition(|j| j.deadline < now);
            for job in late {
                let _ = job.answer.send(Err(LedgerError::Busy));
            }
            if !jobs.is_empty() {
                self.group(jobs).await;
            }
        }
    }

    /// Commits `jobs` together, or each alone when the group fails for a reason other than contention.
    async fn group(&self, jobs: Vec<Job>) {
        let Ok(guard) =
            tokio::time::timeout(self.store.write_wait, self.store.write_lock.lock()).await
        else {
            for job in jobs {
                let _ = job.answer.send(Err(LedgerError::Busy));
            }
            return;
        };
        match self.commit(&jobs).await {
            Ok(applied) => {
                drop(guard);
                for (job, applied) in jobs.into_iter().zip(applied) {
                    self.finish(job, Ok(applied));
                }
            }
            Err(e) if jobs.len() == 1 || matches!(e, LedgerError::Busy) => {
                drop(guard);
                tracing::warn!(error = %e, jobs = jobs.len(), "group commit failed");
                for job in jobs {
                    let e = match &e {
                        LedgerError::Busy => LedgerError::Busy,
                        other => LedgerError::Store(sqlx::Error::Protocol(other.to_string())),
                    };
                    let _ = job.answer.send(Err(e));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, jobs = jobs.len(), "group commit failed; each job alone");
                let mut done = Vec::with_capacity(jobs.len());
                for job in jobs {
                    let applied = self
                        .commit(std::slice::from_ref(&job))
                        .await
                        .map(|mut a| a.pop().unwrap_or_default());
                    done.push((job, applied));
                }
                drop(guard);
                for (job, applied) in done {
                    self.finish(job, applied);
                }
            }
        }
    }

    /// Announces what a committed job changed, in order, then answers its caller.
    fn finish(&self, job: Job, applied: Result<Vec<Applied>, LedgerError>) {
        let answer = applied.map(|results| {
            results
                .into_iter()
                .map(|r| {
                    r.map(|done| {
                        if let Some(a) = done.announcement {
                            announce(&self.store.adapter, a);
                        }
                        done.state
                    })
                })
                .collect()
        });
        let _ = job.answer.send(answer);
    }

    /// Applies every operation of `jobs` in order in ONE `BEGIN IMMEDIATE` transaction and commits it.
    /// A refused or invalid operation is answered as such and the others still apply; a store failure
    /// (or contention) is the outer error, and then nothing was committed.
    async fn commit(&self, jobs: &[Job]) -> Result<Vec<Vec<Applied>>, LedgerError> {
        let now = self.store.clock.now_ms();
        let live_since = self.store.live_since(now);
        let mut tx = self.store.begin_write().await?;
        let mut touched = BTreeSet::new();
        let mut applied = Vec::with_capacity(jobs.len());
        for job in jobs {
            let mut results = Vec::with_capacity(job.ops.len());
            for op in &job.ops {
                match apply(&mut tx, op, now, live_since).await {
                    Err(e @ (LedgerError::Store(_) | LedgerError::Busy)) => return Err(e),
                    Ok(done) => {
                        if done.wrote && !touched.contains(&done.state.session_key) {
                            touched.insert(done.state.session_key.clone());
                        }
                        results.push(Ok(done));
                    }
                    Err(e) => results.push(Err(e)),
                }
            }
            applied.push(results);
        }
        // Retention counts from a session's last write: once per session per group.
        for session_key in &touched {
            sqlx::query("UPDATE sessions SET last_write_at = ? WHERE session_key = ?")
                .bind(now)
                .bind(session_key)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(applied)
    }
}

/// Load → decide → write, for one operation inside the group's transaction.
async fn apply(tx: &mut SqliteConnection, command: &Command, now: i64, live_since: i64) -> Applied {
    let EntryKey {
        session_key,
        mutation_id,
    } = &command.key;
    // Secrets at rest (docs/ledger.md "Files"): only the sanitised metadata is stored, of any raw size (a
    // withheld field stores NULL), so a credential sent by mistake never reaches the database.
    let sanitised;
    let action = match &command.action {
        Action::AttachMetadata { metadata } => {
            sanitised = Action::AttachMetadata {
                metadata: sanitize_metadata(metadata),
            };
            &sanitised
        }
        other => other,
    };
    let attempt = match action {
        Action::FreshAttempt { attempt_id } => Some(attempt_id.as_str()),
        _ => None,
    };
    let loaded = load_for_write(
        tx,
        session_key.as_str(),
        mutation_id.as_str(),
        attempt,
        live_since,
    )
    .await?;
    let attach = matches!(action, Action::AttachMetadata { .. });
    let entry = loaded.entry.as_ref().map(|row| row.machine_entry(attach));
    let given = Given {
        session: loaded.session,
        entry: entry.as_ref(),
        attempt_used: loaded.attempt_used,
    };
    let decision = decide(&given, action).map_err(|r| rejected(r, loaded.entry.as_ref()))?;
    match (decision, loaded.entry) {
        (Decision::Approve, _) => {
            let Action::Approve {
                logical_turn_id,
                tool,
            } = action
            else {
                unreachable!("only an approve is decided so")
            };
            let row = insert_entry(
                tx,
                loaded.session,
                session_key,
                logical_turn_id,
                mutation_id,
                tool,
                now,
            )
            .await?;
            Ok(Done {
                state: row.state(),
                announcement: None,
                wrote: true,
            })
        }
        (Decision::Unchanged, Some(row)) => Ok(Done {
            state: row.state(),
            announcement: None,
            wrote: false,
        }),
        (Decision::Change(change), Some(row)) => {
            if change.new_attempt {
                sqlx::query("INSERT INTO attempts (entry_seq, attempt_id) VALUES (?, ?)")
                    .bind(row.seq)
                    .bind(&change.attempt_id)
                    .execute(&mut *tx)
                    .await?;
            }
            if let (true, Action::Reconcile { evidence, .. }) = (change.evidence, action) {
                sqlx::query(
                    "INSERT INTO reconciliations (entry_seq, attempt_id, completed, source, reference, \
                     observed_at, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(row.seq)
                .bind(&change.attempt_id)
                .bind(change.status == LedgerStatus::Completed)
                .bind(&evidence.source)
                .bind(&evidence.reference)
                .bind(&evidence.observed_at)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            let revision = next_revision(tx, &row).await?;
            let updated: EntryRow = sqlx::query_as(&format!(
                "UPDATE entries SET status = ?, intent_recorded = 1, attempt_id = ?, reason = ?, \
                 revision = ?, settled_at = ?, updated_at = ? WHERE seq = ? RETURNING {ENTRY_COLUMNS}"
            ))
            .bind(change.status)
            .bind(&change.attempt_id)
            .bind(change.reason)
            .bind(revision)
            .bind(change.settled.then_some(now))
            .bind(now)
            .bind(row.seq)
            .fetch_one(&mut *tx)
            .await?;
            Ok(announce_if(updated, revision, change.live))
        }
        (Decision::Attach { live }, Some(row)) => {
            let Action::AttachMetadata { metadata } = action else {
                unreachable!("only an attach is decided so")
            };
            let revision = next_revision(tx, &row).await?;
            let updated: EntryRow = sqlx::query_as(&format!(
                "UPDATE entries SET meta_attached = 1, meta_id = ?, meta_url = ?, meta_title = ?, \
                 revision = ?, updated_at = ? WHERE seq = ? RETURNING {ENTRY_COLUMNS}"
            ))
            .bind(&metadata.id)
            .bind(&metadata.url)
            .bind(&metadata.title)
            .bind(revision)
            .bind(now)
            .bind(row.seq)
            .fetch_one(&mut *tx)
            .await?;
            Ok(announce_if(updated, revision, live))
        }
        // The machine decides a change only for a recorded entry.
        (_, None) => Err(LedgerError::MutationNotFound),
    }
}

/// The error a rejection answers; a refusal carries the entry's unchanged state.
fn rejected(rejection: Rejection, row: Option<&EntryRow>) -> LedgerError {
    match rejection {
        Rejection::Invalid { field, message } => LedgerError::invalid(field, message),
        Rejection::SessionNotFound => LedgerError::SessionNotFound,
        Rejection::SessionExpired => LedgerError::SessionExpired,
        Rejection::MutationNotFound => LedgerError::MutationNotFound,
        Rejection::Refused(refusal) => match row {
            Some(row) => LedgerError::Refused {
                refusal,
                current: Box::new(row.state()),
            },
            None => LedgerError::MutationNotFound,
        },
    }
}

/// Records an approved entry (no intent, no revision), creating the session and the turn when new.
async fn insert_entry(
    tx: &mut SqliteConnection,
    session: SessionState,
    session_key: &SessionKey,
    turn: &LogicalTurnId,
    mutation: &MutationId,
    tool: &ToolName,
    now: i64,
) -> Result<EntryRow, LedgerError> {
    if session == SessionState::Absent {
        sqlx::query(
            "INSERT INTO sessions (session_key, created_at, last_write_at) VALUES (?, ?, ?)",
        )
        .bind(session_key.as_str())
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await?;
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
    Ok(sqlx::query_as(&format!(
        "INSERT INTO entries (session_key, logical_turn_id, mutation_id, tool, status, recorded_at, \
         updated_at) VALUES (?, ?, ?, ?, 'approved', ?, ?) RETURNING {ENTRY_COLUMNS}"
    ))
    .bind(session_key.as_str())
    .bind(turn.as_str())
    .bind(mutation.as_str())
    .bind(tool.as_str())
    .bind(now)
    .bind(now)
    .fetch_one(&mut *tx)
    .await?)
}

/// The write side. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    /// The writer task's queue.
    queue: mpsc::Sender<Job>,
}

impl Engine {
    /// Starts the group-commit writer task on the current tokio runtime; the engine queues to it.
    pub(crate) fn start(inner: Arc<Inner>) -> Self {
        let (queue, jobs) = mpsc::channel(QUEUED_JOBS);
        tokio::spawn(
            Writer {
                store: inner.clone(),
            }
            .run(jobs),
        );
        Engine { inner, queue }
    }

    /// Applies one operation (committed in the writer's next group). Returns the entry's state after it.
    pub async fn apply(&self, op: Command) -> Result<EntryState, LedgerError> {
        let mut results = self.apply_batch(vec![op]).await?;
        results.pop().unwrap_or(Err(LedgerError::MutationNotFound))
    }

    /// Applies operations in order in ONE transaction, one result each: a refused or invalid operation
    /// changes nothing and the others still apply; all that applied are committed together (group
    /// commit, with whatever else was queued). The outer error is a store failure, in which case nothing
    /// was committed, or [`LedgerError::Busy`] when the writer could not start it within the write wait.
    pub async fn apply_batch(
        &self,
        ops: Vec<Command>,
    ) -> Result<Vec<Result<EntryState, LedgerError>>, LedgerError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let (answer, answered) = oneshot::channel();
        let job = Job {
            ops,
            deadline: Instant::now() + self.inner.write_wait,
            answer,
        };
        match tokio::time::timeout(self.inner.write_wait, self.queue.send(job)).await {
            Err(_) => return Err(LedgerError::Busy),
            Ok(Err(_)) => return Err(LedgerError::Store(sqlx::Error::PoolClosed)),
            Ok(Ok(())) => {}
        }
        answered
            .await
            .unwrap_or(Err(LedgerError::Store(sqlx::Error::PoolClosed)))
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
        let adapter = &self.inner.adapter;
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
        let loaded = load_for_write(
            &mut tx,
            session_key.as_str(),
            mutation.as_str(),
            None,
            self.inner.live_since(now),
        )
        .await?;
        match (loaded.session, loaded.entry) {
            (SessionState::Expired, _) => return Err(LedgerError::SessionExpired),
            (_, Some(existing)) => {
                return Err(rejected(
                    Rejection::Refused(crate::error::Refusal::AlreadyRecorded),
                    Some(&existing),
                ))
            }
            (session, None) => {
                insert_entry(&mut tx, session, session_key, &turn, &mutation, &tool, now).await?;
            }
        }
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
}

/// Tells the adapter of a committed change; its failure or panic never changes settlement.
fn announce(adapter: &Arc<dyn Adapter>, a: Announcement) {
    let delivered = std::panic::catch_unwind(AssertUnwindSafe(|| {
        adapter.on_mutation_outcome(&a.session_key, &a.outcome, a.revision)
    }));
    match delivered {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, revision = a.revision, "live delivery failed"),
        Err(_) => tracing::error!(revision = a.revision, "live delivery panicked"),
    }
}

/// What a visible change did: the new state, announced when `live` and published.
fn announce_if(row: EntryRow, revision: i64, live: bool) -> Done {
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
    Done {
        state: row.state(),
        announcement,
        wrote: true,
    }
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
