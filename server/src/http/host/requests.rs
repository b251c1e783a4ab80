//! The host write API's request bodies (docs/api.md "Host write API"): each deserialises leniently (every
//! field optional, so a missing one is a 422 naming it rather than a serde message), documents its exact
//! schema, and converts into the ledger's [`Command`] with `TryFrom<Request<path, body>>`, checking
//! identifiers (path first) and fields in the documented order. Batch items reuse the same conversions.

use axum::http::StatusCode;
use ledger::ids::{AttemptId, LogicalTurnId, MutationId, SessionKey, ToolName};
use ledger::projection::HostMetadata;
use ledger::wire::Reason;
use ledger::{Action, Command, Evidence, Settlement};
use serde::{Deserialize, Deserializer};
use utoipa::openapi::schema::{
    AllOfBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::error::ApiError;
use crate::http::query::write_id;
use crate::http::write::{
    from_value, identifier, null, object, one_of, required, EntryPath, Identifier, Request,
    SessionPath,
};

pub(crate) fn session(s: String) -> Result<SessionKey, ApiError> {
    write_id(s, "session_key", SessionKey::parse)
}

pub(crate) fn mutation(s: String) -> Result<MutationId, ApiError> {
    write_id(s, "mutation_id", MutationId::parse)
}

fn attempt(s: Option<String>) -> Result<AttemptId, ApiError> {
    write_id(required(s, "attempt_id")?, "attempt_id", AttemptId::parse)
}

fn reason(s: Option<String>) -> Result<Option<Reason>, ApiError> {
    s.map(|r| {
        Reason::parse(&r).ok_or_else(|| {
            ApiError::invalid_field(
                "reason",
                "reason is pre_dispatch_deadline or execution_timeout",
            )
        })
    })
    .transpose()
}

/// `{"logical_turn_id", "mutation_id", "tool", "commissioned_after"?, "traceparent"?}`: identifiers, and
/// the host's W3C trace context.
#[derive(Deserialize, Default, ToSchema)]
pub struct ApproveBody {
    #[schema(value_type = Identifier, required = true)]
    logical_turn_id: Option<String>,
    #[schema(value_type = Identifier, required = true)]
    mutation_id: Option<String>,
    #[schema(value_type = Identifier, required = true)]
    tool: Option<String>,
    /// The mutation of the same session this one was commissioned after (new work after an unknown
    /// outcome, docs/api.md "Host write API"); the original stays as it is.
    #[schema(value_type = Option<Identifier>)]
    commissioned_after: Option<String>,
    /// The host's W3C Trace Context `traceparent` of the tool call (`00-<32 hex trace id>-<16 hex parent
    /// id>-<2 hex flags>`, lowercase): the OpenTelemetry span `mutation_outcome {tool}` becomes a child of
    /// that span (docs/operations.md "OpenTelemetry"). Malformed (wrong length, not hex, an all-zero id,
    /// version `ff`) is 422 naming `traceparent`.
    #[schema(
        value_type = Option<String>,
        pattern = "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$",
        example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    )]
    traceparent: Option<String>,
}

/// `{"attempt_id", "deadline_secs"?}`: the attempt, and how long it may stay in flight before the ledger
/// settles it `outcome_unknown` itself (docs/api.md "Deadlines"; default the server's
/// `--in-flight-deadline-secs`).
#[derive(Deserialize, Default, ToSchema)]
pub struct AttemptBody {
    #[schema(value_type = Identifier, required = true)]
    attempt_id: Option<String>,
    /// Seconds from now, 1 to 604800 (7 days); anything else is 422 naming `deadline_secs`.
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 604800)]
    deadline_secs: Option<i64>,
}

/// `{"attempt_id", "deadline_secs"}`: the host still works on the attempt in flight; its deadline becomes
/// now + `deadline_secs`, never earlier than it was (docs/api.md "Deadlines").
#[derive(Deserialize, Default, ToSchema)]
pub struct DeadlineBody {
    #[schema(value_type = Identifier, required = true)]
    attempt_id: Option<String>,
    /// Seconds from now, 1 to 604800 (7 days); anything else is 422 naming `deadline_secs`.
    #[schema(value_type = u32, required = true, minimum = 1, maximum = 604800)]
    deadline_secs: Option<i64>,
}

