//! Reading operation histories (docs/ledger.md "History"): the support queue's age and note count, a
//! history hidden once its session expired and deleted with it, the row a note answers, and every
//! entry's history of a session read in chunks (cut short by a deleted session: an error, not an end).
//! The writing side is `history.rs`, whose helpers these tests share.

use std::time::Duration;

use crate::common::*;
use crate::history::{approve_after, history_rows, note, staff};
use ledger::engine::{PurgeMode, Settlement};
use ledger::store::format_time;
use ledger::wire::HistoryKind;
use ledger::LedgerError;

#[tokio::test]
async fn the_support_queue_tells_how_long_an_outcome_is_open_and_how_many_notes_it_has() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.clock.advance(Duration::from_secs(10));
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    h.in_flight("m-2", "a-2").await;
    h.in_flight("m-3", "a-3").await;
    h.ok(settle("m-3", "a-3", Settlement::Completed, None))
        .await;
    h.clock.advance(Duration::from_secs(25));
    // Neither metadata nor notes move the age.
    h.ok(attach(
        "m-1",
        meta("D-1", "https://app.example.com/d/D-1", "One"),
    ))
    .await;
    h.staff_ok(note("m-1", "one")).await;
    h.staff_ok(note("m-1", "two")).await;
    h.staff_ok(note("m-3", "done")).await;
    h.clock.advance(Duration::from_millis(999));
    let queue: Vec<_> = h
        .sessions
        .queue(10)
        .await
        .into_iter()
        .map(|m| (m.entry.outcome.mutation_id, m.age_secs, m.notes))
        .collect();
    assert_eq!(
        queue,
        [
            ("m-1".to_owned(), Some(25), Some(2)),
            ("m-2".to_owned(), Some(25), Some(0))
        ]
    );
    let found = h.sessions.find_operation(&mid("m-3")).await.unwrap();
    assert_eq!(
        found
            .iter()
            .map(|m| (m.age_secs, m.notes))
            .collect::<Vec<_>>(),
        [(None, Some(1))]
    );
}

#[tokio::test]
async fn history_is_hidden_once_the_session_expired_and_deleted_with_it() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.staff_ok(note("m-1", "x")).await;
    h.ok(approve_in("s-2", TURN, "m-1")).await;
    assert!(matches!(
        h.sessions.operation_history(&sk("s-9"), &mid("m-1")).await,
        Err(LedgerError::SessionNotFound)
    ));
    assert!(matches!(
        h.sessions
            .operation_history(&sk(SESSION), &mid("m-9"))
            .await,
        Err(LedgerError::MutationNotFound)
    ));
    assert_eq!(history_rows(&h.path).await, 4);
    h.engine.delete_session(&sk("s-2")).await.unwrap();
    assert_eq!(history_rows(&h.path).await, 3);
    assert!(matches!(
        h.sessions.operation_history(&sk("s-2"), &mid("m-1")).await,
        Err(LedgerError::SessionNotFound)
    ));

    h.clock.advance(TTL);
    assert_eq!(h.changes("m-1").await.len(), 3);
    h.clock.advance(Duration::from_millis(1));
    assert!(matches!(
        h.sessions
            .operation_history(&sk(SESSION), &mid("m-1"))
            .await,
        Err(LedgerError::SessionExpired)
    ));
    // A note is a write: refused once expired, and nothing is added.
    assert!(matches!(
        h.engine.apply_as(staff(), note("m-1", "late")).await,
        Err(LedgerError::SessionExpired)
    ));
    assert_eq!(history_rows(&h.path).await, 3);
    assert_eq!(
        crate::retention::purge(&h, Duration::ZERO, PurgeMode::Sweep)
            .await
            .deleted
            .len(),
        1
    );
    assert_eq!(history_rows(&h.path).await, 0);
}

#[tokio::test]
async fn note_as_answers_the_row_the_history_then_serves() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    let before = h.changes("m-1").await;
    h.clock.advance(Duration::from_secs(3));
    let row = h
        .engine
        .note_as(staff(), note("m-1", "asked the provider"))
        .await
        .unwrap();
    let after = h.changes("m-1").await;
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last(), Some(&row));
    assert_eq!(
        (
            row.kind,
            row.revision,
            row.actor.as_str(),
            row.note.as_deref()
        ),
        (
            HistoryKind::Note,
            None,
            "staff:ada",
            Some("asked the provider")
        )
    );
    assert_eq!(row.at, format_time(T0 + 3_000));
    // Refused as any note is, and only a note.
    assert!(matches!(
        h.engine.note_as(staff(), note("m-1", "")).await,
        Err(LedgerError::Invalid { field, .. }) if field == "text"
    ));
    assert!(matches!(
        h.engine.note_as(staff(), note("m-9", "x")).await,
        Err(LedgerError::MutationNotFound)
    ));
    assert!(matches!(
        h.engine.note_as(staff(), intent("m-1", "a-2")).await,
        Err(LedgerError::Invalid { field, .. }) if field == "op"
    ));
    assert_eq!(h.changes("m-1").await, after);
}

