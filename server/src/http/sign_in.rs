//! Signing in and out, opening a viewer link, and who the caller is (docs/access.md).
//!
//! - `GET /sign-in?next=<path>`: the sign-in form (plain HTML, works without JavaScript).
//! - `POST /sign-in` (form: `name`, `password`, `next`): 303 to `next` with the sign-in cookie; 401 with
//!   the form again on a wrong name or password; 429 past the failure limit; 403 without a matching
//!   `Origin`.
//! - `POST /sign-out`: ends the sign-in, clears the cookies, 303 to `/sign-in`.
//! - `GET /v/{token}`: a valid link sets the viewer cookie and 303s to its session's page; any other
//!   token answers 404 with a plain page for the end user: this link no longer works.
//! - `GET /api/me`: `{"access", "name"?, "session_key"?}`, what the page header shows.
//!
//! The sign-in page owns its address: the 303 that sends a page asked for without a credential here,
//! keeping where it came from in `next` ([`to_sign_in`], answered by [`super::gate`]), and where a
//! sign-in goes back to ([`local_next`]).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::FormRejection;
use axum::extract::{Extension, State};
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json};
use ledger::wire::Caller;
use serde::Deserialize;

use super::extract::{ReadQuery, WritePath};
use super::page::html;
use crate::access::{
    self, client_ip, cookie_value, is_https, origin_matches, set_cookie, CookieLife, Principal,
    StaffVia, SIGN_IN_COOKIE, VIEWER_COOKIE, VIEWER_ENDED_COOKIE,
};
use crate::error::ApiError;
use crate::AppState;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The access routes: `GET /api/me` (documented), and the pages `/sign-in` (form and `POST`),
/// `POST /sign-out` and `GET /v/{token}` (HTML and redirects, not part of the API document).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .route("/sign-in", get(sign_in_form).post(sign_in))
        .route("/sign-out", post(sign_out))
        .route("/v/{token}", get(open_viewer_link))
}
use app::standalone::{
    link_not_valid_page, operator_form_page, sign_in_page, sign_in_page_keeping, FormProblem,
    OperatorAction, PendingForm, SignInProblem,
};

/// Longest name and password a sign-in form may carry, in bytes.
const MAX_FIELD: usize = 1024;

/// Password checks running at once: one per reusable Argon2 memory (`staff::HASHING_MEMORIES`; each
/// check takes tens of ms of CPU and 19 MiB, allocated once).
pub fn password_checks() -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(crate::staff::HASHING_MEMORIES))
}

fn see_other(location: &str) -> Response {
    let location = HeaderValue::from_str(location).unwrap_or(HeaderValue::from_static("/"));
    (StatusCode::SEE_OTHER, [(LOCATION, location)]).into_response()
}

/// 303 to the sign-in page, which comes back to this page (path and query) once signed in.
pub(crate) fn to_sign_in(uri: &axum::http::Uri) -> Response {
    let here = uri.path_and_query().map_or("/", |p| p.as_str());
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("next", here)
        .finish();
    let location = HeaderValue::from_str(&format!("/sign-in?{query}"))
        .unwrap_or(HeaderValue::from_static("/sign-in"));
    (StatusCode::SEE_OTHER, [(LOCATION, location)]).into_response()
}

/// Where to go after signing in: `next` when it is a path on this server (starts with one `/`, no
/// backslash or control characters), else `/`.
pub fn local_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.contains('\\')
                && !n.chars().any(char::is_control)
                && !n.starts_with("/sign-in")
                && !n.starts_with("/sign-out") =>
        {
            n.to_owned()
        }
        _ => "/".to_owned(),
    }
}

#[derive(Deserialize)]
pub struct NextParam {
    next: Option<String>,
}

/// `GET /sign-in?next=<path>`: the form; a caller already signed in as staff goes straight to `next`.
/// A query that cannot be read counts as no `next`.
pub async fn sign_in_form(
    principal: Option<Extension<Principal>>,
    q: Result<ReadQuery<NextParam>, ApiError>,
) -> Response {
    let next = q.ok().and_then(|ReadQuery(q)| q.next);
    let next = local_next(next.as_deref());
    if matches!(principal, Some(Extension(Principal::Staff { .. }))) {
        return see_other(&next);
    }
    html(StatusCode::OK, sign_in_page(&next, "", None))
}

