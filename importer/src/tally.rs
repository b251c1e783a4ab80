//! Counting what an import did, operation by operation: created, already present (a re-import), failed.

use std::collections::HashMap;

use ledger::command::{Action, Command};
use ledger::error::LedgerError;
use ledger::wire::EntryState;

/// What one applied operation did, for the tally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// Applied; the entry's state after it.
    Applied(EntryState),
    /// Refused as a transition (409): the entry's current, unchanged state.
    Refused(EntryState),
    /// Any other error (invalid field, unknown session, expired session, ...), as a sentence.
    Failed(String),
}

impl From<Result<EntryState, LedgerError>> for OpResult {
    /// One result of `Engine::apply_batch`, for a host that embeds the ledger: `Refused` keeps the entry's
    /// current state, any other error becomes its sentence.
    fn from(r: Result<EntryState, LedgerError>) -> Self {
        match r {
            Ok(state) => OpResult::Applied(state),
            Err(LedgerError::Refused { current, .. }) => OpResult::Refused(*current),
            Err(e) => OpResult::Failed(e.to_string()),
        }
    }
}

/// Counts of an import, by operation. A re-import of the same input counts everything as already present:
/// approve and intent are refused as redeliveries, settle as not in flight, and an identical metadata attach
/// leaves the revision as it was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportTally {
    /// Commands that changed the ledger.
    pub created: u64,
    /// Commands the ledger already held (refused transitions, no-op attaches).
    pub already_present: u64,
    /// Commands that failed, each with `session mutation: error`.
    pub failed: Vec<String>,
    /// Revision last seen per (session, mutation), to tell a no-op attach from a change.
    revisions: HashMap<(String, String), Option<i64>>,
}

impl ImportTally {
    /// Counts one operation's result.
    pub fn record(&mut self, op: &Command, result: OpResult) {
        let (session, mutation) = (op.key.session_key.as_str(), op.key.mutation_id.as_str());
        let key = (session.to_owned(), mutation.to_owned());
        match result {
            OpResult::Applied(state) => {
                let before = self.revisions.insert(key, state.revision);
                let no_op = matches!(op.action, Action::AttachMetadata { .. })
                    && before == Some(state.revision);
                if no_op {
                    self.already_present += 1;
                } else {
                    self.created += 1;
                }
            }
            OpResult::Refused(state) => {
                self.revisions.insert(key, state.revision);
                self.already_present += 1;
            }
            OpResult::Failed(e) => self.failed.push(format!("{session} {mutation}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use ledger::ids::SessionKey;
    use serde_json::json;

    use super::*;
    use crate::test_support::{assistant, call, importer, tool, user};
    use crate::ConversationPlan;

    /// What `outcomes import` does through the host API's batch, done by a host that embeds the ledger:
    /// every plan's operations in one `Engine::apply_batch`, each result counted.
    async fn record(engine: &ledger::Engine, plans: &[ConversationPlan]) -> ImportTally {
        let ops: Vec<Command> = plans
            .iter()
            .flat_map(ConversationPlan::operations)
            .collect();
        let results = engine.apply_batch(ops.clone()).await.expect("batch");
        let mut tally = ImportTally::default();
        for (op, result) in ops.iter().zip(results) {
            tally.record(op, result.into());
        }
        tally
    }

    #[tokio::test]
    async fn importing_twice_changes_nothing_the_second_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("ledger.sqlite");
        let ledger = ledger::Ledger::open(&db.to_string_lossy(), Default::default())
            .await
            .expect("ledger");
        let conv = json!({"id": "c", "messages": [
            user("go"),
            assistant(vec![call("a", "create_issue"), call("b", "create_issue")]),
            tool("a", json!("done")),
        ]});
        let plans = vec![importer().map_conversation(&conv).expect("a conversation")];
        let engine = ledger.engine();
        let first = record(&engine, &plans).await;
        assert_eq!((first.created, first.already_present), (6, 0));
        assert_eq!(first.failed, Vec::<String>::new());
        let second = record(&engine, &plans).await;
        assert_eq!((second.created, second.already_present), (0, 6));
        assert_eq!(second.failed, Vec::<String>::new());
        let key = SessionKey::parse("imp-c").expect("key");
        let turns = ledger.sessions().turns(&key).await.expect("turns");
        assert_eq!(turns.turns.len(), 1);
        assert_eq!(turns.turns[0].latest_revision, 4);
        assert_eq!(turns.turns[0].counts.completed, 1);
        assert_eq!(turns.turns[0].counts.outcome_unknown, 1);
    }
}
