//! Every transition and every refusal of the entry state machine (docs/ledger.md "Entries and their states").
//! A refusal reports the unchanged state and changes nothing: same revision, same history, no adapter call.

use crate::common::*;
use ledger::command::{Action, Settlement};
use ledger::wire::{LedgerStatus as L, PublishedStatus as P, Reason};
use ledger::Refusal;

#[tokio::test]
async fn approve_records_an_unpublished_entry_without_a_revision() {
    let h = open().await;
    let s = h.ok(approve("m-1")).await;
    assert_eq!(s, state("m-1", L::Approved, false, None, None, None));
    assert_eq!(h.latest_revision().await, 0);
    assert!(h
        .sessions
        .mutation_outcomes(&sk(SESSION))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(h.recorder.count(), 0);
}

#[tokio::test]
async fn redelivered_approve_is_refused_and_changes_nothing() {
    let h = open().await;
    let s = h.ok(approve("m-1")).await;
    h.refused(approve("m-1"), Refusal::AlreadyRecorded, &s)
        .await;
    let s = h.ok(intent("m-1", "a-1")).await;
    h.refused(approve("m-1"), Refusal::AlreadyRecorded, &s)
        .await;
}

#[tokio::test]
async fn record_intent_starts_execution_under_revision_1_and_publishes_unknown() {
    let h = open().await;
    let s = h.in_flight("m-1", "a-1").await;
    assert_eq!(
        s,
        state("m-1", L::ExecutionStarted, true, Some("a-1"), Some(1), None)
    );
    let history = h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].status, P::OutcomeUnknown);
    assert_eq!(
        h.recorder.count(),
        0,
        "in-flight intent is not emitted live"
    );
}

#[tokio::test]
async fn redelivered_intent_is_refused_and_changes_nothing() {
    let h = open().await;
    let s = h.in_flight("m-1", "a-1").await;
    h.refused(intent("m-1", "a-1"), Refusal::AlreadyRecorded, &s)
        .await;
    h.refused(intent("m-1", "a-2"), Refusal::AlreadyRecorded, &s)
        .await;
    // Also after the entry fell back to not_executed: intent is recorded, so it is a redelivery.
    let s = h.ok(cancel("m-1", "a-1", None)).await;
    h.refused(intent("m-1", "a-3"), Refusal::AlreadyRecorded, &s)
        .await;
}

#[tokio::test]
async fn settle_completed_failed_and_unknown_each_take_the_next_revision_and_are_emitted() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.in_flight("m-2", "a-2").await;
    h.in_flight("m-3", "a-3").await;
    let c = h
        .ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let f = h.ok(settle("m-2", "a-2", Settlement::Failed, None)).await;
    let u = h
        .ok(settle(
            "m-3",
            "a-3",
            Settlement::OutcomeUnknown,
            Some(Reason::ExecutionTimeout),
        ))
        .await;
    assert_eq!(
        c,
        state("m-1", L::Completed, true, Some("a-1"), Some(4), None)
    );
    assert_eq!(f, state("m-2", L::Failed, true, Some("a-2"), Some(5), None));
    assert_eq!(
        u,
        state(
            "m-3",
            L::OutcomeUnknown,
            true,
            Some("a-3"),
            Some(6),
            Some(Reason::ExecutionTimeout)
        )
    );
    let got: Vec<_> = h
        .recorder
        .deliveries()
        .into_iter()
        .map(|d| {
            (
                d.outcome.mutation_id,
                d.outcome.status,
                d.outcome.reason,
                d.revision,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("m-1".to_string(), P::Completed, None, 4),
            ("m-2".to_string(), P::Failed, None, 5),
            (
                "m-3".to_string(),
                P::OutcomeUnknown,
                Some(Reason::ExecutionTimeout),
                6
            ),
        ]
    );
}

#[tokio::test]
async fn settle_naming_another_attempt_is_refused() {
    let h = open().await;
    let s = h.in_flight("m-1", "a-1").await;
    h.refused(
        settle("m-1", "a-other", Settlement::Completed, None),
        Refusal::AttemptMismatch,
        &s,
    )
    .await;
}

