//! Operation history (docs/ledger.md "History"): every change of an entry is one row, written with the
//! change, naming its actor, the revision it took, the entry's state after it and the record as of it;
//! refusals and redeliveries leave no row; notes and `commissioned_after` are checked; rows go with their
//! session and are hidden once it expired.

use std::time::Duration;

use crate::common::*;
use ledger::command::Evidence;
use ledger::engine::{Action, Actor, Command, Settlement};
use ledger::ids::ToolName;
use ledger::projection::LedgerEntry;
use ledger::store::format_time;
use ledger::wire::{
    EstablishedBy, HistoryChange, HistoryEvidence, HistoryKind, LedgerStatus as L, MutationOutcome,
    OperationHistory, PublishedStatus as P, Reason, SettledBy,
};
use ledger::{LedgerError, Refusal};

pub(crate) fn staff() -> Actor {
    Actor::Staff("ada".into())
}

pub(crate) fn note(m: &str, text: &str) -> Command {
    on(m, Action::Note { text: text.into() })
}

pub(crate) fn approve_after(session: &str, m: &str, after: &str) -> Command {
    Command::new(
        sk(session),
        mid(m),
        Action::Approve {
            logical_turn_id: turn(TURN),
            tool: ToolName::parse(TOOL).unwrap(),
            commissioned_after: Some(mid(after)),
            traceparent: None,
        },
    )
}

/// The record of `m` with `status`, no metadata unless `title`, and `reason`.
fn record(m: &str, status: P, title: Option<&str>, reason: Option<Reason>) -> MutationOutcome {
    MutationOutcome {
        schema: "mutation_outcome/v1".into(),
        logical_turn_id: TURN.into(),
        mutation_id: m.into(),
        tool: TOOL.into(),
        status,
        resource_id: title.map(|_| "D-1".into()),
        url: title.map(|_| "https://app.example.com/d/D-1".into()),
        title: title.map(str::to_owned),
        reason,
    }
}

/// A row of the default actor-less shape, to fill in.
fn row(kind: HistoryKind, at: i64, revision: Option<i64>, actor: &str, status: L) -> HistoryChange {
    HistoryChange {
        kind,
        at: format_time(at),
        revision,
        actor: actor.into(),
        attempt_id: None,
        ledger_status: status,
        reason: None,
        evidence: None,
        note: None,
        outcome: None,
        deadline_at: None,
        settled_by: None,
        established_by: None,
    }
}

impl Harness {
    pub(crate) async fn history(&self, m: &str) -> OperationHistory {
        self.sessions
            .operation_history(&sk(SESSION), &mid(m))
            .await
            .unwrap()
    }

    pub(crate) async fn changes(&self, m: &str) -> Vec<HistoryChange> {
        self.history(m).await.changes
    }

    pub(crate) async fn staff_ok(&self, op: Command) {
        let what = format!("{op:?}");
        self.engine
            .apply_as(staff(), op)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    }
}

pub(crate) async fn history_rows(path: &str) -> i64 {
    raw_count(path, "SELECT COUNT(*) FROM history").await
}

