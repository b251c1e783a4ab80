//! The store: opening the sqlx SQLite database (its pragmas, migrations, file modes), the clock and the
//! retention settings, shared by the write side, the read side and the access records (docs/ledger.md
//! "Layers"). The [`crate::Ledger`] front opens it and hands out the sides.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use crate::adapter::{Adapter, NoAdapter};
use crate::error::LedgerError;

/// Milliseconds since the Unix epoch, from a clock the tests can drive.
pub trait Clock: Send + Sync {
    /// Now, in milliseconds since the Unix epoch (UTC).
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// How the ledger is opened.
#[derive(Clone)]
pub struct LedgerOptions {
    /// A conversation expires this long after its last write (docs/ledger.md "Retention").
    pub session_ttl: Duration,
    /// Live delivery; called after each settled change is durable.
    pub adapter: Arc<dyn Adapter>,
    /// Time source for recorded times and retention ([`SystemClock`] outside tests).
    pub clock: Arc<dyn Clock>,
    /// Read connections in the pool (writes use one connection of their own).
    pub read_connections: u32,
    /// How long a write may wait for the write lock (this process's writers, then SQLite's lock, which
    /// another process may hold) before it is refused with [`LedgerError::Busy`]. Default 10 s.
    pub write_wait: Duration,
}

impl Default for LedgerOptions {
    fn default() -> Self {
        LedgerOptions {
            session_ttl: Duration::from_secs(30 * 24 * 3600),
            adapter: Arc::new(NoAdapter),
            clock: Arc::new(SystemClock),
            read_connections: 4,
            write_wait: Duration::from_secs(10),
        }
    }
}

pub(crate) struct Inner {
    /// The one write connection: writers are serialised in this process, and the lock is taken up front.
    pub(crate) write: SqlitePool,
    pub(crate) read: SqlitePool,
    /// Held by whoever writes: the group-commit writer for each group, and the other writers (deletes,
    /// purges, access records) for their own transactions.
    pub(crate) write_lock: tokio::sync::Mutex<()>,
    pub(crate) adapter: Arc<dyn Adapter>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ttl_ms: i64,
    pub(crate) write_wait: Duration,
}

impl Inner {
    /// Opens (creating when missing) the SQLite ledger at `database`: a file path, or a `sqlite:` URL.
    /// Runs the numbered migrations. WAL journal with `synchronous=FULL`: a commit is on disk before the
    /// call returns, so a settlement that was answered survives a power cut (NORMAL in WAL mode can lose the
    /// last commits). Read connections get a 5 s busy timeout, the write connection `write_wait`; all get
    /// foreign keys. A database file is created mode 0600 and an existing one (with its `-wal` and `-shm`)
    /// is set to 0600: it holds what hosts recorded (docs/ledger.md "Files").
    pub(crate) async fn open(database: &str, options: LedgerOptions) -> Result<Inner, LedgerError> {
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
        if let Some(file) = database_file(database) {
            restrict_files(&file).map_err(|e| LedgerError::Store(sqlx::Error::Io(e)))?;
        }

        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(options.write_wait.max(Duration::from_secs(1)) * 3)
            .connect_with(connect.clone().busy_timeout(options.write_wait))
            .await?;
        sqlx::migrate!("./migrations").run(&write).await?;
        scrub_metadata_at_rest(&write, options.clock.now_ms()).await?;
        let read = SqlitePoolOptions::new()
            .max_connections(options.read_connections.max(1))
            .acquire_timeout(options.write_wait.max(Duration::from_secs(1)))
            .connect_with(connect.read_only(true))
            .await?;
        Ok(Inner {
            write,
            read,
            write_lock: tokio::sync::Mutex::new(()),
            adapter: options.adapter,
            clock: options.clock,
            ttl_ms: i64::try_from(options.session_ttl.as_millis()).unwrap_or(i64::MAX),
            write_wait: options.write_wait,
        })
    }

    /// This process's write lock, waited for at most `write_wait`; [`LedgerError::Busy`] past it.
    pub(crate) async fn writer(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, LedgerError> {
        tokio::time::timeout(self.write_wait, self.write_lock.lock())
            .await
            .map_err(|_| LedgerError::Busy)
    }

    /// A write transaction that holds SQLite's write lock from its first statement (`BEGIN IMMEDIATE`),
    /// so a writer never reads, then fails to upgrade with `SQLITE_BUSY`; SQLite waits up to the write
    /// connection's busy timeout (`write_wait`) for another process to let go.
    pub(crate) async fn begin_write(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, LedgerError> {
        Ok(self.write.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// The earliest `last_write_at` of a session that has not expired at `now`.
    pub(crate) fn live_since(&self, now: i64) -> i64 {
        now.saturating_sub(self.ttl_ms)
    }
}

/// Formats milliseconds since the epoch as RFC 3339 UTC (`2026-11-29T19:18:38.123Z`).
pub fn format_time(ms: i64) -> String {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
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
        let stored = crate::projection::HostMetadata {
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

/// The file a `database` argument (a path or a `sqlite:` URL, as [`Ledger::open`] takes it) names, or
/// `None` for an in-memory database or an argument that is not a SQLite location.
pub fn database_file(database: &str) -> Option<std::path::PathBuf> {
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

/// Creates the database file mode 0600 when missing, and sets it and its `-wal`/`-shm` files to 0600 when
/// present (SQLite creates the `-wal` and `-shm` files with the database file's mode).
fn restrict_files(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        if !path.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)?;
        }
        let mut names = vec![path.to_path_buf()];
        for suffix in ["-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            names.push(p.into());
        }
        for p in names {
            match std::fs::metadata(&p) {
                Ok(m) if m.permissions().mode() & 0o077 != 0 => {
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))?
                }
                _ => {}
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}
