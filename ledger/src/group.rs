//! One group commit's work (docs/ledger.md "Writing"): load what every queued command needs in a few
//! statements, decide each command in order against that state in memory (each decision sees the ones
//! before it), then write the final state of everything that changed in a few set-based statements.
//!
//! Why: every statement is a round trip to the SQLite driver's worker thread, and those round trips, not
//! SQLite's work, were most of a write's cost. A group costs about ten statements whatever its size.
//! Lists go to SQLite as one JSON text parameter each, read with `json_each`.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};
use sqlx::{Row, SqliteConnection};

use crate::command::{Action, Actor, Command, EntryKey, Evidence};
use crate::error::{LedgerError, Refusal};
use crate::ids::SessionKey;
use crate::machine::{decide, Decision, Given, Rejection, SessionState};
use crate::projection::project;
use crate::rows::{EntryRow, ENTRY_COLUMNS};
use crate::sanitize::sanitize_metadata;
use crate::store::format_time;
use crate::wire::{EntryState, HistoryChange, HistoryKind, LedgerStatus, MutationOutcome};

/// A change to announce to the adapter once committed: the entry's record as of `revision`.
pub(crate) struct Announcement {
    pub session_key: SessionKey,
    pub outcome: MutationOutcome,
    pub revision: i64,
}

/// What one command did: the entry's state after it, its live announcement, if any, and for a note the
/// history row it adds, as the history API serves it (its time is the group's).
pub(crate) struct Done {
    pub state: EntryState,
    pub announcement: Option<Announcement>,
    pub note: Option<HistoryChange>,
}

type Key = (String, String);

struct SessionSlot {
    state: SessionState,
    /// Created by this group.
    new: bool,
    /// Written to by this group (its last write becomes `now`).
    touched: bool,
}

struct TurnSlot {
    latest: i64,
    new: bool,
    changed: bool,
    /// Order of first appearance, for the insertion order of new turns.
    order: usize,
}

struct EntrySlot {
    row: EntryRow,
    new: bool,
    changed: bool,
    order: usize,
}

/// The state a group decides against: loaded once, then changed in memory command by command.
pub(crate) struct Group {
    now: i64,
    sessions: HashMap<String, SessionSlot>,
    turns: HashMap<Key, TurnSlot>,
    entries: HashMap<Key, EntrySlot>,
    /// Attempt ids to remember, per entry.
    attempts: Vec<(Key, String)>,
    attempts_seen: HashSet<(Key, String)>,
    /// Evidence to record: entry, attempt, completed, source, reference, observed_at.
    reconciliations: Vec<(Key, String, bool, Evidence)>,
    /// History rows to write, in the order of the changes (docs/ledger.md "History").
    history: Vec<Value>,
    next_order: usize,
}

fn key_of(k: &EntryKey) -> Key {
    (
        k.session_key.as_str().to_owned(),
        k.mutation_id.as_str().to_owned(),
    )
}

