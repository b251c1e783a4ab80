//! Ending sessions (docs/ledger.md "Retention"): a host's delete, and the retention purge with its own
//! paced clock; each end is told to the adapter, and on Postgres to the other instances.

use std::panic::AssertUnwindSafe;

use super::Engine;
use crate::adapter::SessionEnd;
use crate::error::LedgerError;
use crate::ids::SessionKey;
use crate::store::{on_tx, WriteTx};

/// A purge that would delete at least this many sessions, and more than a tenth of all sessions, is a
/// mass purge: a sweep holds it for an operator (docs/ledger.md "Retention").
pub const MASS_PURGE_SESSIONS: usize = 10;

/// The purge's own clock moves at most this many times as fast as the monotonic clock while it is behind
/// the wall clock (docs/ledger.md "Retention"): a restart after the wall clock jumped ahead by D deletes
/// nothing the jump made due until the server has run D / (this - 1).
pub const PURGE_CLOCK_CATCH_UP: i64 = 2;

/// How [`Engine::purge_expired`] decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PurgeRules {
    /// How long after its expiry a session is deleted (`outcomes serve --purge-after-secs`, default
    /// 7 days).
    pub grace: std::time::Duration,
    pub mode: PurgeMode,
    /// `None`: "now" is the wall clock (an operator's `outcomes purge`, whose `--confirm` also sets the
    /// purge clock to it). `Some(elapsed)`: the server's sweep, with the monotonic time since this
    /// process's previous sweep (zero for its first): "now" is the purge clock stored in the ledger
    /// (table `purge_clock`; at its first use the newest session write), moved on by
    /// [`PURGE_CLOCK_CATCH_UP`] × `elapsed`, never past the wall clock, and stored again.
    pub paced: Option<std::time::Duration>,
}

/// Who asks for a purge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeMode {
    /// The server's periodic sweep: a mass purge deletes nothing and is held.
    Sweep,
    /// An operator's `outcomes purge --confirm`: everything due is deleted, a mass purge included.
    Confirmed,
    /// Nothing is deleted; the answer says what is due.
    DryRun,
}

/// What a purge found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purge {
    /// Sessions in the ledger before the purge (hidden ones included).
    pub total: u64,
    /// Keys of the sessions due (expired at least the grace ago), in key order.
    pub due: Vec<String>,
    /// Keys of the sessions deleted, in key order (empty when held or a dry run).
    pub deleted: Vec<String>,
    /// True when a sweep found a mass purge and deleted nothing.
    pub held: bool,
    /// How far the purge's "now" was behind the wall clock, in ms (0 unless [`PurgeRules::paced`] held
    /// it back: a restart after downtime, or a wall clock that jumped ahead).
    pub behind_ms: i64,
}

impl Purge {
    /// At least [`MASS_PURGE_SESSIONS`] sessions due, and more than a tenth of all.
    pub fn is_mass(&self) -> bool {
        self.due.len() >= MASS_PURGE_SESSIONS && self.due.len() as u64 * 10 > self.total
    }
}

impl Engine {
    /// Deletes a session with its turns, entries, evidence and history, then tells the adapter
    /// (`on_session_ended`, `Deleted`). `SessionNotFound` when there is none.
    pub async fn delete_session(&self, session_key: &SessionKey) -> Result<(), LedgerError> {
        let _writer = self.inner.writer().await?;
        let mut tx = self.inner.begin_write().await?;
        tx.lock_sessions([session_key.as_str()]).await?;
        let done = on_tx!(&mut tx, |c, d| sqlx::query(
            "DELETE FROM sessions WHERE session_key = $1"
        )
        .bind(session_key.as_str())
        .execute(c)
        .await?
        .rows_affected());
        if done > 0 {
            tx.notify(
                self.inner.notify_channel(),
                vec![self.ended(session_key.as_str(), true)],
            )
            .await?;
        }
        tx.commit().await?;
        if done == 0 {
            return Err(LedgerError::SessionNotFound);
        }
        self.end_session(session_key, SessionEnd::Deleted);
        Ok(())
    }

