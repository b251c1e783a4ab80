//! Standalone HTML pages (`app::standalone`: sign-in, refusals, the end user's link pages) as answers.

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// A standalone HTML page (`app::standalone`) with `status`; the security headers, `no-store` among
/// them, come from the outermost layer.
pub fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}