#[tokio::test]
async fn every_kind_of_change_is_one_row_with_its_actor_revision_state_and_record() {
    let h = open().await;
    let second = Duration::from_secs(1);
    h.ok(approve("m-1")).await;
    h.clock.advance(second);
    h.ok(intent("m-1", "a-1")).await;
    h.clock.advance(second);
    h.ok(attach(
        "m-1",
        meta("D-1", "https://app.example.com/d/D-1", "One"),
    ))
    .await;
    h.clock.advance(second);
    h.ok(settle(
        "m-1",
        "a-1",
        Settlement::OutcomeUnknown,
        Some(Reason::ExecutionTimeout),
    ))
    .await;
    h.clock.advance(second);
    h.staff_ok(note("m-1", "called the provider")).await;
    h.clock.advance(second);
    h.staff_ok(reconcile("m-1", "a-1", false)).await;
    h.clock.advance(second);
    h.ok(fresh("m-1", "a-2")).await;
    h.clock.advance(second);
    h.ok(cancel("m-1", "a-2", Some(Reason::PreDispatchDeadline)))
        .await;

    let at = |s: i64| T0 + s * 1000;
    let unknown = record("m-1", P::OutcomeUnknown, Some("One"), None);
    let timed_out = record(
        "m-1",
        P::OutcomeUnknown,
        Some("One"),
        Some(Reason::ExecutionTimeout),
    );
    // The deadline an intent (and a fresh attempt) takes: the ledger's default, 900 s (docs/api.md
    // "Deadlines"); kept on every later row of that attempt.
    let deadline = |s: i64| format_time(at(s) + 900_000);
    let want = vec![
        row(HistoryKind::Approval, at(0), None, "host", L::Approved),
        HistoryChange {
            deadline_at: Some(deadline(1)),
            attempt_id: Some("a-1".into()),
            outcome: Some(record("m-1", P::OutcomeUnknown, None, None)),
            ..row(
                HistoryKind::Intent,
                at(1),
                Some(1),
                "host",
                L::ExecutionStarted,
            )
        },
        HistoryChange {
            deadline_at: Some(deadline(1)),
            attempt_id: Some("a-1".into()),
            outcome: Some(unknown),
            ..row(
                HistoryKind::Metadata,
                at(2),
                Some(2),
                "host",
                L::ExecutionStarted,
            )
        },
        HistoryChange {
            deadline_at: Some(deadline(1)),
            settled_by: Some(SettledBy::Host),
            attempt_id: Some("a-1".into()),
            reason: Some(Reason::ExecutionTimeout),
            outcome: Some(timed_out.clone()),
            ..row(
                HistoryKind::Settlement,
                at(3),
                Some(3),
                "host",
                L::OutcomeUnknown,
            )
        },
        // A note takes no revision; its record is the one as of the entry's revision then.
        HistoryChange {
            deadline_at: Some(deadline(1)),
            attempt_id: Some("a-1".into()),
            reason: Some(Reason::ExecutionTimeout),
            note: Some("called the provider".into()),
            outcome: Some(timed_out),
            ..row(
                HistoryKind::Note,
                at(4),
                None,
                "staff:ada",
                L::OutcomeUnknown,
            )
        },
        HistoryChange {
            deadline_at: Some(deadline(1)),
            established_by: Some(EstablishedBy::Staff),
            attempt_id: Some("a-1".into()),
            evidence: Some(HistoryEvidence {
                source: "github.issues".into(),
                reference: "issue #419".into(),
                observed_at: "2027-01-15T08:05:00Z".into(),
                provider_status: None,
            }),
            outcome: Some(record("m-1", P::NotExecuted, Some("One"), None)),
            ..row(
                HistoryKind::Reconciliation,
                at(5),
                Some(4),
                "staff:ada",
                L::Approved,
            )
        },
        HistoryChange {
            deadline_at: Some(deadline(6)),
            attempt_id: Some("a-2".into()),
            outcome: Some(record("m-1", P::OutcomeUnknown, Some("One"), None)),
            ..row(
                HistoryKind::Attempt,
                at(6),
                Some(5),
                "host",
                L::ExecutionStarted,
            )
        },
        HistoryChange {
            deadline_at: Some(deadline(6)),
            settled_by: Some(SettledBy::Host),
            attempt_id: Some("a-2".into()),
            reason: Some(Reason::PreDispatchDeadline),
            outcome: Some(record(
                "m-1",
                P::NotExecuted,
                Some("One"),
                Some(Reason::PreDispatchDeadline),
            )),
            ..row(
                HistoryKind::Cancellation,
                at(7),
                Some(6),
                "host",
                L::Approved,
            )
        },
    ];
    let history = h.history("m-1").await;
    assert_eq!(history.changes, want);
    assert_eq!(
        (
            history.session_key.as_str(),
            history.logical_turn_id.as_str(),
            history.mutation_id.as_str(),
            history.commissioned_after,
            history.commissioned.len()
        ),
        (SESSION, TURN, "m-1", None, 0)
    );
    assert_eq!(history.changes[0].at, "2027-01-15T08:00:00.000Z");
    // The last row's record is the one every other read publishes.
    assert_eq!(
        history.changes[7].outcome.as_ref(),
        h.sessions
            .mutation_outcomes(&sk(SESSION))
            .await
            .unwrap()
            .first()
    );
    // The serde form keeps every field, `null` where it does not apply.
    let json = serde_json::to_value(&history.changes[0]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"kind": "approval", "at": "2027-01-15T08:00:00.000Z", "revision": null,
            "actor": "host", "attempt_id": null, "ledger_status": "approved", "reason": null,
            "evidence": null, "note": null, "outcome": null, "deadline_at": null, "settled_by": null,
            "established_by": null})
    );
}

