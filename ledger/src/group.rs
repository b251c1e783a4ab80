//! One group commit's work (docs/ledger.md "Writing"): load what every queued command needs in a few
//! statements, decide each command in order against that state in memory (each decision sees the ones
//! before it), then write the final state of everything that changed in a few set-based statements.
//!
//! Why: a group costs about ten statements whatever its size (on SQLite run on the writer's own thread,
//! crate::direct; on Postgres each a round trip to the server).
//! Lists go to SQLite as one JSON text parameter each, read with `json_each`.

use std::collections::{HashMap, HashSet};

use serde::ser::{Serialize, SerializeTuple, Serializer};
use serde_json::json;

use crate::command::{Action, Actor, Command, EntryKey, Evidence};
use crate::error::{LedgerError, Refusal};
use crate::ids::{LogicalTurnId, SessionKey};
use crate::machine::{decide, Decision, Given, Rejection, SessionState};
use crate::projection::project;
use crate::rows::{EntryRow, ENTRY_COLUMNS};
use crate::sanitize::sanitize_metadata;
use crate::store::{format_time, on_tx, Dialect, WriteTx};
use crate::wire::{EntryState, HistoryChange, HistoryKind, LedgerStatus, MutationOutcome, Reason};

/// A change to announce to the adapter once committed: the entry's record as of `revision`.
pub(crate) struct Announcement {
    pub session_key: SessionKey,
    pub outcome: MutationOutcome,
    pub revision: i64,
}

/// What one command did: the entry's state after it, its live announcement, if any, and for a note or a
/// claim the history row it is answered with, as the history API serves it (a new row's time is the
/// group's); `added` says whether that row was added by this command (a claim its actor already held
/// answers the row that took it).
pub(crate) struct Done {
    pub state: EntryState,
    pub announcement: Option<Announcement>,
    pub note: Option<HistoryChange>,
    pub added: bool,
}

/// Who holds an entry's claim (docs/api.md "Claims"): the actor's spelling (`staff:<name>`) and since when
/// (ms since the Unix epoch).
#[derive(Clone)]
struct ClaimHeld {
    actor: String,
    at: i64,
}

type Key = (String, String);

/// How a set-based write names an entry: `(seq, session_key, mutation_id)`, see [`Group::entry_ref`].
type EntryRef<'a> = (Option<i64>, Option<&'a str>, Option<&'a str>);

struct SessionSlot {
    state: SessionState,
    /// Created by this group.
    new: bool,
    /// Written to by this group (its last write becomes `now`).
    touched: bool,
}

struct TurnSlot {
    latest: i64,
    /// The latest revision when the group loaded the turn (0 for a new turn).
    before: i64,
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
    /// The claims of the entries a claim or release named, read on first use, then kept up to date.
    claims: HashMap<Key, Option<ClaimHeld>>,
    /// Evidence to record: entry, attempt, completed, source, reference, observed_at.
    reconciliations: Vec<(Key, String, bool, Evidence)>,
    /// History rows to write, in the order of the changes (docs/ledger.md "History").
    history: Vec<HistoryOut>,
    /// Turns that took a revision in this group, in the order of their first change.
    changed_turns: Vec<Key>,
    /// The records this group announces live, with their turn and revision (Postgres sends them in
    /// the turn's notification when they fit, crate::notify).
    announced: Vec<(Key, i64, MutationOutcome)>,
    /// Whether the group's changes are notified (Postgres); on SQLite the writer announces them itself
    /// and nothing is kept for notifications.
    notifies: bool,
    next_order: usize,
}

/// A turn a committed group changed visibly, with its latest revision after the group (the
/// `turn_changed` hint, [`crate::Adapter::on_turn_changed`]).
pub(crate) struct TurnChange {
    pub session_key: SessionKey,
    pub logical_turn_id: LogicalTurnId,
    pub latest_revision: i64,
}

fn key_of(k: &EntryKey) -> Key {
    (
        k.session_key.as_str().to_owned(),
        k.mutation_id.as_str().to_owned(),
    )
}

