//! The host write API (DESIGN "Host write API"), under `/api/host`, guarded by the host token.
//! Errors are checked in order: 401 (token, by middleware) → 400 (malformed JSON or path) → 422 (a field
//! breaks a rule; names the field) → 404 (unknown or expired session, unknown mutation) → 409 (a refused
//! transition, with the entry's current state). Every error changes nothing.

use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
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
use utoipa::ToSchema;

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

#[derive(Deserialize, Default, ToSchema)]
pub struct ApproveBody {
    logical_turn_id: Option<String>,
    mutation_id: Option<String>,
    tool: Option<String>,
}

#[derive(Deserialize, Default, ToSchema)]
pub struct AttemptBody {
    attempt_id: Option<String>,
}

#[derive(Deserialize, Default, ToSchema)]
pub struct SettleBody {
    attempt_id: Option<String>,
    status: Option<String>,
    reason: Option<String>,
}

#[derive(Deserialize, Default, ToSchema)]
pub struct CancelBody {
    attempt_id: Option<String>,
    reason: Option<String>,
}

#[derive(Deserialize, Default, ToSchema)]
pub struct EvidenceBody {
    source: Option<String>,
    reference: Option<String>,
    observed_at: Option<String>,
    /// The provider's status of the original attempt, when the host passes it through: only `completed`
    /// and `not_accepted` are conclusive.
    provider_status: Option<String>,
}

#[derive(Deserialize, Default, ToSchema)]
pub struct ReconcileBody {
    attempt_id: Option<String>,
    completed: Option<bool>,
    evidence: Option<EvidenceBody>,
}

#[derive(Deserialize, Default, ToSchema)]
pub struct MetadataBody {
    id: Option<String>,
    url: Option<String>,
    title: Option<String>,
}

fn approve_op(key: SessionKey, b: ApproveBody) -> Result<Command, ApiError> {
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

fn settle_op(key: SessionKey, m: MutationId, b: SettleBody) -> Result<Command, ApiError> {
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
        key,
        m,
        Action::Settle {
            attempt_id,
            settlement,
            reason,
        },
    ))
}

fn cancel_op(key: SessionKey, m: MutationId, b: CancelBody) -> Result<Command, ApiError> {
    let attempt_id = attempt(b.attempt_id)?;
    let reason = reason(b.reason)?;
    Ok(Command::new(key, m, Action::Cancel { attempt_id, reason }))
}

fn reconcile_op(key: SessionKey, m: MutationId, b: ReconcileBody) -> Result<Command, ApiError> {
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
        key,
        m,
        Action::Reconcile {
            attempt_id,
            completed,
            evidence,
        },
    ))
}

fn metadata_op(key: SessionKey, m: MutationId, b: MetadataBody) -> Command {
    let non_empty = |v: Option<String>| v.filter(|s| !s.is_empty());
    let metadata = HostMetadata {
        id: non_empty(b.id),
        url: non_empty(b.url),
        title: non_empty(b.title),
    };
    Command::new(key, m, Action::AttachMetadata { metadata })
}

async fn run(
    state: &AppState,
    op: Command,
    status: StatusCode,
) -> Result<(StatusCode, Json<EntryState>), ApiError> {
    let entry = state.engine.apply(op).await?;
    Ok((status, Json(entry)))
}

type Reply = Result<(StatusCode, Json<EntryState>), ApiError>;

/// The path of one mutation (documentation only: handlers take it as a `(String, String)` tuple so a bad
/// segment is a 400 before the body is read).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub struct MutationPath {
    /// Session key, percent-encoded.
    session_key: String,
    /// Operation id, percent-encoded.
    mutation_id: String,
}

