//! Deadlines (docs/api.md "Deadlines"): every intent carries one, a host extends it while it works, and
//! past it the ledger settles the entry `outcome_unknown` with `execution_timeout` itself (a revision, a
//! live event, a history row by actor `ledger`); the original report is still taken once after that. On
//! both backends (`OUTCOMES_TEST_POSTGRES`), with the harness's manual clock.

use std::time::Duration;

use crate::common::*;
use ledger::command::{Action, Actor, Settlement};
use ledger::sessions::{UnknownsSort, UnknownsSortBy, UnknownsState};
use ledger::store::format_time;
use ledger::wire::{
    EstablishedBy, HistoryKind, LedgerStatus as L, PublishedStatus as P, Reason, SettledBy,
    TurnEntry,
};
use ledger::{LedgerError, Refusal, UnknownsQuery};

const SECOND: i64 = 1000;

fn intent_for(m: &str, a: &str, deadline_secs: u32) -> ledger::Command {
    on(
        m,
        Action::RecordIntent {
            attempt_id: att(a),
            deadline_secs: Some(deadline_secs),
        },
    )
}

fn extend(m: &str, a: &str, deadline_secs: u32) -> ledger::Command {
    on(
        m,
        Action::ExtendDeadline {
            attempt_id: att(a),
            deadline_secs,
        },
    )
}

impl Harness {
    async fn entry(&self, m: &str) -> TurnEntry {
        self.sessions
            .turn_entries(&sk(SESSION), &turn(TURN))
            .await
            .unwrap()
            .entries
            .into_iter()
            .find(|e| e.outcome.mutation_id == m)
            .unwrap()
    }

    fn advance_ms(&self, ms: i64) {
        self.clock.advance(Duration::from_millis(ms as u64));
    }

    fn now(&self) -> i64 {
        use ledger::Clock;
        self.clock.now_ms()
    }
}

#[tokio::test]
async fn an_intent_takes_its_deadline_or_the_default_and_a_fresh_attempt_its_own() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(approve("m-2")).await;
    h.ok(intent_for("m-2", "a-1", 30)).await;
    assert_eq!(
        h.entry("m-1").await.deadline_at,
        Some(format_time(T0 + 900 * SECOND))
    );
    assert_eq!(
        h.entry("m-2").await.deadline_at,
        Some(format_time(T0 + 30 * SECOND))
    );
    // Cancelled (not executed), then a fresh attempt with a deadline of its own.
    h.ok(cancel("m-2", "a-1", None)).await;
    h.advance_ms(5 * SECOND);
    h.ok(on(
        "m-2",
        Action::FreshAttempt {
            attempt_id: att("a-2"),
            deadline_secs: Some(60),
        },
    ))
    .await;
    let e = h.entry("m-2").await;
    assert_eq!(e.deadline_at, Some(format_time(T0 + 65 * SECOND)));
    assert_eq!((e.ledger_status, e.settled_by), (L::ExecutionStarted, None));
    // Out of range: 422 naming deadline_secs, nothing changes.
    h.ok(approve("m-3")).await;
    h.invalid(intent_for("m-3", "a-1", 0), "deadline_secs")
        .await;
    h.invalid(intent_for("m-3", "a-1", 604_801), "deadline_secs")
        .await;
}

#[tokio::test]
async fn an_extension_moves_the_deadline_later_only_without_a_revision_an_event_or_a_history_row() {
    let h = open().await;
    h.ok(approve("m-1")).await;
    let started = h.ok(intent_for("m-1", "a-1", 30)).await;
    h.advance_ms(10 * SECOND);
    let before = h.snapshot().await;
    let history = h.changes("m-1").await.len();
    let extended = h.ok(extend("m-1", "a-1", 60)).await;
    assert_eq!(
        extended, started,
        "the answer is the entry's unchanged state"
    );
    assert_eq!(
        h.entry("m-1").await.deadline_at,
        Some(format_time(T0 + 70 * SECOND))
    );
    // Never earlier than it was.
    h.ok(extend("m-1", "a-1", 5)).await;
    assert_eq!(
        h.entry("m-1").await.deadline_at,
        Some(format_time(T0 + 70 * SECOND))
    );
    let mut after = h.snapshot().await;
    // Only the deadline and the session's activity changed (a host still working is activity): the
    // same entries, records, deliveries and hints.
    for e in after.entries.iter_mut().flat_map(|t| t.entries.iter_mut()) {
        e.deadline_at = Some(format_time(T0 + 30 * SECOND));
    }
    assert_eq!(
        after.sessions.sessions[0].last_activity,
        format_time(T0 + 10 * SECOND)
    );
    after.sessions.sessions[0].last_activity = before.sessions.sessions[0].last_activity.clone();
    assert_eq!(after, before);
    assert_eq!(h.changes("m-1").await.len(), history);
    // Another attempt, an entry not in flight: refused as a settle is.
    let current = state("m-1", L::ExecutionStarted, true, Some("a-1"), Some(1), None);
    h.refused(extend("m-1", "a-2", 60), Refusal::AttemptMismatch, &current)
        .await;
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let done = state("m-1", L::Completed, true, Some("a-1"), Some(2), None);
    h.refused(extend("m-1", "a-1", 60), Refusal::NotInFlight, &done)
        .await;
}

