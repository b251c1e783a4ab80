//! The operation page's no-JavaScript forms (docs/api.md "The operation page's forms"):
//! `application/x-www-form-urlencoded` posts under `/sessions/{session_key}/operations/{mutation_id}/`
//! (`notes`, `reconciliation`, `claim`, `release`, `assignment`; pages, not in the API document). Each
//! answers 303 back to the operation page (or a claim form's `next`), or an HTML page saying what is
//! wrong with the refusal's status (and `Retry-After` when it has one); a note or reconciliation whose
//! sender's sign-in ended gets the sign-in page keeping what was typed (401). The forms build the same
//! [`Command`] as the JSON API ([`super::api`]) and apply it as [`Actor::Staff`].

use axum::extract::{FromRequest, State};
use axum::http::header::{CONTENT_TYPE, LOCATION, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use ledger::command::Actor;
use ledger::Command;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::checks::{assignee, claimed_entry};
use crate::access::{origin_matches, Principal};
use crate::error::ApiError;
use crate::http::extract::WritePath;
use crate::http::host::{NoteBody, ReconcileBody};
use crate::http::page::html;
use crate::http::write::{EntryPath, Request};
use crate::AppState;
use app::standalone::{
    operator_form_page, sign_in_page_keeping, FormProblem, OperatorAction, OperatorInput,
    PendingForm,
};

/// `GET` on a form's path (a bookmark, or where a sign-in came back to): 303 to its operation page.
pub(super) async fn to_operation_page(p: Result<WritePath<EntryPath>, ApiError>) -> Response {
    see_other(&back_to(&p))
}

/// 303 to `location` (a path of this server), or to `/` when it cannot be a header value.
fn see_other(location: &str) -> Response {
    let location = HeaderValue::from_str(location).unwrap_or(HeaderValue::from_static("/"));
    (StatusCode::SEE_OTHER, [(LOCATION, location)]).into_response()
}

/// The fields of the assignment form: `to` (a staff account's name), `next` (as [`ClaimForm`]'s).
#[derive(Deserialize)]
pub struct AssignForm {
    to: Option<String>,
    next: Option<String>,
}

/// `POST /sessions/{session_key}/operations/{mutation_id}/assignment` (form fields `to`, `next`) → 303
/// to `next` or the operation page; a refusal (no such staff account: 422 naming `to`; held by a third
/// staff member: 409; not staff: 403) is a page saying so with its status and the way back.
pub(super) async fn assign_form(
    State(state): State<AppState>,
    principal: Result<Principal, ApiError>,
    p: Result<WritePath<EntryPath>, ApiError>,
    form: Result<StrictForm<AssignForm>, ApiError>,
) -> Response {
    let back = back_to(&p);
    let refused = |e: &ApiError, staff: Option<&str>| {
        with_status(
            e,
            app::standalone::operator_refusal_page_for(
                "The operation was not assigned.",
                &plain_words(e),
                &back,
                staff,
            ),
        )
    };
    let name = match principal {
        Ok(Principal::Staff { name, .. }) => name,
        Ok(_) => return refused(&ApiError::staff_only(), None),
        Err(e) => return refused(&e, None),
    };
    let f = match form {
        Ok(StrictForm(f)) => f,
        Err(e) => return refused(&e, Some(&name)),
    };
    let next = claim_back(f.next.as_deref(), &back);
    let done = async {
        let WritePath(entry) = p?;
        let (session_key, mutation_id) = claimed_entry(entry)?;
        let to = assignee(&state, f.to).await?;
        state
            .engine
            .assign_as(Actor::Staff(name.clone()), session_key, mutation_id, to)
            .await?;
        Ok::<(), ApiError>(())
    }
    .await;
    match done {
        Ok(()) => see_other(&next),
        Err(e) => refused(&e, Some(&name)),
    }
}

/// The fields of the claim and release buttons' forms: `next`, the page to go back to (a path of this
/// server; anything else goes back to the operation page).
#[derive(Deserialize)]
pub struct ClaimForm {
    next: Option<String>,
}

/// Where a claim form goes back to: `next` when it is a path of this server (`/…`, not `//…` nor `/\…`,
/// no control character), else the operation page.
pub(crate) fn claim_back(next: Option<&str>, back: &str) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.starts_with("/\\")
                && !n.chars().any(char::is_control) =>
        {
            n.to_owned()
        }
        _ => back.to_owned(),
    }
}