impl Group {
    /// Loads the sessions, entries and turns `commands` name (three statements).
    pub(crate) async fn load(
        tx: &mut SqliteConnection,
        commands: &[&Command],
        now: i64,
        live_since: i64,
    ) -> Result<Group, LedgerError> {
        let mut session_keys: Vec<&str> = commands
            .iter()
            .map(|c| c.key.session_key.as_str())
            .collect();
        session_keys.sort_unstable();
        session_keys.dedup();
        // An approve's `commissioned_after` names an entry to look up too.
        let mut entry_keys: Vec<[&str; 2]> = commands
            .iter()
            .map(|c| [c.key.session_key.as_str(), c.key.mutation_id.as_str()])
            .chain(commands.iter().filter_map(|c| match &c.action {
                Action::Approve {
                    commissioned_after: Some(after),
                    ..
                } => Some([c.key.session_key.as_str(), after.as_str()]),
                _ => None,
            }))
            .collect();
        entry_keys.sort_unstable();
        entry_keys.dedup();

        let mut sessions = HashMap::with_capacity(session_keys.len());
        let rows = sqlx::query(
            "SELECT session_key, last_write_at FROM sessions \
             WHERE session_key IN (SELECT value FROM json_each(?))",
        )
        .bind(json!(session_keys).to_string())
        .fetch_all(&mut *tx)
        .await?;
        for row in rows {
            let last_write: i64 = row.try_get(1)?;
            let state = if last_write < live_since {
                SessionState::Expired
            } else {
                SessionState::Live
            };
            sessions.insert(
                row.try_get::<String, _>(0)?,
                SessionSlot {
                    state,
                    new: false,
                    touched: false,
                },
            );
        }

        let found: Vec<EntryRow> = sqlx::query_as(&format!(
            "SELECT {ENTRY_COLUMNS} FROM entries WHERE (session_key, mutation_id) IN \
             (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
        ))
        .bind(json!(entry_keys).to_string())
        .fetch_all(&mut *tx)
        .await?;
        let mut turn_keys: Vec<[&str; 2]> = Vec::new();
        for c in commands {
            if let Action::Approve {
                logical_turn_id, ..
            } = &c.action
            {
                turn_keys.push([c.key.session_key.as_str(), logical_turn_id.as_str()]);
            }
        }
        for row in &found {
            turn_keys.push([row.session_key.as_str(), row.logical_turn_id.as_str()]);
        }
        turn_keys.sort_unstable();
        turn_keys.dedup();
        let mut turns = HashMap::with_capacity(turn_keys.len());
        if !turn_keys.is_empty() {
            let rows = sqlx::query(
                "SELECT session_key, logical_turn_id, latest_revision FROM turns \
                 WHERE (session_key, logical_turn_id) IN \
                 (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))",
            )
            .bind(json!(turn_keys).to_string())
            .fetch_all(&mut *tx)
            .await?;
            for row in rows {
                turns.insert(
                    (row.try_get(0)?, row.try_get(1)?),
                    TurnSlot {
                        latest: row.try_get(2)?,
                        new: false,
                        changed: false,
                        order: 0,
                    },
                );
            }
        }
        let mut entries = HashMap::with_capacity(found.len());
        for row in found {
            entries.insert(
                (row.session_key.clone(), row.mutation_id.clone()),
                EntrySlot {
                    row,
                    new: false,
                    changed: false,
                    order: 0,
                },
            );
        }
        Ok(Group {
            now,
            sessions,
            turns,
            entries,
            attempts: Vec::new(),
            attempts_seen: HashSet::new(),
            reconciliations: Vec::new(),
            history: Vec::new(),
            next_order: 0,
        })
    }

