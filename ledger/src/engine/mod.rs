//! The write side of the ledger (docs/ledger.md "Writing"): every transition of "Entries and their
//! states" as load → decide ([`crate::machine::decide`], pure) → write → announce, for whole groups of
//! queued commands at once.
//!
//! Group commit: one writer owns the write connection (SQLite: a thread of its own running each group's
//! transaction without a hand-off per statement, crate::direct; Postgres: a task on the pool).
//! [`Engine::apply`] and [`Engine::apply_batch`] queue their commands and wait; the writer takes
//! everything queued (at most [`GROUP_OPERATIONS`] commands, whole jobs), and in ONE `BEGIN IMMEDIATE`
//! transaction loads what they name, decides each in order in memory, writes the final state in a few
//! set-based statements (`crate::group`), commits once,
//! then announces the changes in revision order and answers each caller. Nobody is answered, and nothing
//! is announced, before the commit that holds the change returned. A store failure aborts the group; when
//! the group held several jobs, each is then applied alone, so one job's fault is answered to that job
//! only. Contention, a lost connection and a storage fault (a full disk) are answered to every job of the
//! group at once, nothing committed (docs/ledger.md "Storage faults").

//!
//! By concern: [`Engine`]'s calls here; the queue and the writer in `writer`; deleting and purging
//! sessions in `retention`; legacy imports in `legacy`.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::error::LedgerError;
use crate::ids::{MutationId, SessionKey};
use crate::store::{on_tx, Inner};
use crate::wire::{EntryState, HistoryChange};

mod deadlines;
mod legacy;
mod retention;
mod writer;

pub use crate::command::{Action, Actor, Command, EntryKey, Evidence, Settlement};
pub use deadlines::{DeadlineClock, OVERDUE_BATCH, RESTART_GRACE};
pub use retention::{Purge, PurgeMode, PurgeRules, MASS_PURGE_SESSIONS, PURGE_CLOCK_CATCH_UP};
use writer::{Job, JobAnswer, Writer};

/// Operations at most in one group commit (whole jobs: a batch is never split; a group holds at least
/// one job).
pub const GROUP_OPERATIONS: usize = 2_000;

/// Jobs that may wait in the writer's queue; a caller that finds it full waits up to the write wait,
/// then is refused with [`LedgerError::Busy`].
pub const QUEUED_JOBS: usize = 4_096;

/// The write side. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    /// The writer task's queue.
    queue: mpsc::Sender<Job>,
}

impl Engine {
    /// Starts the group-commit writer task on the current tokio runtime; the engine queues to it.
    ///
    /// SQLite: the writer runs on a thread of its own (`ledger-writer`, running its loop with
    /// `Handle::block_on` of the current tokio runtime, which stays the current one there: adapters are
    /// called in it), where each group's transaction runs from `BEGIN IMMEDIATE` to `COMMIT` without a
    /// hand-off (crate::direct); a caller's job crosses threads once to it and its answer once back. It
    /// ends with the last [`Engine`]. On a current-thread runtime its timers (the write wait) run while
    /// that runtime's own thread is in `Runtime::block_on`, as a test's is while it awaits a write. If
    /// the thread cannot be started (logged), every write fails as after the writer ended (a store
    /// failure).
    pub(crate) fn start(inner: Arc<Inner>) -> Self {
        let (queue, jobs) = mpsc::channel(QUEUED_JOBS);
        let writer = Writer {
            store: inner.clone(),
            page_limit: std::sync::atomic::AtomicU32::new(0),
        };
        if let crate::store::Db::Sqlite { write, .. } = &inner.db {
            let options = (*write.connect_options()).clone();
            let (stop, stopped) = oneshot::channel();
            if let Ok(mut slot) = inner.writer_stop.lock() {
                *slot = Some(stop);
            }
            // The caller's runtime stays the current one on the writer's thread: what the writer or an
            // adapter spawns runs there, and its timers are the runtime's.
            let runtime = tokio::runtime::Handle::current();
            let started = std::thread::Builder::new()
                .name("ledger-writer".into())
                .spawn(move || runtime.block_on(writer.run_direct(jobs, options, stopped)));
            if let Err(e) = started {
                tracing::error!(error = %e, "the ledger's writer thread cannot start");
            }
        } else {
            tokio::spawn(writer.run(jobs));
        }
        Engine { inner, queue }
    }

    /// Applies one operation for the host (committed in the writer's next group): [`Self::apply_as`] with
    /// [`Actor::Host`]. Returns the entry's state after it.
    pub async fn apply(&self, op: Command) -> Result<EntryState, LedgerError> {
        self.apply_as(Actor::Host, op).await
    }

    /// Applies one operation asked by `actor` (recorded on its history row, docs/ledger.md "History").
    /// Returns the entry's state after it; errors as [`Self::apply_batch_as`], the operation's own error
    /// (`Invalid`, the 404s, `Refused`) answered directly.
    pub async fn apply_as(&self, actor: Actor, op: Command) -> Result<EntryState, LedgerError> {
        let mut results = self.apply_batch_as(actor, vec![op]).await?;
        results.pop().unwrap_or(Err(LedgerError::MutationNotFound))
    }