/// The sign-in form's fields; `pending_action` and `pending_<field>` carry an operator form whose sign-in
/// had ended ([`app::standalone::sign_in_page_keeping`]).
#[derive(Deserialize)]
pub struct SignInForm {
    name: Option<String>,
    password: Option<String>,
    next: Option<String>,
    pending_action: Option<String>,
    pending_text: Option<String>,
    pending_attempt_id: Option<String>,
    pending_completed: Option<String>,
    pending_source: Option<String>,
    pending_reference: Option<String>,
    pending_observed_at: Option<String>,
    pending_provider_status: Option<String>,
}

impl SignInForm {
    /// The operator form this sign-in carries, when it names one of this server's.
    fn kept(&self) -> Option<(PendingForm, String)> {
        crate::http::operator::kept_form(self.pending_action.as_deref(), |field| {
            match field {
                "text" => &self.pending_text,
                "attempt_id" => &self.pending_attempt_id,
                "completed" => &self.pending_completed,
                "source" => &self.pending_source,
                "reference" => &self.pending_reference,
                "observed_at" => &self.pending_observed_at,
                "provider_status" => &self.pending_provider_status,
                _ => &None,
            }
            .clone()
        })
    }
}

/// `POST /sign-in`.
pub async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_extensions: axum::http::Extensions,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Response {
    if !origin_matches(&headers) {
        return access::origin_refused();
    }
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            return ApiError::bad_request("invalid_form", e.body_text(), None).into_response()
        }
    };
    let kept = form.kept();
    let next = match &kept {
        Some((_, back)) => back.clone(),
        None => local_next(form.next.as_deref()),
    };
    let keep = kept.as_ref().map(|(p, _)| p);
    let client = client_ip(&request_extensions);
    if let Some(wait) = state.failures.blocked_for(client) {
        tracing::warn!(%client, "sign-in refused: too many failures");
        return too_many(&next, form.name.as_deref().unwrap_or(""), wait, keep);
    }
    let name = form.name.clone().unwrap_or_default().trim().to_owned();
    let password = form.password.clone().unwrap_or_default();
    // A name or password holding U+0000 is never right (no staff name holds it, generated passwords are
    // base64url): a wrong sign-in, counted, without a look-up or a password check (docs/api.md "Text a
    // client sends").
    let fits = !name.is_empty()
        && name.len() <= MAX_FIELD
        && !password.is_empty()
        && password.len() <= MAX_FIELD
        && !name.contains('\0')
        && !password.contains('\0');
    let checked = if fits {
        check_password(&state, client, &name, password).await
    } else {
        Ok(Checked::Wrong)
    };
    match checked {
        Ok(Checked::Right) => {}
        Ok(Checked::Blocked(wait)) => {
            tracing::warn!(%client, "sign-in refused: too many failures");
            return too_many(&next, &name, wait, keep);
        }
        Ok(Checked::Wrong) => {
            return match state.failures.fail(client) {
                Ok(()) => {
                    tracing::warn!(%client, "sign-in refused: wrong name or password");
                    html(
                        StatusCode::UNAUTHORIZED,
                        sign_in_page_keeping(&next, &name, Some(SignInProblem::Invalid), keep),
                    )
                }
                Err(wait) => {
                    tracing::warn!(%client, "sign-in refused: too many failures");
                    too_many(&next, &name, wait, keep)
                }
            }
        }
        Err(e) => return unavailable(&next, &name, e, keep),
    }
    let id = crate::staff::new_sign_in_id();
    match state.access.store.start_sign_in(&name, &id).await {
        Ok(true) => {}
        // Removed between the check and now.
        Ok(false) => {
            return html(
                StatusCode::UNAUTHORIZED,
                sign_in_page_keeping(&next, &name, Some(SignInProblem::Invalid), keep),
            )
        }
        Err(e) => return unavailable(&next, &name, ApiError::from(e), keep),
    }
    tracing::info!(staff = %name, %client, "signed in");
    let secure = is_https(&state, &request_extensions, &headers);
    // A form kept across the sign-in comes back filled in, for the person to check and send: it is
    // never sent by itself, so an operator action is never made twice.
    let mut response = match &kept {
        Some((form, back)) => {
            let what = match form.action {
                OperatorAction::Note => "Your note is not saved yet",
                OperatorAction::Reconciliation => "The outcome is not reconciled yet",
            };
            let problem = FormProblem {
                heading: format!("Signed in as {name}. {what}."),
                message: "Your sign-in had ended before the form arrived, so nothing was saved. \
                          Check what you entered and send it: nothing is sent until you press the button."
                    .to_owned(),
                field: None,
                refused: false,
            };
            html(
                StatusCode::OK,
                operator_form_page(form, back, &problem, Some(&name)),
            )
        }
        None => see_other(&next),
    };
    let h = response.headers_mut();
    h.append(
        SET_COOKIE,
        set_cookie(SIGN_IN_COOKIE, &id, CookieLife::Browser, secure),
    );
    if cookie_value(&headers, VIEWER_ENDED_COOKIE).is_some() {
        h.append(
            SET_COOKIE,
            set_cookie(VIEWER_ENDED_COOKIE, "", CookieLife::Clear, secure),
        );
    }
    response
}

