//! Write transactions on either backend ([`WriteTx`]): committing them, Postgres notifications sent at
//! commit, and the per-session advisory locks every Postgres writer takes (docs/ledger.md "Backends").

use super::Dialect;
use crate::error::LedgerError;

/// A write transaction on either backend: sqlx's (SQLite or Postgres), or on SQLite the group commit's
/// transaction on the write connection's handle, run on the writer's thread ([`crate::direct`]).
pub(crate) enum WriteTx<'c> {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    /// A pool's connection ([`Inner::begin_write`], `'static`), or the group commit's connection it
    /// borrows ([`Inner::begin_group`]).
    Postgres(sqlx::Transaction<'c, sqlx::Postgres>),
    Direct(crate::direct::Direct<'c>),
}

/// What a sqlx statement ([`on_tx!`]) answers on a [`WriteTx::Direct`]: a fault of this code
/// ([`LedgerError::Internal`]), failing that write alone (HTTP 500), never a panic.
pub(crate) fn not_direct() -> LedgerError {
    LedgerError::internal("a sqlx statement was run on the group commit's direct transaction")
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
    /// commit order; the crate's `notify` module). SQLite, no channel or no payload: nothing.
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
pub(super) fn session_lock_keys<'a>(session_keys: impl IntoIterator<Item = &'a str>) -> Vec<i64> {
    let mut keys: Vec<i64> = session_keys.into_iter().map(session_lock_key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The advisory lock key of a session: the first 8 bytes of SHA-256 of `ledger-session:` and its key.
pub(super) fn session_lock_key(session_key: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"ledger-session:");
    h.update(session_key.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    i64::from_be_bytes(b)
}
