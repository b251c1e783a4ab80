//! The turn timeline's model (docs/design.md "What the person sees"): every event is an upsert by `mutation_id` that
//! keeps the higher revision, so replays, duplicates and out-of-order delivery never duplicate or regress a
//! row. Rows keep the recorded order; a mutation first seen live is appended. Plain data, tested natively.

use ledger::wire::{LedgerStatus, MutationOutcome, PublishedStatus, TurnEntries};

/// One row: the latest projection seen for a mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `None` for legacy entries (no revision).
    pub revision: Option<i64>,
    pub outcome: MutationOutcome,
    /// `execution_started` (in flight) at the last read of the entries API. Records do not carry the ledger
    /// status, so an upsert clears it and [`Timeline::refresh_ledger_status`] sets it again.
    pub in_flight: bool,
}

/// The rows of one turn, in recorded order, and the cursor (highest revision seen).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    rows: Vec<Row>,
    cursor: i64,
}

impl Timeline {
    /// A timeline from the server-rendered entries; the cursor is the turn's latest revision.
    pub fn from_entries(entries: &TurnEntries) -> Timeline {
        Timeline {
            rows: entries
                .entries
                .iter()
                .map(|e| Row {
                    revision: e.mutation_revision,
                    outcome: e.outcome.clone(),
                    in_flight: e.ledger_status == LedgerStatus::ExecutionStarted,
                })
                .collect(),
            cursor: entries.latest_revision,
        }
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The highest revision seen.
    pub fn cursor(&self) -> i64 {
        self.cursor
    }

    /// Starts over (after a 409: the cursor is past the turn's latest revision, so the revisions held are
    /// not the server's any more): the full replay that follows replaces every row it sends.
    pub fn reset_cursor(&mut self) {
        self.cursor = 0;
        for row in &mut self.rows {
            row.revision = None;
        }
    }

    /// Upserts one event. Returns whether anything changed. A row is replaced only by a higher revision
    /// (a legacy row, without revision, by any revisioned event); an equal or lower one is ignored.
    pub fn upsert(&mut self, revision: Option<i64>, outcome: MutationOutcome) -> bool {
        if let Some(r) = revision {
            self.cursor = self.cursor.max(r);
        }
        match self
            .rows
            .iter_mut()
            .find(|r| r.outcome.mutation_id == outcome.mutation_id)
        {
            Some(row) => {
                let newer = match (row.revision, revision) {
                    (Some(have), Some(got)) => got > have,
                    (None, Some(_)) => true,
                    (_, None) => false,
                };
                if !newer {
                    return false;
                }
                row.in_flight = false;
                row.revision = revision;
                row.outcome = outcome;
                true
            }
            None => {
                self.rows.push(Row {
                    revision,
                    outcome,
                    in_flight: false,
                });
                true
            }
        }
    }

    /// Marks rows in flight or settled from a fresh read of the entries (ledger status is not in the record).
    pub fn refresh_ledger_status(&mut self, entries: &TurnEntries) {
        for e in &entries.entries {
            if let Some(row) = self.rows.iter_mut().find(|r| {
                r.outcome.mutation_id == e.outcome.mutation_id && r.revision == e.mutation_revision
            }) {
                row.in_flight = e.ledger_status == LedgerStatus::ExecutionStarted;
            }
        }
    }

    /// Counts by published status.
    pub fn count(&self, status: PublishedStatus) -> usize {
        self.rows
            .iter()
            .filter(|r| r.outcome.status == status)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ledger::wire::SCHEMA;

    fn outcome(id: &str, status: PublishedStatus) -> MutationOutcome {
        MutationOutcome {
            schema: SCHEMA.into(),
            logical_turn_id: "t".into(),
            mutation_id: id.into(),
            tool: "tool".into(),
            status,
            resource_id: None,
            url: None,
            title: None,
            reason: None,
        }
    }

    #[test]
    fn replayed_unknown_at_lower_revision_never_rolls_a_row_back() {
        let mut t = Timeline::default();
        assert!(t.upsert(Some(7), outcome("a", PublishedStatus::Completed)));
        assert!(!t.upsert(Some(3), outcome("a", PublishedStatus::OutcomeUnknown)));
        assert_eq!(t.rows()[0].outcome.status, PublishedStatus::Completed);
        assert_eq!(t.rows()[0].revision, Some(7));
        assert_eq!(t.cursor(), 7);
    }

    #[test]
    fn after_a_reset_the_full_replay_replaces_rows_at_any_revision() {
        let mut t = Timeline::default();
        t.upsert(Some(9), outcome("a", PublishedStatus::OutcomeUnknown));
        t.reset_cursor();
        assert_eq!(t.cursor(), 0);
        assert!(t.upsert(Some(2), outcome("a", PublishedStatus::Completed)));
        assert_eq!(t.rows().len(), 1);
        assert_eq!(t.rows()[0].outcome.status, PublishedStatus::Completed);
        assert_eq!(t.cursor(), 2);
        assert!(!t.upsert(Some(1), outcome("a", PublishedStatus::Failed)));
    }

    #[test]
    fn duplicates_never_add_a_row_and_new_mutations_are_appended() {
        let mut t = Timeline::default();
        t.upsert(Some(1), outcome("a", PublishedStatus::OutcomeUnknown));
        t.upsert(Some(2), outcome("b", PublishedStatus::Failed));
        assert!(!t.upsert(Some(2), outcome("b", PublishedStatus::Failed)));
        assert!(t.upsert(Some(3), outcome("a", PublishedStatus::Completed)));
        let ids: Vec<_> = t
            .rows()
            .iter()
            .map(|r| r.outcome.mutation_id.as_str())
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(t.count(PublishedStatus::Completed), 1);
        assert_eq!(t.count(PublishedStatus::OutcomeUnknown), 0);
    }

    #[test]
    fn a_legacy_row_is_replaced_by_any_revisioned_event_but_not_by_another_legacy_one() {
        let mut t = Timeline::default();
        t.upsert(None, outcome("a", PublishedStatus::OutcomeUnknown));
        assert!(!t.upsert(None, outcome("a", PublishedStatus::Completed)));
        assert!(t.upsert(Some(1), outcome("a", PublishedStatus::Completed)));
        assert_eq!(t.cursor(), 1);
    }
}

/// The live connection's state, as the indicator shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Server-rendered snapshot; the browser has not connected (yet, or at all without JavaScript).
    Snapshot,
    Connecting,
    Live,
    /// The browser is reconnecting by itself.
    Reconnecting,
    /// Not connected since this local time; retrying.
    Stale {
        since: String,
    },
    /// The session or turn is gone (404): nothing more will come.
    Gone {
        message: String,
    },
    /// The caller's credential stopped holding (401: a sign-out or idle expiry, a revoked or expired
    /// viewer link): nothing more will come until the page is loaded again, which asks for a sign-in.
    AccessEnded,
}

impl Connection {
    /// Words for the indicator.
    pub fn label(&self) -> String {
        match self {
            Connection::Snapshot => {
                "Snapshot (live updates start once the page is interactive)".into()
            }
            Connection::Connecting => "Connecting…".into(),
            Connection::Live => "Live".into(),
            Connection::Reconnecting => "Reconnecting…".into(),
            Connection::Stale { since } => format!("Stale since {since}; retrying"),
            Connection::Gone { message } => message.clone(),
            Connection::AccessEnded => {
                "Not live: your access ended (signed out, or the shared link was revoked or expired). Reload to sign in.".into()
            }
        }
    }

    /// A stable name for tests and styling.
    pub fn name(&self) -> &'static str {
        match self {
            Connection::Snapshot => "snapshot",
            Connection::Connecting => "connecting",
            Connection::Live => "live",
            Connection::Reconnecting => "reconnecting",
            Connection::Stale { .. } => "stale",
            Connection::Gone { .. } => "gone",
            Connection::AccessEnded => "access_ended",
        }
    }
}