#[tokio::test]
async fn past_its_deadline_the_ledger_settles_the_entry_unknown_once_as_actor_ledger() {
    let h = open().await;
    h.ok(approve("m-1")).await;
    h.ok(intent_for("m-1", "a-1", 30)).await;
    h.ok(approve("m-2")).await;
    h.ok(intent_for("m-2", "a-1", 600)).await;
    h.advance_ms(30 * SECOND - 1);
    assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 0);
    assert_eq!(h.entry("m-1").await.ledger_status, L::ExecutionStarted);
    let deliveries = h.recorder.count();
    h.advance_ms(1);
    assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 1);
    let e = h.entry("m-1").await;
    assert_eq!(
        (
            e.ledger_status,
            e.outcome.status,
            e.outcome.reason,
            e.settled_by,
            e.mutation_revision
        ),
        (
            L::OutcomeUnknown,
            P::OutcomeUnknown,
            Some(Reason::ExecutionTimeout),
            Some(SettledBy::Ledger),
            Some(3)
        )
    );
    assert_eq!(e.settled_at, Some(format_time(T0 + 30 * SECOND)));
    // One live event, with the settled record.
    let delivered = h.recorder.deliveries();
    assert_eq!(delivered.len(), deliveries + 1);
    let last = delivered.last().unwrap();
    assert_eq!(
        (
            last.outcome.mutation_id.as_str(),
            last.outcome.reason,
            last.revision
        ),
        ("m-1", Some(Reason::ExecutionTimeout), 3)
    );
    // One history row by the ledger.
    let change = h.changes("m-1").await.pop().unwrap();
    assert_eq!(
        (
            change.kind,
            change.actor.as_str(),
            change.settled_by,
            change.revision
        ),
        (
            HistoryKind::Settlement,
            "ledger",
            Some(SettledBy::Ledger),
            Some(3)
        )
    );
    // Swept again: nothing more; m-2 still runs.
    assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 0);
    assert_eq!(h.changes("m-1").await.len(), 3);
    assert_eq!(h.entry("m-2").await.ledger_status, L::ExecutionStarted);
}

#[tokio::test]
async fn an_extension_before_the_sweep_keeps_the_write_in_flight() {
    let h = open().await;
    h.ok(approve("m-1")).await;
    h.ok(intent_for("m-1", "a-1", 3)).await;
    for _ in 0..5 {
        h.advance_ms(SECOND);
        h.ok(extend("m-1", "a-1", 3)).await;
        assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 0);
    }
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let e = h.entry("m-1").await;
    assert_eq!(
        (e.ledger_status, e.settled_by),
        (L::Completed, Some(SettledBy::Host))
    );
}

