//! The query string and the path parameters of a request, as extractors whose rejection is our JSON error
//! (docs/api.md "Errors"): [`ReadQuery`] (400 `invalid_query`), [`ReadPath`] (a read's path: a parameter
//! that is not UTF-8 names nothing stored; 400 `invalid_path` otherwise) and [`WritePath`] (400
//! `invalid_path`). A handler that answers a page instead takes `Result<…, ApiError>` and renders the
//! error itself, in its own order.

use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The query string as `T` (an extractor), or 400 `invalid_query` naming the problem.
pub struct ReadQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ReadQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Query::<T>::try_from_uri(&parts.uri)
            .map(|Query(t)| ReadQuery(t))
            .map_err(|e| ApiError::bad_request("invalid_query", e.body_text(), None))
    }
}

/// A read's path parameters as `T` (an extractor; percent-decoded once by the router). `Err(key)` when
/// the parameter `key` is not UTF-8 once percent-decoded: like an identifier over 256 bytes, it could
/// never have been stored, so the handler answers it as unknown (404). Any other malformed path: 400
/// `invalid_path`.
pub struct ReadPath<T>(pub Result<T, String>);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ReadPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(t)) => Ok(ReadPath(Ok(t))),
            Err(PathRejection::FailedToDeserializePathParams(e)) => match e.kind() {
                ErrorKind::InvalidUtf8InPathParam { key } => Ok(ReadPath(Err(key.clone()))),
                _ => Err(invalid_path(e.body_text())),
            },
            Err(e) => Err(invalid_path(e.body_text())),
        }
    }
}

/// The path parameters as `T` (an extractor; percent-decoded once by the router), or 400
/// `invalid_path`, a parameter that is not UTF-8 included: the path of a write, of an operator form
/// and of a viewer link.
pub struct WritePath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for WritePath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(t)| WritePath(t))
            .map_err(|e| invalid_path(e.body_text()))
    }
}

/// 400 `invalid_path` with the router's words.
fn invalid_path(message: String) -> ApiError {
    ApiError::bad_request("invalid_path", message, None)
}