#[tokio::test]
async fn operation_histories_are_every_entrys_history_in_the_sessions_order_across_chunks() {
    let h = open().await;
    // 230 entries over three turns, recorded interleaved: more than two chunks of 100.
    let mut ops = Vec::new();
    for n in 0..230 {
        let (t, m) = (format!("t{}", n % 3), format!("m{n:03}"));
        ops.push(approve_in(SESSION, &t, &m));
        if n % 5 != 0 {
            ops.push(intent(&m, "a-1"));
        }
    }
    ops.push(approve_after(SESSION, "m-after", "m001"));
    for r in h.engine.apply_batch(ops).await.unwrap() {
        r.unwrap();
    }
    h.staff_ok(note("m001", "a note")).await;
    let mut chunks = h.sessions.operation_histories(&sk(SESSION)).await.unwrap();
    let mut all = Vec::new();
    let mut sizes = Vec::new();
    while let Some(chunk) = chunks.next_chunk().await.unwrap() {
        sizes.push(chunk.len());
        all.extend(chunk);
    }
    assert!(sizes.iter().all(|&n| n <= 100), "{sizes:?}");
    assert!(sizes.len() >= 3, "{sizes:?}");
    // Turn by turn in recorded order, each entry in recorded order: the order of the records.
    let mut expected: Vec<String> = (0..230).map(|n| format!("m{n:03}")).collect();
    expected.push("m-after".into());
    let turn_of = |m: &str| match m {
        "m-after" => 3, // its turn `t-1` is recorded last
        _ => m[1..].parse::<usize>().unwrap() % 3,
    };
    expected.sort_by_key(|m| turn_of(m));
    let got: Vec<&str> = all.iter().map(|o| o.mutation_id.as_str()).collect();
    assert_eq!(got, expected);
    for o in &all {
        assert_eq!(o, &h.history(&o.mutation_id).await, "{}", o.mutation_id);
    }
    let m001 = all.iter().find(|o| o.mutation_id == "m001").unwrap();
    assert_eq!(m001.commissioned, ["m-after"]);
    assert!(matches!(
        h.sessions.operation_histories(&sk("nobody")).await,
        Err(LedgerError::SessionNotFound)
    ));
}

/// A chunked read cut short by the session's deletion fails at its end (the HTTP body then ends early)
/// instead of ending like a complete read; so does one of a session deleted and recorded again under the
/// same key. Both the records' read and the operation histories' read.
#[tokio::test]
async fn a_chunked_read_cut_short_by_deleting_the_session_fails_instead_of_ending() {
    let h = open().await;
    let mut ops = Vec::new();
    for n in 0..1_200 {
        let m = format!("m{n:04}");
        ops.push(approve_in(SESSION, "t", &m));
        ops.push(intent(&m, "a-1"));
    }
    for r in h.engine.apply_batch(ops).await.unwrap() {
        r.unwrap();
    }
    // Read to the end: complete.
    let mut whole = h.sessions.history(&sk(SESSION)).await.unwrap();
    let mut n = 0;
    while let Some(chunk) = whole.next_chunk().await.unwrap() {
        n += chunk.len();
    }
    assert_eq!(n, 1_200);

    let mut records = h.sessions.history(&sk(SESSION)).await.unwrap();
    let mut histories = h.sessions.operation_histories(&sk(SESSION)).await.unwrap();
    assert_eq!(records.next_chunk().await.unwrap().unwrap().len(), 1_000);
    assert_eq!(histories.next_chunk().await.unwrap().unwrap().len(), 100);
    h.engine.delete_session(&sk(SESSION)).await.unwrap();
    // The same key, recorded again (a moment later): not the session the reads began on.
    h.clock.advance(std::time::Duration::from_millis(1));
    h.engine
        .apply(approve_in(SESSION, "t", "m-new"))
        .await
        .unwrap();
    assert!(matches!(
        records.next_chunk().await,
        Err(LedgerError::SessionNotFound)
    ));
    let end = loop {
        match histories.next_chunk().await {
            Ok(Some(_)) => continue,
            other => break other,
        }
    };
    assert!(matches!(end, Err(LedgerError::SessionNotFound)), "{end:?}");
}
