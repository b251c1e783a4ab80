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

/// How a test answers one taken delivery.
enum Answer {
    Delivered,
    /// Tried again much later (pending all through the test).
    Later,
    GivenUp,
}

/// Takes every due delivery and records each as `answer` says for its endpoint, event and operation.
async fn take_and_answer(h: &Harness, answer: impl Fn(i64, &str, &str) -> Answer) -> usize {
    let w = h.ledger.webhooks();
    let items = w.take_due(100, 30_000).await.unwrap();
    for i in &items {
        match answer(i.endpoint_id, &i.event, &i.mutation_id) {
            Answer::Delivered => w.delivered(i.id).await.unwrap(),
            Answer::Later => w
                .attempt_failed(i.id, Some(h.clock.now_ms() + 86_400_000), "HTTP 500")
                .await
                .unwrap(),
            Answer::GivenUp => w.attempt_failed(i.id, None, "HTTP 500").await.unwrap(),
        }
    }
    items.len()
}

/// The outbox as `(endpoint, event, operation, delivered_at - T0 in s, failed_at - T0 in s)`, sorted.
async fn outbox_by_content(
    h: &Harness,
    names: &[(i64, &'static str)],
) -> Vec<(&'static str, String, String, Option<i64>, Option<i64>)> {
    let name = |id: i64| names.iter().find(|(i, _)| *i == id).unwrap().1;
    let mut rows: Vec<_> = h
        .ledger
        .webhooks()
        .outbox()
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                name(r.endpoint_id),
                r.event,
                r.mutation_id,
                r.delivered_at.map(|t| (t - T0) / 1000),
                r.failed_at.map(|t| (t - T0) / 1000),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// `alerted_at` of the three operations of the pruning test, as RFC 3339 strings.
async fn alerted(h: &Harness) -> std::collections::BTreeMap<String, String> {
    h.ledger
        .webhooks()
        .alerted_at(&[
            (SESSION, "m-open"),
            (SESSION, "m-done"),
            (SESSION, "m-again"),
        ])
        .await
        .unwrap()
        .into_iter()
        .map(|((_, m), at)| (m, ledger::store::format_time(at)))
        .collect()
}

/// Pruning (docs/api.md "Webhooks", "Pruning"): finished rows go once they are older than the retention window,
/// except a delivered alert about the current unknown outcome of an entry still unknown (its
/// `alerted_at` stays the same); pending rows stay however old; deletions come in bounded batches.
/// Retention 60 s here (the server's is 7 days, `OUTBOX_RETENTION_MS`).
#[tokio::test]
async fn pruning_keeps_pending_rows_and_alerts_about_open_unknowns_and_deletes_the_rest() {
    use ledger::webhooks::{OutboxGauges, OutboxPrune, OUTBOX_RETENTION_MS};
    assert_eq!(OUTBOX_RETENTION_MS, 7 * 24 * 3600 * 1000);
    let rules = |batch, max_batches| OutboxPrune {
        retention_ms: 60_000,
        batch,
        max_batches,
    };
    let h = open().await;
    let w = h.ledger.webhooks();
    let a = w
        .add_endpoint("https://a.example/hook", ALL, "whsec_x")
        .await
        .unwrap();
    let b = w
        .add_endpoint("https://b.example/hook", ALL, "whsec_y")
        .await
        .unwrap();
    let names = [(a, "a"), (b, "b")];
    for m in ["m-open", "m-done", "m-again"] {
        h.in_flight(m, "a1").await;
        h.ok(settle(m, "a1", Settlement::OutcomeUnknown, None))
            .await;
    }
    // At T0: m-open's alert delivered to a, given up for b; m-done's delivered to a, still tried for b;
    // m-again's delivered to both.
    let taken = take_and_answer(&h, |e, _, m| match (e == a, m) {
        (false, "m-open") => Answer::GivenUp,
        (false, "m-done") => Answer::Later,
        _ => Answer::Delivered,
    })
    .await;
    assert_eq!(taken, 6);

    // At T0+10 s: m-done is reconciled; m-again reconciled as not done, tried afresh and unknown again.
    h.clock.advance(Duration::from_secs(10));
    h.ok(reconcile("m-done", "a1", true)).await;
    h.ok(reconcile("m-again", "a1", false)).await;
    h.ok(fresh("m-again", "a2")).await;
    h.ok(settle("m-again", "a2", Settlement::OutcomeUnknown, None))
        .await;
    let taken = take_and_answer(&h, |e, event, m| match (e == a, event, m) {
        (false, "outcome.resolved", "m-again") => Answer::GivenUp,
        (false, "outcome.unknown", "m-again") => Answer::Later,
        _ => Answer::Delivered,
    })
    .await;
    assert_eq!(taken, 6);
    let before = alerted(&h).await;
    let at = |secs: i64| ledger::store::format_time(T0 + secs * 1000);
    assert_eq!(
        before,
        [
            ("m-again".to_owned(), at(10)),
            ("m-done".to_owned(), at(0)),
            ("m-open".to_owned(), at(0)),
        ]
        .into()
    );
    let (u, r) = ("outcome.unknown", "outcome.resolved");
    let row = |e: &'static str, ev: &str, m: &str, d: Option<i64>, f: Option<i64>| {
        (e, ev.to_owned(), m.to_owned(), d, f)
    };
    let all = vec![
        row("a", r, "m-again", Some(10), None),
        row("a", r, "m-done", Some(10), None),
        row("a", u, "m-again", Some(0), None),
        row("a", u, "m-again", Some(10), None),
        row("a", u, "m-done", Some(0), None),
        row("a", u, "m-open", Some(0), None),
        row("b", r, "m-again", None, Some(10)),
        row("b", r, "m-done", Some(10), None),
        row("b", u, "m-again", None, None),
        row("b", u, "m-again", Some(0), None),
        row("b", u, "m-done", None, None),
        row("b", u, "m-open", None, Some(0)),
    ];
    assert_eq!(outbox_by_content(&h, &names).await, all);

    // Nothing is 60 s old yet.
    assert_eq!(w.prune_outbox(rules(500, 20)).await.unwrap(), 0);

    // T0+65 s: what finished at T0 may go: m-open's given-up row, m-done's delivered alert (m-done is
    // resolved), m-again's alerts about its earlier unknown. In batches of 3: one batch of 3, then 1.
    h.clock.advance(Duration::from_secs(55));
    assert_eq!(w.prune_outbox(rules(3, 1)).await.unwrap(), 3);
    assert_eq!(w.prune_outbox(rules(3, 20)).await.unwrap(), 1);
    assert_eq!(w.prune_outbox(rules(3, 20)).await.unwrap(), 0);
    let kept: Vec<_> = all
        .iter()
        .filter(|x| {
            !matches!(
                (x.0, x.1.as_str(), x.2.as_str(), x.3, x.4),
                ("b", "outcome.unknown", "m-open", None, Some(0))
                    | (_, "outcome.unknown", "m-done", Some(0), None)
                    | (_, "outcome.unknown", "m-again", Some(0), None)
            )
        })
        .cloned()
        .collect();
    assert_eq!(kept.len(), 8);
    assert_eq!(outbox_by_content(&h, &names).await, kept);

    // T0+75 s: the rows finished at T0+10 s go too, but m-again's alert about its current unknown stays,
    // as do the rows still being tried (b's of m-done since T0, however old).
    h.clock.advance(Duration::from_secs(10));
    assert_eq!(w.prune_outbox(rules(500, 20)).await.unwrap(), 4);
    assert_eq!(
        outbox_by_content(&h, &names).await,
        vec![
            row("a", u, "m-again", Some(10), None),
            row("a", u, "m-open", Some(0), None),
            row("b", u, "m-again", None, None),
            row("b", u, "m-done", None, None),
        ]
    );
    // When staff were alerted about the open unknowns reads the same; the resolved m-done's is gone.
    assert_eq!(
        alerted(&h).await,
        [("m-again".to_owned(), at(10)), ("m-open".to_owned(), at(0)),].into()
    );
    assert_eq!(
        w.outbox_gauges().await.unwrap(),
        OutboxGauges {
            pending: 2,
            oldest_pending_age_secs: Some(75),
        }
    );

    // Once m-open is reconciled its alert may go as well (the two new resolved rows are pending).
    h.ok(reconcile("m-open", "a1", true)).await;
    assert_eq!(w.prune_outbox(rules(500, 20)).await.unwrap(), 1);
    assert_eq!(
        outbox_by_content(&h, &names).await,
        vec![
            row("a", r, "m-open", None, None),
            row("a", u, "m-again", Some(10), None),
            row("b", r, "m-open", None, None),
            row("b", u, "m-again", None, None),
            row("b", u, "m-done", None, None),
        ]
    );
    assert_eq!(alerted(&h).await, [("m-again".to_owned(), at(10))].into());
    assert_eq!(
        w.outbox_gauges().await.unwrap(),
        OutboxGauges {
            pending: 4,
            oldest_pending_age_secs: Some(75),
        }
    );
}

/// An empty outbox: nothing pending, no age.
#[tokio::test]
async fn the_gauges_of_an_empty_outbox_are_zero() {
    let h = open().await;
    assert_eq!(
        h.ledger.webhooks().outbox_gauges().await.unwrap(),
        ledger::webhooks::OutboxGauges {
            pending: 0,
            oldest_pending_age_secs: None,
        }
    );
}

/// `n` unknowns `m-0`, `m-1`, … each queued for every endpoint.
async fn unknowns(h: &Harness, n: usize) {
    for i in 0..n {
        let m = format!("m-{i}");
        h.in_flight(&m, "a").await;
        h.ok(settle(&m, "a", Settlement::OutcomeUnknown, None))
            .await;
    }
}

/// Endpoint ids of taken rows, in the order taken.
fn endpoints_of(items: &[ledger::webhooks::OutboxItem]) -> Vec<i64> {
    let mut v: Vec<i64> = items.iter().map(|i| i.endpoint_id).collect();
    v.sort_unstable();
    v
}

/// Due rows are taken fairly across endpoints (docs/api.md "Webhooks", "Per endpoint"): with a limit
/// of 6 each of two endpoints with 10 due rows gives 3, each its earliest; at most 4 per endpoint less
/// what the worker has in flight for it.
#[tokio::test]
async fn due_rows_are_taken_in_turns_across_endpoints_and_capped_per_endpoint() {
    let h = open().await;
    let w = h.ledger.webhooks();
    let a = w
        .add_endpoint("https://a.example/h", ALL, "whsec_x")
        .await
        .unwrap();
    let b = w
        .add_endpoint("https://b.example/h", ALL, "whsec_y")
        .await
        .unwrap();
    unknowns(&h, 10).await;
    let none = std::collections::HashMap::new();
    let taken = w.take_due_per_endpoint(6, 30_000, 4, &none).await.unwrap();
    assert_eq!(endpoints_of(&taken), vec![a, a, a, b, b, b]);
    let muts: Vec<_> = taken
        .iter()
        .map(|i| (i.endpoint_id, i.mutation_id.clone()))
        .collect();
    for m in ["m-0", "m-1", "m-2"] {
        assert!(
            muts.contains(&(a, m.to_owned())) && muts.contains(&(b, m.to_owned())),
            "{muts:?}"
        );
    }
    // In flight: a 3 (room for 1), b 3 (room for 1).
    let in_flight = [(a, 3), (b, 3)].into_iter().collect();
    let more = w
        .take_due_per_endpoint(100, 30_000, 4, &in_flight)
        .await
        .unwrap();
    assert_eq!(endpoints_of(&more), vec![a, b]);
    let rest = w
        .take_due_per_endpoint(100, 30_000, 4, &none)
        .await
        .unwrap();
    assert_eq!(endpoints_of(&rest), vec![a, a, a, a, b, b, b, b]);
}

/// After 5 failures in a row an endpoint waits as a whole, then is probed one row at a time; a delivery
/// ends it; failing 24 h since its first failure it is disabled with its pending rows given up.
#[tokio::test]
async fn a_failing_endpoint_waits_is_probed_and_is_disabled_after_24_h() {
    use ledger::webhooks::EndpointFailure;
    let h = open().await;
    let w = h.ledger.webhooks();
    let a = w
        .add_endpoint("https://a.example/h", ALL, "whsec_x")
        .await
        .unwrap();
    unknowns(&h, 8).await;
    let none = std::collections::HashMap::new();
    let t0 = h.clock.now_ms();
    let taken = w
        .take_due_per_endpoint(100, 30_000, 4, &none)
        .await
        .unwrap();
    assert_eq!(taken.len(), 4);
    for (n, i) in taken.iter().enumerate() {
        w.attempt_failed(i.id, Some(t0), "HTTP 500").await.unwrap();
        let e = w.endpoint_failed(a, |_| 1_000).await.unwrap();
        assert_eq!(e, EndpointFailure::Failing { since: t0 }, "failure {n}");
    }
    let taken = w.take_due_per_endpoint(1, 30_000, 4, &none).await.unwrap();
    w.attempt_failed(taken[0].id, Some(t0), "HTTP 500")
        .await
        .unwrap();
    assert_eq!(
        w.endpoint_failed(a, |n| 1_000 * n).await.unwrap(),
        EndpointFailure::Blocked {
            since: t0,
            until: t0 + 1_000
        }
    );
    assert!(
        w.take_due_per_endpoint(100, 30_000, 4, &none)
            .await
            .unwrap()
            .is_empty(),
        "waits"
    );
    h.clock.advance(Duration::from_secs(1));
    let probe = w
        .take_due_per_endpoint(100, 30_000, 4, &none)
        .await
        .unwrap();
    assert_eq!(probe.len(), 1, "one probe");
    w.delivered(probe[0].id).await.unwrap();
    let e = &w.list_endpoints().await.unwrap()[0];
    assert_eq!(
        (e.consecutive_failures, e.failing_since, e.blocked_until),
        (0, None, None)
    );
    assert_eq!(
        w.take_due_per_endpoint(100, 30_000, 4, &none)
            .await
            .unwrap()
            .len(),
        4
    );

    // Failing again from t1; 24 h later a failure disables it.
    h.clock.advance(Duration::from_secs(60));
    let t1 = h.clock.now_ms();
    assert_eq!(
        w.endpoint_failed(a, |_| 1_000).await.unwrap(),
        EndpointFailure::Failing { since: t1 }
    );
    h.clock.advance(Duration::from_secs(24 * 3600));
    assert_eq!(
        w.endpoint_failed(a, |_| 1_000).await.unwrap(),
        EndpointFailure::Disabled { since: t1 }
    );
    let e = &w.list_endpoints().await.unwrap()[0];
    assert_eq!(
        (e.disabled_at, e.disabled_reason.as_deref(), e.failing_since),
        (Some(h.clock.now_ms()), Some("failing"), Some(t1))
    );
    let rows = w.outbox().await.unwrap();
    assert_eq!(rows.iter().filter(|r| r.delivered_at.is_some()).count(), 1);
    assert!(
        rows.iter()
            .all(|r| r.delivered_at.is_some() || r.failed_at.is_some()),
        "{rows:?}"
    );
    assert_eq!(
        w.endpoint_failed(a, |_| 1_000).await.unwrap(),
        EndpointFailure::Gone
    );
}

/// Past the bound the oldest pending rows of an endpoint are given up, except one being delivered; the
/// other endpoints are untouched; a second call drops nothing more.
#[tokio::test]
async fn the_bound_drops_an_endpoints_oldest_pending_rows_but_not_a_leased_one() {
    let h = open().await;
    let w = h.ledger.webhooks();
    let a = w
        .add_endpoint("https://a.example/h", ALL, "whsec_x")
        .await
        .unwrap();
    unknowns(&h, 3).await;
    let b = w
        .add_endpoint("https://b.example/h", ALL, "whsec_y")
        .await
        .unwrap();
    // The oldest row of a is being delivered.
    let leased = w
        .take_due_per_endpoint(1, 30_000, 4, &Default::default())
        .await
        .unwrap();
    assert_eq!(leased[0].mutation_id, "m-0");
    for i in 3..8 {
        let m = format!("m-{i}");
        h.in_flight(&m, "a").await;
        h.ok(settle(&m, "a", Settlement::OutcomeUnknown, None))
            .await;
    }
    // a: m-0 … m-7 (8 rows), b: m-3 … m-7 (5 rows). Bound 5: a keeps its 5 newest (m-3 … m-7); of the
    // older m-1 and m-2 go, m-0 (leased) stays.
    assert_eq!(w.drop_over_bound(5).await.unwrap(), vec![(a, 2)]);
    assert!(w.drop_over_bound(5).await.unwrap().is_empty());
    let dropped: Vec<_> = w
        .outbox()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.failed_at.is_some())
        .map(|r| {
            (
                r.endpoint_id,
                r.mutation_id,
                r.last_error.unwrap_or_default(),
            )
        })
        .collect();
    let e = ledger::webhooks::DROPPED_ERROR.to_owned();
    assert_eq!(
        dropped,
        vec![(a, "m-1".into(), e.clone()), (a, "m-2".into(), e)]
    );
    let _ = b;
}

/// docs/api.md "Deadlines": the ledger's settlement at a deadline queues `outcome.unknown`; the host's
/// late original report resolves it (`outcome.resolved` with its status), or queues nothing more when it
/// reports `outcome_unknown` again (staff were alerted once); an ordinary host settle queues as before.
#[tokio::test]
async fn the_ledgers_deadline_settlement_alerts_and_the_late_report_resolves_it() {
    use ledger::command::Action;
    let h = open().await;
    let w = h.ledger.webhooks();
    w.add_endpoint("https://a.example/hook", ALL, "whsec_x")
        .await
        .unwrap();
    for m in ["m-1", "m-2"] {
        h.ok(approve(m)).await;
        h.ok(on(
            m,
            Action::RecordIntent {
                attempt_id: att("a"),
                deadline_secs: Some(5),
            },
        ))
        .await;
    }
    h.clock.advance(Duration::from_secs(5));
    assert_eq!(h.engine.settle_overdue(h.clock.now_ms()).await.unwrap(), 2);
    let events = |rows: Vec<ledger::webhooks::OutboxRow>| {
        rows.into_iter()
            .map(|r| (r.event, r.mutation_id, r.status))
            .collect::<Vec<_>>()
    };
    let unknown = |m: &str| {
        (
            "outcome.unknown".to_owned(),
            m.to_owned(),
            "outcome_unknown".to_owned(),
        )
    };
    assert_eq!(
        events(w.outbox().await.unwrap()),
        [unknown("m-1"), unknown("m-2")]
    );
    h.clock.advance(Duration::from_secs(3));
    h.ok(settle("m-1", "a", Settlement::Failed, None)).await;
    h.ok(settle("m-2", "a", Settlement::OutcomeUnknown, None))
        .await;
    assert_eq!(
        events(w.outbox().await.unwrap()),
        [
            unknown("m-1"),
            unknown("m-2"),
            (
                "outcome.resolved".to_owned(),
                "m-1".to_owned(),
                "failed".to_owned()
            )
        ]
    );
    // The ordinary path is unchanged: a host's own unknown alerts, its reconciliation resolves.
    h.in_flight("m-3", "a").await;
    h.ok(settle("m-3", "a", Settlement::OutcomeUnknown, None))
        .await;
    assert_eq!(w.outbox().await.unwrap().len(), 4);
}
