//! Sanitisers of host metadata (seed 000, "resource_id, url and title"; DESIGN "Projection" and
//! "Decisions where the seeds are silent"). They apply to host metadata only, never to tool output.

use crate::credential::{redact_credentials, resembles_credential};
use crate::limits::{RESOURCE_ID_MAX_BYTES, TITLE_MAX_BYTES, URL_MAX_BYTES};

/// `resource_id`: unchanged, or `None` (withheld) when empty, over 256 bytes, holding a control character or
/// resembling a credential.
pub fn sanitize_resource_id(raw: Option<&str>) -> Option<String> {
    let s = raw?;
    if s.is_empty()
        || s.len() > RESOURCE_ID_MAX_BYTES
        || s.chars().any(char::is_control)
        || resembles_credential(s)
    {
        return None;
    }
    Some(s.to_owned())
}

/// `url`: only absolute `http`/`https` URLs (WHATWG parsing by the `url` crate); keeps scheme, host (with a
/// non-default port) and path; drops userinfo, query and fragment. `None` when empty, unparsable, not
/// http(s), over 2048 bytes before or after, or when the kept host or path resembles a credential.
pub fn sanitize_url(raw: Option<&str>) -> Option<String> {
    let s = raw?;
    if s.is_empty() || s.len() > URL_MAX_BYTES {
        return None;
    }
    let mut url = url::Url::parse(s).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    url.set_username("").ok()?;
    url.set_password(None).ok()?;
    url.set_query(None);
    url.set_fragment(None);
    let kept = url.to_string();
    if kept.len() > URL_MAX_BYTES || resembles_credential(url.host_str()?) || resembles_credential(url.path()) {
        return None;
    }
    Some(kept)
}

/// `title`: drop control characters, redact credentials, withhold structured JSON, truncate to 512 bytes on
/// a character boundary, withhold structured JSON again. `None` when empty or withheld.
pub fn sanitize_title(raw: Option<&str>) -> Option<String> {
    let s = raw?;
    let no_controls: String = s.chars().filter(|c| !c.is_control()).collect();
    let redacted = redact_credentials(&no_controls);
    if is_structured_json(&redacted) {
        return None;
    }
    let mut end = redacted.len().min(TITLE_MAX_BYTES);
    while !redacted.is_char_boundary(end) {
        end -= 1;
    }
    let truncated = &redacted[..end];
    if truncated.is_empty() || is_structured_json(truncated) {
        return None;
    }
    Some(truncated.to_owned())
}

/// Whether `s` (surrounding whitespace allowed) is a JSON object or array.
pub fn is_structured_json(s: &str) -> bool {
    let t = s.trim();
    (t.starts_with('{') || t.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok()
}
