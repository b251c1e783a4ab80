//! Resolving the caller from the credential a request carries, in the order of docs/access.md (bearer
//! token, trusted proxy's user header, sign-in cookie, viewer cookie), counting failed credentials, and
//! checking later that a credential still holds (live streams).

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::header::{AUTHORIZATION, HOST};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::config::AccessMode;
use super::cookies::{cookie_value, SIGN_IN_COOKIE, VIEWER_COOKIE};
use super::paths::PathClass;
use super::principal::{Principal, StaffVia};
use crate::error::ApiError;
use crate::AppState;

/// The bearer token of an `Authorization` value (scheme matched case-insensitively, RFC 9110 11.1).
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// What resolving a request's credentials found.
pub struct Resolved {
    pub principal: Option<Principal>,
    /// The credential it was resolved from, for callers that check it again later (live streams).
    pub presented: Presented,
    /// Cookies that named nothing live: cleared in the response.
    pub clear: Vec<&'static str>,
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
pub async fn resolve(
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

#[cfg(test)]
mod tests {
    use super::*;

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

    use crate::access::test_headers as headers;

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
}
