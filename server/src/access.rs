//! Who may see what (docs/access.md). Every request is classified by its path, its caller is resolved
//! from the credential it carries, and the request is let through, refused (401 JSON for an API, 303 to
//! `/sign-in?next=…` for a page, before any rendering) or scoped (a viewer reads one session).
//!
//! Credentials, in the order they are looked at:
//! 1. `Authorization: Bearer <token>`: the host token, else a staff API token. Any other token is a
//!    failure, counted per client address ([`crate::auth::Failures`]): 401, then 429 with `Retry-After`.
//! 2. The trusted user header (`--trusted-user-header`), only from an address in `--trusted-proxy`.
//! 3. The sign-in cookie ([`SIGN_IN_COOKIE`]): a server-kept sign-in that is not idle.
//! 4. The viewer cookie ([`VIEWER_COOKIE`]): a stored viewer link that has not expired or been revoked.
//!
//! A cookie that names nothing live is cleared in the response (signed out). Without a credential, reads
//! are open in [`AccessMode::Open`] (loopback by default) and refused otherwise.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cookie::Cookie;
use ipnet::IpNet;
use ledger::access::Access;
use ledger::ids::SessionKey;
use ledger::wire::OperationHistory;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::AppState;

/// The cookie that holds a staff sign-in's random id.
pub const SIGN_IN_COOKIE: &str = "outcomes_sign_in";
/// The cookie that holds a viewer link's token.
pub const VIEWER_COOKIE: &str = "outcomes_viewer";
/// Set (`1`, until the browser closes) when a viewer cookie is cleared because its link ended: a page
/// then asked for without a credential is the end user's "this link no longer works" page, not the staff
/// sign-in form, even when a read of the open page cleared the cookie first. Cleared by opening a link,
/// signing in and signing out.
pub const VIEWER_ENDED_COOKIE: &str = "outcomes_viewer_ended";

/// Whether reads need a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessMode {
    /// Reads need no credential (the default on a loopback address); the page header says "open access".
    Open,
    /// Every read needs a credential (any other address, or `--access signed-in`).
    SignedIn,
}

/// Requests from these addresses carrying `header` are staff requests named by the header's value.
#[derive(Debug, Clone)]
pub struct TrustedProxy {
    pub header: HeaderName,
    pub proxies: Vec<IpNet>,
}

impl TrustedProxy {
    /// The staff name a request from `client` carries, when `client` is a trusted proxy and the header
    /// holds a plain name (1 to 256 bytes of visible ASCII, trimmed). Any other request: `None`.
    fn user(&self, client: IpAddr, headers: &HeaderMap) -> Option<String> {
        if !self.trusts(client) {
            return None;
        }
        let name = headers.get(&self.header)?.to_str().ok()?.trim();
        (!name.is_empty() && name.len() <= 256 && name.bytes().all(|b| b.is_ascii_graphic()))
            .then(|| name.to_owned())
    }
}

impl TrustedProxy {
    /// Whether `client` is one of the proxy's addresses.
    fn trusts(&self, client: IpAddr) -> bool {
        let client = canonical(client);
        self.proxies.iter().any(|net| net.contains(&client))
    }
}

/// An IPv4 address that came in as IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The access settings of a running server.
#[derive(Clone)]
pub struct AccessConfig {
    pub mode: AccessMode,
    pub store: Access,
    /// A sign-in unused this long is over (`--sign-in-idle-secs`).
    pub sign_in_idle: Duration,
    pub trusted: Option<TrustedProxy>,
}

impl AccessConfig {
    pub fn sign_in_idle_ms(&self) -> i64 {
        i64::try_from(self.sign_in_idle.as_millis()).unwrap_or(i64::MAX)
    }
}

/// How a staff caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaffVia {
    /// A sign-in cookie.
    SignIn,
    /// A staff API token as a bearer.
    Token,
    /// The trusted proxy's user header.
    Proxy,
}

