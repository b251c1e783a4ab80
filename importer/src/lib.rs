//! Import of agent transcripts in the OpenAI chat format (docs/import.md "Import agent transcripts"): the pure
//! mapping from a conversation to ledger [`Command`](ledger::command::Command)s. `outcomes import` sends
//! them to a running server through the host API's batch (docs/api.md "Host write API (`/api/host`,
//! `Authorization: Bearer <host token>`)"); a host that embeds the ledger gives them to
//! `Engine::apply_batch` and counts the results with [`ImportTally`].
//!
//! Depends on `ledger` for the command type only (`command`, `ids`, `wire`, `error`), compiled without
//! its store. Modules, in the order of the work:
//! - [`config`]: the configuration file and its defaults;
//! - [`transcript`]: files, conversations and typed messages, each message deserialised on its own;
//! - [`classify`]: what a write call's result establishes;
//! - [`plan`]: session keys, turns, mutation ids and the commands of each conversation;
//! - [`tally`]: what the applied commands did (created, already present, failed).

pub mod classify;
pub mod config;
pub mod plan;
pub mod tally;
pub mod transcript;

pub use classify::Classification;
pub use config::{
    ClassifyConfig, ConfigError, FieldRule, ImportConfig, MetadataRule, DEFAULT_FAILED_PATTERNS,
    DEFAULT_TIMEOUT_PATTERNS, DEFAULT_UNKNOWN_PATTERNS,
};
pub use plan::{ConversationPlan, Importer, PlannedMutation, Problem, IMPORT_ATTEMPT_ID};
pub use tally::{ImportTally, OpResult};
pub use transcript::{parse_transcripts, Message, MessageError, Position, ToolCall};

/// Builders of conversations shared by the unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use ledger::command::Settlement;
    use ledger::wire::Reason;
    use serde_json::{json, Value};
    use sha2::{Digest, Sha256};

    use crate::{ConversationPlan, ImportConfig, Importer};

    pub(crate) fn importer() -> Importer {
        Importer::new("imp-", ["create_issue".to_owned()], ImportConfig::default())
            .expect("default config compiles")
    }

    pub(crate) fn call(id: &str, name: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{\"title\":\"secret\"}"}})
    }

    pub(crate) fn assistant(calls: Vec<Value>) -> Value {
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    }

    pub(crate) fn tool(id: &str, content: Value) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": content})
    }

    pub(crate) fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    pub(crate) fn statuses(plan: &ConversationPlan) -> Vec<(String, Settlement, Option<Reason>)> {
        plan.mutations
            .iter()
            .map(|m| {
                (
                    m.logical_turn_id.to_string(),
                    m.classification.settlement,
                    m.classification.reason,
                )
            })
            .collect()
    }

    pub(crate) fn mutation_id(session: &str, turn: usize, position: usize) -> String {
        format!(
            "{:x}",
            Sha256::digest(format!("{session}\u{1f}turn-{turn}\u{1f}{position}").as_bytes())
        )
    }
}