    /// Decides `command`, asked by `actor`, against the group's state and applies the decision in memory,
    /// with its history row (none for a rejection or a change of nothing).
    pub(crate) async fn apply(
        &mut self,
        tx: &mut SqliteConnection,
        command: &Command,
        actor: &Actor,
    ) -> Result<Done, LedgerError> {
        let key = key_of(&command.key);
        // Secrets at rest (docs/ledger.md "Files"): only the sanitised metadata is stored, of any raw size
        // (a withheld field stores NULL), so a credential sent by mistake never reaches the database.
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
        let session = self
            .sessions
            .get(&key.0)
            .map_or(SessionState::Absent, |s| s.state);
        let slot = self.entries.get(&key);
        let attempt_used = match (action, slot) {
            (Action::FreshAttempt { attempt_id }, Some(slot)) => {
                self.attempt_used(tx, &key, slot.row.seq, attempt_id.as_str())
                    .await?
            }
            _ => false,
        };
        let entry = slot.map(|s| {
            s.row
                .machine_entry(matches!(action, Action::AttachMetadata { .. }))
        });
        let commissioned_after_found = match action {
            Action::Approve {
                commissioned_after: Some(after),
                ..
            } => {
                after.as_str() != key.1
                    && self
                        .entries
                        .contains_key(&(key.0.clone(), after.as_str().to_owned()))
            }
            _ => false,
        };
        let given = Given {
            session,
            entry: entry.as_ref(),
            attempt_used,
            commissioned_after_found,
        };
        let decision = decide(&given, action).map_err(|r| rejected(r, slot.map(|s| &s.row)))?;
        let now = self.now;
        match decision {
            Decision::Approve => {
                let Action::Approve {
                    logical_turn_id,
                    tool,
                    commissioned_after,
                } = action
                else {
                    return Err(mismatch("approve"));
                };
                if session == SessionState::Absent {
                    self.sessions.insert(
                        key.0.clone(),
                        SessionSlot {
                            state: SessionState::Live,
                            new: true,
                            touched: true,
                        },
                    );
                }
                let turn_key = (key.0.clone(), logical_turn_id.as_str().to_owned());
                if !self.turns.contains_key(&turn_key) {
                    self.next_order += 1;
                    self.turns.insert(
                        turn_key,
                        TurnSlot {
                            latest: 0,
                            new: true,
                            changed: false,
                            order: self.next_order,
                        },
                    );
                }
                let row = EntryRow {
                    seq: 0,
                    session_key: key.0.clone(),
                    logical_turn_id: logical_turn_id.as_str().to_owned(),
                    mutation_id: key.1.clone(),
                    tool: tool.as_str().to_owned(),
                    status: LedgerStatus::Approved,
                    intent_recorded: false,
                    attempt_id: None,
                    reason: None,
                    meta_attached: false,
                    meta_id: None,
                    meta_url: None,
                    meta_title: None,
                    revision: None,
                    recorded_at: now,
                    settled_at: None,
                    commissioned_after: commissioned_after.as_ref().map(|m| m.as_str().to_owned()),
                };
                let state = row.state();
                self.history.push(history_json(
                    &row,
                    HistoryKind::Approval,
                    None,
                    actor,
                    None,
                    None,
                ));
                self.next_order += 1;
                self.entries.insert(
                    key.clone(),
                    EntrySlot {
                        row,
                        new: true,
                        changed: true,
                        order: self.next_order,
                    },
                );
                self.touch(&key.0);
                Ok(Done {
                    state,
                    announcement: None,
                    note: None,
                })
            }
            Decision::Unchanged => Ok(Done {
                state: slot
                    .map(|s| s.row.state())
                    .ok_or(LedgerError::MutationNotFound)?,
                announcement: None,
                note: None,
            }),
            Decision::Change(change) => {
                let revision = self.next_revision(&key)?;
                if change.new_attempt {
                    self.attempts_seen
                        .insert((key.clone(), change.attempt_id.clone()));
                    self.attempts.push((key.clone(), change.attempt_id.clone()));
                }
                if let (true, Action::Reconcile { evidence, .. }) = (change.evidence, action) {
                    self.reconciliations.push((
                        key.clone(),
                        change.attempt_id.clone(),
                        change.status == LedgerStatus::Completed,
                        evidence.clone(),
                    ));
                }
                let slot = self
                    .entries
                    .get_mut(&key)
                    .ok_or(LedgerError::MutationNotFound)?;
                let row = &mut slot.row;
                row.status = change.status;
                row.intent_recorded = true;
                row.attempt_id = Some(change.attempt_id);
                row.reason = change.reason;
                row.revision = Some(revision);
                row.settled_at = change.settled.then_some(now);
                slot.changed = true;
                let (kind, evidence) = match action {
                    Action::RecordIntent { .. } => (HistoryKind::Intent, None),
                    Action::Settle { .. } => (HistoryKind::Settlement, None),
                    Action::Cancel { .. } => (HistoryKind::Cancellation, None),
                    Action::Reconcile { evidence, .. } => {
                        (HistoryKind::Reconciliation, Some(evidence))
                    }
                    _ => (HistoryKind::Attempt, None),
                };
                self.history.push(history_json(
                    &slot.row,
                    kind,
                    Some(revision),
                    actor,
                    evidence,
                    None,
                ));
                let done = announce_if(&slot.row, revision, change.live);
                self.touch(&key.0);
                Ok(done)
            }
            Decision::Attach { live } => {
                let Action::AttachMetadata { metadata } = action else {
                    return Err(mismatch("attach"));
                };
                let revision = self.next_revision(&key)?;
                let slot = self
                    .entries
                    .get_mut(&key)
                    .ok_or(LedgerError::MutationNotFound)?;
                let row = &mut slot.row;
                row.meta_attached = true;
                row.meta_id = metadata.id.clone();
                row.meta_url = metadata.url.clone();
                row.meta_title = metadata.title.clone();
                row.revision = Some(revision);
                slot.changed = true;
                self.history.push(history_json(
                    &slot.row,
                    HistoryKind::Metadata,
                    Some(revision),
                    actor,
                    None,
                    None,
                ));
                let done = announce_if(&slot.row, revision, live);
                self.touch(&key.0);
                Ok(done)
            }
            Decision::Note => {
                let Action::Note { text } = action else {
                    return Err(mismatch("note"));
                };
                let slot = self
                    .entries
                    .get(&key)
                    .ok_or(LedgerError::MutationNotFound)?;
                // Not session activity: the time to live counts from the last change (docs/ledger.md
                // "History").
                self.history.push(history_json(
                    &slot.row,
                    HistoryKind::Note,
                    None,
                    actor,
                    None,
                    Some(text),
                ));
                let note = note_change(&slot.row, actor, text, self.now);
                Ok(Done {
                    state: slot.row.state(),
                    announcement: None,
                    note: Some(note),
                })
            }
        }
    }

