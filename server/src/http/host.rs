//! The host write API (docs/api.md "Host write API"), under `/api/host`, guarded by the host token.
//! Errors are checked in order: 401 (token, by middleware) → 400 (malformed JSON or path) → 422 (a field
//! breaks a rule; names the field) → 404 (unknown or expired session, unknown mutation) → 409 (a refused
//! transition, with the entry's current state). Every error changes nothing.

use std::marker::PhantomData;

use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use ledger::ids::{AttemptId, LogicalTurnId, MutationId, SessionKey, ToolName};
use ledger::projection::HostMetadata;
use ledger::wire::{EntryState, ErrorDetail, Reason};
use ledger::{Action, Command, Evidence, Settlement};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{
    AllOfBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::query::{path, write_id};
use crate::error::ApiError;
use crate::AppState;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The documented host write routes (the caller puts them behind the host check).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(approve))
        .routes(routes!(record_intent))
        .routes(routes!(settle))
        .routes(routes!(cancel))
        .routes(routes!(reconcile))
        .routes(routes!(attach_metadata))
        .routes(routes!(fresh_attempt))
        .routes(routes!(delete_session))
        .routes(routes!(batch))
}

/// Most operations one batch may carry.
pub const MAX_BATCH_OPERATIONS: usize = 1000;

/// The raw body, or the extractor's status (413 over the body limit, 2 MiB) as a JSON error.
pub(crate) fn raw(bytes: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    bytes.map_err(|e| {
        let status = e.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "invalid_body"
        };
        ApiError {
            status,
            detail: Box::new(ledger::wire::ErrorDetail {
                code: code.to_owned(),
                message: e.body_text(),
                field: None,
                current: None,
            }),
            retry_after_secs: None,
        }
    })
}

/// Parses a JSON object body: 400 when it is not JSON or not an object, 422 naming the field whose type
/// is wrong.
pub(crate) fn body<T: DeserializeOwned>(
    bytes: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = raw(bytes)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(
            "malformed_json",
            format!("the body is not valid JSON: {e}"),
            None,
        )
    })?;
    from_value(value)
}

fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "malformed_json",
            "the body must be a JSON object",
            None,
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        ApiError::invalid_field(&field, format!("{field}: {}", e.inner()))
    })
}

fn required<T>(value: Option<T>, field: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::invalid_field(field, format!("{field} is required")))
}

pub(crate) fn session(s: String) -> Result<SessionKey, ApiError> {
    write_id(s, "session_key", SessionKey::parse)
}

fn mutation(s: String) -> Result<MutationId, ApiError> {
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

/// The path of a write to a session: `{session_key}` (percent-decoded, not yet checked).
pub type SessionPath = String;
/// The path of a write to one mutation: `({session_key}, {mutation_id})` (percent-decoded, not yet
/// checked).
pub type EntryPath = (String, String);

/// A host write as received: its path parameters and its body, each of the right JSON shape but not yet
/// checked against the ledger's rules. `Command: TryFrom<Request<P, B>>` checks the identifiers (path
/// first) and the fields, 422 naming the first that breaks a rule.
pub struct Request<P, B> {
    pub path: P,
    pub body: B,
}

/// A validated host write (an extractor): the path (400 `invalid_path`), then the body (413 over 2 MiB;
/// 400 `malformed_json` when it is not a JSON object; 422 naming a field of the wrong JSON type), then the
/// identifiers and field rules (422 naming the field): the order of docs/api.md "Errors". Handlers get the
/// ledger's [`Command`]; the rejection is the [`ApiError`] of the first problem.
pub struct Valid<P, B> {
    pub command: Command,
    shape: PhantomData<fn() -> (P, B)>,
}

impl<S, P, B> FromRequest<S> for Valid<P, B>
where
    S: Send + Sync,
    P: DeserializeOwned + Send + 'static,
    B: DeserializeOwned,
    Command: TryFrom<Request<P, B>, Error = ApiError>,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let (mut parts, raw_body) = req.into_parts();
        let p = Path::<P>::from_request_parts(&mut parts, state).await;
        let path = super::query::path(p)?;
        let bytes =
            Bytes::from_request(axum::extract::Request::from_parts(parts, raw_body), state).await;
        let body: B = body(bytes)?;
        Ok(Valid {
            command: Command::try_from(Request { path, body })?,
            shape: PhantomData,
        })
    }
}

/// The identifier rule as a schema (docs/ledger.md "Entries and their states"): 1 to 256 bytes of
/// UTF-8 with no control character. JSON Schema counts characters, so `maxLength` 256 is the rule for
/// ASCII; a longer identifier in bytes is refused with 422 like any other.
pub struct Identifier;

