//! The guards every request passes before routing, and the answer to a panicking handler: `CONNECT`,
//! path-less, over-long and dot-segment requests refused as JSON ([`refuse_unroutable`]), a client's
//! request id kept only when plain ([`plain_request_id`]), the path as logged ([`logged_path`]).

/// The answer to a handler that panicked: 500 JSON `internal`, the panic message logged, never sent.
pub(crate) fn panic_response(
    panic: Box<dyn std::any::Any + Send + 'static>,
) -> axum::response::Response {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = message, "a request handler panicked");
    axum::response::IntoResponse::into_response(crate::error::ApiError::internal())
}

/// `CONNECT` (an authority-form target, no path) and any request without a path: 405 JSON before any
/// route or the page fallback sees it. A declared body over the limit: 413 JSON at once. We are not a proxy. A path with a `.` or `..` segment (also
/// percent-encoded) is 400 `invalid_path`: browsers resolve those before sending, and access is decided
/// on the path as sent, so one must never name a page other than the one it reads as.
pub(crate) async fn refuse_unroutable(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.method() == axum::http::Method::CONNECT || !request.uri().path().starts_with('/') {
        return axum::response::IntoResponse::into_response(
            crate::error::ApiError::method_not_allowed(),
        );
    }
    if declared_too_large(request.headers()) {
        return axum::response::IntoResponse::into_response(
            crate::error::ApiError::body_too_large(),
        );
    }
    if has_dot_segment(request.uri().path()) {
        return axum::response::IntoResponse::into_response(crate::error::ApiError::bad_request(
            "invalid_path",
            "a path may not have `.` or `..` segments",
            None,
        ));
    }
    next.run(request).await
}

/// Whether the request declares a body over the limit (`Content-Length` above
/// [`crate::http::write::BODY_LIMIT_BYTES`]): it is refused with 413 before any byte of it is read,
/// instead of waiting for a body it would refuse anyway. (Hyper has already checked the header is one
/// valid length; a chunked body is limited while it is read.)
fn declared_too_large(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > crate::http::write::BODY_LIMIT_BYTES)
}

/// Whether a path has a `.` or `..` segment, literally or percent-encoded (`%2e`).
fn has_dot_segment(path: &str) -> bool {
    path.split('/').any(|segment| {
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        decoded == "." || decoded == ".."
    })
}

/// The path as logged: a viewer link's token (`/v/<token>`) is a credential and is never logged.
pub(crate) fn logged_path(path: &str) -> &str {
    if path.starts_with("/v/") {
        "/v/[token]"
    } else {
        path
    }
}

/// Drops a client's `X-Request-Id` unless it is 1 to 128 ASCII letters, digits, `.`, `_`, `:` or `-`
/// (one is then made): it is written into every log line of the request and must not forge log text.
pub(crate) async fn plain_request_id(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let plain = |v: &axum::http::HeaderValue| {
        let b = v.as_bytes();
        !b.is_empty()
            && b.len() <= 128
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
    };
    let headers = request.headers_mut();
    if headers.get_all("x-request-id").iter().count() > 1
        || headers.get("x-request-id").is_some_and(|v| !plain(v))
    {
        headers.remove("x-request-id");
    }
    next.run(request).await
}

#[cfg(test)]
mod path_tests {
    use super::*;

    #[test]
    fn dot_segments_are_found_also_percent_encoded() {
        for p in [
            "/pkg/../sessions/x",
            "/v/..",
            "/a/./b",
            "/%2e%2e/api",
            "/pkg/%2E/x",
            "/..",
        ] {
            assert!(has_dot_segment(p), "{p}");
        }
        for p in [
            "/",
            "/sessions/a.b",
            "/pkg/outcomes.js",
            "/sessions/...",
            "/sessions/%2e%2e%2e",
        ] {
            assert!(!has_dot_segment(p), "{p}");
        }
        assert_eq!(logged_path("/v/secret"), "/v/[token]");
        assert_eq!(logged_path("/sessions/x"), "/sessions/x");
    }
}
