//! Unit tests' look at SQLite's query plans: a fresh SQLite ledger and the `EXPLAIN QUERY PLAN` of a
//! statement, so a test can assert which index answers it (`SEARCH … USING INDEX …`) and that nothing
//! walks a whole table (`SCAN …`) or sorts (`TEMP B-TREE`).

use super::{Db, Inner};

/// A ledger in a fresh SQLite file of a temporary directory (kept while the directory is).
pub(crate) async fn fresh_sqlite() -> (tempfile::TempDir, Inner) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.db");
    let inner = Inner::open(path.to_str().unwrap(), Default::default())
        .await
        .unwrap();
    (dir, inner)
}

/// The read pool of a SQLite ledger (panics on Postgres: these tests are SQLite's).
pub(crate) fn sqlite_read(inner: &Inner) -> &sqlx::SqlitePool {
    match &inner.db {
        Db::Sqlite { read, .. } => read,
        Db::Postgres { .. } => panic!("a SQLite ledger"),
    }
}

/// `EXPLAIN QUERY PLAN` of `statement` with `binds` parameters (each bound to 1), one line per step.
pub(crate) async fn plan(inner: &Inner, statement: &str, binds: usize) -> String {
    let sql = format!("EXPLAIN QUERY PLAN {statement}");
    let mut q = sqlx::query_as::<_, (i64, i64, i64, String)>(&sql);
    for _ in 0..binds {
        q = q.bind(1_i64);
    }
    let rows = q.fetch_all(sqlite_read(inner)).await.unwrap();
    rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n")
}
