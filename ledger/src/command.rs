//! The ledger's write command as data (docs/ledger.md "Commands"): which entry ([`EntryKey`]) and what to
//! do to it ([`Action`]). The host API, its batch, the importer and the tests all build this one type; its
//! serde form is exactly one item of `POST /api/host/batch` (docs/api.md): flat, tagged by `op`, e.g.
//! `{"op": "settle", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1", "status":
//! "completed"}`. Compiled without the store, so the browser can use it too. Identifiers are checked while
//! deserialising (docs/ledger.md "Entries and their states": non-empty, at most 256 bytes, no control
//! character).

use serde::{Deserialize, Serialize};

use crate::ids::{AttemptId, LogicalTurnId, MutationId, SessionKey, ToolName};
use crate::wire::{HostMetadata, LedgerStatus, Reason};

/// Most operations (commands) one `POST /api/host/batch` may carry (docs/api.md "Batch"): the server
/// refuses more, `outcomes import` sends at most this many per request.
pub const MAX_BATCH_OPERATIONS: usize = 1000;

/// The entry a command names: `(session_key, mutation_id)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EntryKey {
    pub session_key: SessionKey,
    pub mutation_id: MutationId,
}

/// One write: an entry and what to do to it. Serialised flat (the key's fields beside the action's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    #[serde(flatten)]
    pub key: EntryKey,
    #[serde(flatten)]
    pub action: Action,
}

impl Command {
    /// A command on `(session_key, mutation_id)`.
    pub fn new(session_key: SessionKey, mutation_id: MutationId, action: Action) -> Command {
        Command {
            key: EntryKey {
                session_key,
                mutation_id,
            },
            action,
        }
    }
}

/// How an in-flight attempt settled (`status` of a settle: `completed`, `failed`, `outcome_unknown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Settlement {
    /// The tool reported success: `completed`.
    Completed,
    /// The tool reported failure: `failed`.
    Failed,
    /// The result is not established (e.g. a timeout after the router was entered): `outcome_unknown`.
    OutcomeUnknown,
}

impl Settlement {
    /// The ledger status an entry settles to.
    pub fn status(self) -> LedgerStatus {
        match self {
            Settlement::Completed => LedgerStatus::Completed,
            Settlement::Failed => LedgerStatus::Failed,
            Settlement::OutcomeUnknown => LedgerStatus::OutcomeUnknown,
        }
    }
}

/// Authoritative evidence about the ORIGINAL attempt (seed 002, "Authenticated status of the original
/// attempt resolves the outcome"). An empty source or reference is not evidence; a field holding U+0000
/// is refused ([`NUL_REFUSED`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The qualified status provider that answered.
    pub source: String,
    /// The provider's reference for the original operation (e.g. `issue #419`).
    pub reference: String,
    /// When the provider observed the status: an RFC 3339 time (anything else is refused).
    pub observed_at: String,
    /// The provider's own status of the original attempt, when the host passed it through (issue 40,
    /// "Status checks"): `completed` or `not_accepted`, agreeing with the reconciliation's `completed`
    /// (anything else is refused, field `evidence.provider_status`). Kept with the evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_status: Option<String>,
}

/// The longest deadline a host may ask for, in seconds: 7 days (docs/api.md "Deadlines").
pub const DEADLINE_MAX_SECS: u32 = 604_800;

/// The most bytes of a staff note's text ([`Action::Note`]); the least is 1.
pub const NOTE_MAX_BYTES: usize = 4096;

/// The message of the `Invalid` refusal of a free-text field (evidence, a note's text) holding U+0000
/// (NUL): Postgres `text` cannot hold it, so no backend stores it (docs/api.md "Text a client sends").
/// Identifiers refuse it as a control character; host metadata drops or withholds it when sanitised.
pub const NUL_REFUSED: &str = "holds U+0000 (NUL), which the ledger never stores: remove it";

