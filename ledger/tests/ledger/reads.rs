//! The read side: the replay rules of seed 000 (`GET /api/mutation-events`), legacy entries, and the
//! dashboard's reads (sessions, turns, entries, find by mutation id, the open-unknowns queue).

use std::time::Duration;

use crate::common::*;
use ledger::command::{Action, Command, Settlement};
use ledger::ids::Cursor;
use ledger::projection::LedgerEntry;
use ledger::wire::{LedgerStatus as L, PublishedStatus as P, StatusCounts};
use ledger::{LedgerError, Refusal, Replay};

fn cursor(n: i64) -> Option<Cursor> {
    Some(Cursor::parse(&n.to_string()).unwrap())
}

fn events(r: &Replay) -> Vec<(Option<i64>, &str, P)> {
    r.events
        .iter()
        .map(|e| (e.revision, e.outcome.mutation_id.as_str(), e.outcome.status))
        .collect()
}

#[tokio::test]
async fn unknown_outcomes_are_re_sent_after_any_cursor() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await; // 1
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await; // 2
    h.in_flight("m-2", "a-2").await; // 3
    h.ok(settle("m-2", "a-2", Settlement::Completed, None))
        .await; // 4
    let (s, t) = (sk(SESSION), turn(TURN));

    let full = h.sessions.replay(&s, &t, None).await.unwrap();
    assert_eq!(
        events(&full),
        vec![
            (Some(2), "m-1", P::OutcomeUnknown),
            (Some(4), "m-2", P::Completed)
        ]
    );
    assert_eq!(
        (full.cursor, full.latest_revision, full.final_id()),
        (None, 4, Some(4))
    );

    let at_latest = h.sessions.replay(&s, &t, cursor(4)).await.unwrap();
    assert_eq!(
        events(&at_latest),
        vec![(Some(2), "m-1", P::OutcomeUnknown)]
    );
    assert_eq!(
        at_latest.final_id(),
        Some(4),
        "the cursor, not the re-sent 2"
    );

    let after_2 = h.sessions.replay(&s, &t, cursor(2)).await.unwrap();
    assert_eq!(
        events(&after_2),
        vec![
            (Some(2), "m-1", P::OutcomeUnknown),
            (Some(4), "m-2", P::Completed)
        ]
    );

    // An in-flight entry is published unknown and is re-sent too.
    h.in_flight("m-3", "a-3").await; // 5
    let r = h.sessions.replay(&s, &t, cursor(5)).await.unwrap();
    assert_eq!(
        events(&r),
        vec![
            (Some(2), "m-1", P::OutcomeUnknown),
            (Some(5), "m-3", P::OutcomeUnknown)
        ]
    );

    // Once reconciled it reappears under its new revision, then no longer after a later cursor.
    h.ok(reconcile("m-1", "a-1", true)).await; // 6
    let r = h.sessions.replay(&s, &t, cursor(5)).await.unwrap();
    assert_eq!(
        events(&r),
        vec![
            (Some(5), "m-3", P::OutcomeUnknown),
            (Some(6), "m-1", P::Completed)
        ]
    );
    let r = h.sessions.replay(&s, &t, cursor(6)).await.unwrap();
    assert_eq!(events(&r), vec![(Some(5), "m-3", P::OutcomeUnknown)]);
}

#[tokio::test]
async fn cursor_past_the_latest_revision_is_cursor_ahead() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    match h
        .sessions
        .replay(&sk(SESSION), &turn(TURN), cursor(2))
        .await
    {
        Err(LedgerError::CursorAhead { cursor, latest }) => assert_eq!((cursor, latest), (2, 1)),
        other => panic!("{other:?}"),
    }
    assert!(h
        .sessions
        .replay(&sk(SESSION), &turn(TURN), cursor(1))
        .await
        .is_ok());
}

#[tokio::test]
async fn unknown_turn_or_session_is_not_found() {
    let h = open().await;
    assert!(matches!(
        h.sessions.replay(&sk(SESSION), &turn(TURN), None).await,
        Err(LedgerError::SessionNotFound)
    ));
    h.ok(approve("m-1")).await;
    assert!(matches!(
        h.sessions
            .replay(&sk(SESSION), &turn("t-other"), cursor(9))
            .await,
        Err(LedgerError::TurnNotFound)
    ));
    assert!(matches!(
        h.sessions
            .turn_entries(&sk(SESSION), &turn("t-other"))
            .await,
        Err(LedgerError::TurnNotFound)
    ));
}

