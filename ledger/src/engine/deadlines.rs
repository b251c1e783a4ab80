//! Deadlines (docs/api.md "Deadlines"): the ledger settles an entry still in flight past its deadline
//! `outcome_unknown` with `execution_timeout`, through the group commit like any settle (a new revision,
//! a live event, the `outcome.unknown` webhook, a history row with actor `ledger`). The server's sweep
//! calls [`Engine::settle_overdue`] about once a second with its own clock ([`DeadlineClock`]); at its
//! start [`Engine::postpone_passed_deadlines`] gives the hosts of a ledger that was down a minute to
//! report.

use std::time::{Duration, Instant};

use super::Engine;
use crate::command::{Action, Actor, Command};
use crate::error::LedgerError;
use crate::ids::{AttemptId, MutationId, SessionKey};
use crate::store::{on_read, on_tx, on_write};

/// How long the hosts of a ledger that was not running get, after the start, to extend or settle a write
/// whose deadline passed meanwhile: 60 s.
pub const RESTART_GRACE: Duration = Duration::from_secs(60);

/// On Postgres, an instance that swept this recently (ms) is taken to be running: a starting instance
/// then moves no deadline ([`Engine::postpone_passed_deadlines`]).
pub const SWEEPER_ALIVE_MS: i64 = 5_000;

/// Entries at most one [`Engine::settle_overdue`] call settles (one group commit): fewer than a live
/// stream's ring of 256 events, so a subscriber that keeps up gets each settlement as its own event even
/// when a whole session times out at once (the sweep goes on at once after a full batch).
pub const OVERDUE_BATCH: i64 = 200;

/// The sweep's clock (docs/api.md "Deadlines"): the wall clock, but never ahead of the monotonic time
/// since the sweep started by more than it was then, so a wall clock that jumps ahead while the server
/// runs fires no deadline early; one set back is followed at once. While it is behind the wall clock it
/// catches up at twice the monotonic rate (as the purge clock does, docs/ledger.md "Retention").
#[derive(Debug, Clone, Copy)]
pub struct DeadlineClock {
    at_ms: i64,
    mono: Instant,
}

impl DeadlineClock {
    /// A clock that reads `wall_ms` now.
    pub fn start(wall_ms: i64) -> Self {
        DeadlineClock {
            at_ms: wall_ms,
            mono: Instant::now(),
        }
    }

    /// "Now" for the sweep, given the wall clock's reading `wall_ms`: at most the previous reading plus
    /// twice the monotonic time since it, and never after `wall_ms`.
    pub fn read(&mut self, wall_ms: i64) -> i64 {
        self.read_at(wall_ms, Instant::now())
    }

    fn read_at(&mut self, wall_ms: i64, mono: Instant) -> i64 {
        let elapsed = i64::try_from(mono.saturating_duration_since(self.mono).as_millis())
            .unwrap_or(i64::MAX);
        self.at_ms = wall_ms.min(self.at_ms.saturating_add(elapsed.saturating_mul(2)));
        self.mono = mono;
        self.at_ms
    }
}

impl Engine {
    /// The wall clock deadlines are read by, in ms since the Unix epoch: on Postgres with the system
    /// clock the database's (`now()`), so instances whose own clocks differ agree; else the ledger's clock.
    pub async fn deadline_wall_clock(&self) -> Result<i64, LedgerError> {
        if self.inner.clock.is_system()
            && matches!(self.inner.db, crate::store::Db::Postgres { .. })
        {
            return Ok(on_read!(self.inner, |pool, d| {
                sqlx::query_scalar::<_, i64>(
                    "SELECT CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)",
                )
                .fetch_one(pool)
                .await?
            }));
        }
        Ok(self.inner.clock.now_ms())
    }