/// Who asks for a change: carried beside the [`Command`] (commands stay data; `Engine::apply_as`) and
/// recorded on the change's history row (docs/ledger.md "History"). Stored and served as `host` or
/// `staff:<name>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Actor {
    /// The host API, its batch, the importer and legacy imports (`Engine::apply`).
    #[default]
    Host,
    /// A staff member, by account name (docs/access.md).
    Staff(String),
    /// The ledger itself: its settlement of an entry whose deadline passed (docs/api.md "Deadlines").
    Ledger,
}

impl Actor {
    /// The stored and served spelling: `host` or `staff:<name>`.
    pub fn spelling(&self) -> String {
        match self {
            Actor::Host => "host".to_owned(),
            Actor::Staff(name) => format!("staff:{name}"),
            Actor::Ledger => "ledger".to_owned(),
        }
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.spelling())
    }
}

/// What a host asks of one entry (the entry is named by the [`Command`]'s key). Tagged by `op`: `approve`,
/// `intent`, `settle`, `cancel`, `reconcile`, `metadata`, `attempt`, and `note` (a staff note: an action
/// of the ledger, not an op of the host API's batch, whose parser names its ops one by one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Action {
    /// Records an approved mutation in `logical_turn_id` (the session and turn are created when new).
    /// Not published, no revision. `commissioned_after`, when given, names another mutation of the same
    /// session, already recorded, that this one was commissioned after (stored on the entry, read by
    /// `SessionManager::operation_history` both ways); itself, or a mutation the session does not hold, is
    /// `Invalid` on `commissioned_after`. Omitted from the serde form when `None`. `traceparent`, when
    /// given, is the host's W3C trace context (checked by [`crate::traceparent::Traceparent::parse`], stored on
    /// the entry, copied into the OpenTelemetry outbox: the span `mutation_outcome {tool}` is its child).
    Approve {
        logical_turn_id: LogicalTurnId,
        tool: ToolName,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commissioned_after: Option<MutationId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        traceparent: Option<crate::traceparent::Traceparent>,
    },
    /// Dispatch is about to enter the router: `approved` → `execution_started` under `attempt_id`, with
    /// its deadline `deadline_secs` from now (1 to [`DEADLINE_MAX_SECS`]; `None`: the ledger's default,
    /// docs/api.md "Deadlines").
    #[serde(rename = "intent")]
    RecordIntent {
        attempt_id: AttemptId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline_secs: Option<u32>,
    },
    /// The in-flight attempt settled; `reason` may only be `execution_timeout` with `OutcomeUnknown`.
    Settle {
        attempt_id: AttemptId,
        #[serde(rename = "status")]
        settlement: Settlement,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<Reason>,
    },
    /// The in-flight attempt never entered the router: back to `approved` after intent (`not_executed`);
    /// `reason` may only be `pre_dispatch_deadline`.
    Cancel {
        attempt_id: AttemptId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<Reason>,
    },
    /// Authoritative evidence about the original attempt settles an in-flight or unknown entry:
    /// `completed`, or `not_executed` when `completed` is false.
    Reconcile {
        attempt_id: AttemptId,
        completed: bool,
        evidence: Evidence,
    },
    /// Sets the host metadata (`id`, `url`, `title`) of a published entry. The engine stores it sanitised,
    /// of any raw size; metadata identical to the stored one once sanitised changes nothing.
    #[serde(rename = "metadata")]
    AttachMetadata {
        #[serde(flatten)]
        metadata: HostMetadata,
    },
    /// Starts a new attempt of a `not_executed` entry under an attempt id the entry never had, with its
    /// deadline as [`Action::RecordIntent`]'s.
    #[serde(rename = "attempt")]
    FreshAttempt {
        attempt_id: AttemptId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline_secs: Option<u32>,
    },
    /// The host still works on the attempt in flight: its deadline becomes now + `deadline_secs` (1 to
    /// [`DEADLINE_MAX_SECS`]), never earlier than it was. Only while `execution_started` under that
    /// attempt; no revision, no event, no history row (docs/api.md "Deadlines").
    #[serde(rename = "deadline")]
    ExtendDeadline {
        attempt_id: AttemptId,
        deadline_secs: u32,
    },
    /// The ledger's own settlement of an entry still `execution_started` under `attempt_id` past its
    /// deadline: `outcome_unknown` with `execution_timeout`, settled by the ledger (docs/api.md
    /// "Deadlines"). Applied only with [`Actor::Ledger`] (the sweep); no host API names it.
    #[serde(rename = "expire")]
    Expire { attempt_id: AttemptId },
    /// A staff note on an entry: `text` of 1 to [`NOTE_MAX_BYTES`] (4096) bytes without U+0000, anything
    /// else `Invalid` on `text`. Kept as one `note` history row with its actor; no revision, no live event, the entry's
    /// state unchanged, and not session activity (the time to live still counts from the last change).
    #[serde(rename = "note")]
    Note { text: String },
    /// A staff member takes the entry ("I am on it", docs/api.md "Claims"): one `claim` history row with
    /// its actor, unless the actor already holds it (nothing is written); held by another staff member,
    /// `LedgerError::AlreadyClaimed`. No revision, no live event, not session activity.
    #[serde(rename = "claim")]
    Claim,
    /// Ends the entry's claim, whoever holds it: one `release` history row with its actor when a claim was
    /// held, nothing otherwise. No revision, no live event, not session activity.
    #[serde(rename = "release")]
    Release,
    /// Hands the entry's claim to the staff member `to` (docs/api.md "Claims"): one `claim` history row
    /// by its actor whose `note` is `to`, unless `to` holds it already (nothing is written); held by a
    /// third staff member (neither the actor nor `to`), `LedgerError::AlreadyClaimed`. `to` must be a
    /// staff account's name (the caller checks that it exists). Counts as a claim for the actor's rate. No
    /// revision, no live event, not session activity.
    #[serde(rename = "assign")]
    Assign { to: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> (SessionKey, MutationId) {
        (
            SessionKey::parse("s-1").unwrap(),
            MutationId::parse("m-1").unwrap(),
        )
    }

    fn command(action: Action) -> Command {
        let (s, m) = key();
        Command::new(s, m, action)
    }

    fn attempt() -> AttemptId {
        AttemptId::parse("a-1").unwrap()
    }

    /// Each action's serde form is exactly the batch item of docs/api.md, both ways.
    #[test]
    fn every_command_is_a_flat_batch_item_tagged_by_op() {
        let cases = [
            (
                command(Action::Approve {
                    logical_turn_id: LogicalTurnId::parse("turn-1").unwrap(),
                    tool: ToolName::parse("github.create_issue").unwrap(),
                    commissioned_after: None,
                    traceparent: None,
                }),
                json!({"op": "approve", "session_key": "s-1", "mutation_id": "m-1",
                       "logical_turn_id": "turn-1", "tool": "github.create_issue"}),
            ),
            (
                command(Action::Approve {
                    logical_turn_id: LogicalTurnId::parse("turn-1").unwrap(),
                    tool: ToolName::parse("github.create_issue").unwrap(),
                    commissioned_after: Some(MutationId::parse("m-0").unwrap()),
                    traceparent: None,
                }),
                json!({"op": "approve", "session_key": "s-1", "mutation_id": "m-1",
                       "logical_turn_id": "turn-1", "tool": "github.create_issue",
                       "commissioned_after": "m-0"}),
            ),
            (
                command(Action::RecordIntent {
                    attempt_id: attempt(),
                    deadline_secs: None,
                }),
                json!({"op": "intent", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1"}),
            ),
            (
                command(Action::RecordIntent {
                    attempt_id: attempt(),
                    deadline_secs: Some(30),
                }),
                json!({"op": "intent", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1",
                       "deadline_secs": 30}),
            ),
            (
                command(Action::ExtendDeadline {
                    attempt_id: attempt(),
                    deadline_secs: 60,
                }),
                json!({"op": "deadline", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1",
                       "deadline_secs": 60}),
            ),
            (
                command(Action::Settle {
                    attempt_id: attempt(),
                    settlement: Settlement::OutcomeUnknown,
                    reason: Some(Reason::ExecutionTimeout),
                }),
                json!({"op": "settle", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1",
                       "status": "outcome_unknown", "reason": "execution_timeout"}),
            ),
            (
                command(Action::Settle {
                    attempt_id: attempt(),
                    settlement: Settlement::Completed,
                    reason: None,
                }),
                json!({"op": "settle", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1",
                       "status": "completed"}),
            ),
            (
                command(Action::Cancel {
                    attempt_id: attempt(),
                    reason: Some(Reason::PreDispatchDeadline),
                }),
                json!({"op": "cancel", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1",
                       "reason": "pre_dispatch_deadline"}),
            ),
            (
                command(Action::Reconcile {
                    attempt_id: attempt(),
                    completed: false,
                    evidence: Evidence {
                        source: "github".into(),
                        reference: "issue #419".into(),
                        observed_at: "2026-11-29T10:00:00Z".into(),
                        provider_status: None,
                    },
                }),
                json!({"op": "reconcile", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1",
                       "completed": false, "evidence": {"source": "github", "reference": "issue #419",
                       "observed_at": "2026-11-29T10:00:00Z"}}),
            ),
            (
                command(Action::AttachMetadata {
                    metadata: HostMetadata {
                        id: Some("419".into()),
                        url: Some("https://github.com/o/r/issues/419".into()),
                        title: None,
                    },
                }),
                json!({"op": "metadata", "session_key": "s-1", "mutation_id": "m-1", "id": "419",
                       "url": "https://github.com/o/r/issues/419", "title": null}),
            ),
            (
                command(Action::FreshAttempt {
                    attempt_id: attempt(),
                    deadline_secs: None,
                }),
                json!({"op": "attempt", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1"}),
            ),
            (
                command(Action::Note {
                    text: "called the customer".into(),
                }),
                json!({"op": "note", "session_key": "s-1", "mutation_id": "m-1",
                       "text": "called the customer"}),
            ),
        ];
        for (command, item) in cases {
            assert_eq!(serde_json::to_value(&command).unwrap(), item);
            assert_eq!(serde_json::from_value::<Command>(item).unwrap(), command);
        }
    }

    #[test]
    fn an_actor_is_spelled_host_or_staff_and_name() {
        assert_eq!(Actor::Host.spelling(), "host");
        assert_eq!(Actor::default(), Actor::Host);
        assert_eq!(Actor::Staff("ada".into()).to_string(), "staff:ada");
        assert_eq!(Actor::Ledger.spelling(), "ledger");
    }

    #[test]
    fn a_bad_identifier_op_or_status_does_not_deserialise() {
        for item in [
            json!({"op": "intent", "session_key": "", "mutation_id": "m-1", "attempt_id": "a-1"}),
            json!({"op": "intent", "session_key": "s-1", "mutation_id": "m\u{7}", "attempt_id": "a-1"}),
            json!({"op": "intent", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a".repeat(257)}),
            json!({"op": "resend", "session_key": "s-1", "mutation_id": "m-1"}),
            json!({"op": "settle", "session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1",
                   "status": "done"}),
            json!({"session_key": "s-1", "mutation_id": "m-1", "attempt_id": "a-1"}),
            json!({"op": "approve", "session_key": "s-1", "mutation_id": "m-1",
                   "logical_turn_id": "turn-1", "tool": "t", "commissioned_after": ""}),
        ] {
            assert!(
                serde_json::from_value::<Command>(item.clone()).is_err(),
                "{item}"
            );
        }
    }
}
