//! What a `database` argument names (docs/ledger.md "Backends"): a SQLite file or a Postgres URL, the
//! file behind a SQLite location, and a URL as it may be shown (without its password).

use std::str::FromStr;

use sqlx::sqlite::SqliteConnectOptions;

use crate::error::LedgerError;

/// What a `database` argument names (docs/ledger.md "Backends").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file path, or a `sqlite:` URL.
    Sqlite(String),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl Location {
    /// Reads a `database` argument: a `postgres://` or `postgresql://` URL is Postgres, a `sqlite:` URL
    /// or anything without a URL scheme is a SQLite path. Any other scheme (`mysql://`, `http://`, a
    /// mistyped `postgress://`) is refused with [`LedgerError::Invalid`] on `database`, never taken for
    /// a file name.
    pub fn parse(database: &str) -> Result<Location, LedgerError> {
        // A URL is read by its scheme alone (letters, digits, `+`, `-`, `.`, then `://`), so one that
        // does not parse is refused, never taken for a file name.
        if let Some((scheme, _)) = database.split_once("://") {
            let is_scheme = scheme.len() > 1
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if is_scheme {
                return match scheme.to_ascii_lowercase().as_str() {
                    "postgres" | "postgresql" => match url::Url::parse(database) {
                        Ok(_) => Ok(Location::Postgres(database.to_owned())),
                        Err(e) => Err(LedgerError::invalid(
                            "database",
                            format!(
                                "{} is not a valid URL ({e}); a user name or password with `@`, \
                                 `:`, `/`, `?`, `#` or a space must be percent-encoded",
                                redact_url(database)
                            ),
                        )),
                    },
                    "sqlite" => Ok(Location::Sqlite(database.to_owned())),
                    _ => Err(LedgerError::invalid(
                        "database",
                        format!(
                            "unsupported database URL scheme `{scheme}:`: give a SQLite file path, a \
                             `sqlite:` URL or a `postgres://` URL"
                        ),
                    )),
                };
            }
        }
        Ok(Location::Sqlite(database.to_owned()))
    }

    /// The location as it may be shown: a URL without its password.
    pub fn redacted(&self) -> String {
        match self {
            Location::Sqlite(s) => s.clone(),
            Location::Postgres(s) => redact_url(s),
        }
    }
}

/// `url` with any password replaced by `***` (for messages and logs).
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            // Passwords in the query (`?password=`) too.
            let pairs: Vec<(String, String)> = u
                .query_pairs()
                .map(|(k, v)| {
                    let v = if k.eq_ignore_ascii_case("password") {
                        "***".to_owned()
                    } else {
                        v.into_owned()
                    };
                    (k.into_owned(), v)
                })
                .collect();
            if !pairs.is_empty() {
                u.query_pairs_mut().clear().extend_pairs(pairs);
            }
            u.to_string()
        }
        // Not a URL that parses: the scheme and what follows the last `@` (host, port, database), up
        // to any query; never the user information.
        Err(_) => match url.split_once("://") {
            Some((scheme, rest)) => {
                let (hidden, shown) = match rest.rfind('@') {
                    Some(at) => ("***@", &rest[at + 1..]),
                    None => ("", rest),
                };
                let shown = shown.split('?').next().unwrap_or_default();
                format!("{scheme}://{hidden}{shown}")
            }
            None => "<an unreadable URL>".to_owned(),
        },
    }
}

/// The file a `database` argument (a path or a `sqlite:` URL, as [`Ledger::open`] takes it) names, or
/// `None` for an in-memory database, a Postgres URL or an argument that is not a SQLite location.
pub fn database_file(database: &str) -> Option<std::path::PathBuf> {
    if !matches!(Location::parse(database), Ok(Location::Sqlite(_))) {
        return None;
    }
    let options = if database.starts_with("sqlite:") {
        SqliteConnectOptions::from_str(database).ok()?
    } else {
        SqliteConnectOptions::new().filename(database)
    };
    let file = options.get_filename();
    // sqlx names an in-memory database `file:sqlx-in-memory-N` (no such file is ever made).
    if file.as_os_str().is_empty()
        || database.contains(":memory:")
        || database.contains("mode=memory")
        || file.to_string_lossy().starts_with("file:sqlx-in-memory-")
    {
        None
    } else {
        Some(file.to_path_buf())
    }
}
