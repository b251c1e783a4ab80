//! The backend dispatch (docs/ledger.md "Backends"): which database holds the ledger ([`Db`], its pools),
//! the spelling of SQL where SQLite and Postgres differ ([`Dialect`]), and the macros that run one body
//! once per backend ([`on_pool!`], [`on_read!`], [`on_write!`], [`on_tx!`]).

use sqlx::postgres::PgPool;
use sqlx::SqlitePool;

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
            // The group commit runs its statements on the direct path itself (the `group` module); no sqlx
            // statement runs there.
            $crate::store::WriteTx::Direct(_) => return Err($crate::store::not_direct()),
        }
    };
}

pub(crate) use {on_pool, on_read, on_tx, on_write};
