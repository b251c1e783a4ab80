//! The one credential detector shared by every sanitiser (DESIGN "Projection": "resembles a credential").

use std::sync::LazyLock;

use regex::Regex;

/// The marker that replaces a credential-like substring in a title.
pub const REDACTION_MARKER: &str = "[redacted]";

static PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?:AKIA|ASIA)[0-9A-Z]{16}",
        r"|gh[pousr]_[A-Za-z0-9]{36,}",
        r"|github_pat_[A-Za-z0-9_]{22,}",
        r"|xox[abprs]-[A-Za-z0-9-]{10,}",
        r"|sk_(?:live|test)_[A-Za-z0-9]{16,}",
        r"|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",
        r"|eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+",
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
        r"|(?i:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}",
        r"|(?i:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|token)\s*[=:]\s*[^\s&]+",
        r"|[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@",
    ))
    .expect("credential patterns compile")
});

/// Whether `s` contains anything that resembles a credential.
pub fn resembles_credential(s: &str) -> bool {
    PATTERNS.is_match(s)
}

/// `s` with every credential-like substring replaced by [`REDACTION_MARKER`].
pub fn redact_credentials(s: &str) -> String {
    PATTERNS.replace_all(s, REDACTION_MARKER).into_owned()
}