impl Group {
    /// Loads the sessions, entries and turns `commands` name: three statements ([`load_each`]), or on
    /// Postgres one ([`load_postgres`]).
    pub(crate) async fn load(
        tx: &mut WriteTx<'_>,
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

        // The turns an approve names; the turns of the entries found are added to them.
        let approved_turns: Vec<[&str; 2]> = commands
            .iter()
            .filter_map(|c| match &c.action {
                Action::Approve {
                    logical_turn_id, ..
                } => Some([c.key.session_key.as_str(), logical_turn_id.as_str()]),
                _ => None,
            })
            .collect();
        let (rows, found, turn_rows) = match &mut *tx {
            WriteTx::Postgres(t) => {
                load_postgres(t, &session_keys, &entry_keys, &approved_turns).await?
            }
            tx => load_each(tx, &session_keys, &entry_keys, approved_turns).await?,
        };
        let mut sessions = HashMap::with_capacity(session_keys.len());
        for (session_key, last_write) in rows {
            let state = if last_write < live_since {
                SessionState::Expired
            } else {
                SessionState::Live
            };
            sessions.insert(
                session_key,
                SessionSlot {
                    state,
                    new: false,
                    touched: false,
                },
            );
        }

        let mut turns = HashMap::with_capacity(turn_rows.len());
        for (session_key, turn, latest) in turn_rows {
            turns.insert(
                (session_key, turn),
                TurnSlot {
                    latest,
                    before: latest,
                    new: false,
                    changed: false,
                    order: 0,
                },
            );
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
            claims: HashMap::new(),
            reconciliations: Vec::new(),
            history: Vec::new(),
            changed_turns: Vec::new(),
            announced: Vec::new(),
            notifies: tx.dialect() == Dialect::Postgres,
            next_order: 0,
        })
    }

    /// Decides `command`, asked by `actor`, against the group's state and applies the decision in memory,
    /// with its history row (none for a rejection or a change of nothing).
    pub(crate) async fn apply(
        &mut self,
        tx: &mut WriteTx<'_>,
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
                            before: 0,
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
                self.history.push(history_row(
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
                    added: false,
                })
            }
            Decision::Unchanged => Ok(Done {
                state: slot
                    .map(|s| s.row.state())
                    .ok_or(LedgerError::MutationNotFound)?,
                announcement: None,
                note: None,
                added: false,
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
                self.history.push(history_row(
                    &slot.row,
                    kind,
                    Some(revision),
                    actor,
                    evidence,
                    None,
                ));
                let done = announce_if(&slot.row, revision, change.live);
                self.remember(&done);
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
                self.history.push(history_row(
                    &slot.row,
                    HistoryKind::Metadata,
                    Some(revision),
                    actor,
                    None,
                    None,
                ));
                let done = announce_if(&slot.row, revision, live);
                self.remember(&done);
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
                self.history.push(history_row(
                    &slot.row,
                    HistoryKind::Note,
                    None,
                    actor,
                    None,
                    Some(text),
                ));
                let note = note_change(&slot.row, HistoryKind::Note, actor, Some(text), self.now);
                Ok(Done {
                    state: slot.row.state(),
                    announcement: None,
                    note: Some(note),
                    added: true,
                })
            }
            Decision::Claim => {
                let held = self.entry_claim(tx, &key).await?;
                let slot = self
                    .entries
                    .get(&key)
                    .ok_or(LedgerError::MutationNotFound)?;
                let spelling = actor.spelling();
                if let Some(held) = held {
                    if held.actor != spelling {
                        return Err(LedgerError::AlreadyClaimed {
                            claim: crate::wire::Claim {
                                by: staff_name(&held.actor).to_owned(),
                                at: format_time(held.at),
                            },
                        });
                    }
                    // Its holder asks again: answered with the row that took it, nothing written.
                    return Ok(Done {
                        state: slot.row.state(),
                        announcement: None,
                        note: Some(note_change(
                            &slot.row,
                            HistoryKind::Claim,
                            actor,
                            None,
                            held.at,
                        )),
                        added: false,
                    });
                }
                self.history.push(history_row(
                    &slot.row,
                    HistoryKind::Claim,
                    None,
                    actor,
                    None,
                    None,
                ));
                let change = note_change(&slot.row, HistoryKind::Claim, actor, None, now);
                let state = slot.row.state();
                self.claims.insert(
                    key,
                    Some(ClaimHeld {
                        actor: spelling,
                        at: now,
                    }),
                );
                Ok(Done {
                    state,
                    announcement: None,
                    note: Some(change),
                    added: true,
                })
            }
            Decision::Release => {
                let held = self.entry_claim(tx, &key).await?;
                let slot = self
                    .entries
                    .get(&key)
                    .ok_or(LedgerError::MutationNotFound)?;
                let state = slot.row.state();
                if held.is_none() {
                    return Ok(Done {
                        state,
                        announcement: None,
                        note: None,
                        added: false,
                    });
                }
                self.history.push(history_row(
                    &slot.row,
                    HistoryKind::Release,
                    None,
                    actor,
                    None,
                    None,
                ));
                let change = note_change(&slot.row, HistoryKind::Release, actor, None, now);
                self.claims.insert(key, None);
                Ok(Done {
                    state,
                    announcement: None,
                    note: Some(change),
                    added: true,
                })
            }
        }
    }

    /// Keeps what `done` announces, for its turn's notification.
    fn remember(&mut self, done: &Done) {
        if !self.notifies {
            return;
        }
        if let Some(a) = &done.announcement {
            self.announced.push((
                (
                    a.session_key.as_str().to_owned(),
                    a.outcome.logical_turn_id.clone(),
                ),
                a.revision,
                a.outcome.clone(),
            ));
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
        if !slot.changed {
            slot.changed = true;
            self.changed_turns.push(turn);
        }
        Ok(slot.latest)
    }

    /// The turns that took a revision in this group, in the order of their first change, each with its
    /// latest revision now (after every change of the group).
    pub(crate) fn turn_changes(&self) -> Vec<TurnChange> {
        self.changed_turns
            .iter()
            .filter_map(|key| {
                let slot = self.turns.get(key)?;
                Some(TurnChange {
                    session_key: SessionKey::parse(key.0.clone()).ok()?,
                    logical_turn_id: LogicalTurnId::parse(key.1.clone()).ok()?,
                    latest_revision: slot.latest,
                })
            })
            .collect()
    }

    /// The notifications of the turns this group changed visibly, in the order of their first change
    /// (Postgres, crate::notify): each names the revisions the group took.
    pub(crate) fn notes(&self) -> Vec<crate::notify::Note> {
        self.changed_turns
            .iter()
            .filter_map(|key| {
                let slot = self.turns.get(key)?;
                let records = self
                    .announced
                    .iter()
                    .filter(|(k, _, _)| k == key)
                    .map(|(_, revision, outcome)| (*revision, outcome.clone()))
                    .collect();
                Some(crate::notify::Note::turn(
                    key.0.clone(),
                    key.1.clone(),
                    slot.before + 1,
                    slot.latest,
                    records,
                ))
            })
            .collect()
    }

    /// Whether `attempt_id` was ever an attempt of the entry: in this group, or stored.
    /// [`Self::claim_of`] the entry `key` of this group (`MutationNotFound` when it holds none).
    async fn entry_claim(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: &Key,
    ) -> Result<Option<ClaimHeld>, LedgerError> {
        let seq = self
            .entries
            .get(key)
            .ok_or(LedgerError::MutationNotFound)?
            .row
            .seq;
        self.claim_of(tx, key, seq).await
    }

    /// Who holds the claim of the entry `key` (stored as `seq`; 0 for an entry this group records): its
    /// latest `claim` or `release` history row, read once per group (one index range of
    /// `history_by_entry`), then what this group's claims and releases made of it.
    async fn claim_of(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: &Key,
        seq: i64,
    ) -> Result<Option<ClaimHeld>, LedgerError> {
        if let Some(held) = self.claims.get(key) {
            return Ok(held.clone());
        }
        let held = if seq == 0 {
            None
        } else {
            const SQL: &str = "SELECT kind, actor, at FROM history WHERE entry_seq = $1 \
                 AND kind IN ('claim', 'release') ORDER BY id DESC LIMIT 1";
            let last: Option<(String, String, i64)> = match tx {
                WriteTx::Direct(c) => c
                    .rows(SQL, &[&seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .pop(),
                tx => on_tx!(tx, |c, d| sqlx::query_as(SQL)
                    .bind(seq)
                    .fetch_optional(c)
                    .await?),
            };
            last.filter(|(kind, _, _)| kind == "claim")
                .map(|(_, actor, at)| ClaimHeld { actor, at })
        };
        self.claims.insert(key.clone(), held.clone());
        Ok(held)
    }

    async fn attempt_used(
        &self,
        tx: &mut WriteTx<'_>,
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
        const SQL: &str = "SELECT 1 FROM attempts WHERE entry_seq = $1 AND attempt_id = $2";
        let used: Option<i32> = match tx {
            WriteTx::Direct(c) => c.rows(SQL, &[&seq, &attempt_id], |r| r.get(0))?.pop(),
            tx => on_tx!(tx, |c, d| sqlx::query_scalar(SQL)
                .bind(seq)
                .bind(attempt_id)
                .fetch_optional(c)
                .await?),
        };
        Ok(used.is_some())
    }

    /// Writes the final state of everything the group changed: the statements that have rows to write,
    /// in order (parents before children: sessions, turns, entries, then attempts, evidence and history
    /// rows). Each statement reads its own list from its own JSON parameter (`json_each(?)`, rows as
    /// positional arrays), so SQLite parses each list once; the parameters are anonymous and bound in
    /// the order they appear. On the group commit's SQLite transaction ([`WriteTx::Direct`]) the
    /// statements run one after the other on the writer's thread; on a sqlx SQLite transaction as ONE
    /// multi-statement query (the driver binds the anonymous parameters of a multi-statement query in
    /// sequence across its statements); on Postgres as ONE statement of data-modifying CTEs that also
    /// sends the turns' notifications ([`Group::notes`]) on `channel` ([`GroupWrite::postgres`]), so
    /// they are delivered at the transaction's commit, in commit order.
    pub(crate) async fn write(
        self,
        tx: &mut WriteTx<'_>,
        channel: Option<&str>,
    ) -> Result<(), LedgerError> {
        // Only where there is a channel to send them on (Postgres).
        let payloads: Vec<String> = match channel {
            Some(_) => self
                .notes()
                .iter()
                .map(crate::notify::Note::payload)
                .collect(),
            None => Vec::new(),
        };
        let mut w = GroupWrite::new();
        // Retention counts from a session's last write: once per session per group.
        let mut new_sessions: Vec<&str> = Vec::new();
        let mut touched: Vec<&str> = Vec::new();
        for (k, s) in &self.sessions {
            if s.new {
                new_sessions.push(k);
            } else if s.touched {
                touched.push(k);
            }
        }
        w.push(&NEW_SESSIONS, &new_sessions)?;
        w.push(&TOUCHED_SESSIONS, &touched)?;
        let mut new_turns: Vec<(&Key, &TurnSlot)> =
            self.turns.iter().filter(|(_, t)| t.new).collect();
        new_turns.sort_by_key(|(_, t)| t.order);
        let new_turns: Vec<(&str, &str, i64)> = new_turns
            .iter()
            .map(|(k, t)| (k.0.as_str(), k.1.as_str(), t.latest))
            .collect();
        w.push(&NEW_TURNS, &new_turns)?;
        let changed_turns: Vec<(&str, &str, i64)> = self
            .turns
            .iter()
            .filter(|(_, t)| t.changed && !t.new)
            .map(|(k, t)| (k.0.as_str(), k.1.as_str(), t.latest))
            .collect();
        w.push(&CHANGED_TURNS, &changed_turns)?;
        let mut new_entries: Vec<&EntrySlot> = self.entries.values().filter(|e| e.new).collect();
        new_entries.sort_by_key(|e| e.order);
        let new_entries: Vec<NewEntry> = new_entries.iter().map(|e| NewEntry(&e.row)).collect();
        w.push(&NEW_ENTRIES, &new_entries)?;
        let changed_entries: Vec<ChangedEntry> = self
            .entries
            .values()
            .filter(|e| e.changed && !e.new)
            .map(|e| ChangedEntry(&e.row))
            .collect();
        w.push(&CHANGED_ENTRIES, &changed_entries)?;
        let attempts: Vec<_> = self
            .attempts
            .iter()
            .map(|(k, a)| {
                let (seq, s, m) = self.entry_ref(k);
                (seq, s, m, a.as_str())
            })
            .collect();
        w.push(&ATTEMPTS, &attempts)?;
        let reconciliations: Vec<_> = self
            .reconciliations
            .iter()
            .map(|(k, a, completed, e)| {
                let (seq, s, m) = self.entry_ref(k);
                (
                    seq,
                    s,
                    m,
                    a.as_str(),
                    *completed,
                    e.source.as_str(),
                    e.reference.as_str(),
                    e.observed_at.as_str(),
                )
            })
            .collect();
        w.push(&RECONCILIATIONS, &reconciliations)?;
        w.push(&HISTORY, &self.history)?;
        let now = self.now;
        match &mut *tx {
            // On the writer's thread: each statement in turn, no hand-off between them.
            WriteTx::Direct(c) => {
                for (statement, binds) in &w.statements {
                    let params: Vec<&dyn rusqlite::types::ToSql> = binds
                        .iter()
                        .map(|b| match b {
                            Bind::Now => &now as &dyn rusqlite::types::ToSql,
                            Bind::List(list) => list,
                        })
                        .collect();
                    c.execute(statement.sql, &params)?;
                }
            }
            // sqlx's SQLite driver: ONE multi-statement query (one round trip to its worker thread).
            WriteTx::Sqlite(t) => {
                let sql: String = w.statements.iter().map(|(st, _)| st.sql).collect();
                let mut query = sqlx::query(&sql);
                for bind in w.statements.into_iter().flat_map(|(_, binds)| binds) {
                    query = match bind {
                        Bind::Now => query.bind(now),
                        Bind::List(list) => query.bind(list),
                    };
                }
                query.execute(&mut **t).await?;
            }
            // Postgres: the statements and the notifications as ONE statement, one round trip.
            WriteTx::Postgres(t) => {
                let notify = channel.filter(|_| !payloads.is_empty());
                if w.statements.is_empty() && notify.is_none() {
                    return Ok(());
                }
                let sql = w.postgres(notify.is_some());
                let mut query = sqlx::query(&sql).bind(now);
                for bind in w.statements.into_iter().flat_map(|(_, binds)| binds) {
                    if let Bind::List(list) = bind {
                        query = query.bind(list);
                    }
                }
                if let Some(channel) = notify {
                    query = query.bind(channel).bind(payloads);
                }
                query.execute(&mut **t).await?;
                return Ok(());
            }
        }
        tx.notify(channel, payloads).await
    }

    /// How a write names an entry: its `seq` when it was stored before this group, else (its `seq` is
    /// not known before its insert) its session key and mutation id, looked up by the statement.
    fn entry_ref<'a>(&self, key: &'a Key) -> EntryRef<'a> {
        match self
            .entries
            .get(key)
            .map(|e| e.row.seq)
            .filter(|&seq| seq != 0)
        {
            Some(seq) => (Some(seq), None, None),
            None => (None, Some(key.0.as_str()), Some(key.1.as_str())),
        }
    }
}