#[tokio::test]
async fn the_original_report_is_taken_once_after_the_ledgers_settlement_and_not_after_a_hosts() {
    let h = open().await;
    for m in ["m-1", "m-2", "m-3"] {
        h.ok(approve(m)).await;
        h.ok(intent_for(m, "a-1", 10)).await;
    }
    h.advance_ms(10 * SECOND);
    assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 3);
    // A late `failed` ends failed, settled by the host, the reason cleared.
    let failed = h.ok(settle("m-1", "a-1", Settlement::Failed, None)).await;
    assert_eq!(
        failed,
        state("m-1", L::Failed, true, Some("a-1"), Some(7), None)
    );
    let e = h.entry("m-1").await;
    assert_eq!(
        (e.outcome.reason, e.settled_by),
        (None, Some(SettledBy::Host))
    );
    let row = h.changes("m-1").await.pop().unwrap();
    assert_eq!(
        (row.actor.as_str(), row.settled_by),
        ("host", Some(SettledBy::Host))
    );
    // Once: a second report is refused, and so is a report from another attempt.
    h.refused(
        settle("m-1", "a-1", Settlement::Completed, None),
        Refusal::NotInFlight,
        &failed,
    )
    .await;
    let m2 = state(
        "m-2",
        L::OutcomeUnknown,
        true,
        Some("a-1"),
        Some(5),
        Some(Reason::ExecutionTimeout),
    );
    h.refused(
        settle("m-2", "a-2", Settlement::Completed, None),
        Refusal::AttemptMismatch,
        &m2,
    )
    .await;
    // A late `outcome_unknown` is the host's own unknown now: only reconciliation changes it.
    let unknown = h
        .ok(settle("m-2", "a-1", Settlement::OutcomeUnknown, None))
        .await;
    h.refused(
        settle("m-2", "a-1", Settlement::Completed, None),
        Refusal::UnknownNeedsReconciliation,
        &unknown,
    )
    .await;
    // A late cancellation: not executed.
    let cancelled = h.ok(cancel("m-3", "a-1", None)).await;
    assert_eq!(cancelled.ledger_status, L::Approved);
    assert_eq!(h.entry("m-3").await.outcome.status, P::NotExecuted);
    // Reconciliation names who established it.
    h.ok(reconcile("m-2", "a-1", true)).await;
    let e = h.entry("m-2").await;
    assert_eq!(
        (e.ledger_status, e.settled_by, e.established_by),
        (L::Completed, None, Some(EstablishedBy::Host))
    );
}

#[tokio::test]
async fn only_the_ledger_settles_at_a_deadline() {
    let h = open().await;
    h.ok(approve("m-1")).await;
    h.ok(intent_for("m-1", "a-1", 1)).await;
    h.advance_ms(2 * SECOND);
    let expire = || {
        on(
            "m-1",
            Action::Expire {
                attempt_id: att("a-1"),
            },
        )
    };
    h.invalid(expire(), "op").await;
    let staff = h
        .engine
        .apply_as(Actor::Staff("ada".into()), expire())
        .await;
    assert!(
        matches!(&staff, Err(LedgerError::Invalid { field, .. }) if field == "op"),
        "{staff:?}"
    );
    // The ledger's own, before the deadline: refused, nothing changes.
    h.ok(extend("m-1", "a-1", 60)).await;
    let early = h.engine.apply_as(Actor::Ledger, expire()).await;
    assert!(
        matches!(
            early,
            Err(LedgerError::Refused {
                refusal: Refusal::DeadlineNotPassed,
                ..
            })
        ),
        "{early:?}"
    );
    assert_eq!(h.entry("m-1").await.ledger_status, L::ExecutionStarted);
}

#[tokio::test]
async fn a_deadline_that_passed_while_no_server_ran_moves_to_the_start_plus_a_minute() {
    let h = open().await;
    h.ok(approve("m-1")).await;
    h.ok(intent_for("m-1", "a-1", 30)).await;
    h.ok(approve("m-2")).await;
    h.ok(intent_for("m-2", "a-1", 3600)).await;
    // The ledger was down for ten minutes.
    h.advance_ms(600 * SECOND);
    let start = h.now();
    let moved = h
        .engine
        .postpone_passed_deadlines(start, ledger::RESTART_GRACE)
        .await
        .unwrap();
    assert_eq!(moved, 1);
    assert_eq!(
        h.entry("m-1").await.deadline_at,
        Some(format_time(start + 60 * SECOND))
    );
    assert_eq!(
        h.entry("m-2").await.deadline_at,
        Some(format_time(T0 + 3600 * SECOND))
    );
    assert_eq!(h.engine.settle_overdue(start).await.unwrap(), 0);
    h.advance_ms(59 * SECOND);
    assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 0);
    h.advance_ms(SECOND);
    assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 1);
}

