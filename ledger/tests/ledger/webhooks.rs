//! Webhooks' outbox (docs/api.md "Webhooks"): a row per subscribed endpoint is written in the transaction
//! of the change that makes an entry `outcome_unknown` or reconciles one, never for a refused change; stale
//! alerts are queued once per operation and threshold; a taken row is leased; 410 disables an endpoint.

use std::time::Duration;

use crate::common::*;
use ledger::command::Settlement;
use ledger::webhooks::check_events;
use ledger::Clock;

const ALL: &str = "outcome.unknown,outcome.unknown_stale,outcome.resolved";

#[tokio::test]
async fn events_lists_are_checked() {
    assert_eq!(
        check_events("outcome.resolved, outcome.unknown").unwrap(),
        "outcome.unknown,outcome.resolved"
    );
    let e = check_events("outcome.unknown,outcome.done").unwrap_err();
    assert!(format!("{e}").contains("outcome.done"), "{e}");
}

#[tokio::test]
async fn an_unknown_settle_and_a_reconciliation_queue_one_row_per_subscribed_endpoint() {
    let h = open().await;
    let w = h.ledger.webhooks();
    let all = w
        .add_endpoint("https://a.example/hook", ALL, "whsec_x")
        .await
        .unwrap();
    let resolved_only = w
        .add_endpoint("https://b.example/hook", "outcome.resolved", "whsec_y")
        .await
        .unwrap();
    // Nothing for approvals, intents, completions.
    h.in_flight("m-ok", "a").await;
    h.ok(settle("m-ok", "a", Settlement::Completed, None)).await;
    assert!(w.outbox().await.unwrap().is_empty());

    h.in_flight("m-1", "a").await;
    h.ok(settle("m-1", "a", Settlement::OutcomeUnknown, None))
        .await;
    let rows = w.outbox().await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (
            rows[0].endpoint_id,
            rows[0].event.as_str(),
            rows[0].mutation_id.as_str()
        ),
        (all, "outcome.unknown", "m-1")
    );
    assert_eq!(rows[0].status, "outcome_unknown");
    assert!(rows[0].msg_id.starts_with("msg_") && rows[0].msg_id.len() > 20);

    // A refused change (a late settle on an unknown) writes nothing.
    assert!(h
        .engine
        .apply(settle("m-1", "a", Settlement::Completed, None))
        .await
        .is_err());
    assert_eq!(w.outbox().await.unwrap().len(), 1);

    h.clock.advance(Duration::from_secs(42));
    h.ok(reconcile("m-1", "a", true)).await;
    let rows = w.outbox().await.unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    let resolved: Vec<_> = rows
        .iter()
        .filter(|r| r.event == "outcome.resolved")
        .collect();
    assert_eq!(resolved.len(), 2);
    assert!(resolved.iter().all(|r| r.status == "completed"));
    assert!(resolved.iter().any(|r| r.endpoint_id == resolved_only));
    let msg_ids: std::collections::BTreeSet<_> = rows.iter().map(|r| &r.msg_id).collect();
    assert_eq!(msg_ids.len(), 3, "every delivery has its own webhook-id");

    let items = w.take_due(10, 30_000).await.unwrap();
    let item = items
        .iter()
        .find(|i| i.event == "outcome.resolved" && i.endpoint_id == all)
        .unwrap();
    assert_eq!(item.age_secs, 42);
    assert_eq!(item.session_key, SESSION);
    assert_eq!(item.logical_turn_id, TURN);
    assert_eq!(item.tool, TOOL);
}

#[tokio::test]
async fn stale_alerts_are_queued_once_per_operation_and_threshold() {
    let h = open().await;
    let w = h.ledger.webhooks();
    w.add_endpoint("https://a.example/hook", ALL, "whsec_x")
        .await
        .unwrap();
    w.add_endpoint("https://b.example/hook", "outcome.unknown", "whsec_y")
        .await
        .unwrap();
    h.in_flight("m-1", "a").await;
    h.ok(settle("m-1", "a", Settlement::OutcomeUnknown, None))
        .await;
    h.clock.advance(Duration::from_secs(5));
    h.in_flight("m-2", "a").await;
    h.ok(settle("m-2", "a", Settlement::OutcomeUnknown, None))
        .await;

    h.clock.advance(Duration::from_secs(5));
    assert_eq!(
        w.enqueue_stale(10).await.unwrap(),
        1,
        "m-1 only, one endpoint"
    );
    assert_eq!(w.enqueue_stale(10).await.unwrap(), 0, "not again");
    h.clock.advance(Duration::from_secs(5));
    assert_eq!(w.enqueue_stale(10).await.unwrap(), 1, "m-2 now");
    assert_eq!(w.enqueue_stale(10).await.unwrap(), 0);
    assert_eq!(w.enqueue_stale(3).await.unwrap(), 2, "another threshold");
    // A reconciled operation is no longer stale.
    h.ok(reconcile("m-1", "a", false)).await;
    assert_eq!(w.enqueue_stale(1).await.unwrap(), 1, "m-2 only");
    let stale: Vec<_> = w
        .outbox()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.event == "outcome.unknown_stale")
        .collect();
    assert_eq!(stale.len(), 5);
}