/// A `deadline_secs`: 1 to [`ledger::command::DEADLINE_MAX_SECS`], else 422 naming it.
fn deadline_secs(v: i64) -> Result<u32, ApiError> {
    u32::try_from(v)
        .ok()
        .filter(|s| (1..=ledger::command::DEADLINE_MAX_SECS).contains(s))
        .ok_or_else(|| {
            ApiError::invalid_field(
                "deadline_secs",
                "a deadline is 1 to 604800 seconds (7 days)",
            )
        })
}

impl TryFrom<Request<EntryPath, DeadlineBody>> for Command {
    type Error = ApiError;

    fn try_from(r: Request<EntryPath, DeadlineBody>) -> Result<Command, ApiError> {
        let (k, m) = entry(r.path)?;
        let attempt_id = attempt(r.body.attempt_id)?;
        let deadline_secs = deadline_secs(required(r.body.deadline_secs, "deadline_secs")?)?;
        Ok(Command::new(
            k,
            m,
            Action::ExtendDeadline {
                attempt_id,
                deadline_secs,
            },
        ))
    }
}

/// `{"attempt_id", "status", "reason"?}`: `reason` is only `execution_timeout`, with status
/// `outcome_unknown`.
#[derive(Deserialize, Default)]
pub struct SettleBody {
    attempt_id: Option<String>,
    status: Option<String>,
    reason: Option<String>,
}

impl PartialSchema for SettleBody {
    fn schema() -> RefOr<Schema> {
        let settled = object(
            [
                ("attempt_id", identifier()),
                ("status", one_of(&["completed", "failed"]).into()),
            ],
            [("reason", null())],
        );
        let unknown = object(
            [
                ("attempt_id", identifier()),
                ("status", one_of(&["outcome_unknown"]).into()),
            ],
            [(
                "reason",
                OneOfBuilder::new()
                    .item(one_of(&["execution_timeout"]))
                    .item(null())
                    .into(),
            )],
        );
        OneOfBuilder::new()
            .item(settled)
            .item(unknown)
            .description(Some(
                "how the in-flight attempt settled; `reason` only `execution_timeout`, with `outcome_unknown`",
            ))
            .into()
    }
}

impl ToSchema for SettleBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("Identifier".into(), Identifier::schema()));
    }
}

/// `{"attempt_id", "reason"?}`: `reason` is only `pre_dispatch_deadline`.
#[derive(Deserialize, Default, ToSchema)]
pub struct CancelBody {
    #[schema(value_type = Identifier, required = true)]
    attempt_id: Option<String>,
    #[schema(value_type = Option<CancelReason>)]
    reason: Option<String>,
}

/// The one reason of a cancellation (documentation only).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum CancelReason {
    PreDispatchDeadline,
}

/// `{"source", "reference", "observed_at", "provider_status"?}`.
#[derive(Deserialize, Default)]
pub struct EvidenceBody {
    source: Option<String>,
    reference: Option<String>,
    observed_at: Option<String>,
    /// The provider's status of the original attempt, when the host passes it through: only `completed`
    /// and `not_accepted` are conclusive.
    provider_status: Option<String>,
}

/// Evidence text: some character that is not Unicode `White_Space` (what `str::trim` removes; spelled out
/// because `\\s` differs between regex dialects: JavaScript counts U+FEFF, not U+0085), and no U+0000
/// (docs/api.md "Text a client sends").
const EVIDENCE_TEXT: &str = "^[^\\u0000]*[^\\u0000\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000]*$";

/// The evidence schema for `completed` (`provider_status`, when given, says the same).
fn evidence(provider_status: &str) -> ObjectBuilder {
    let text = || {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(EVIDENCE_TEXT))
            .description(Some(
                "not empty or blank (some character that is not Unicode White_Space), without U+0000",
            ))
            .into()
    };
    object(
        [
            ("source", text()),
            ("reference", text()),
            (
                "observed_at",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                    .description(Some("RFC 3339, e.g. 2026-11-29T10:00:00Z"))
                    .into(),
            ),
        ],
        [(
            "provider_status",
            OneOfBuilder::new()
                .item(one_of(&[provider_status]))
                .item(null())
                .into(),
        )],
    )
}

/// `{"attempt_id", "completed", "evidence": {"source", "reference", "observed_at",
/// "provider_status"?}}`: a `provider_status` must agree with `completed` (`completed` /
/// `not_accepted`).
#[derive(Deserialize, Default)]
pub struct ReconcileBody {
    attempt_id: Option<String>,
    completed: Option<bool>,
    evidence: Option<EvidenceBody>,
}

