//! The retention purge (docs/ledger.md "Retention"): expiry hides a session; its
//! rows are deleted only by an explicit delete or by the purge, `--purge-after-secs` (default 7 days) after
//! expiry. The purge never trusts a clock that jumped:
//!
//! - While `serve` runs, [`ClockWatch`] compares the wall clock's progress with the monotonic clock's; a wall
//!   clock that moved more than [`CLOCK_JUMP_TOLERANCE`] beyond it suspends the sweep (logged) until the
//!   two agree again.
//! - A sweep that would delete at least 10 sessions and more than a tenth of all deletes nothing, logs why
//!   and waits for an operator's `outcomes purge --confirm` ([`PurgeArgs`]), which prints what it deleted.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use ledger::engine::{Purge, PurgeMode, PurgeRules};
use ledger::{Ledger, LedgerOptions};
use tokio_util::sync::CancellationToken;

use crate::AppState;

/// Default of `--purge-after-secs`: 7 days.
pub const DEFAULT_PURGE_AFTER_SECS: u64 = 7 * 24 * 3600;

/// A wall clock that moved more than this beyond the monotonic clock suspends the purge.
pub const CLOCK_JUMP_TOLERANCE: Duration = Duration::from_secs(60);

/// `serve`'s retention options.
#[derive(Debug, Clone, Args)]
pub struct PurgeOptions {
    /// Rows of an expired session are deleted this many seconds after it expired (docs/ledger.md
    /// "Retention"); until then it is hidden (404 `session_expired`).
    #[arg(long, env = "OUTCOMES_PURGE_AFTER_SECS", default_value_t = DEFAULT_PURGE_AFTER_SECS)]
    pub purge_after_secs: u64,
    /// Seconds between two purge sweeps (tests shorten it).
    #[arg(long, env = "OUTCOMES_PURGE_INTERVAL_SECS", default_value_t = 60, hide = true, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub purge_interval_secs: u64,
}

impl Default for PurgeOptions {
    fn default() -> Self {
        PurgeOptions {
            purge_after_secs: DEFAULT_PURGE_AFTER_SECS,
            purge_interval_secs: 60,
        }
    }
}

/// `outcomes purge`: deletes the sessions due for the purge now (expired `--purge-after-secs` ago or
/// longer), a mass purge the server held included. Without `--confirm` it only lists them.
#[derive(Debug, Clone, Args)]
pub struct PurgeArgs {
    /// Delete them (without it, nothing is deleted: the sessions due are listed).
    #[arg(long)]
    pub confirm: bool,
    /// The ledger: a SQLite file path or `sqlite:` URL, or a `postgres://` URL (docs/ledger.md
    /// "Backends"). Default: `<data dir>/ledger.sqlite`.
    #[arg(long, env = "OUTCOMES_DATABASE")]
    pub database: Option<String>,
    /// Directory of the default database.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// As `serve --session-ttl-secs`.
    #[arg(long, env = "OUTCOMES_SESSION_TTL_SECS", default_value_t = 30 * 24 * 3600)]
    pub session_ttl_secs: u64,
    /// As `serve --purge-after-secs`.
    #[arg(long, env = "OUTCOMES_PURGE_AFTER_SECS", default_value_t = DEFAULT_PURGE_AFTER_SECS)]
    pub purge_after_secs: u64,
}

/// Runs `outcomes purge`: prints each session deleted (or, without `--confirm`, due) on a line of its own,
/// then a summary line.
pub async fn run(args: PurgeArgs) -> Result<(), Box<dyn std::error::Error>> {
    let ledger = Ledger::open(
        &crate::database::database_or_default(args.database.as_deref(), &args.data_dir),
        LedgerOptions {
            session_ttl: Duration::from_secs(args.session_ttl_secs),
            ..LedgerOptions::default()
        },
    )
    .await?;
    let rules = PurgeRules {
        grace: Duration::from_secs(args.purge_after_secs),
        mode: if args.confirm {
            PurgeMode::Confirmed
        } else {
            PurgeMode::DryRun
        },
        // The operator's word: the wall clock is right (with --confirm, the purge clock is set to it).
        paced: None,
    };
    let result = ledger.engine().purge_expired(rules).await;
    ledger.close().await;
    let purge = result?;
    if args.confirm {
        for key in &purge.deleted {
            println!("deleted\t{key}");
        }
        println!(
            "{} session(s) deleted of {}",
            purge.deleted.len(),
            purge.total
        );
    } else {
        for key in &purge.due {
            println!("due\t{key}");
        }
        println!(
            "{} session(s) of {} due for the purge; nothing deleted (give --confirm to delete them)",
            purge.due.len(),
            purge.total
        );
    }
    Ok(())
}

