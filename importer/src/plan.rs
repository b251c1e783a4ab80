//! Planning: from one conversation to the ledger commands that record its write calls (docs/import.md
//! "Import agent transcripts"):
//! - one conversation is one session: key = prefix + the conversation's `id` (a non-empty string or a
//!   number) when it has one, else prefix + the first 32 hex digits of the SHA-256 of its JSON (compact, as
//!   parsed). Identical conversations therefore share a session, wherever they sit in which file.
//! - logical turn `turn-N` where N counts the user messages so far (`turn-0` before the first one).
//! - every call of a write tool is one mutation: approve + intent (attempt [`IMPORT_ATTEMPT_ID`]) + settle,
//!   and a metadata attach when the config says how to find it. The mutation id is the SHA-256 (hex) of the
//!   session key, the turn number and the call's position among all tool calls of that turn, so it is
//!   stable across re-imports and unique even when a log repeats a `tool_call_id`.
//! - results are matched to calls by `tool_call_id`; when an id repeats, results are matched in order (the
//!   first result to the earliest call still waiting under that id).
//! - tool arguments and results are never stored; only the classification and, when configured, the
//!   resource id, url and title taken from the result become host metadata (sanitised by the ledger anyway).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use ledger::command::{Action, Command};
use ledger::ids::{AttemptId, IdError, LogicalTurnId, MutationId, SessionKey, ToolName};
use ledger::wire::HostMetadata;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::classify::{Classification, Classifier};
use crate::config::{check_pointer, ConfigError, ImportConfig, MetadataRule};
use crate::transcript::{messages, Message, ToolCall};

/// The attempt id of every imported mutation (a transcript shows one attempt per call).
pub const IMPORT_ATTEMPT_ID: &str = "import-1";

/// Something in the input that was skipped, with where it was: message and tool call indexes are 0-based
/// positions inside the conversation and inside the message's `tool_calls`. Displayed as `message m: tool
/// call c: what` (each position only when known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub message: Option<usize>,
    pub tool_call: Option<usize>,
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(m) = self.message {
            write!(f, "message {m}: ")?;
        }
        if let Some(c) = self.tool_call {
            write!(f, "tool call {c}: ")?;
        }
        f.write_str(&self.what)
    }
}

/// One write call of a conversation, ready to be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedMutation {
    pub logical_turn_id: LogicalTurnId,
    pub mutation_id: MutationId,
    pub tool: ToolName,
    pub classification: Classification,
    pub metadata: Option<HostMetadata>,
}

/// The ledger writes of one conversation, and what was skipped in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationPlan {
    pub session_key: SessionKey,
    /// Write calls in conversation order.
    pub mutations: Vec<PlannedMutation>,
    /// Malformed messages and tool calls, skipped; results matching no call.
    pub problems: Vec<Problem>,
}

impl ConversationPlan {
    /// approve, intent, settle (and metadata when there is some) of each mutation, in order: the items of
    /// `POST /api/host/batch` (docs/api.md), or of `Engine::apply_batch` for a host that embeds the ledger.
    pub fn operations(&self) -> Vec<Command> {
        let attempt = || AttemptId::parse(IMPORT_ATTEMPT_ID).expect("a valid constant");
        let mut ops = Vec::with_capacity(self.mutations.len() * 4);
        for m in &self.mutations {
            let command =
                |action| Command::new(self.session_key.clone(), m.mutation_id.clone(), action);
            ops.push(command(Action::Approve {
                logical_turn_id: m.logical_turn_id.clone(),
                tool: m.tool.clone(),
                commissioned_after: None,
                traceparent: None,
            }));
            ops.push(command(Action::RecordIntent {
                deadline_secs: None,
                attempt_id: attempt(),
            }));
            ops.push(command(Action::Settle {
                attempt_id: attempt(),
                settlement: m.classification.settlement,
                reason: m.classification.reason,
            }));
            if let Some(metadata) = &m.metadata {
                ops.push(command(Action::AttachMetadata {
                    metadata: metadata.clone(),
                }));
            }
        }
        ops
    }
}

/// The compiled mapping: session prefix, write tools, classification patterns, metadata rules.
#[derive(Debug, Clone)]
pub struct Importer {
    prefix: String,
    write_tools: HashSet<String>,
    classifier: Classifier,
    metadata: BTreeMap<String, MetadataRule>,
}