impl PartialSchema for ReconcileBody {
    fn schema() -> RefOr<Schema> {
        let branch = |completed: bool, provider_status: &str| {
            object(
                [
                    ("attempt_id", identifier()),
                    (
                        "completed",
                        ObjectBuilder::new()
                            .schema_type(Type::Boolean)
                            .enum_values(Some([completed]))
                            .into(),
                    ),
                    ("evidence", evidence(provider_status).into()),
                ],
                [],
            )
        };
        OneOfBuilder::new()
            .item(branch(true, "completed"))
            .item(branch(false, "not_accepted"))
            .description(Some(
                "authoritative evidence about the original attempt: completed, or not executed",
            ))
            .into()
    }
}

impl ToSchema for ReconcileBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("Identifier".into(), Identifier::schema()));
    }
}

impl ReconcileBody {
    /// The body a no-JavaScript form sends as fields (`POST /sessions/{session_key}/operations/
    /// {mutation_id}/reconciliation`, docs/api.md "Operator actions"): then checked exactly as the JSON
    /// body is. An empty `provider_status` is absent.
    pub(crate) fn from_fields(
        attempt_id: Option<String>,
        completed: Option<bool>,
        source: Option<String>,
        reference: Option<String>,
        observed_at: Option<String>,
        provider_status: Option<String>,
    ) -> Self {
        ReconcileBody {
            attempt_id,
            completed,
            evidence: Some(EvidenceBody {
                source,
                reference,
                observed_at,
                provider_status: provider_status.filter(|p| !p.is_empty()),
            }),
        }
    }
}

/// `{"text"}`: a staff note, 1 to 4096 bytes without U+0000 (docs/api.md "Operator actions").
#[derive(Deserialize, Default, ToSchema)]
pub struct NoteBody {
    /// 1 to 4096 bytes of UTF-8 (maxLength counts characters: 4096 for ASCII) without U+0000 (NUL); any
    /// other length, or a NUL, is 422 naming `text`.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 4096, pattern = "^[^\\u0000]*$")]
    text: Option<String>,
}

impl NoteBody {
    /// The body of a no-JavaScript form's `text` field.
    pub(crate) fn from_field(text: Option<String>) -> Self {
        NoteBody { text }
    }
}

impl TryFrom<Request<EntryPath, NoteBody>> for Command {
    type Error = ApiError;

    /// The identifiers of the path, then `text` present (its length is the ledger's rule, 422 naming
    /// `text` too).
    fn try_from(r: Request<EntryPath, NoteBody>) -> Result<Command, ApiError> {
        let (k, m) = entry(r.path)?;
        let text = required(r.body.text, "text")?;
        Ok(Command::new(k, m, Action::Note { text }))
    }
}

/// `{"id", "url", "title"}`: each a string of any size up to the body limit, or null.
#[derive(Deserialize, Default, ToSchema)]
pub struct MetadataBody {
    id: Option<String>,
    url: Option<String>,
    title: Option<String>,
}

impl TryFrom<Request<SessionPath, ApproveBody>> for Command {
    type Error = ApiError;

    fn try_from(r: Request<SessionPath, ApproveBody>) -> Result<Command, ApiError> {
        let key = session(r.path)?;
        let b = r.body;
        let logical_turn_id = write_id(
            required(b.logical_turn_id, "logical_turn_id")?,
            "logical_turn_id",
            LogicalTurnId::parse,
        )?;
        let mutation_id = mutation(required(b.mutation_id, "mutation_id")?)?;
        let tool = write_id(required(b.tool, "tool")?, "tool", ToolName::parse)?;
        let commissioned_after = b
            .commissioned_after
            .map(|m| write_id(m, "commissioned_after", MutationId::parse))
            .transpose()?;
        let traceparent = b
            .traceparent
            .map(|t| {
                ledger::traceparent::Traceparent::parse(&t)
                    .map_err(|why| ApiError::invalid_field("traceparent", why))
            })
            .transpose()?;
        Ok(Command::new(
            key,
            mutation_id,
            Action::Approve {
                logical_turn_id,
                tool,
                commissioned_after,
                traceparent,
            },
        ))
    }
}

/// The entry key of a write's path: session first, then mutation (422 naming the one that breaks the
/// identifier rule).
fn entry(path: EntryPath) -> Result<(SessionKey, MutationId), ApiError> {
    let (k, m) = path;
    Ok((session(k)?, mutation(m)?))
}