    fn touch(&mut self, session_key: &str) {
        if let Some(s) = self.sessions.get_mut(session_key) {
            s.touched = true;
        }
    }

    /// The next revision of the entry's turn (taken in memory; written with the group).
    fn next_revision(&mut self, key: &Key) -> Result<i64, LedgerError> {
        let turn = self
            .entries
            .get(key)
            .map(|s| (s.row.session_key.clone(), s.row.logical_turn_id.clone()))
            .ok_or(LedgerError::MutationNotFound)?;
        let slot = self.turns.get_mut(&turn).ok_or(LedgerError::TurnNotFound)?;
        slot.latest += 1;
        slot.changed = true;
        Ok(slot.latest)
    }

    /// Whether `attempt_id` was ever an attempt of the entry: in this group, or stored.
    async fn attempt_used(
        &self,
        tx: &mut SqliteConnection,
        key: &Key,
        seq: i64,
        attempt_id: &str,
    ) -> Result<bool, LedgerError> {
        if self
            .attempts_seen
            .contains(&(key.clone(), attempt_id.to_owned()))
        {
            return Ok(true);
        }
        if seq == 0 {
            return Ok(false);
        }
        let used: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM attempts WHERE entry_seq = ? AND attempt_id = ?")
                .bind(seq)
                .bind(attempt_id)
                .fetch_optional(&mut *tx)
                .await?;
        Ok(used.is_some())
    }

    /// Writes the final state of everything the group changed in ONE round trip: one multi-statement
    /// query (parents before children: sessions, turns, entries, then attempts, evidence and history rows), each
    /// statement reading its list from the one JSON payload `?2` (`json_each(?2, '$.<list>')`), with the
    /// group's time as `?1`. Every statement names both parameters (the driver binds `?NNN` by number
    /// only when no slot before it is unnamed).
    pub(crate) async fn write(self, tx: &mut SqliteConnection) -> Result<(), LedgerError> {
        let new_sessions: Vec<&String> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.new)
            .map(|(k, _)| k)
            .collect();
        // Retention counts from a session's last write: once per session per group.
        let touched: Vec<&String> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.touched && !s.new)
            .map(|(k, _)| k)
            .collect();
        let mut new_turns: Vec<(&Key, &TurnSlot)> =
            self.turns.iter().filter(|(_, t)| t.new).collect();
        new_turns.sort_by_key(|(_, t)| t.order);
        let new_turns: Vec<Value> = new_turns
            .iter()
            .map(|(k, t)| json!([k.0, k.1, t.latest]))
            .collect();
        let changed_turns: Vec<Value> = self
            .turns
            .iter()
            .filter(|(_, t)| t.changed && !t.new)
            .map(|(k, t)| json!([k.0, k.1, t.latest]))
            .collect();
        let mut new_entries: Vec<&EntrySlot> = self.entries.values().filter(|e| e.new).collect();
        new_entries.sort_by_key(|e| e.order);
        let new_entries: Vec<Value> = new_entries.iter().map(|e| entry_json(&e.row)).collect();
        let changed_entries: Vec<Value> = self
            .entries
            .values()
            .filter(|e| e.changed && !e.new)
            .map(|e| entry_json(&e.row))
            .collect();
        let attempts: Vec<Value> = self
            .attempts
            .iter()
            .map(|((s, m), a)| json!([s, m, a]))
            .collect();
        let reconciliations: Vec<Value> = self
            .reconciliations
            .iter()
            .map(|((s, m), a, completed, e)| {
                json!([s, m, a, completed, e.source, e.reference, e.observed_at])
            })
            .collect();
        let payload = json!({
            "history": self.history,
            "new_sessions": new_sessions,
            "touched": touched,
            "new_turns": new_turns,
            "changed_turns": changed_turns,
            "new_entries": new_entries,
            "changed_entries": changed_entries,
            "attempts": attempts,
            "reconciliations": reconciliations,
        });
        sqlx::query(WRITE_GROUP)
            .bind(self.now)
            .bind(payload.to_string())
            .execute(&mut *tx)
            .await?;
        Ok(())
    }
}