/// Watches the wall clock against the monotonic clock since the server started.
#[derive(Debug, Clone, Copy)]
pub struct ClockWatch {
    mono: Instant,
    wall: SystemTime,
}

impl Default for ClockWatch {
    fn default() -> Self {
        ClockWatch {
            mono: Instant::now(),
            wall: SystemTime::now(),
        }
    }
}

impl ClockWatch {
    /// How far the wall clock moved beyond the monotonic clock since the start, in ms (negative: it fell
    /// behind), at the wall time `wall_now`.
    pub fn ahead_ms_at(&self, wall_now: SystemTime) -> i64 {
        let wall = match wall_now.duration_since(self.wall) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        };
        let mono = i64::try_from(self.mono.elapsed().as_millis()).unwrap_or(i64::MAX);
        wall.saturating_sub(mono)
    }

    /// True when the wall clock moved more than [`CLOCK_JUMP_TOLERANCE`] beyond the monotonic clock.
    pub fn jumped_at(&self, wall_now: SystemTime) -> bool {
        self.ahead_ms_at(wall_now) > CLOCK_JUMP_TOLERANCE.as_millis() as i64
    }
}

/// What the sweep said last, so a lasting state is logged once, not every sweep.
#[derive(Debug, Default, PartialEq, Eq)]
enum Said {
    #[default]
    Nothing,
    Suspended,
    Held(usize, u64),
}

