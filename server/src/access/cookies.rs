//! The access cookies (sign-in, viewer link, ended link), how they are read and set, and the `Origin`
//! check a change made with a cookie needs (docs/access.md).

use axum::http::header::{COOKIE, HOST, ORIGIN};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use cookie::Cookie;
use std::time::Duration;

use super::config::client_ip;
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::access::test_headers as headers;

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