/// The group's write: see [`Group::write`]. `?1` is the time (ms), `?2` the JSON payload.
const WRITE_GROUP: &str = "\
INSERT INTO sessions (session_key, created_at, last_write_at) \
  SELECT value, ?1, ?1 FROM json_each(?2, '$.new_sessions'); \
UPDATE sessions SET last_write_at = ?1 \
  WHERE session_key IN (SELECT value FROM json_each(?2, '$.touched')); \
INSERT INTO turns (session_key, logical_turn_id, latest_revision, created_at) \
  SELECT value ->> 0, value ->> 1, value ->> 2, ?1 FROM json_each(?2, '$.new_turns') ORDER BY key; \
UPDATE turns SET latest_revision = j.latest \
  FROM (SELECT value ->> 0 AS s, value ->> 1 AS t, value ->> 2 AS latest \
        FROM json_each(?2, '$.changed_turns') WHERE ?1 IS NOT NULL) AS j \
  WHERE turns.session_key = j.s AND turns.logical_turn_id = j.t; \
INSERT INTO entries (session_key, logical_turn_id, mutation_id, tool, status, intent_recorded, attempt_id, \
  reason, meta_attached, meta_id, meta_url, meta_title, revision, settled_at, recorded_at, updated_at, \
  commissioned_after) \
  SELECT value ->> 's', value ->> 't', value ->> 'm', value ->> 'tool', value ->> 'status', \
    value ->> 'intent', value ->> 'attempt', value ->> 'reason', value ->> 'meta', value ->> 'id', \
    value ->> 'url', value ->> 'title', value ->> 'revision', value ->> 'settled_at', ?1, ?1, \
    value ->> 'after' \
  FROM json_each(?2, '$.new_entries') ORDER BY key; \
UPDATE entries SET status = j.status, intent_recorded = j.intent, attempt_id = j.attempt, reason = j.reason, \
  meta_attached = j.meta, meta_id = j.id, meta_url = j.url, meta_title = j.title, revision = j.revision, \
  settled_at = j.settled_at, updated_at = ?1 \
  FROM (SELECT value ->> 'seq' AS seq, value ->> 'status' AS status, value ->> 'intent' AS intent, \
        value ->> 'attempt' AS attempt, value ->> 'reason' AS reason, value ->> 'meta' AS meta, \
        value ->> 'id' AS id, value ->> 'url' AS url, value ->> 'title' AS title, \
        value ->> 'revision' AS revision, value ->> 'settled_at' AS settled_at \
        FROM json_each(?2, '$.changed_entries')) AS j \
  WHERE entries.seq = j.seq; \
INSERT INTO attempts (entry_seq, attempt_id) \
  SELECT e.seq, j.value ->> 2 FROM json_each(?2, '$.attempts') AS j \
  JOIN entries AS e ON e.session_key = j.value ->> 0 AND e.mutation_id = j.value ->> 1 \
  WHERE ?1 IS NOT NULL; \
INSERT INTO reconciliations (entry_seq, attempt_id, completed, source, reference, observed_at, recorded_at) \
  SELECT e.seq, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, ?1 \
  FROM json_each(?2, '$.reconciliations') AS j \
  JOIN entries AS e ON e.session_key = j.value ->> 0 AND e.mutation_id = j.value ->> 1 \
  ORDER BY j.key; \
INSERT INTO history (entry_seq, kind, at, revision, actor, attempt_id, ledger_status, intent_recorded, \
  reason, meta_attached, meta_id, meta_url, meta_title, source, reference, observed_at, note) \
  SELECT e.seq, j.value ->> 'kind', ?1, j.value ->> 'revision', j.value ->> 'actor', \
    j.value ->> 'attempt', j.value ->> 'status', j.value ->> 'intent', j.value ->> 'reason', \
    j.value ->> 'meta', j.value ->> 'id', j.value ->> 'url', j.value ->> 'title', j.value ->> 'source', \
    j.value ->> 'reference', j.value ->> 'observed_at', j.value ->> 'note' \
  FROM json_each(?2, '$.history') AS j \
  JOIN entries AS e ON e.session_key = j.value ->> 's' AND e.mutation_id = j.value ->> 'm' \
  ORDER BY j.key;";

