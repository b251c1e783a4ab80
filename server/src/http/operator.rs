//! Operator actions (docs/api.md "Operator actions"): staff add a note to an operation, or reconcile an
//! unknown outcome with evidence they observed at the provider. Staff only: a sign-in cookie, a staff API
//! token or the trusted proxy's user header; the host, a viewer, and nobody in open access mode get 403
//! `staff_only` (no credential where reads are closed: 401, from the middleware).
//!
//! Two ways in, one rule set:
//! - JSON under `/api/sessions/{session_key}/mutations/{mutation_id}/…` (documented), errors as the host
//!   API's: 401 → 403 → 415 → 400 → 422 → 404 → 409, each `{"error": …}`;
//! - no-JavaScript forms (`application/x-www-form-urlencoded`) under
//!   `/sessions/{session_key}/operations/{mutation_id}/…` (pages, not in the API document): 303 back to
//!   the operation page, or an HTML page saying what is wrong with the refusal's status.
//!
//! Both build the same [`Command`] through the host API's request types and conversions, and apply it
//! with [`Actor::Staff`], so the history records `staff:<name>`.

use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, State};
use axum::http::header::{CONTENT_TYPE, LOCATION, RETRY_AFTER};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use bytes::Bytes;
use ledger::command::Actor;
use ledger::wire::{EntryState, HistoryChange};
use ledger::Command;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::host::{MutationPath, NoteBody, ReconcileBody};
use super::query::path;
use super::sign_in::html;
use super::write::{EntryPath, Request, Valid};
use crate::access::Principal;
use crate::error::ApiError;
use crate::AppState;

/// The documented JSON routes, and the form routes of the operation page (undocumented).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(add_note))
        .routes(routes!(reconcile))
        .route(
            "/sessions/{session_key}/operations/{mutation_id}/notes",
            post(note_form),
        )
        .route(
            "/sessions/{session_key}/operations/{mutation_id}/reconciliation",
            post(reconcile_form),
        )
}

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
    /// Too many failed tokens from this address; retry after `Retry-After` seconds.
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
        super::write::JsonBodyErrors,
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
    tag = "operator",
    params(MutationPath),
    request_body = ReconcileBody,
    responses(
        (status = 200, description = "the entry after the change", body = ledger::wire::EntryState),
        OperatorErrors,
        super::write::JsonBodyErrors,
    ),
)]
pub async fn reconcile(
    State(state): State<AppState>,
    Staff(name): Staff,
    write: Valid<EntryPath, ReconcileBody>,
) -> Result<Json<EntryState>, ApiError> {
    let entry = state
        .engine
        .apply_as(Actor::Staff(name), write.command)
        .await?;
    Ok(Json(entry))
}

/// The fields of the operation page's note form.
#[derive(Deserialize)]
pub struct NoteForm {
    text: Option<String>,
}

/// The fields of the operation page's reconciliation form: `completed` is `true` or `false`; an empty
/// `provider_status` is absent.
#[derive(Deserialize)]
pub struct ReconcileForm {
    attempt_id: Option<String>,
    completed: Option<String>,
    source: Option<String>,
    reference: Option<String>,
    observed_at: Option<String>,
    provider_status: Option<String>,
}

/// What a form asks for, for the words of its refusal page.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FormAction {
    Note,
    Reconciliation,
}

/// `POST /sessions/{session_key}/operations/{mutation_id}/notes` (form field `text`) → 303 to the
/// operation page, or its refusal page.
async fn note_form(
    State(state): State<AppState>,
    principal: Result<Principal, ApiError>,
    p: Result<Path<EntryPath>, PathRejection>,
    form: Result<StrictForm<NoteForm>, ApiError>,
) -> Response {
    let back = back_to(&p);
    let done = async {
        let Staff(name) = staff(principal.as_ref().ok())?;
        let path = path(p)?;
        let StrictForm(f) = form?;
        let command = Command::try_from(Request {
            path,
            body: NoteBody::from_field(f.text),
        })?;
        state.engine.note_as(Actor::Staff(name), command).await?;
        Ok(())
    }
    .await;
    answer(done, FormAction::Note, &back)
}

/// `POST /sessions/{session_key}/operations/{mutation_id}/reconciliation` (form fields `attempt_id`,
/// `completed`, `source`, `reference`, `observed_at`, `provider_status`) → 303 to the operation page, or
/// its refusal page.
async fn reconcile_form(
    State(state): State<AppState>,
    principal: Result<Principal, ApiError>,
    p: Result<Path<EntryPath>, PathRejection>,
    form: Result<StrictForm<ReconcileForm>, ApiError>,
) -> Response {
    let back = back_to(&p);
    let done = async {
        let Staff(name) = staff(principal.as_ref().ok())?;
        let path = path(p)?;
        let StrictForm(f) = form?;
        let completed = match f.completed.as_deref() {
            None => None,
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(_) => {
                return Err(ApiError::invalid_field(
                    "completed",
                    "completed is true or false",
                ))
            }
        };
        let body = ReconcileBody::from_fields(
            f.attempt_id,
            completed,
            f.source,
            f.reference,
            f.observed_at,
            f.provider_status,
        );
        let command = Command::try_from(Request { path, body })?;
        state
            .engine
            .apply_as(Actor::Staff(name), command)
            .await
            .map(|_| ())
            .map_err(ApiError::from)
    }
    .await;
    answer(done, FormAction::Reconciliation, &back)
}

