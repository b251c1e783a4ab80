//! Import of agent transcripts in the OpenAI chat format: the pure mapping from a conversation to ledger
//! [`Command`]s, shared by `outcomes import` (which sends them to the host API's batch) and by a host that
//! embeds the [`Engine`] ([`Engine::import`]).
//!
//! Shapes read:
//! - a file is a JSON array of conversations, or JSON Lines (one conversation per line); see
//!   [`parse_transcripts`];
//! - a conversation is a list of messages, or an object holding one under `messages` or `traj` (and
//!   optionally its own `id`);
//! - messages are `system`/`developer` (ignored), `user` (starts a new logical turn), `assistant` with
//!   `tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}]`, and `tool` results with
//!   `tool_call_id` and `content` (a string, or an array of parts whose `text` fields are joined by `\n`).
//!
//! Mapping (see [`Importer::map_conversation`]):
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
//!
//! Classification of a write call's result ([`Importer::classify`]), first match wins (seed 002: a failure
//! is reported only when evidence establishes it, a lost reply is unknown):
//! 1. no result at all → `outcome_unknown` (the reply was lost);
//! 2. a timeout pattern matches → `outcome_unknown` with reason `execution_timeout`;
//! 3. a transport pattern matches (connection reset or broken, 502/503) → `outcome_unknown`;
//! 4. a failure pattern matches the text, or a failure field rule matches the result's JSON → `failed`;
//! 5. otherwise → `completed`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::command::{Action, Command, Settlement};
use crate::engine::Engine;
use crate::error::LedgerError;
use crate::ids::{AttemptId, IdError, LogicalTurnId, MutationId, SessionKey, ToolName};
use crate::projection::HostMetadata;
use crate::wire::{EntryState, Reason};

/// The attempt id of every imported mutation (a transcript shows one attempt per call).
pub const IMPORT_ATTEMPT_ID: &str = "import-1";

/// Commands [`Engine::import`] applies per transaction (the host API's batch limit too).
pub const IMPORT_BATCH_OPERATIONS: usize = 1000;

/// Default timeout patterns: the result only says the call timed out (anchored at the start, after an
/// optional `Error`, allowing a few words before, so a result that merely mentions a timeout is normal).
pub const DEFAULT_TIMEOUT_PATTERNS: [&str; 2] = [
    r"(?i)^\W*(error\W*)?(\S+\s+){0,6}(timed out|deadline exceeded)\b",
    r"(?i)^\W*(error\W*)?((http|status)\W*)?(timeout(error)?\b|gateway time-?out\b|504\b)",
];

/// Default transport patterns: the result only says the connection broke or the gateway failed.
pub const DEFAULT_UNKNOWN_PATTERNS: [&str; 2] = [
    r"(?i)^\W*(error\W*)?(\S+\s+){0,6}(connection (was )?(reset|closed|aborted|broken|broke|lost|dropped)|broken pipe|econnreset|socket hang up)\b",
    r"(?i)^\W*(error\W*)?((http|status)\W*)?(50[23]\b|bad gateway\b|service unavailable\b)",
];

/// Default failure pattern: the result text starts with `Error` (any case).
pub const DEFAULT_FAILED_PATTERNS: [&str; 1] = [r"(?i)^\s*error\b"];

/// The import configuration, as read from a config file (the CLI reads TOML; any serde format works).
/// Unknown keys are refused. A list given in the file replaces that list's defaults; a list left out keeps
/// them.
///
/// ```toml
/// write_tools = ["create_issue"]          # added to --write-tools
/// [classify]
/// failed_fields = [{ pointer = "/error" }, { pointer = "/status", equals = "failed" }]
/// [metadata.create_issue]
/// id_pointer = "/number"
/// url_template = "https://code.example.com/acme/shop/issues/{id}"
/// title_template = "Issue #{id}"
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImportConfig {
    /// Names of the write tools (in addition to those given on the command line).
    pub write_tools: Vec<String>,
    /// How results are classified.
    pub classify: ClassifyConfig,
    /// Per tool name: where its resource id, url and title come from.
    pub metadata: BTreeMap<String, MetadataRule>,
}