#[tokio::test]
async fn settle_of_an_entry_not_in_flight_is_refused() {
    let h = open().await;
    let approved = h.ok(approve("m-1")).await;
    h.refused(
        settle("m-1", "a-1", Settlement::Completed, None),
        Refusal::NotInFlight,
        &approved,
    )
    .await;
    h.ok(intent("m-1", "a-1")).await;
    let done = h
        .ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    h.refused(
        settle("m-1", "a-1", Settlement::Failed, None),
        Refusal::NotInFlight,
        &done,
    )
    .await;
    h.in_flight("m-2", "a-2").await;
    let ne = h.ok(cancel("m-2", "a-2", None)).await;
    h.refused(
        settle("m-2", "a-2", Settlement::Completed, None),
        Refusal::NotInFlight,
        &ne,
    )
    .await;
}

#[tokio::test]
async fn late_settle_of_an_unknown_outcome_is_refused() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    let u = h
        .ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    for late in [
        Settlement::Completed,
        Settlement::Failed,
        Settlement::OutcomeUnknown,
    ] {
        h.refused(
            settle("m-1", "a-1", late, None),
            Refusal::UnknownNeedsReconciliation,
            &u,
        )
        .await;
    }
}

#[tokio::test]
async fn execution_timeout_only_with_outcome_unknown() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    for s in [Settlement::Completed, Settlement::Failed] {
        h.invalid(
            settle("m-1", "a-1", s, Some(Reason::ExecutionTimeout)),
            "reason",
        )
        .await;
    }
    for s in [
        Settlement::Completed,
        Settlement::Failed,
        Settlement::OutcomeUnknown,
    ] {
        h.invalid(
            settle("m-1", "a-1", s, Some(Reason::PreDispatchDeadline)),
            "reason",
        )
        .await;
    }
    let u = h
        .ok(settle(
            "m-1",
            "a-1",
            Settlement::OutcomeUnknown,
            Some(Reason::ExecutionTimeout),
        ))
        .await;
    assert_eq!(u.reason, Some(Reason::ExecutionTimeout));
    assert_eq!(u.revision, Some(2));
}

#[tokio::test]
async fn cancel_before_router_gives_not_executed_with_pre_dispatch_deadline() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    let s = h
        .ok(cancel("m-1", "a-1", Some(Reason::PreDispatchDeadline)))
        .await;
    assert_eq!(
        s,
        state(
            "m-1",
            L::Approved,
            true,
            Some("a-1"),
            Some(2),
            Some(Reason::PreDispatchDeadline)
        )
    );
    let d = h.recorder.deliveries();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].revision, 2);
    assert_eq!(d[0].outcome.status, P::NotExecuted);
    assert_eq!(d[0].outcome.reason, Some(Reason::PreDispatchDeadline));
    // Without a deadline: not_executed and no reason.
    h.in_flight("m-2", "a-2").await;
    let s = h.ok(cancel("m-2", "a-2", None)).await;
    assert_eq!(
        s,
        state("m-2", L::Approved, true, Some("a-2"), Some(4), None)
    );
}

#[tokio::test]
async fn cancel_reason_is_only_pre_dispatch_deadline() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.invalid(
        cancel("m-1", "a-1", Some(Reason::ExecutionTimeout)),
        "reason",
    )
    .await;
}

#[tokio::test]
async fn cancel_is_refused_unless_in_flight_under_the_named_attempt() {
    let h = open().await;
    let approved = h.ok(approve("m-1")).await;
    h.refused(cancel("m-1", "a-1", None), Refusal::NotInFlight, &approved)
        .await;
    let s = h.ok(intent("m-1", "a-1")).await;
    h.refused(cancel("m-1", "a-2", None), Refusal::AttemptMismatch, &s)
        .await;
    let u = h
        .ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    h.refused(
        cancel("m-1", "a-1", None),
        Refusal::UnknownNeedsReconciliation,
        &u,
    )
    .await;
    h.in_flight("m-2", "a-2").await;
    let f = h.ok(settle("m-2", "a-2", Settlement::Failed, None)).await;
    h.refused(cancel("m-2", "a-2", None), Refusal::NotInFlight, &f)
        .await;
}

