//! Host write requests in general (docs/api.md "Errors"): the body as JSON, the path and body of a write
//! read in the documented order by the [`Valid`] extractor, and the schema pieces the request types share
//! (the identifier rule, enums, objects).

use std::marker::PhantomData;

use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Path};
use axum::http::StatusCode;
use bytes::Bytes;
use ledger::Command;
use serde::de::DeserializeOwned;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::error::ApiError;

/// The raw body, or the extractor's status (413 over the body limit, 2 MiB) as a JSON error.
pub(crate) fn raw(bytes: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    bytes.map_err(|e| {
        let status = e.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "invalid_body"
        };
        ApiError {
            status,
            detail: Box::new(ledger::wire::ErrorDetail {
                code: code.to_owned(),
                message: e.body_text(),
                field: None,
                current: None,
            }),
            retry_after_secs: None,
        }
    })
}

/// Parses a JSON object body: 400 when it is not JSON or not an object, 422 naming the field whose type
/// is wrong.
pub(crate) fn body<T: DeserializeOwned>(
    bytes: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = raw(bytes)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(
            "malformed_json",
            format!("the body is not valid JSON: {e}"),
            None,
        )
    })?;
    from_value(value)
}

pub(crate) fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "malformed_json",
            "the body must be a JSON object",
            None,
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        ApiError::invalid_field(&field, format!("{field}: {}", e.inner()))
    })
}

pub(crate) fn required<T>(value: Option<T>, field: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::invalid_field(field, format!("{field} is required")))
}

/// The path of a write to a session: `{session_key}` (percent-decoded, not yet checked).
pub type SessionPath = String;
/// The path of a write to one mutation: `({session_key}, {mutation_id})` (percent-decoded, not yet
/// checked).
pub type EntryPath = (String, String);

/// A host write as received: its path parameters and its body, each of the right JSON shape but not yet
/// checked against the ledger's rules. `Command: TryFrom<Request<P, B>>` checks the identifiers (path
/// first) and the fields, 422 naming the first that breaks a rule.
pub struct Request<P, B> {
    pub path: P,
    pub body: B,
}

/// A validated host write (an extractor): the path (400 `invalid_path`), then the body (413 over 2 MiB;
/// 400 `malformed_json` when it is not a JSON object; 422 naming a field of the wrong JSON type), then the
/// identifiers and field rules (422 naming the field): the order of docs/api.md "Errors". Handlers get the
/// ledger's [`Command`]; the rejection is the [`ApiError`] of the first problem.
pub struct Valid<P, B> {
    pub command: Command,
    shape: PhantomData<fn() -> (P, B)>,
}

impl<S, P, B> FromRequest<S> for Valid<P, B>
where
    S: Send + Sync,
    P: DeserializeOwned + Send + 'static,
    B: DeserializeOwned,
    Command: TryFrom<Request<P, B>, Error = ApiError>,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let (mut parts, raw_body) = req.into_parts();
        let p = Path::<P>::from_request_parts(&mut parts, state).await;
        let path = super::query::path(p)?;
        let bytes =
            Bytes::from_request(axum::extract::Request::from_parts(parts, raw_body), state).await;
        let body: B = body(bytes)?;
        Ok(Valid {
            command: Command::try_from(Request { path, body })?,
            shape: PhantomData,
        })
    }
}

/// The identifier rule as a schema (docs/ledger.md "Entries and their states"): 1 to 256 bytes of
/// UTF-8 with no control character. JSON Schema counts characters, so `maxLength` 256 is the rule for
/// ASCII; a longer identifier in bytes is refused with 422 like any other.
pub struct Identifier;

/// The pattern of an identifier: no control character (C0, DEL, C1; `char::is_control`).
const IDENTIFIER_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$";

impl PartialSchema for Identifier {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(ledger::limits::IDENTIFIER_MAX_BYTES))
            .pattern(Some(IDENTIFIER_PATTERN))
            .description(Some(
                "1 to 256 bytes of UTF-8 (maxLength counts characters: 256 for ASCII), no control character",
            ))
            .into()
    }
}

impl ToSchema for Identifier {}

/// A string schema: one of `values`.
pub(crate) fn one_of(values: &[&str]) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
}

/// An object schema of `required` and `optional` properties (other properties are ignored).
pub(crate) fn object<'a>(
    required: impl IntoIterator<Item = (&'a str, RefOr<Schema>)>,
    optional: impl IntoIterator<Item = (&'a str, RefOr<Schema>)>,
) -> ObjectBuilder {
    let mut o = ObjectBuilder::new().schema_type(Type::Object);
    for (name, schema) in required {
        o = o.property(name, schema).required(name);
    }
    for (name, schema) in optional {
        o = o.property(name, schema);
    }
    o
}

pub(crate) fn identifier() -> RefOr<Schema> {
    Ref::from_schema_name("Identifier").into()
}

pub(crate) fn null() -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::Null).into()
}