#[tokio::test]
async fn a_settlement_completed_or_failed_is_recorded_with_its_record() {
    let h = open().await;
    for (m, settlement, status, published) in [
        ("m-1", Settlement::Completed, L::Completed, P::Completed),
        ("m-2", Settlement::Failed, L::Failed, P::Failed),
    ] {
        h.in_flight(m, "a-1").await;
        h.ok(settle(m, "a-1", settlement, None)).await;
        let last = h.changes(m).await.pop().unwrap();
        assert_eq!(
            (
                last.kind,
                last.ledger_status,
                last.attempt_id.as_deref(),
                last.outcome.map(|o| o.status)
            ),
            (
                HistoryKind::Settlement,
                status,
                Some("a-1"),
                Some(published)
            )
        );
    }
    let revisions: Vec<_> = h.changes("m-2").await.iter().map(|c| c.revision).collect();
    assert_eq!(revisions, [None, Some(3), Some(4)]);
}

#[tokio::test]
async fn a_refusal_or_a_redelivery_adds_no_row() {
    let h = open().await;
    let running = h.in_flight("m-1", "a-1").await;
    h.ok(attach(
        "m-1",
        meta("D-1", "https://app.example.com/d/D-1", "One"),
    ))
    .await;
    let before = h.changes("m-1").await;
    assert_eq!(before.len(), 3);
    let rows = history_rows(&h.path).await;
    let running = ledger::wire::EntryState {
        revision: Some(2),
        ..running
    };
    h.refused(
        settle("m-1", "a-9", Settlement::Completed, None),
        Refusal::AttemptMismatch,
        &running,
    )
    .await;
    h.refused(intent("m-1", "a-1"), Refusal::AlreadyRecorded, &running)
        .await;
    h.refused(approve("m-1"), Refusal::AlreadyRecorded, &running)
        .await;
    // An attach identical to the stored metadata changes nothing.
    h.ok(attach(
        "m-1",
        meta("D-1", "https://app.example.com/d/D-1", "One"),
    ))
    .await;
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let settled = h.changes("m-1").await;
    assert_eq!(settled.len(), 4);
    let done = state("m-1", L::Completed, true, Some("a-1"), Some(3), None);
    h.refused(
        reconcile("m-1", "a-1", true),
        Refusal::AlreadySettled,
        &done,
    )
    .await;
    h.refused(
        settle("m-1", "a-1", Settlement::Completed, None),
        Refusal::NotInFlight,
        &done,
    )
    .await;
    h.invalid(
        settle(
            "m-1",
            "a-1",
            Settlement::Failed,
            Some(Reason::ExecutionTimeout),
        ),
        "reason",
    )
    .await;
    assert_eq!(h.changes("m-1").await, settled);
    assert_eq!(&settled[..3], &before[..]);
    assert_eq!(history_rows(&h.path).await, rows + 1);
}

