//! The deadline sweep of `outcomes serve` (docs/api.md "Deadlines"): at the start, the deadlines that
//! passed while no server ran are moved to the start plus [`ledger::RESTART_GRACE`] (60 s); then about
//! once a second every write still in flight past its deadline is settled `outcome_unknown` with
//! `execution_timeout` by the ledger (`ledger::Engine::settle_overdue`), counted in
//! `outcomes_deadline_settlements_total`. "Now" is the sweep's own clock ([`ledger::DeadlineClock`]): the
//! wall clock (on Postgres the database's) that a jump ahead while the server runs cannot move early.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::AppState;

/// How often the sweep looks for overdue writes: a write is settled within about this long (and one
/// group commit) of its deadline.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Moves the deadlines that passed while no server ran, then spawns the sweep until `shutdown`. A store
/// error is logged and retried at the next tick (the writes stay in flight meanwhile, never guessed).
pub async fn start(state: AppState, shutdown: CancellationToken) {
    let engine = state.engine.clone();
    let wall = match engine.deadline_wall_clock().await {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "deadlines: the ledger's clock cannot be read; sweeping by this host's");
            ledger::Clock::now_ms(&ledger::SystemClock)
        }
    };
    match engine
        .postpone_passed_deadlines(wall, ledger::RESTART_GRACE)
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            writes = n,
            "deadlines: writes whose deadline passed while no server ran get 60 s from now"
        ),
        Err(e) => tracing::warn!(error = %e, "deadlines: passed deadlines were not moved"),
    }
    let mut clock = ledger::DeadlineClock::start(wall);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            let wall = match engine.deadline_wall_clock().await {
                Ok(w) => w,
                Err(e) => {
                    tracing::warn!(error = %e, "deadlines: the ledger's clock cannot be read");
                    continue;
                }
            };
            let now = clock.read(wall);
            // A full batch may leave more overdue: go on at once.
            loop {
                match engine.settle_overdue(now).await {
                    Ok(0) => break,
                    Ok(n) => {
                        state.metrics.deadline_settlements(n);
                        tracing::info!(
                            writes = n,
                            "deadlines: settled outcome_unknown (execution_timeout) by the ledger"
                        );
                        if n < ledger::engine::OVERDUE_BATCH as u64 {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "deadlines: sweep failed; tried again");
                        break;
                    }
                }
            }
        }
    });
}
