//! Live delivery on Postgres, across instances (docs/ledger.md "Backends"). Every instance that writes
//! a group sends, inside the group's transaction, one `NOTIFY` per turn the group changed, naming the
//! session, the turn and the revisions it took. Postgres delivers notifications at commit, in commit
//! order, to every listening instance, the writer included. Each instance's listener ([`listen`])
//! turns them into adapter calls: for each turn, in revision order, the changes it has not yet emitted,
//! each projected AS OF its revision from the entry's history row (never a later state under an earlier
//! revision), then the turn's `turn_changed` hint; never one revision twice. A listener that lost its
//! connection forgets what it emitted, reconnects, and then tells the adapter to resync its subscribers
//! ([`crate::Adapter::on_resync`]), instead of silently missing what was committed meanwhile.
//!
//! Ends of sessions (deleted, expired), revocations of viewer links and changes of who holds a claim
//! cross instances the same way; the instance that made them has already acted on them itself, so it
//! skips its own.
//!
//! The listener sits beside the store, above it and the rows it reads: the store keeps only what the
//! writers share with it ([`crate::store::live`]); nothing below calls up into it.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Weak};
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};

use crate::adapter::{announce, announce_turn, Announcement, SessionEnd, TurnChange};
use crate::error::LedgerError;
use crate::ids::{LogicalTurnId, SessionKey};
use crate::machine::emitted_live;
use crate::projection::project;
use crate::rows::{history_prefixed, HistoryRow};
use crate::store::live::{Emitter, Note};
use crate::store::{Db, Inner};
use crate::wire::MutationOutcome;

/// One history row of a turn's change, as the listener reads it to project the record as of it: the
/// entry's keys with its [`HistoryRow`].
#[derive(sqlx::FromRow)]
struct ChangeRow {
    mutation_id: String,
    tool: String,
    #[sqlx(flatten)]
    history: HistoryRow,
}

/// Postgres: starts the listener of the ledger `inner` (this instance's), listening before this returns;
/// it ends with the ledger. SQLite: nothing.
pub(crate) async fn start(inner: &Arc<Inner>) -> Result<(), LedgerError> {
    let (Db::Postgres { pool, channel }, Some(emitter)) = (&inner.db, &inner.emitter) else {
        return Ok(());
    };
    let listener = connect(pool, channel).await?;
    let task = tokio::spawn(listen(
        listener,
        Arc::downgrade(inner),
        pool.clone(),
        channel.clone(),
        emitter.clone(),
    ));
    if let Ok(mut l) = inner.listener.lock() {
        *l = Some(task.abort_handle());
    }
    Ok(())
}