/// Every `options.purge_interval_secs` (the first at once): forgets clients whose failed credentials
/// have expired, and unless the clock jumped, purges the sessions due (ending their live streams),
/// holding a mass purge (see the module doc), sweeps expired viewer links and sign-ins (not when the purge
/// was held: the clock may have jumped), and ends the live
/// streams of sessions that expired (`session_ended` `"expired"`; they stay until the purge).
pub async fn sweep_periodically(
    state: AppState,
    options: PurgeOptions,
    shutdown: CancellationToken,
) {
    let watch = ClockWatch::default();
    let rules = PurgeRules {
        grace: Duration::from_secs(options.purge_after_secs),
        mode: PurgeMode::Sweep,
        paced: Some(Duration::ZERO),
    };
    // The monotonic time since the previous sweep moves the purge clock on (`PurgeRules::paced`); none
    // before the first, so a restart resumes from the clock stored in the ledger.
    let mut previous: Option<Instant> = None;
    let mut behind_said = false;
    let mut tick = tokio::time::interval(Duration::from_secs(options.purge_interval_secs));
    let mut said = Said::Nothing;
    let mut latched = false;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.cancelled() => return,
        }
        state.failures.forget_old();
        if watch.jumped_at(SystemTime::now()) {
            if said != Said::Suspended {
                tracing::warn!(
                    ahead_secs = watch.ahead_ms_at(SystemTime::now()) / 1000,
                    "purge suspended: the wall clock moved ahead of the monotonic clock since the server \
                     started; expired sessions stay hidden and nothing is deleted until the clock is right \
                     again (or the server restarts)"
                );
                said = Said::Suspended;
            }
            continue;
        }
        if said == Said::Suspended {
            tracing::info!("purge resumed: the wall clock agrees with the monotonic clock again");
            said = Said::Nothing;
        }
        // Once held, the hold stays until nothing is due (the clock is right again, or an operator's
        // `outcomes purge --confirm` deleted them): new sessions written meanwhile must not dilute a
        // mass purge below a tenth and release it. While latched, a sweep only looks (a dry run).
        let asked = PurgeRules {
            mode: if latched {
                PurgeMode::DryRun
            } else {
                PurgeMode::Sweep
            },
            paced: Some(previous.map_or(Duration::ZERO, |p| p.elapsed())),
            ..rules
        };
        previous = Some(Instant::now());
        let result = state.engine.purge_expired(asked).await;
        let mut behind = false;
        if let Ok(purge) = &result {
            behind = purge.behind_ms > CLOCK_JUMP_TOLERANCE.as_millis() as i64;
            if behind && !behind_said {
                tracing::warn!(
                    behind_secs = purge.behind_ms / 1000,
                    "purge clock behind the wall clock (a restart after downtime, or a wall clock that \
                     jumped ahead): the purge deletes only what its own clock says is due and catches up at \
                     twice the monotonic pace; if the wall clock is right, `outcomes purge --confirm` deletes \
                     what is due now"
                );
            } else if !behind && behind_said {
                tracing::info!("purge clock caught up with the wall clock");
            }
            behind_said = behind;
        }
        let held = match result {
            Ok(Purge { due, total, .. }) if latched && !due.is_empty() => {
                if said != Said::Held(due.len(), total) {
                    tracing::warn!(
                        due = due.len(),
                        total,
                        "purge still held since a mass purge was found; nothing was deleted; if the clock \
                         is right, run `outcomes purge --confirm`"
                    );
                    said = Said::Held(due.len(), total);
                }
                true
            }
            Ok(Purge {
                held: true,
                due,
                total,
                ..
            }) => {
                latched = true;
                if said != Said::Held(due.len(), total) {
                    tracing::warn!(
                        due = due.len(),
                        total,
                        "purge held: this many sessions would be deleted at once (at least 10 and more \
                         than a tenth of all), as a clock that jumped ahead would make them; nothing was \
                         deleted; if the clock is right, run `outcomes purge --confirm`"
                    );
                    said = Said::Held(due.len(), total);
                }
                true
            }
            Ok(purge) => {
                if latched {
                    tracing::info!("purge hold released: no session is due any more");
                    latched = false;
                }
                said = Said::Nothing;
                if !purge.deleted.is_empty() {
                    tracing::info!(sessions = purge.deleted.len(), "expired sessions purged");
                }
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "retention sweep failed");
                false
            }
        };
        // A held purge or a purge clock behind suggests a clock that jumped ahead: viewer links and
        // sign-ins are kept too (they are refused while expired by the wall clock all the same).
        if !held && !behind {
            if let Err(e) = state
                .access
                .store
                .purge_expired(state.access.sign_in_idle_ms())
                .await
            {
                tracing::warn!(error = %e, "sweep of expired viewer links and sign-ins failed");
            }
        }
        end_streams_of_expired_sessions(&state).await;
    }
}

/// Ends the live streams of sessions that expired (hidden, not yet purged) with `session_ended`
/// `"expired"`: their pages say so at once, not only at the purge; and those of sessions another process
/// deleted (`outcomes purge --confirm`) with `"deleted"`.
async fn end_streams_of_expired_sessions(state: &AppState) {
    for key in state.hub.subscribed_sessions() {
        let Ok(key) = ledger::ids::SessionKey::parse(key) else {
            continue;
        };
        match state.sessions.check_session(&key).await {
            Err(ledger::LedgerError::SessionExpired) => {
                state.hub.end_session(&key, ledger::SessionEnd::Expired);
            }
            // A stream opens only on an existing session: gone since, it was deleted by another process
            // (an operator's `outcomes purge --confirm` on the same SQLite file).
            Err(ledger::LedgerError::SessionNotFound) => {
                state.hub.end_session(&key, ledger::SessionEnd::Deleted);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_clock_that_moved_more_than_a_minute_beyond_the_monotonic_one_counts_as_a_jump() {
        let watch = ClockWatch::default();
        let now = SystemTime::now();
        assert!(!watch.jumped_at(now));
        assert!(!watch.jumped_at(now + Duration::from_secs(50)));
        assert!(watch.jumped_at(now + Duration::from_secs(61)));
        assert!(watch.jumped_at(now + Duration::from_secs(60 * 24 * 3600)));
        // Behind is not ahead: a clock set back deletes less, never more.
        assert!(!watch.jumped_at(now - Duration::from_secs(3600)));
        assert!(watch.ahead_ms_at(now - Duration::from_secs(3600)) < -3_599_000);
    }
}
