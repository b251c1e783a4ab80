//! The store: the open ledger's pools and shared state ([`Inner`]: the clock, the retention settings, the
//! write lock), shared by the write side, the read side and the access records (docs/ledger.md
//! "Layers"). The [`crate::Ledger`] front opens it and hands out the sides. By concern:
//!
//! - [`backend`]: the pools per backend, the SQL dialect and the per-backend query macros;
//! - [`transaction`]: write transactions, their notifications and session locks;
//! - [`open`]: opening SQLite or Postgres; [`files`]: the SQLite file's checks, mode and backups;
//! - [`location`]: what a `database` argument names; [`clock`]: the clock and time spelling;
//! - [`live`]: what the writers share with the Postgres listener (its notes, what it emitted); the
//!   listener itself is the crate's `notify` module, beside the store: it reads the store, the store never calls it.
//!
//! The store imports neither the engine nor the group commit: the write path points one way, `engine →
//! group → store`.

use std::sync::Arc;
use std::time::Duration;

pub(crate) mod backend;
mod clock;
mod files;
pub(crate) mod live;
mod location;
mod open;
#[cfg(test)]
pub(crate) mod query_plan;
pub(crate) mod transaction;

pub(crate) use backend::{on_pool, on_read, on_tx, on_write, Db, Dialect};
pub use clock::{format_time, Clock, SystemClock};
pub use files::{backup, check_database, check_integrity};
pub use location::{database_file, redact_url, Location};
pub(crate) use transaction::{not_direct, WriteTx};

use crate::adapter::{Adapter, NoAdapter};
use crate::error::LedgerError;
use open::{open_postgres, open_sqlite};
use transaction::session_lock_keys;

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
    /// The deadline of an intent or fresh attempt that names none (docs/api.md "Deadlines"). Default
    /// 900 s (`--in-flight-deadline-secs`).
    pub in_flight_deadline: Duration,
    /// Postgres: the most time one candidate read of a search may take, per group and page (docs/ledger.md
    /// "Search"); a read that takes longer stops its group for that page, which the next page goes on
    /// from. Default [`POSTGRES_CANDIDATES_BUDGET`] (100 ms); at least 1 ms.
    pub search_budget: Duration,
    /// How many of the newest operations, and of the newest sessions, a search text shorter than 3
    /// characters looks in (docs/ledger.md "A short text"). Default
    /// [`SEARCH_SHORT_NEWEST`] (20,000); at least 1.
    pub search_short_newest: u32,
}

/// The most time one Postgres candidate read (of each group, per page) may take, by default
/// ([`crate::LedgerOptions::search_budget`]).
/// `pg_trgm` rechecks each row its index gives against the candidate pattern; rows built to hold every
/// chosen trigram but never the pattern are each rechecked, at a cost no bound of candidates limits. A
/// read that takes longer is cancelled (`statement_timeout`) and the group stops where its walk of the
/// newest rows ended, as when it has more candidates than the search examines per page: the next page goes
/// on from there, so no match is lost (docs/ledger.md "Search").
pub const POSTGRES_CANDIDATES_BUDGET: Duration = Duration::from_millis(100);

/// How many of the newest operations, and of the newest sessions, a text shorter than 3 characters
/// searches by default ([`crate::LedgerOptions::search_short_newest`]; docs/api.md "Search").
pub const SEARCH_SHORT_NEWEST: u32 = 20_000;

impl Default for LedgerOptions {
    fn default() -> Self {
        LedgerOptions {
            session_ttl: Duration::from_secs(30 * 24 * 3600),
            adapter: Arc::new(NoAdapter),
            clock: Arc::new(SystemClock),
            read_connections: 4,
            write_wait: Duration::from_secs(10),
            in_flight_deadline: Duration::from_secs(900),
            search_budget: POSTGRES_CANDIDATES_BUDGET,
            search_short_newest: SEARCH_SHORT_NEWEST,
        }
    }
}