/// `POST /sessions/{session_key}/operations/{mutation_id}/claim` (form field `next`) → 303 to `next` or
/// the operation page; a refusal (held by another, not staff, unknown operation) is a page saying so with
/// its status. Without a credential the middleware sends the person to sign in first.
pub(super) async fn claim_form(
    state: State<AppState>,
    principal: Result<Principal, ApiError>,
    p: Result<WritePath<EntryPath>, ApiError>,
    form: Result<StrictForm<ClaimForm>, ApiError>,
) -> Response {
    claim_or_release_form(state, principal, p, form, true).await
}

/// `POST /sessions/{session_key}/operations/{mutation_id}/release` (form field `next`): as
/// [`claim_form`], releasing the claim.
pub(super) async fn release_form(
    state: State<AppState>,
    principal: Result<Principal, ApiError>,
    p: Result<WritePath<EntryPath>, ApiError>,
    form: Result<StrictForm<ClaimForm>, ApiError>,
) -> Response {
    claim_or_release_form(state, principal, p, form, false).await
}

async fn claim_or_release_form(
    State(state): State<AppState>,
    principal: Result<Principal, ApiError>,
    p: Result<WritePath<EntryPath>, ApiError>,
    form: Result<StrictForm<ClaimForm>, ApiError>,
    take: bool,
) -> Response {
    let back = back_to(&p);
    let heading = if take {
        "The operation was not claimed."
    } else {
        "The claim was not released."
    };
    let refused = |e: &ApiError| {
        with_status(
            e,
            app::standalone::operator_refusal_page(heading, &plain_words(e), &back),
        )
    };
    let name = match principal {
        Ok(Principal::Staff { name, .. }) => name,
        Ok(_) => return refused(&ApiError::staff_only()),
        Err(e) => return refused(&e),
    };
    let next = match form {
        Ok(StrictForm(f)) => claim_back(f.next.as_deref(), &back),
        Err(e) => return refused(&e),
    };
    let done = async {
        let WritePath(entry) = p?;
        let (session_key, mutation_id) = claimed_entry(entry)?;
        if take {
            state
                .engine
                .claim_as(Actor::Staff(name), session_key, mutation_id)
                .await?;
        } else {
            state
                .engine
                .release_as(Actor::Staff(name), session_key, mutation_id)
                .await?;
        }
        Ok::<(), ApiError>(())
    }
    .await;
    match done {
        Ok(()) => see_other(&next),
        Err(e) => refused(&e),
    }
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

impl From<NoteForm> for OperatorInput {
    fn from(f: NoteForm) -> Self {
        OperatorInput {
            text: f.text,
            ..OperatorInput::default()
        }
    }
}

impl From<ReconcileForm> for OperatorInput {
    fn from(f: ReconcileForm) -> Self {
        OperatorInput {
            text: None,
            attempt_id: f.attempt_id,
            completed: f.completed,
            source: f.source,
            reference: f.reference,
            observed_at: f.observed_at,
            provider_status: f.provider_status,
        }
    }
}

/// Who sends an operator form, looked at before the form is read: staff (`Ok(Some(name))`); a person
/// whose sign-in ended, sending from this server's page (no credential, or open access, with a matching
/// `Origin`: `Ok(None)`, answered once the form is read by [`keep_across_sign_in`]); anyone else is
/// refused now (the host, a viewer, open access from elsewhere: 403), the refusal page boxed (a
/// `Response` is large).
fn sender(
    principal: &Result<Principal, ApiError>,
    headers: &HeaderMap,
    action: OperatorAction,
    back: &str,
) -> Result<Option<String>, Box<Response>> {
    match principal {
        Ok(Principal::Staff { name, .. }) => Ok(Some(name.clone())),
        Err(_) | Ok(Principal::Open) if origin_matches(headers) => Ok(None),
        Err(e) => Err(Box::new(refusal_page(e, action, back))),
        Ok(_) => Err(Box::new(refusal_page(
            &ApiError::staff_only(),
            action,
            back,
        ))),
    }
}

/// The sign-in page keeping what was typed (401; docs/api.md "The operation page's forms"): nothing typed
/// is lost, and nothing is sent until the person, signed in again, sends it.
fn keep_across_sign_in(pending: &PendingForm, back: &str) -> Response {
    html(
        StatusCode::UNAUTHORIZED,
        sign_in_page_keeping(back, "", None, Some(pending)),
    )
}

/// The form a request posted, kept: its action, its path (as the server names it) and what was typed.
fn pending(action: OperatorAction, back: &str, input: OperatorInput) -> PendingForm {
    PendingForm {
        action,
        path: format!("{back}/{}", action.segment()),
        input,
    }
}

/// `POST /sessions/{session_key}/operations/{mutation_id}/notes` (form field `text`) → 303 to the
/// operation page; on a refusal the form again, filled in with what was typed and the problem next to
/// its field; after the sign-in ended, the sign-in page keeping the form.
pub(super) async fn note_form(
    State(state): State<AppState>,
    principal: Result<Principal, ApiError>,
    headers: HeaderMap,
    p: Result<WritePath<EntryPath>, ApiError>,
    form: Result<StrictForm<NoteForm>, ApiError>,
) -> Response {
    let back = back_to(&p);
    let who = match sender(&principal, &headers, OperatorAction::Note, &back) {
        Ok(who) => who,
        Err(answer) => return *answer,
    };
    let StrictForm(f) = match form {
        Ok(f) => f,
        Err(e) => return refusal_page(&e, OperatorAction::Note, &back),
    };
    let kept = pending(OperatorAction::Note, &back, OperatorInput::from(f));
    let Some(name) = who else {
        return keep_across_sign_in(&kept, &back);
    };
    let done = async {
        let WritePath(path) = p?;
        let command = Command::try_from(Request {
            path,
            body: NoteBody::from_field(kept.input.text.clone()),
        })?;
        state
            .engine
            .note_as(Actor::Staff(name.clone()), command)
            .await?;
        Ok(())
    }
    .await;
    answer(done, &kept, &back, Some(&name))
}

/// `POST /sessions/{session_key}/operations/{mutation_id}/reconciliation` (form fields `attempt_id`,
/// `completed`, `source`, `reference`, `observed_at`, `provider_status`) → 303 to the operation page; on a
/// refusal the form again, filled in, the problem next to its field (a missing `observed_at` is 422
/// naming `evidence.observed_at`: the time is never guessed); after the sign-in ended, the sign-in page
/// keeping the form.
pub(super) async fn reconcile_form(
    State(state): State<AppState>,
    principal: Result<Principal, ApiError>,
    headers: HeaderMap,
    p: Result<WritePath<EntryPath>, ApiError>,
    form: Result<StrictForm<ReconcileForm>, ApiError>,
) -> Response {
    let back = back_to(&p);
    let who = match sender(&principal, &headers, OperatorAction::Reconciliation, &back) {
        Ok(who) => who,
        Err(answer) => return *answer,
    };
    let StrictForm(f) = match form {
        Ok(f) => f,
        Err(e) => return refusal_page(&e, OperatorAction::Reconciliation, &back),
    };
    let kept = pending(
        OperatorAction::Reconciliation,
        &back,
        OperatorInput::from(f),
    );
    let Some(name) = who else {
        return keep_across_sign_in(&kept, &back);
    };
    let done = async {
        let WritePath(path) = p?;
        let f = kept.input.clone();
        // An empty field is a missing one (a browser sends every field of the form).
        let given = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
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
            given(f.observed_at),
            f.provider_status,
        );
        let command = Command::try_from(Request { path, body })?;
        let kind = crate::metrics::kind_of(&command.action);
        state
            .engine
            .apply_as(Actor::Staff(name.clone()), command)
            .await
            .map(|entry| state.metrics.transition(kind, entry.ledger_status))
            .map_err(ApiError::from)
    }
    .await;
    answer(done, &kept, &back, Some(&name))
}

