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

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::adapter::{Adapter, SessionEnd};
use crate::error::LedgerError;
use crate::group::{refused, Announcement, Done, Group, TurnChange};
use crate::ids::{LogicalTurnId, MutationId, SessionKey, ToolName};
use crate::machine::SessionState;
use crate::projection::LedgerEntry;
use crate::rows::{load_for_write, EntryRow, ENTRY_COLUMNS};
use crate::sanitize::sanitize_metadata;
use crate::store::{on_tx, Inner, WriteTx};
use crate::wire::{EntryState, HistoryChange, HistoryKind, LedgerStatus, Reason};

pub use crate::command::{Action, Actor, Command, EntryKey, Evidence, Settlement};

/// Operations at most in one group commit (whole jobs: a batch is never split; a group holds at least
/// one job).
pub const GROUP_OPERATIONS: usize = 2_000;

/// Jobs that may wait in the writer's queue; a caller that finds it full waits up to the write wait,
/// then is refused with [`LedgerError::Busy`].
pub const QUEUED_JOBS: usize = 4_096;

/// A purge that would delete at least this many sessions, and more than a tenth of all sessions, is a
/// mass purge: a sweep holds it for an operator (docs/ledger.md "Retention").
pub const MASS_PURGE_SESSIONS: usize = 10;

/// The purge's own clock moves at most this many times as fast as the monotonic clock while it is behind
/// the wall clock (docs/ledger.md "Retention"): a restart after the wall clock jumped ahead by D deletes
/// nothing the jump made due until the server has run D / (this - 1).
pub const PURGE_CLOCK_CATCH_UP: i64 = 2;

/// How [`Engine::purge_expired`] decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PurgeRules {
    /// How long after its expiry a session is deleted (`outcomes serve --purge-after-secs`, default
    /// 7 days).
    pub grace: std::time::Duration,
    pub mode: PurgeMode,
    /// `None`: "now" is the wall clock (an operator's `outcomes purge`, whose `--confirm` also sets the
    /// purge clock to it). `Some(elapsed)`: the server's sweep, with the monotonic time since this
    /// process's previous sweep (zero for its first): "now" is the purge clock stored in the ledger
    /// (table `purge_clock`; at its first use the newest session write), moved on by
    /// [`PURGE_CLOCK_CATCH_UP`] × `elapsed`, never past the wall clock, and stored again.
    pub paced: Option<std::time::Duration>,
}

/// Who asks for a purge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeMode {
    /// The server's periodic sweep: a mass purge deletes nothing and is held.
    Sweep,
    /// An operator's `outcomes purge --confirm`: everything due is deleted, a mass purge included.
    Confirmed,
    /// Nothing is deleted; the answer says what is due.
    DryRun,
}

/// What a purge found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purge {
    /// Sessions in the ledger before the purge (hidden ones included).
    pub total: u64,
    /// Keys of the sessions due (expired at least the grace ago), in key order.
    pub due: Vec<String>,
    /// Keys of the sessions deleted, in key order (empty when held or a dry run).
    pub deleted: Vec<String>,
    /// True when a sweep found a mass purge and deleted nothing.
    pub held: bool,
    /// How far the purge's "now" was behind the wall clock, in ms (0 unless [`PurgeRules::paced`] held
    /// it back: a restart after downtime, or a wall clock that jumped ahead).
    pub behind_ms: i64,
}

impl Purge {
    /// At least [`MASS_PURGE_SESSIONS`] sessions due, and more than a tenth of all.
    pub fn is_mass(&self) -> bool {
        self.due.len() >= MASS_PURGE_SESSIONS && self.due.len() as u64 * 10 > self.total
    }
}

/// What one command gave.
type Applied = Result<Done, LedgerError>;

/// What a caller is answered for one applied operation: the entry's state after it, and for a note or a
/// claim its history row and whether it was added (`Done`).
struct Answered {
    state: EntryState,
    note: Option<HistoryChange>,
    added: bool,
}