/// Who is calling. Put into every request's extensions by [`authenticate`] (absent when the caller has
/// no credential and reads are closed); handlers take it as an extractor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The host program (host token).
    Host,
    /// Staff: investigators and support.
    Staff { name: String, via: StaffVia },
    /// An end user with a viewer link: one session only, until `expires_at` (ms since the epoch).
    Viewer {
        session_key: SessionKey,
        expires_at: i64,
    },
    /// No credential, in open access mode: reads everything, changes nothing.
    Open,
}

impl Principal {
    /// The one session a viewer may read; `None` for every other caller.
    pub fn viewer_session(&self) -> Option<&SessionKey> {
        match self {
            Principal::Viewer { session_key, .. } => Some(session_key),
            _ => None,
        }
    }

    /// `Ok` when the caller may read `session_key`; a viewer of another session gets exactly the 404 of
    /// an unknown session (existence is not revealed).
    pub fn may_read(&self, session_key: &SessionKey) -> Result<(), ApiError> {
        match self.viewer_session() {
            Some(own) if own != session_key => {
                Err(ApiError::from(ledger::LedgerError::SessionNotFound))
            }
            _ => Ok(()),
        }
    }

    /// Whether the caller may see what is internal to staff: notes, their count, staff members' names.
    /// Everyone but a viewer (docs/access.md "Viewer links": the end user never sees them).
    pub fn sees_internal(&self) -> bool {
        !matches!(self, Principal::Viewer { .. })
    }

    /// An operation's history as this caller may read it: unchanged, or for a viewer without what is
    /// internal to staff ([`without_internal`]).
    pub fn history(&self, mut history: OperationHistory) -> OperationHistory {
        if !self.sees_internal() {
            without_internal(&mut history);
        }
        history
    }

    /// `Ok` when the caller may read across sessions (the sessions list, the unknowns queue); a viewer
    /// gets the 404 of a path that names no endpoint.
    pub fn may_read_all(&self) -> Result<(), ApiError> {
        match self {
            Principal::Viewer { .. } => Err(ApiError::no_route()),
            _ => Ok(()),
        }
    }

    /// Whether the browser sends the credential by itself: a cookie, or the SSO proxy's user header (the
    /// proxy adds it to whatever the browser sends, a page of another site's form post included). A
    /// change then needs a matching `Origin`.
    fn by_browser(&self) -> bool {
        matches!(
            self,
            Principal::Viewer { .. }
                | Principal::Staff {
                    via: StaffVia::SignIn | StaffVia::Proxy,
                    ..
                }
        )
    }
}

/// The actor a viewer reads for any staff member: the name is internal (pages say "by support").
pub const STAFF_ACTOR_FOR_VIEWER: &str = "staff";

/// Takes out of `history` what only staff may see (docs/access.md "Viewer links" and "Operator
/// actions"): the rows of kind `note`, `claim` and `release` are removed, and an actor `staff:<name>`
/// becomes `staff` ([`STAFF_ACTOR_FOR_VIEWER`]). Every other row and field is kept as it is.
pub fn without_internal(history: &mut OperationHistory) {
    history.changes.retain(|c| !c.kind.is_internal());
    for change in &mut history.changes {
        if change.actor.starts_with("staff:") {
            change.actor = STAFF_ACTOR_FOR_VIEWER.to_owned();
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    /// The caller [`authenticate`] resolved; 401 when there is none (the middleware refuses such requests
    /// before they reach a handler that reads data, so this only guards a route wired without it).
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(ApiError::credential_required)
    }
}

/// A caller who may read across sessions (an extractor, before the query is read): 401 when there is no
/// caller ([`Principal`]'s rejection); a viewer gets the 404 of a path that names no endpoint
/// ([`Principal::may_read_all`]), whatever the query holds.
pub struct AcrossSessions(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for AcrossSessions {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let principal = Principal::from_request_parts(parts, state).await?;
        principal.may_read_all()?;
        Ok(AcrossSessions(principal))
    }
}

/// What a path is, for access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathClass {
    /// Open in every mode: `/healthz`, `/sign-in`, `/sign-out`, `/v/{token}`, static assets (`/pkg/`,
    /// [`INSTALL_FILES`]), `/api/openapi.json`.
    Open,
    /// The host write API: the host token only.
    Host,
    /// Any other `/api` path, and `/metrics`: a read API.
    Api,
    /// A dashboard page.
    Page,
}