#[tokio::test]
async fn reconcile_of_an_unknown_outcome_settles_it_and_clears_the_reason() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle(
        "m-1",
        "a-1",
        Settlement::OutcomeUnknown,
        Some(Reason::ExecutionTimeout),
    ))
    .await;
    let s = h.ok(reconcile("m-1", "a-1", true)).await;
    assert_eq!(
        s,
        state("m-1", L::Completed, true, Some("a-1"), Some(3), None)
    );

    h.in_flight("m-2", "a-2").await;
    h.ok(settle(
        "m-2",
        "a-2",
        Settlement::OutcomeUnknown,
        Some(Reason::ExecutionTimeout),
    ))
    .await;
    let s = h.ok(reconcile("m-2", "a-2", false)).await;
    assert_eq!(
        s,
        state("m-2", L::Approved, true, Some("a-2"), Some(6), None)
    );

    let d = h.recorder.deliveries();
    let got: Vec<_> = d
        .iter()
        .map(|d| {
            (
                d.outcome.mutation_id.as_str(),
                d.outcome.status,
                d.outcome.reason,
                d.revision,
            )
        })
        .collect();
    let timeout = Some(Reason::ExecutionTimeout);
    assert_eq!(
        got,
        vec![
            ("m-1", P::OutcomeUnknown, timeout, 2),
            ("m-1", P::Completed, None, 3),
            ("m-2", P::OutcomeUnknown, timeout, 5),
            ("m-2", P::NotExecuted, None, 6),
        ]
    );
}

#[tokio::test]
async fn reconcile_of_an_in_flight_entry_settles_it() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    let s = h.ok(reconcile("m-1", "a-1", true)).await;
    assert_eq!(
        s,
        state("m-1", L::Completed, true, Some("a-1"), Some(2), None)
    );
    assert_eq!(h.recorder.count(), 1);
}

#[tokio::test]
async fn reconcile_naming_another_attempt_is_refused() {
    let h = open().await;
    let s = h.in_flight("m-1", "a-1").await;
    h.refused(reconcile("m-1", "a-2", true), Refusal::AttemptMismatch, &s)
        .await;
    let u = h
        .ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    h.refused(reconcile("m-1", "a-2", true), Refusal::AttemptMismatch, &u)
        .await;
    h.refused(reconcile("m-1", "a-2", false), Refusal::AttemptMismatch, &u)
        .await;
}

#[tokio::test]
async fn reconcile_of_a_settled_or_unstarted_entry_is_refused() {
    let h = open().await;
    let approved = h.ok(approve("m-0")).await;
    h.refused(
        reconcile("m-0", "a-0", true),
        Refusal::AlreadySettled,
        &approved,
    )
    .await;
    h.in_flight("m-1", "a-1").await;
    let c = h
        .ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    h.refused(reconcile("m-1", "a-1", false), Refusal::AlreadySettled, &c)
        .await;
    h.in_flight("m-2", "a-2").await;
    let ne = h.ok(cancel("m-2", "a-2", None)).await;
    h.refused(reconcile("m-2", "a-2", true), Refusal::AlreadySettled, &ne)
        .await;
}

#[tokio::test]
async fn empty_evidence_is_not_evidence() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    let blank = |field: &str| {
        let mut e = evidence();
        match field {
            "evidence.source" => e.source = " ".into(),
            "evidence.reference" => e.reference = String::new(),
            _ => e.observed_at = String::new(),
        }
        e
    };
    for field in [
        "evidence.source",
        "evidence.reference",
        "evidence.observed_at",
    ] {
        let op = on(
            "m-1",
            Action::Reconcile {
                attempt_id: att("a-1"),
                completed: true,
                evidence: blank(field),
            },
        );
        h.invalid(op, field).await;
    }
}