/// One commit's jobs with what each gave, and the turns it changed visibly.
type Commit = (
    Vec<(Job, Result<Vec<Applied>, LedgerError>)>,
    Vec<TurnChange>,
);

/// The answer to a job: one result per operation, or a store failure (nothing committed).
type JobAnswer = Result<Vec<Result<Answered, LedgerError>>, LedgerError>;

/// Operations queued for the writer, with the caller waiting on `answer`.
struct Job {
    ops: Vec<Command>,
    /// Who asked: recorded on each change's history row.
    actor: Actor,
    /// Past this, a job not yet started is refused with [`LedgerError::Busy`] (the write wait).
    deadline: Instant,
    answer: oneshot::Sender<JobAnswer>,
}

/// The writer task: owns the write connection for group commits. It ends when the last [`Engine`] (the
/// last sender of its queue) is gone.
struct Writer {
    store: Arc<Inner>,
    /// SQLite: the page limit its connection has (`max_page_count` above the size when it was set, for
    /// tests: [`Engine::limit_storage_for_tests`]); 0 for none.
    page_limit: std::sync::atomic::AtomicU32,
}

/// What the writer takes next from its queue.
enum Next {
    /// A group: everything queued, at most [`GROUP_OPERATIONS`] operations in whole jobs, those past
    /// their deadline already answered `Busy`.
    Jobs(Vec<Job>),
    /// The ledger closes (SQLite): the writer closes its connection, then answers on the sender.
    Stop(oneshot::Sender<()>),
    /// The last [`Engine`] is gone.
    End,
}

/// The SQLite writer's stop request ([`Inner::stop_writer`]): answered once its connection is closed.
pub(crate) type StopWriter = oneshot::Sender<oneshot::Sender<()>>;

