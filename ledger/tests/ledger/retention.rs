//! Retention (docs/ledger.md "Retention"): history survives a restart, is hidden from every read once the
//! conversation's time to live has passed since its last write, refuses writes then, and is deleted with the
//! session or by the purge, a grace after expiry; a purge that would delete many sessions at once (a clock
//! that jumped ahead) is held for an operator.

use std::time::Duration;

use crate::common::*;
use ledger::engine::{Purge, PurgeMode, PurgeRules, Settlement};
use ledger::ids::Cursor;
use ledger::LedgerError;

async fn populated() -> Harness {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    h.ok(reconcile("m-1", "a-1", true)).await;
    h.in_flight("m-2", "a-2").await;
    h.ok(settle("m-2", "a-2", Settlement::OutcomeUnknown, None))
        .await;
    h.ok(attach(
        "m-2",
        meta("D-2", "https://app.example.com/d/D-2", "Two"),
    ))
    .await;
    h
}

fn is_expired<T: std::fmt::Debug>(r: Result<T, LedgerError>) -> bool {
    matches!(r, Err(LedgerError::SessionExpired))
}

#[tokio::test]
async fn a_session_survives_restart_with_identical_history() {
    let h = populated().await;
    let s = &h.sessions;
    let before = (
        s.mutation_outcomes(&sk(SESSION)).await.unwrap(),
        s.replay(&sk(SESSION), &turn(TURN), None).await.unwrap(),
        s.turn_entries(&sk(SESSION), &turn(TURN)).await.unwrap(),
        s.turns(&sk(SESSION)).await.unwrap(),
        s.list().await,
    );
    assert_eq!(before.0.len(), 2);
    h.ledger.close().await;
    let again = reopen(&h.path, h.recorder.clone(), h.clock.clone()).await;
    let s = again.sessions();
    let after = (
        s.mutation_outcomes(&sk(SESSION)).await.unwrap(),
        s.replay(&sk(SESSION), &turn(TURN), None).await.unwrap(),
        s.turn_entries(&sk(SESSION), &turn(TURN)).await.unwrap(),
        s.turns(&sk(SESSION)).await.unwrap(),
        s.list().await,
    );
    assert_eq!(after, before);
    // The revision counter continues where it stopped.
    let next = again
        .engine()
        .apply(reconcile("m-2", "a-2", false))
        .await
        .unwrap();
    assert_eq!(next.revision, Some(7));
}

#[tokio::test]
async fn an_expired_session_is_hidden_from_every_read() {
    let h = populated().await;
    let s = &h.sessions;
    // Exactly at the TTL the session is still live.
    h.clock.advance(TTL);
    assert_eq!(s.mutation_outcomes(&sk(SESSION)).await.unwrap().len(), 2);
    assert_eq!(s.list().await.sessions.len(), 1);
    h.clock.advance(Duration::from_millis(1));
    assert!(is_expired(s.mutation_outcomes(&sk(SESSION)).await));
    assert!(is_expired(s.replay(&sk(SESSION), &turn(TURN), None).await));
    assert!(is_expired(
        s.replay(&sk(SESSION), &turn(TURN), Some(Cursor::parse("1").unwrap()))
            .await
    ));
    assert!(is_expired(s.turns(&sk(SESSION)).await));
    assert!(is_expired(s.turn_entries(&sk(SESSION), &turn(TURN)).await));
    assert!(s.list().await.sessions.is_empty());
    assert!(s.find_operation(&mid("m-1")).await.unwrap().is_empty());
    assert!(s.queue(100).await.is_empty());
}

#[tokio::test]
async fn the_time_to_live_counts_from_the_last_write() {
    let h = populated().await;
    h.clock.advance(TTL / 2);
    h.ok(reconcile("m-2", "a-2", true)).await;
    h.clock.advance(TTL / 2 + Duration::from_millis(1));
    let history = h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap();
    assert_eq!(history.len(), 2);
    h.clock.advance(TTL / 2);
    assert!(is_expired(h.sessions.mutation_outcomes(&sk(SESSION)).await));
}

