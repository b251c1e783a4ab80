//! Host write requests in general (docs/api.md "Errors"): the body as JSON, the path and body of a write
//! read in the documented order by the [`Valid`] extractor, and the schema pieces the request types share
//! (the identifier rule, enums, objects).

use std::marker::PhantomData;

use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::StatusCode;
use bytes::Bytes;
use ledger::Command;
use serde::de::DeserializeOwned;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::extract::WritePath;
use super::strict_json;
use crate::error::ApiError;

/// Largest request body, in bytes (axum's default body limit, 2 MiB): a larger one is 413 `body_too_large`,
/// at once when `Content-Length` declares it, else as soon as it grows past it.
pub const BODY_LIMIT_BYTES: u64 = 2 * 1024 * 1024;

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
                claim: None,
            }),
            retry_after_secs: None,
        }
    })
}

/// A JSON request body as received (an extractor; docs/api.md "Errors"): 413 `body_too_large` over the
/// body limit, then 415 `unsupported_media_type` when the body is not empty and not sent as
/// `Content-Type: application/json` ([`strict_json::require_json`]). Not parsed yet: see [`body`].
pub struct JsonBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let media_type = strict_json::require_json(req.headers(), false);
        let bytes = raw(Bytes::from_request(req, state).await)?;
        if !bytes.is_empty() {
            media_type?;
        }
        Ok(JsonBody(bytes))
    }
}

/// The answer of an operation that reads a JSON body when the body is not sent as JSON (documentation
/// only; listed on every operation with a request body, docs/api.md "Errors").
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum JsonBodyErrors {
    /// `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
    /// application/json` (parameters such as `charset` are accepted).
    #[response(status = 415)]
    UnsupportedMediaType(ledger::wire::ErrorBody),
}

/// Parses a JSON object body: 400 `malformed_json` when it is not JSON or not an object, 400
/// `duplicate_key` naming a key an object holds twice ([`strict_json::parse`]), 422 naming the field
/// whose type is wrong.
pub(crate) fn body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    from_value(strict_json::parse(bytes)?)
}

/// Deserializes a JSON object body into `T`: 400 when it is not an object, 422 naming the first field
/// whose type is wrong. A number with a zero fractional part (`60.0`) counts as the integer it equals,
/// as JSON Schema's `integer` does (docs/api.md "Errors"); `1.5` stays a number and an integer field
/// refuses it.
pub(crate) fn from_value<T: DeserializeOwned>(mut value: serde_json::Value) -> Result<T, ApiError> {
    integral(&mut value);
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

/// Rewrites, in place and at any depth, each float whose fractional part is zero and which fits an
/// `i64` or `u64` as that integer.
fn integral(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Number(n) if n.is_f64() => {
            let Some(f) = n.as_f64() else { return };
            if f.fract() != 0.0 {
                return;
            }
            // The bounds are exact powers of two, so the comparisons are exact.
            if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
                *value = serde_json::Value::from(f as i64);
            } else if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                *value = serde_json::Value::from(f as u64);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(integral),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(integral),
        _ => {}
    }
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

/// A write's path parameters and its JSON body as received (an extractor): the body's size and media type
/// first (413 over 2 MiB; 415 not `application/json`: [`JsonBody`]), then the path (400 `invalid_path`:
/// [`WritePath`]), the order of docs/api.md "Errors". The body is not parsed yet: see [`body`].
pub struct PathAndBody<P> {
    pub path: P,
    pub bytes: Bytes,
}

impl<S, P> FromRequest<S> for PathAndBody<P>
where
    S: Send + Sync,
    P: DeserializeOwned + Send + 'static,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let (mut parts, raw_body) = req.into_parts();
        let p = WritePath::<P>::from_request_parts(&mut parts, state).await;
        let JsonBody(bytes) =
            JsonBody::from_request(axum::extract::Request::from_parts(parts, raw_body), state)
                .await?;
        let WritePath(path) = p?;
        Ok(PathAndBody { path, bytes })
    }
}

/// A validated host write (an extractor): the body's size and media type (413 over 2 MiB; 415 not
/// `application/json`: [`JsonBody`]), the path (400 `invalid_path`), then the body (400 `malformed_json`
/// when it is not a JSON object, `duplicate_key`; 422 naming a field of the wrong JSON type), then the
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
        let PathAndBody { path, bytes } = PathAndBody::<P>::from_request(req, state).await?;
        let body: B = body(&bytes)?;
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

/// The pattern of an identifier: no control character (C0, DEL, C1; `char::is_control`), and not `.` or
/// `..`: one character that is not a dot, two of which one is not a dot, or three or more (no lookahead,
/// which not every JSON Schema regex dialect has).
const IDENTIFIER_PATTERN: &str = "^(?:[^.\\u0000-\\u001F\\u007F-\\u009F]|[^\\u0000-\\u001F\\u007F-\\u009F][^.\\u0000-\\u001F\\u007F-\\u009F]|[^.\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]|[^\\u0000-\\u001F\\u007F-\\u009F]{3,})$";

impl PartialSchema for Identifier {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(ledger::limits::IDENTIFIER_MAX_BYTES))
            .pattern(Some(IDENTIFIER_PATTERN))
            .description(Some(
                "1 to 256 bytes of UTF-8 (maxLength counts characters: 256 for ASCII), no control character, not `.` or `..`",
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::integral;

    #[test]
    fn integral_floats_become_integers_and_others_stay() {
        let mut v = json!({"a": 60.0, "b": [1.0, -2.0, 1.5], "c": {"d": 0.0}, "e": 1e300, "f": "1.0", "g": 7});
        integral(&mut v);
        assert_eq!(
            v,
            json!({"a": 60, "b": [1, -2, 1.5], "c": {"d": 0}, "e": 1e300, "f": "1.0", "g": 7})
        );
        assert!(v["a"].is_u64());
        assert!(v["b"][1].is_i64());
        assert!(v["e"].is_f64());
        let mut big = json!(1.8e19);
        integral(&mut big);
        assert_eq!(big.as_u64(), Some(18_000_000_000_000_000_000));
    }
}