/// What checking a password found.
enum Checked {
    Right,
    Wrong,
    /// Not checked: the client went past the failure limit while this attempt waited its turn.
    Blocked(Duration),
}

/// Checks a password off the async threads, a few at a time; `Err` when the ledger is busy or no check
/// could start within 10 s. The failure limit is looked at again once the check may start, so attempts
/// sent all at once are not all checked: those still waiting when the limit is reached are refused.
async fn check_password(
    state: &AppState,
    client: std::net::IpAddr,
    name: &str,
    password: String,
) -> Result<Checked, ApiError> {
    let stored = state.access.store.password_hash(name).await?;
    let permit = tokio::time::timeout(
        Duration::from_secs(10),
        state.password_checks.clone().acquire_owned(),
    )
    .await
    .map_err(|_| ApiError::unavailable("busy", "too many sign-ins at once; try again"))?
    .map_err(|_| ApiError::internal())?;
    if let Some(wait) = state.failures.blocked_for(client) {
        return Ok(Checked::Blocked(wait));
    }
    let right = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        crate::staff::verify_password(&password, stored.as_deref())
    })
    .await
    .map_err(|_| ApiError::internal())?;
    Ok(if right {
        Checked::Right
    } else {
        Checked::Wrong
    })
}

fn too_many(next: &str, name: &str, wait: Duration, keep: Option<&PendingForm>) -> Response {
    let secs = crate::error::whole_secs(wait);
    let mut r = html(
        StatusCode::TOO_MANY_REQUESTS,
        sign_in_page_keeping(
            next,
            name,
            Some(SignInProblem::TooMany {
                retry_after_secs: secs.max(1),
            }),
            keep,
        ),
    );
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        HeaderValue::from(secs.max(1)),
    );
    r
}