#[tokio::test]
async fn a_turn_known_from_an_approval_replays_empty_with_no_final_id() {
    let h = open().await;
    h.ok(approve("m-1")).await;
    for c in [None, cursor(0)] {
        let r = h
            .sessions
            .replay(&sk(SESSION), &turn(TURN), c)
            .await
            .unwrap();
        assert!(r.events.is_empty());
        assert_eq!((r.latest_revision, r.final_id()), (0, None));
    }
}

fn legacy(m: &str, status: L) -> LedgerEntry {
    LedgerEntry {
        logical_turn_id: TURN.into(),
        mutation_id: m.into(),
        tool: TOOL.into(),
        status,
        intent_recorded: true,
        reason: None,
        metadata: None,
    }
}

#[tokio::test]
async fn legacy_entries_appear_only_in_a_full_replay_first_and_without_revision() {
    let h = open().await;
    h.engine
        .import_legacy(&sk(SESSION), &legacy("m-L1", L::Completed))
        .await
        .unwrap();
    h.engine
        .import_legacy(&sk(SESSION), &legacy("m-L2", L::OutcomeUnknown))
        .await
        .unwrap();
    let (s, t) = (sk(SESSION), turn(TURN));
    let only_legacy = h.sessions.replay(&s, &t, None).await.unwrap();
    assert_eq!(
        events(&only_legacy),
        vec![
            (None, "m-L1", P::Completed),
            (None, "m-L2", P::OutcomeUnknown)
        ]
    );
    assert_eq!(
        (only_legacy.latest_revision, only_legacy.final_id()),
        (0, None)
    );
    // Not after a cursor, even the unknown one.
    assert!(h
        .sessions
        .replay(&s, &t, cursor(0))
        .await
        .unwrap()
        .events
        .is_empty());

    h.in_flight("m-1", "a-1").await;
    let full = h.sessions.replay(&s, &t, None).await.unwrap();
    assert_eq!(
        events(&full),
        vec![
            (None, "m-L1", P::Completed),
            (None, "m-L2", P::OutcomeUnknown),
            (Some(1), "m-1", P::OutcomeUnknown),
        ]
    );
    assert_eq!(full.final_id(), Some(1));
    let after = h.sessions.replay(&s, &t, cursor(0)).await.unwrap();
    assert_eq!(events(&after), vec![(Some(1), "m-1", P::OutcomeUnknown)]);
    let after = h.sessions.replay(&s, &t, cursor(1)).await.unwrap();
    assert_eq!(events(&after), vec![(Some(1), "m-1", P::OutcomeUnknown)]);

    // History and entries list them too; entries show no revision.
    let entries = h.sessions.turn_entries(&s, &t).await.unwrap();
    let revs: Vec<_> = entries
        .entries
        .iter()
        .map(|e| e.mutation_revision)
        .collect();
    assert_eq!(revs, vec![None, None, Some(1)]);
    assert_eq!(h.sessions.mutation_outcomes(&s).await.unwrap().len(), 3);
    assert_eq!(h.recorder.count(), 0, "an import is not a live change");
}

#[tokio::test]
async fn importing_a_recorded_mutation_is_refused() {
    let h = open().await;
    let s = h.ok(approve("m-1")).await;
    match h
        .engine
        .import_legacy(&sk(SESSION), &legacy("m-1", L::Completed))
        .await
    {
        Err(LedgerError::Refused { refusal, current }) => {
            assert_eq!(refusal, Refusal::AlreadyRecorded);
            assert_eq!(*current, s);
        }
        other => panic!("{other:?}"),
    }
}

fn counts(
    completed: u64,
    failed: u64,
    not_executed: u64,
    unknown: u64,
    in_flight: u64,
) -> StatusCounts {
    StatusCounts {
        completed,
        failed,
        not_executed,
        outcome_unknown: unknown,
        in_flight,
    }
}

/// s-1: t-1 {m-1 unknown, m-2 completed, m-3 approved only}, t-2 {m-4 not_executed, m-5 failed};
/// a minute later s-2: t-1 {m-1 in flight}.
async fn dashboard() -> Harness {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    h.in_flight("m-2", "a-2").await;
    h.ok(settle("m-2", "a-2", Settlement::Completed, None))
        .await;
    h.ok(approve("m-3")).await;
    h.clock.advance(Duration::from_secs(1));
    h.ok(approve_in(SESSION, "t-2", "m-4")).await;
    h.ok(intent("m-4", "a-4")).await;
    h.ok(cancel("m-4", "a-4", None)).await;
    h.ok(approve_in(SESSION, "t-2", "m-5")).await;
    h.ok(intent("m-5", "a-5")).await;
    h.ok(settle("m-5", "a-5", Settlement::Failed, None)).await;
    h.clock.advance(Duration::from_millis(59_500));
    h.ok(approve_in("s-2", TURN, "m-1")).await;
    h.ok(Command::new(
        sk("s-2"),
        mid("m-1"),
        Action::RecordIntent {
            attempt_id: att("b-1"),
            deadline_secs: None,
        },
    ))
    .await;
    h
}