/// The operation page the forms come from and go back to (`/` when the path could not be read).
fn back_to(p: &Result<Path<EntryPath>, PathRejection>) -> String {
    match p {
        Ok(Path((k, m))) => app::routes::history_href(k, m),
        Err(_) => "/".to_owned(),
    }
}

/// A form body as the operation page sends it (`application/x-www-form-urlencoded`, its media type
/// matched case-insensitively, RFC 9110 8.3.1), decoded strictly: every field must be UTF-8 once
/// percent-decoded (a byte that is not is refused, never replaced by U+FFFD), a field given twice is
/// refused. Errors: 415 `unsupported_media_type`, 413 `body_too_large`, 400 `invalid_body`.
pub struct StrictForm<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for StrictForm<T> {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let is_form = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<mime::Mime>().ok())
            .is_some_and(|m| {
                m.essence_str() == mime::APPLICATION_WWW_FORM_URLENCODED.essence_str()
            });
        if !is_form {
            let mut e = ApiError::bad_request(
                "unsupported_media_type",
                "the form must be sent as application/x-www-form-urlencoded",
                None,
            );
            e.status = StatusCode::UNSUPPORTED_MEDIA_TYPE;
            return Err(e);
        }
        let bytes = crate::http::write::raw(Bytes::from_request(req, state).await)?;
        // Separators are ASCII: the whole body decodes to UTF-8 exactly when every name and value does.
        if percent_encoding::percent_decode(&bytes)
            .decode_utf8()
            .is_err()
        {
            return Err(ApiError::bad_request(
                "invalid_body",
                "the form's text is not UTF-8",
                None,
            ));
        }
        serde_urlencoded::from_bytes(&bytes)
            .map(StrictForm)
            .map_err(|e| {
                ApiError::bad_request(
                    "invalid_body",
                    format!("the form could not be read: {e}"),
                    None,
                )
            })
    }
}

/// 303 back to the operation page, or the refusal page with the error's status.
fn answer(done: Result<(), ApiError>, action: FormAction, back: &str) -> Response {
    match done {
        Ok(()) => {
            let location = HeaderValue::from_str(back).unwrap_or(HeaderValue::from_static("/"));
            (StatusCode::SEE_OTHER, [(LOCATION, location)]).into_response()
        }
        Err(e) => {
            let heading = match action {
                FormAction::Note => "The note was not saved.",
                FormAction::Reconciliation => "The outcome was not reconciled.",
            };
            let page = app::standalone::operator_refusal_page(heading, &plain_words(&e), back);
            let mut response = html(e.status, page);
            if let Some(secs) = e.retry_after() {
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(secs));
            }
            response
        }
    }
}

/// What a refusal means, for a person at the form.
fn plain_words(e: &ApiError) -> String {
    let d = &e.detail;
    let words = match (e.status, d.code.as_str(), d.field.as_deref()) {
        (StatusCode::FORBIDDEN, "staff_only", _) => {
            "Only signed-in staff can add notes or reconcile outcomes."
        }
        (StatusCode::UNPROCESSABLE_ENTITY, _, Some("text")) => {
            "A note is 1 to 4096 bytes of text (4 KiB): this one is empty or too long."
        }
        (StatusCode::UNPROCESSABLE_ENTITY, _, Some("attempt_id")) => {
            "The attempt is missing or not valid. Reload the operation page and try again."
        }
        (StatusCode::UNPROCESSABLE_ENTITY, _, Some("completed")) => {
            "Choose whether the original attempt completed or was not executed."
        }
        (StatusCode::UNPROCESSABLE_ENTITY, _, Some("evidence.source")) => {
            "Say where the evidence comes from (the source): it cannot be empty."
        }
        (StatusCode::UNPROCESSABLE_ENTITY, _, Some("evidence.reference")) => {
            "Give the provider's reference for the original operation: it cannot be empty."
        }
        (StatusCode::UNPROCESSABLE_ENTITY, _, Some("evidence.observed_at")) => {
            "When the provider observed it must be a date and time such as 2026-11-29T10:00:00Z (RFC 3339)."
        }
        (StatusCode::UNPROCESSABLE_ENTITY, _, Some("evidence.provider_status")) => {
            return format!(
                "The provider status does not settle this outcome: {}.",
                d.message
            )
        }
        (StatusCode::NOT_FOUND, _, _) => {
            "There is no such operation in this session, or the session has expired."
        }
        (StatusCode::CONFLICT, "attempt_mismatch", _) => {
            "The operation is on another attempt than the one the page showed. Reload the operation page and check the evidence against its current attempt."
        }
        (StatusCode::CONFLICT, "already_settled", _) => {
            "This outcome is not unknown: it is already settled, so there is nothing to reconcile."
        }
        (StatusCode::SERVICE_UNAVAILABLE, _, _) => {
            "The ledger is busy. Try again in a moment."
        }
        (StatusCode::INTERNAL_SERVER_ERROR, _, _) => {
            "Something went wrong on the server; the server log says what."
        }
        (StatusCode::BAD_REQUEST | StatusCode::UNSUPPORTED_MEDIA_TYPE, _, _) => {
            return format!("The form could not be read: {}", d.message)
        }
        _ => return d.message.clone(),
    };
    words.to_owned()
}
