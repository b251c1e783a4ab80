//! The group commit's SQLite transaction, run on the writer's own thread through the write connection's
//! handle (docs/ledger.md "Writing"): sqlx's SQLite driver sends every statement to the connection's
//! worker thread and waits for its answer, two thread switches per statement; here the writer locks the
//! writer thread opens a connection of its own through sqlx (the write pool's options: file, pragmas,
//! busy timeout), locks its handle out of that worker for the connection's whole life
//! ([`sqlx::sqlite::SqliteConnection::lock_handle`], the engine's writer, `Writer::run_direct`) and runs
//! `BEGIN IMMEDIATE`, the loads, the writes and `COMMIT` itself, through `rusqlite` on that handle
//! (`rusqlite` 0.32 links the `libsqlite3-sys` 0.30 that sqlx links: one SQLite library).
//!
//! Statements are prepared once per connection and kept (`rusqlite`'s statement cache), finalized when
//! the writer lets the handle go, before the connection closes. A failure is answered as the same
//! [`LedgerError`] kind sqlx's would be (through [`SqliteFailure`]): `SQLITE_BUSY`/`SQLITE_LOCKED`
//! `Busy`, `SQLITE_FULL` `StorageFull`, `SQLITE_READONLY`/`SQLITE_IOERR` `StorageUnavailable`.

use rusqlite::types::ToSql;

use crate::error::{LedgerError, SqliteFailure};

/// A write transaction (`BEGIN IMMEDIATE`) on the locked write connection. Dropped without
/// [`Direct::commit`], it is rolled back. Holds `&mut` of the connection, so a future holding it stays
/// `Send`.
pub(crate) struct Direct<'c> {
    db: &'c mut rusqlite::Connection,
}