#[tokio::test]
async fn a_note_is_1_to_4096_bytes_takes_no_revision_and_is_no_live_change() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    let before = h.changes("m-1").await;
    let sessions = h.sessions.list().await;
    h.invalid(note("m-1", ""), "text").await;
    h.invalid(note("m-1", &"n".repeat(4097)), "text").await;
    let err = h
        .engine
        .apply_as(staff(), note("m-1", &"é".repeat(2049)))
        .await;
    assert!(
        matches!(&err, Err(LedgerError::Invalid { field, .. }) if field == "text"),
        "{err:?}"
    );
    assert_eq!(h.changes("m-1").await, before);
    assert!(matches!(
        h.engine.apply_as(staff(), note("m-9", "x")).await,
        Err(LedgerError::MutationNotFound)
    ));

    h.clock.advance(Duration::from_secs(5));
    let longest = "é".repeat(2048);
    assert_eq!(longest.len(), 4096);
    let answer = h
        .engine
        .apply_as(staff(), note("m-1", &longest))
        .await
        .unwrap();
    assert_eq!(
        answer,
        state("m-1", L::OutcomeUnknown, true, Some("a-1"), Some(2), None)
    );
    h.staff_ok(note("m-1", "x")).await;
    let after = h.changes("m-1").await;
    assert_eq!(after.len(), before.len() + 2);
    let notes: Vec<_> = after[before.len()..]
        .iter()
        .map(|c| (c.kind, c.revision, c.actor.as_str(), c.note.as_deref()))
        .collect();
    assert_eq!(
        notes,
        [
            (HistoryKind::Note, None, "staff:ada", Some(longest.as_str())),
            (HistoryKind::Note, None, "staff:ada", Some("x")),
        ]
    );
    // No revision, no live event, not session activity.
    assert_eq!(h.latest_revision().await, 2);
    assert_eq!(h.recorder.count(), 1);
    assert_eq!(h.sessions.list().await, sessions);
}

#[tokio::test]
async fn commissioned_after_names_another_recorded_mutation_of_the_session() {
    let h = open().await;
    h.ok(approve("m-1")).await;
    h.ok(approve_in("s-2", TURN, "m-x")).await;
    for (mutation, after) in [("m-4", "m-4"), ("m-4", "m-9"), ("m-4", "m-x")] {
        let before = h.snapshot().await;
        let err = h
            .engine
            .apply(approve_after(SESSION, mutation, after))
            .await;
        assert!(
            matches!(err, Err(LedgerError::CommissionedAfterNotFound)),
            "{mutation} after {after}: {err:?}"
        );
        assert_eq!(
            h.snapshot().await,
            before,
            "{mutation} after {after} changed something"
        );
    }
    // A new session cannot name anything yet; nothing is created.
    let err = h.engine.apply(approve_after("s-3", "m-1", "m-1")).await;
    assert!(
        matches!(&err, Err(LedgerError::CommissionedAfterNotFound)),
        "{err:?}"
    );
    assert!(matches!(
        h.sessions.turns(&sk("s-3")).await,
        Err(LedgerError::SessionNotFound)
    ));

    h.ok(approve_after(SESSION, "m-2", "m-1")).await;
    // Approved in one batch: the second names the first.
    for r in h
        .engine
        .apply_batch(vec![
            approve_after(SESSION, "m-3", "m-1"),
            approve_after(SESSION, "m-5", "m-3"),
        ])
        .await
        .unwrap()
    {
        r.unwrap();
    }
    let m2 = state("m-2", L::Approved, false, None, None, None);
    h.refused(
        approve_after(SESSION, "m-2", "m-1"),
        Refusal::AlreadyRecorded,
        &m2,
    )
    .await;

    let first = h.history("m-1").await;
    assert_eq!(
        (first.commissioned_after, first.commissioned),
        (None, vec!["m-2".to_owned(), "m-3".to_owned()])
    );
    let second = h.history("m-2").await;
    assert_eq!(
        (second.commissioned_after.as_deref(), second.commissioned),
        (Some("m-1"), vec![])
    );
    let third = h.history("m-3").await;
    assert_eq!(
        (third.commissioned_after.as_deref(), third.commissioned),
        (Some("m-1"), vec!["m-5".to_owned()])
    );
    assert!(h
        .sessions
        .operation_history(&sk("s-2"), &mid("m-x"))
        .await
        .unwrap()
        .commissioned
        .is_empty());
    // The failed approves left no entry and no row.
    assert!(matches!(
        h.sessions
            .operation_history(&sk(SESSION), &mid("m-4"))
            .await,
        Err(LedgerError::MutationNotFound)
    ));
    assert_eq!(history_rows(&h.path).await, 5);
}

