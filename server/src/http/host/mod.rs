//! The host write API (docs/api.md "Host write API"), under `/api/host`, guarded by the host token.
//! Errors are checked in order: 401 (token, by middleware) → 415 (a body not sent as `application/json`)
//! → 400 (malformed JSON, a key given twice, or path) → 422 (a field
//! breaks a rule; names the field) → 404 (unknown or expired session, unknown mutation) → 409 (a refused
//! transition, with the entry's current state). Every error changes nothing.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use ledger::wire::{EntryState, ErrorDetail};
use ledger::Command;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::error::ApiError;
use crate::http::extract::WritePath;
use crate::http::write::{body, required, EntryPath, JsonBody, JsonBodyErrors, SessionPath, Valid};
use crate::AppState;

mod requests;
pub use crate::http::write::Identifier;
pub use requests::*;

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
        .routes(routes!(extend_deadline))
        .routes(routes!(delete_session))
        .routes(routes!(batch))
        .routes(routes!(ledger_identity))
}

/// Most operations one batch may carry (shared with `outcomes import`, which sends at most this many).
pub use ledger::command::MAX_BATCH_OPERATIONS;

/// Applies one host write and counts it (`outcomes_transitions_total`, docs/api.md "Metrics") once it
/// was answered.
async fn run(state: &AppState, op: Command, status: StatusCode) -> Reply {
    let kind = crate::metrics::kind_of(&op.action);
    let entry = state.engine.apply(op).await?;
    state.metrics.transition(kind, entry.ledger_status);
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
    /// Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path.
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
        JsonBodyErrors,
    ),
    security(("host_token" = []))
)]
pub async fn approve(
    State(state): State<AppState>,
    write: Valid<SessionPath, ApproveBody>,
) -> Reply {
    run(&state, write.command, StatusCode::CREATED).await
}