/// The files that make the dashboard installable and its offline pages (`public/`: the device is offline,
/// the server cannot be reached): nobody's data. A browser
/// fetches the manifest's icons without cookies, and the service worker must load before anyone signs in.
pub const INSTALL_FILES: [&str; 11] = [
    "/manifest.webmanifest",
    "/icon.svg",
    "/icon-192.png",
    "/icon-512.png",
    "/icon-maskable-512.png",
    "/apple-touch-icon.png",
    "/sw.js",
    "/sw-register.js",
    "/offline.html",
    "/unreachable.html",
    "/offline.css",
];

/// `GET /metrics` (docs/api.md "Metrics"): a read API, so open where reads are open and otherwise 401
/// JSON without a credential (never the page's redirect to sign-in: a scraper follows no form).
pub const METRICS_PATH: &str = "/metrics";

/// Classifies a request path.
pub fn classify(path: &str) -> PathClass {
    const OPEN_EXACT: [&str; 5] = [
        "/healthz",
        "/sign-in",
        "/sign-out",
        "/api/openapi.json",
        "/favicon.ico",
    ];
    if OPEN_EXACT.contains(&path)
        || INSTALL_FILES.contains(&path)
        || path.starts_with("/v/")
        || path.starts_with("/pkg/")
    {
        PathClass::Open
    } else if path == "/api/host" || path.starts_with("/api/host/") {
        PathClass::Host
    } else if path == "/api" || path.starts_with("/api/") || path == METRICS_PATH {
        PathClass::Api
    } else {
        PathClass::Page
    }
}

/// The client's address (`ConnectInfo`), or `0.0.0.0` for a request that came in process.
pub fn client_ip(parts_extensions: &axum::http::Extensions) -> IpAddr {
    parts_extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| canonical(c.0.ip()))
}

/// The value of a named cookie of the request (the first one, when sent twice).
pub fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_owned())
        .filter(|v| !v.is_empty())
}

