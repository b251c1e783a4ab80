//! The store: opening the sqlx SQLite database (its pragmas, migrations, file modes), the clock and the
//! retention settings, shared by the write side, the read side and the access records (docs/ledger.md
//! "Layers"). The [`crate::Ledger`] front opens it and hands out the sides.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use crate::adapter::{Adapter, NoAdapter};
use crate::error::LedgerError;

/// Milliseconds since the Unix epoch, from a clock the tests can drive.
pub trait Clock: Send + Sync {
    /// Now, in milliseconds since the Unix epoch (UTC).
    fn now_ms(&self) -> i64;

    /// True for the real clock: on Postgres the purge then reads the database's clock (`now()`)
    /// instead (docs/ledger.md "Retention"). A clock a test drives says false.
    fn is_system(&self) -> bool {
        false
    }
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

    fn is_system(&self) -> bool {
        true
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

/// Which database engine holds the ledger, and so which spelling of SQL a statement takes where the two
/// differ (docs/ledger.md "Backends"). Everything else (the state machine, the projection, the group
/// commit's decisions) is the same code for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The statement that opens a read transaction: one snapshot for all its statements (SQLite's
    /// deferred transaction; Postgres's REPEATABLE READ, which READ COMMITTED would not give).
    pub(crate) fn begin_read(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BEGIN",
            Dialect::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        }
    }

    /// `column` is one of the strings of the JSON array bound as text parameter `$n`. Postgres: `= ANY`
    /// of an array built once, which the planner reads through the column's index (an `IN` subquery of
    /// a JSON function is estimated at 100 rows and planned as a hash join over the whole table).
    pub(crate) fn text_in(self, column: &str, n: u8) -> String {
        match self {
            Dialect::Sqlite => format!("{column} IN (SELECT value FROM json_each(${n}))"),
            Dialect::Postgres => {
                format!("{column} = ANY(ARRAY(SELECT json_array_elements_text(${n}::json)))")
            }
        }
    }

    /// `column` is one of the integers of the JSON array bound as text parameter `$n` (as
    /// [`Dialect::text_in`]).
    pub(crate) fn int_in(self, column: &str, n: u8) -> String {
        match self {
            Dialect::Sqlite => format!("{column} IN (SELECT value FROM json_each(${n}))"),
            Dialect::Postgres => format!(
                "{column} = ANY(ARRAY(SELECT json_array_elements_text(${n}::json)::bigint))"
            ),
        }
    }

    /// A subquery of the pairs of a JSON array of two-string arrays bound as text parameter `$n` (used
    /// in write transactions, where Postgres plans joins as nested loops over the indexes:
    /// [`Inner::begin_write`]).
    pub(crate) fn pair_list(self, n: u8) -> String {
        match self {
            Dialect::Sqlite => format!(
                "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(${n})"
            ),
            Dialect::Postgres => {
                format!("SELECT value ->> 0, value ->> 1 FROM jsonb_array_elements(${n}::jsonb)")
            }
        }
    }
}

/// The pools of an open ledger, per backend.
pub(crate) enum Db {
    /// SQLite: one write connection (writers are serialised in this process and by SQLite's lock),
    /// and read-only connections.
    Sqlite { write: SqlitePool, read: SqlitePool },
    /// Postgres: one pool for reads and writes; writers of several instances are serialised per
    /// session by transaction-scoped advisory locks and per turn by the turn's row lock
    /// (docs/ledger.md "Backends"). `channel` is the `LISTEN/NOTIFY` channel of this ledger's schema.
    Postgres { pool: PgPool, channel: String },
}

/// Runs `$body` once per backend with `$pool` bound to a pool (SQLite: its `$sqlite` pool, `read` or
/// `write`; Postgres: its one pool) and `$d` to the [`Dialect`]: the body is written once and compiled
/// for each driver.
macro_rules! on_pool {
    ($inner:expr, $sqlite:ident, |$pool:ident, $d:ident| $body:expr) => {
        match &$inner.db {
            $crate::store::Db::Sqlite { $sqlite: $pool, .. } => {
                #[allow(unused_variables)]
                let $d = $crate::store::Dialect::Sqlite;
                $body
            }
            $crate::store::Db::Postgres { pool: $pool, .. } => {
                #[allow(unused_variables)]
                let $d = $crate::store::Dialect::Postgres;
                $body
            }
        }
    };
}