impl Importer {
    /// Compiles `config` with the session key prefix and the write tools named outside the config.
    /// Errors, checked in this order: no write tool at all, a pointer that is not a JSON pointer (field
    /// rules, then metadata rules), a pattern that is not a regular expression.
    pub fn new(
        session_prefix: &str,
        write_tools: impl IntoIterator<Item = String>,
        config: ImportConfig,
    ) -> Result<Self, ConfigError> {
        let write_tools: HashSet<String> = write_tools
            .into_iter()
            .chain(config.write_tools)
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect();
        if write_tools.is_empty() {
            return Err(ConfigError::NoWriteTools);
        }
        let c = config.classify;
        for (i, rule) in c.failed_fields.iter().enumerate() {
            check_pointer(format!("classify.failed_fields[{i}]"), &rule.pointer)?;
        }
        for (tool, rule) in &config.metadata {
            for (name, pointer) in [
                ("id_pointer", &rule.id_pointer),
                ("url_pointer", &rule.url_pointer),
                ("title_pointer", &rule.title_pointer),
            ] {
                if let Some(p) = pointer {
                    check_pointer(format!("metadata.{tool}.{name}"), p)?;
                }
            }
        }
        Ok(Importer {
            prefix: session_prefix.to_owned(),
            write_tools,
            classifier: Classifier::compile(c)?,
            metadata: config.metadata,
        })
    }

    /// What a result establishes (the rules are in `classify`'s module docs); `None` is a call whose
    /// result never came (the reply was lost).
    pub fn classify(&self, result: Option<&str>) -> Classification {
        self.classifier.classify(result)
    }

    /// The session key of a conversation (see the module docs). Errors when prefix + id is not a valid
    /// identifier (empty, over 256 bytes, a control character).
    pub fn session_key(&self, conversation: &Value) -> Result<SessionKey, IdError> {
        let own = match conversation.get("id") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let id = own.unwrap_or_else(|| {
            let json = serde_json::to_vec(conversation).unwrap_or_default();
            let digest = format!("{:x}", Sha256::digest(&json));
            digest[..32].to_owned()
        });
        SessionKey::parse(format!("{}{id}", self.prefix))
    }

    /// Maps one conversation to its ledger writes. `Err` when the conversation itself is unusable (not a
    /// list of messages nor an object holding one, or an invalid session key); malformed messages and tool
    /// calls inside it are skipped and listed in [`ConversationPlan::problems`].
    pub fn map_conversation(&self, conversation: &Value) -> Result<ConversationPlan, String> {
        let messages = messages(conversation)?;
        let session_key = self
            .session_key(conversation)
            .map_err(|e| format!("session key: {e}"))?;
        let walk = walk(messages);
        let mut problems = walk.problems;
        let mut mutations = Vec::new();
        for call in walk.calls {
            if !self.write_tools.contains(&call.name) {
                continue;
            }
            let at = |what: String| Problem {
                message: Some(call.message),
                tool_call: Some(call.index),
                what,
            };
            let tool = match ToolName::parse(call.name.clone()) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(at(format!("tool name: {e}")));
                    continue;
                }
            };
            let turn = format!("turn-{}", call.turn);
            let logical_turn_id = match LogicalTurnId::parse(turn.clone()) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(at(format!("logical turn: {e}")));
                    continue;
                }
            };
            let digest = Sha256::digest(
                format!("{}\u{1f}{turn}\u{1f}{}", session_key, call.position).as_bytes(),
            );
            let mutation_id = match MutationId::parse(format!("{digest:x}")) {
                Ok(m) => m,
                Err(e) => {
                    problems.push(at(format!("mutation id: {e}")));
                    continue;
                }
            };
            mutations.push(PlannedMutation {
                logical_turn_id,
                mutation_id,
                classification: self.classify(call.result.as_deref()),
                metadata: self.metadata_of(&call.name, call.result.as_deref()),
                tool,
            });
        }
        Ok(ConversationPlan {
            session_key,
            mutations,
            problems,
        })
    }

    /// The host metadata of a write call's result by its tool's [`MetadataRule`]; `None` without a rule or
    /// when nothing was found. `{id}` in the url template is form-encoded with a space as `%20` (a template
    /// may put it in a path or a query).
    fn metadata_of(&self, tool: &str, result: Option<&str>) -> Option<HostMetadata> {
        let rule = self.metadata.get(tool)?;
        let json: Option<Value> = result.and_then(|r| serde_json::from_str(r).ok());
        let at = |pointer: &Option<String>| -> Option<String> {
            let v = json.as_ref()?.pointer(pointer.as_deref()?)?;
            match v {
                Value::String(s) if !s.is_empty() => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        };
        let id = at(&rule.id_pointer);
        let fill = |template: &Option<String>, encode: bool| -> Option<String> {
            let template = template.as_deref()?;
            if !template.contains("{id}") {
                return Some(template.to_owned());
            }
            let id = id.as_deref()?;
            let id = if encode {
                url::form_urlencoded::byte_serialize(id.as_bytes())
                    .collect::<String>()
                    .replace('+', "%20")
            } else {
                id.to_owned()
            };
            Some(template.replace("{id}", &id))
        };
        let url = at(&rule.url_pointer).or_else(|| fill(&rule.url_template, true));
        let title = at(&rule.title_pointer).or_else(|| fill(&rule.title_template, false));
        if id.is_none() && url.is_none() && title.is_none() {
            return None;
        }
        Some(HostMetadata { id, url, title })
    }
}