/// What a group loads: `(session_key, last_write_at)` of the sessions found, the entries found, and
/// `(session_key, logical_turn_id, latest_revision)` of the turns found (Postgres: locked `FOR UPDATE`).
type Loaded = (
    Vec<(String, i64)>,
    Vec<EntryRow>,
    Vec<(String, String, i64)>,
);

/// [`Group::load`] in three statements, one after the other: the sessions of `session_keys`, the entries
/// of `entry_keys` (`[session_key, mutation_id]`), then the turns of `approved_turns` and of the entries
/// found (`[session_key, logical_turn_id]`). Each list is one JSON text parameter.
async fn load_each(
    tx: &mut WriteTx<'_>,
    session_keys: &[&str],
    entry_keys: &[[&str; 2]],
    mut turn_keys: Vec<[&str; 2]>,
) -> Result<Loaded, LedgerError> {
    let dialect = tx.dialect();
    let sql = format!(
        "SELECT session_key, last_write_at FROM sessions WHERE {}",
        dialect.text_in("session_key", 1)
    );
    let list = json!(session_keys).to_string();
    let rows: Vec<(String, i64)> = match &mut *tx {
        WriteTx::Direct(c) => c.rows(&sql, &[&list], |r| Ok((r.get(0)?, r.get(1)?)))?,
        tx => on_tx!(tx, |c, d| sqlx::query_as(&sql)
            .bind(&list)
            .fetch_all(c)
            .await?),
    };
    let sql = format!(
        "SELECT {ENTRY_COLUMNS} FROM entries WHERE (session_key, mutation_id) IN ({})",
        dialect.pair_list(1)
    );
    let list = json!(entry_keys).to_string();
    let found: Vec<EntryRow> = match &mut *tx {
        WriteTx::Direct(c) => c.rows(&sql, &[&list], EntryRow::from_direct)?,
        tx => on_tx!(tx, |c, d| sqlx::query_as(&sql)
            .bind(&list)
            .fetch_all(c)
            .await?),
    };
    for row in &found {
        turn_keys.push([row.session_key.as_str(), row.logical_turn_id.as_str()]);
    }
    turn_keys.sort_unstable();
    turn_keys.dedup();
    let mut turns = Vec::new();
    if !turn_keys.is_empty() {
        // Postgres: the turns' row locks are held until the group commits; the revisions it takes
        // are read under them (docs/ledger.md "Backends").
        let sql = format!(
            "SELECT session_key, logical_turn_id, latest_revision FROM turns \
             WHERE (session_key, logical_turn_id) IN ({}){}",
            dialect.pair_list(1),
            if dialect == Dialect::Postgres {
                " FOR UPDATE"
            } else {
                ""
            }
        );
        let list = json!(turn_keys).to_string();
        turns = match &mut *tx {
            WriteTx::Direct(c) => {
                c.rows(&sql, &[&list], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            }
            tx => on_tx!(tx, |c, d| sqlx::query_as(&sql)
                .bind(&list)
                .fetch_all(c)
                .await?),
        };
    }
    Ok((rows, found, turns))
}

/// [`Group::load`] on Postgres in ONE statement (one round trip, docs/ledger.md
/// "Postgres round trips"): the three reads of [`load_each`] as CTEs, the turns' read taking the turns
/// of the entries found from the entries' CTE and locking them `FOR UPDATE` (held until the group
/// commits; the revisions it takes are read under them). The rows come back as one `UNION ALL`:
/// `kind` says which read a row is from (`e` an entry, in [`ENTRY_COLUMNS`]; `s` a session, its key in
/// `session_key` and `last_write_at` in `n`; `t` a turn, `session_key`, `logical_turn_id` and
/// `latest_revision` in `n`), the other columns NULL. The session locks were taken by an earlier
/// statement of the transaction ([`crate::store::Inner::begin_group`]), so this statement's snapshot
/// is taken under them.
async fn load_postgres(
    t: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    session_keys: &[&str],
    entry_keys: &[[&str; 2]],
    approved_turns: &[[&str; 2]],
) -> Result<Loaded, LedgerError> {
    use sqlx::Row;
    let d = Dialect::Postgres;
    // NULL for each entry column after `seq, session_key, logical_turn_id` (ENTRY_COLUMNS has 17).
    let rest = ["NULL"; 14].join(", ");
    let sql = format!(
        "WITH s AS (SELECT session_key, last_write_at FROM sessions WHERE {sessions}), \
         e AS (SELECT {ENTRY_COLUMNS} FROM entries WHERE (session_key, mutation_id) IN ({entries})), \
         t AS (SELECT session_key, logical_turn_id, latest_revision FROM turns \
               WHERE (session_key, logical_turn_id) IN \
               ({turns} UNION ALL SELECT session_key, logical_turn_id FROM e) FOR UPDATE) \
         SELECT 'e' AS kind, e.*, NULL::bigint AS n FROM e \
         UNION ALL SELECT 's', NULL, s.session_key, NULL, {rest}, s.last_write_at FROM s \
         UNION ALL SELECT 't', NULL, t.session_key, t.logical_turn_id, {rest}, t.latest_revision FROM t",
        sessions = d.text_in("session_key", 1),
        entries = d.pair_list(2),
        turns = d.pair_list(3),
    );
    let rows = sqlx::query(&sql)
        .bind(json!(session_keys).to_string())
        .bind(json!(entry_keys).to_string())
        .bind(json!(approved_turns).to_string())
        .fetch_all(&mut **t)
        .await?;
    let (mut sessions, mut entries, mut turns) = (Vec::new(), Vec::new(), Vec::new());
    for row in rows {
        match row.try_get::<&str, _>("kind")? {
            "e" => entries.push(<EntryRow as sqlx::FromRow<_>>::from_row(&row)?),
            "s" => sessions.push((row.try_get("session_key")?, row.try_get("n")?)),
            _ => turns.push((
                row.try_get("session_key")?,
                row.try_get("logical_turn_id")?,
                row.try_get("n")?,
            )),
        }
    }
    Ok((sessions, entries, turns))
}

/// One parameter of the group's write: the group's time (ms) or a statement's list (JSON text).
enum Bind {
    Now,
    List(String),
}

/// One statement of the group's write: its SQL for SQLite (anonymous parameters, `binds` says what each
/// is, in order: exactly one of them the list) and for Postgres, where it is one data-modifying CTE of
/// the group's ONE statement ([`GroupWrite::postgres`]), named `name`: there `$now` stands for the
/// group's time, `$list` for its list, and `$new_seq` for the `seq` of the entry this group inserted
/// under the row's session key and mutation id (read from the `RETURNING` of [`NEW_ENTRIES`]: sibling
/// CTEs do not see each other's rows in the table).
struct Statement {
    sql: &'static str,
    name: &'static str,
    pg: &'static str,
    binds: &'static [Param],
}

#[derive(Clone, Copy)]
enum Param {
    Now,
    List,
}

/// The group's write as it is assembled: the statements that have rows, in order, and their parameters.
/// The group commit's SQLite transaction runs them one after the other on the writer's thread
/// (crate::direct); sqlx's SQLite driver would get them as ONE multi-statement query (one round trip to
/// its worker thread); Postgres, which takes one statement per prepared query, gets them as the CTEs of
/// ONE statement ([`GroupWrite::postgres`]).
struct GroupWrite {
    statements: Vec<(&'static Statement, Vec<Bind>)>,
}

impl GroupWrite {
    fn new() -> Self {
        GroupWrite {
            statements: Vec::new(),
        }
    }

    /// Adds `statement` with `rows` as its list, unless there are none.
    fn push<T: Serialize>(
        &mut self,
        statement: &'static Statement,
        rows: &[T],
    ) -> Result<(), LedgerError> {
        if rows.is_empty() {
            return Ok(());
        }
        let list = serde_json::to_string(rows).map_err(|e| {
            LedgerError::Store(sqlx::Error::Protocol(format!(
                "the group's write could not be encoded: {e}"
            )))
        })?;
        let mut list = Some(list);
        let binds = statement
            .binds
            .iter()
            .map(|param| match param {
                Param::Now => Bind::Now,
                Param::List => Bind::List(list.take().unwrap_or_default()),
            })
            .collect();
        self.statements.push((statement, binds));
        Ok(())
    }

    /// The group's write on Postgres as ONE statement (one round trip, docs/ledger.md
    /// "Postgres round trips"): `WITH <name> AS (<statement>), …` with each statement that has rows
    /// as a data-modifying CTE, in order, and as its main query, when `notify`, the turns' notifications
    /// (`SELECT pg_notify(channel, payload) … ORDER BY` their order; Postgres delivers them at commit),
    /// else `SELECT 1`. Its parameters: `$1` the group's time, `$2`, `$3`, … each statement's list in
    /// order, then when `notify` the channel and the payloads (`text[]`).
    ///
    /// The CTEs all read one snapshot and none sees another's rows in the tables; they need not: each
    /// writes rows of its own (new sessions and turns are inserted, stored ones updated), the foreign
    /// keys are checked at the end of the statement, when every CTE has written, and a row naming an
    /// entry inserted by this group takes its `seq` from [`NEW_ENTRIES`]' `RETURNING` (`$new_seq`;
    /// without new entries no row names one, and `NULL` would fail the `NOT NULL` loudly).
    fn postgres(&self, notify: bool) -> String {
        let new_seq = if self
            .statements
            .iter()
            // By name: a `const`'s address is not one address (each use may be a copy of its own).
            .any(|(st, _)| st.name == NEW_ENTRIES.name)
        {
            "(SELECT n.seq FROM new_entries AS n \
             WHERE n.session_key = j.value ->> 1 AND n.mutation_id = j.value ->> 2)"
        } else {
            "NULL::bigint"
        };
        let ctes: Vec<String> = self
            .statements
            .iter()
            .enumerate()
            .map(|(i, (st, _))| {
                let body = st
                    .pg
                    .replace("$now", "$1")
                    .replace("$list", &format!("${}", i + 2))
                    .replace("$new_seq", new_seq);
                format!("{} AS ({body})", st.name)
            })
            .collect();
        let n = self.statements.len() + 2;
        let main = if notify {
            format!(
                "SELECT pg_notify(${n}, p) FROM unnest(${}::text[]) WITH ORDINALITY AS u(p, i) \
                 ORDER BY i",
                n + 1
            )
        } else {
            "SELECT 1".to_owned()
        };
        if ctes.is_empty() {
            main
        } else {
            format!("WITH {} {main}", ctes.join(", "))
        }
    }
}

use Param::{List as L, Now as N};

/// New sessions: `[session_key, …]`.
const NEW_SESSIONS: Statement = Statement {
    sql: "INSERT INTO sessions (session_key, created_at, last_write_at) \
          SELECT value, ?, ? FROM json_each(?);",
    name: "new_sessions",
    pg: "INSERT INTO sessions (session_key, created_at, last_write_at) \
         SELECT value, $now, $now FROM jsonb_array_elements_text($list::jsonb)",
    binds: &[N, N, L],
};

/// Sessions written to: `[session_key, …]`.
const TOUCHED_SESSIONS: Statement = Statement {
    sql: "UPDATE sessions SET last_write_at = ? \
          WHERE session_key IN (SELECT value FROM json_each(?));",
    name: "touched_sessions",
    pg: "UPDATE sessions SET last_write_at = $now \
         WHERE session_key IN (SELECT value FROM jsonb_array_elements_text($list::jsonb))",
    binds: &[N, L],
};

/// New turns, in the order first seen: `[session_key, logical_turn_id, latest_revision]`.
const NEW_TURNS: Statement = Statement {
    sql: "INSERT INTO turns (session_key, logical_turn_id, latest_revision, created_at) \
          SELECT value ->> 0, value ->> 1, value ->> 2, ? FROM json_each(?) ORDER BY key;",
    name: "new_turns",
    pg: "INSERT INTO turns (session_key, logical_turn_id, latest_revision, created_at) \
         SELECT value ->> 0, value ->> 1, (value ->> 2)::bigint, $now \
         FROM jsonb_array_elements($list::jsonb) WITH ORDINALITY AS j(value, key) ORDER BY key",
    binds: &[N, L],
};

/// Turns whose latest revision changed: `[session_key, logical_turn_id, latest_revision]`.
const CHANGED_TURNS: Statement = Statement {
    sql: "UPDATE turns SET latest_revision = j.latest \
          FROM (SELECT value ->> 0 AS s, value ->> 1 AS t, value ->> 2 AS latest FROM json_each(?)) AS j \
          WHERE turns.session_key = j.s AND turns.logical_turn_id = j.t;",
    name: "changed_turns",
    pg: "UPDATE turns SET latest_revision = (j.value ->> 2)::bigint \
         FROM jsonb_array_elements($list::jsonb) AS j(value) \
         WHERE turns.session_key = j.value ->> 0 AND turns.logical_turn_id = j.value ->> 1",
    binds: &[L],
};

/// New entries in the order they were recorded ([`NewEntry`]); on Postgres it returns their `seq` by
/// key, for the `$new_seq` of the statements after it.
const NEW_ENTRIES: Statement = Statement {
    name: "new_entries",
    sql: "INSERT INTO entries (session_key, logical_turn_id, mutation_id, tool, status, intent_recorded, \
          attempt_id, reason, meta_attached, meta_id, meta_url, meta_title, revision, settled_at, \
          commissioned_after, recorded_at, updated_at) \
          SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, \
          value ->> 7, value ->> 8, value ->> 9, value ->> 10, value ->> 11, value ->> 12, value ->> 13, \
          value ->> 14, ?, ? FROM json_each(?) ORDER BY key;",
    pg: "INSERT INTO entries (session_key, logical_turn_id, mutation_id, tool, status, intent_recorded, \
         attempt_id, reason, meta_attached, meta_id, meta_url, meta_title, revision, settled_at, \
         commissioned_after, recorded_at, updated_at) \
         SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, (value ->> 5)::boolean, \
         value ->> 6, value ->> 7, (value ->> 8)::boolean, value ->> 9, value ->> 10, value ->> 11, \
         (value ->> 12)::bigint, (value ->> 13)::bigint, value ->> 14, $now, $now \
         FROM jsonb_array_elements($list::jsonb) WITH ORDINALITY AS j(value, key) ORDER BY key \
         RETURNING seq, session_key, mutation_id",
    binds: &[N, N, L],
};

/// Entries stored before the group that it changed ([`ChangedEntry`]), by `seq`.
const CHANGED_ENTRIES: Statement = Statement {
    name: "changed_entries",
    sql: "UPDATE entries SET status = j.status, intent_recorded = j.intent, attempt_id = j.attempt, \
          reason = j.reason, meta_attached = j.meta, meta_id = j.id, meta_url = j.url, meta_title = j.title, \
          revision = j.revision, settled_at = j.settled_at, updated_at = ? \
          FROM (SELECT value ->> 0 AS seq, value ->> 1 AS status, value ->> 2 AS intent, \
                value ->> 3 AS attempt, value ->> 4 AS reason, value ->> 5 AS meta, value ->> 6 AS id, \
                value ->> 7 AS url, value ->> 8 AS title, value ->> 9 AS revision, \
                value ->> 10 AS settled_at FROM json_each(?)) AS j \
          WHERE entries.seq = j.seq;",
    pg: "UPDATE entries SET status = j.value ->> 1, intent_recorded = (j.value ->> 2)::boolean, \
         attempt_id = j.value ->> 3, reason = j.value ->> 4, meta_attached = (j.value ->> 5)::boolean, \
         meta_id = j.value ->> 6, meta_url = j.value ->> 7, meta_title = j.value ->> 8, \
         revision = (j.value ->> 9)::bigint, settled_at = (j.value ->> 10)::bigint, updated_at = $now \
         FROM jsonb_array_elements($list::jsonb) AS j(value) WHERE entries.seq = (j.value ->> 0)::bigint",
    binds: &[N, L],
};

/// The entry's `seq` from the first three elements of a row (`seq`, or `NULL` and then the session key
/// and mutation id of an entry inserted by this group); `j` is the row.
macro_rules! entry_seq {
    () => {
        "COALESCE(j.value ->> 0, (SELECT e.seq FROM entries AS e \
         WHERE e.session_key = j.value ->> 1 AND e.mutation_id = j.value ->> 2))"
    };
}

/// [`entry_seq!`] for Postgres, in the group's one statement: an entry inserted by this group is found
/// in the `RETURNING` of [`NEW_ENTRIES`] (`$new_seq`, [`GroupWrite::postgres`]).
macro_rules! pg_entry_seq {
    () => {
        "COALESCE((j.value ->> 0)::bigint, $new_seq)"
    };
}

/// New attempt ids: `[seq, session_key, mutation_id, attempt_id]` (see [`Group::entry_ref`]).
const ATTEMPTS: Statement = Statement {
    name: "new_attempts",
    sql: concat!(
        "INSERT INTO attempts (entry_seq, attempt_id) SELECT ",
        entry_seq!(),
        ", j.value ->> 3 FROM json_each(?) AS j;"
    ),
    pg: concat!(
        "INSERT INTO attempts (entry_seq, attempt_id) SELECT ",
        pg_entry_seq!(),
        ", j.value ->> 3 FROM jsonb_array_elements($list::jsonb) AS j(value)"
    ),
    binds: &[L],
};

/// Reconciliation evidence: `[seq, session_key, mutation_id, attempt_id, completed, source, reference,
/// observed_at]`.
const RECONCILIATIONS: Statement = Statement {
    name: "new_reconciliations",
    sql: concat!(
        "INSERT INTO reconciliations (entry_seq, attempt_id, completed, source, reference, observed_at, \
         recorded_at) SELECT ",
        entry_seq!(),
        ", j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, ? \
         FROM json_each(?) AS j ORDER BY j.key;"
    ),
    pg: concat!(
        "INSERT INTO reconciliations (entry_seq, attempt_id, completed, source, reference, observed_at, \
         recorded_at) SELECT ",
        pg_entry_seq!(),
        ", j.value ->> 3, (j.value ->> 4)::boolean, j.value ->> 5, j.value ->> 6, j.value ->> 7, $now \
         FROM jsonb_array_elements($list::jsonb) WITH ORDINALITY AS j(value, key) ORDER BY j.key"
    ),
    binds: &[N, L],
};

/// History rows in the order of the changes ([`HistoryOut`]).
const HISTORY: Statement = Statement {
    name: "new_history",
    sql: concat!(
        "INSERT INTO history (entry_seq, kind, at, revision, actor, attempt_id, ledger_status, \
         intent_recorded, reason, meta_attached, meta_id, meta_url, meta_title, source, reference, \
         observed_at, note) SELECT ",
        entry_seq!(),
        ", j.value ->> 3, ?, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, j.value ->> 8, \
         j.value ->> 9, j.value ->> 10, j.value ->> 11, j.value ->> 12, j.value ->> 13, j.value ->> 14, \
         j.value ->> 15, j.value ->> 16, j.value ->> 17 FROM json_each(?) AS j ORDER BY j.key;"
    ),
    pg: concat!(
        "INSERT INTO history (entry_seq, kind, at, revision, actor, attempt_id, ledger_status, \
         intent_recorded, reason, meta_attached, meta_id, meta_url, meta_title, source, reference, \
         observed_at, note) SELECT ",
        pg_entry_seq!(),
        ", j.value ->> 3, $now, (j.value ->> 4)::bigint, j.value ->> 5, j.value ->> 6, j.value ->> 7, \
         (j.value ->> 8)::boolean, j.value ->> 9, (j.value ->> 10)::boolean, j.value ->> 11, \
         j.value ->> 12, j.value ->> 13, j.value ->> 14, j.value ->> 15, j.value ->> 16, j.value ->> 17 \
         FROM jsonb_array_elements($list::jsonb) WITH ORDINALITY AS j(value, key) ORDER BY j.key"
    ),
    binds: &[N, L],
};

/// A decision that does not fit its action (the machine decides `Approve`, `Attach` and `Note` only for
/// their own actions): a fault of this code, answered as a store error (500) for that command alone,
/// never a panic of the writer task that serves every command.
fn mismatch(decision: &str) -> LedgerError {
    LedgerError::Store(sqlx::Error::Protocol(format!(
        "the state machine decided {decision} for another action"
    )))
}

/// A new entry's columns as one positional array of [`NEW_ENTRIES`]: session key, turn, mutation, tool,
/// status, intent, attempt, reason, metadata (attached, id, url, title), revision, settled_at and
/// commissioned_after.
struct NewEntry<'a>(&'a EntryRow);

impl Serialize for NewEntry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut t = s.serialize_tuple(15)?;
        t.serialize_element(&r.session_key)?;
        t.serialize_element(&r.logical_turn_id)?;
        t.serialize_element(&r.mutation_id)?;
        t.serialize_element(&r.tool)?;
        t.serialize_element(r.status.as_str())?;
        t.serialize_element(&r.intent_recorded)?;
        t.serialize_element(&r.attempt_id)?;
        t.serialize_element(&r.reason.map(Reason::as_str))?;
        t.serialize_element(&r.meta_attached)?;
        t.serialize_element(&r.meta_id)?;
        t.serialize_element(&r.meta_url)?;
        t.serialize_element(&r.meta_title)?;
        t.serialize_element(&r.revision)?;
        t.serialize_element(&r.settled_at)?;
        t.serialize_element(&r.commissioned_after)?;
        t.end()
    }
}