#[tokio::test]
async fn a_write_to_an_expired_session_is_refused_session_expired() {
    let h = populated().await;
    h.clock.advance(TTL + Duration::from_millis(1));
    for op in [
        approve("m-9"),
        reconcile("m-2", "a-2", true),
        attach("m-1", meta("D-9", "https://app.example.com/d/D-9", "Nine")),
        intent("m-1", "a-9"),
    ] {
        let what = format!("{op:?}");
        assert!(is_expired(h.engine.apply(op).await), "{what}");
    }
    // Nothing was written: the session did not come back to life.
    assert!(h.sessions.list().await.sessions.is_empty());
}

async fn row_counts(path: &str) -> [i64; 5] {
    let pool = raw(path).await;
    let mut counts = [0; 5];
    for (i, table) in [
        "sessions",
        "turns",
        "entries",
        "reconciliations",
        "attempts",
    ]
    .iter()
    .enumerate()
    {
        counts[i] = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
    counts
}

/// Runs the purge with `grace` after expiry.
pub(crate) async fn purge(h: &Harness, grace: Duration, mode: PurgeMode) -> Purge {
    h.engine
        .purge_expired(PurgeRules {
            grace,
            mode,
            paced: None,
        })
        .await
        .unwrap()
}

fn keys(n: std::ops::Range<usize>) -> Vec<String> {
    let mut k: Vec<String> = n.map(|i| format!("s-{i:02}")).collect();
    k.sort();
    k
}

#[tokio::test]
async fn purge_expired_deletes_only_expired_sessions() {
    let h = populated().await;
    h.clock.advance(TTL);
    h.ok(approve_in("s-2", "t-9", "m-9")).await;
    let none = purge(&h, Duration::ZERO, PurgeMode::Sweep).await;
    assert_eq!((none.total, none.due.len(), none.deleted.len()), (2, 0, 0));
    h.clock.advance(Duration::from_millis(1));
    let one = purge(&h, Duration::ZERO, PurgeMode::Sweep).await;
    assert_eq!(one.deleted, [SESSION]);
    assert!(!one.held);
    assert_eq!(row_counts(&h.path).await, [1, 1, 1, 0, 0]);
    assert!(matches!(
        h.sessions.mutation_outcomes(&sk(SESSION)).await,
        Err(LedgerError::SessionNotFound)
    ));
    // The key can start a new conversation afresh.
    h.ok(approve("m-1")).await;
    assert_eq!(h.latest_revision().await, 0);
}

#[tokio::test]
async fn expiry_hides_and_the_purge_deletes_only_the_grace_after_expiry() {
    let h = populated().await;
    let grace = Duration::from_secs(7 * 24 * 3600);
    h.clock.advance(TTL + grace);
    // Expired (hidden) but within the grace: nothing is deleted.
    assert!(is_expired(h.sessions.mutation_outcomes(&sk(SESSION)).await));
    let kept = purge(&h, grace, PurgeMode::Sweep).await;
    assert_eq!((kept.total, kept.due.len(), kept.deleted.len()), (1, 0, 0));
    assert_eq!(row_counts(&h.path).await, [1, 1, 2, 1, 2]);
    // With the clock back (it had jumped), the session is readable again, whole.
    h.clock.set(T0);
    assert_eq!(
        h.sessions
            .mutation_outcomes(&sk(SESSION))
            .await
            .unwrap()
            .len(),
        2
    );
    h.clock.advance(TTL + grace + Duration::from_millis(1));
    assert_eq!(purge(&h, grace, PurgeMode::Sweep).await.deleted, [SESSION]);
    assert_eq!(row_counts(&h.path).await, [0, 0, 0, 0, 0]);
}

#[tokio::test]
async fn a_sweep_that_would_delete_every_session_at_once_is_held_until_an_operator_confirms() {
    let h = open().await;
    for i in 0..20 {
        h.ok(approve_in(&format!("s-{i:02}"), "t", "m")).await;
    }
    // The clock jumps 60 days ahead: all 20 are due at once.
    h.clock.advance(Duration::from_secs(60 * 24 * 3600));
    let held = purge(&h, Duration::from_secs(7 * 24 * 3600), PurgeMode::Sweep).await;
    assert_eq!(
        held,
        Purge {
            total: 20,
            due: keys(0..20),
            deleted: Vec::new(),
            held: true,
            behind_ms: 0
        }
    );
    assert!(held.is_mass());
    assert!(h.sessions.list().await.sessions.is_empty());
    // The clock is right again: every session is readable.
    h.clock.set(T0);
    assert_eq!(h.sessions.list().await.sessions.len(), 20);
    // A dry run says what is due and deletes nothing; the operator's confirmation deletes them all.
    h.clock.advance(Duration::from_secs(60 * 24 * 3600));
    let dry = purge(&h, Duration::from_secs(7 * 24 * 3600), PurgeMode::DryRun).await;
    assert_eq!((dry.due.len(), dry.deleted.len(), dry.held), (20, 0, false));
    let confirmed = purge(&h, Duration::from_secs(7 * 24 * 3600), PurgeMode::Confirmed).await;
    assert_eq!(confirmed.deleted, keys(0..20));
    h.clock.set(T0);
    assert!(h.sessions.list().await.sessions.is_empty());
}

#[tokio::test]
async fn gradual_expiry_is_purged_without_confirmation() {
    let h = open().await;
    // 100 sessions: 9 written first, then 1 more, then 90.
    for i in 0..9 {
        h.ok(approve_in(&format!("s-{i:02}"), "t", "m")).await;
    }
    h.clock.advance(Duration::from_secs(60));
    h.ok(approve_in("s-09", "t", "m")).await;
    h.clock.advance(Duration::from_secs(60));
    for i in 10..100 {
        h.ok(approve_in(&format!("s-{i:02}"), "t", "m")).await;
    }
    // 9 due: fewer than 10, deleted.
    h.clock.advance(TTL - Duration::from_secs(90));
    let nine = purge(&h, Duration::ZERO, PurgeMode::Sweep).await;
    assert_eq!((nine.deleted, nine.held), (keys(0..9), false));
    // 1 more due: deleted. 90 then due of 91: held.
    h.clock.advance(Duration::from_secs(60));
    assert_eq!(
        purge(&h, Duration::ZERO, PurgeMode::Sweep).await.deleted,
        keys(9..10)
    );
    h.clock.advance(Duration::from_secs(60));
    let rest = purge(&h, Duration::ZERO, PurgeMode::Sweep).await;
    assert_eq!((rest.total, rest.due.len(), rest.held), (90, 90, true));
}

#[tokio::test]
async fn ten_sessions_due_of_a_hundred_are_not_a_mass_purge() {
    let h = open().await;
    for i in 0..10 {
        h.ok(approve_in(&format!("s-{i:02}"), "t", "m")).await;
    }
    h.clock.advance(Duration::from_secs(60));
    for i in 10..100 {
        h.ok(approve_in(&format!("s-{i:02}"), "t", "m")).await;
    }
    h.clock.advance(TTL - Duration::from_secs(30));
    // Exactly a tenth is not more than a tenth.
    let ten = purge(&h, Duration::ZERO, PurgeMode::Sweep).await;
    assert_eq!(
        (ten.total, ten.deleted, ten.held),
        (100, keys(0..10), false)
    );
}

#[tokio::test]
async fn delete_session_removes_all_its_rows() {
    let h = populated().await;
    h.ok(approve_in("s-2", "t-9", "m-9")).await;
    assert_eq!(row_counts(&h.path).await, [2, 2, 3, 1, 2]);
    h.engine.delete_session(&sk(SESSION)).await.unwrap();
    assert_eq!(row_counts(&h.path).await, [1, 1, 1, 0, 0]);
    assert!(matches!(
        h.sessions.mutation_outcomes(&sk(SESSION)).await,
        Err(LedgerError::SessionNotFound)
    ));
    assert!(matches!(
        h.engine.delete_session(&sk(SESSION)).await,
        Err(LedgerError::SessionNotFound)
    ));
}

/// A server's sweep: the purge clock moved on by `elapsed` of monotonic time (docs/ledger.md "Retention").
async fn sweep(h: &Harness, elapsed: Duration) -> Purge {
    h.engine
        .purge_expired(PurgeRules {
            grace: Duration::ZERO,
            mode: PurgeMode::Sweep,
            paced: Some(elapsed),
        })
        .await
        .unwrap()
}

const MS: Duration = Duration::from_millis(1);

/// Three sessions (fewer than a mass purge, which the 10-session rule cannot hold) and a restart with the
/// wall clock 60 days ahead: the sweeps delete nothing until the purge clock, moving 2 ms per ms of
/// monotonic time from the newest write, has passed their expiry; then they go. (Before the purge clock:
/// the first sweep after the restart deleted all three.)
#[tokio::test]
async fn a_restart_far_ahead_deletes_nothing_until_the_purge_clock_has_run_to_the_expiry() {
    let h = open().await;
    for i in 0..3 {
        h.ok(approve_in(&format!("s-{i:02}"), "t", "m")).await;
    }
    let first = sweep(&h, Duration::ZERO).await;
    assert_eq!((first.total, first.due.len(), first.behind_ms), (3, 0, 0));
    let ahead = Duration::from_secs(60 * 24 * 3600);
    h.clock.advance(ahead);
    let restart = sweep(&h, Duration::ZERO).await;
    assert_eq!(
        (restart.due.len(), restart.deleted.len(), restart.held),
        (0, 0, false)
    );
    assert_eq!(restart.behind_ms, ahead.as_millis() as i64);
    // Half the time to live of running: the purge clock is at the expiry, less 2 ms.
    let running = sweep(&h, TTL / 2 - MS).await;
    assert_eq!((running.due.len(), running.deleted.len()), (0, 0));
    assert_eq!(running.behind_ms, (ahead - TTL + 2 * MS).as_millis() as i64);
    // Exactly at the expiry: not yet past it.
    assert!(sweep(&h, MS).await.deleted.is_empty());
    assert_eq!(sweep(&h, MS).await.deleted, keys(0..3));
}

/// The wall clock put right before the purge clock caught up: the purge clock follows it back at once,
/// nothing was deleted and every session reads again; the sweeps then go on from the right time.
#[tokio::test]
async fn a_wall_clock_put_right_again_is_followed_at_once_and_nothing_was_deleted() {
    let h = open().await;
    for i in 0..3 {
        h.ok(approve_in(&format!("s-{i:02}"), "t", "m")).await;
    }
    h.clock.advance(Duration::from_secs(60 * 24 * 3600));
    sweep(&h, Duration::ZERO).await;
    sweep(&h, TTL / 4).await;
    h.clock.set(T0 + 1000);
    let right = sweep(&h, Duration::from_secs(60)).await;
    assert_eq!((right.due.len(), right.behind_ms), (0, 0));
    assert_eq!(h.sessions.list().await.sessions.len(), 3);
    // From the right time on, the purge clock keeps up with the wall clock.
    h.clock.advance(TTL);
    let due = sweep(&h, TTL).await;
    assert_eq!((due.deleted, due.behind_ms), (keys(0..3), 0));
}

/// An operator's `outcomes purge --confirm` says the wall clock is right: it deletes what is due by the
/// wall clock and sets the purge clock to it, so the next sweep is not behind.
#[tokio::test]
async fn a_confirmed_purge_sets_the_purge_clock_to_the_wall_clock() {
    let h = open().await;
    h.ok(approve_in("s-00", "t", "m")).await;
    sweep(&h, Duration::ZERO).await;
    h.clock.advance(TTL + Duration::from_secs(3600));
    h.ok(approve_in("s-01", "t", "m")).await;
    let restart = sweep(&h, Duration::ZERO).await;
    assert_eq!(restart.deleted.len(), 0);
    assert!(restart.behind_ms > 0);
    let confirmed = purge(&h, Duration::ZERO, PurgeMode::Confirmed).await;
    assert_eq!(confirmed.deleted, ["s-00"]);
    let next = sweep(&h, Duration::ZERO).await;
    assert_eq!((next.total, next.due.len(), next.behind_ms), (1, 0, 0));
}