    /// At the server's start: every entry in flight whose deadline is at or before `now` (ms; it passed
    /// while no server ran, or a clock jumped across the restart) gets the deadline `now` + `grace`, so a
    /// host that is alive has that long to extend or settle it. No revision, no event. Answers how many.
    /// On Postgres nothing moves while another instance sweeps (it swept within [`SWEEPER_ALIVE_MS`]).
    pub async fn postpone_passed_deadlines(
        &self,
        now: i64,
        grace: Duration,
    ) -> Result<u64, LedgerError> {
        let to = now.saturating_add(i64::try_from(grace.as_millis()).unwrap_or(i64::MAX));
        // Postgres: another instance sweeping now settles what is overdue; nothing passed "while no
        // server ran" (a restart during a backlog would otherwise hold 500 writes back a minute).
        if matches!(self.inner.db, crate::store::Db::Postgres { .. }) {
            let swept: Option<i64> = on_read!(self.inner, |pool, d| {
                sqlx::query_scalar("SELECT at_ms FROM deadline_sweep WHERE id = 1")
                    .fetch_optional(pool)
                    .await?
            });
            if swept.is_some_and(|at| now.saturating_sub(at) < SWEEPER_ALIVE_MS) {
                return Ok(0);
            }
        }
        let _writer = self.inner.writer().await?;
        let mut tx = self.inner.begin_write().await?;
        let moved = on_tx!(&mut tx, |c, d| {
            sqlx::query(
                "UPDATE entries SET deadline_at = $1 \
                 WHERE status = 'execution_started' AND deadline_at <= $2",
            )
            .bind(to)
            .bind(now)
            .execute(&mut *c)
            .await?
            .rows_affected()
        });
        tx.commit().await?;
        Ok(moved)
    }

    /// Settles, as the ledger ([`Actor::Ledger`], [`Action::Expire`]), at most [`OVERDUE_BATCH`] entries
    /// still in flight whose deadline is at or before `now` (ms, the sweep's [`DeadlineClock`]), oldest
    /// deadline first, in one group commit. An entry its host settled or extended meanwhile is left as
    /// it is (the ledger refuses the settlement: on Postgres that is how one instance of several wins).
    /// Answers how many this call settled.
    pub async fn settle_overdue(&self, now: i64) -> Result<u64, LedgerError> {
        // Postgres: says this instance sweeps (what a starting instance reads).
        if matches!(self.inner.db, crate::store::Db::Postgres { .. }) {
            on_write!(self.inner, |pool, d| {
                sqlx::query("UPDATE deadline_sweep SET at_ms = GREATEST(at_ms, $1) WHERE id = 1")
                    .bind(now)
                    .execute(pool)
                    .await?;
            });
        }
        // Only live sessions: an expired one refuses every write (the ledger's own included) until the
        // purge deletes it, and its rows must not take the batch's places.
        let live_since = self.inner.live_since(self.inner.clock.now_ms());
        let due: Vec<(String, String, Option<String>)> = on_read!(self.inner, |pool, d| {
            sqlx::query_as(
                "SELECT e.session_key, e.mutation_id, e.attempt_id FROM entries e \
                 JOIN sessions s ON s.session_key = e.session_key \
                 WHERE e.status = 'execution_started' AND e.deadline_at <= $1 \
                 AND s.last_write_at >= $3 ORDER BY e.deadline_at LIMIT $2",
            )
            .bind(now)
            .bind(OVERDUE_BATCH)
            .bind(live_since)
            .fetch_all(pool)
            .await?
        });
        let ops: Vec<Command> = due
            .into_iter()
            .filter_map(|(s, m, a)| {
                Some(Command::new(
                    SessionKey::parse(s).ok()?,
                    MutationId::parse(m).ok()?,
                    Action::Expire {
                        attempt_id: AttemptId::parse(a?).ok()?,
                    },
                ))
            })
            .collect();
        if ops.is_empty() {
            return Ok(0);
        }
        let results = self.apply_batch_as(Actor::Ledger, ops).await?;
        Ok(results.iter().filter(|r| r.is_ok()).count() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweeps_clock_follows_the_wall_clock_but_not_a_jump_ahead() {
        let t0 = Instant::now();
        let mut clock = DeadlineClock {
            at_ms: 1_000_000,
            mono: t0,
        };
        // 1 s of monotonic time, the wall clock 1 s on: followed.
        assert_eq!(
            clock.read_at(1_001_000, t0 + Duration::from_secs(1)),
            1_001_000
        );
        // The wall clock jumps an hour ahead within 1 s: the clock moves at most 2 s.
        assert_eq!(
            clock.read_at(1_001_000 + 3_600_000, t0 + Duration::from_secs(2)),
            1_003_000
        );
        // It catches up at twice the monotonic rate, never past the wall clock.
        assert_eq!(
            clock.read_at(1_001_000 + 3_600_000, t0 + Duration::from_secs(12)),
            1_023_000
        );
        // Set back: followed at once.
        assert_eq!(
            clock.read_at(900_000, t0 + Duration::from_secs(13)),
            900_000
        );
    }
}