#[tokio::test]
async fn a_mixed_batch_writes_every_row_in_one_group_with_revisions_in_order() {
    let h = open().await;
    let results = h
        .engine
        .apply_batch_as(
            staff(),
            vec![
                approve("m-1"),
                intent("m-1", "a-1"),
                approve("m-2"),
                intent("m-2", "a-2"),
                settle("m-1", "a-9", Settlement::Completed, None),
                settle("m-1", "a-1", Settlement::Completed, None),
                note("m-2", "watching"),
                attach("m-1", meta("D-1", "https://app.example.com/d/D-1", "One")),
                settle("m-2", "a-2", Settlement::OutcomeUnknown, None),
            ],
        )
        .await
        .unwrap();
    assert!(matches!(
        results[4],
        Err(LedgerError::Refused {
            refusal: Refusal::AttemptMismatch,
            ..
        })
    ));
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 8);
    let summary = |changes: Vec<HistoryChange>| -> Vec<(HistoryKind, Option<i64>, L)> {
        changes
            .into_iter()
            .map(|c| {
                assert_eq!(
                    (c.actor.as_str(), c.at.as_str()),
                    ("staff:ada", "2027-01-15T08:00:00.000Z")
                );
                (c.kind, c.revision, c.ledger_status)
            })
            .collect()
    };
    assert_eq!(
        summary(h.changes("m-1").await),
        [
            (HistoryKind::Approval, None, L::Approved),
            (HistoryKind::Intent, Some(1), L::ExecutionStarted),
            (HistoryKind::Settlement, Some(3), L::Completed),
            (HistoryKind::Metadata, Some(4), L::Completed),
        ]
    );
    assert_eq!(
        summary(h.changes("m-2").await),
        [
            (HistoryKind::Approval, None, L::Approved),
            (HistoryKind::Intent, Some(2), L::ExecutionStarted),
            (HistoryKind::Note, None, L::ExecutionStarted),
            (HistoryKind::Settlement, Some(5), L::OutcomeUnknown),
        ]
    );
    assert_eq!(history_rows(&h.path).await, 8);
}