impl Writer {
    /// The next group from `queue` (or the stop request, while `stop` holds one to wait for).
    async fn next(
        queue: &mut mpsc::Receiver<Job>,
        stop: &mut Option<oneshot::Receiver<oneshot::Sender<()>>>,
    ) -> Next {
        let first = match stop {
            Some(request) => tokio::select! {
                biased;
                asked = request => {
                    *stop = None;
                    match asked {
                        Ok(ack) => return Next::Stop(ack),
                        // The ledger went without asking: serve on.
                        Err(_) => queue.recv().await,
                    }
                }
                job = queue.recv() => job,
            },
            None => queue.recv().await,
        };
        let Some(first) = first else {
            return Next::End;
        };
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
        let (late, jobs): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.deadline < now);
        for job in late {
            let _ = job.answer.send(Err(LedgerError::Busy));
        }
        Next::Jobs(jobs)
    }

    /// Postgres: the writer task, each group through the pool.
    async fn run(self, mut queue: mpsc::Receiver<Job>) {
        loop {
            match Self::next(&mut queue, &mut None).await {
                Next::Jobs(jobs) if jobs.is_empty() => {}
                Next::Jobs(jobs) => self.group(jobs, None).await,
                Next::Stop(ack) => {
                    let _ = ack.send(());
                }
                Next::End => return,
            }
        }
    }

    /// SQLite: the writer thread's loop (docs/ledger.md "Writing"). It opens a write connection of its
    /// own with the write pool's options (the same file, pragmas and busy timeout), locks its handle out
    /// of sqlx's worker thread once for the connection's whole life, and runs every group on it here
    /// (crate::direct), with its statements prepared once and kept. The connection is opened again when
    /// opening failed (that group is answered the failure) or when SQLite left it inside a transaction;
    /// it is closed when the ledger closes (`stop`, then every later job is answered
    /// [`LedgerError::Unavailable`]) or the last [`Engine`] goes.
    async fn run_direct(
        self,
        mut queue: mpsc::Receiver<Job>,
        options: sqlx::sqlite::SqliteConnectOptions,
        stop: oneshot::Receiver<oneshot::Sender<()>>,
    ) {
        use sqlx::{ConnectOptions, Connection};
        let mut stop = Some(stop);
        let mut waiting: Option<Vec<Job>> = None;
        loop {
            let mut conn = match options.connect().await {
                Ok(conn) => conn,
                Err(e) => {
                    // The group that waited for this connection is answered the failure; the next
                    // group tries again.
                    let e = LedgerError::from(e);
                    tracing::warn!(error = %e, "the ledger's writer cannot open its connection");
                    if let Some(jobs) = waiting.take() {
                        self.refuse(jobs, &e);
                    }
                    match Self::next(&mut queue, &mut stop).await {
                        Next::Jobs(jobs) => waiting = Some(jobs),
                        Next::Stop(ack) => {
                            let _ = ack.send(());
                            return self.closed(queue).await;
                        }
                        Next::End => return,
                    }
                    continue;
                }
            };
            self.page_limit
                .store(0, std::sync::atomic::Ordering::Relaxed);
            // Held from here until the connection closes: sqlx's worker thread never runs a statement
            // on this connection meanwhile.
            let stopped = match conn.lock_handle().await {
                Err(e) => {
                    tracing::warn!(error = %e, "the ledger's writer cannot lock its connection");
                    None
                }
                Ok(mut locked) => {
                    // SAFETY: `locked` keeps sqlx's worker thread off the handle and outlives `db` (both
                    // locals of this block, `db` dropped first); `db` never closes the handle, and it
                    // finalizes the statements it prepared when it is dropped, before the connection
                    // closes.
                    let db = unsafe {
                        rusqlite::Connection::from_handle(locked.as_raw_handle().as_ptr())
                    };
                    match db {
                        Err(e) => {
                            tracing::warn!(error = %e, "the ledger's writer cannot use its connection");
                            None
                        }
                        Ok(mut db) => {
                            db.set_prepared_statement_cache_capacity(64);
                            let stopped = self
                                .serve(&mut db, &mut queue, &mut stop, &mut waiting)
                                .await;
                            drop(db);
                            stopped
                        }
                    }
                }
            };
            let _ = conn.close().await;
            match stopped {
                Some(Next::Stop(ack)) => {
                    let _ = ack.send(());
                    return self.closed(queue).await;
                }
                Some(_) => return,
                // Opened again for the next group.
                None => {}
            }
        }
    }

    /// Runs groups on `db` (`waiting` first, if any) until the queue ends or the ledger closes (answers
    /// that `Next`), or until the connection is left inside a transaction (answers `None`).
    async fn serve(
        &self,
        db: &mut rusqlite::Connection,
        queue: &mut mpsc::Receiver<Job>,
        stop: &mut Option<oneshot::Receiver<oneshot::Sender<()>>>,
        waiting: &mut Option<Vec<Job>>,
    ) -> Option<Next> {
        loop {
            let jobs = match waiting.take() {
                Some(jobs) => jobs,
                None => match Self::next(queue, stop).await {
                    Next::Jobs(jobs) => jobs,
                    other => return Some(other),
                },
            };
            if jobs.is_empty() {
                continue;
            }
            self.group(jobs, Some(&mut *db)).await;
            if !db.is_autocommit() {
                tracing::warn!(
                    "the ledger's write connection was left inside a transaction SQLite had not \
                     ended; it is replaced"
                );
                return None;
            }
        }
    }

    /// SQLite: gives the writer's connection the page limit the tests set
    /// ([`Engine::limit_storage_for_tests`]) when it changed since the last group. Called under the
    /// write lock, before the transaction.
    fn limit_pages(&self, db: &rusqlite::Connection) -> Result<(), LedgerError> {
        use std::sync::atomic::Ordering;
        let wanted = self.store.storage.page_limit.load(Ordering::Acquire);
        if wanted != self.page_limit.load(Ordering::Relaxed) {
            let max = if wanted == 0 { 4_294_967_294 } else { wanted };
            db.execute_batch(&format!("PRAGMA max_page_count = {max}"))
                .map_err(crate::direct::failure)?;
            self.page_limit.store(wanted, Ordering::Relaxed);
        }
        Ok(())
    }

    /// After the ledger closed (SQLite): every job is answered [`LedgerError::Unavailable`], as a write
    /// to a closed pool is.
    async fn closed(&self, mut queue: mpsc::Receiver<Job>) {
        loop {
            match Self::next(&mut queue, &mut None).await {
                Next::Jobs(jobs) => self.refuse(jobs, &LedgerError::Unavailable),
                Next::Stop(ack) => {
                    let _ = ack.send(());
                }
                Next::End => return,
            }
        }
    }

    /// Answers every job of a group that could not be run `e` (a transient error as it is, any other
    /// as a store failure with its text).
    fn refuse(&self, jobs: Vec<Job>, e: &LedgerError) {
        self.store.storage.record(e, self.store.clock.now_ms());
        for job in jobs {
            let e = e
                .transient()
                .unwrap_or_else(|| LedgerError::Store(sqlx::Error::Protocol(e.to_string())));
            let _ = job.answer.send(Err(e));
        }
    }

    /// Commits `jobs` together, or each alone when the group fails for a reason other than contention.
    /// `db`: the writer thread's SQLite connection ([`Writer::run_direct`]); `None` on Postgres.
    async fn group(&self, jobs: Vec<Job>, mut db: Option<&mut rusqlite::Connection>) {
        let Ok(guard) =
            tokio::time::timeout(self.store.write_wait, self.store.write_lock.lock()).await
        else {
            for job in jobs {
                let _ = job.answer.send(Err(LedgerError::Busy));
            }
            return;
        };
        let health = &self.store.storage;
        match self.commit(&jobs, db.as_deref_mut()).await {
            Ok((applied, turns)) => {
                health.clear();
                drop(guard);
                let done = jobs.into_iter().zip(applied.into_iter().map(Ok)).collect();
                self.finish(vec![(done, turns)]);
            }
            // Contention, a lost connection or a storage fault (a full disk) would fail each job
            // alone too: every job of the group is answered the same transient error, nothing of
            // any was committed (docs/ledger.md "Storage faults").
            Err(e) if jobs.len() == 1 || e.transient().is_some() => {
                health.record(&e, self.store.clock.now_ms());
                drop(guard);
                tracing::warn!(error = %e, jobs = jobs.len(), "group commit failed");
                for job in jobs {
                    let e = e.transient().unwrap_or_else(|| {
                        LedgerError::Store(sqlx::Error::Protocol(e.to_string()))
                    });
                    let _ = job.answer.send(Err(e));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, jobs = jobs.len(), "group commit failed; each job alone");
                let mut commits = Vec::with_capacity(jobs.len());
                for job in jobs {
                    let (applied, turns) = match self
                        .commit(std::slice::from_ref(&job), db.as_deref_mut())
                        .await
                    {
                        Ok((mut a, turns)) => {
                            health.clear();
                            (Ok(a.pop().unwrap_or_default()), turns)
                        }
                        Err(e) => {
                            health.record(&e, self.store.clock.now_ms());
                            (Err(e), Vec::new())
                        }
                    };
                    commits.push((vec![(job, applied)], turns));
                }
                drop(guard);
                self.finish(commits);
            }
        }
    }

    /// For each commit, in commit order: announces what its jobs changed, in order, then one
    /// `turn_changed` hint per turn it changed (docs/ledger.md "Writing"); then answers every caller, so a
    /// caller's answer never arrives before its change's events were handed to the adapter.
    fn finish(&self, commits: Vec<Commit>) {
        let mut answers = Vec::new();
        // Postgres: the listener of this instance emits every instance's changes, this one's
        // included, from the notifications (crate::notify); the answers wait until it has.
        let emitter = self.store.emitter.clone();
        let mut waits = Vec::new();
        for (jobs, turns) in commits {
            for (job, mut applied) in jobs {
                if let Ok(results) = &mut applied {
                    for done in results.iter_mut().flatten() {
                        if let Some(a) = done.announcement.take() {
                            if emitter.is_none() {
                                announce(&self.store.adapter, a);
                            }
                        }
                    }
                }
                answers.push((job, applied));
            }
            for t in turns {
                if emitter.is_none() {
                    announce_turn(&self.store.adapter, t);
                } else {
                    waits.push((
                        t.session_key.to_string(),
                        t.logical_turn_id.to_string(),
                        t.latest_revision,
                    ));
                }
            }
        }
        match emitter {
            Some(emitter) if !waits.is_empty() => {
                tokio::spawn(async move {
                    emitter.wait_for(&waits, LISTENER_WAIT).await;
                    send_answers(answers);
                });
            }
            _ => send_answers(answers),
        }
    }
}

