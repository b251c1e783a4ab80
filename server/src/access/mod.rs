//! Who may see what (docs/access.md). Every request is classified by its path (`paths`), its caller is
//! resolved from the credential it carries (`credentials`), and the request is let through, refused (401
//! JSON for an API, 303 to `/sign-in?next=…` for a page, before any rendering) or scoped (a viewer reads
//! one session: `scope`) by the gate on every request, `http::gate::authenticate`.
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
//!
//! By concern: `config` (the access mode, the trusted proxy, the client's address), `principal` (who is
//! calling, as handlers take it), `credentials` (resolving the caller, failed credentials, whether a
//! credential still holds), `paths` (path classes), `cookies` (the access cookies and the `Origin`
//! check), `scope` (what a viewer may see). Nothing here answers a page or names `http`: the
//! gate and the sign-in page use this module, not the other way round.

mod config;
mod cookies;
mod credentials;
mod paths;
mod principal;
mod scope;

pub use config::{client_ip, AccessConfig, AccessMode, TrustedProxy};
pub use cookies::{
    cookie_value, is_https, origin_matches, origin_refused, set_cookie, CookieLife, SIGN_IN_COOKIE,
    VIEWER_COOKIE, VIEWER_ENDED_COOKIE,
};
pub use credentials::{
    bearer_token, failure, host_is_loopback, resolve, still_valid, Presented, Resolved,
};
pub use paths::{classify, is_operator_form, PathClass, INSTALL_FILES, METRICS_PATH};
pub use principal::{require_host, AcrossSessions, Principal, StaffVia};
pub use scope::{viewer_may_open, without_internal, STAFF_ACTOR_FOR_VIEWER};

/// The access modules' unit tests: a header map of `pairs`, appended in order (a name may repeat).
#[cfg(test)]
pub(crate) fn test_headers(pairs: &[(&'static str, &str)]) -> axum::http::HeaderMap {
    let mut h = axum::http::HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, axum::http::HeaderValue::from_str(v).unwrap());
    }
    h
}