/// Patterns (regular expressions, `regex` syntax) and JSON field rules of [`Importer::classify`].
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassifyConfig {
    /// Text patterns meaning the call timed out: `outcome_unknown` + `execution_timeout`.
    pub timeout_patterns: Vec<String>,
    /// Text patterns meaning the reply was lost in transport: `outcome_unknown`.
    pub unknown_patterns: Vec<String>,
    /// Text patterns meaning the tool refused or failed: `failed`.
    pub failed_patterns: Vec<String>,
    /// JSON field rules meaning the tool refused or failed: `failed`.
    pub failed_fields: Vec<FieldRule>,
}

impl Default for ClassifyConfig {
    fn default() -> Self {
        let owned = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect();
        ClassifyConfig {
            timeout_patterns: owned(&DEFAULT_TIMEOUT_PATTERNS),
            unknown_patterns: owned(&DEFAULT_UNKNOWN_PATTERNS),
            failed_patterns: owned(&DEFAULT_FAILED_PATTERNS),
            failed_fields: vec![
                FieldRule {
                    pointer: "/error".into(),
                    equals: None,
                },
                FieldRule {
                    pointer: "/status".into(),
                    equals: Some(Value::from("failed")),
                },
                FieldRule {
                    pointer: "/isError".into(),
                    equals: Some(Value::Bool(true)),
                },
            ],
        }
    }
}

/// A rule on the result parsed as JSON: matches when the JSON pointer (RFC 6901, e.g. `/error`) resolves
/// and, with `equals`, the value equals it; without `equals`, when the value is not `null`, `false` or `""`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldRule {
    pub pointer: String,
    #[serde(default)]
    pub equals: Option<Value>,
}

/// Where one tool's host metadata comes from. Pointers are JSON pointers into the result parsed as JSON
/// (a string or number there is taken); templates replace `{id}` with the resource id (percent-encoded in
/// the url) and are skipped when there is no id. A pointer wins over a template.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetadataRule {
    pub id_pointer: Option<String>,
    pub url_pointer: Option<String>,
    pub url_template: Option<String>,
    pub title_pointer: Option<String>,
    pub title_template: Option<String>,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no write tools: name them with --write-tools or write_tools in the config")]
    NoWriteTools,
    #[error("{list}: invalid pattern {pattern:?}: {source}")]
    Pattern {
        list: &'static str,
        pattern: String,
        source: regex::Error,
    },
    #[error("{field}: {pointer:?} is not a JSON pointer (empty, or starting with '/')")]
    Pointer { field: String, pointer: String },
}

/// What a write call's result establishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classification {
    pub settlement: Settlement,
    /// `Some(ExecutionTimeout)` only with `OutcomeUnknown`.
    pub reason: Option<Reason>,
}

/// Something in the input that was skipped, with where it was: message and tool call indexes are 0-based
/// positions inside the conversation and inside the message's `tool_calls`.
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
    /// approve, intent, settle (and metadata when there is some) of each mutation, in order.
    pub fn operations(&self) -> Vec<Command> {
        let attempt = || AttemptId::parse(IMPORT_ATTEMPT_ID).expect("a valid constant");
        let mut ops = Vec::with_capacity(self.mutations.len() * 4);
        for m in &self.mutations {
            let command =
                |action| Command::new(self.session_key.clone(), m.mutation_id.clone(), action);
            ops.push(command(Action::Approve {
                logical_turn_id: m.logical_turn_id.clone(),
                tool: m.tool.clone(),
            }));
            ops.push(command(Action::RecordIntent {
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

/// Where a conversation came from in its file: a JSON Lines line (1-based) or an index in a JSON array
/// (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    Line(usize),
    Index(usize),
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Line(n) => write!(f, "{n}"),
            Position::Index(i) => write!(f, "conversation {i}"),
        }
    }
}

/// Splits a transcript file into conversations. When the whole text is one JSON value it is an array of
/// conversations, or one conversation (an object, or an array whose first element is a message, i.e. an
/// object with a `role`). Otherwise it is JSON Lines: each non-blank line is one conversation, and a line
/// that is not JSON is returned as an `Err` with the parser's message, without losing the other lines.
pub fn parse_transcripts(text: &str) -> Vec<(Position, Result<Value, String>)> {
    if let Ok(whole) = serde_json::from_str::<Value>(text) {
        let single = match &whole {
            Value::Array(items) => items
                .first()
                .is_some_and(|first| first.get("role").is_some()),
            _ => true,
        };
        return match whole {
            Value::Array(items) if !single => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Position::Index(i), Ok(v)))
                .collect(),
            other => vec![(Position::Index(0), Ok(other))],
        };
    }
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            (
                Position::Line(n + 1),
                serde_json::from_str::<Value>(line).map_err(|e| format!("not JSON: {e}")),
            )
        })
        .collect()
}