    /// The retention purge (docs/ledger.md "Retention"): deletes every session whose time to live ran out
    /// at least `rules.grace` ago (with its history), then tells the adapter of each (`on_session_ended`,
    /// `Expired`). "Now" is the ledger's clock, or on Postgres with the real clock the database's (`now()`),
    /// so one instance's wrong clock cannot decide. A sweep ([`PurgeMode::Sweep`]) that would delete at
    /// least [`MASS_PURGE_SESSIONS`] sessions and more than a tenth of all sessions deletes nothing and
    /// answers `held` (a clock that jumped ahead expires everything at once; normal expiry is gradual);
    /// [`PurgeMode::Confirmed`] (an operator's `outcomes purge --confirm`) deletes them all the same;
    /// [`PurgeMode::DryRun`] only reports what is due.
    pub async fn purge_expired(&self, rules: PurgeRules) -> Result<Purge, LedgerError> {
        let _writer = self.inner.writer().await?;
        let mut tx = self.inner.begin_write().await?;
        let wall = match &mut tx {
            WriteTx::Postgres(t) if self.inner.clock.is_system() => {
                sqlx::query_scalar::<_, i64>(
                    "SELECT CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)",
                )
                .fetch_one(&mut **t)
                .await?
            }
            _ => self.inner.clock.now_ms(),
        };
        let now = match rules.paced {
            Some(elapsed) => paced_now(&mut tx, wall, elapsed).await?,
            None => {
                if rules.mode == PurgeMode::Confirmed {
                    store_purge_clock(&mut tx, wall).await?;
                }
                wall
            }
        };
        let grace = i64::try_from(rules.grace.as_millis()).unwrap_or(i64::MAX);
        let before = self.inner.live_since(now).saturating_sub(grace);
        let total: i64 = on_tx!(&mut tx, |c, d| sqlx::query_scalar(
            "SELECT COUNT(*) FROM sessions"
        )
        .fetch_one(c)
        .await?);
        // Postgres: lock the due sessions first (a writer of another instance may hold one), then
        // delete those still due.
        let due: Vec<String> = on_tx!(&mut tx, |c, d| sqlx::query_scalar(
            "SELECT session_key FROM sessions WHERE last_write_at < $1 ORDER BY session_key"
        )
        .bind(before)
        .fetch_all(c)
        .await?);
        let mut purge = Purge {
            total: u64::try_from(total).unwrap_or(0),
            due,
            deleted: Vec::new(),
            held: false,
            behind_ms: wall.saturating_sub(now),
        };
        let held = rules.mode == PurgeMode::Sweep && purge.is_mass();
        if purge.due.is_empty() || rules.mode == PurgeMode::DryRun || held {
            purge.held = held;
            // The purge clock moved (or was set) all the same.
            tx.commit().await?;
            return Ok(purge);
        }
        tx.lock_sessions(purge.due.iter().map(String::as_str))
            .await?;
        let keys: Vec<String> = on_tx!(&mut tx, |c, d| sqlx::query_scalar(&format!(
            "DELETE FROM sessions WHERE last_write_at < $1 AND {} \
             RETURNING session_key",
            d.text_in("session_key", 2)
        ))
        .bind(before)
        .bind(serde_json::to_string(&purge.due).unwrap_or_default())
        .fetch_all(c)
        .await?);
        let notes = keys.iter().map(|k| self.ended(k, false)).collect();
        tx.notify(self.inner.notify_channel(), notes).await?;
        tx.commit().await?;
        for key in &keys {
            if let Ok(key) = SessionKey::parse(key.clone()) {
                self.end_session(&key, SessionEnd::Expired);
            }
        }
        purge.deleted = keys;
        purge.deleted.sort();
        Ok(purge)
    }

    /// The notification that this instance ended `session_key` (Postgres: the other instances tell
    /// their adapters; the crate's `notify` listener).
    fn ended(&self, session_key: &str, deleted: bool) -> String {
        crate::store::live::Note::Ended {
            s: session_key.to_owned(),
            deleted,
            by: self.inner.instance(),
        }
        .payload()
    }

    fn end_session(&self, session_key: &SessionKey, reason: SessionEnd) {
        let adapter = &self.inner.adapter;
        if std::panic::catch_unwind(AssertUnwindSafe(|| {
            adapter.on_session_ended(session_key, reason)
        }))
        .is_err()
        {
            tracing::error!("live delivery of a session end panicked");
        }
    }
}

/// The purge's "now" for a server sweep (docs/ledger.md "Retention"): the stored purge clock (at its first
/// use the newest session write, or `wall` in an empty ledger) moved on by [`PURGE_CLOCK_CATCH_UP`] ×
/// `elapsed`, never past `wall`; stored again in the same transaction. A wall clock that jumped ahead at a
/// restart is thus followed only as fast as the server runs, and one set back is followed at once.
async fn paced_now(
    tx: &mut WriteTx<'_>,
    wall: i64,
    elapsed: std::time::Duration,
) -> Result<i64, LedgerError> {
    let stored: Option<i64> = on_tx!(&mut *tx, |c, d| sqlx::query_scalar(
        "SELECT at_ms FROM purge_clock WHERE id = 1"
    )
    .fetch_optional(c)
    .await?);
    let from = match stored {
        Some(at) => at,
        None => on_tx!(&mut *tx, |c, d| sqlx::query_scalar::<_, Option<i64>>(
            "SELECT MAX(last_write_at) FROM sessions"
        )
        .fetch_one(c)
        .await?)
        .unwrap_or(wall),
    };
    let step = i64::try_from(elapsed.as_millis())
        .unwrap_or(i64::MAX)
        .saturating_mul(PURGE_CLOCK_CATCH_UP);
    let now = wall.min(from.saturating_add(step));
    store_purge_clock(tx, now).await?;
    Ok(now)
}

/// Sets the stored purge clock to `at_ms` (ms since the Unix epoch).
async fn store_purge_clock(tx: &mut WriteTx<'_>, at_ms: i64) -> Result<(), LedgerError> {
    on_tx!(&mut *tx, |c, d| sqlx::query(
        "INSERT INTO purge_clock (id, at_ms) VALUES (1, $1) \
         ON CONFLICT (id) DO UPDATE SET at_ms = excluded.at_ms"
    )
    .bind(at_ms)
    .execute(c)
    .await
    .map(|_| ())?);
    Ok(())
}