    /// [`Self::apply_batch_as`] for the host ([`Actor::Host`]).
    pub async fn apply_batch(
        &self,
        ops: Vec<Command>,
    ) -> Result<Vec<Result<EntryState, LedgerError>>, LedgerError> {
        self.apply_batch_as(Actor::Host, ops).await
    }

    /// Applies operations in order in ONE transaction, one result each: a refused or invalid operation
    /// changes nothing and the others still apply; all that applied are committed together (group
    /// commit, with whatever else was queued). The outer error is a store failure, in which case nothing
    /// was committed, or [`LedgerError::Busy`] when the writer could not start it within the write wait.
    /// Every change is kept as one history row naming `actor`, in the same transaction (docs/ledger.md
    /// "History").
    pub async fn apply_batch_as(
        &self,
        actor: Actor,
        ops: Vec<Command>,
    ) -> Result<Vec<Result<EntryState, LedgerError>>, LedgerError> {
        let answered = self.submit(actor, ops).await?;
        Ok(answered.into_iter().map(|r| r.map(|a| a.state)).collect())
    }

    /// Adds a note ([`Action::Note`]) asked by `actor` and answers the history row it added, exactly as
    /// `SessionManager::operation_history` serves it (docs/ledger.md "History"): no revision, no live
    /// event, the entry unchanged. Errors as [`Self::apply_as`]; a command that is not a note is
    /// `Invalid` on `op`.
    pub async fn note_as(&self, actor: Actor, op: Command) -> Result<HistoryChange, LedgerError> {
        if !matches!(op.action, Action::Note { .. }) {
            return Err(LedgerError::invalid("op", "not a note"));
        }
        let answered = self
            .submit(actor, vec![op])
            .await?
            .pop()
            .unwrap_or(Err(LedgerError::MutationNotFound))?;
        answered
            .note
            .ok_or_else(|| LedgerError::internal("a note was applied without its history row"))
    }

    /// Takes the claim of an entry for `actor` ([`Action::Claim`], docs/api.md "Claims") and answers its
    /// `claim` history row and whether this call added it (`false`: `actor` already held it, and the row is
    /// the one that took it). Another holder: [`LedgerError::AlreadyClaimed`]. An actor that claimed or
    /// released this entry [`crate::error::CLAIMS_PER_MINUTE`] times in the last 60 s (the ledger's clock):
    /// [`LedgerError::TooManyClaims`], nothing written. Errors otherwise as [`Self::apply_as`]
    /// (`SessionNotFound`, `SessionExpired`, `MutationNotFound`).
    pub async fn claim_as(
        &self,
        actor: Actor,
        session_key: SessionKey,
        mutation_id: MutationId,
    ) -> Result<(HistoryChange, bool), LedgerError> {
        let op = Command::new(session_key.clone(), mutation_id.clone(), Action::Claim);
        let answered = self
            .submit(actor, vec![op])
            .await?
            .pop()
            .unwrap_or(Err(LedgerError::MutationNotFound))?;
        let added = answered.added;
        let row = answered
            .note
            .ok_or_else(|| LedgerError::internal("a claim was applied without its history row"))?;
        if added {
            self.claim_moved(&session_key, &mutation_id, &row).await;
        }
        Ok((row, added))
    }

    /// Hands the claim of an entry to the staff member `to` ([`Action::Assign`], docs/api.md "Claims"),
    /// asked by `actor`, and answers its `claim` history row (its `note` is `to`) and whether this call
    /// added it (`false`: `to` held it already, and the row is the one that took it). `to` must name a
    /// staff account: the caller checks. Held by a third staff member: [`LedgerError::AlreadyClaimed`].
    /// Other errors as [`Self::claim_as`].
    pub async fn assign_as(
        &self,
        actor: Actor,
        session_key: SessionKey,
        mutation_id: MutationId,
        to: String,
    ) -> Result<(HistoryChange, bool), LedgerError> {
        let op = Command::new(
            session_key.clone(),
            mutation_id.clone(),
            Action::Assign { to },
        );
        let answered = self
            .submit(actor, vec![op])
            .await?
            .pop()
            .unwrap_or(Err(LedgerError::MutationNotFound))?;
        let added = answered.added;
        let row = answered.note.ok_or_else(|| {
            LedgerError::internal("an assignment was applied without its history row")
        })?;
        if added {
            self.claim_moved(&session_key, &mutation_id, &row).await;
        }
        Ok((row, added))
    }

    /// Ends the claim of an entry, whoever holds it ([`Action::Release`]), and answers the `release`
    /// history row it added, or `None` when nobody held it. Errors as [`Self::claim_as`] but for
    /// `AlreadyClaimed` (`TooManyClaims` included: claims and releases count together).
    pub async fn release_as(
        &self,
        actor: Actor,
        session_key: SessionKey,
        mutation_id: MutationId,
    ) -> Result<Option<HistoryChange>, LedgerError> {
        let op = Command::new(session_key.clone(), mutation_id.clone(), Action::Release);
        let answered = self
            .submit(actor, vec![op])
            .await?
            .pop()
            .unwrap_or(Err(LedgerError::MutationNotFound))?;
        if let Some(row) = &answered.note {
            self.claim_moved(&session_key, &mutation_id, row).await;
        }
        Ok(answered.note)
    }