/// One tool call seen in a conversation.
#[derive(Debug)]
struct Call {
    /// Index of the assistant message and of the call in its `tool_calls`.
    message: usize,
    index: usize,
    turn: usize,
    /// Position among all tool calls of the turn.
    position: usize,
    name: String,
    result: Option<String>,
}

struct Walk {
    calls: Vec<Call>,
    problems: Vec<Problem>,
}

/// Reads the messages in order ([`Message::read`], each on its own): counts turns and tool call
/// positions, matches results to calls, and notes every message or call that was skipped.
fn walk(messages: &[Value]) -> Walk {
    let mut calls: Vec<Call> = Vec::new();
    let mut problems = Vec::new();
    let mut waiting: HashMap<String, VecDeque<usize>> = HashMap::new();
    let mut turn = 0;
    let mut position = 0;
    for (mi, message) in messages.iter().enumerate() {
        let mut problem = |tool_call: Option<usize>, what: &str| {
            problems.push(Problem {
                message: Some(mi),
                tool_call,
                what: what.to_owned(),
            })
        };
        match Message::read(message) {
            Err(e) => problem(None, &e.to_string()),
            Ok(Message::Instructions) => {}
            Ok(Message::User) => {
                turn += 1;
                position = 0;
            }
            Ok(Message::Assistant { tool_calls }) => {
                for (ci, tc) in tool_calls.into_iter().enumerate() {
                    let this = position;
                    position += 1;
                    let (id, name) = match tc {
                        ToolCall::NotAFunction => continue,
                        ToolCall::Unnamed => {
                            problem(Some(ci), "tool call without `function.name`");
                            continue;
                        }
                        ToolCall::Function { id, name } => (id, name),
                    };
                    match id {
                        Some(id) => waiting.entry(id).or_default().push_back(calls.len()),
                        None => problem(
                            Some(ci),
                            "tool call without `id`: its result cannot be matched",
                        ),
                    }
                    calls.push(Call {
                        message: mi,
                        index: ci,
                        turn,
                        position: this,
                        name,
                        result: None,
                    });
                }
            }
            Ok(Message::Tool { tool_call_id, text }) => {
                match waiting.get_mut(&tool_call_id).and_then(VecDeque::pop_front) {
                    Some(call) => calls[call].result = Some(text),
                    None => problem(
                        None,
                        &format!(
                            "tool result for {tool_call_id:?} matches no call waiting for a result"
                        ),
                    ),
                }
            }
        }
    }
    Walk { calls, problems }
}

#[cfg(test)]
mod tests {
    use ledger::command::Settlement;
    use serde_json::json;

    use super::*;
    use crate::test_support::{assistant, call, importer, mutation_id, statuses, tool, user};
    use crate::ImportConfig;

    #[test]
    fn repeated_tool_call_ids_are_matched_to_results_in_order() {
        let conv = json!({"id": "c1", "messages": [
            user("open two issues"),
            assistant(vec![call("call_0", "create_issue")]),
            tool("call_0", json!("Error: title missing")),
            assistant(vec![call("call_0", "create_issue")]),
            tool("call_0", json!("{\"number\": 7}")),
        ]});
        let plan = importer().map_conversation(&conv).expect("a conversation");
        assert_eq!(plan.session_key.as_str(), "imp-c1");
        assert_eq!(
            statuses(&plan),
            vec![
                ("turn-1".into(), Settlement::Failed, None),
                ("turn-1".into(), Settlement::Completed, None),
            ]
        );
        let ids: Vec<&str> = plan
            .mutations
            .iter()
            .map(|m| m.mutation_id.as_str())
            .collect();
        assert_eq!(
            ids,
            vec![mutation_id("imp-c1", 1, 0), mutation_id("imp-c1", 1, 1)]
        );
        assert_eq!(plan.problems, vec![]);
    }

    #[test]
    fn a_call_without_a_result_is_unknown_because_the_reply_was_lost() {
        let conv = json!([
            user("create it"),
            assistant(vec![call("a", "create_issue")]),
            user("did it work?"),
        ]);
        let plan = importer().map_conversation(&conv).expect("a conversation");
        assert_eq!(
            statuses(&plan),
            vec![("turn-1".into(), Settlement::OutcomeUnknown, None)]
        );
    }

    #[test]
    fn a_conversation_without_writes_has_no_mutations() {
        let conv = json!({"messages": [
            {"role": "system", "content": "be brief"},
            user("what is open?"),
            assistant(vec![call("r1", "list_issues")]),
            tool("r1", json!("[]")),
            {"role": "assistant", "content": "nothing is open"},
        ]});
        let plan = importer().map_conversation(&conv).expect("a conversation");
        assert_eq!(plan.mutations, vec![]);
        assert_eq!(plan.problems, vec![]);
        assert_eq!(plan.operations(), vec![]);
    }