/// An [`AttemptBody`] with the transition it asks for.
pub struct Attempt<const FRESH: bool>(AttemptBody);

impl<'de, const FRESH: bool> Deserialize<'de> for Attempt<FRESH> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        AttemptBody::deserialize(d).map(Attempt)
    }
}

impl<const FRESH: bool> TryFrom<Request<EntryPath, Attempt<FRESH>>> for Command {
    type Error = ApiError;

    fn try_from(r: Request<EntryPath, Attempt<FRESH>>) -> Result<Command, ApiError> {
        let (k, m) = entry(r.path)?;
        let attempt_id = attempt(r.body.0.attempt_id)?;
        let deadline_secs = r.body.0.deadline_secs.map(deadline_secs).transpose()?;
        let action = if FRESH {
            Action::FreshAttempt {
                attempt_id,
                deadline_secs,
            }
        } else {
            Action::RecordIntent {
                attempt_id,
                deadline_secs,
            }
        };
        Ok(Command::new(k, m, action))
    }
}

impl TryFrom<Request<EntryPath, SettleBody>> for Command {
    type Error = ApiError;

    fn try_from(r: Request<EntryPath, SettleBody>) -> Result<Command, ApiError> {
        let (k, m) = entry(r.path)?;
        let b = r.body;
        let attempt_id = attempt(b.attempt_id)?;
        let settlement = match required(b.status, "status")?.as_str() {
            "completed" => Settlement::Completed,
            "failed" => Settlement::Failed,
            "outcome_unknown" => Settlement::OutcomeUnknown,
            _ => {
                return Err(ApiError::invalid_field(
                    "status",
                    "status is completed, failed or outcome_unknown",
                ))
            }
        };
        let reason = reason(b.reason)?;
        Ok(Command::new(
            k,
            m,
            Action::Settle {
                attempt_id,
                settlement,
                reason,
            },
        ))
    }
}

impl TryFrom<Request<EntryPath, CancelBody>> for Command {
    type Error = ApiError;

    fn try_from(r: Request<EntryPath, CancelBody>) -> Result<Command, ApiError> {
        let (k, m) = entry(r.path)?;
        let attempt_id = attempt(r.body.attempt_id)?;
        let reason = reason(r.body.reason)?;
        Ok(Command::new(k, m, Action::Cancel { attempt_id, reason }))
    }
}

impl TryFrom<Request<EntryPath, ReconcileBody>> for Command {
    type Error = ApiError;

    fn try_from(r: Request<EntryPath, ReconcileBody>) -> Result<Command, ApiError> {
        let (k, m) = entry(r.path)?;
        let b = r.body;
        let attempt_id = attempt(b.attempt_id)?;
        let completed = required(b.completed, "completed")?;
        let e = required(b.evidence, "evidence")?;
        match e.provider_status.as_deref() {
            None => {}
            Some("completed") if completed => {}
            Some("not_accepted") if !completed => {}
            Some("completed" | "not_accepted") => {
                return Err(ApiError::invalid_field(
                    "evidence.provider_status",
                    "the provider status contradicts completed",
                ))
            }
            Some(other) => {
                return Err(ApiError::invalid_field(
                    "evidence.provider_status",
                    format!("provider_status {other:?} is not conclusive: only completed or not_accepted reconcile; the outcome stays unknown"),
                ))
            }
        }
        let evidence = Evidence {
            source: required(e.source, "evidence.source")?,
            reference: required(e.reference, "evidence.reference")?,
            observed_at: required(e.observed_at, "evidence.observed_at")?,
            provider_status: e.provider_status,
        };
        Ok(Command::new(
            k,
            m,
            Action::Reconcile {
                attempt_id,
                completed,
                evidence,
            },
        ))
    }
}

impl TryFrom<Request<EntryPath, MetadataBody>> for Command {
    type Error = ApiError;

    fn try_from(r: Request<EntryPath, MetadataBody>) -> Result<Command, ApiError> {
        let (k, m) = entry(r.path)?;
        let non_empty = |v: Option<String>| v.filter(|s| !s.is_empty());
        let metadata = HostMetadata {
            id: non_empty(r.body.id),
            url: non_empty(r.body.url),
            title: non_empty(r.body.title),
        };
        Ok(Command::new(k, m, Action::AttachMetadata { metadata }))
    }
}