/// [`on_pool!`] with the pool reads use.
macro_rules! on_read {
    ($inner:expr, |$pool:ident, $d:ident| $body:expr) => {
        $crate::store::on_pool!($inner, read, |$pool, $d| $body)
    };
}

/// [`on_pool!`] with the pool writes outside a transaction use.
macro_rules! on_write {
    ($inner:expr, |$pool:ident, $d:ident| $body:expr) => {
        $crate::store::on_pool!($inner, write, |$pool, $d| $body)
    };
}

/// Runs `$body` once per backend with `$c` bound to the connection of the write transaction `$tx`
/// ([`WriteTx`]).
macro_rules! on_tx {
    ($tx:expr, |$c:ident, $d:ident| $body:expr) => {
        match $tx {
            $crate::store::WriteTx::Sqlite(t) => {
                #[allow(unused_variables)]
                let $d = $crate::store::Dialect::Sqlite;
                let $c: &mut sqlx::SqliteConnection = &mut **t;
                $body
            }
            $crate::store::WriteTx::Postgres(t) => {
                #[allow(unused_variables)]
                let $d = $crate::store::Dialect::Postgres;
                let $c: &mut sqlx::PgConnection = &mut **t;
                $body
            }
            // The group commit runs its statements on the direct path itself (crate::group); no sqlx
            // statement runs there.
            $crate::store::WriteTx::Direct(_) => return Err($crate::store::not_direct()),
        }
    };
}

pub(crate) use {on_pool, on_read, on_tx, on_write};

/// A write transaction on either backend: sqlx's (SQLite or Postgres), or on SQLite the group commit's
/// transaction on the write connection's handle, run on the writer's thread ([`crate::direct`]).
pub(crate) enum WriteTx<'c> {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    /// A pool's connection ([`Inner::begin_write`], `'static`), or the group commit's connection it
    /// borrows ([`Inner::begin_group`]).
    Postgres(sqlx::Transaction<'c, sqlx::Postgres>),
    Direct(crate::direct::Direct<'c>),
}

/// What a sqlx statement ([`on_tx!`]) answers on a [`WriteTx::Direct`]: a fault of this code, a store
/// failure of that write alone (HTTP 500), never a panic.
pub(crate) fn not_direct() -> LedgerError {
    LedgerError::Store(sqlx::Error::Protocol(
        "a sqlx statement was run on the group commit's direct transaction".into(),
    ))
}

impl WriteTx<'_> {
    pub(crate) async fn commit(self) -> Result<(), LedgerError> {
        match self {
            WriteTx::Sqlite(t) => t.commit().await?,
            WriteTx::Postgres(t) => t.commit().await?,
            WriteTx::Direct(t) => t.commit()?,
        }
        Ok(())
    }

    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            WriteTx::Sqlite(_) | WriteTx::Direct(_) => Dialect::Sqlite,
            WriteTx::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Postgres: sends `payloads` on `channel`, in order, delivered when this transaction commits (in
    /// commit order; crate::notify). SQLite, no channel or no payload: nothing.
    pub(crate) async fn notify(
        &mut self,
        channel: Option<&str>,
        payloads: Vec<String>,
    ) -> Result<(), LedgerError> {
        let (WriteTx::Postgres(t), Some(channel)) = (self, channel) else {
            return Ok(());
        };
        if payloads.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "SELECT pg_notify($1, n) FROM unnest($2::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i",
        )
        .bind(channel)
        .bind(payloads)
        .execute(&mut **t)
        .await?;
        Ok(())
    }

    /// Postgres: takes the transaction-scoped advisory lock of each session in `session_keys`, in one
    /// order for every writer (so two writers never wait for each other in a cycle), waiting at most the
    /// transaction's `lock_timeout` ([`LedgerError::Busy`] past it). Every write that touches a session
    /// (group commits, deletes, purges, viewer links) takes its session's lock first, so writers of
    /// several instances are serialised per session, creation included. SQLite: nothing (its one write
    /// lock is held already).
    pub(crate) async fn lock_sessions<'a>(
        &mut self,
        session_keys: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), LedgerError> {
        let WriteTx::Postgres(t) = self else {
            return Ok(());
        };
        let keys = session_lock_keys(session_keys);
        if keys.is_empty() {
            return Ok(());
        }
        sqlx::query("SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k")
            .bind(keys)
            .execute(&mut **t)
            .await?;
        Ok(())
    }
}