#[tokio::test]
async fn fresh_attempt_only_from_not_executed_and_clears_the_reason() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(cancel("m-1", "a-1", Some(Reason::PreDispatchDeadline)))
        .await;
    let s = h.ok(fresh("m-1", "a-2")).await;
    assert_eq!(
        s,
        state("m-1", L::ExecutionStarted, true, Some("a-2"), Some(3), None)
    );
    assert_eq!(h.recorder.count(), 1, "only the cancellation was emitted");
    // The old attempt is no longer the current one.
    h.refused(
        settle("m-1", "a-1", Settlement::Completed, None),
        Refusal::AttemptMismatch,
        &s,
    )
    .await;
    let c = h
        .ok(settle("m-1", "a-2", Settlement::Completed, None))
        .await;
    assert_eq!(c.revision, Some(4));
}

#[tokio::test]
async fn fresh_attempt_is_refused_from_every_other_state() {
    let h = open().await;
    let approved = h.ok(approve("m-0")).await;
    h.refused(fresh("m-0", "a-9"), Refusal::NotNotExecuted, &approved)
        .await;
    let started = h.in_flight("m-1", "a-1").await;
    h.refused(
        fresh("m-1", "a-9"),
        Refusal::UnknownNeedsReconciliation,
        &started,
    )
    .await;
    let u = h
        .ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    h.refused(fresh("m-1", "a-9"), Refusal::UnknownNeedsReconciliation, &u)
        .await;
    h.in_flight("m-2", "a-2").await;
    let c = h
        .ok(settle("m-2", "a-2", Settlement::Completed, None))
        .await;
    h.refused(fresh("m-2", "a-9"), Refusal::NotNotExecuted, &c)
        .await;
    h.in_flight("m-3", "a-3").await;
    let f = h.ok(settle("m-3", "a-3", Settlement::Failed, None)).await;
    h.refused(fresh("m-3", "a-9"), Refusal::NotNotExecuted, &f)
        .await;
}

#[tokio::test]
async fn fresh_attempt_reusing_the_current_attempt_id_is_refused() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    let ne = h.ok(cancel("m-1", "a-1", None)).await;
    h.refused(fresh("m-1", "a-1"), Refusal::AttemptReused, &ne)
        .await;
}

#[tokio::test]
async fn fresh_attempt_reusing_an_earlier_attempt_id_is_refused() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(cancel("m-1", "a-1", None)).await;
    h.ok(fresh("m-1", "a-2")).await;
    let ne = h.ok(cancel("m-1", "a-2", None)).await;
    // A late report about the first attempt must never be taken for a new one.
    h.refused(fresh("m-1", "a-1"), Refusal::AttemptReused, &ne)
        .await;
    let s = h.ok(fresh("m-1", "a-3")).await;
    assert_eq!(s.revision, Some(5));
}

#[tokio::test]
async fn metadata_on_unpublished_approval_is_refused() {
    let h = open().await;
    let approved = h.ok(approve("m-1")).await;
    h.refused(
        attach(
            "m-1",
            meta("D-1", "https://app.example.com/d/D-1", "Overview"),
        ),
        Refusal::NotPublished,
        &approved,
    )
    .await;
}

#[tokio::test]
async fn metadata_after_settlement_takes_a_new_revision() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let s = h
        .ok(attach(
            "m-1",
            meta("D-1", "https://app.example.com/d/D-1?x=1", "Overview"),
        ))
        .await;
    assert_eq!(
        s,
        state("m-1", L::Completed, true, Some("a-1"), Some(3), None)
    );
    let d = h.recorder.deliveries();
    assert_eq!(d.len(), 2);
    assert_eq!(d[1].revision, 3);
    assert_eq!(d[1].outcome.status, P::Completed);
    assert_eq!(d[1].outcome.resource_id.as_deref(), Some("D-1"));
    assert_eq!(
        d[1].outcome.url.as_deref(),
        Some("https://app.example.com/d/D-1")
    );
    assert_eq!(d[1].outcome.title.as_deref(), Some("Overview"));
}

