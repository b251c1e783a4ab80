//! The gate every request passes (docs/access.md): its path is classified ([`PathClass`]), its caller
//! resolved from the credential it carries ([`crate::access`]), and the request is let through, refused
//! (401 JSON for an API, 303 to `/sign-in?next=…` for a page, before any rendering: the sign-in page's
//! own redirect, [`to_sign_in`]) or scoped (a viewer reads one session). Pages it refuses with are the
//! standalone ones of `app::standalone`.

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, SET_COOKIE};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ledger::ids::SessionKey;

use super::page::html;
use super::sign_in::to_sign_in;
use crate::access::{
    classify, client_ip, cookie_value, failure, is_https, is_operator_form, origin_matches,
    origin_refused, resolve, set_cookie, viewer_may_open, CookieLife, PathClass, Principal,
    SIGN_IN_COOKIE, VIEWER_COOKIE, VIEWER_ENDED_COOKIE,
};
use crate::error::ApiError;
use crate::AppState;

/// Middleware on every request: refuses a request carrying `Authorization` more than once (400
/// `invalid_header` naming it), resolves the caller ([`Principal`], put into the request's extensions),
/// then lets the request through or refuses it by the path's [`PathClass`]:
/// - open paths: always through (with the caller when one was resolved);
/// - the host API: the host token only, else 401 JSON;
/// - read APIs: any caller, else 401 JSON;
/// - pages: any caller, else 303 `Location: /sign-in?next=<path and query>` (whatever `Accept` says).
///
/// A change (any method but GET, HEAD, OPTIONS) made with a cookie or the trusted proxy's user header
/// needs a matching `Origin` (403 else).
pub async fn authenticate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let class = classify(request.uri().path());
    if request.uri().path().starts_with("/pkg/") {
        // Static assets: nobody's data, no credential looked up.
        return next.run(request).await;
    }
    if request
        .headers()
        .get_all(AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
    {
        // Which of two credentials counts is a guess a proxy and this server could make differently.
        return ApiError::bad_request(
            "invalid_header",
            "the Authorization header is sent more than once; send one",
            Some("Authorization"),
        )
        .into_response();
    }
    let client = client_ip(request.extensions());
    let resolved = match resolve(&state, request.headers(), client, class).await {
        Ok(r) => r,
        // A bad bearer token is refused even on an open path: the caller meant to use it.
        Err(response) => return response,
    };
    let secure = is_https(&state, request.extensions(), request.headers());
    let unsafe_method = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    // A page opened with a viewer cookie whose link has ended since (revoked, expired) and no other
    // credential: the end user's plain "this link no longer works" page, never the staff sign-in form.
    let viewer_link_ended = class == PathClass::Page
        && !unsafe_method
        && !resolved.clear.contains(&SIGN_IN_COOKIE)
        && match resolved.principal {
            None => {
                resolved.clear.contains(&VIEWER_COOKIE)
                    || cookie_value(request.headers(), VIEWER_ENDED_COOKIE).is_some()
            }
            Some(Principal::Open) => resolved.clear.contains(&VIEWER_COOKIE),
            Some(_) => false,
        };
    let refused = match (&resolved.principal, class) {
        _ if viewer_link_ended => Some(html(
            StatusCode::NOT_FOUND,
            app::standalone::link_not_valid_page(),
        )),
        (_, PathClass::Open) => None,
        (Some(Principal::Host), PathClass::Host) => None,
        // No token (or a cookie) on the host API counts as a failed token.
        (_, PathClass::Host) => Some(failure(
            &state,
            client,
            "host token",
            ApiError::host_token_required(),
        )),
        (Some(_), PathClass::Api | PathClass::Page) => None,
        (None, PathClass::Api) => Some(ApiError::credential_required().into_response()),
        // An operator form sent from this server's page after its sign-in ended: through to its handler,
        // which keeps what was typed across the sign-in (crate::http::operator). Nothing is read or changed
        // without a credential there.
        (None, PathClass::Page)
            if *request.method() == Method::POST
                && is_operator_form(request.uri().path())
                && origin_matches(request.headers()) =>
        {
            None
        }
        (None, PathClass::Page) => Some(to_sign_in(request.uri())),
    };
    let refused = refused.or_else(|| match (&resolved.principal, class) {
        (Some(Principal::Viewer { session_key, .. }), PathClass::Page)
            if !viewer_may_open(request.uri().path(), session_key) =>
        {
            Some(viewer_not_found(session_key))
        }
        _ => None,
    });
    let mut response = match refused {
        Some(r) => r,
        None if unsafe_method
            && resolved
                .principal
                .as_ref()
                .is_some_and(Principal::by_browser)
            && class != PathClass::Open
            && !origin_matches(request.headers()) =>
        {
            origin_refused()
        }
        None => {
            if let Some(p) = resolved.principal {
                request.extensions_mut().insert(p);
                request.extensions_mut().insert(resolved.presented);
            }
            next.run(request).await
        }
    };
    for name in resolved.clear {
        response
            .headers_mut()
            .append(SET_COOKIE, set_cookie(name, "", CookieLife::Clear, secure));
        if name == VIEWER_COOKIE {
            response.headers_mut().append(
                SET_COOKIE,
                set_cookie(VIEWER_ENDED_COOKIE, "1", CookieLife::Browser, secure),
            );
        }
    }
    response
}

/// The 404 page a viewer gets for a page it may not see (existence is not revealed).
fn viewer_not_found(own: &SessionKey) -> Response {
    html(
        StatusCode::NOT_FOUND,
        app::standalone::viewer_not_found_page(&app::routes::session_href(own.as_str())),
    )
}