/// The SQLite writer's stop request ([`Inner::stop_writer`]): answered once its connection is closed.
/// The engine's writer receives it; it is defined here, with the field that keeps it.
pub(crate) type StopWriter = tokio::sync::oneshot::Sender<tokio::sync::oneshot::Sender<()>>;

pub(crate) struct Inner {
    pub(crate) db: Db,
    /// Postgres: what this instance's listener emitted ([`live::Emitter`]); `None` on SQLite, where the
    /// writer tells the adapter itself.
    pub(crate) emitter: Option<Arc<live::Emitter>>,
    /// Postgres: the listener task, ended with the ledger.
    pub(crate) listener: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
    /// Held by whoever writes in this process: the group-commit writer for each group, and the other
    /// writers (deletes, purges, access records) for their own transactions.
    pub(crate) write_lock: tokio::sync::Mutex<()>,
    pub(crate) adapter: Arc<dyn Adapter>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ttl_ms: i64,
    /// [`LedgerOptions::in_flight_deadline`] in ms.
    pub(crate) deadline_ms: i64,
    pub(crate) write_wait: Duration,
    /// [`LedgerOptions::search_budget`] in ms (at least 1).
    pub(crate) search_budget_ms: u64,
    /// [`LedgerOptions::search_short_newest`] (at least 1).
    pub(crate) search_short_newest: u32,
    /// Whether writes currently fail for lack of storage (crate::health).
    pub(crate) storage: crate::health::StorageHealth,
    /// SQLite: asks the group-commit writer thread to close its connection ([`Inner::close`]); set when
    /// the writer starts.
    pub(crate) writer_stop: std::sync::Mutex<Option<StopWriter>>,
}