#[tokio::test]
async fn taken_rows_are_leased_retried_delivered_and_410_disables() {
    let h = open().await;
    let w = h.ledger.webhooks();
    let a = w
        .add_endpoint("https://a.example/hook", ALL, "whsec_x")
        .await
        .unwrap();
    h.in_flight("m-1", "a").await;
    h.ok(settle("m-1", "a", Settlement::OutcomeUnknown, None))
        .await;
    h.in_flight("m-2", "a").await;
    h.ok(settle("m-2", "a", Settlement::OutcomeUnknown, None))
        .await;

    let taken = w.take_due(10, 30_000).await.unwrap();
    assert_eq!(taken.len(), 2);
    assert_eq!(taken[0].url, "https://a.example/hook");
    assert_eq!(taken[0].secret, "whsec_x");
    assert!(
        !format!("{taken:?}").contains("whsec_x"),
        "Debug never shows the secret"
    );
    let endpoints = w.list_endpoints().await.unwrap();
    assert!(!format!("{endpoints:?}").contains("whsec_x"));
    assert!(w.take_due(10, 30_000).await.unwrap().is_empty(), "leased");
    w.delivered(taken[0].id).await.unwrap();
    w.attempt_failed(taken[1].id, Some(h.clock.now_ms() + 2_000), "HTTP 500")
        .await
        .unwrap();
    assert!(
        w.take_due(10, 30_000).await.unwrap().is_empty(),
        "not due yet"
    );
    h.clock.advance(Duration::from_secs(2));
    let again = w.take_due(10, 30_000).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(
        (again[0].msg_id.as_str(), again[0].attempts),
        (taken[1].msg_id.as_str(), 1)
    );

    // The lease runs out: taken again.
    h.clock.advance(Duration::from_secs(31));
    assert_eq!(w.take_due(10, 30_000).await.unwrap().len(), 1);

    w.disable_endpoint(a).await.unwrap();
    let rows = w.outbox().await.unwrap();
    assert!(rows[0].delivered_at.is_some() && rows[0].attempts == 1);
    assert!(rows[1].failed_at.is_some() && rows[1].delivered_at.is_none());
    assert!(w.list_endpoints().await.unwrap()[0].disabled_at.is_some());
    // A disabled endpoint is queued nothing more.
    h.in_flight("m-3", "a").await;
    h.ok(settle("m-3", "a", Settlement::OutcomeUnknown, None))
        .await;
    assert_eq!(w.outbox().await.unwrap().len(), 2);
    assert!(w.remove_endpoint(a).await.unwrap());
    assert!(!w.remove_endpoint(a).await.unwrap());
    assert!(
        w.outbox().await.unwrap().is_empty(),
        "removed with its endpoint"
    );
}

/// Two instances on one database (on Postgres: two servers) take due rows at the same time, many times
/// over: each row is taken by exactly one of them, and stale alerts are queued once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_take_each_delivery_once_and_queue_stale_alerts_once() {
    let a = open().await;
    let b = reopen(&a.path, a.recorder.clone(), a.clock.clone()).await;
    let (wa, wb) = (a.ledger.webhooks(), b.webhooks());
    wa.add_endpoint("https://a.example/hook", ALL, "whsec_x")
        .await
        .unwrap();
    for i in 0..40 {
        let m = format!("m-{i}");
        a.in_flight(&m, "a").await;
        a.ok(settle(&m, "a", Settlement::OutcomeUnknown, None))
            .await;
    }
    a.clock.advance(Duration::from_secs(60));
    let (sa, sb) = tokio::join!(wa.enqueue_stale(30), wb.enqueue_stale(30));
    assert_eq!(
        sa.unwrap() + sb.unwrap(),
        40,
        "each operation's stale alert once"
    );

    let take = |w: ledger::webhooks::Webhooks| {
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..40 {
                ids.extend(
                    w.take_due(3, 60_000)
                        .await
                        .unwrap()
                        .into_iter()
                        .map(|i| i.id),
                );
            }
            ids
        })
    };
    let (ta, tb) = (take(wa.clone()), take(wb.clone()));
    let (ia, ib) = (ta.await.unwrap(), tb.await.unwrap());
    let mut all: Vec<_> = ia.iter().chain(ib.iter()).copied().collect();
    all.sort_unstable();
    let n = all.len();
    all.dedup();
    assert_eq!(all.len(), n, "no row taken by both: a {ia:?} b {ib:?}");
    assert_eq!(n, 80, "every row taken (40 unknown + 40 stale)");
    b.close().await;
}
