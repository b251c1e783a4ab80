//! The group-commit writer (docs/ledger.md "Writing"): the queue of jobs, the writer's loop (SQLite: a
//! thread of its own on the write connection's handle, through `direct`; Postgres: a task on the pool),
//! one commit per group through [`Group`], then the announcements and the answers.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::GROUP_OPERATIONS;
use crate::adapter::{announce, announce_turn, TurnChange};
use crate::command::{Actor, Command};
use crate::error::LedgerError;
use crate::group::{Done, Group};
use crate::store::{Inner, WriteTx};
use crate::wire::{EntryState, HistoryChange};

/// What one command gave.
pub(super) type Applied = Result<Done, LedgerError>;

/// What a caller is answered for one applied operation: the entry's state after it, and for a note or a
/// claim its history row and whether it was added (`Done`).
pub(super) struct Answered {
    pub(super) state: EntryState,
    pub(super) note: Option<HistoryChange>,
    pub(super) added: bool,
}

/// One commit's jobs with what each gave, and the turns it changed visibly.
type Commit = (
    Vec<(Job, Result<Vec<Applied>, LedgerError>)>,
    Vec<TurnChange>,
);

/// The answer to a job: one result per operation, or a store failure (nothing committed).
pub(super) type JobAnswer = Result<Vec<Result<Answered, LedgerError>>, LedgerError>;

/// Operations queued for the writer, with the caller waiting on `answer`.
pub(super) struct Job {
    pub(super) ops: Vec<Command>,
    /// Who asked: recorded on each change's history row.
    pub(super) actor: Actor,
    /// Past this, a job not yet started is refused with [`LedgerError::Busy`] (the write wait).
    pub(super) deadline: Instant,
    pub(super) answer: oneshot::Sender<JobAnswer>,
}

/// The writer task: owns the write connection for group commits. It ends when the last [`Engine`] (the
/// last sender of its queue) is gone.
pub(super) struct Writer {
    pub(super) store: Arc<Inner>,
    /// SQLite: the page limit its connection has (`max_page_count` above the size when it was set, for
    /// tests: [`Engine::limit_storage_for_tests`]); 0 for none.
    pub(super) page_limit: std::sync::atomic::AtomicU32,
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
    pub(super) async fn run(self, mut queue: mpsc::Receiver<Job>) {
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
    pub(super) async fn run_direct(
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
            let _ = job.answer.send(Err(e.copy_for_job()));
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
                    let _ = job.answer.send(Err(e.copy_for_job()));
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
        // included, from the notifications (the crate's `notify` listener); the answers wait until it has.
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
        let mut group =
            Group::load(&mut tx, &commands, now, live_since, self.store.deadline_ms).await?;
        let mut applied = Vec::with_capacity(jobs.len());
        for job in jobs {
            let mut results = Vec::with_capacity(job.ops.len());
            for command in &job.ops {
                // A store failure ends the group: SQLite may have rolled the transaction back already
                // (a full disk), and nothing after it may run outside the transaction.
                match group.apply(&mut tx, command, &job.actor).await {
                    Err(e @ (LedgerError::Store(_) | LedgerError::Internal(_))) => return Err(e),
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