/// A changed entry's columns as one positional array of [`CHANGED_ENTRIES`]: seq, status, intent,
/// attempt, reason, metadata (attached, id, url, title), revision and settled_at.
struct ChangedEntry<'a>(&'a EntryRow);

impl Serialize for ChangedEntry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut t = s.serialize_tuple(11)?;
        t.serialize_element(&r.seq)?;
        t.serialize_element(r.status.as_str())?;
        t.serialize_element(&r.intent_recorded)?;
        t.serialize_element(&r.attempt_id)?;
        t.serialize_element(&r.reason.map(Reason::as_str))?;
        t.serialize_element(&r.meta_attached)?;
        t.serialize_element(&r.meta_id)?;
        t.serialize_element(&r.meta_url)?;
        t.serialize_element(&r.meta_title)?;
        t.serialize_element(&r.revision)?;
        t.serialize_element(&r.settled_at)?;
        t.end()
    }
}

/// One history row to write (docs/ledger.md "History"): the entry (its `seq`, or its key when this
/// group inserts it), what the change was, the revision it took (`None` for approvals and notes), who
/// asked, the entry's state fields after the change, and the evidence (reconciliations) or text (notes)
/// it carries. Its time is the group's.
struct HistoryOut {
    seq: Option<i64>,
    key: Option<Key>,
    kind: HistoryKind,
    revision: Option<i64>,
    actor: String,
    attempt_id: Option<String>,
    status: LedgerStatus,
    intent_recorded: bool,
    reason: Option<Reason>,
    meta_attached: bool,
    meta_id: Option<String>,
    meta_url: Option<String>,
    meta_title: Option<String>,
    evidence: Option<Evidence>,
    note: Option<String>,
}