/// Whether the request came over https, as far as this server can tell: through a trusted proxy that
/// says so in `X-Forwarded-Proto`.
pub fn is_https(
    state: &AppState,
    extensions: &axum::http::Extensions,
    headers: &HeaderMap,
) -> bool {
    let from_proxy = state
        .access
        .trusted
        .as_ref()
        .is_some_and(|t| t.trusts(client_ip(extensions)));
    from_proxy
        && headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// How long a cookie lives in the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CookieLife {
    /// Until the browser is closed (the server's idle expiry ends it sooner).
    Browser,
    /// This long.
    For(Duration),
    /// Cleared now.
    Clear,
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, path `/`, Secure over https.
pub fn set_cookie(name: &str, value: &str, life: CookieLife, secure: bool) -> HeaderValue {
    let c = Cookie::build((name, value))
        .path("/")
        .http_only(true)
        .same_site(cookie::SameSite::Lax)
        .secure(secure);
    let c = match life {
        CookieLife::Browser => c,
        CookieLife::For(age) => c.max_age(cookie::time::Duration::seconds(
            i64::try_from(age.as_secs()).unwrap_or(i64::MAX / 1000),
        )),
        CookieLife::Clear => c.max_age(cookie::time::Duration::ZERO),
    };
    HeaderValue::from_str(&c.build().to_string()).unwrap_or(HeaderValue::from_static(""))
}

/// Whether a change comes from this server's own pages: its `Origin` names this server (host and port
/// equal the request's `Host`), or it is `null` and the browser says the request is `Sec-Fetch-Site:
/// same-origin`. Browsers send `Origin: null` on a same-origin form POST from a page whose
/// `Referrer-Policy` is `no-referrer` (ours is); `Sec-Fetch-Site` is set by the browser alone, so a page
/// on another site (a sandboxed frame included) cannot claim it. A missing `Origin` never matches.
pub fn origin_matches(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    if origin.trim() == "null" {
        return headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("same-origin"));
    }
    let Some(host) = headers.get(HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Ok(origin) = url::Url::parse(origin) else {
        return false;
    };
    let Ok(this) = url::Url::parse(&format!("{}://{host}/", origin.scheme())) else {
        return false;
    };
    matches!(origin.scheme(), "http" | "https")
        && origin.host() == this.host()
        && origin.port_or_known_default() == this.port_or_known_default()
}

/// The 403 of a cookie-authenticated change without a matching `Origin`.
pub fn origin_refused() -> Response {
    ApiError::forbidden(
        "origin_mismatch",
        "a change made with a browser sign-in or viewer cookie must carry an Origin header naming this server",
    )
    .into_response()
}

/// The bearer token of an `Authorization` value (scheme matched case-insensitively, RFC 9110 11.1).
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// What resolving a request's credentials found.
struct Resolved {
    principal: Option<Principal>,
    /// The credential it was resolved from, for callers that check it again later (live streams).
    presented: Presented,
    /// Cookies that named nothing live: cleared in the response.
    clear: Vec<&'static str>,
}

/// Counts one failed credential of `client`: 401 `message` while within the limit, else 429.
pub fn failure(state: &AppState, client: IpAddr, what: &str, refused: ApiError) -> Response {
    match state.failures.fail(client) {
        Ok(()) => {
            tracing::warn!(%client, "{what} refused");
            refused.into_response()
        }
        Err(wait) => {
            tracing::warn!(%client, "{what} refused: too many failures");
            ApiError::too_many_failures(wait).into_response()
        }
    }
}

/// Resolves the caller. `Err` is the answer to send instead (a refused bearer token, a store failure).
async fn resolve(
    state: &AppState,
    headers: &HeaderMap,
    client: IpAddr,
    class: PathClass,
) -> Result<Resolved, Response> {
    if let Some(value) = headers.get(AUTHORIZATION) {
        let token = value.to_str().ok().and_then(bearer_token);
        if let Some(t) = token {
            if bool::from(t.as_bytes().ct_eq(state.host_token.as_bytes())) {
                return Ok(Resolved {
                    principal: Some(Principal::Host),
                    presented: Presented::Lasting,
                    clear: Vec::new(),
                });
            }
            match (class, state.access.store.staff_by_token(t).await) {
                // A valid staff token on the host API: the wrong credential, not a guess.
                (PathClass::Host, Ok(Some(_))) => {
                    return Err(ApiError::host_token_required().into_response())
                }
                (PathClass::Host, _) | (_, Ok(None)) => {}
                (_, Ok(Some(name))) => {
                    return Ok(Resolved {
                        principal: Some(Principal::Staff {
                            name,
                            via: StaffVia::Token,
                        }),
                        presented: Presented::StaffToken(t.into()),
                        clear: Vec::new(),
                    })
                }
                (_, Err(e)) => return Err(ApiError::from(e).into_response()),
            }
        }
        let refused = match class {
            PathClass::Host => ApiError::host_token_required(),
            _ => ApiError::credential_required(),
        };
        return Err(failure(state, client, "bearer token", refused));
    }
    if let Some(name) = state
        .access
        .trusted
        .as_ref()
        .and_then(|t| t.user(client, headers))
    {
        return Ok(Resolved {
            principal: Some(Principal::Staff {
                name,
                via: StaffVia::Proxy,
            }),
            presented: Presented::Lasting,
            clear: Vec::new(),
        });
    }
    let mut clear = Vec::new();
    if let Some(id) = cookie_value(headers, SIGN_IN_COOKIE) {
        match state
            .access
            .store
            .sign_in(&id, state.access.sign_in_idle_ms())
            .await
        {
            Ok(Some(name)) => {
                return Ok(Resolved {
                    principal: Some(Principal::Staff {
                        name,
                        via: StaffVia::SignIn,
                    }),
                    presented: Presented::SignIn(id.as_str().into()),
                    clear,
                })
            }
            Ok(None) => clear.push(SIGN_IN_COOKIE),
            Err(e) => return Err(ApiError::from(e).into_response()),
        }
    }
    if let Some(token) = cookie_value(headers, VIEWER_COOKIE) {
        match state.access.store.viewer_link(&token).await {
            Ok(Some(link)) => {
                return Ok(Resolved {
                    principal: Some(Principal::Viewer {
                        session_key: link.session_key,
                        expires_at: link.expires_at,
                    }),
                    presented: Presented::Viewer(token.as_str().into()),
                    clear,
                })
            }
            Ok(None) => clear.push(VIEWER_COOKIE),
            Err(e) => return Err(ApiError::from(e).into_response()),
        }
    }
    // Open reads only for a request addressed to a loopback name: a page of another site whose name
    // was rebound to 127.0.0.1 (DNS rebinding) sends its own name as Host and reads nothing.
    let open = state.access.mode == AccessMode::Open && host_is_loopback(headers);
    Ok(Resolved {
        principal: open.then_some(Principal::Open),
        presented: Presented::Lasting,
        clear,
    })
}

/// Whether the `Host` header names this machine's loopback: `localhost`, a `*.localhost` name, or a
/// loopback address (`127.0.0.0/8`, `[::1]`), with any port. A missing or other `Host` does not.
pub fn host_is_loopback(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Ok(url) = url::Url::parse(&format!("http://{host}/")) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The credential a request's caller was resolved from, kept in the request's extensions, so a
/// long-lived answer (a live stream) can check that it still holds ([`still_valid`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    /// The host token, the proxy's header, or open access: nothing stored that could be revoked.
    Lasting,
    StaffToken(Arc<str>),
    SignIn(Arc<str>),
    Viewer(Arc<str>),
}

/// Whether a credential still holds: the staff token still exists, the sign-in is not ended or idle,
/// the viewer link is not revoked or expired. A store failure counts as holding (a busy ledger does not
/// end streams).
pub async fn still_valid(state: &AppState, presented: &Presented) -> bool {
    let store = &state.access.store;
    let held = match presented {
        Presented::Lasting => return true,
        Presented::StaffToken(t) => store.staff_by_token(t).await.map(|n| n.is_some()),
        Presented::SignIn(id) => store
            .sign_in(id, state.access.sign_in_idle_ms())
            .await
            .map(|n| n.is_some()),
        Presented::Viewer(t) => store.viewer_link(t).await.map(|l| l.is_some()),
    };
    held.unwrap_or(true)
}

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
        _ if viewer_link_ended => Some(crate::http::sign_in::html(
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

/// Route layer of the host write API: the caller [`authenticate`] resolved must be the host (401 else).
/// The middleware already refuses anyone else; this keeps the host API closed if it is ever wired
/// without it.
pub async fn require_host(request: Request, next: Next) -> Response {
    match request.extensions().get::<Principal>() {
        Some(Principal::Host) => next.run(request).await,
        _ => ApiError::host_token_required().into_response(),
    }
}

/// Whether a viewer of `own` may open the page at `path`: its session's pages (`/sessions/<own>` and
/// below) and operation pages (which list only matches in its session). The sessions list, the
/// unknowns queue, find and other sessions are not there for a viewer.
pub fn viewer_may_open(path: &str, own: &SessionKey) -> bool {
    if path.starts_with("/operations/") {
        return true;
    }
    let Some(rest) = path.strip_prefix("/sessions/") else {
        return false;
    };
    let segment = rest.split('/').next().unwrap_or("");
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .is_ok_and(|key| key == own.as_str())
}

/// Whether `path` is an operator form of the operation page:
/// `/sessions/{session_key}/operations/{mutation_id}/notes` or `…/reconciliation`.
pub fn is_operator_form(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/sessions/") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    matches!(
        parts.as_slice(),
        [key, "operations", id, "notes" | "reconciliation"] if !key.is_empty() && !id.is_empty()
    )
}

/// The 404 page a viewer gets for a page it may not see (existence is not revealed).
fn viewer_not_found(own: &SessionKey) -> Response {
    crate::http::sign_in::html(
        StatusCode::NOT_FOUND,
        app::standalone::viewer_not_found_page(&app::routes::session_href(own.as_str())),
    )
}

/// 303 to the sign-in page, which comes back to this page (path and query) once signed in.
fn to_sign_in(uri: &axum::http::Uri) -> Response {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified() {
        for (path, class) in [
            ("/healthz", PathClass::Open),
            ("/sign-in", PathClass::Open),
            ("/sign-out", PathClass::Open),
            ("/v/abc", PathClass::Open),
            ("/pkg/outcomes.wasm", PathClass::Open),
            ("/api/openapi.json", PathClass::Open),
            ("/manifest.webmanifest", PathClass::Open),
            ("/icon-192.png", PathClass::Open),
            ("/sw.js", PathClass::Open),
            ("/offline.html", PathClass::Open),
            ("/offline.html/x", PathClass::Page),
            ("/api/host/batch", PathClass::Host),
            ("/api/host", PathClass::Host),
            ("/api/hostile", PathClass::Api),
            ("/api/sessions", PathClass::Api),
            ("/api", PathClass::Api),
            ("/metrics", PathClass::Api),
            ("/metrics/x", PathClass::Page),
            ("/", PathClass::Page),
            ("/sign-in/x", PathClass::Page),
            ("/find", PathClass::Page),
            ("/healthz/x", PathClass::Page),
        ] {
            assert_eq!(classify(path), class, "{path}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for v in [
            "Bearer T",
            "bearer T",
            "BEARER T",
            "bEaReR T",
            "Bearer   T ",
            " Bearer T",
        ] {
            assert_eq!(bearer_token(v), Some("T"), "{v:?}");
        }
        for v in ["Basic T", "BearerT", "Bearer", "Bearer ", "Bearers T", "T"] {
            assert_eq!(bearer_token(v), None, "{v:?}");
        }
    }

    #[test]
    fn a_viewer_opens_only_its_session_and_operation_pages() {
        let own = SessionKey::parse("a/b c").unwrap();
        for ok in [
            "/sessions/a%2Fb%20c",
            "/sessions/a%2Fb%20c/turns/t",
            "/operations/x",
        ] {
            assert!(viewer_may_open(ok, &own), "{ok}");
        }
        for no in [
            "/",
            "/find",
            "/unknowns",
            "/sessions/other",
            "/sessions/a",
            "/sessions/",
            "/sessionsx",
        ] {
            assert!(!viewer_may_open(no, &own), "{no}");
        }
    }

    #[test]
    fn operator_forms_are_known_by_their_path() {
        for yes in [
            "/sessions/a/operations/m/notes",
            "/sessions/a%2Fb/operations/m%3A1/reconciliation",
        ] {
            assert!(is_operator_form(yes), "{yes}");
        }
        for no in [
            "/sessions/a/operations/m",
            "/sessions/a/operations/m/notes/x",
            "/sessions//operations/m/notes",
            "/sessions/a/turns/m/notes",
            "/api/sessions/a/mutations/m/notes",
            "/sign-in",
        ] {
            assert!(!is_operator_form(no), "{no}");
        }
    }

    #[test]
    fn open_reads_need_a_host_that_names_loopback() {
        for host in [
            "127.0.0.1:3000",
            "127.9.9.9",
            "localhost:3000",
            "LOCALHOST",
            "app.localhost:80",
            "[::1]:3000",
            "localhost.",
        ] {
            assert!(host_is_loopback(&headers(&[("host", host)])), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:3000",
            "10.0.0.1",
            "[::2]",
            "localhost.evil.example",
            "",
        ] {
            assert!(!host_is_loopback(&headers(&[("host", host)])), "{host}");
        }
        assert!(!host_is_loopback(&HeaderMap::new()));
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

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn origin_must_name_this_server() {
        assert!(origin_matches(&headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:3000")
        ])));
        assert!(origin_matches(&headers(&[
            ("host", "ledger.example"),
            ("origin", "https://ledger.example")
        ])));
        assert!(origin_matches(&headers(&[
            ("host", "ledger.example:443"),
            ("origin", "https://ledger.example")
        ])));
        for (host, origin) in [
            ("127.0.0.1:3000", "http://127.0.0.1:3001"),
            ("127.0.0.1:3000", "http://evil.example"),
            ("127.0.0.1:3000", "null"),
            ("127.0.0.1:3000", "file://"),
            ("ledger.example", "https://ledger.example.evil"),
        ] {
            assert!(
                !origin_matches(&headers(&[("host", host), ("origin", origin)])),
                "{origin}"
            );
        }
        assert!(!origin_matches(&headers(&[("host", "127.0.0.1:3000")])));
        // A same-origin form POST from a no-referrer page: Origin null, Sec-Fetch-Site same-origin.
        let null_same = [
            ("host", "127.0.0.1:3000"),
            ("origin", "null"),
            ("sec-fetch-site", "same-origin"),
        ];
        assert!(origin_matches(&headers(&null_same)));
        for site in ["cross-site", "same-site", "none"] {
            let h = headers(&[
                ("host", "127.0.0.1:3000"),
                ("origin", "null"),
                ("sec-fetch-site", site),
            ]);
            assert!(!origin_matches(&h), "{site}");
        }
        // Sec-Fetch-Site never stands in for a missing Origin.
        assert!(!origin_matches(&headers(&[
            ("host", "127.0.0.1:3000"),
            ("sec-fetch-site", "same-origin")
        ])));
    }

    #[test]
    fn the_proxy_header_counts_only_from_a_trusted_address() {
        let t = TrustedProxy {
            header: HeaderName::from_static("x-forwarded-user"),
            proxies: vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
        };
        let h = headers(&[("x-forwarded-user", " ada ")]);
        assert_eq!(t.user("10.1.2.3".parse().unwrap(), &h), Some("ada".into()));
        assert_eq!(
            t.user("::ffff:10.1.2.3".parse().unwrap(), &h),
            Some("ada".into())
        );
        assert_eq!(t.user("::1".parse().unwrap(), &h), Some("ada".into()));
        assert_eq!(t.user("192.168.1.1".parse().unwrap(), &h), None);
        assert_eq!(t.user("10.1.2.3".parse().unwrap(), &headers(&[])), None);
        assert_eq!(
            t.user(
                "10.1.2.3".parse().unwrap(),
                &headers(&[("x-forwarded-user", "a b")])
            ),
            None
        );
    }

    #[test]
    fn cookies_are_read_by_name() {
        let h = headers(&[
            ("cookie", "a=1; outcomes_viewer=tok; b=2"),
            ("cookie", "outcomes_sign_in=s"),
        ]);
        assert_eq!(cookie_value(&h, VIEWER_COOKIE), Some("tok".into()));
        assert_eq!(cookie_value(&h, SIGN_IN_COOKIE), Some("s".into()));
        assert_eq!(cookie_value(&h, "c"), None);
    }
}