#[tokio::test]
async fn identical_metadata_attach_is_a_no_op() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let m = meta("D-1", "https://app.example.com/d/D-1", "Overview");
    let first = h.ok(attach("m-1", m.clone())).await;
    let before = h.snapshot().await;
    let again = h.ok(attach("m-1", m)).await;
    assert_eq!(again, first);
    assert_eq!(again.revision, Some(3));
    assert_eq!(h.snapshot().await, before);
    // A different value is a change again, and a missing field becomes null.
    let changed = h
        .ok(attach(
            "m-1",
            ledger::projection::HostMetadata {
                id: Some("D-1".into()),
                url: None,
                title: Some("Overview".into()),
            },
        ))
        .await;
    assert_eq!(changed.revision, Some(4));
    assert_eq!(h.recorder.deliveries()[2].outcome.url, None);
}

#[tokio::test]
async fn metadata_while_in_flight_is_a_visible_change_but_not_emitted_live() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    let s = h
        .ok(attach(
            "m-1",
            meta("D-1", "https://app.example.com/d/D-1", "Overview"),
        ))
        .await;
    assert_eq!(s.revision, Some(2));
    assert_eq!(s.ledger_status, L::ExecutionStarted);
    assert_eq!(h.recorder.count(), 0);
    let history = h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap();
    assert_eq!(history[0].status, P::OutcomeUnknown);
    assert_eq!(history[0].resource_id.as_deref(), Some("D-1"));
    // Settlement then carries the metadata.
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let d = h.recorder.deliveries();
    assert_eq!(
        (d[0].revision, d[0].outcome.resource_id.as_deref()),
        (3, Some("D-1"))
    );
}

#[tokio::test]
async fn metadata_on_a_settled_unknown_is_emitted_and_stays_unknown() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    let s = h
        .ok(attach(
            "m-1",
            meta("D-1", "https://app.example.com/d/D-1", "Overview"),
        ))
        .await;
    assert_eq!(s.ledger_status, L::OutcomeUnknown);
    let d = h.recorder.deliveries();
    assert_eq!((d[1].revision, d[1].outcome.status), (3, P::OutcomeUnknown));
}

#[tokio::test]
async fn writes_to_an_unknown_session_or_mutation_are_not_found() {
    let h = open().await;
    assert!(matches!(
        h.engine.apply(intent("m-1", "a-1")).await,
        Err(ledger::LedgerError::SessionNotFound)
    ));
    h.ok(approve("m-1")).await;
    assert!(matches!(
        h.engine.apply(intent("m-2", "a-1")).await,
        Err(ledger::LedgerError::MutationNotFound)
    ));
}

#[tokio::test]
async fn batch_is_one_transaction_where_a_refused_op_changes_nothing_and_the_others_apply() {
    let h = open().await;
    let results = h
        .engine
        .apply_batch(vec![
            approve("m-1"),
            intent("m-1", "a-1"),
            settle("m-1", "a-other", Settlement::Completed, None),
            approve("m-1"),
            settle(
                "m-1",
                "a-1",
                Settlement::Completed,
                Some(Reason::ExecutionTimeout),
            ),
            settle("m-1", "a-1", Settlement::Completed, None),
            approve("m-2"),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 7);
    assert_eq!(
        results[0].as_ref().unwrap(),
        &state("m-1", L::Approved, false, None, None, None)
    );
    assert_eq!(results[1].as_ref().unwrap().revision, Some(1));
    let in_flight = state("m-1", L::ExecutionStarted, true, Some("a-1"), Some(1), None);
    match &results[2] {
        Err(ledger::LedgerError::Refused { refusal, current }) => {
            assert_eq!(*refusal, Refusal::AttemptMismatch);
            assert_eq!(**current, in_flight);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        &results[3],
        Err(ledger::LedgerError::Refused {
            refusal: Refusal::AlreadyRecorded,
            ..
        })
    ));
    assert!(matches!(
        &results[4],
        Err(ledger::LedgerError::Invalid { .. })
    ));
    assert_eq!(
        results[5].as_ref().unwrap(),
        &state("m-1", L::Completed, true, Some("a-1"), Some(2), None)
    );
    assert_eq!(results[6].as_ref().unwrap().mutation_id, "m-2");
    assert_eq!(h.latest_revision().await, 2);
    let d = h.recorder.deliveries();
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].revision, d[0].outcome.status), (2, P::Completed));
}
