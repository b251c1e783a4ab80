//! The operator actions' JSON API (docs/api.md "Operator actions", "Claims"), documented in
//! `/api/openapi.json` under the tag `operator`: `POST …/notes`, `POST …/reconciliation`,
//! `POST`/`DELETE …/claim` and `POST …/assignment` under
//! `/api/sessions/{session_key}/mutations/{mutation_id}`. Errors as the host API's: 401 → 403 → 415 →
//! 400 → 422 → 404 → 409, each `{"error": …}` ([`OperatorErrors`]).

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use ledger::command::Actor;
use ledger::wire::{EntryState, HistoryChange};
use serde::Deserialize;

use super::checks::{assignee, claimed_entry};
use crate::access::Principal;
use crate::error::ApiError;
use crate::http::extract::WritePath;
use crate::http::host::{MutationPath, NoteBody, ReconcileBody};
use crate::http::write::{EntryPath, Valid};
use crate::AppState;

/// The staff member asking (an extractor): 401 without a caller (reads closed, no credential), 403
/// `staff_only` for the host, a viewer or open access.
pub struct Staff(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Staff {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        staff(parts.extensions.get::<Principal>())
    }
}

fn staff(principal: Option<&Principal>) -> Result<Staff, ApiError> {
    match principal {
        Some(Principal::Staff { name, .. }) => Ok(Staff(name.clone())),
        Some(_) => Err(ApiError::staff_only()),
        None => Err(ApiError::credential_required()),
    }
}

/// The error answers of an operator action (documentation only).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum OperatorErrors {
    /// Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path.
    #[response(status = 400)]
    BadRequest(ledger::wire::ErrorBody),
    /// No credential (reads are closed), or a wrong token.
    #[response(status = 401)]
    Unauthorized(ledger::wire::ErrorBody),
    /// `staff_only`: the caller is the host, a viewer, or nobody in open access mode; or
    /// `origin_mismatch`: a sign-in cookie or the proxy's user header without a matching `Origin`.
    #[response(status = 403)]
    Forbidden(ledger::wire::ErrorBody),
    /// A field breaks a rule; `field` names it.
    #[response(status = 422)]
    Invalid(ledger::wire::ErrorBody),
    /// Unknown or expired session, unknown mutation.
    #[response(status = 404)]
    NotFound(ledger::wire::ErrorBody),
    /// Refused transition; `current` is the unchanged entry.
    #[response(status = 409)]
    Conflict(ledger::wire::ErrorBody),
    /// `too_many_failures`: too many failed tokens from this address; or `too_many_claims`: a claim or
    /// release by a staff member who claimed or released this operation 10 times in the last minute
    /// (nothing changed). Retry after `Retry-After` seconds.
    #[response(status = 429)]
    TooManyFailures(ledger::wire::ErrorBody),
    /// The ledger is busy; nothing changed; retry after `Retry-After` seconds.
    #[response(status = 503)]
    Busy(ledger::wire::ErrorBody),
}

/// `POST /api/sessions/{session_key}/mutations/{mutation_id}/notes` `{"text"}` → 201 with the history row
/// the note added (`kind` `note`, `actor` `staff:<name>`, `revision` null). No revision, no live event;
/// the entry is unchanged.
#[utoipa::path(
    post,
    path = "/api/sessions/{session_key}/mutations/{mutation_id}/notes",
    tag = "operator",
    params(MutationPath),
    request_body = NoteBody,
    responses(
        (status = 201, description = "the history row the note added, as the history API serves it", body = ledger::wire::HistoryChange),
        OperatorErrors,
        crate::http::write::JsonBodyErrors,
    ),
)]
pub async fn add_note(
    State(state): State<AppState>,
    Staff(name): Staff,
    write: Valid<EntryPath, NoteBody>,
) -> Result<(StatusCode, Json<HistoryChange>), ApiError> {
    let change = state
        .engine
        .note_as(Actor::Staff(name), write.command)
        .await?;
    Ok((StatusCode::CREATED, Json(change)))
}

/// `POST /api/sessions/{session_key}/mutations/{mutation_id}/reconciliation` with the host API's body
/// (`{"attempt_id", "completed", "evidence": {"source", "reference", "observed_at",
/// "provider_status"?}}`) → 200 with the entry's state: the host's reconciliation, asked by staff.
#[utoipa::path(
    post,
    path = "/api/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
    // Not `reconcile`: the host's reconciliation has that name, and an operationId is unique.
    operation_id = "reconcile_as_staff",
    tag = "operator",
    params(MutationPath),
    request_body = ReconcileBody,
    responses(
        (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
        OperatorErrors,
        crate::http::write::JsonBodyErrors,
    ),
)]
pub async fn reconcile(
    State(state): State<AppState>,
    Staff(name): Staff,
    write: Valid<EntryPath, ReconcileBody>,
) -> Result<Json<EntryState>, ApiError> {
    let kind = crate::metrics::kind_of(&write.command.action);
    let entry = state
        .engine
        .apply_as(Actor::Staff(name), write.command)
        .await?;
    state.metrics.transition(kind, entry.ledger_status);
    Ok(Json(entry))
}

