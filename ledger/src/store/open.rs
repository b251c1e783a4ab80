//! Opening the ledger's database (docs/ledger.md "Backends", "Files"): SQLite with its pragmas, pools,
//! migrations and the one-time scrub of stored metadata; Postgres with its pool, schema, migrations and
//! `LISTEN/NOTIFY` channel.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use super::files::{check_file, restrict_files, Found, SQLITE_MIGRATIONS};
use super::location::{database_file, redact_url};
use super::{Db, LedgerOptions};
use crate::error::LedgerError;

pub(super) async fn open_sqlite(
    database: &str,
    options: &LedgerOptions,
    storage: &crate::health::StorageHealth,
) -> Result<Db, LedgerError> {
    let connect = if database.starts_with("sqlite:") {
        SqliteConnectOptions::from_str(database)?
    } else {
        if let Some(parent) = Path::new(database).parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| LedgerError::Store(sqlx::Error::Io(e)))?;
            }
        }
        SqliteConnectOptions::new().filename(database)
    }
    .create_if_missing(true)
    .journal_mode(SqliteJournalMode::Wal)
    .synchronous(SqliteSynchronous::Full)
    .foreign_keys(true)
    // What is deleted or overwritten (a session, replaced metadata) is zeroed in the file too.
    .pragma("secure_delete", "ON")
    .busy_timeout(Duration::from_secs(5));
    let file = database_file(database);
    let mut found = None;
    if let Some(file) = &file {
        // Another application's file, not a database, or a ledger that could not be migrated: refused
        // before anything touches it. A new file is made mode 0600 before SQLite creates it; an existing
        // ledger's mode is set once it opened (a refused start leaves its mode as it was).
        let kind = check_file(file).await?;
        if kind == Found::New {
            restrict_files(file).map_err(|e| LedgerError::Store(sqlx::Error::Io(e)))?;
        }
        found = Some(kind);
    }
    let cannot_open = |e: sqlx::Error| match (&file, LedgerError::from(e)) {
        (Some(file), LedgerError::Store(e)) => LedgerError::Unreachable {
            database: file.display().to_string(),
            reason: e.to_string(),
        },
        (_, e) => e,
    };

    let page_limit = storage.page_limit.clone();
    let write = SqlitePoolOptions::new()
        .max_connections(1)
        .acquire_timeout(options.write_wait.max(Duration::from_secs(1)) * 3)
        .before_acquire(|conn, _| Box::pin(async move { Ok(usable(conn, "write")) }))
        .after_connect(move |conn, _| {
            let pages = page_limit.load(std::sync::atomic::Ordering::Acquire);
            Box::pin(async move {
                if pages > 0 {
                    sqlx::query(&format!("PRAGMA max_page_count = {pages}"))
                        .execute(conn)
                        .await?;
                }
                Ok(())
            })
        })
        .connect_with(connect.clone().busy_timeout(options.write_wait))
        .await
        .map_err(cannot_open)?;
    SQLITE_MIGRATIONS.run(&write).await?;
    scrub_metadata_at_rest(&write, options.clock.now_ms()).await?;
    if let (Some(file), Some(kind)) = (&file, found) {
        if kind.restrict() {
            restrict_files(file).map_err(|e| LedgerError::Store(sqlx::Error::Io(e)))?;
        }
    }
    let read = SqlitePoolOptions::new()
        .max_connections(options.read_connections.max(1))
        .acquire_timeout(options.write_wait.max(Duration::from_secs(1)))
        // No ping before each read: the connection is in this process, and sqlx's ping is a round trip
        // to the connection's worker thread that finds nothing `usable` does not (docs/ledger.md
        // "Reading": a history chunk paid one per chunk).
        .test_before_acquire(false)
        .before_acquire(|conn, _| Box::pin(async move { Ok(usable(conn, "read")) }))
        .connect_with(connect.read_only(true))
        .await
        .map_err(cannot_open)?;
    Ok(Db::Sqlite { write, read })
}

/// Whether a pooled SQLite connection may be handed out: not when sqlx still counts it inside a
/// transaction. That happens when SQLite rolled a transaction back itself (`SQLITE_FULL`, some I/O
/// errors): sqlx's `ROLLBACK` then fails and its transaction depth never comes down, so every later
/// `BEGIN` on that connection would fail. Such a connection is closed and the pool opens a new one
/// (docs/ledger.md "Storage faults").
fn usable(conn: &mut sqlx::SqliteConnection, which: &str) -> bool {
    use sqlx::Connection;
    if conn.is_in_transaction() {
        tracing::warn!(
            connection = which,
            "a ledger connection was left inside a transaction SQLite had rolled back; it is replaced"
        );
        return false;
    }
    true
}

/// How long opening a Postgres ledger waits for its first connection.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