impl<'c> Direct<'c> {
    /// Opens the transaction: `BEGIN IMMEDIATE`, which waits for SQLite's write lock at most the
    /// connection's busy timeout (the write wait; `Busy` past it, docs/ledger.md "Contention").
    pub(crate) fn begin(db: &'c mut rusqlite::Connection) -> Result<Direct<'c>, LedgerError> {
        let mut direct = Direct { db };
        direct.execute("BEGIN IMMEDIATE", &[])?;
        Ok(direct)
    }

    /// Runs the query `sql` with `params` and maps every row it answers with `map`. Parameters are bound
    /// as sqlx binds them: `?` in order, `$N` or `?N` the N-th of `params` (1-based).
    pub(crate) fn rows<T>(
        &mut self,
        sql: &str,
        params: &[&dyn ToSql],
        mut map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, LedgerError> {
        let mut statement = self.db.prepare_cached(sql).map_err(failure)?;
        collect(&mut statement, params, |row| map(row).map_err(failure))
    }

    /// Runs the statement `sql` with `params` (bound as [`Direct::rows`] binds them); answers the rows it
    /// changed.
    pub(crate) fn execute(
        &mut self,
        sql: &str,
        params: &[&dyn ToSql],
    ) -> Result<usize, LedgerError> {
        let mut statement = self.db.prepare_cached(sql).map_err(failure)?;
        bind(&mut statement, params)?;
        statement.raw_execute().map_err(failure)
    }

    /// `COMMIT`: returns once the transaction is durable (`synchronous=FULL`, docs/ledger.md
    /// "Durability"). On failure the transaction is rolled back (by SQLite itself on a full disk, else
    /// when this is dropped).
    pub(crate) fn commit(mut self) -> Result<(), LedgerError> {
        self.execute("COMMIT", &[]).map(|_| ())
    }
}

impl Drop for Direct<'_> {
    fn drop(&mut self) {
        // Committed, or rolled back by SQLite itself (`SQLITE_FULL`): nothing to do.
        if !self.db.is_autocommit() {
            if let Err(e) = self.db.execute_batch("ROLLBACK") {
                tracing::warn!(error = %e, "rolling back a failed group commit failed");
            }
        }
    }
}

/// Binds `params` to `statement` as sqlx's SQLite driver does: a parameter named `?N` or `$N` takes the
/// N-th (1-based), any other the next in order. A parameter without a value is a fault of this code
/// ([`LedgerError::Internal`]).
fn bind(statement: &mut rusqlite::Statement<'_>, params: &[&dyn ToSql]) -> Result<(), LedgerError> {
    let mut next = 0;
    for index in 1..=statement.parameter_count() {
        let numbered = statement
            .parameter_name(index)
            .and_then(|name| name.strip_prefix(['$', '?']))
            .and_then(|n| n.parse::<usize>().ok());
        let at = match numbered {
            Some(n) => n.checked_sub(1),
            None => {
                next += 1;
                Some(next - 1)
            }
        };
        let Some(value) = at.and_then(|i| params.get(i)) else {
            return Err(LedgerError::internal(format!(
                "statement parameter {index} has no value ({} given)",
                params.len()
            )));
        };
        statement
            .raw_bind_parameter(index, value)
            .map_err(failure)?;
    }
    Ok(())
}

/// A `rusqlite` error as the ledger answers it: an SQLite result code becomes a [`SqliteFailure`], so
/// `From<sqlx::Error> for LedgerError` maps it exactly as it maps sqlx's own SQLite errors; a stored value
/// of an unexpected type or text is a store failure (a decode error, as sqlx's); anything else is a fault
/// of this code ([`LedgerError::Internal`]).
pub(crate) fn failure(e: rusqlite::Error) -> LedgerError {
    match e {
        rusqlite::Error::SqliteFailure(code, message) => {
            let message = message.unwrap_or_else(|| code.to_string());
            LedgerError::from(sqlx::Error::Database(Box::new(SqliteFailure::new(
                code.extended_code,
                message,
            ))))
        }
        // A stored value of an unexpected type or text: the store's data, as sqlx's decode errors are.
        e @ (rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::Utf8Error(_)) => LedgerError::Store(sqlx::Error::Decode(Box::new(e))),
        // Anything else is a misuse of the connection by this code.
        other => LedgerError::internal(other.to_string()),
    }
}

/// Runs `read` on a connection of the SQLite read pool `pool` through its handle, on a blocking thread
/// (docs/ledger.md "Reading"): the connection is taken from the pool, its handle locked out of sqlx's
/// worker thread for the read ([`sqlx::sqlite::SqliteConnection::lock_handle`]), and `read` steps its
/// statements and builds its answer there, without a hand-off per row or per statement; the answer
/// crosses back once. The connection goes back to the pool when `read` returns. Statements are prepared
/// for this read only (the pool may close or replace the connection between reads).
///
/// Errors: the pool's (`Unavailable` once the ledger closed, `Busy` past its acquire timeout), SQLite's
/// as [`failure`] maps them, and `Internal` if the blocking thread could not run `read` (it panicked).
pub(crate) async fn read<T: Send + 'static>(
    pool: &sqlx::SqlitePool,
    read: impl FnOnce(&rusqlite::Connection) -> Result<T, LedgerError> + Send + 'static,
) -> Result<T, LedgerError> {
    let mut conn = pool.acquire().await?;
    let runtime = tokio::runtime::Handle::current();
    let ran = tokio::task::spawn_blocking(move || {
        runtime.block_on(async move {
            let mut locked = conn.lock_handle().await?;
            // SAFETY: `locked` keeps sqlx's worker thread off the handle and outlives `db` (dropped
            // first, below); `db` never closes the handle (`from_handle`), and it finalizes the
            // statements it prepared when it is dropped.
            let db = unsafe { rusqlite::Connection::from_handle(locked.as_raw_handle().as_ptr()) }
                .map_err(failure)?;
            let answer = read(&db);
            drop(db);
            drop(locked);
            answer
        })
    })
    .await;
    ran.unwrap_or_else(|e| {
        Err(LedgerError::internal(format!(
            "a read's thread ended without an answer: {e}"
        )))
    })
}

/// Runs the query `sql` of a direct read ([`read`]) with `params` (bound as [`Direct::rows`] binds
/// them) and maps every row with `map`, in the statement's order.
pub(crate) fn query<T>(
    db: &rusqlite::Connection,
    sql: &str,
    params: &[&dyn ToSql],
    map: impl FnMut(&rusqlite::Row<'_>) -> Result<T, LedgerError>,
) -> Result<Vec<T>, LedgerError> {
    let mut statement = db.prepare(sql).map_err(failure)?;
    collect(&mut statement, params, map)
}

/// Binds `params` to `statement` ([`bind`]), runs it and maps every row it answers with `map`.
fn collect<T>(
    statement: &mut rusqlite::Statement<'_>,
    params: &[&dyn ToSql],
    mut map: impl FnMut(&rusqlite::Row<'_>) -> Result<T, LedgerError>,
) -> Result<Vec<T>, LedgerError> {
    bind(statement, params)?;
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(failure)? {
        out.push(map(row)?);
    }
    Ok(out)
}
