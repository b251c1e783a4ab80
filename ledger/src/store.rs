//! Opening the ledger: the sqlx SQLite store, its pragmas, migrations, the clock and retention settings.
//! [`Ledger`] hands out the [`Engine`] (writes) and the [`SessionManager`] (reads).

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use crate::adapter::{Adapter, NoAdapter};
use crate::engine::Engine;
use crate::error::LedgerError;
use crate::sessions::SessionManager;

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
    /// A conversation expires this long after its last write (retention, DESIGN "Retention").
    pub session_ttl: Duration,
    /// Live delivery; called after each settled change is durable.
    pub adapter: Arc<dyn Adapter>,
    /// Time source for recorded times and retention ([`SystemClock`] outside tests).
    pub clock: Arc<dyn Clock>,
    /// Read connections in the pool (writes use one connection of their own).
    pub read_connections: u32,
}

impl Default for LedgerOptions {
    fn default() -> Self {
        LedgerOptions {
            session_ttl: Duration::from_secs(30 * 24 * 3600),
            adapter: Arc::new(NoAdapter),
            clock: Arc::new(SystemClock),
            read_connections: 4,
        }
    }
}

pub(crate) struct Inner {
    /// The one write connection: writers are serialised in this process, and the lock is taken up front.
    pub(crate) write: SqlitePool,
    pub(crate) read: SqlitePool,
    pub(crate) write_lock: tokio::sync::Mutex<()>,
    pub(crate) adapter: Arc<dyn Adapter>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ttl_ms: i64,
}

impl Inner {
    /// The earliest `last_write_at` of a session that has not expired at `now`.
    pub(crate) fn live_since(&self, now: i64) -> i64 {
        now.saturating_sub(self.ttl_ms)
    }
}

/// An open ledger. Cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    inner: Arc<Inner>,
}

impl Ledger {
    /// Opens (creating when missing) the SQLite ledger at `database`: a file path, or a `sqlite:` URL.
    /// Runs the numbered migrations. WAL journal with `synchronous=FULL`: a commit is on disk before the
    /// call returns, so a settlement that was answered survives a power cut (NORMAL in WAL mode can lose the
    /// last commits). Every pooled connection gets a 5 s busy timeout and foreign keys.
    pub async fn open(database: &str, options: LedgerOptions) -> Result<Ledger, LedgerError> {
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
        .busy_timeout(Duration::from_secs(5));

        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(connect.clone())
            .await?;
        sqlx::migrate!("./migrations").run(&write).await?;
        let read = SqlitePoolOptions::new()
            .max_connections(options.read_connections.max(1))
            .connect_with(connect.read_only(true))
            .await?;
        Ok(Ledger {
            inner: Arc::new(Inner {
                write,
                read,
                write_lock: tokio::sync::Mutex::new(()),
                adapter: options.adapter,
                clock: options.clock,
                ttl_ms: i64::try_from(options.session_ttl.as_millis()).unwrap_or(i64::MAX),
            }),
        })
    }

    /// The write side.
    pub fn engine(&self) -> Engine {
        Engine::new(self.inner.clone())
    }

    /// The read side.
    pub fn sessions(&self) -> SessionManager {
        SessionManager::new(self.inner.clone())
    }

    /// Closes both pools (graceful shutdown).
    pub async fn close(&self) {
        self.inner.write.close().await;
        self.inner.read.close().await;
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