/// The pattern of an identifier: no control character (C0, DEL, C1; `char::is_control`).
const IDENTIFIER_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$";

impl PartialSchema for Identifier {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(ledger::limits::IDENTIFIER_MAX_BYTES))
            .pattern(Some(IDENTIFIER_PATTERN))
            .description(Some(
                "1 to 256 bytes of UTF-8 (maxLength counts characters: 256 for ASCII), no control character",
            ))
            .into()
    }
}

impl ToSchema for Identifier {}

/// A string schema: one of `values`.
fn one_of(values: &[&str]) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
}

/// An object schema of `required` and `optional` properties (other properties are ignored).
fn object<'a>(
    required: impl IntoIterator<Item = (&'a str, RefOr<Schema>)>,
    optional: impl IntoIterator<Item = (&'a str, RefOr<Schema>)>,
) -> ObjectBuilder {
    let mut o = ObjectBuilder::new().schema_type(Type::Object);
    for (name, schema) in required {
        o = o.property(name, schema).required(name);
    }
    for (name, schema) in optional {
        o = o.property(name, schema);
    }
    o
}

fn identifier() -> RefOr<Schema> {
    Ref::from_schema_name("Identifier").into()
}

fn null() -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::Null).into()
}

/// `{"logical_turn_id", "mutation_id", "tool"}`: all three identifiers.
#[derive(Deserialize, Default, ToSchema)]
pub struct ApproveBody {
    #[schema(value_type = Identifier, required = true)]
    logical_turn_id: Option<String>,
    #[schema(value_type = Identifier, required = true)]
    mutation_id: Option<String>,
    #[schema(value_type = Identifier, required = true)]
    tool: Option<String>,
}

