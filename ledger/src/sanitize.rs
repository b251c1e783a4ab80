//! Sanitisers of host metadata (seed 000, "resource_id, url and title"; docs/design.md "What is published"
//! and "Decisions where the sources are silent"). They apply to host metadata only, never to tool output.
//!
//! Each returns `None` when the value is withheld (published as `null`) and is idempotent: sanitising its
//! own output returns that output unchanged. Control characters are those of `char::is_control` (Unicode
//! category Cc: C0, DEL, C1; tab, CR and LF included).

use unicode_segmentation::UnicodeSegmentation;

use serde::Deserialize;

use crate::credential::{redact_credentials, resembles_credential};
use crate::limits::{RESOURCE_ID_MAX_BYTES, TITLE_MAX_BYTES, URL_MAX_BYTES};
use crate::wire::HostMetadata;

/// All three sanitisers at once: what the ledger stores of an attach (secrets at rest, `docs/design.md`
/// "Decisions where the sources are silent"): `id` at most 256 bytes or `None`, `url` at most 2048 bytes or
/// `None`, `title` at most 512 bytes with credentials redacted, or `None`. The projection sanitises again
/// on every read; being idempotent, that changes nothing, so what is stored is exactly what is published
/// (short of the record's 16 KiB cap).
pub fn sanitize_metadata(raw: &HostMetadata) -> HostMetadata {
    HostMetadata {
        id: sanitize_resource_id(raw.id.as_deref()),
        url: sanitize_url(raw.url.as_deref()),
        title: sanitize_title(raw.title.as_deref()),
    }
}

/// `resource_id`: published unchanged, or `None` (withheld) when absent, empty, over
/// [`RESOURCE_ID_MAX_BYTES`] (256) UTF-8 bytes, holding a control character, or resembling a credential
/// ([`crate::credential::resembles_credential`]).
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

/// `url`: an absolute `http`/`https` URL, parsed by the WHATWG-conformant `url` crate and re-serialised
/// as `scheme://host[:port]/path`: userinfo, query and fragment are dropped, a default port is dropped by
/// the parser, a non-default one is kept. `None` (withheld) when absent, empty, over [`URL_MAX_BYTES`]
/// (2048) bytes before or after, unparsable, of another scheme (`javascript:`, `ftp:`, …), or when the
/// kept host or path resembles a credential (a webhook or share link carries its secret in the path; a
/// path parameter naming a session or secret, `;jsessionid=…`, `;sid=…`, `;token=…`, is one too). Any other
/// `;` stays in the path as the WHATWG parser keeps it (`https://h.example/a;v=1/b`).
pub fn sanitize_url(raw: Option<&str>) -> Option<String> {
    let s = raw?;
    if s.is_empty() || s.len() > URL_MAX_BYTES {
        return None;
    }
    let mut url = url::Url::parse(s).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    // Neither can fail on an http(s) URL with a host; a failure withholds rather than keeps a userinfo.
    url.set_username("").ok()?;
    url.set_password(None).ok()?;
    url.set_query(None);
    url.set_fragment(None);
    let kept = String::from(url);
    if kept.len() > URL_MAX_BYTES || resembles_credential(&kept) {
        return None;
    }
    Some(kept)
}

/// `title`, in this order: drop control characters (seed 000: `"Line1\nLine2"` publishes `"Line1Line2"`;
/// a host that wants a space sends one); replace each credential-like substring with
/// [`crate::credential::REDACTION_MARKER`]; withhold structured JSON; truncate to [`TITLE_MAX_BYTES`]
/// (512) UTF-8 bytes; withhold structured JSON again. `None` when absent, when the result is empty, or when
/// it is structured JSON before or after truncation (see [`is_structured_json`]).
///
/// Credentials are also looked for before the whitespace controls go, while a PEM block still has its
/// lines and `Bearer\n<token>` still reads as an authorization value: what is found then is redacted too
/// (`"Bearer\nabcdef123456"` publishes `"Bearer[redacted]"`). Dropping controls never hides a credential
/// that the text with its line breaks showed, and sanitising the result finds nothing more.
///
/// Truncation cuts at the last extended grapheme cluster boundary within 512 bytes, so an emoji ZWJ
/// sequence, a flag or a letter with its combining marks is kept whole or dropped whole; only when the
/// first cluster alone is longer than 512 bytes is it cut at the last character boundary.
pub fn sanitize_title(raw: Option<&str>) -> Option<String> {
    let s = raw?;
    let breaks_kept: String = s
        .chars()
        .filter(|c| !c.is_control() || c.is_whitespace())
        .collect();
    let redacted_with_breaks = redact_credentials(&breaks_kept);
    let no_controls: String = redacted_with_breaks
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let redacted = if no_controls == redacted_with_breaks {
        no_controls
    } else {
        redact_credentials(&no_controls)
    };
    if is_structured_json(&redacted) {
        return None;
    }
    let truncated = truncate_to(&redacted, TITLE_MAX_BYTES);
    // The passes over the whole text are bounded (its size is the host's), so whatever a redaction could
    // still open up past them (a glued chain of tokens is followed in one pass, credential.rs) is settled
    // on the kept part, at most 512 bytes: it is redacted again until nothing changes, so what is
    // published is a fixed point and sanitising it again changes nothing.
    let mut kept = truncated.to_owned();
    for _ in 0..TITLE_MAX_BYTES {
        let again = redact_credentials(&kept);
        if again == kept {
            break;
        }
        kept = truncate_to(&again, TITLE_MAX_BYTES).to_owned();
    }
    if kept.is_empty() || is_structured_json(&kept) {
        return None;
    }
    Some(kept)
}

/// The longest prefix of `s` of at most `max` bytes that ends on a grapheme cluster boundary, or, when the
/// first cluster is longer than `max`, on a character boundary.
fn truncate_to(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = 0;
    for (start, grapheme) in s.grapheme_indices(true) {
        let next = start + grapheme.len();
        if next > max {
            break;
        }
        end = next;
    }
    if end == 0 {
        end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
    }
    &s[..end]
}

/// Whether `s` is structured JSON: one JSON object or array (RFC 8259 grammar), with any whitespace
/// around it. Scalars (`42`, `true`, `"text"`, `null`) are not structured.
///
/// - No nesting-depth limit: serde_json's recursion limit is disabled and `serde_stacker` grows the stack
///   on the heap, so a 1,000,000-deep `[[[…]]]` is recognised without a stack overflow (a stock
///   `serde_json::from_str` stops at depth 128 and would let it through).
/// - Around the value, "whitespace" is Unicode White_Space plus the invisible U+FEFF, U+200B and U+2060,
///   so a title cannot hide its JSON shape behind a no-break space or a byte order mark. Inside the value
///   only JSON's own whitespace (space, tab, LF, CR) is allowed.
/// - A `\uXXXX` escape of a lone surrogate (`["\ud800"]`) is structured: the RFC 8259 grammar accepts it
///   (only its meaning is undefined), and the value is JSON-shaped all the same, so such a title is
///   withheld. Ignoring the value (`IgnoredAny`) does not decode escapes, so serde_json accepts it.
pub fn is_structured_json(s: &str) -> bool {
    let trimmed = s.trim_matches(|c: char| {
        c.is_whitespace() || matches!(c, '\u{FEFF}' | '\u{200B}' | '\u{2060}')
    });
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return false;
    }
    let mut json = serde_json::Deserializer::from_str(trimmed);
    json.disable_recursion_limit();
    let parsed = serde::de::IgnoredAny::deserialize(serde_stacker::Deserializer::new(&mut json));
    parsed.is_ok() && json.end().is_ok()
}
