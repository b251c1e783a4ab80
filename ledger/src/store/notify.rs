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
//! Ends of sessions (deleted, expired) and revocations of viewer links cross instances the same way;
//! the instance that made them has already acted on them itself, so it skips its own.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::watch;

use super::Inner;
use crate::adapter::{announce, announce_turn, Announcement, SessionEnd, TurnChange};
use crate::error::LedgerError;
use crate::ids::{LogicalTurnId, SessionKey};
use crate::machine::emitted_live;
use crate::projection::{project, LedgerEntry};
use crate::wire::HostMetadata;
use crate::wire::{LedgerStatus, MutationOutcome, Reason};

/// One notification's payload (JSON, at most a few hundred bytes: ids are at most 256 bytes each, well
/// under Postgres's 8,000-byte limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k")]
pub(crate) enum Note {
    /// A committed group changed turn `t` of session `s`, taking revisions `first..=last`; `r`: the
    /// records it announced live, with their revisions, as the writer projected them at each change
    /// (absent when they would not fit a notification: then each listener reads them from history).
    #[serde(rename = "turn")]
    Turn {
        s: String,
        t: String,
        first: i64,
        last: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        r: Option<Vec<(i64, MutationOutcome)>>,
    },
    /// Session `s` was deleted (`deleted`) or expired, by instance `by`.
    #[serde(rename = "end")]
    Ended { s: String, deleted: bool, by: u64 },
    /// The viewer links of session `s` were revoked, by instance `by`.
    #[serde(rename = "revoked")]
    Revoked { s: String, by: u64 },
}

/// The largest payload sent with its records (Postgres refuses a payload of 8,000 bytes or more).
const PAYLOAD_MAX: usize = 7_900;

impl Note {
    /// The note of a turn's changes, with `records` when the payload stays within [`PAYLOAD_MAX`].
    pub(crate) fn turn(
        s: String,
        t: String,
        first: i64,
        last: i64,
        records: Vec<(i64, MutationOutcome)>,
    ) -> Note {
        let with = Note::Turn {
            s,
            t,
            first,
            last,
            r: Some(records),
        };
        if with.payload().len() <= PAYLOAD_MAX {
            return with;
        }
        match with {
            Note::Turn {
                s, t, first, last, ..
            } => Note::Turn {
                s,
                t,
                first,
                last,
                r: None,
            },
            other => other,
        }
    }