/// The listener of one Postgres ledger: runs until the ledger is dropped. Reconnects by itself (sqlx's
/// `PgListener` re-listens after a lost connection); each loss is a resync.
pub(crate) async fn listen(
    mut listener: PgListener,
    inner: Weak<Inner>,
    pool: PgPool,
    channel: String,
    emitter: Arc<Emitter>,
) {
    loop {
        let lost = match listener.try_recv().await {
            Ok(Some(n)) => {
                let Some(inner) = inner.upgrade() else { return };
                // This notification and those already buffered behind it, handled together.
                let mut notes = Vec::new();
                let mut next = Some(n);
                while let Some(n) = next.take() {
                    match serde_json::from_str::<Note>(n.payload()) {
                        Ok(note) => notes.push(note),
                        Err(e) => {
                            tracing::warn!(error = %e, "live listener: unreadable notification")
                        }
                    }
                    if notes.len() < BATCH {
                        next = listener.next_buffered();
                    }
                }
                if let Err(e) = handle(&inner, &pool, &emitter, notes).await {
                    // The read failed (the connection went away under it): what these
                    // notifications named may never be emitted, so subscribers resync.
                    tracing::warn!(error = %e, "live listener: a change could not be read; resync");
                    resync(&inner, &emitter);
                }
                None
            }
            Ok(None) => Some("connection lost".to_owned()),
            Err(e) => Some(e.to_string()),
        };
        let Some(why) = lost else { continue };
        if inner.strong_count() == 0 || pool.is_closed() {
            return;
        }
        // What was committed from now until the listener is back is not delivered: forget what was
        // emitted (answers stop waiting for it), reconnect, then tell every subscriber to resync, once,
        // when a replay can see everything the listener missed.
        tracing::warn!(reason = %why, "live listener: lost its connection; reconnecting");
        emitter.forget();
        drop(listener);
        let mut wait = Duration::from_millis(100);
        listener = loop {
            tokio::time::sleep(wait).await;
            if inner.strong_count() == 0 || pool.is_closed() {
                return;
            }
            match connect(&pool, &channel).await {
                Ok(l) => break l,
                Err(e) => {
                    tracing::warn!(error = %e, "live listener: cannot listen yet");
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
            }
        };
        let Some(inner) = inner.upgrade() else { return };
        tracing::info!("live listener: listening again; subscribers resync");
        resync(&inner, &emitter);
    }
}

/// A listener on `channel`, listening when this returns (so nothing committed after it is missed).
pub(crate) async fn connect(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}

fn resync(inner: &Inner, emitter: &Emitter) {
    emitter.forget();
    let adapter = &inner.adapter;
    if std::panic::catch_unwind(AssertUnwindSafe(|| adapter.on_resync())).is_err() {
        tracing::error!("live delivery of a resync panicked");
    }
}

/// Notifications handled together at most: the ones already buffered when one arrives.
const BATCH: usize = 512;

/// Emits what `notes` name and this instance has not emitted yet, in their order: the turns' changes
/// between two session ends are merged per turn (several notifications of one turn: one read); a
/// session end is handled after the changes before it.
async fn handle(
    inner: &Inner,
    pool: &PgPool,
    emitter: &Emitter,
    notes: Vec<Note>,
) -> Result<(), LedgerError> {
    let mut turns: Vec<Pending> = Vec::new();
    for note in notes {
        match note {
            Note::Turn {
                s,
                t,
                first,
                last,
                r,
            } => {
                let key = (s, t);
                match turns.iter_mut().find(|p| p.key == key) {
                    Some(p) => {
                        p.first = p.first.min(first);
                        p.last = p.last.max(last);
                        p.records = match (p.records.take(), r) {
                            (Some(mut a), Some(b)) => {
                                a.extend(b);
                                Some(a)
                            }
                            _ => None,
                        };
                    }
                    None => turns.push(Pending {
                        key,
                        first,
                        last,
                        records: r,
                    }),
                }
            }
            Note::Revoked { s, by } => {
                if by != emitter.instance {
                    if let Ok(key) = SessionKey::parse(s) {
                        let adapter = &inner.adapter;
                        if std::panic::catch_unwind(AssertUnwindSafe(|| {
                            adapter.on_viewer_links_revoked(&key)
                        }))
                        .is_err()
                        {
                            tracing::error!("live delivery of a revocation panicked");
                        }
                    }
                }
            }
            Note::Claim { s, m, t, by } => {
                if by != emitter.instance {
                    if let Ok(key) = SessionKey::parse(s) {
                        let adapter = &inner.adapter;
                        if std::panic::catch_unwind(AssertUnwindSafe(|| {
                            adapter.on_claim_changed(&key, &m, &t)
                        }))
                        .is_err()
                        {
                            tracing::error!("live delivery of a claim change panicked");
                        }
                    }
                }
            }
            Note::Ended { s, deleted, by } => {
                emit_turns(inner, pool, emitter, std::mem::take(&mut turns)).await?;
                emitter.forget_session(&s);
                if by != emitter.instance {
                    if let Ok(key) = SessionKey::parse(s) {
                        let reason = if deleted {
                            SessionEnd::Deleted
                        } else {
                            SessionEnd::Expired
                        };
                        let adapter = &inner.adapter;
                        if std::panic::catch_unwind(AssertUnwindSafe(|| {
                            adapter.on_session_ended(&key, reason)
                        }))
                        .is_err()
                        {
                            tracing::error!("live delivery of a session end panicked");
                        }
                    }
                }
                emitter.bump();
            }
        }
    }
    emit_turns(inner, pool, emitter, turns).await
}

/// A turn's changes to emit: revisions `first..=last`, with the records the writers announced when
/// their notifications carried them all.
struct Pending {
    key: (String, String),
    first: i64,
    last: i64,
    records: Option<Vec<(i64, MutationOutcome)>>,
}

/// Emits, for each turn in order, the revisions from `first` (or after what was emitted) to `last`,
/// each as of itself (the notification's records, else read from history: one statement per turn with
/// its own values), then the turn's hint.
async fn emit_turns(
    inner: &Inner,
    pool: &PgPool,
    emitter: &Emitter,
    turns: Vec<Pending>,
) -> Result<(), LedgerError> {
    if turns.is_empty() {
        return Ok(());
    }
    for p in turns {
        let from = emitter.emitted(&p.key).map_or(p.first, |e| e + 1);
        if from > p.last {
            continue;
        }
        let (s, t) = &p.key;
        let records = match p.records {
            Some(mut records) => {
                records.retain(|(revision, _)| *revision >= from);
                records.sort_by_key(|(revision, _)| *revision);
                records
            }
            None => read_changes(pool, s, t, from, p.last).await?,
        };
        if let (Ok(session_key), Ok(turn)) = (
            SessionKey::parse(s.clone()),
            LogicalTurnId::parse(t.clone()),
        ) {
            for (revision, outcome) in records {
                announce(
                    &inner.adapter,
                    Announcement {
                        session_key: session_key.clone(),
                        outcome,
                        revision,
                    },
                );
            }
            announce_turn(
                &inner.adapter,
                TurnChange {
                    session_key,
                    logical_turn_id: turn,
                    latest_revision: p.last,
                },
            );
        }
        emitter.set_emitted(p.key, p.last);
    }
    emitter.bump();
    Ok(())
}

/// The live changes of turn `t` of session `s` with revisions `from..=last`, in revision order, each
/// projected as of its history row.
async fn read_changes(
    pool: &PgPool,
    s: &str,
    t: &str,
    from: i64,
    last: i64,
) -> Result<Vec<(i64, MutationOutcome)>, LedgerError> {
    let rows: Vec<ChangeRow> = sqlx::query_as(&format!(
        "SELECT e.mutation_id, e.tool, {} \
         FROM entries e JOIN history h ON h.entry_seq = e.seq \
         WHERE e.session_key = $1 AND e.logical_turn_id = $2 AND e.revision >= $3 \
         AND h.revision >= $3 AND h.revision <= $4 ORDER BY h.revision",
        history_prefixed("h")
    ))
    .bind(s)
    .bind(t)
    .bind(from)
    .bind(last)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter(|row| emitted_live(row.history.ledger_status()))
        .filter_map(|row| {
            let revision = row.history.revision()?;
            let entry = row
                .history
                .ledger_entry(t.to_owned(), row.mutation_id, row.tool);
            Some((revision, project(&entry)?))
        })
        .collect())
}
