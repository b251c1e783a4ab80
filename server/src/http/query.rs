//! Extracting and validating request parts into the ledger's newtypes, with errors that name the field.

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query};
use ledger::ids::{check_identifier, IdError};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The query string as `T`, or 400 naming the problem.
pub fn query<T: DeserializeOwned>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(t)| t)
        .map_err(|e| ApiError::bad_request("invalid_query", e.body_text(), None))
}

/// A required read parameter: 400 when missing or not a valid identifier.
pub fn read_param<T>(
    value: Option<String>,
    field: &str,
    parse: impl FnOnce(String) -> Result<T, IdError>,
) -> Result<T, ApiError> {
    let v = value.ok_or_else(|| ApiError::missing_parameter(field))?;
    parse(v).map_err(|e| {
        ApiError::bad_request("invalid_parameter", format!("{field}: {e}"), Some(field))
    })
}

/// A write identifier (path or body): 422 naming the field when it breaks the identifier rule.
pub fn write_id<T>(
    value: String,
    field: &str,
    parse: impl FnOnce(String) -> Result<T, IdError>,
) -> Result<T, ApiError> {
    if let Err(e) = check_identifier(&value) {
        return Err(ApiError::invalid_field(field, format!("{field} {e}")));
    }
    parse(value).map_err(|e| ApiError::invalid_field(field, format!("{field} {e}")))
}

/// The path parameters as `T` (percent-decoded once by the router), or 400 `invalid_path`.
pub fn path<T>(p: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    p.map(|Path(t)| t)
        .map_err(|e| ApiError::bad_request("invalid_path", e.body_text(), None))
}