#[tokio::test]
async fn sessions_list_most_recent_first_with_last_activity_and_counts() {
    let h = dashboard().await;
    let list = h.sessions.list().await.sessions;
    let got: Vec<_> = list
        .iter()
        .map(|s| {
            (
                s.session_key.as_str(),
                s.created_at.as_str(),
                s.last_activity.as_str(),
                s.turn_count,
                s.counts.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "s-2",
                "2027-01-15T08:01:00.500Z",
                "2027-01-15T08:01:00.500Z",
                1,
                counts(0, 0, 0, 1, 1)
            ),
            (
                "s-1",
                "2027-01-15T08:00:00.000Z",
                "2027-01-15T08:00:01.000Z",
                2,
                counts(1, 1, 1, 1, 0)
            ),
        ]
    );
}

#[tokio::test]
async fn turns_list_oldest_first_with_latest_revision_and_counts() {
    let h = dashboard().await;
    let turns = h.sessions.turns(&sk(SESSION)).await.unwrap();
    assert_eq!(turns.last_activity, "2027-01-15T08:00:01.000Z");
    let got: Vec<_> = turns
        .turns
        .iter()
        .map(|t| {
            (
                t.logical_turn_id.as_str(),
                t.first_recorded_at.as_str(),
                t.latest_revision,
                t.counts.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("t-1", "2027-01-15T08:00:00.000Z", 4, counts(1, 0, 0, 1, 0)),
            ("t-2", "2027-01-15T08:00:01.000Z", 4, counts(0, 1, 1, 0, 0)),
        ]
    );
}

#[tokio::test]
async fn turn_entries_are_published_entries_in_recorded_order() {
    let h = dashboard().await;
    let e = h
        .sessions
        .turn_entries(&sk(SESSION), &turn(TURN))
        .await
        .unwrap();
    assert_eq!(e.latest_revision, 4);
    let got: Vec<_> = e
        .entries
        .iter()
        .map(|e| {
            (
                e.outcome.mutation_id.as_str(),
                e.ledger_status,
                e.mutation_revision,
                e.settled_at.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "m-1",
                L::OutcomeUnknown,
                Some(2),
                Some("2027-01-15T08:00:00.000Z")
            ),
            (
                "m-2",
                L::Completed,
                Some(4),
                Some("2027-01-15T08:00:00.000Z")
            ),
        ]
    );
    let history: Vec<_> = h
        .sessions
        .mutation_outcomes(&sk(SESSION))
        .await
        .unwrap()
        .into_iter()
        .map(|o| (o.logical_turn_id, o.mutation_id, o.status))
        .collect();
    let want = [
        ("t-1", "m-1", P::OutcomeUnknown),
        ("t-1", "m-2", P::Completed),
        ("t-2", "m-4", P::NotExecuted),
        ("t-2", "m-5", P::Failed),
    ];
    assert_eq!(
        history,
        want.iter()
            .map(|(t, m, s)| (t.to_string(), m.to_string(), *s))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn find_operation_matches_a_mutation_id_across_sessions() {
    let h = dashboard().await;
    let found = h.sessions.find_operation(&mid("m-1")).await.unwrap();
    let got: Vec<_> = found
        .iter()
        .map(|m| {
            (
                m.session_key.as_str(),
                m.entry.ledger_status,
                m.entry.outcome.status,
                m.entry.mutation_revision,
                m.entry.settled_at.is_some(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("s-1", L::OutcomeUnknown, P::OutcomeUnknown, Some(2), true),
            (
                "s-2",
                L::ExecutionStarted,
                P::OutcomeUnknown,
                Some(1),
                false
            ),
        ]
    );
    assert!(
        h.sessions
            .find_operation(&mid("m-3"))
            .await
            .unwrap()
            .is_empty(),
        "unpublished"
    );
    assert!(h
        .sessions
        .find_operation(&mid("nope"))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn open_unknowns_are_listed_oldest_first_across_sessions() {
    let h = dashboard().await;
    let q = h.sessions.queue(10).await;
    let got: Vec<_> = q
        .iter()
        .map(|m| (m.session_key.as_str(), m.entry.outcome.mutation_id.as_str()))
        .collect();
    assert_eq!(got, vec![("s-1", "m-1"), ("s-2", "m-1")]);
    let first = h.sessions.queue(1).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].session_key, "s-1");
    // Reconciled: leaves the queue.
    h.ok(reconcile("m-1", "a-1", false)).await;
    let q = h.sessions.queue(10).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].session_key, "s-2");
}
