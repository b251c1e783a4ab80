//! Retention (docs/ledger.md "Retention"): history survives a restart, is hidden from every read once the
//! conversation's time to live has passed since its last write, refuses writes then, and is deleted with the
//! session.

use std::time::Duration;

use crate::common::*;
use ledger::engine::Settlement;
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

#[tokio::test]
async fn purge_expired_deletes_only_expired_sessions() {
    let h = populated().await;
    h.clock.advance(TTL);
    h.ok(approve_in("s-2", "t-9", "m-9")).await;
    assert_eq!(h.engine.purge_expired().await.unwrap(), 0);
    h.clock.advance(Duration::from_millis(1));
    assert_eq!(h.engine.purge_expired().await.unwrap(), 1);
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