fn unavailable(next: &str, name: &str, e: ApiError, keep: Option<&PendingForm>) -> Response {
    let mut r = html(
        e.status,
        sign_in_page_keeping(next, name, Some(SignInProblem::Unavailable), keep),
    );
    // The error's own wait: 5 s for a storage fault, 1 s for a busy ledger (docs/api.md "Limits").
    if let Some(secs) = e.retry_after() {
        r.headers_mut()
            .insert(axum::http::header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if e.is_busy() {
        r.extensions_mut().insert(crate::error::BusyAnswer);
    }
    r
}

/// `POST /sign-out`: ends the sign-in (if any), clears both cookies, 303 to `/sign-in`.
pub async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_extensions: axum::http::Extensions,
) -> Response {
    if !origin_matches(&headers) {
        return access::origin_refused();
    }
    if let Some(id) = cookie_value(&headers, SIGN_IN_COOKIE) {
        if let Err(e) = state.access.store.end_sign_in(&id).await {
            return ApiError::from(e).into_response();
        }
    }
    let secure = is_https(&state, &request_extensions, &headers);
    let mut response = see_other("/sign-in");
    let marked = cookie_value(&headers, VIEWER_ENDED_COOKIE).is_some();
    let names = [SIGN_IN_COOKIE, VIEWER_COOKIE, VIEWER_ENDED_COOKIE];
    for name in names.into_iter().take(if marked { 3 } else { 2 }) {
        response
            .headers_mut()
            .append(SET_COOKIE, set_cookie(name, "", CookieLife::Clear, secure));
    }
    response
}

/// `GET /v/{token}`. A token that cannot be read (not UTF-8) is no token: the link no longer works.
pub async fn open_viewer_link(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_extensions: axum::http::Extensions,
    token: Result<WritePath<String>, ApiError>,
) -> Response {
    let client = client_ip(&request_extensions);
    let token = token.map(|WritePath(t)| t).unwrap_or_default();
    let link = if token.is_empty() || token.len() > 128 {
        Ok(None)
    } else {
        state.access.store.viewer_link(&token).await
    };
    match link {
        Ok(Some(link)) => {
            let now = state.access.store.now_ms();
            let left = Duration::from_millis(u64::try_from(link.expires_at - now).unwrap_or(0));
            let secure = is_https(&state, &request_extensions, &headers);
            let mut response = see_other(&app::routes::session_href(link.session_key.as_str()));
            response.headers_mut().append(
                SET_COOKIE,
                set_cookie(VIEWER_COOKIE, &token, CookieLife::For(left), secure),
            );
            if cookie_value(&headers, VIEWER_ENDED_COOKIE).is_some() {
                response.headers_mut().append(
                    SET_COOKIE,
                    set_cookie(VIEWER_ENDED_COOKIE, "", CookieLife::Clear, secure),
                );
            }
            response
        }
        Ok(None) => match state.failures.fail(client) {
            Ok(()) => {
                tracing::warn!(%client, "viewer link refused: not valid");
                html(StatusCode::NOT_FOUND, link_not_valid_page())
            }
            Err(wait) => {
                tracing::warn!(%client, "viewer link refused: too many failures");
                ApiError::too_many_failures(wait).into_response()
            }
        },
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// `GET /api/me` → [`Caller`].
#[utoipa::path(
    get,
    path = "/api/me",
    tag = "access",
    responses(
        (status = 200, description = "who the caller is", body = ledger::wire::Caller),
        (status = 401, description = "no credential, and reads are closed", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn me(principal: Principal) -> Json<Caller> {
    Json(match principal {
        Principal::Open => Caller {
            access: "open".into(),
            name: None,
            can_sign_out: false,
            session_key: None,
        },
        Principal::Host => Caller {
            access: "host".into(),
            name: None,
            can_sign_out: false,
            session_key: None,
        },
        Principal::Staff { name, via } => Caller {
            access: "staff".into(),
            name: Some(name),
            can_sign_out: via == StaffVia::SignIn,
            session_key: None,
        },
        Principal::Viewer { session_key, .. } => Caller {
            access: "viewer".into(),
            name: None,
            can_sign_out: true,
            session_key: Some(session_key.as_str().to_owned()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry_after(e: ledger::LedgerError) -> (u16, Option<String>) {
        let r = unavailable("/", "ada", ApiError::from(e), None);
        (
            r.status().as_u16(),
            r.headers()
                .get(axum::http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        )
    }

    #[test]
    fn next_stays_on_this_server() {
        assert_eq!(local_next(Some("/sessions/a?x=1")), "/sessions/a?x=1");
        for bad in [
            "https://evil.example/",
            "//evil.example/",
            "/\\evil.example",
            "evil",
            "/sign-in?next=/",
            "/a\nb",
            "",
        ] {
            assert_eq!(local_next(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(local_next(None), "/");
    }

    /// A sign-in refused for a storage fault says to come back in 5 s, as every storage fault's answer
    /// (docs/api.md "Limits"); a busy ledger in 1 s. (Before: 1 s for both.)
    #[test]
    fn a_sign_in_refused_for_a_storage_fault_says_retry_after_five() {
        assert_eq!(
            retry_after(ledger::LedgerError::StorageFull),
            (503, Some("5".to_owned()))
        );
        assert_eq!(
            retry_after(ledger::LedgerError::Busy),
            (503, Some("1".to_owned()))
        );
    }
}