/// The compiled mapping: session prefix, write tools, classification patterns, metadata rules.
#[derive(Debug, Clone)]
pub struct Importer {
    prefix: String,
    write_tools: HashSet<String>,
    timeout: Vec<Regex>,
    unknown: Vec<Regex>,
    failed: Vec<Regex>,
    failed_fields: Vec<FieldRule>,
    metadata: BTreeMap<String, MetadataRule>,
}

fn compile(list: &'static str, patterns: &[String]) -> Result<Vec<Regex>, ConfigError> {
    patterns
        .iter()
        .map(|p| {
            Regex::new(p).map_err(|source| ConfigError::Pattern {
                list,
                pattern: p.clone(),
                source,
            })
        })
        .collect()
}

fn check_pointer(field: String, pointer: &str) -> Result<(), ConfigError> {
    if pointer.is_empty() || pointer.starts_with('/') {
        Ok(())
    } else {
        Err(ConfigError::Pointer {
            field,
            pointer: pointer.to_owned(),
        })
    }
}

impl Importer {
    /// Compiles `config` with the session key prefix and the write tools named outside the config.
    /// Errors: no write tool at all, a pattern that is not a regular expression, a pointer that is not a
    /// JSON pointer.
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
            timeout: compile("classify.timeout_patterns", &c.timeout_patterns)?,
            unknown: compile("classify.unknown_patterns", &c.unknown_patterns)?,
            failed: compile("classify.failed_patterns", &c.failed_patterns)?,
            failed_fields: c.failed_fields,
            metadata: config.metadata,
        })
    }

    /// What a result establishes; `None` is a call whose result never came (the reply was lost).
    pub fn classify(&self, result: Option<&str>) -> Classification {
        let unknown = |reason| Classification {
            settlement: Settlement::OutcomeUnknown,
            reason,
        };
        let Some(text) = result else {
            return unknown(None);
        };
        if self.timeout.iter().any(|r| r.is_match(text)) {
            return unknown(Some(Reason::ExecutionTimeout));
        }
        if self.unknown.iter().any(|r| r.is_match(text)) {
            return unknown(None);
        }
        let failed_text = self.failed.iter().any(|r| r.is_match(text));
        let failed_field = || {
            serde_json::from_str::<Value>(text).is_ok_and(|json| {
                self.failed_fields.iter().any(|rule| {
                    match (json.pointer(&rule.pointer), &rule.equals) {
                        (None, _) => false,
                        (Some(v), Some(expected)) => v == expected,
                        (Some(v), None) => {
                            !matches!(v, Value::Null | Value::Bool(false)) && v.as_str() != Some("")
                        }
                    }
                })
            })
        };
        let settlement = if failed_text || failed_field() {
            Settlement::Failed
        } else {
            Settlement::Completed
        };
        Classification {
            settlement,
            reason: None,
        }
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
        let messages = match conversation {
            Value::Array(messages) => messages,
            Value::Object(o) => match o.get("messages").or_else(|| o.get("traj")) {
                Some(Value::Array(messages)) => messages,
                Some(_) => return Err("`messages`/`traj` is not a list of messages".into()),
                None => {
                    return Err(
                        "an object without `messages` or `traj` is not a conversation".into(),
                    )
                }
            },
            _ => {
                return Err("a conversation is a list of messages or an object holding one".into())
            }
        };
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

/// The text of a tool result's `content`: a string, `null` (empty), or an array of parts whose text
/// (a string part, or a part's `text` field) is joined by `\n`; other parts (images) are left out.
fn content_text(content: Option<&Value>) -> Result<String, String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                other => other.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n")),
        Some(_) => Err("content is neither a string nor an array of parts".into()),
    }
}

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
        let Some(role) = message.get("role") else {
            problem(None, "not a message: no `role`");
            continue;
        };
        match role.as_str() {
            Some("system" | "developer") => {}
            Some("user") => {
                turn += 1;
                position = 0;
            }
            Some("assistant") => match message.get("tool_calls") {
                None | Some(Value::Null) => {}
                Some(Value::Array(tool_calls)) => {
                    for (ci, tc) in tool_calls.iter().enumerate() {
                        let this = position;
                        position += 1;
                        if tc
                            .get("type")
                            .is_some_and(|t| t.as_str() != Some("function"))
                        {
                            continue;
                        }
                        let Some(name) = tc.pointer("/function/name").and_then(Value::as_str)
                        else {
                            problem(Some(ci), "tool call without `function.name`");
                            continue;
                        };
                        match tc.get("id").and_then(Value::as_str) {
                            Some(id) => waiting
                                .entry(id.to_owned())
                                .or_default()
                                .push_back(calls.len()),
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
                            name: name.to_owned(),
                            result: None,
                        });
                    }
                }
                Some(_) => problem(None, "`tool_calls` is not an array"),
            },
            Some("tool") => {
                let Some(id) = message.get("tool_call_id").and_then(Value::as_str) else {
                    problem(None, "tool result without `tool_call_id`");
                    continue;
                };
                let text = match content_text(message.get("content")) {
                    Ok(t) => t,
                    Err(e) => {
                        problem(None, &e);
                        continue;
                    }
                };
                match waiting.get_mut(id).and_then(VecDeque::pop_front) {
                    Some(call) => calls[call].result = Some(text),
                    None => problem(
                        None,
                        &format!("tool result for {id:?} matches no call waiting for a result"),
                    ),
                }
            }
            Some(other) => problem(None, &format!("unknown role {other:?}")),
            None => problem(None, "`role` is not a string"),
        }
    }
    Walk { calls, problems }
}

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