/// One transition of one mutation: `METHOD /api/host/sessions/{session_key}/mutations/{mutation_id}/…`,
/// its documentation and its handler. The body is read as `$extract` (its documented schema is
/// `$schema`), converted to a [`Command`] by [`Valid`], applied, and answered 200 with the entry.
macro_rules! transition {
    ($(#[$doc:meta])* $name:ident: $method:ident $path:literal, $schema:ty, $extract:ty) => {
        $(#[$doc])*
        #[utoipa::path(
            $method,
            path = $path,
            tag = "host",
            params(MutationPath),
            request_body = $schema,
            responses(
                (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
                HostErrors,
                JsonBodyErrors,
            ),
            security(("host_token" = []))
        )]
        pub async fn $name(State(state): State<AppState>, write: Valid<EntryPath, $extract>) -> Reply {
            run(&state, write.command, StatusCode::OK).await
        }
    };
}

transition!(
    /// `POST …/{mutation_id}/intent` `{"attempt_id", "deadline_secs"?}` → 200: the attempt is in flight
    /// until its host settles it, or until its deadline (`deadline_secs` from now, 1 to 604800; default
    /// the server's `--in-flight-deadline-secs`), when the ledger settles it `outcome_unknown` with
    /// `execution_timeout` itself (docs/api.md "Deadlines").
    record_intent: post "/api/host/sessions/{session_key}/mutations/{mutation_id}/intent",
    AttemptBody, Attempt<false>
);

transition!(
    /// `POST …/{mutation_id}/settlement` `{"attempt_id", "status", "reason"?}` → 200.
    settle: post "/api/host/sessions/{session_key}/mutations/{mutation_id}/settlement",
    SettleBody, SettleBody
);

transition!(
    /// `POST …/{mutation_id}/cancellation` `{"attempt_id", "reason"?}` → 200.
    cancel: post "/api/host/sessions/{session_key}/mutations/{mutation_id}/cancellation",
    CancelBody, CancelBody
);

transition!(
    /// `POST …/{mutation_id}/reconciliation` `{"attempt_id", "completed", "evidence": {"source",
    /// "reference", "observed_at", "provider_status"?}}` → 200.
    reconcile: post "/api/host/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
    ReconcileBody, ReconcileBody
);

transition!(
    /// `PUT …/{mutation_id}/metadata` `{"id", "url", "title"}` → 200. All three are set at once; a
    /// missing or empty one becomes `null`. A field of any size up to the 2 MiB body limit is accepted;
    /// only its sanitised form is stored (truncated or withheld, credentials redacted: `docs/api.md`). An
    /// attach identical to the current metadata once sanitised changes nothing.
    attach_metadata: put "/api/host/sessions/{session_key}/mutations/{mutation_id}/metadata",
    MetadataBody, MetadataBody
);

transition!(
    /// `POST …/{mutation_id}/attempts` `{"attempt_id", "deadline_secs"?}` → 200: a fresh attempt of a
    /// `not_executed` entry, with its deadline as an intent's.
    fresh_attempt: post "/api/host/sessions/{session_key}/mutations/{mutation_id}/attempts",
    AttemptBody, Attempt<true>
);

transition!(
    /// `POST …/{mutation_id}/deadline` `{"attempt_id", "deadline_secs"}` → 200: the host still works on
    /// the attempt in flight; its deadline becomes now + `deadline_secs` (1 to 604800), never earlier
    /// than it was. No revision, no event. 409 unless `execution_started` under that attempt
    /// (docs/api.md "Deadlines").
    extend_deadline: post "/api/host/sessions/{session_key}/mutations/{mutation_id}/deadline",
    DeadlineBody, DeadlineBody
);

/// `{"ledger_id"}`: the ledger's id, 32 lowercase hex digits.
#[derive(Serialize, serde::Deserialize, ToSchema)]
pub struct LedgerIdentity {
    /// Random, made once when the ledger was created, the same for every instance on one database:
    /// hosts derive idempotency keys from it (docs/api.md "The ledger's id").
    #[schema(pattern = "^[0-9a-f]{32}$")]
    pub ledger_id: String,
}

/// `GET /api/host/ledger` → 200 `{"ledger_id"}` (docs/api.md "The ledger's id"); 401 without the host
/// token.
#[utoipa::path(
    get,
    path = "/api/host/ledger",
    tag = "host",
    responses(
        (status = 200, description = "the ledger's id", body = LedgerIdentity),
        (status = 401, description = "missing or wrong host token", body = ledger::wire::ErrorBody),
    ),
    security(("host_token" = []))
)]
pub async fn ledger_identity(
    State(state): State<AppState>,
) -> Result<Json<LedgerIdentity>, ApiError> {
    Ok(Json(LedgerIdentity {
        ledger_id: state.sessions.ledger_id().await?,
    }))
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
    WritePath(key): WritePath<String>,
) -> Result<StatusCode, ApiError> {
    let key = session(key)?;
    state.engine.delete_session(&key).await?;
    Ok(StatusCode::NO_CONTENT)
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
        (status = 400, description = "malformed JSON, or a key given twice", body = ledger::wire::ErrorBody),
        (status = 401, description = "missing or wrong host token", body = ledger::wire::ErrorBody),
        (status = 415, description = "the body is not sent as `Content-Type: application/json`", body = ledger::wire::ErrorBody),
        (status = 422, description = "`operations` missing or too long", body = ledger::wire::ErrorBody),
        (status = 429, description = "too many failed tokens from this address; retry after `Retry-After` seconds", body = ledger::wire::ErrorBody),
        (status = 503, description = "the ledger is busy; nothing changed; retry after `Retry-After` seconds", body = ledger::wire::ErrorBody),
    ),
    security(("host_token" = []))
)]
pub async fn batch(
    State(state): State<AppState>,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let b: BatchBody = body(&bytes)?;
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
            Ok((op, status)) => match applied.next() {
                Some(Ok(entry)) => {
                    state
                        .metrics
                        .transition(crate::metrics::kind_of(&op.action), entry.ledger_status);
                    Ok((status, entry))
                }
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
