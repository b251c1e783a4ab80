//! One group commit's work (docs/ledger.md "Writing"): load what every queued command needs in a few
//! statements, decide each command in order against that state in memory (each decision sees the ones
//! before it), then write the final state of everything that changed in a few set-based statements.
//!
//! Why: a group costs about ten statements whatever its size (on SQLite run on the writer's own thread,
//! crate::direct; on Postgres each a round trip to the server).
//! Lists go to SQLite as one JSON text parameter each, read with `json_each`.

//!
//! By concern: the group's state and what it answers here; loading it in `load`; one method per
//! decision in `apply`; the final write in `write`, with its statements and their serialisers in
//! `statements`.

use std::collections::{HashMap, HashSet};

use crate::adapter::{Announcement, TurnChange};
use crate::command::{Actor, EntryKey, Evidence};
use crate::error::{LedgerError, Refusal};
use crate::ids::{LogicalTurnId, SessionKey};
use crate::machine::{Rejection, SessionState};
use crate::projection::project;
use crate::rows::EntryRow;
use crate::store::format_time;
use crate::wire::{EntryState, HistoryChange, HistoryKind, MutationOutcome};

mod apply;
mod load;
mod statements;
mod write;

use statements::HistoryOut;

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
    /// The deadline of an intent or fresh attempt that names none, in ms (docs/api.md "Deadlines").
    deadline_ms: i64,
    sessions: HashMap<String, SessionSlot>,
    turns: HashMap<Key, TurnSlot>,
    entries: HashMap<Key, EntrySlot>,
    /// Attempt ids to remember, per entry.
    attempts: Vec<(Key, String)>,
    attempts_seen: HashSet<(Key, String)>,
    /// The claims of the entries a claim or release named, read on first use, then kept up to date.
    claims: HashMap<Key, Option<ClaimHeld>>,
    /// Per entry and actor (`staff:<name>`) who claimed or released in this group: the times (ms) of
    /// that actor's `claim` and `release` rows of the entry within the rate window, newest first, at most
    /// [`crate::error::CLAIMS_PER_MINUTE`]: read on first use, then kept up to date (docs/api.md "Claims").
    claim_times: HashMap<(Key, String), Vec<i64>>,
    /// Evidence to record: entry, attempt, completed, source, reference, observed_at, provider_status.
    reconciliations: Vec<(Key, String, bool, Evidence)>,
    /// History rows to write, in the order of the changes (docs/ledger.md "History").
    history: Vec<HistoryOut>,
    /// Turns that took a revision in this group, in the order of their first change.
    changed_turns: Vec<Key>,
    /// The records this group announces live, with their turn and revision (Postgres sends them in
    /// the turn's notification when they fit, the crate's `notify` listener).
    announced: Vec<(Key, i64, MutationOutcome)>,
    /// Whether the group's changes are notified (Postgres); on SQLite the writer announces them itself
    /// and nothing is kept for notifications.
    notifies: bool,
    next_order: usize,
}

fn key_of(k: &EntryKey) -> Key {
    (
        k.session_key.as_str().to_owned(),
        k.mutation_id.as_str().to_owned(),
    )
}

impl Group {
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
    /// (Postgres, the crate's `notify` listener): each names the revisions the group took.
    pub(crate) fn notes(&self) -> Vec<crate::store::live::Note> {
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
                Some(crate::store::live::Note::turn(
                    key.0.clone(),
                    key.1.clone(),
                    slot.before + 1,
                    slot.latest,
                    records,
                ))
            })
            .collect()
    }
}

/// A decision that does not fit its action (the machine decides `Approve`, `Attach` and `Note` only for
/// their own actions): a fault of this code, answered as [`LedgerError::Internal`] (500) for that
/// command alone, never a panic of the writer task that serves every command.
fn mismatch(decision: &str) -> LedgerError {
    LedgerError::internal(format!(
        "the state machine decided {decision} for another action"
    ))
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
        deadline_at: row.deadline_at.map(format_time),
        settled_by: None,
        established_by: None,
    }
}

/// The rules on an action's own fields ([`crate::machine::check_fields`]), which the state machine checks
/// first: for a caller that must know an action is well formed before anything is written (a bulk
/// reconciliation checks the evidence its operations share, docs/api.md "Bulk actions"). `Invalid`
/// naming the field.
pub fn check_action_fields(action: &crate::command::Action) -> Result<(), LedgerError> {
    crate::machine::check_fields(action).map_err(|r| rejected(r, None))
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