/// How long an answer on Postgres waits for this instance's listener to emit the change it answers
/// (the change is durable either way; a listener that is down does not hold answers longer).
const LISTENER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Answers each job with what it did.
fn send_answers(answers: Vec<(Job, Result<Vec<Applied>, LedgerError>)>) {
    {
        for (job, applied) in answers {
            let answer = applied.map(|results| {
                results
                    .into_iter()
                    .map(|r| {
                        r.map(|done| Answered {
                            state: done.state,
                            note: done.note,
                            added: done.added,
                        })
                    })
                    .collect()
            });
            let _ = job.answer.send(answer);
        }
    }
}

impl Writer {
    /// Applies every operation of `jobs` in order in ONE `BEGIN IMMEDIATE` transaction and commits it.
    /// A refused or invalid operation is answered as such and the others still apply; a store failure
    /// (or contention) is the outer error, and then nothing was committed.
    /// Also answers the turns the commit changed visibly, with their latest revisions after it.
    ///
    /// `db`: the writer thread's SQLite connection, on which the whole transaction, `BEGIN IMMEDIATE` to
    /// `COMMIT`, runs on this thread with no hand-off per statement (crate::direct); `None`: a
    /// transaction of the pool (Postgres).
    async fn commit(
        &self,
        jobs: &[Job],
        db: Option<&mut rusqlite::Connection>,
    ) -> Result<(Vec<Vec<Applied>>, Vec<TurnChange>), LedgerError> {
        let now = self.store.clock.now_ms();
        let live_since = self.store.live_since(now);
        let commands: Vec<&Command> = jobs.iter().flat_map(|j| j.ops.iter()).collect();
        // Postgres: the pool's connection the transaction runs on (it borrows it).
        let mut conn = None;
        let mut tx = match db {
            Some(db) => {
                self.limit_pages(db)?;
                WriteTx::Direct(crate::direct::Direct::begin(db)?)
            }
            // Postgres: other instances write too; this group holds its sessions until it commits
            // (`BEGIN` and the locks in one round trip).
            None => {
                self.store
                    .begin_group(
                        &mut conn,
                        commands.iter().map(|c| c.key.session_key.as_str()),
                    )
                    .await?
            }
        };
        let mut group = Group::load(&mut tx, &commands, now, live_since).await?;
        let mut applied = Vec::with_capacity(jobs.len());
        for job in jobs {
            let mut results = Vec::with_capacity(job.ops.len());
            for command in &job.ops {
                // A store failure ends the group: SQLite may have rolled the transaction back already
                // (a full disk), and nothing after it may run outside the transaction.
                match group.apply(&mut tx, command, &job.actor).await {
                    Err(e @ LedgerError::Store(_)) => return Err(e),
                    Err(e) if e.transient().is_some() => return Err(e),
                    result => results.push(result),
                }
            }
            applied.push(results);
        }
        let turns = group.turn_changes();
        group.write(&mut tx, self.store.notify_channel()).await?;
        tx.commit().await?;
        Ok((applied, turns))
    }
}