pub(super) async fn open_postgres(url: &str, options: &LedgerOptions) -> Result<Db, LedgerError> {
    let unreachable = |e: sqlx::Error| LedgerError::Unreachable {
        database: redact_url(url),
        reason: e.to_string(),
    };
    let connect = PgConnectOptions::from_str(url)
        .map_err(|e| LedgerError::invalid("database", format!("{}: {e}", redact_url(url))))?;
    // One connection first, so an unreachable server or refused credentials are reported as they are
    // (the pool would only say it timed out).
    {
        use sqlx::Connection;
        let probe = tokio::time::timeout(CONNECT_WAIT, sqlx::PgConnection::connect_with(&connect))
            .await
            .map_err(|_| LedgerError::Unreachable {
                database: redact_url(url),
                reason: format!("no answer within {} s", CONNECT_WAIT.as_secs()),
            })?
            .map_err(unreachable)?;
        let _ = probe.close().await;
    }
    let lock_ms = options.write_wait.as_millis().clamp(1, i32::MAX as u128);
    let pool = PgPoolOptions::new()
        .max_connections(options.read_connections.max(1) + 2)
        .acquire_timeout(options.write_wait.max(Duration::from_secs(1)))
        .after_connect(move |conn, _| {
            Box::pin(async move {
                // Answered only after COMMIT is durable, whatever the server's default; and no
                // statement, a read included, waits for a lock longer than the write wait (a lock held
                // by a DBA's `LOCK TABLE` or `VACUUM FULL` answers 503 `busy`, never a hang).
                sqlx::query(
                    "SELECT set_config('synchronous_commit', 'on', false), \
                     set_config('lock_timeout', $1, false)",
                )
                .bind(lock_ms.to_string())
                .execute(conn)
                .await?;
                Ok(())
            })
        })
        .connect_with(connect)
        .await
        .map_err(unreachable)?;
    let mut schema: Option<String> = sqlx::query_scalar("SELECT current_schema()")
        .fetch_one(&pool)
        .await
        .map_err(unreachable)?;
    if schema.is_none() {
        // The URL's search_path names a schema that does not exist yet: create the first one it names.
        let path: String = sqlx::query_scalar("SELECT current_setting('search_path')")
            .fetch_one(&pool)
            .await?;
        if let Some(first) = first_schema(&path) {
            sqlx::query(&format!(
                "CREATE SCHEMA IF NOT EXISTS \"{}\"",
                first.replace('"', "\"\"")
            ))
            .execute(&pool)
            .await?;
            schema = sqlx::query_scalar("SELECT current_schema()")
                .fetch_one(&pool)
                .await?;
        }
    }
    let Some(schema) = schema else {
        return Err(LedgerError::invalid(
            "database",
            format!(
                "{}: its search_path names no schema the ledger can use",
                redact_url(url)
            ),
        ));
    };
    sqlx::migrate!("./migrations_pg").run(&pool).await?;
    Ok(Db::Postgres {
        pool,
        channel: notify_channel(&schema),
    })
}

/// The first schema a `search_path` setting names (`"$user"` skipped), unquoted.
pub(super) fn first_schema(search_path: &str) -> Option<String> {
    search_path
        .split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty() && *s != "\"$user\"" && *s != "$user")
        .map(|s| {
            s.strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .map_or_else(|| s.to_owned(), |q| q.replace("\"\"", "\""))
        })
        .next()
}

/// The `LISTEN/NOTIFY` channel of the ledger in `schema` (channels are per database, so ledgers in two
/// schemas of one database must not share one): `outcomes_` and the schema's bytes in hex, cut to
/// Postgres's 63-byte identifiers.
pub(super) fn notify_channel(schema: &str) -> String {
    let mut c = String::from("outcomes_");
    for b in schema.bytes() {
        c.push_str(&format!("{b:02x}"));
    }
    c.truncate(63);
    c
}

/// Once per database (task `metadata_at_rest` in the `maintenance` table): host metadata stored before it
/// was sanitised on write is sanitised in place, then the WAL is checkpointed and truncated, so a secret a
/// host sent by mistake leaves the files. No revision and no event: what is published does not change (the
/// projection's sanitisers are idempotent). Returns how many entries changed.
async fn scrub_metadata_at_rest(write: &SqlitePool, now_ms: i64) -> Result<u64, LedgerError> {
    use sqlx::Row;
    const TASK: &str = "metadata_at_rest";
    let done: Option<i64> = sqlx::query_scalar("SELECT done_at FROM maintenance WHERE task = ?")
        .bind(TASK)
        .fetch_optional(write)
        .await?;
    if done.is_some() {
        return Ok(0);
    }
    let mut tx = write.begin_with("BEGIN IMMEDIATE").await?;
    let rows = sqlx::query(
        "SELECT seq, meta_id, meta_url, meta_title FROM entries WHERE meta_attached = 1 \
         AND (meta_id IS NOT NULL OR meta_url IS NOT NULL OR meta_title IS NOT NULL)",
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut changed = 0;
    for row in rows {
        let stored = crate::wire::HostMetadata {
            id: row.try_get("meta_id")?,
            url: row.try_get("meta_url")?,
            title: row.try_get("meta_title")?,
        };
        let clean = crate::sanitize::sanitize_metadata(&stored);
        if clean != stored {
            sqlx::query(
                "UPDATE entries SET meta_id = ?, meta_url = ?, meta_title = ? WHERE seq = ?",
            )
            .bind(&clean.id)
            .bind(&clean.url)
            .bind(&clean.title)
            .bind(row.try_get::<i64, _>("seq")?)
            .execute(&mut *tx)
            .await?;
            changed += 1;
        }
    }
    sqlx::query("INSERT INTO maintenance (task, done_at) VALUES (?, ?)")
        .bind(TASK)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if changed > 0 {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(write)
            .await?;
        tracing::info!(entries = changed, "stored host metadata sanitised at rest");
    }
    Ok(changed)
}