/// The operation page the forms come from and go back to (`/` when the path could not be read).
fn back_to(p: &Result<WritePath<EntryPath>, ApiError>) -> String {
    match p {
        Ok(WritePath((k, m))) => app::routes::history_href(k, m),
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
        let bytes = form_bytes(req, state).await?;
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

/// A form body's bytes, checked as [`StrictForm`] checks them (415 not a form, 413 too large, 400 a
/// field that is not UTF-8 once percent-decoded), not yet decoded.
pub(crate) async fn form_bytes<S: Send + Sync>(
    req: axum::extract::Request,
    state: &S,
) -> Result<Bytes, ApiError> {
    {
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
        Ok(bytes)
    }
}

/// The heading of a refused form's page.
fn not_done(action: OperatorAction) -> &'static str {
    match action {
        OperatorAction::Note => "The note was not saved.",
        OperatorAction::Reconciliation => "The outcome was not reconciled.",
    }
}

/// `e`'s status with `Retry-After` when it has one.
pub(crate) fn with_status(e: &ApiError, page: String) -> Response {
    let mut response = html(e.status, page);
    if let Some(secs) = e.retry_after() {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    if e.is_busy() {
        response.extensions_mut().insert(crate::error::BusyAnswer);
    }
    response
}

/// The refusal page of a form that could not be read or may not be sent by this caller: what is wrong,
/// that nothing changed, the way back.
fn refusal_page(e: &ApiError, action: OperatorAction, back: &str) -> Response {
    let page = app::standalone::operator_refusal_page(not_done(action), &plain_words(e), back);
    with_status(e, page)
}

/// 303 back to the operation page, or the form again with what was typed and the refusal next to its
/// field, with the error's status, under the site's header of `staff` (docs/api.md "The operation page's
/// forms").
fn answer(
    done: Result<(), ApiError>,
    kept: &PendingForm,
    back: &str,
    staff: Option<&str>,
) -> Response {
    match done {
        Ok(()) => see_other(back),
        Err(e) => {
            let problem = FormProblem {
                heading: not_done(kept.action).to_owned(),
                message: plain_words(&e),
                field: e.detail.field.clone(),
                refused: true,
            };
            with_status(&e, operator_form_page(kept, back, &problem, staff))
        }
    }
}

/// The form a sign-in carried (`pending_action` and `pending_<field>`, [`sign_in_page_keeping`]), when
/// `pending_action` names an operator form of this server; its operation page's path with it.
pub fn kept_form(
    action_path: Option<&str>,
    field: impl Fn(&str) -> Option<String>,
) -> Option<(PendingForm, String)> {
    let path = action_path?;
    if !crate::access::is_operator_form(path) {
        return None;
    }
    let parts: Vec<&str> = path.trim_start_matches("/sessions/").split('/').collect();
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .ok()
            .map(|s| s.into_owned())
    };
    let (key, id) = (decode(parts[0])?, decode(parts[2])?);
    let action = OperatorAction::from_segment(parts[3])?;
    let back = app::routes::history_href(&key, &id);
    let input = OperatorInput {
        text: field("text"),
        attempt_id: field("attempt_id"),
        completed: field("completed"),
        source: field("source"),
        reference: field("reference"),
        observed_at: field("observed_at"),
        provider_status: field("provider_status"),
    };
    Some((pending(action, &back, input), back))
}

/// What a refusal means, for a person at the form.
pub(crate) fn plain_words(e: &ApiError) -> String {
    let d = &e.detail;
    if e.status == StatusCode::UNPROCESSABLE_ENTITY && d.message == ledger::command::NUL_REFUSED {
        let what = match d.field.as_deref() {
            Some("text") => "The note",
            Some("evidence.source") => "The source",
            Some("evidence.reference") => "The reference",
            _ => "The observed time",
        };
        return format!(
            "{what} holds a NUL character (U+0000), which cannot be stored: remove it, then send the form again."
        );
    }
    let words = match (e.status, d.code.as_str(), d.field.as_deref()) {
        (StatusCode::UNAUTHORIZED, _, _) => {
            "Your sign-in has ended. Sign in again, then send the form again."
        }
        (StatusCode::FORBIDDEN, "staff_only", _) => {
            "Only signed-in staff can add notes or reconcile outcomes."
        }
        (StatusCode::UNPROCESSABLE_ENTITY, _, Some("to")) => {
            return format!(
                "{} Enter the name of a staff account, as it signs in.",
                d.message.replacen("there", "There", 1)
            )
        }
        (StatusCode::CONFLICT, "already_claimed", _) => {
            return format!("{}. Release the claim first, or ask them.", d.message)
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
            "Enter when you observed it at the provider: a date and time with its time zone, such as 2026-11-29T10:00:00Z (RFC 3339)."
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
        (StatusCode::TOO_MANY_REQUESTS, "too_many_claims", _) => {
            return format!(
                "You claimed or released this operation {} times in the last minute. Nothing was changed: wait {} seconds, then try again.",
                ledger::error::CLAIMS_PER_MINUTE,
                e.retry_after().unwrap_or(1)
            )
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