#[tokio::test]
async fn the_queue_lists_settled_unknowns_writes_in_flight_or_both_and_in_flight_by_deadline() {
    let h = open().await;
    for (m, secs) in [("m-1", 300), ("m-2", 60), ("m-3", 10)] {
        h.ok(approve(m)).await;
        h.ok(intent_for(m, "a-1", secs)).await;
    }
    h.advance_ms(10 * SECOND);
    assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 1);
    let ids = |state: UnknownsState, sort: UnknownsSort| {
        let sessions = h.sessions.clone();
        async move {
            let (page, _) = sessions
                .open_unknowns(&UnknownsQuery {
                    state,
                    sort,
                    ..Default::default()
                })
                .await
                .unwrap();
            (
                page.matches
                    .iter()
                    .map(|m| m.entry.outcome.mutation_id.clone())
                    .collect::<Vec<_>>(),
                page.total,
            )
        }
    };
    let oldest = UnknownsSort::OLDEST_FIRST;
    let by_deadline = UnknownsSort {
        by: UnknownsSortBy::Deadline,
        descending: false,
    };
    assert_eq!(
        ids(UnknownsState::All, oldest).await,
        (vec!["m-1".to_owned(), "m-2".into(), "m-3".into()], 3)
    );
    assert_eq!(
        ids(UnknownsState::Unknown, oldest).await,
        (vec!["m-3".to_owned()], 1)
    );
    assert_eq!(
        ids(UnknownsState::InFlight, by_deadline).await,
        (vec!["m-2".to_owned(), "m-1".into()], 2)
    );
    // Paged by deadline, one at a time: the cursor goes on after the previous deadline.
    let (first, after) = h
        .sessions
        .open_unknowns(&UnknownsQuery {
            state: UnknownsState::InFlight,
            sort: by_deadline,
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(first.matches[0].entry.outcome.mutation_id, "m-2");
    let (second, _) = h
        .sessions
        .open_unknowns(&UnknownsQuery {
            state: UnknownsState::InFlight,
            sort: by_deadline,
            limit: 1,
            after,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(second.matches[0].entry.outcome.mutation_id, "m-1");
}

/// An overdue write in an expired session (refused by the ledger until the purge deletes it) takes no
/// place in the sweep's batch: live sessions' deadlines still fire (found by the fresh tester: 500 such
/// writes stopped the sweep for everyone). An extension is session activity, so a host that keeps a
/// write alive keeps its session live.
#[tokio::test]
async fn writes_of_expired_sessions_do_not_hold_up_the_sweep_and_an_extension_keeps_a_session_live()
{
    let h = open().await;
    let batch = ledger::engine::OVERDUE_BATCH as usize;
    let ops: Vec<ledger::Command> = (0..batch + 5)
        .flat_map(|i| {
            let m = format!("old-{i}");
            [
                approve_in("s-old", TURN, &m),
                in_session(
                    "s-old",
                    &m,
                    Action::RecordIntent {
                        attempt_id: att("a-1"),
                        deadline_secs: Some(10),
                    },
                ),
            ]
        })
        .collect();
    for r in h.engine.apply_batch(ops).await.unwrap() {
        r.unwrap();
    }
    // A session whose host extends its write past the time to live (1 h).
    h.ok(approve_in("s-kept", TURN, "kept")).await;
    h.ok(in_session(
        "s-kept",
        "kept",
        Action::RecordIntent {
            attempt_id: att("a-1"),
            deadline_secs: Some(1200),
        },
    ))
    .await;
    for _ in 0..4 {
        h.advance_ms(1000 * SECOND);
        h.ok(in_session(
            "s-kept",
            "kept",
            Action::ExtendDeadline {
                attempt_id: att("a-1"),
                deadline_secs: 1200,
            },
        ))
        .await;
    }
    // s-old expired (no write for 4,000 s > 3,600 s); a live session's write is overdue now.
    h.ok(approve("m-1")).await;
    h.ok(intent_for("m-1", "a-1", 1)).await;
    h.advance_ms(SECOND);
    assert_eq!(h.engine.settle_overdue(h.now()).await.unwrap(), 1);
    assert_eq!(h.entry("m-1").await.settled_by, Some(SettledBy::Ledger));
    // The extended write's session is live, its write still in flight.
    let kept = h
        .sessions
        .turn_entries(&sk("s-kept"), &turn(TURN))
        .await
        .unwrap();
    assert_eq!(kept.entries[0].ledger_status, L::ExecutionStarted);
}