/// The advisory lock keys of `session_keys` ([`session_lock_key`]), in the one order every writer takes
/// them (ascending), without duplicates.
fn session_lock_keys<'a>(session_keys: impl IntoIterator<Item = &'a str>) -> Vec<i64> {
    let mut keys: Vec<i64> = session_keys.into_iter().map(session_lock_key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The advisory lock key of a session: the first 8 bytes of SHA-256 of `ledger-session:` and its key.
fn session_lock_key(session_key: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"ledger-session:");
    h.update(session_key.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    i64::from_be_bytes(b)
}

pub(crate) struct Inner {
    pub(crate) db: Db,
    /// Postgres: what this instance's listener emitted (crate::notify); `None` on SQLite, where the
    /// writer tells the adapter itself.
    pub(crate) emitter: Option<Arc<crate::notify::Emitter>>,
    /// Postgres: the listener task, ended with the ledger.
    pub(crate) listener: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
    /// Held by whoever writes in this process: the group-commit writer for each group, and the other
    /// writers (deletes, purges, access records) for their own transactions.
    pub(crate) write_lock: tokio::sync::Mutex<()>,
    pub(crate) adapter: Arc<dyn Adapter>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ttl_ms: i64,
    pub(crate) write_wait: Duration,
    /// Whether writes currently fail for lack of storage (crate::health).
    pub(crate) storage: crate::health::StorageHealth,
    /// SQLite: asks the group-commit writer thread to close its connection ([`Inner::close`]); set when
    /// the writer starts.
    pub(crate) writer_stop: std::sync::Mutex<Option<crate::engine::StopWriter>>,
}

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
        let emitter =
            matches!(db, Db::Postgres { .. }).then(|| Arc::new(crate::notify::Emitter::new()));
        Ok(Inner {
            db,
            emitter,
            listener: std::sync::Mutex::new(None),
            write_lock: tokio::sync::Mutex::new(()),
            adapter: options.adapter,
            clock: options.clock,
            ttl_ms: i64::try_from(options.session_ttl.as_millis()).unwrap_or(i64::MAX),
            write_wait: options.write_wait,
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

    /// Postgres: starts this instance's listener (crate::notify), listening before this returns.
    pub(crate) async fn start_listener(self: &Arc<Self>) -> Result<(), LedgerError> {
        let (Db::Postgres { pool, channel }, Some(emitter)) = (&self.db, &self.emitter) else {
            return Ok(());
        };
        let listener = crate::notify::connect(pool, channel).await?;
        let task = tokio::spawn(crate::notify::listen(
            listener,
            Arc::downgrade(self),
            pool.clone(),
            channel.clone(),
            emitter.clone(),
        ));
        if let Ok(mut l) = self.listener.lock() {
            *l = Some(task.abort_handle());
        }
        Ok(())
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

async fn open_sqlite(
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
    if let Some(file) = &file {
        // Another application's file, or not a database: refused before anything touches it.
        if check_file(file).await?.restrict() {
            restrict_files(file).map_err(|e| LedgerError::Store(sqlx::Error::Io(e)))?;
        }
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

/// The SQLite ledger's migrations (`ledger/migrations`), embedded once: run when a ledger opens, and
/// the record a file's `_sqlx_migrations` must match to count as a ledger ([`check_file`]).
static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// What an existing SQLite file is to the ledger ([`check_file`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Missing: the ledger creates it (mode 0600).
    New,
    /// An empty file or a SQLite database without tables, made by someone else: the ledger creates its
    /// tables in it and leaves its mode alone.
    Empty,
    /// A ledger (the ledger's tables and migration record, nothing else).
    Ledger,
}

impl Found {
    /// Whether the ledger sets the file's mode (0600): only on files it creates or already holds.
    fn restrict(self) -> bool {
        matches!(self, Found::New | Found::Ledger)
    }
}

/// Checks that the SQLite ledger `database` names (a path or a `sqlite:` URL; Postgres and in-memory
/// databases pass) is a file the ledger may open, without changing it: missing or empty, a SQLite
/// database without tables, or a ledger. Refused with [`LedgerError::Invalid`] on `database`, naming the
/// file: a file holding any table that is not the ledger's (another application's), a file with
/// tables of the ledger's names but no migration record of the ledger, and a file that is not a SQLite
/// database (docs/ledger.md "Files"). `outcomes serve` calls it before it creates anything.
pub async fn check_database(database: &str) -> Result<(), LedgerError> {
    match (Location::parse(database)?, database_file(database)) {
        (Location::Sqlite(_), Some(file)) => check_file(&file).await.map(|_| ()),
        _ => Ok(()),
    }
}

/// [`check_database`] for a file. The file is read through a read-only connection (immutable when it
/// has no `-wal`, so not even a `-shm` file is made); nothing is written.
async fn check_file(file: &Path) -> Result<Found, LedgerError> {
    use sqlx::Connection;
    let shown = file.display();
    let refuse = |message: String| LedgerError::invalid("database", message);
    let meta = match std::fs::metadata(file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::New),
        Err(e) => return Err(refuse(format!("cannot read {shown}: {e}"))),
    };
    if meta.is_dir() {
        return Err(refuse(format!(
            "{shown} is a directory; the ledger's database is a file"
        )));
    }
    if !meta.is_file() {
        // A device node, FIFO or socket: never opened, never chmod'ed (`--database /dev/null` as root
        // would otherwise make it 0600 for the whole machine).
        return Err(refuse(format!(
            "{shown} is not a regular file; the ledger's database is a regular file"
        )));
    }
    if meta.len() == 0 {
        // Made by someone else (the ledger creates its file 0600): used, its mode left alone.
        return Ok(Found::Empty);
    }
    let mut wal = file.as_os_str().to_owned();
    wal.push("-wal");
    let options = SqliteConnectOptions::new()
        .filename(file)
        .read_only(true)
        .immutable(!Path::new(&wal).exists());
    type Recorded = Vec<(i64, Vec<u8>)>;
    let read: Result<(Vec<String>, Recorded), sqlx::Error> = async {
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
        let read = async {
            let tables: Vec<String> = sqlx::query_scalar(
                "SELECT name FROM sqlite_schema WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name",
            )
            .fetch_all(&mut conn)
            .await?;
            // Another sqlx application has a migration table too: what it records must be the ledger's
            // own migrations (version and checksum).
            let recorded = if tables.iter().any(|t| t == "_sqlx_migrations") {
                sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
                    .fetch_all(&mut conn)
                    .await?
            } else {
                Vec::new()
            };
            Ok::<_, sqlx::Error>((tables, recorded))
        }
        .await;
        let _ = conn.close().await;
        read
    }
    .await;
    let (tables, recorded) = match read {
        Ok(t) => t,
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("26") => {
            return Err(refuse(format!(
                "{shown} is not a SQLite database; the ledger opens only its own SQLite file or \
                 creates a new one: give it another --database or --data-dir"
            )))
        }
        Err(e) => {
            return Err(refuse(format!(
                "cannot read {shown} as a SQLite database: {e}"
            )))
        }
    };
    if tables.is_empty() {
        return Ok(Found::Empty);
    }
    let ours = ledger_tables().await?;
    let foreign: Vec<&str> = tables
        .iter()
        .map(String::as_str)
        .filter(|t| !ours.iter().any(|o| o == t))
        .collect();
    let migrated = !recorded.is_empty()
        && recorded.iter().all(|(version, checksum)| {
            SQLITE_MIGRATIONS
                .iter()
                .any(|m| m.version == *version && m.checksum.as_ref() == checksum.as_slice())
        });
    if !migrated && foreign.is_empty() && tables.iter().any(|t| t == "_sqlx_migrations") {
        return Err(refuse(format!(
            "{shown} holds another application's migration record, not an outcomes ledger's; it was \
             left as it was: give the ledger its own --database or --data-dir"
        )));
    }
    if !foreign.is_empty() || !migrated {
        let named = if foreign.is_empty() {
            &tables.iter().map(String::as_str).collect::<Vec<_>>()
        } else {
            &foreign
        };
        let mut list = named.iter().take(5).copied().collect::<Vec<_>>().join(", ");
        if named.len() > 5 {
            list.push_str(&format!(" and {} more", named.len() - 5));
        }
        return Err(refuse(format!(
            "{shown} is another application's database, not an outcomes ledger (it holds the \
             table{} {list}); it was left as it was: give the ledger its own --database or --data-dir",
            if named.len() == 1 { "" } else { "s" },
        )));
    }
    Ok(Found::Ledger)
}

/// The tables a SQLite ledger has (its migration record `_sqlx_migrations` included): this build's
/// migrations run on an in-memory database.
async fn ledger_tables() -> Result<Vec<String>, LedgerError> {
    use sqlx::Connection;
    let mut conn =
        sqlx::SqliteConnection::connect_with(&SqliteConnectOptions::from_str("sqlite::memory:")?)
            .await?;
    SQLITE_MIGRATIONS.run(&mut conn).await?;
    let tables = sqlx::query_scalar(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'",
    )
        .fetch_all(&mut conn)
        .await?;
    let _ = conn.close().await;
    Ok(tables)
}

/// Writes a consistent copy of the SQLite ledger `database` names (a path or a `sqlite:` URL) to the new
/// file `to`, created mode 0600, with SQLite's `VACUUM INTO`: one read transaction, so a server may keep
/// writing meanwhile; the copy is a whole database in one file (no `-wal`). Returns the copy's size in
/// bytes (docs/ledger.md "Backups").
///
/// Errors, each [`LedgerError::Invalid`] on `database` or `to`: a Postgres URL (back it up with
/// `pg_dump`), an in-memory database, no ledger at `database` (missing, or refused by
/// [`check_database`]), `to` exists already (a backup never overwrites), or it cannot be created. A copy
/// that fails half way is removed.
pub async fn backup(database: &str, to: &Path) -> Result<u64, LedgerError> {
    use sqlx::Connection;
    if let Location::Postgres(url) = Location::parse(database)? {
        return Err(LedgerError::invalid(
            "database",
            format!(
                "{} is a Postgres ledger: back it up with Postgres's own tools, e.g. `pg_dump \
                 --schema=<its schema> <url>`; `outcomes backup` copies SQLite ledgers",
                redact_url(&url)
            ),
        ));
    }
    let Some(file) = database_file(database) else {
        return Err(LedgerError::invalid(
            "database",
            "an in-memory database has nothing to back up",
        ));
    };
    if check_file(&file).await? != Found::Ledger {
        return Err(LedgerError::invalid(
            "database",
            format!("there is no ledger at {}", file.display()),
        ));
    }
    let target = to.display();
    let created = {
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        o.open(to)
    };
    match created {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(LedgerError::invalid(
                "to",
                format!("{target} exists already; a backup is written to a new file only"),
            ))
        }
        Err(e) => {
            return Err(LedgerError::invalid(
                "to",
                format!("cannot create {target}: {e}"),
            ))
        }
    }
    let Some(to_text) = to.to_str() else {
        let _ = std::fs::remove_file(to);
        return Err(LedgerError::invalid(
            "to",
            format!("{target} is not a UTF-8 path"),
        ));
    };
    let options = if database.starts_with("sqlite:") {
        SqliteConnectOptions::from_str(database)?
    } else {
        SqliteConnectOptions::new().filename(database)
    }
    .create_if_missing(false)
    .busy_timeout(Duration::from_secs(10));
    let copied: Result<(), sqlx::Error> = async {
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
        let done = sqlx::query("VACUUM INTO ?")
            .bind(to_text)
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
        done.map(|_| ())
    }
    .await;
    if let Err(e) = copied {
        let _ = std::fs::remove_file(to);
        return Err(match LedgerError::from(e) {
            LedgerError::Store(e) => LedgerError::invalid(
                "to",
                format!("copying {} to {target} failed: {e}", file.display()),
            ),
            other => other,
        });
    }
    std::fs::metadata(to)
        .map(|m| m.len())
        .map_err(|e| LedgerError::invalid("to", format!("cannot read {target}: {e}")))
}

/// How long opening a Postgres ledger waits for its first connection.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

async fn open_postgres(url: &str, options: &LedgerOptions) -> Result<Db, LedgerError> {
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
fn first_schema(search_path: &str) -> Option<String> {
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
fn notify_channel(schema: &str) -> String {
    let mut c = String::from("outcomes_");
    for b in schema.bytes() {
        c.push_str(&format!("{b:02x}"));
    }
    c.truncate(63);
    c
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

#[cfg(test)]
mod tests {
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