/// The history row of a change of `row` (its state after the change).
fn history_row(
    row: &EntryRow,
    kind: HistoryKind,
    revision: Option<i64>,
    actor: &Actor,
    evidence: Option<&Evidence>,
    note: Option<&String>,
) -> HistoryOut {
    let (seq, key) = if row.seq != 0 {
        (Some(row.seq), None)
    } else {
        (
            None,
            Some((row.session_key.clone(), row.mutation_id.clone())),
        )
    };
    HistoryOut {
        seq,
        key,
        kind,
        revision,
        actor: actor.spelling(),
        attempt_id: row.attempt_id.clone(),
        status: row.status,
        intent_recorded: row.intent_recorded,
        reason: row.reason,
        meta_attached: row.meta_attached,
        meta_id: row.meta_id.clone(),
        meta_url: row.meta_url.clone(),
        meta_title: row.meta_title.clone(),
        evidence: evidence.cloned(),
        note: note.cloned(),
    }
}

/// A history row as one positional array of [`HISTORY`]: seq, session key, mutation id (see
/// [`Group::entry_ref`]), kind, revision, actor, attempt, status, intent, reason, metadata (attached, id,
/// url, title), source, reference, observed_at and note.
impl Serialize for HistoryOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(18)?;
        t.serialize_element(&self.seq)?;
        t.serialize_element(&self.key.as_ref().map(|k| &k.0))?;
        t.serialize_element(&self.key.as_ref().map(|k| &k.1))?;
        t.serialize_element(self.kind.as_str())?;
        t.serialize_element(&self.revision)?;
        t.serialize_element(&self.actor)?;
        t.serialize_element(&self.attempt_id)?;
        t.serialize_element(self.status.as_str())?;
        t.serialize_element(&self.intent_recorded)?;
        t.serialize_element(&self.reason.map(Reason::as_str))?;
        t.serialize_element(&self.meta_attached)?;
        t.serialize_element(&self.meta_id)?;
        t.serialize_element(&self.meta_url)?;
        t.serialize_element(&self.meta_title)?;
        let evidence = self.evidence.as_ref();
        t.serialize_element(&evidence.map(|e| &e.source))?;
        t.serialize_element(&evidence.map(|e| &e.reference))?;
        t.serialize_element(&evidence.map(|e| &e.observed_at))?;
        t.serialize_element(&self.note)?;
        t.end()
    }
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
        added: false,
    }
}