/// `{"operations": [...]}`: 0 to 1,000 batch items.
#[derive(Deserialize, ToSchema)]
pub struct BatchBody {
    #[schema(value_type = Vec<BatchItem>, required = true, max_items = 1000)]
    pub(crate) operations: Option<Vec<serde_json::Value>>,
}

/// The head of a batch item, read before its body.
#[derive(Deserialize)]
struct BatchOp {
    op: Option<String>,
    session_key: Option<String>,
    mutation_id: Option<String>,
}

/// One batch item (docs/api.md "Batch"): `op` and the entry's key beside the fields of the single call's
/// body, e.g. `{"op": "settle", "session_key", "mutation_id", "attempt_id", "status"}` (the serde form of
/// the ledger's `Command`). Documentation only: items are read as JSON values so each one's error is
/// its own result.
pub struct BatchItem;

impl PartialSchema for BatchItem {
    fn schema() -> RefOr<Schema> {
        let head = |op: &str, with_mutation: bool| {
            let mut required = vec![("op", one_of(&[op]).into()), ("session_key", identifier())];
            if with_mutation {
                required.push(("mutation_id", identifier()));
            }
            object(required, [])
        };
        let item = |op: &str, with_mutation: bool, body: &str| {
            AllOfBuilder::new()
                .item(head(op, with_mutation))
                .item(Ref::from_schema_name(body))
        };
        OneOfBuilder::new()
            .item(item("approve", false, "ApproveBody"))
            .item(item("intent", true, "AttemptBody"))
            .item(item("settle", true, "SettleBody"))
            .item(item("cancel", true, "CancelBody"))
            .item(item("reconcile", true, "ReconcileBody"))
            .item(item("metadata", true, "MetadataBody"))
            .item(item("attempt", true, "AttemptBody"))
            .item(item("deadline", true, "DeadlineBody"))
            .into()
    }
}

impl ToSchema for BatchItem {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("Identifier".into(), Identifier::schema()));
        schemas.push(("ApproveBody".into(), ApproveBody::schema()));
        schemas.push(("AttemptBody".into(), AttemptBody::schema()));
        schemas.push(("DeadlineBody".into(), DeadlineBody::schema()));
        schemas.push(("SettleBody".into(), SettleBody::schema()));
        schemas.push(("CancelBody".into(), CancelBody::schema()));
        schemas.push(("CancelReason".into(), CancelReason::schema()));
        schemas.push(("ReconcileBody".into(), ReconcileBody::schema()));
        schemas.push(("MetadataBody".into(), MetadataBody::schema()));
    }
}

/// One batch item as a command and the status its single call answers: `session_key` first, then `op`,
/// then (but for `approve`) `mutation_id`, then the body's fields, each as the single call checks them.
pub(crate) fn batch_op(value: serde_json::Value) -> Result<(Command, StatusCode), ApiError> {
    let head: BatchOp = from_value(value.clone())?;
    let k = required(head.session_key, "session_key")?;
    session(k.clone())?;
    let op = required(head.op, "op")?;
    if op == "approve" {
        let body: ApproveBody = from_value(value)?;
        let command = Command::try_from(Request { path: k, body })?;
        return Ok((command, StatusCode::CREATED));
    }
    let m = required(head.mutation_id, "mutation_id")?;
    mutation(m.clone())?;
    let path = (k, m);
    let command = match op.as_str() {
        "intent" => Command::try_from(Request {
            path,
            body: from_value::<Attempt<false>>(value)?,
        }),
        "settle" => Command::try_from(Request {
            path,
            body: from_value::<SettleBody>(value)?,
        }),
        "cancel" => Command::try_from(Request {
            path,
            body: from_value::<CancelBody>(value)?,
        }),
        "reconcile" => Command::try_from(Request {
            path,
            body: from_value::<ReconcileBody>(value)?,
        }),
        "metadata" => Command::try_from(Request {
            path,
            body: from_value::<MetadataBody>(value)?,
        }),
        "attempt" => Command::try_from(Request {
            path,
            body: from_value::<Attempt<true>>(value)?,
        }),
        "deadline" => Command::try_from(Request {
            path,
            body: from_value::<DeadlineBody>(value)?,
        }),
        _ => Err(ApiError::invalid_field(
            "op",
            "op is approve, intent, settle, cancel, reconcile, metadata, attempt or deadline",
        )),
    }?;
    Ok((command, StatusCode::OK))
}