/// `POST /api/sessions/{session_key}/mutations/{mutation_id}/claim` (no body; one sent is ignored) → 201
/// with the `claim` history row ("I am on it": `actor` `staff:<name>`, `revision` null), or 200 with the
/// row that took it when the caller already holds the claim; 409 `already_claimed` with `claim` `{"by",
/// "at"}` when another staff member holds it; 429 `too_many_claims` with `Retry-After` when the caller
/// claimed or released this operation 10 times in the last 60 s (docs/api.md "Claims"). No revision; the
/// entry is unchanged; staff live streams get `claim_changed` (on every instance); a viewer never sees
/// claims.
#[utoipa::path(
    post,
    path = "/api/sessions/{session_key}/mutations/{mutation_id}/claim",
    tag = "operator",
    params(MutationPath),
    responses(
        (status = 201, description = "the claim's history row", body = ledger::wire::HistoryChange),
        (status = 200, description = "the caller already holds the claim: the row that took it", body = ledger::wire::HistoryChange),
        OperatorErrors,
    ),
)]
pub async fn claim(
    State(state): State<AppState>,
    Staff(name): Staff,
    WritePath(entry): WritePath<EntryPath>,
) -> Result<(StatusCode, Json<HistoryChange>), ApiError> {
    let (session_key, mutation_id) = claimed_entry(entry)?;
    let (row, added) = state
        .engine
        .claim_as(Actor::Staff(name), session_key, mutation_id)
        .await?;
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(row)))
}

/// `DELETE /api/sessions/{session_key}/mutations/{mutation_id}/claim` → 204: the claim is released,
/// whoever held it (a `release` history row with the caller as actor), or nobody held it (nothing is
/// written). Errors as the claim's, without 409.
#[utoipa::path(
    delete,
    path = "/api/sessions/{session_key}/mutations/{mutation_id}/claim",
    tag = "operator",
    params(MutationPath),
    responses(
        (status = 204, description = "nobody holds the claim now"),
        OperatorErrors,
    ),
)]
pub async fn release(
    State(state): State<AppState>,
    Staff(name): Staff,
    WritePath(entry): WritePath<EntryPath>,
) -> Result<StatusCode, ApiError> {
    let (session_key, mutation_id) = claimed_entry(entry)?;
    state
        .engine
        .release_as(Actor::Staff(name), session_key, mutation_id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `{"to"}`: the staff member an operation's claim is handed to (docs/api.md "Claims").
#[derive(Deserialize, utoipa::ToSchema)]
pub struct AssignBody {
    /// A staff account's name (1 to 64 ASCII letters, digits, `.`, `_`, `-`, `@`); no such account is
    /// 422 naming `to`.
    #[schema(value_type = String, required = true, min_length = 1)]
    to: Option<String>,
}

/// `POST /api/sessions/{session_key}/mutations/{mutation_id}/assignment` `{"to": "<staff name>"}` → 201
/// with the `claim` history row that hands the operation to that staff member (`actor` the caller,
/// `note` the assignee's name), or 200 with the row that took it when the assignee already holds it;
/// 422 naming `to` for a name that is no staff account; 409 `already_claimed` with `claim` when a third
/// staff member holds it (release it first); 429 `too_many_claims` as a claim (docs/api.md "Claims").
/// Sends `claim_changed` to the session's staff streams.
#[utoipa::path(
    post,
    path = "/api/sessions/{session_key}/mutations/{mutation_id}/assignment",
    tag = "operator",
    params(MutationPath),
    request_body = AssignBody,
    responses(
        (status = 201, description = "the assignment's `claim` history row (`note`: the assignee)", body = ledger::wire::HistoryChange),
        (status = 200, description = "the assignee already holds the claim: the row that took it", body = ledger::wire::HistoryChange),
        OperatorErrors,
        crate::http::write::JsonBodyErrors,
    ),
)]
pub async fn assign(
    State(state): State<AppState>,
    Staff(name): Staff,
    crate::http::write::PathAndBody { path, bytes }: crate::http::write::PathAndBody<EntryPath>,
) -> Result<(StatusCode, Json<HistoryChange>), ApiError> {
    let body: AssignBody = crate::http::write::body(&bytes)?;
    let (session_key, mutation_id) = claimed_entry(path)?;
    let to = assignee(&state, body.to).await?;
    let (row, added) = state
        .engine
        .assign_as(Actor::Staff(name), session_key, mutation_id, to)
        .await?;
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(row)))
}
