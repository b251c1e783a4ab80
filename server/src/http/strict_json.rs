//! Strict JSON input (docs/api.md "Errors"): a JSON body must be sent as `Content-Type: application/json`
//! (parameters such as `charset` allowed; an empty body needs none) and may not hold an object with the
//! same key twice. `serde_json` keeps the last of two equal keys without a word, so a body such as
//! `{"operations": "x", "operations": [...]}` would mean whatever the last one says while a proxy or a
//! log reader that keeps the first sees another request; both are refused instead.

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;

use crate::error::ApiError;

/// 415 `unsupported_media_type` (`field` `Content-Type`) unless the request's `Content-Type` is
/// `application/json` (its media type matched case-insensitively, any parameters, RFC 9110 8.3.1). A
/// request whose body is empty needs no `Content-Type`: `body_is_empty` skips the check.
pub fn require_json(headers: &HeaderMap, body_is_empty: bool) -> Result<(), ApiError> {
    if body_is_empty {
        return Ok(());
    }
    let mut values = headers.get_all(CONTENT_TYPE).iter();
    let is_json = match (values.next(), values.next()) {
        (Some(v), None) => v
            .to_str()
            .ok()
            .and_then(|v| v.parse::<mime::Mime>().ok())
            .is_some_and(|m| m.essence_str() == mime::APPLICATION_JSON.essence_str()),
        _ => false,
    };
    if is_json {
        return Ok(());
    }
    let mut e = ApiError::bad_request(
        "unsupported_media_type",
        "a JSON body must be sent with Content-Type: application/json",
        Some("Content-Type"),
    );
    e.status = StatusCode::UNSUPPORTED_MEDIA_TYPE;
    Err(e)
}

/// Parses `bytes` as one JSON value like `serde_json::from_slice`, refusing an object that holds the
/// same key twice (at any depth): 400 `duplicate_key` whose `field` is the key's path as the 422s name
/// fields (`operations`, `evidence.source`, `operations[2].op`). Anything else that is not JSON: 400
/// `malformed_json`.
pub fn parse(bytes: &[u8]) -> Result<Value, ApiError> {
    let duplicate = RefCell::new(None::<Vec<Segment>>);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict {
        duplicate: &duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (parsed, duplicate.into_inner()) {
        (Ok(v), _) => Ok(v),
        (Err(_), Some(mut path)) => {
            path.reverse();
            let field = field_path(&path);
            Err(ApiError::bad_request(
                "duplicate_key",
                format!("the body holds the key {field:?} twice; send each key once"),
                Some(&field),
            ))
        }
        (Err(e), None) => Err(ApiError::bad_request(
            "malformed_json",
            format!("the body is not valid JSON: {e}"),
            None,
        )),
    }
}

/// One step of the path to a duplicate key, innermost first while it is being unwound.
enum Segment {
    Key(String),
    Index(usize),
}

fn field_path(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Builds a [`Value`] as `Value`'s own `Deserialize` does; on a duplicate key it records the key and
/// fails, and each enclosing array or object adds its own step to the path as the failure passes.
#[derive(Clone, Copy)]
struct Strict<'a> {
    duplicate: &'a RefCell<Option<Vec<Segment>>>,
}

impl Strict<'_> {
    /// Adds `step` to the path of a duplicate key found inside the value at `step`.
    fn unwind(&self, step: impl FnOnce() -> Segment) {
        if let Some(path) = self.duplicate.borrow_mut().as_mut() {
            path.push(step());
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        loop {
            match seq.next_element_seed(self) {
                Ok(Some(v)) => items.push(v),
                Ok(None) => return Ok(Value::Array(items)),
                Err(e) => {
                    let at = items.len();
                    self.unwind(|| Segment::Index(at));
                    return Err(e);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if fields.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(vec![Segment::Key(key)]);
                return Err(A::Error::custom("duplicate key"));
            }
            match map.next_value_seed(self) {
                Ok(v) => {
                    fields.insert(key, v);
                }
                Err(e) => {
                    self.unwind(|| Segment::Key(key));
                    return Err(e);
                }
            }
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn refusal(body: &str) -> (StatusCode, String, Option<String>) {
        let e = parse(body.as_bytes()).unwrap_err();
        (e.status, e.detail.code.clone(), e.detail.field.clone())
    }

    #[test]
    fn json_without_duplicate_keys_parses_as_serde_json_would() {
        for body in [
            r#"{"a": 1, "b": [1.5, -2, 18446744073709551615, null, true, "x"], "c": {"a": 1}}"#,
            r#"[{"a": 1}, {"a": 2}]"#,
            "42",
            r#""text""#,
        ] {
            assert_eq!(
                parse(body.as_bytes()).unwrap(),
                serde_json::from_str::<Value>(body).unwrap(),
                "{body}"
            );
        }
    }

    #[test]
    fn a_key_given_twice_is_refused_with_its_path() {
        let dup = |f: &str| {
            (
                StatusCode::BAD_REQUEST,
                "duplicate_key".to_owned(),
                Some(f.to_owned()),
            )
        };
        assert_eq!(
            refusal(r#"{"operations":"x","operations":[]}"#),
            dup("operations")
        );
        assert_eq!(
            refusal(r#"{"evidence":{"source":"a","reference":"r","source":"b"}}"#),
            dup("evidence.source")
        );
        assert_eq!(
            refusal(r#"{"operations":[{"op":"approve"},{"op":"x","op":"y"}]}"#),
            dup("operations[1].op")
        );
        assert_eq!(refusal(r#"[[{"a":1,"a":1}]]"#), dup("[0][0].a"));
        // The same key in two objects is not a duplicate.
        assert_eq!(
            parse(br#"{"a":{"k":1},"b":{"k":2}}"#).unwrap(),
            json!({"a": {"k": 1}, "b": {"k": 2}})
        );
    }

    #[test]
    fn what_is_not_json_stays_malformed() {
        for body in ["", "{", r#"{"a":1} x"#, r#"{"a":1,}"#] {
            let (status, code, field) = refusal(body);
            assert_eq!(
                (status, code.as_str(), field),
                (StatusCode::BAD_REQUEST, "malformed_json", None),
                "{body:?}"
            );
        }
    }

    #[test]
    fn only_application_json_is_json_and_an_empty_body_needs_no_type() {
        let with = |values: &[&str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(CONTENT_TYPE, HeaderValue::from_str(v).unwrap());
            }
            h
        };
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
        ] {
            assert!(require_json(&with(&[ok]), false).is_ok(), "{ok}");
        }
        for refused in [
            &[][..],
            &["text/plain"][..],
            &["application/x-www-form-urlencoded"][..],
            &["application/jsonx"][..],
            &["application/json-patch+json"][..],
            &["json"][..],
            &["application/json", "application/json"][..],
        ] {
            let e = require_json(&with(refused), false).unwrap_err();
            assert_eq!(
                (e.status, e.detail.code.as_str(), e.detail.field.as_deref()),
                (
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported_media_type",
                    Some("Content-Type")
                ),
                "{refused:?}"
            );
        }
        assert!(require_json(&with(&["text/plain"]), true).is_ok());
        assert!(require_json(&with(&[]), true).is_ok());
    }
}