    pub(crate) fn payload(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What this instance's listener has emitted: per turn, the highest revision handed to the adapter.
/// Writers wait on it ([`Emitter::wait_for`]) so a caller is answered after its change's events were
/// handed to the adapter, as on SQLite.
pub(crate) struct Emitter {
    /// This instance, for skipping its own session ends.
    pub(crate) instance: u64,
    emitted: Mutex<Emitted>,
    /// Bumped after every notification handled and every resync.
    progress: watch::Sender<u64>,
}

/// Turns this instance emitted, and how often it forgot them all.
#[derive(Default)]
struct Emitted {
    turns: HashMap<(String, String), i64>,
    forgotten: u64,
}

/// Turns remembered at most; past it everything is forgotten (safe: notifications are handled in commit
/// order, so forgetting only ends the waits of answers, which then go out at once).
const EMITTED_MAX: usize = 65_536;

impl Emitter {
    pub(crate) fn new() -> Emitter {
        // Distinct per process and start: the clock's nanoseconds mixed with the process id.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Emitter {
            instance: nanos ^ (u64::from(std::process::id()) << 40),
            emitted: Mutex::new(Emitted::default()),
            progress: watch::channel(0).0,
        }
    }

    fn emitted(&self, key: &(String, String)) -> Option<i64> {
        self.emitted.lock().ok()?.turns.get(key).copied()
    }

    fn forgotten(&self) -> u64 {
        self.emitted.lock().map(|m| m.forgotten).unwrap_or(0)
    }

    fn set_emitted(&self, key: (String, String), revision: i64) {
        if let Ok(mut m) = self.emitted.lock() {
            if m.turns.len() >= EMITTED_MAX && !m.turns.contains_key(&key) {
                m.turns.clear();
                m.forgotten += 1;
            }
            let e = m.turns.entry(key).or_insert(revision);
            *e = (*e).max(revision);
        }
    }

    /// Forgets the turns of an ended session.
    fn forget_session(&self, session_key: &str) {
        if let Ok(mut m) = self.emitted.lock() {
            m.turns.retain(|k, _| k.0 != session_key);
        }
    }

    fn bump(&self) {
        self.progress.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Waits until every `(session, turn, revision)` in `turns` was emitted here, a resync happened, or
    /// `limit` passed (the listener is down: the answer does not wait for it; the change is durable).
    pub(crate) async fn wait_for(&self, turns: &[(String, String, i64)], limit: Duration) {
        let mut progress = self.progress.subscribe();
        progress.borrow_and_update();
        let forgotten = self.forgotten();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let done = turns.iter().all(|(s, t, r)| {
                self.emitted(&(s.clone(), t.clone()))
                    .is_some_and(|e| e >= *r)
            });
            // Forgotten (a resync, or too many turns): nothing more to wait for.
            if done || self.forgotten() != forgotten {
                return;
            }
            if !matches!(
                tokio::time::timeout_at(deadline, progress.changed()).await,
                Ok(Ok(()))
            ) {
                return;
            }
        }
    }

    fn forget(&self) {
        if let Ok(mut m) = self.emitted.lock() {
            m.turns.clear();
            m.forgotten += 1;
        }
        self.bump();
    }
}

/// One history row of a turn's change, as the listener reads it to project the record as of it.
#[derive(sqlx::FromRow)]
struct ChangeRow {
    revision: i64,
    mutation_id: String,
    tool: String,
    ledger_status: LedgerStatus,
    intent_recorded: bool,
    reason: Option<Reason>,
    meta_attached: bool,
    meta_id: Option<String>,
    meta_url: Option<String>,
    meta_title: Option<String>,
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
    let rows: Vec<ChangeRow> = sqlx::query_as(
        "SELECT h.revision, e.mutation_id, e.tool, h.ledger_status, h.intent_recorded, h.reason, \
         h.meta_attached, h.meta_id, h.meta_url, h.meta_title \
         FROM entries e JOIN history h ON h.entry_seq = e.seq \
         WHERE e.session_key = $1 AND e.logical_turn_id = $2 AND e.revision >= $3 \
         AND h.revision >= $3 AND h.revision <= $4 ORDER BY h.revision",
    )
    .bind(s)
    .bind(t)
    .bind(from)
    .bind(last)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter(|row| emitted_live(row.ledger_status))
        .filter_map(|row| {
            let entry = LedgerEntry {
                logical_turn_id: t.to_owned(),
                mutation_id: row.mutation_id,
                tool: row.tool,
                status: row.ledger_status,
                intent_recorded: row.intent_recorded,
                reason: row.reason,
                metadata: row.meta_attached.then_some(HostMetadata {
                    id: row.meta_id,
                    url: row.meta_url,
                    title: row.meta_title,
                }),
            };
            Some((row.revision, project(&entry)?))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_small_json_and_reads_back() {
        let n = Note::Turn {
            s: "s-1".into(),
            t: "t \"1\"".into(),
            first: 3,
            last: 5,
            r: None,
        };
        assert_eq!(
            n.payload(),
            r#"{"k":"turn","s":"s-1","t":"t \"1\"","first":3,"last":5}"#
        );
        assert_eq!(serde_json::from_str::<Note>(&n.payload()).unwrap(), n);
        let e = Note::Ended {
            s: "s-1".into(),
            deleted: true,
            by: 7,
        };
        assert_eq!(
            e.payload(),
            r#"{"k":"end","s":"s-1","deleted":true,"by":7}"#
        );
        // Ids are at most 256 bytes, each byte at most 6 in JSON: far under Postgres's 8,000 bytes.
        let big = Note::Turn {
            s: "\u{1}".repeat(256),
            t: "\u{1}".repeat(256),
            first: i64::MAX,
            last: i64::MAX,
            r: None,
        };
        assert!(big.payload().len() < 8000);
        // Records ride along while they fit; past that the listeners read them.
        let record = |id: &str| MutationOutcome {
            schema: crate::wire::SCHEMA.into(),
            logical_turn_id: "t".into(),
            mutation_id: id.into(),
            tool: "tool".into(),
            status: crate::wire::PublishedStatus::Completed,
            resource_id: None,
            url: None,
            title: Some("x".repeat(2000)),
            reason: None,
        };
        let few = Note::turn(
            "s".into(),
            "t".into(),
            1,
            2,
            vec![(1, record("a")), (2, record("b"))],
        );
        assert!(matches!(&few, Note::Turn { r: Some(r), .. } if r.len() == 2));
        assert_eq!(serde_json::from_str::<Note>(&few.payload()).unwrap(), few);
        let many = Note::turn(
            "s".into(),
            "t".into(),
            1,
            4,
            (1..=4).map(|i| (i, record(&i.to_string()))).collect(),
        );
        assert!(matches!(
            &many,
            Note::Turn {
                r: None,
                first: 1,
                last: 4,
                ..
            }
        ));
        assert!(many.payload().len() < 8000);
    }
}