    /// Tells who listens that who holds the claim of an entry changed ([`Adapter::on_claim_changed`],
    /// docs/api.md "Claims"): this instance's adapter at once and, on Postgres, every other instance
    /// through a notification sent after the commit. Best effort: a notification that cannot be sent is
    /// logged (the other instances' pages see the claim at their next read).
    ///
    /// [`Adapter::on_claim_changed`]: crate::Adapter::on_claim_changed
    async fn claim_moved(
        &self,
        session_key: &SessionKey,
        mutation_id: &MutationId,
        row: &HistoryChange,
    ) {
        let turn = row
            .outcome
            .as_ref()
            .map(|o| o.logical_turn_id.as_str())
            .unwrap_or("");
        let adapter = &self.inner.adapter;
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            adapter.on_claim_changed(session_key, mutation_id.as_str(), turn)
        }))
        .is_err()
        {
            tracing::error!("live delivery of a claim change panicked");
        }
        if let crate::store::Db::Postgres { pool, channel } = &self.inner.db {
            let note = crate::store::live::Note::Claim {
                s: session_key.to_string(),
                m: mutation_id.to_string(),
                t: turn.to_owned(),
                by: self.inner.instance(),
            };
            let sent = sqlx::query("SELECT pg_notify($1, $2)")
                .bind(channel)
                .bind(note.payload())
                .execute(pool)
                .await;
            if let Err(e) = sent {
                tracing::warn!(error = %e, "a claim change was not sent to the other instances");
            }
        }
    }

    /// The storage fault the ledger is in, if any (docs/ledger.md "Storage faults"): a write failed
    /// because the storage is full (`storage_full`) or refuses writes (`storage_unavailable`), and no
    /// write succeeded since. While one is recorded, a probe write (a 64 KiB row added and removed in
    /// one transaction) checks at most once per [`crate::health::PROBE_INTERVAL`] whether it is over,
    /// so the fault clears by itself once space is freed, even when no client writes. `/healthz`
    /// answers 503 with it.
    pub async fn storage_fault(&self) -> Option<crate::StorageFault> {
        let health = &self.inner.storage;
        health.current()?;
        if health.probe_due() {
            // The write lock only when free: a writer holding it will tell by itself.
            if let Ok(_writer) = self.inner.write_lock.try_lock() {
                match self.probe_write().await {
                    Ok(()) => health.clear(),
                    Err(e) => health.record(&e, self.inner.clock.now_ms()),
                }
            }
        }
        health.current()
    }

    /// One small write that needs new space: a 64 KiB `maintenance` row added and removed again in one
    /// committed transaction (nothing of it stays).
    async fn probe_write(&self) -> Result<(), LedgerError> {
        let mut tx = self.inner.begin_write().await?;
        on_tx!(&mut tx, |c, d| {
            let pad = match d {
                crate::store::Dialect::Sqlite => "hex(zeroblob(32768))",
                crate::store::Dialect::Postgres => "repeat('0', 65536)",
            };
            sqlx::query(&format!(
                "INSERT INTO maintenance (task, done_at) VALUES ('storage_probe ' || {pad}, 0)"
            ))
            .execute(&mut *c)
            .await?;
            sqlx::query("DELETE FROM maintenance WHERE task LIKE 'storage!_probe %' ESCAPE '!'")
                .execute(&mut *c)
                .await?;
        });
        tx.commit().await
    }

    /// For tests (SQLite): makes the database "full" without filling a disk. `Some(extra)`: every
    /// write connection, the open one and any opened later, may grow the database by at most `extra`
    /// pages (SQLite's `max_page_count`), so writes past it fail with `SQLITE_FULL` as on a full disk;
    /// `None` lifts the limit, as freeing space would. Returns the limit in pages (0 for none).
    /// Postgres: nothing (returns 0).
    #[doc(hidden)]
    pub async fn limit_storage_for_tests(&self, extra: Option<u32>) -> Result<u32, LedgerError> {
        let crate::store::Db::Sqlite { write, .. } = &self.inner.db else {
            return Ok(0);
        };
        let _writer = self.inner.writer().await?;
        let pages = match extra {
            Some(extra) => {
                let now: i64 = sqlx::query_scalar("PRAGMA page_count")
                    .fetch_one(write)
                    .await?;
                u32::try_from(now).unwrap_or(u32::MAX).saturating_add(extra)
            }
            None => 0,
        };
        self.inner
            .storage
            .page_limit
            .store(pages, std::sync::atomic::Ordering::Release);
        let max = if pages == 0 { 4_294_967_294 } else { pages };
        sqlx::query(&format!("PRAGMA max_page_count = {max}"))
            .execute(write)
            .await?;
        Ok(pages)
    }

    /// Queues `ops` as one job of `actor` and waits for the writer's answer.
    async fn submit(&self, actor: Actor, ops: Vec<Command>) -> JobAnswer {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let (answer, answered) = oneshot::channel();
        let job = Job {
            ops,
            actor,
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
}