/// One transition of one mutation: path (400), body (400/422), identifiers (422), then the ledger.
async fn step<B: DeserializeOwned>(
    state: &AppState,
    p: Result<Path<(String, String)>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
    build: impl FnOnce(SessionKey, MutationId, B) -> Result<Command, ApiError>,
) -> Reply {
    let (k, m) = path(p)?;
    let b: B = body(bytes)?;
    let op = build(session(k)?, mutation(m)?, b)?;
    run(state, op, StatusCode::OK).await
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
    params(("session_key" = String, Path, description = "session key, percent-encoded")),
    request_body = ApproveBody,
    responses(
        (status = 201, description = "approved: the entry exists, nothing is published yet", body = ledger::wire::EntryState),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn approve(
    State(state): State<AppState>,
    p: Result<Path<String>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Reply {
    let key = path(p)?;
    let b: ApproveBody = body(bytes)?;
    let key = session(key)?;
    run(&state, approve_op(key, b)?, StatusCode::CREATED).await
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
    p: Result<Path<(String, String)>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Reply {
    step(&state, p, bytes, |k, m, b: AttemptBody| {
        let attempt_id = attempt(b.attempt_id)?;
        Ok(Command::new(k, m, Action::RecordIntent { attempt_id }))
    })
    .await
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
pub async fn settle(
    State(state): State<AppState>,
    p: Result<Path<(String, String)>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Reply {
    step(&state, p, bytes, settle_op).await
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
pub async fn cancel(
    State(state): State<AppState>,
    p: Result<Path<(String, String)>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Reply {
    step(&state, p, bytes, cancel_op).await
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
    p: Result<Path<(String, String)>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Reply {
    step(&state, p, bytes, reconcile_op).await
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
    p: Result<Path<(String, String)>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Reply {
    step(&state, p, bytes, |k, m, b| Ok(metadata_op(k, m, b))).await
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
    p: Result<Path<(String, String)>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Reply {
    step(&state, p, bytes, |k, m, b: AttemptBody| {
        let attempt_id = attempt(b.attempt_id)?;
        Ok(Command::new(k, m, Action::FreshAttempt { attempt_id }))
    })
    .await
}

/// `DELETE /api/host/sessions/{session_key}` → 204; 404 when there is no such session.
#[utoipa::path(
    delete,
    path = "/api/host/sessions/{session_key}",
    tag = "host",
    params(("session_key" = String, Path, description = "session key, percent-encoded")),
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

#[derive(Deserialize, ToSchema)]
pub struct BatchBody {
    operations: Option<Vec<serde_json::Value>>,
}

#[derive(Deserialize)]
struct BatchOp {
    op: Option<String>,
    session_key: Option<String>,
    mutation_id: Option<String>,
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

fn batch_op(value: serde_json::Value) -> Result<(Command, StatusCode), ApiError> {
    let head: BatchOp = from_value(value.clone())?;
    let key = session(required(head.session_key, "session_key")?)?;
    let op = required(head.op, "op")?;
    if op == "approve" {
        return Ok((approve_op(key, from_value(value)?)?, StatusCode::CREATED));
    }
    let m = mutation(required(head.mutation_id, "mutation_id")?)?;
    let op = match op.as_str() {
        "intent" => {
            let b: AttemptBody = from_value(value)?;
            let attempt_id = attempt(b.attempt_id)?;
            Command::new(key, m, Action::RecordIntent { attempt_id })
        }
        "settle" => settle_op(key, m, from_value(value)?)?,
        "cancel" => cancel_op(key, m, from_value(value)?)?,
        "reconcile" => reconcile_op(key, m, from_value(value)?)?,
        "metadata" => metadata_op(key, m, from_value(value)?),
        "attempt" => {
            let b: AttemptBody = from_value(value)?;
            let attempt_id = attempt(b.attempt_id)?;
            Command::new(key, m, Action::FreshAttempt { attempt_id })
        }
        _ => {
            return Err(ApiError::invalid_field(
                "op",
                "op is approve, intent, settle, cancel, reconcile, metadata or attempt",
            ))
        }
    };
    Ok((op, StatusCode::OK))
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
