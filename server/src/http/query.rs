//! Validating request parts (read as text by the extractors of [`super::extract`]) into the ledger's
//! newtypes, with errors that name the field.

use ledger::ids::{check_identifier, IdError};
use ledger::LedgerError;

use crate::error::ApiError;

/// A required read identifier: 400 when missing or empty; `Ok(None)` when it breaks the identifier rule
/// (over 256 bytes, control characters, `.` or `..`), so could never have been stored: the caller answers it as the
/// unknown thing it names (404), after checking what comes first.
pub fn read_id<T>(
    value: Option<String>,
    field: &str,
    parse: impl FnOnce(String) -> Result<T, IdError>,
) -> Result<Option<T>, ApiError> {
    let v = value.ok_or_else(|| ApiError::missing_parameter(field))?;
    match parse(v) {
        Ok(t) => Ok(Some(t)),
        Err(e @ IdError::Empty) => Err(ApiError::bad_request(
            "invalid_parameter",
            format!("{field}: {e}"),
            Some(field),
        )),
        Err(IdError::TooLong(_) | IdError::ControlCharacter | IdError::DotSegment) => Ok(None),
    }
}

/// The 404 for a read identifier that names nothing stored: `session_not_found`, `turn_not_found` or
/// `mutation_not_found`, exactly as for a well-formed unknown one.
pub fn unknown(field: &str) -> ApiError {
    ApiError::from(match field {
        "logical_turn_id" => LedgerError::TurnNotFound,
        "mutation_id" => LedgerError::MutationNotFound,
        _ => LedgerError::SessionNotFound,
    })
}

/// A required read parameter: 400 when missing or empty; 404 (see [`unknown`]) when it could never have
/// been stored.
pub fn read_param<T>(
    value: Option<String>,
    field: &str,
    parse: impl FnOnce(String) -> Result<T, IdError>,
) -> Result<T, ApiError> {
    read_id(value, field, parse)?.ok_or_else(|| unknown(field))
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

/// Segment `index` of a URI path (`/api/sessions/{key}/...`: the key is 3), percent-decoded, with bytes
/// that are not UTF-8 replaced by U+FFFD.
pub fn lossy_segment(path: &str, index: usize) -> String {
    let raw = path.split('/').nth(index).unwrap_or_default();
    percent_encoding::percent_decode_str(raw)
        .decode_utf8_lossy()
        .into_owned()
}

/// A page size: absent → `default`; else one or more ASCII digits with value 1 to `max`, or 400
/// `invalid_parameter` naming `field`.
pub fn read_limit(
    value: Option<&str>,
    field: &str,
    default: u32,
    max: u32,
) -> Result<u32, ApiError> {
    let Some(v) = value else {
        return Ok(default);
    };
    v.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| v.parse::<u32>().ok())
        .flatten()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_parameter",
                format!("{field} is a whole number from 1 to {max}"),
                Some(field),
            )
        })
}

/// A revision cursor (`after_revision`, the replay's `after`): one or more ASCII digits with value at
/// most 2^63-1, or 400 `invalid_cursor` naming `field`.
pub fn read_revision(value: Option<&str>, field: &str) -> Result<Option<i64>, ApiError> {
    value
        .map(|v| {
            ledger::ids::Cursor::parse(v)
                .map(ledger::ids::Cursor::revision)
                .map_err(|e| ApiError::bad_request("invalid_cursor", e.to_string(), Some(field)))
        })
        .transpose()
}