    #[test]
    fn content_as_an_array_of_parts_is_joined_text() {
        let conv = json!([
            user("go"),
            assistant(vec![call("a", "create_issue"), call("b", "create_issue")]),
            tool(
                "a",
                json!([{"type": "text", "text": "Error: "}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "quota"}])
            ),
            tool("b", json!([{"type": "text", "text": "created #9"}])),
        ]);
        let plan = importer().map_conversation(&conv).expect("a conversation");
        assert_eq!(
            statuses(&plan),
            vec![
                ("turn-1".into(), Settlement::Failed, None),
                ("turn-1".into(), Settlement::Completed, None),
            ]
        );
        assert_eq!(
            Message::read(
                &json!({"role": "tool", "tool_call_id": "x", "content": [{"text": "a"}, "b"]})
            ),
            Ok(Message::Tool {
                tool_call_id: "x".into(),
                text: "a\nb".into()
            })
        );
    }

    #[test]
    fn a_traj_wrapper_is_a_conversation_keyed_by_its_content_hash() {
        let messages = json!([
            user("go"),
            assistant(vec![call("a", "create_issue")]),
            tool("a", json!("ok"))
        ]);
        let conv = json!({"traj": messages});
        let plan = importer().map_conversation(&conv).expect("a conversation");
        let digest = format!(
            "{:x}",
            Sha256::digest(serde_json::to_vec(&conv).expect("json"))
        );
        assert_eq!(plan.session_key.as_str(), format!("imp-{}", &digest[..32]));
        assert_eq!(
            statuses(&plan),
            vec![("turn-1".into(), Settlement::Completed, None)]
        );
        // The same content maps to the same session and mutation ids again.
        assert_eq!(importer().map_conversation(&conv), Ok(plan));
    }

    #[test]
    fn malformed_messages_are_reported_with_their_position_and_skipped() {
        let conv = json!([
            user("go"),
            "not a message",
            {"role": "robot"},
            {"role": "assistant", "tool_calls": [{"id": "x", "type": "function", "function": {}}, call("a", "create_issue")]},
            {"role": "tool", "content": "orphan"},
            tool("zzz", json!("nobody asked")),
            tool("a", json!({"not": "content"})),
        ]);
        let plan = importer().map_conversation(&conv).expect("a conversation");
        let problems: Vec<String> = plan.problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            vec![
                "message 1: not a message: no `role`",
                "message 2: unknown role \"robot\"",
                "message 3: tool call 0: tool call without `function.name`",
                "message 4: tool result without `tool_call_id`",
                "message 5: tool result for \"zzz\" matches no call waiting for a result",
                "message 6: content is neither a string nor an array of parts",
            ]
        );
        // The write call keeps its position (1) and, its result being unusable, stays unknown.
        assert_eq!(plan.mutations.len(), 1);
        assert_eq!(
            plan.mutations[0].mutation_id.as_str(),
            mutation_id(plan.session_key.as_str(), 1, 1)
        );
        assert_eq!(
            plan.mutations[0].classification.settlement,
            Settlement::OutcomeUnknown
        );
        assert_eq!(
            importer().map_conversation(&json!({"msgs": []})),
            Err("an object without `messages` or `traj` is not a conversation".into())
        );
    }

    #[test]
    fn metadata_comes_only_from_the_configured_pointers_and_templates() {
        let config: ImportConfig = serde_json::from_value(json!({
            "metadata": {"create_issue": {
                "id_pointer": "/number",
                "url_template": "https://code.example.com/acme/issues/{id}",
                "title_template": "Issue #{id}"
            }}
        }))
        .expect("config");
        let i = Importer::new("", ["create_issue".to_owned()], config).expect("compiles");
        let conv = json!({"id": 42, "messages": [
            user("go"),
            assistant(vec![call("a", "create_issue"), call("b", "create_issue")]),
            tool("a", json!("{\"number\": 419, \"body\": \"secret\"}")),
            tool("b", json!("created")),
        ]});
        let plan = i.map_conversation(&conv).expect("a conversation");
        assert_eq!(plan.session_key.as_str(), "42");
        assert_eq!(
            plan.mutations[0].metadata,
            Some(HostMetadata {
                id: Some("419".into()),
                url: Some("https://code.example.com/acme/issues/419".into()),
                title: Some("Issue #419".into()),
            })
        );
        assert_eq!(plan.mutations[1].metadata, None);
        let ops = plan.operations();
        assert_eq!(ops.len(), 7);
        assert!(matches!(ops[3].action, Action::AttachMetadata { .. }));
    }
}