impl Engine {
    /// Records the plans' operations ([`ConversationPlan::operations`]) in transactions of at most
    /// [`IMPORT_BATCH_OPERATIONS`], and counts what each did. Re-importing the same plans changes nothing.
    /// The error is a store failure; batches committed before it stay.
    pub async fn import(&self, plans: &[ConversationPlan]) -> Result<ImportTally, LedgerError> {
        let ops: Vec<Command> = plans.iter().flat_map(|p| p.operations()).collect();
        let mut tally = ImportTally::default();
        for chunk in ops.chunks(IMPORT_BATCH_OPERATIONS) {
            let results = self.apply_batch(chunk.to_vec()).await?;
            for (op, result) in chunk.iter().zip(results) {
                tally.record(op, result.into());
            }
        }
        Ok(tally)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn importer() -> Importer {
        Importer::new("imp-", ["create_issue".to_owned()], ImportConfig::default())
            .expect("default config compiles")
    }

    fn call(id: &str, name: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{\"title\":\"secret\"}"}})
    }

    fn assistant(calls: Vec<Value>) -> Value {
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    }

    fn tool(id: &str, content: Value) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": content})
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn statuses(plan: &ConversationPlan) -> Vec<(String, Settlement, Option<Reason>)> {
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

    fn mutation_id(session: &str, turn: usize, position: usize) -> String {
        format!(
            "{:x}",
            Sha256::digest(format!("{session}\u{1f}turn-{turn}\u{1f}{position}").as_bytes())
        )
    }

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
    fn an_error_result_is_failed_by_text_or_by_json_field() {
        let i = importer();
        let failed = Classification {
            settlement: Settlement::Failed,
            reason: None,
        };
        assert_eq!(i.classify(Some("Error: permission denied")), failed);
        assert_eq!(i.classify(Some("error 422: invalid label")), failed);
        assert_eq!(i.classify(Some(r#"{"error": {"code": 403}}"#)), failed);
        assert_eq!(i.classify(Some(r#"{"status": "failed", "id": 3}"#)), failed);
        assert_eq!(i.classify(Some(r#"{"isError": true}"#)), failed);
        let completed = Classification {
            settlement: Settlement::Completed,
            reason: None,
        };
        assert_eq!(i.classify(Some(r#"{"error": null, "id": 3}"#)), completed);
        assert_eq!(i.classify(Some("Created issue; no Error")), completed);
        assert_eq!(i.classify(Some("")), completed);
    }

    #[test]
    fn a_timeout_result_is_unknown_with_execution_timeout() {
        let i = importer();
        let timeout = Classification {
            settlement: Settlement::OutcomeUnknown,
            reason: Some(Reason::ExecutionTimeout),
        };
        assert_eq!(i.classify(Some("Error: request timed out")), timeout);
        assert_eq!(i.classify(Some("Timeout after 30s")), timeout);
        assert_eq!(
            i.classify(Some("MCP error -32001: Request timed out")),
            timeout
        );
        assert_eq!(i.classify(Some("504 Gateway Timeout")), timeout);
        let unknown = Classification {
            settlement: Settlement::OutcomeUnknown,
            reason: None,
        };
        assert_eq!(i.classify(Some("Error: connection reset by peer")), unknown);
        assert_eq!(i.classify(Some("HTTP 502 Bad Gateway")), unknown);
        assert_eq!(i.classify(Some("503 Service Unavailable")), unknown);
        // A normal result that only mentions a timeout is a normal result.
        assert_eq!(
            i.classify(Some("Created alert rule with timeout 30s")),
            Classification {
                settlement: Settlement::Completed,
                reason: None
            }
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
            content_text(Some(&json!([{"text": "a"}, "b"]))),
            Ok("a\nb".into())
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

    #[test]
    fn config_errors_name_what_is_wrong() {
        assert!(matches!(
            Importer::new("", Vec::<String>::new(), ImportConfig::default()),
            Err(ConfigError::NoWriteTools)
        ));
        let mut bad = ImportConfig::default();
        bad.classify.failed_patterns = vec!["(".into()];
        let e = Importer::new("", ["t".to_owned()], bad).expect_err("bad pattern");
        assert!(e
            .to_string()
            .starts_with("classify.failed_patterns: invalid pattern \"(\""));
        let mut bad = ImportConfig::default();
        bad.classify.failed_fields = vec![FieldRule {
            pointer: "error".into(),
            equals: None,
        }];
        let e = Importer::new("", ["t".to_owned()], bad).expect_err("bad pointer");
        assert_eq!(
            e.to_string(),
            "classify.failed_fields[0]: \"error\" is not a JSON pointer (empty, or starting with '/')"
        );
    }

    #[test]
    fn transcripts_are_a_json_array_or_json_lines_with_bad_lines_reported() {
        let lines =
            "[{\"role\":\"user\",\"content\":\"a\"}]\n{broken\n\n{\"id\":\"x\",\"traj\":[]}\n";
        let parsed = parse_transcripts(lines);
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0].0, Position::Line(1));
        assert_eq!(parsed[1].0, Position::Line(2));
        assert!(parsed[1]
            .1
            .as_ref()
            .is_err_and(|e| e.starts_with("not JSON: key must be a string")));
        assert_eq!(
            parsed[2],
            (Position::Line(4), Ok(json!({"id": "x", "traj": []})))
        );
        let array = parse_transcripts("[[], {\"messages\": []}]");
        assert_eq!(
            array,
            vec![
                (Position::Index(0), Ok(json!([]))),
                (Position::Index(1), Ok(json!({"messages": []}))),
            ]
        );
        let one = parse_transcripts("[{\"role\": \"user\", \"content\": \"hi\"}]");
        assert_eq!(
            one,
            vec![(
                Position::Index(0),
                Ok(json!([{"role": "user", "content": "hi"}]))
            )]
        );
    }

    #[tokio::test]
    async fn engine_import_twice_changes_nothing_the_second_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("ledger.sqlite");
        let ledger = crate::Ledger::open(&db.to_string_lossy(), Default::default())
            .await
            .expect("ledger");
        let conv = json!({"id": "c", "messages": [
            user("go"),
            assistant(vec![call("a", "create_issue"), call("b", "create_issue")]),
            tool("a", json!("done")),
        ]});
        let plans = vec![importer().map_conversation(&conv).expect("a conversation")];
        let engine = ledger.engine();
        let first = engine.import(&plans).await.expect("import");
        assert_eq!((first.created, first.already_present), (6, 0));
        assert_eq!(first.failed, Vec::<String>::new());
        let second = engine.import(&plans).await.expect("import");
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