/// A decision that does not fit its action (the machine decides `Approve`, `Attach` and `Note` only for
/// their own actions): a fault of this code, answered as a store error (500) for that command alone,
/// never a panic of the writer task that serves every command.
fn mismatch(decision: &str) -> LedgerError {
    LedgerError::Store(sqlx::Error::Protocol(format!(
        "the state machine decided {decision} for another action"
    )))
}

/// An entry's columns as one JSON object of a set-based write.
fn entry_json(row: &EntryRow) -> Value {
    json!({
        "seq": row.seq,
        "s": row.session_key,
        "t": row.logical_turn_id,
        "m": row.mutation_id,
        "tool": row.tool,
        "status": row.status.as_str(),
        "intent": row.intent_recorded,
        "attempt": row.attempt_id,
        "reason": row.reason.map(|r| r.as_str()),
        "meta": row.meta_attached,
        "id": row.meta_id,
        "url": row.meta_url,
        "title": row.meta_title,
        "revision": row.revision,
        "settled_at": row.settled_at,
        "after": row.commissioned_after,
    })
}

/// One history row of a set-based write (docs/ledger.md "History"): the entry's key and its state fields
/// after the change (`row`), what the change was, the revision it took (`None` for approvals and notes),
/// who asked, and the evidence (reconciliations) or text (notes) it carries. Its time is the group's.
fn history_json(
    row: &EntryRow,
    kind: HistoryKind,
    revision: Option<i64>,
    actor: &Actor,
    evidence: Option<&Evidence>,
    note: Option<&String>,
) -> Value {
    json!({
        "s": row.session_key,
        "m": row.mutation_id,
        "kind": kind.as_str(),
        "revision": revision,
        "actor": actor.spelling(),
        "attempt": row.attempt_id,
        "status": row.status.as_str(),
        "intent": row.intent_recorded,
        "reason": row.reason.map(|r| r.as_str()),
        "meta": row.meta_attached,
        "id": row.meta_id,
        "url": row.meta_url,
        "title": row.meta_title,
        "source": evidence.map(|e| &e.source),
        "reference": evidence.map(|e| &e.reference),
        "observed_at": evidence.map(|e| &e.observed_at),
        "note": note,
    })
}

/// What a visible change did: the new state, announced when `live` and published.
fn announce_if(row: &EntryRow, revision: i64, live: bool) -> Done {
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
        note: None,
    }
}

/// The `note` history row [`history_json`] writes for a note on `row`, as the history API serves it
/// (docs/ledger.md "History"): no revision, the entry's state fields unchanged, its record as of now.
fn note_change(row: &EntryRow, actor: &Actor, text: &str, now: i64) -> HistoryChange {
    HistoryChange {
        kind: HistoryKind::Note,
        at: format_time(now),
        revision: None,
        actor: actor.spelling(),
        attempt_id: row.attempt_id.clone(),
        ledger_status: row.status,
        reason: row.reason,
        evidence: None,
        note: Some(text.to_owned()),
        outcome: project(&row.ledger_entry()),
    }
}

/// The error a rejection answers; a refusal carries the entry's unchanged state.
pub(crate) fn rejected(rejection: Rejection, row: Option<&EntryRow>) -> LedgerError {
    match rejection {
        Rejection::Invalid { field, message } => LedgerError::invalid(field, message),
        Rejection::SessionNotFound => LedgerError::SessionNotFound,
        Rejection::SessionExpired => LedgerError::SessionExpired,
        Rejection::MutationNotFound => LedgerError::MutationNotFound,
        Rejection::CommissionedAfterNotFound => LedgerError::CommissionedAfterNotFound,
        Rejection::Refused(refusal) => match row {
            Some(row) => LedgerError::Refused {
                refusal,
                current: Box::new(row.state()),
            },
            None => LedgerError::MutationNotFound,
        },
    }
}

/// A refusal for `row` (used outside groups, by legacy imports).
pub(crate) fn refused(refusal: Refusal, row: &EntryRow) -> LedgerError {
    rejected(Rejection::Refused(refusal), Some(row))
}
