//! The OpenTelemetry outbox (docs/operations.md "OpenTelemetry"): while the export is on, a settlement or
//! cancellation after intent queues one `write` row, a reconciliation one `reconcile` row, in the
//! transaction of the change; off, nothing; a refused change nothing; a taken row is leased; an
//! exported row is gone; the bound drops the oldest.

use std::time::Duration;

use crate::common::*;
use ledger::command::Settlement;
use ledger::otel::OtelItem;
use ledger::Clock;

async fn all(h: &Harness) -> Vec<OtelItem> {
    // Far in the future: every row is due; a long lease.
    h.clock.advance(Duration::from_secs(0));
    h.ledger.otel().take_due(1000, 1).await.unwrap()
}

#[tokio::test]
async fn off_by_default_nothing_is_queued() {
    let h = open().await;
    h.in_flight("m-1", "a").await;
    h.ok(settle("m-1", "a", Settlement::Completed, None)).await;
    assert_eq!(h.ledger.otel().pending().await.unwrap(), 0);
}

#[tokio::test]
async fn settlements_and_reconciliations_queue_their_spans_in_the_change() {
    let h = open().await;
    let o = h.ledger.otel();
    o.set_enabled(true).await.unwrap();
    // Nothing for approvals and intents.
    h.in_flight("m-ok", "a").await;
    assert_eq!(o.pending().await.unwrap(), 0);
    let intent_at = h.clock.now_ms();
    h.clock.advance(Duration::from_millis(1500));
    h.ok(settle("m-ok", "a", Settlement::Completed, None)).await;

    h.in_flight("m-u", "a").await;
    h.ok(settle("m-u", "a", Settlement::OutcomeUnknown, None))
        .await;
    // A refused change (a late settle on an unknown) writes nothing.
    assert!(h
        .engine
        .apply(settle("m-u", "a", Settlement::Completed, None))
        .await
        .is_err());
    h.clock.advance(Duration::from_secs(42));
    h.ok(reconcile("m-u", "a", true)).await;
    assert_eq!(o.pending().await.unwrap(), 3);

    let rows = all(&h).await;
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.span.as_str(),
                r.mutation_id.as_str(),
                r.ledger_status.as_str(),
                r.actor.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("write", "m-ok", "completed", "host"),
            ("write", "m-u", "outcome_unknown", "host"),
            ("reconcile", "m-u", "completed", "host"),
        ]
    );
    let ok = &rows[0];
    assert_eq!(ok.started_at, intent_at);
    assert_eq!(ok.at, intent_at + 1500);
    assert_eq!(
        (
            ok.session_key.as_str(),
            ok.logical_turn_id.as_str(),
            ok.tool.as_str()
        ),
        (SESSION, TURN, TOOL)
    );
    assert_eq!(ok.attempt_id.as_deref(), Some("a"));
    assert!(ok.revision.is_some());
    assert!(rows[2].source.is_some() && rows[2].reference.is_some());

    // Taken rows are leased: not taken again until the lease ends.
    assert!(o.take_due(1000, 60_000).await.unwrap().is_empty());
    h.clock.advance(Duration::from_millis(10));
    let again = o.take_due(1000, 60_000).await.unwrap();
    assert_eq!(again.len(), 3);
    assert!(o.take_due(1000, 60_000).await.unwrap().is_empty());

    // A failure puts them back at their next attempt; an export deletes them.
    let ids: Vec<i64> = again.iter().map(|r| r.id).collect();
    let next = o.now_ms() + 5_000;
    o.attempt_failed(&ids, next, "connection refused")
        .await
        .unwrap();
    assert!(o.take_due(1000, 60_000).await.unwrap().is_empty());
    h.clock.advance(Duration::from_secs(5));
    let retried = o.take_due(1000, 60_000).await.unwrap();
    assert_eq!(retried.len(), 3);
    assert!(retried.iter().all(|r| r.attempts == 1));
    o.exported(&ids).await.unwrap();
    assert_eq!(o.pending().await.unwrap(), 0);

    // Turned off: nothing more is queued.
    o.set_enabled(false).await.unwrap();
    h.in_flight("m-off", "a").await;
    h.ok(settle("m-off", "a", Settlement::Failed, None)).await;
    assert_eq!(o.pending().await.unwrap(), 0);
}