#[tokio::test]
async fn an_imported_entry_has_one_imported_row() {
    let h = open().await;
    h.engine
        .import_legacy(
            &sk(SESSION),
            &LedgerEntry {
                logical_turn_id: TURN.into(),
                mutation_id: "m-L".into(),
                tool: TOOL.into(),
                status: L::OutcomeUnknown,
                intent_recorded: true,
                reason: Some(Reason::ExecutionTimeout),
                metadata: Some(meta("D-1", "https://app.example.com/d/D-1", "One")),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        h.changes("m-L").await,
        [HistoryChange {
            reason: Some(Reason::ExecutionTimeout),
            outcome: Some(record(
                "m-L",
                P::OutcomeUnknown,
                Some("One"),
                Some(Reason::ExecutionTimeout)
            )),
            ..row(HistoryKind::Imported, T0, None, "host", L::OutcomeUnknown)
        }]
    );
    // A refused second import adds nothing.
    assert!(h
        .engine
        .import_legacy(
            &sk(SESSION),
            &LedgerEntry {
                logical_turn_id: TURN.into(),
                mutation_id: "m-L".into(),
                tool: TOOL.into(),
                status: L::Completed,
                intent_recorded: true,
                reason: None,
                metadata: None,
            },
        )
        .await
        .is_err());
    assert_eq!(history_rows(&h.path).await, 1);
}

/// A reconciliation with the provider's status (issue 40, "Status checks"): `completed` or `not_accepted`
/// is kept with the evidence, in the `reconciliations` table, on the history row and in the export's
/// histories; evidence without it has none (and serialises without the key).
#[tokio::test]
async fn a_reconciliations_provider_status_is_kept_in_its_history_row_and_the_export() {
    let h = open().await;
    let with = |m: &str, completed: bool, status: Option<&str>| {
        on(
            m,
            Action::Reconcile {
                attempt_id: att("a-1"),
                completed,
                evidence: Evidence {
                    provider_status: status.map(str::to_owned),
                    ..evidence()
                },
            },
        )
    };
    for m in ["m-1", "m-2", "m-3"] {
        h.in_flight(m, "a-1").await;
        h.ok(settle(m, "a-1", Settlement::OutcomeUnknown, None))
            .await;
    }
    h.ok(with("m-1", true, Some("completed"))).await;
    h.ok(with("m-2", false, Some("not_accepted"))).await;
    h.ok(with("m-3", true, None)).await;
    let evidence_of = |history: &OperationHistory| {
        let last = history.changes.last().unwrap();
        assert_eq!(last.kind, HistoryKind::Reconciliation);
        last.evidence.clone().unwrap()
    };
    let want = |status: Option<&str>| HistoryEvidence {
        source: "github.issues".into(),
        reference: "issue #419".into(),
        observed_at: "2027-01-15T08:05:00Z".into(),
        provider_status: status.map(str::to_owned),
    };
    assert_eq!(
        evidence_of(&h.history("m-1").await),
        want(Some("completed"))
    );
    assert_eq!(
        evidence_of(&h.history("m-2").await),
        want(Some("not_accepted"))
    );
    assert_eq!(evidence_of(&h.history("m-3").await), want(None));
    assert_eq!(
        serde_json::to_value(evidence_of(&h.history("m-1").await)).unwrap(),
        serde_json::json!({"source": "github.issues", "reference": "issue #419",
                           "observed_at": "2027-01-15T08:05:00Z", "provider_status": "completed"})
    );
    assert_eq!(
        serde_json::to_value(evidence_of(&h.history("m-3").await)).unwrap(),
        serde_json::json!({"source": "github.issues", "reference": "issue #419",
                           "observed_at": "2027-01-15T08:05:00Z"})
    );
    // The export's histories carry it as the history API does.
    let mut chunks = h.sessions.operation_histories(&sk(SESSION)).await.unwrap();
    let mut exported = Vec::new();
    while let Some(chunk) = chunks.next_chunk().await.unwrap() {
        exported.extend(chunk);
    }
    let statuses: Vec<(String, Option<String>)> = exported
        .iter()
        .map(|o| (o.mutation_id.clone(), evidence_of(o).provider_status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("m-1".to_owned(), Some("completed".to_owned())),
            ("m-2".to_owned(), Some("not_accepted".to_owned())),
            ("m-3".to_owned(), None),
        ]
    );
    // Stored with the evidence, and on the history rows.
    for (table, status, n) in [
        ("reconciliations", "completed", 1),
        ("reconciliations", "not_accepted", 1),
        ("history", "completed", 1),
        ("history", "not_accepted", 1),
    ] {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE provider_status = '{status}'");
        assert_eq!(raw_count(&h.path, &sql).await, n, "{sql}");
    }
    assert_eq!(
        raw_count(
            &h.path,
            "SELECT COUNT(*) FROM reconciliations WHERE provider_status IS NULL"
        )
        .await,
        1
    );
}

/// A provider status that contradicts `completed`, or is not conclusive, is refused by the ledger itself
/// (field `evidence.provider_status`, as the host API refuses it) and changes nothing.
#[tokio::test]
async fn a_provider_status_contradicting_completed_is_refused() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    let rows = history_rows(&h.path).await;
    for (completed, status) in [
        (true, "not_accepted"),
        (false, "completed"),
        (true, "pending"),
        (false, ""),
    ] {
        let op = on(
            "m-1",
            Action::Reconcile {
                attempt_id: att("a-1"),
                completed,
                evidence: Evidence {
                    provider_status: Some(status.into()),
                    ..evidence()
                },
            },
        );
        h.invalid(op, "evidence.provider_status").await;
    }
    assert_eq!(history_rows(&h.path).await, rows);
    assert_eq!(
        raw_count(&h.path, "SELECT COUNT(*) FROM reconciliations").await,
        0
    );
}