/// A staff member's name from an actor spelling `staff:<name>` (the spelling itself otherwise).
fn staff_name(actor: &str) -> &str {
    actor.strip_prefix("staff:").unwrap_or(actor)
}

/// The `note`, `claim` or `release` history row the group writes on `row`, as the history API serves it
/// (docs/ledger.md "History"): no revision, the entry's state fields unchanged, its record as of `at`.
fn note_change(
    row: &EntryRow,
    kind: HistoryKind,
    actor: &Actor,
    text: Option<&str>,
    at: i64,
) -> HistoryChange {
    HistoryChange {
        kind,
        at: format_time(at),
        revision: None,
        actor: actor.spelling(),
        attempt_id: row.attempt_id.clone(),
        ledger_status: row.status,
        reason: row.reason,
        evidence: None,
        note: text.map(str::to_owned),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The Postgres write's text ([`GroupWrite::postgres`]): parameters numbered `$1` (the time), then
    /// the lists in order, then the channel and the payloads; an entry the group inserts is found in the
    /// entries' insert's `RETURNING` (never by reading `entries`, which a sibling CTE does not see), and
    /// without new entries no statement names that CTE.
    #[test]
    fn the_postgres_write_is_one_statement_that_finds_new_entries_in_their_returning() {
        let mut w = GroupWrite::new();
        w.push(&TOUCHED_SESSIONS, &["s-1"]).unwrap();
        w.push(&NEW_ENTRIES, &["x"]).unwrap();
        w.push(&HISTORY, &["y"]).unwrap();
        let sql = w.postgres(true);
        assert!(
            sql.starts_with("WITH touched_sessions AS (UPDATE sessions SET last_write_at = $1 ")
        );
        assert!(sql.contains("jsonb_array_elements_text($2::jsonb)"));
        assert!(sql.contains(", new_entries AS (INSERT INTO entries "));
        assert!(sql.contains("jsonb_array_elements($3::jsonb)"));
        assert!(sql.contains("RETURNING seq, session_key, mutation_id), new_history AS ("));
        assert!(
            sql.contains("COALESCE((j.value ->> 0)::bigint, (SELECT n.seq FROM new_entries AS n")
        );
        assert!(sql.contains("jsonb_array_elements($4::jsonb)"));
        assert!(sql.ends_with(
            "SELECT pg_notify($5, p) FROM unnest($6::text[]) WITH ORDINALITY AS u(p, i) ORDER BY i"
        ));
        assert!(!sql.contains("$now") && !sql.contains("$list") && !sql.contains("$new_seq"));

        let mut w = GroupWrite::new();
        w.push(&HISTORY, &["y"]).unwrap();
        let sql = w.postgres(false);
        assert!(!sql.contains("new_entries"));
        assert!(sql.contains("COALESCE((j.value ->> 0)::bigint, NULL::bigint)"));
        assert!(sql.ends_with(") SELECT 1"));
    }
}