impl Inner {
    /// Opens the ledger `database` names ([`Location::parse`]): SQLite (created when missing) or
    /// Postgres. Runs the backend's numbered migrations.
    ///
    /// SQLite: WAL journal with `synchronous=FULL`: a commit is on disk before the call returns, so a
    /// settlement that was answered survives a power cut (NORMAL in WAL mode can lose the last commits).
    /// Read connections get a 5 s busy timeout, the write connection `write_wait`; all get foreign keys.
    /// An existing file is checked first ([`check_database`]): one of another application, or not a SQLite
    /// database, is refused and left as it was. A database file the ledger creates is mode 0600, and an
    /// existing ledger's (with its `-wal` and `-shm`) is set to 0600: it holds what hosts recorded
    /// (docs/ledger.md "Files"). The write connection that SQLite left inside a transaction it rolled back
    /// itself (a full disk) is closed and a new one opened (docs/ledger.md "Storage faults").
    ///
    /// Postgres: one pool of `read_connections + 2` connections, `synchronous_commit` on, tables in the
    /// URL's `search_path` (`options=-c search_path=...`; `public` by default). Unreachable, or refusing
    /// the credentials: [`LedgerError::Unreachable`] naming the URL without its password.
    pub(crate) async fn open(database: &str, options: LedgerOptions) -> Result<Inner, LedgerError> {
        let storage = crate::health::StorageHealth::default();
        let db = match Location::parse(database)? {
            Location::Sqlite(path) => open_sqlite(&path, &options, &storage).await?,
            Location::Postgres(url) => open_postgres(&url, &options).await?,
        };
        let emitter = matches!(db, Db::Postgres { .. }).then(|| Arc::new(live::Emitter::new()));
        Ok(Inner {
            db,
            emitter,
            listener: std::sync::Mutex::new(None),
            write_lock: tokio::sync::Mutex::new(()),
            adapter: options.adapter,
            clock: options.clock,
            ttl_ms: i64::try_from(options.session_ttl.as_millis()).unwrap_or(i64::MAX),
            deadline_ms: i64::try_from(options.in_flight_deadline.as_millis()).unwrap_or(i64::MAX),
            write_wait: options.write_wait,
            search_budget_ms: u64::try_from(options.search_budget.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
            search_short_newest: options.search_short_newest.max(1),
            storage,
            writer_stop: std::sync::Mutex::new(None),
        })
    }

    pub(crate) fn dialect(&self) -> Dialect {
        match self.db {
            Db::Sqlite { .. } => Dialect::Sqlite,
            Db::Postgres { .. } => Dialect::Postgres,
        }
    }

    /// The `LISTEN/NOTIFY` channel (Postgres).
    pub(crate) fn notify_channel(&self) -> Option<&str> {
        match &self.db {
            Db::Postgres { channel, .. } => Some(channel),
            Db::Sqlite { .. } => None,
        }
    }

    /// This instance, as its session-end notifications name it (0 on SQLite).
    pub(crate) fn instance(&self) -> u64 {
        self.emitter.as_ref().map_or(0, |e| e.instance)
    }

    /// This process's write lock, waited for at most `write_wait`; [`LedgerError::Busy`] past it.
    pub(crate) async fn writer(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, LedgerError> {
        tokio::time::timeout(self.write_wait, self.write_lock.lock())
            .await
            .map_err(|_| LedgerError::Busy)
    }

    /// A write transaction. SQLite: holds the write lock from its first statement (`BEGIN
    /// IMMEDIATE`), so a writer never reads, then fails to upgrade with `SQLITE_BUSY`; SQLite waits up
    /// to the write connection's busy timeout (`write_wait`) for another process to let go. Postgres:
    /// READ COMMITTED with `lock_timeout` set to `write_wait`, so waiting for another instance's lock
    /// ends in [`LedgerError::Busy`], and joins planned as index lookups; see [`WriteTx::lock_sessions`].
    pub(crate) async fn begin_write(&self) -> Result<WriteTx<'static>, LedgerError> {
        match &self.db {
            Db::Sqlite { write, .. } => {
                Ok(WriteTx::Sqlite(write.begin_with("BEGIN IMMEDIATE").await?))
            }
            Db::Postgres { pool, .. } => {
                let mut tx = pool.begin().await?;
                let ms = self.write_wait.as_millis().clamp(1, i32::MAX as u128);
                // A group's statements join short lists (a JSON parameter, estimated at 100 rows)
                // with large tables: planned as hash joins, each would scan the whole table;
                // without them, each element is an index lookup.
                sqlx::query(
                    "SELECT set_config('lock_timeout', $1, true), \
                     set_config('enable_hashjoin', 'off', true), \
                     set_config('enable_mergejoin', 'off', true)",
                )
                .bind(ms.to_string())
                .execute(&mut *tx)
                .await?;
                Ok(WriteTx::Postgres(tx))
            }
        }
    }

    /// The group commit's write transaction with its sessions locked: [`Inner::begin_write`] then
    /// [`WriteTx::lock_sessions`], in ONE round trip on Postgres (docs/ledger.md
    /// "Postgres round trips"). There `conn` receives a connection of the pool, which the transaction
    /// borrows, and the transaction's settings, the advisory locks and `BEGIN` go as one simple query:
    /// `SELECT set_config(…); SELECT pg_advisory_xact_lock(k) FROM unnest('{…}'::bigint[]); BEGIN`.
    /// Its only literals are integers this code formats (the write wait in ms, the lock keys), never a
    /// caller's text. `BEGIN` comes last on purpose: the statements before it run in the query's
    /// implicit transaction, which `BEGIN` turns into the transaction block (the settings and the locks
    /// stay, Postgres protocol "Multiple Statements in a Simple Query"); when a lock is not taken within
    /// the write wait (`Busy`), that implicit transaction ends rolled back and the connection goes back
    /// to the pool idle, not inside an aborted transaction. SQLite: `conn` stays `None` and the two
    /// steps run as they are.
    pub(crate) async fn begin_group<'c, 'k>(
        &self,
        conn: &'c mut Option<sqlx::pool::PoolConnection<sqlx::Postgres>>,
        session_keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<WriteTx<'c>, LedgerError> {
        let Db::Postgres { pool, .. } = &self.db else {
            let mut tx = self.begin_write().await?;
            tx.lock_sessions(session_keys).await?;
            return Ok(tx);
        };
        let keys = session_lock_keys(session_keys);
        let ms = self.write_wait.as_millis().clamp(1, i32::MAX as u128);
        // `begin_write`'s settings, spelled as literals (a simple query takes no parameters).
        let mut sql = format!(
            "SELECT set_config('lock_timeout', '{ms}', true), \
             set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true); "
        );
        if !keys.is_empty() {
            let list: Vec<String> = keys.iter().map(i64::to_string).collect();
            sql.push_str(&format!(
                "SELECT pg_advisory_xact_lock(k) FROM unnest('{{{}}}'::bigint[]) AS k; ",
                list.join(",")
            ));
        }
        sql.push_str("BEGIN");
        use sqlx::Connection;
        let c = conn.insert(pool.acquire().await?);
        Ok(WriteTx::Postgres(c.begin_with(sql).await?))
    }

    /// The earliest `last_write_at` of a session that has not expired at `now`.
    pub(crate) fn live_since(&self, now: i64) -> i64 {
        now.saturating_sub(self.ttl_ms)
    }

    /// Closes the pools (graceful shutdown). SQLite: the read connections first, then the write
    /// connection checkpoints the WAL into the database file and truncates it, and closes last (the last
    /// connection to close removes the WAL): the `.sqlite` file alone then holds the whole ledger
    /// (docs/ledger.md "Files").
    ///
    /// Answers `Err` with the reason when the checkpoint failed (a full disk, a read-only file): the
    /// committed writes are then still in the `-wal` file, which must be kept beside the database.
    pub(crate) async fn close(&self) -> Result<(), String> {
        match &self.db {
            Db::Sqlite { write, read } => {
                read.close().await;
                self.stop_writer().await;
                // Another process on the file (a running server, while `outcomes staff` closes) is
                // waited for briefly only: its last connection checkpoints the WAL when it closes.
                let _ = sqlx::query("PRAGMA busy_timeout = 200")
                    .execute(write)
                    .await;
                match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(TRUNCATE)")
                    .fetch_one(write)
                    .await
                {
                    Ok((0, _, _)) => {}
                    Ok((_, log, done)) => tracing::info!(
                        frames = log,
                        checkpointed = done,
                        "the WAL was not checkpointed whole at close: another process uses the ledger"
                    ),
                    Err(e) => {
                        write.close().await;
                        return Err(e.to_string());
                    }
                }
                write.close().await;
                Ok(())
            }
            Db::Postgres { pool, .. } => {
                self.stop_listener();
                pool.close().await;
                Ok(())
            }
        }
    }

    /// SQLite: asks the group-commit writer thread to close its connection, and waits until it has
    /// (it finishes the group it runs first, which is bounded by the write wait). Later writes are
    /// answered [`LedgerError::Unavailable`]. Nothing when the writer is gone or was asked already.
    async fn stop_writer(&self) {
        let Some(stop) = self.writer_stop.lock().ok().and_then(|mut s| s.take()) else {
            return;
        };
        let (ack, acked) = tokio::sync::oneshot::channel();
        if stop.send(ack).is_ok() {
            let _ = acked.await;
        }
    }

    fn stop_listener(&self) {
        if let Some(task) = self.listener.lock().ok().and_then(|mut l| l.take()) {
            task.abort();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop_listener();
    }
}

#[cfg(test)]
mod tests {
    use super::open::{first_schema, notify_channel};
    use super::transaction::session_lock_key;
    use super::*;

    #[test]
    fn a_database_argument_names_sqlite_or_postgres_and_nothing_else() {
        for sqlite in [
            "data/ledger.sqlite",
            "/var/lib/outcomes/ledger.sqlite",
            "sqlite:ledger.db",
            "sqlite::memory:",
            "ledger.db?mode=rwc",
            "C:\\data\\ledger.sqlite",
            "weird:name.db",
        ] {
            assert_eq!(
                Location::parse(sqlite).unwrap(),
                Location::Sqlite(sqlite.to_owned()),
                "{sqlite}"
            );
        }
        for pg in [
            "postgres://u:p@db.example:5432/outcomes",
            "postgresql://localhost/outcomes?sslmode=require",
        ] {
            assert_eq!(
                Location::parse(pg).unwrap(),
                Location::Postgres(pg.to_owned())
            );
        }
        assert_eq!(
            Location::parse("POSTGRES://u@h/db").unwrap(),
            Location::Postgres("POSTGRES://u@h/db".into())
        );
        for other in [
            "mysql://u@h/db",
            "postgress://u@h/db",
            "http://example.org/ledger",
            // Unparseable, with a password: refused too, never a file.
            "mysql://root:S3cr3t@127.0.0.1:99999/x",
        ] {
            match Location::parse(other) {
                Err(LedgerError::Invalid { field, message }) => {
                    assert_eq!(field, "database");
                    assert!(
                        message.contains("unsupported database URL scheme"),
                        "{message}"
                    );
                }
                r => panic!("{other}: {r:?}"),
            }
        }
    }

    /// A Postgres URL that does not parse (an unencoded `#`, `/` or `?` in the password, a bad port, a
    /// space in the host) is refused, naming it without the password; it used to become a SQLite file
    /// named after the password.
    #[test]
    fn an_unreadable_postgres_url_is_refused_without_its_password() {
        for (url, shown) in [
            (
                "postgres://pwuser:Pa#ss9@127.0.0.1:54377/postgres",
                "postgres://***@127.0.0.1:54377/postgres",
            ),
            (
                "postgres://pwuser:Pa/ss9@127.0.0.1:54377/postgres",
                "postgres://***@127.0.0.1:54377/postgres",
            ),
            (
                "postgresql://u:S3cr3t@db host:5432/x",
                "postgresql://***@db host:5432/x",
            ),
            (
                "postgres://u:S3cr3t@h:99999/x?password=S3cr3t",
                "postgres://***@h:99999/x",
            ),
        ] {
            match Location::parse(url) {
                Err(LedgerError::Invalid { field, message }) => {
                    assert_eq!(field, "database");
                    assert!(
                        message.starts_with(&format!("{shown} is not a valid URL (")),
                        "{message}"
                    );
                    assert!(
                        !message.contains("S3cr3t") && !message.contains("ss9"),
                        "{message}"
                    );
                }
                r => panic!("{url}: {r:?}"),
            }
        }
    }

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db.example:5432/outcomes"),
            "postgres://app:***@db.example:5432/outcomes"
        );
        assert_eq!(
            redact_url("postgres://db.example/outcomes?user=app&password=s3cret"),
            "postgres://db.example/outcomes?user=app&password=***"
        );
        assert_eq!(
            redact_url("postgres://app@db.example/outcomes"),
            "postgres://app@db.example/outcomes"
        );
        assert!(!Location::parse("postgres://a:pw@h/d")
            .unwrap()
            .redacted()
            .contains("pw"));
    }

    #[test]
    fn the_schema_comes_from_the_search_path_and_names_the_channel() {
        assert_eq!(first_schema("\"$user\", public"), Some("public".into()));
        assert_eq!(first_schema("t_1"), Some("t_1".into()));
        assert_eq!(
            first_schema("\"My \"\"x\"\"\", public"),
            Some("My \"x\"".into())
        );
        assert_eq!(first_schema(""), None);
        assert_eq!(notify_channel("public"), "outcomes_7075626c6963");
        assert_eq!(notify_channel(&"x".repeat(100)).len(), 63);
    }

    #[test]
    fn session_locks_are_stable_and_distinct() {
        assert_eq!(session_lock_key("s-1"), session_lock_key("s-1"));
        assert_ne!(session_lock_key("s-1"), session_lock_key("s-2"));
    }
}
