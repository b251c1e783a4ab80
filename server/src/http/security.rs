//! Security headers on every response (docs/access.md "Page headers").
//!
//! - HTML: `Content-Security-Policy` with this response's nonce: `default-src 'self'; script-src 'self'
//!   'wasm-unsafe-eval' 'nonce-<n>'; style-src 'self'; img-src 'self' data:; connect-src 'self';
//!   object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`. The server renders
//!   the same nonce into the page's scripts ([`CspNonce`] in the request, read by the SSR context).
//! - The service worker script `/sw.js`: [`WORKER_POLICY`], the policy the worker itself runs under; it
//!   needs `connect-src 'self'` to fetch the pages it passes through and the files of the offline page.
//! - An SVG image (`image/svg+xml`: a turn's timeline, docs/api.md "A turn's timeline"; the icon):
//!   [`SVG_POLICY`], which lets the image's own `<style>` apply (an image runs no script).
//! - Anything else: `default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`.
//! - Always: `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` (a viewer link must never
//!   leak through `Referer`), `X-Frame-Options: DENY`.
//! - `Cache-Control: no-store` on everything but the bundle under `/pkg/`, where a content-hashed file
//!   found is `public, max-age=31536000, immutable`, another file found `no-cache`, a miss `no-store`
//!   ([`crate::assets::cache_control`]).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use rand::RngCore;

/// The nonce of this request's page scripts: 16 random bytes, base64url.
#[derive(Debug, Clone)]
pub struct CspNonce(pub Arc<str>);

impl CspNonce {
    fn new() -> Self {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        CspNonce(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(bytes)
                .into(),
        )
    }
}

/// The policy of an HTML page with `nonce`.
pub fn page_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'nonce-{nonce}'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; \
         base-uri 'none'; form-action 'self'"
    )
}

/// The policy of anything that is not HTML.
pub const OTHER_POLICY: &str =
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The policy of an SVG image: its own `<style>` element applies (its colours, light and dark); nothing
/// else loads, and an image runs no script.
pub const SVG_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The policy of the service worker script (`public/sw.js`), which a worker runs under: it may fetch from its
/// own origin and nothing else.
pub const WORKER_POLICY: &str =
    "default-src 'none'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The path of the service worker script.
pub const WORKER_PATH: &str = "/sw.js";

/// The security headers of a response written without the router (a refused request head, a connection
/// over the cap), as raw HTTP/1.1 header lines, each ending in CRLF.
pub const RAW_HEADER_LINES: &str = "content-security-policy: default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'\r\nx-content-type-options: nosniff\r\nreferrer-policy: no-referrer\r\nx-frame-options: DENY\r\ncache-control: no-store\r\n";

/// Middleware: puts a fresh [`CspNonce`] into the request, then sets the headers above on the response.
pub async fn security_headers(mut request: Request, next: Next) -> Response {
    let nonce = CspNonce::new();
    request.extensions_mut().insert(nonce.clone());
    let path = request.uri().path().to_owned();
    let is_static = path.starts_with("/pkg/");
    let is_worker = request.uri().path() == WORKER_PATH;
    let mut response = next.run(request).await;
    let is_html = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    let is_svg = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("image/svg+xml"));
    let is_worker = is_worker && response.status().is_success();
    let h = response.headers_mut();
    let policy = if is_html {
        HeaderValue::from_str(&page_policy(&nonce.0))
            .unwrap_or(HeaderValue::from_static(OTHER_POLICY))
    } else if is_worker {
        HeaderValue::from_static(WORKER_POLICY)
    } else if is_svg {
        HeaderValue::from_static(SVG_POLICY)
    } else {
        HeaderValue::from_static(OTHER_POLICY)
    };
    h.insert(CONTENT_SECURITY_POLICY, policy);
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    let cache = if is_static {
        crate::assets::cache_control(&path, response.status())
    } else {
        "no-store"
    };
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}