/// `{"attempt_id"}`.
#[derive(Deserialize, Default, ToSchema)]
pub struct AttemptBody {
    #[schema(value_type = Identifier, required = true)]
    attempt_id: Option<String>,
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

/// The evidence schema for `completed` (`provider_status`, when given, says the same).
fn evidence(provider_status: &str) -> ObjectBuilder {
    let text = || {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("\\S"))
            .description(Some("not empty or blank"))
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
        Ok(Command::new(
            key,
            mutation_id,
            Action::Approve {
                logical_turn_id,
                tool,
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
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        AttemptBody::deserialize(d).map(Attempt)
    }
}

impl<const FRESH: bool> TryFrom<Request<EntryPath, Attempt<FRESH>>> for Command {
    type Error = ApiError;

    fn try_from(r: Request<EntryPath, Attempt<FRESH>>) -> Result<Command, ApiError> {
        let (k, m) = entry(r.path)?;
        let attempt_id = attempt(r.body.0.attempt_id)?;
        let action = if FRESH {
            Action::FreshAttempt { attempt_id }
        } else {
            Action::RecordIntent { attempt_id }
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
                    format!("{other} is not conclusive: only completed or not_accepted reconcile; the outcome stays unknown"),
                ))
            }
        }
        let evidence = Evidence {
            source: required(e.source, "evidence.source")?,
            reference: required(e.reference, "evidence.reference")?,
            observed_at: required(e.observed_at, "evidence.observed_at")?,
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

async fn run(state: &AppState, op: Command, status: StatusCode) -> Reply {
    let entry = state.engine.apply(op).await?;
    Ok((status, Json(entry)))
}

type Reply = Result<(StatusCode, Json<EntryState>), ApiError>;

/// The path of one mutation (documentation only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub struct MutationPath {
    /// Session key, percent-encoded.
    #[param(value_type = Identifier, inline)]
    session_key: String,
    /// Operation id, percent-encoded.
    #[param(value_type = Identifier, inline)]
    mutation_id: String,
}

/// The error answers every host transition shares (documentation only).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum HostErrors {
    /// Malformed JSON or path.
    #[response(status = 400)]
    BadRequest(ledger::wire::ErrorBody),
    /// Missing or wrong host token.
    #[response(status = 401)]
    Unauthorized(ledger::wire::ErrorBody),
    /// A field breaks a rule; `field` names it.
    #[response(status = 422)]
    Invalid(ledger::wire::ErrorBody),
    /// Unknown or expired session, unknown mutation.
    #[response(status = 404)]
    NotFound(ledger::wire::ErrorBody),
    /// Refused transition; `current` is the unchanged entry.
    #[response(status = 409)]
    Conflict(ledger::wire::ErrorBody),
    /// Too many failed tokens from this address; retry after `Retry-After` seconds.
    #[response(status = 429)]
    TooManyFailures(ledger::wire::ErrorBody),
    /// The ledger is busy; nothing changed; retry after `Retry-After` seconds.
    #[response(status = 503)]
    Busy(ledger::wire::ErrorBody),
}

/// `POST /api/host/sessions/{session_key}/mutations` `{"logical_turn_id", "mutation_id", "tool"}` → 201.
#[utoipa::path(
    post,
    path = "/api/host/sessions/{session_key}/mutations",
    tag = "host",
    params(("session_key" = inline(Identifier), Path, description = "session key, percent-encoded")),
    request_body = ApproveBody,
    responses(
        (status = 201, description = "approved: the entry exists, nothing is published yet", body = ledger::wire::EntryState),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn approve(
    State(state): State<AppState>,
    write: Valid<SessionPath, ApproveBody>,
) -> Reply {
    run(&state, write.command, StatusCode::CREATED).await
}

/// `POST …/{mutation_id}/intent` `{"attempt_id"}` → 200.
#[utoipa::path(
    post,
    path = "/api/host/sessions/{session_key}/mutations/{mutation_id}/intent",
    tag = "host",
    params(MutationPath),
    request_body = AttemptBody,
    responses(
        (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn record_intent(
    State(state): State<AppState>,
    write: Valid<EntryPath, Attempt<false>>,
) -> Reply {
    run(&state, write.command, StatusCode::OK).await
}

/// `POST …/{mutation_id}/settlement` `{"attempt_id", "status", "reason"?}` → 200.
#[utoipa::path(
    post,
    path = "/api/host/sessions/{session_key}/mutations/{mutation_id}/settlement",
    tag = "host",
    params(MutationPath),
    request_body = SettleBody,
    responses(
        (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn settle(State(state): State<AppState>, write: Valid<EntryPath, SettleBody>) -> Reply {
    run(&state, write.command, StatusCode::OK).await
}

/// `POST …/{mutation_id}/cancellation` `{"attempt_id", "reason"?}` → 200.
#[utoipa::path(
    post,
    path = "/api/host/sessions/{session_key}/mutations/{mutation_id}/cancellation",
    tag = "host",
    params(MutationPath),
    request_body = CancelBody,
    responses(
        (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn cancel(State(state): State<AppState>, write: Valid<EntryPath, CancelBody>) -> Reply {
    run(&state, write.command, StatusCode::OK).await
}

/// `POST …/{mutation_id}/reconciliation` `{"attempt_id", "completed", "evidence": {"source", "reference",
/// "observed_at", "provider_status"?}}` → 200.
#[utoipa::path(
    post,
    path = "/api/host/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
    tag = "host",
    params(MutationPath),
    request_body = ReconcileBody,
    responses(
        (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn reconcile(
    State(state): State<AppState>,
    write: Valid<EntryPath, ReconcileBody>,
) -> Reply {
    run(&state, write.command, StatusCode::OK).await
}

/// `PUT …/{mutation_id}/metadata` `{"id", "url", "title"}` → 200. All three are set at once; a missing or
/// empty one becomes `null`. A field of any size up to the 2 MiB body limit is accepted; only its sanitised
/// form is stored (truncated or withheld, credentials redacted: `docs/api.md`). An attach identical to the
/// current metadata once sanitised changes nothing.
#[utoipa::path(
    put,
    path = "/api/host/sessions/{session_key}/mutations/{mutation_id}/metadata",
    tag = "host",
    params(MutationPath),
    request_body = MetadataBody,
    responses(
        (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn attach_metadata(
    State(state): State<AppState>,
    write: Valid<EntryPath, MetadataBody>,
) -> Reply {
    run(&state, write.command, StatusCode::OK).await
}

/// `POST …/{mutation_id}/attempts` `{"attempt_id"}` → 200: a fresh attempt of a `not_executed` entry.
#[utoipa::path(
    post,
    path = "/api/host/sessions/{session_key}/mutations/{mutation_id}/attempts",
    tag = "host",
    params(MutationPath),
    request_body = AttemptBody,
    responses(
        (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn fresh_attempt(
    State(state): State<AppState>,
    write: Valid<EntryPath, Attempt<true>>,
) -> Reply {
    run(&state, write.command, StatusCode::OK).await
}

/// `DELETE /api/host/sessions/{session_key}` → 204; 404 when there is no such session.
#[utoipa::path(
    delete,
    path = "/api/host/sessions/{session_key}",
    tag = "host",
    params(("session_key" = inline(Identifier), Path, description = "session key, percent-encoded")),
    responses(
        (status = 204, description = "deleted with its turns and entries"),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn delete_session(
    State(state): State<AppState>,
    p: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let key = session(path(p)?)?;
    state.engine.delete_session(&key).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `{"operations": [...]}`: 0 to 1,000 batch items.
#[derive(Deserialize, ToSchema)]
pub struct BatchBody {
    #[schema(value_type = Vec<BatchItem>, required = true, max_items = 1000)]
    operations: Option<Vec<serde_json::Value>>,
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
            .into()
    }
}

impl ToSchema for BatchItem {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("Identifier".into(), Identifier::schema()));
        schemas.push(("ApproveBody".into(), ApproveBody::schema()));
        schemas.push(("AttemptBody".into(), AttemptBody::schema()));
        schemas.push(("SettleBody".into(), SettleBody::schema()));
        schemas.push(("CancelBody".into(), CancelBody::schema()));
        schemas.push(("CancelReason".into(), CancelReason::schema()));
        schemas.push(("ReconcileBody".into(), ReconcileBody::schema()));
        schemas.push(("MetadataBody".into(), MetadataBody::schema()));
    }
}

/// `POST /api/host/batch` answer: `{"results": [...]}`, one per operation, in order.
#[derive(Serialize, ToSchema)]
pub struct BatchResults {
    pub results: Vec<BatchResult>,
}

/// One result of a batch: the entry on success, the error otherwise, with the status the single call
/// would have answered.
#[derive(Serialize, ToSchema)]
pub struct BatchResult {
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<EntryState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

/// One batch item as a command and the status its single call answers: `session_key` first, then `op`,
/// then (but for `approve`) `mutation_id`, then the body's fields, each as the single call checks them.
fn batch_op(value: serde_json::Value) -> Result<(Command, StatusCode), ApiError> {
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
        _ => Err(ApiError::invalid_field(
            "op",
            "op is approve, intent, settle, cancel, reconcile, metadata or attempt",
        )),
    }?;
    Ok((command, StatusCode::OK))
}

/// `POST /api/host/batch` `{"operations": [{"op": "approve", "session_key", …}, …]}` → 200
/// `{"results": [{"status", "entry"? , "error"?}, …]}`: applied in order, one result each, every applied
/// operation committed together. An operation that is invalid or refused changes nothing; the rest apply.
/// At most [`MAX_BATCH_OPERATIONS`].
#[utoipa::path(
    post,
    path = "/api/host/batch",
    tag = "host",
    request_body = BatchBody,
    responses(
        (status = 200, description = "one result per operation, in order", body = BatchResults),
        (status = 400, description = "malformed JSON", body = ledger::wire::ErrorBody),
        (status = 401, description = "missing or wrong host token", body = ledger::wire::ErrorBody),
        (status = 422, description = "`operations` missing or too long", body = ledger::wire::ErrorBody),
        (status = 429, description = "too many failed tokens from this address; retry after `Retry-After` seconds", body = ledger::wire::ErrorBody),
        (status = 503, description = "the ledger is busy; nothing changed; retry after `Retry-After` seconds", body = ledger::wire::ErrorBody),
    ),
    security(("host_token" = []))
)]
pub async fn batch(
    State(state): State<AppState>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: BatchBody = body(bytes)?;
    let ops = required(b.operations, "operations")?;
    if ops.len() > MAX_BATCH_OPERATIONS {
        return Err(ApiError::invalid_field(
            "operations",
            format!("at most {MAX_BATCH_OPERATIONS} operations per batch"),
        ));
    }
    let parsed: Vec<Result<(Command, StatusCode), ApiError>> =
        ops.into_iter().map(batch_op).collect();
    let valid: Vec<Command> = parsed
        .iter()
        .filter_map(|p| p.as_ref().ok().map(|(op, _)| op.clone()))
        .collect();
    let mut applied = state.engine.apply_batch(valid).await?.into_iter();
    let mut results = Vec::with_capacity(parsed.len());
    for p in parsed {
        let outcome = match p {
            Err(e) => Err(e),
            Ok((_, status)) => match applied.next() {
                Some(Ok(entry)) => Ok((status, entry)),
                Some(Err(e)) => Err(ApiError::from(e)),
                None => Err(ApiError::internal()),
            },
        };
        results.push(match outcome {
            Ok((status, entry)) => BatchResult {
                status: status.as_u16(),
                entry: Some(entry),
                error: None,
            },
            Err(e) => BatchResult {
                status: e.status.as_u16(),
                entry: None,
                error: Some(*e.detail),
            },
        });
    }
    Ok(Json(BatchResults { results }).into_response())
}
