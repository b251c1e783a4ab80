//! What the ledger's and the server's test suites share (a dev-dependency of both, never of the
//! product): which backend they run on. The same tests run on SQLite files by default and on Postgres
//! when `OUTCOMES_TEST_POSTGRES` names a database (docs/ledger.md "Tests").

/// The Postgres the suites run against instead of SQLite files: `OUTCOMES_TEST_POSTGRES`, a URL of a
/// database in which the tests may create schemas (`scripts/postgres.sh start` prints one). Unset or
/// empty: SQLite. The same tests run on both backends (docs/ledger.md "Backends").
pub fn postgres() -> Option<String> {
    std::env::var("OUTCOMES_TEST_POSTGRES")
        .ok()
        .filter(|s| !s.is_empty())
}

/// True (and says so on stderr) when the suite runs on Postgres: for the few tests of SQLite's own files
/// and locks, which have no Postgres counterpart.
pub fn skipped_on_postgres(what: &str) -> bool {
    if postgres().is_some() {
        eprintln!("skipped on Postgres: {what} (a SQLite file or lock)");
        return true;
    }
    false
}

/// `base` (a Postgres URL) whose connections use the schema `schema`: `options=-c search_path=<schema>`
/// added to its query (`&` when it has one already, else `?`), percent-encoded as libpq reads it.
/// `schema` is a plain identifier the caller made (letters, digits, `_`).
pub fn in_schema(base: &str, schema: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-c%20search_path%3D{schema}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_is_added_to_the_url_s_query() {
        assert_eq!(
            in_schema("postgres://u@h:5432/db", "t_1"),
            "postgres://u@h:5432/db?options=-c%20search_path%3Dt_1"
        );
        assert_eq!(
            in_schema("postgres://u@h/db?sslmode=disable", "t_2"),
            "postgres://u@h/db?sslmode=disable&options=-c%20search_path%3Dt_2"
        );
    }
}