/// Records an approved entry (no intent, no revision), creating the session and the turn when new.
async fn insert_entry(
    tx: &mut WriteTx<'_>,
    session: SessionState,
    session_key: &SessionKey,
    turn: &LogicalTurnId,
    mutation: &MutationId,
    tool: &ToolName,
    now: i64,
) -> Result<EntryRow, LedgerError> {
    on_tx!(tx, |c, d| {
        if session == SessionState::Absent {
            sqlx::query(
                "INSERT INTO sessions (session_key, created_at, last_write_at) VALUES ($1, $2, $3)",
            )
            .bind(session_key.as_str())
            .bind(now)
            .bind(now)
            .execute(&mut *c)
            .await?;
        }
        sqlx::query(
            "INSERT INTO turns (session_key, logical_turn_id, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (session_key, logical_turn_id) DO NOTHING",
        )
        .bind(session_key.as_str())
        .bind(turn.as_str())
        .bind(now)
        .execute(&mut *c)
        .await?;
        Ok(sqlx::query_as(&format!(
            "INSERT INTO entries (session_key, logical_turn_id, mutation_id, tool, status, recorded_at, \
             updated_at) VALUES ($1, $2, $3, $4, 'approved', $5, $6) RETURNING {ENTRY_COLUMNS}"
        ))
        .bind(session_key.as_str())
        .bind(turn.as_str())
        .bind(mutation.as_str())
        .bind(tool.as_str())
        .bind(now)
        .bind(now)
        .fetch_one(&mut *c)
        .await?)
    })
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
        answered.note.ok_or_else(|| {
            LedgerError::Store(sqlx::Error::Protocol(
                "a note was applied without its history row".into(),
            ))
        })
    }

    /// Takes the claim of an entry for `actor` ([`Action::Claim`], docs/api.md "Claims") and answers its
    /// `claim` history row and whether this call added it (`false`: `actor` already held it, and the row is
    /// the one that took it). Another holder: [`LedgerError::AlreadyClaimed`]. Errors otherwise as
    /// [`Self::apply_as`] (`SessionNotFound`, `SessionExpired`, `MutationNotFound`).
    pub async fn claim_as(
        &self,
        actor: Actor,
        session_key: SessionKey,
        mutation_id: MutationId,
    ) -> Result<(HistoryChange, bool), LedgerError> {
        let op = Command::new(session_key, mutation_id, Action::Claim);
        let answered = self
            .submit(actor, vec![op])
            .await?
            .pop()
            .unwrap_or(Err(LedgerError::MutationNotFound))?;
        let added = answered.added;
        answered.note.map(|row| (row, added)).ok_or_else(|| {
            LedgerError::Store(sqlx::Error::Protocol(
                "a claim was applied without its history row".into(),
            ))
        })
    }

    /// Ends the claim of an entry, whoever holds it ([`Action::Release`]), and answers the `release`
    /// history row it added, or `None` when nobody held it. Errors as [`Self::claim_as`] but for
    /// `AlreadyClaimed`.
    pub async fn release_as(
        &self,
        actor: Actor,
        session_key: SessionKey,
        mutation_id: MutationId,
    ) -> Result<Option<HistoryChange>, LedgerError> {
        let op = Command::new(session_key, mutation_id, Action::Release);
        let answered = self
            .submit(actor, vec![op])
            .await?
            .pop()
            .unwrap_or(Err(LedgerError::MutationNotFound))?;
        Ok(answered.note)
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

    /// Deletes a session with its turns, entries, evidence and history, then tells the adapter
    /// (`on_session_ended`, `Deleted`). `SessionNotFound` when there is none.
    pub async fn delete_session(&self, session_key: &SessionKey) -> Result<(), LedgerError> {
        let _writer = self.inner.writer().await?;
        let mut tx = self.inner.begin_write().await?;
        tx.lock_sessions([session_key.as_str()]).await?;
        let done = on_tx!(&mut tx, |c, d| sqlx::query(
            "DELETE FROM sessions WHERE session_key = $1"
        )
        .bind(session_key.as_str())
        .execute(c)
        .await?
        .rows_affected());
        if done > 0 {
            tx.notify(
                self.inner.notify_channel(),
                vec![self.ended(session_key.as_str(), true)],
            )
            .await?;
        }
        tx.commit().await?;
        if done == 0 {
            return Err(LedgerError::SessionNotFound);
        }
        self.end_session(session_key, SessionEnd::Deleted);
        Ok(())
    }

    /// The retention purge (docs/ledger.md "Retention"): deletes every session whose time to live ran out
    /// at least `rules.grace` ago (with its history), then tells the adapter of each (`on_session_ended`,
    /// `Expired`). "Now" is the ledger's clock, or on Postgres with the real clock the database's (`now()`),
    /// so one instance's wrong clock cannot decide. A sweep ([`PurgeMode::Sweep`]) that would delete at
    /// least [`MASS_PURGE_SESSIONS`] sessions and more than a tenth of all sessions deletes nothing and
    /// answers `held` (a clock that jumped ahead expires everything at once; normal expiry is gradual);
    /// [`PurgeMode::Confirmed`] (an operator's `outcomes purge --confirm`) deletes them all the same;
    /// [`PurgeMode::DryRun`] only reports what is due.
    pub async fn purge_expired(&self, rules: PurgeRules) -> Result<Purge, LedgerError> {
        let _writer = self.inner.writer().await?;
        let mut tx = self.inner.begin_write().await?;
        let wall = match &mut tx {
            WriteTx::Postgres(t) if self.inner.clock.is_system() => {
                sqlx::query_scalar::<_, i64>(
                    "SELECT CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)",
                )
                .fetch_one(&mut **t)
                .await?
            }
            _ => self.inner.clock.now_ms(),
        };
        let now = match rules.paced {
            Some(elapsed) => paced_now(&mut tx, wall, elapsed).await?,
            None => {
                if rules.mode == PurgeMode::Confirmed {
                    store_purge_clock(&mut tx, wall).await?;
                }
                wall
            }
        };
        let grace = i64::try_from(rules.grace.as_millis()).unwrap_or(i64::MAX);
        let before = self.inner.live_since(now).saturating_sub(grace);
        let total: i64 = on_tx!(&mut tx, |c, d| sqlx::query_scalar(
            "SELECT COUNT(*) FROM sessions"
        )
        .fetch_one(c)
        .await?);
        // Postgres: lock the due sessions first (a writer of another instance may hold one), then
        // delete those still due.
        let due: Vec<String> = on_tx!(&mut tx, |c, d| sqlx::query_scalar(
            "SELECT session_key FROM sessions WHERE last_write_at < $1 ORDER BY session_key"
        )
        .bind(before)
        .fetch_all(c)
        .await?);
        let mut purge = Purge {
            total: u64::try_from(total).unwrap_or(0),
            due,
            deleted: Vec::new(),
            held: false,
            behind_ms: wall.saturating_sub(now),
        };
        let held = rules.mode == PurgeMode::Sweep && purge.is_mass();
        if purge.due.is_empty() || rules.mode == PurgeMode::DryRun || held {
            purge.held = held;
            // The purge clock moved (or was set) all the same.
            tx.commit().await?;
            return Ok(purge);
        }
        tx.lock_sessions(purge.due.iter().map(String::as_str))
            .await?;
        let keys: Vec<String> = on_tx!(&mut tx, |c, d| sqlx::query_scalar(&format!(
            "DELETE FROM sessions WHERE last_write_at < $1 AND {} \
             RETURNING session_key",
            d.text_in("session_key", 2)
        ))
        .bind(before)
        .bind(serde_json::to_string(&purge.due).unwrap_or_default())
        .fetch_all(c)
        .await?);
        let notes = keys.iter().map(|k| self.ended(k, false)).collect();
        tx.notify(self.inner.notify_channel(), notes).await?;
        tx.commit().await?;
        for key in &keys {
            if let Ok(key) = SessionKey::parse(key.clone()) {
                self.end_session(&key, SessionEnd::Expired);
            }
        }
        purge.deleted = keys;
        purge.deleted.sort();
        Ok(purge)
    }

    /// The notification that this instance ended `session_key` (Postgres: the other instances tell
    /// their adapters; crate::notify).
    fn ended(&self, session_key: &str, deleted: bool) -> String {
        crate::notify::Note::Ended {
            s: session_key.to_owned(),
            deleted,
            by: self.inner.instance(),
        }
        .payload()
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
    /// it appears only in a full replay, with one `imported` history row (actor `host`, no revision) in the
    /// same transaction. Refused like an approve when the mutation is already recorded.
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
        tx.lock_sessions([session_key.as_str()]).await?;
        let loaded = load_for_write(
            &mut tx,
            session_key.as_str(),
            mutation.as_str(),
            self.inner.live_since(now),
        )
        .await?;
        match (loaded.session, loaded.entry) {
            (SessionState::Expired, _) => return Err(LedgerError::SessionExpired),
            (_, Some(existing)) => {
                return Err(refused(crate::error::Refusal::AlreadyRecorded, &existing))
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
        on_tx!(&mut tx, |c, d| {
            sqlx::query(
            "UPDATE entries SET status = $1, intent_recorded = $2, reason = $3, meta_attached = $4, meta_id = $5, \
             meta_url = $6, meta_title = $7, settled_at = $8 WHERE session_key = $9 AND mutation_id = $10",
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
        .execute(&mut *c)
        .await?;
            sqlx::query(
            "INSERT INTO history (entry_seq, kind, at, revision, actor, attempt_id, ledger_status, \
             intent_recorded, reason, meta_attached, meta_id, meta_url, meta_title) \
             SELECT seq, $1, $2, NULL, $3, attempt_id, status, intent_recorded, reason, meta_attached, meta_id, \
             meta_url, meta_title FROM entries WHERE session_key = $4 AND mutation_id = $5",
        )
        .bind(HistoryKind::Imported.as_str())
        .bind(now)
        .bind(Actor::Host.spelling())
        .bind(session_key.as_str())
        .bind(mutation.as_str())
        .execute(&mut *c)
        .await?;
        });
        tx.commit().await?;
        Ok(())
    }
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

/// The purge's "now" for a server sweep (docs/ledger.md "Retention"): the stored purge clock (at its first
/// use the newest session write, or `wall` in an empty ledger) moved on by [`PURGE_CLOCK_CATCH_UP`] ×
/// `elapsed`, never past `wall`; stored again in the same transaction. A wall clock that jumped ahead at a
/// restart is thus followed only as fast as the server runs, and one set back is followed at once.
async fn paced_now(
    tx: &mut WriteTx<'_>,
    wall: i64,
    elapsed: std::time::Duration,
) -> Result<i64, LedgerError> {
    let stored: Option<i64> = on_tx!(&mut *tx, |c, d| sqlx::query_scalar(
        "SELECT at_ms FROM purge_clock WHERE id = 1"
    )
    .fetch_optional(c)
    .await?);
    let from = match stored {
        Some(at) => at,
        None => on_tx!(&mut *tx, |c, d| sqlx::query_scalar::<_, Option<i64>>(
            "SELECT MAX(last_write_at) FROM sessions"
        )
        .fetch_one(c)
        .await?)
        .unwrap_or(wall),
    };
    let step = i64::try_from(elapsed.as_millis())
        .unwrap_or(i64::MAX)
        .saturating_mul(PURGE_CLOCK_CATCH_UP);
    let now = wall.min(from.saturating_add(step));
    store_purge_clock(tx, now).await?;
    Ok(now)
}

/// Sets the stored purge clock to `at_ms` (ms since the Unix epoch).
async fn store_purge_clock(tx: &mut WriteTx<'_>, at_ms: i64) -> Result<(), LedgerError> {
    on_tx!(&mut *tx, |c, d| sqlx::query(
        "INSERT INTO purge_clock (id, at_ms) VALUES (1, $1) \
         ON CONFLICT (id) DO UPDATE SET at_ms = excluded.at_ms"
    )
    .bind(at_ms)
    .execute(c)
    .await
    .map(|_| ())?);
    Ok(())
}