#[tokio::test]
async fn the_bound_drops_the_oldest_and_old_rows_are_given_up() {
    let h = open().await;
    let o = h.ledger.otel();
    o.set_enabled(true).await.unwrap();
    for i in 0..5 {
        let m = format!("m-{i}");
        h.in_flight(&m, "a").await;
        h.ok(settle(&m, "a", Settlement::Completed, None)).await;
    }
    assert_eq!(o.drop_over_bound(10).await.unwrap(), 0);
    assert_eq!(o.drop_over_bound(2).await.unwrap(), 3);
    let left: Vec<_> = all(&h).await.into_iter().map(|r| r.mutation_id).collect();
    assert_eq!(left, vec!["m-3", "m-4"]);
    h.clock.advance(Duration::from_secs(10));
    assert_eq!(o.give_up_before(o.now_ms()).await.unwrap(), 2);
    assert_eq!(o.pending().await.unwrap(), 0);
}

/// Two instances on one database take due rows at once: each row is taken by one of them (on Postgres
/// `FOR UPDATE SKIP LOCKED` and the lease; on SQLite the write lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_never_take_the_same_row() {
    let a = open().await;
    let b = reopen(
        &a.path,
        std::sync::Arc::new(Recorder::default()),
        a.clock.clone(),
    )
    .await;
    a.ledger.otel().set_enabled(true).await.unwrap();
    for i in 0..60 {
        let m = format!("m-{i}");
        a.in_flight(&m, "a").await;
        a.ok(settle(&m, "a", Settlement::Completed, None)).await;
    }
    let mut tasks = Vec::new();
    for o in [a.ledger.otel(), b.otel()] {
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            loop {
                let got = o.take_due(7, 60_000).await.unwrap();
                if got.is_empty() {
                    return ids;
                }
                ids.extend(got.into_iter().map(|r| r.id));
            }
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.extend(t.await.unwrap());
    }
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!((n, ids.len()), (60, 60));
}

/// The host's `traceparent` given at approve is stored with the entry and copied by the trigger into
/// every row of the entry (its `write` and its `reconcile`); without one, `None`.
#[tokio::test]
async fn the_approves_traceparent_is_copied_into_the_entrys_rows() {
    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let h = open().await;
    h.ledger.otel().set_enabled(true).await.unwrap();
    let mut traced = approve("m-t");
    if let ledger::Action::Approve { traceparent, .. } = &mut traced.action {
        *traceparent = Some(ledger::otel::Traceparent::parse(TP).unwrap());
    }
    h.ok(traced).await;
    h.ok(intent("m-t", "a")).await;
    h.ok(settle("m-t", "a", Settlement::OutcomeUnknown, None))
        .await;
    h.ok(reconcile("m-t", "a", true)).await;
    h.in_flight("m-p", "a").await;
    h.ok(settle("m-p", "a", Settlement::Completed, None)).await;
    let got: Vec<_> = all(&h)
        .await
        .into_iter()
        .map(|r| (r.span, r.mutation_id, r.traceparent))
        .collect();
    assert_eq!(
        got,
        vec![
            ("write".into(), "m-t".into(), Some(TP.into())),
            ("reconcile".into(), "m-t".into(), Some(TP.into())),
            ("write".into(), "m-p".into(), None),
        ]
    );
}

/// A write whose host died mid-write (docs/api.md "Deadlines"): the ledger's own settlement at the
/// deadline queues its span like a host's, `outcome_unknown` with `execution_timeout`, actor `ledger`.
#[tokio::test]
async fn a_settlement_by_the_ledger_at_the_deadline_queues_the_span() {
    let h = open().await;
    let o = h.ledger.otel();
    o.set_enabled(true).await.unwrap();
    h.in_flight("m-dead", "a").await;
    let intent_at = h.clock.now_ms();
    h.clock.advance(Duration::from_secs(900));
    assert_eq!(h.engine.settle_overdue(h.clock.now_ms()).await.unwrap(), 1);
    let rows = all(&h).await;
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.span.as_str(),
                r.mutation_id.as_str(),
                r.ledger_status.as_str(),
                r.reason.as_deref(),
                r.actor.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![(
            "write",
            "m-dead",
            "outcome_unknown",
            Some("execution_timeout"),
            "ledger"
        )]
    );
    assert_eq!(
        (rows[0].started_at, rows[0].at),
        (intent_at, intent_at + 900_000)
    );
}
