//! Validated identifiers (docs/ledger.md "Entries and their states", the identifier rule): non-empty, at most
//! [`IDENTIFIER_MAX_BYTES`](crate::limits::IDENTIFIER_MAX_BYTES) UTF-8 bytes, no control character
//! (`char::is_control`: C0, DEL, C1; tab, CR and LF included), and not `.` or `..` (a URL path segment
//! cannot carry them). They can only be built valid.

use std::fmt;

use crate::limits::IDENTIFIER_MAX_BYTES;

/// Why an identifier was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {IDENTIFIER_MAX_BYTES} bytes, got {0}")]
    TooLong(usize),
    #[error("must not contain control characters")]
    ControlCharacter,
    /// `.` or `..`: as a URL path segment it is a step to the same or the parent folder, so no address
    /// (a page, an API path) can carry it (docs/ledger.md "Entries and their states").
    #[error("must not be `.` or `..` (no URL path can carry it)")]
    DotSegment,
}

/// Checks the identifier rule on `s`.
pub fn check_identifier(s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty);
    }
    if s.len() > IDENTIFIER_MAX_BYTES {
        return Err(IdError::TooLong(s.len()));
    }
    if s.chars().any(char::is_control) {
        return Err(IdError::ControlCharacter);
    }
    if s == "." || s == ".." {
        return Err(IdError::DotSegment);
    }
    Ok(())
}

macro_rules! identifier {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl TryFrom<String> for $name {
            type Error = IdError;

            fn try_from(s: String) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl $name {
            /// Builds the identifier, or says why `s` breaks the identifier rule.
            pub fn parse(s: impl Into<String>) -> Result<Self, IdError> {
                let s = s.into();
                check_identifier(&s)?;
                Ok(Self(s))
            }

            /// The identifier as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

identifier!(
    /// A conversation's key (`session_key`, `session_id` in the read API).
    SessionKey
);
identifier!(
    /// A logical turn of a session.
    LogicalTurnId
);
identifier!(
    /// A mutation's operation id, unique within its session.
    MutationId
);
identifier!(
    /// The tool that performs the mutation, e.g. `mcp__dashboards__create`.
    ToolName
);
identifier!(
    /// An attempt id minted by the host's dispatcher.
    AttemptId
);

/// A replay cursor (docs/api.md "Replay snapshot"): one or more ASCII digits, value at most 2^63-1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor(i64);

/// Why a cursor was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a cursor is one or more ASCII digits with value at most 9223372036854775807")]
pub struct CursorError;

impl Cursor {
    /// Parses a cursor. A sign, space, decimal point, empty text or overflow is an error.
    pub fn parse(s: &str) -> Result<Self, CursorError> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(CursorError);
        }
        s.parse::<i64>().map(Cursor).map_err(|_| CursorError)
    }

    /// The revision this cursor stands for.
    pub fn revision(self) -> i64 {
        self.0
    }
}

/// The most bytes of a text the ledger searches for (docs/api.md "Search", "Support queue"): as long as
/// the longest id.
pub const SEARCH_TEXT_MAX_BYTES: usize = IDENTIFIER_MAX_BYTES;

/// Whether `text` is one the ledger searches for: 1 to [`SEARCH_TEXT_MAX_BYTES`] bytes, no control
/// character (so, like an id, never a text no write could have stored). Callers trim first.
pub fn is_search_text(text: &str) -> bool {
    !text.is_empty() && text.len() <= SEARCH_TEXT_MAX_BYTES && !text.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_must_be_non_empty_short_and_free_of_controls() {
        assert_eq!(MutationId::parse(""), Err(IdError::Empty));
        assert_eq!(
            MutationId::parse("a".repeat(257)),
            Err(IdError::TooLong(257))
        );
        assert!(MutationId::parse("a".repeat(256)).is_ok());
        assert_eq!(MutationId::parse("a\tb"), Err(IdError::ControlCharacter));
        assert_eq!(
            MutationId::parse("a\u{85}b"),
            Err(IdError::ControlCharacter)
        );
        assert_eq!(MutationId::parse("a\u{7f}"), Err(IdError::ControlCharacter));
        // Format characters are not controls.
        assert!(MutationId::parse("a\u{200b}b").is_ok());
        // `.` and `..` are path steps no address can carry; other dots are plain text.
        assert_eq!(SessionKey::parse("."), Err(IdError::DotSegment));
        assert_eq!(LogicalTurnId::parse(".."), Err(IdError::DotSegment));
        for ok in ["...", ".a", "a.", "..a", "%2E%2E"] {
            assert!(MutationId::parse(ok).is_ok(), "{ok:?}");
        }
        assert!(SessionKey::parse("séance/1 %20").is_ok());
    }

    #[test]
    fn cursor_is_ascii_digits_up_to_i64_max() {
        assert_eq!(Cursor::parse("0").unwrap().revision(), 0);
        assert_eq!(Cursor::parse("007").unwrap().revision(), 7);
        assert_eq!(
            Cursor::parse("9223372036854775807").unwrap().revision(),
            i64::MAX
        );
        for bad in [
            "",
            "-1",
            "+1",
            " 1",
            "1 ",
            "1.0",
            "9223372036854775808",
            "１",
            "0x1",
        ] {
            assert_eq!(Cursor::parse(bad), Err(CursorError), "{bad:?}");
        }
    }
}
