//! Webhooks (docs/api.md "Webhooks"): `outcomes webhooks add|list|remove` as an operator runs it (refused
//! input exits 2 and stores nothing), and the delivery worker against a local receiver: signed per
//! Standard Webhooks, `outcome.unknown` within 2 s of the settle, retries with the same `webhook-id`, 410
//! disables the endpoint, `outcome.resolved` after a reconciliation, and a receiver that never answers
//! does not slow settles. Per endpoint: a receiver that never answers delays only its own deliveries,
//! the outbox of an endpoint is bounded (the oldest dropped, counted in `/metrics`), and an endpoint
//! failing for 24 h is disabled and listed so. IPv6 forms embedding a private IPv4 address are refused.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use ledger::command::{Action, Command as LedgerCommand, Evidence};
use ledger::ids::{AttemptId, MutationId, SessionKey};
use server::conn::ConnLimits;
use tokio_util::sync::CancellationToken;

use crate::helpers::*;

const BIN: &str = env!("CARGO_BIN_EXE_outcomes");

fn webhooks(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("webhooks")
        .args(args)
        .arg("--database")
        .arg(database_for(dir))
        .env_remove("OUTCOMES_WEBHOOK_ALLOW_PRIVATE")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_adds_lists_and_removes_and_refuses_bad_destinations_naming_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (url, extra, reason) in [
        (
            "http://127.0.0.1:9/hook",
            None,
            "private, loopback or link-local",
        ),
        ("http://10.1.2.3/hook", None, "10.1.2.3"),
        (
            "http://localhost:8080/hook",
            None,
            "--webhook-allow-private",
        ),
        ("https://user:secret@example.com/hook", None, "credentials"),
        ("not a url", None, "not a URL"),
        ("ftp://example.com/x", None, "scheme"),
        (
            "http://127.0.0.1:9/hook",
            Some("--events=outcome.done"),
            "outcome.done",
        ),
    ] {
        let mut args = vec!["add", url];
        if let Some(e) = extra {
            args.push(e);
            args.push("--webhook-allow-private");
        }
        let (code, stdout, stderr) = webhooks(d, &args);
        assert_eq!(code, 2, "{url}: {stderr}");
        assert!(stderr.contains(reason), "{url}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            !stderr.contains("secret@"),
            "the credentials are not echoed: {stderr}"
        );
    }
    let (code, stdout, _) = webhooks(d, &["list"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("no webhook endpoints"),
        "nothing was stored: {stdout}"
    );

    let (code, stdout, stderr) = webhooks(
        d,
        &[
            "add",
            "http://127.0.0.1:9/hook",
            "--events",
            "outcome.unknown",
            "--webhook-allow-private",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let secret = stdout.lines().last().unwrap();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 38,
        "{stdout}"
    );
    let (code, stdout, _) = webhooks(d, &["list"]);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with("1\thttp://127.0.0.1:9/hook\toutcome.unknown\tadded "),
        "{stdout}"
    );
    assert!(
        !stdout.contains("whsec_"),
        "list never shows a secret: {stdout}"
    );
    assert_eq!(webhooks(d, &["remove", "1"]).0, 0);
    let (code, _, stderr) = webhooks(d, &["remove", "1"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("no webhook endpoint 1"), "{stderr}");
}

/// `webhooks add` judges an IPv6 destination that embeds an IPv4 address by the address it embeds: each
/// form wrapping 127.0.0.1 or 10.x is refused (exit 2, naming the address and the flag, nothing stored)
/// without `--webhook-allow-private`, and accepted with it.
#[test]
fn the_cli_refuses_ipv6_forms_embedding_a_private_ipv4_address() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for host in [
        "2002:7f00:1::",
        "2002:a00:1::1",
        "::ffff:127.0.0.1",
        "::127.0.0.1",
        "64:ff9b::a00:1",
        "64:ff9b:1::7f00:1",
        "2001:0:7f00:1::f7f7:f7f7",
        "2001:0:808:808::80ff:fffe",
    ] {
        let url = format!("http://[{host}]/");
        let (code, stdout, stderr) = webhooks(d, &["add", &url]);
        assert_eq!(code, 2, "{url}: {stderr}");
        assert!(stdout.is_empty(), "{url}: {stdout}");
        assert!(
            stderr.contains("private, loopback or link-local")
                && stderr.contains("--webhook-allow-private"),
            "{url}: {stderr}"
        );
    }
    let (code, stdout, _) = webhooks(d, &["list"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("no webhook endpoints"),
        "nothing was stored: {stdout}"
    );
    let (code, _, stderr) = webhooks(
        d,
        &["add", "http://[2002:7f00:1::]/", "--webhook-allow-private"],
    );
    assert_eq!(code, 0, "{stderr}");
}

/// One request the local receiver got: when, its headers and its body.
type Got = (Instant, HeaderMap, Vec<u8>);

/// What the local receiver got: headers and body of each request.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Got>>>);

impl Received {
    fn all(&self) -> Vec<Got> {
        self.0.lock().unwrap().clone()
    }
}

/// A receiver on a loopback port answering each request with the next of `answers` (the last one
/// repeated); `None` never answers.
async fn receiver(answers: Vec<Option<u16>>) -> (String, Received) {
    let received = Received::default();
    let calls = Arc::new(Mutex::new(0usize));
    let r = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let (r, calls, answers) = (r.clone(), calls.clone(), answers.clone());
            async move {
                r.0.lock()
                    .unwrap()
                    .push((Instant::now(), headers, body.to_vec()));
                let n = {
                    let mut c = calls.lock().unwrap();
                    *c += 1;
                    *c - 1
                };
                match answers[n.min(answers.len() - 1)] {
                    Some(code) => StatusCode::from_u16(code).unwrap(),
                    None => std::future::pending().await,
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

/// A server with one webhook endpoint at `url` (its secret answered) and the worker running with a
/// short retry base and the given stale threshold.
async fn served_with_hook(
    url: &str,
    stale_after_secs: i64,
) -> (TestApp, ledger::Ledger, String, CancellationToken) {
    let dir = tempfile::tempdir().unwrap();
    let a = args(dir.path(), 3600);
    let built = server::serve::build(&a, TOKEN.into()).await.unwrap();
    let secret = server::webhooks::new_secret();
    built
        .ledger
        .webhooks()
        .add_endpoint(
            url,
            "outcome.unknown,outcome.unknown_stale,outcome.resolved",
            &secret,
        )
        .await
        .unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(server::webhooks::run_worker(
        built.ledger.webhooks(),
        server::webhooks::WorkerOptions {
            stale_after_secs,
            webhook_allow_private: true,
            webhook_retry_base_ms: 200,
            ..Default::default()
        },
        built.state.metrics.clone(),
        stop.clone(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server::conn::serve(
        listener,
        built.router,
        ConnLimits::default(),
        std::future::pending::<()>(),
    ));
    let app = TestApp {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        state: built.state,
        _dir: dir,
    };
    (app, built.ledger, secret, stop)
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

async fn wait_for(received: &Received, n: usize, within: Duration) -> Vec<Got> {
    let end = Instant::now() + within;
    loop {
        let all = received.all();
        if all.len() >= n || Instant::now() > end {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The outbox once every row is recorded as delivered, or as it stands after `within`. The receiver
/// sees a delivery before the worker records its answer, so a test reading the outbox right after the
/// receiver saw the last delivery would race the worker.
async fn outbox_when_delivered(
    ledger: &ledger::Ledger,
    within: Duration,
) -> Vec<ledger::webhooks::OutboxRow> {
    let end = Instant::now() + within;
    loop {
        let rows = ledger.webhooks().outbox().await.unwrap();
        if rows.iter().all(|r| r.delivered_at.is_some()) || Instant::now() > end {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_unknown_is_delivered_signed_within_2_s_then_stale_once_then_resolved() {
    let (url, received) = receiver(vec![Some(200)]).await;
    let (app, ledger, secret, stop) = served_with_hook(&url, 2).await;
    let settled_at = Instant::now();
    app.settled("s-1", "t-1", "m-1", "outcome_unknown").await;
    let got = wait_for(&received, 1, Duration::from_secs(3)).await;
    assert_eq!(got.len(), 1);
    let (at, headers, body) = &got[0];
    assert!(at.duration_since(settled_at) < Duration::from_secs(2));
    let id = header(headers, "webhook-id");
    let ts: i64 = header(headers, "webhook-timestamp").parse().unwrap();
    assert!(id.starts_with("msg_"), "{headers:?}");
    assert_eq!(header(headers, "content-type"), "application/json");
    assert_eq!(
        header(headers, "webhook-signature"),
        server::webhooks::sign(&secret, id, ts, body).unwrap()
    );
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["type"], "outcome.unknown");
    assert_eq!(v["data"]["mutation_id"], "m-1");
    assert_eq!(v["data"]["session_key"], "s-1");
    assert_eq!(v["data"]["logical_turn_id"], "t-1");
    assert_eq!(v["data"]["status"], "outcome_unknown");
    assert_eq!(v["data"]["tool"], "mcp__dashboards__create");
    assert_eq!(v["data"]["age_secs"], 0);
    assert_eq!(v["data"]["dashboard_path"], "/sessions/s-1/operations/m-1");
    eprintln!(
        "delivery headers: {headers:?}\ndelivery body: {}",
        String::from_utf8_lossy(body)
    );

    // Staff see when they were alerted (docs/api.md "Alerted"): the delivery's recorded time, on the
    // queue, the look-up and the history.
    let rows = outbox_when_delivered(&ledger, Duration::from_secs(3)).await;
    let delivered = ledger::store::format_time(rows[0].delivered_at.expect("delivered"));
    let (s, queue) = app.get_json("/api/unknowns").await;
    assert_eq!(s, StatusCode::OK, "{queue}");
    assert_eq!(
        queue["matches"][0]["alerted_at"],
        delivered.as_str(),
        "{queue}"
    );
    let (_, found) = app.get_json("/api/operations/m-1").await;
    assert_eq!(
        found["matches"][0]["alerted_at"],
        delivered.as_str(),
        "{found}"
    );
    let (_, history) = app
        .get_json("/api/sessions/s-1/mutations/m-1/history")
        .await;
    assert_eq!(history["alerted_at"], delivered.as_str(), "{history}");

    // Stale after 2 s: once, within 2 s of the threshold.
    let got = wait_for(&received, 2, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 2);
    let stale: serde_json::Value = serde_json::from_slice(&got[1].2).unwrap();
    assert_eq!(stale["type"], "outcome.unknown_stale");
    let after = got[1].0.duration_since(settled_at);
    assert!(
        after >= Duration::from_secs(2) && after < Duration::from_secs(4),
        "{after:?}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(received.all().len(), 2, "stale is sent once");

    ledger
        .engine()
        .apply(LedgerCommand::new(
            SessionKey::parse("s-1").unwrap(),
            MutationId::parse("m-1").unwrap(),
            Action::Reconcile {
                attempt_id: AttemptId::parse("a1").unwrap(),
                completed: true,
                evidence: Evidence {
                    source: "github".into(),
                    reference: "issue #1".into(),
                    observed_at: "2026-01-01T00:00:00Z".into(),
                    provider_status: None,
                },
            },
        ))
        .await
        .unwrap();
    let got = wait_for(&received, 3, Duration::from_secs(3)).await;
    assert_eq!(got.len(), 3);
    let resolved: serde_json::Value = serde_json::from_slice(&got[2].2).unwrap();
    assert_eq!(resolved["type"], "outcome.resolved");
    assert_eq!(resolved["data"]["status"], "completed");
    assert!(resolved["data"]["age_secs"].as_i64().unwrap() >= 4);
    let rows = outbox_when_delivered(&ledger, Duration::from_secs(3)).await;
    assert!(
        rows.iter()
            .all(|r| r.delivered_at.is_some() && r.attempts == 1),
        "{rows:?}"
    );
    stop.cancel();
}

#[tokio::test]
async fn a_receiver_failing_three_times_gets_the_same_webhook_id_four_times_and_410_disables() {
    let (url, received) = receiver(vec![Some(500), Some(500), Some(503), Some(200)]).await;
    let (app, ledger, _secret, stop) = served_with_hook(&url, 3600).await;
    app.settled("s-1", "t-1", "m-1", "outcome_unknown").await;
    let got = wait_for(&received, 4, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 4);
    let ids: Vec<_> = got
        .iter()
        .map(|(_, h, _)| header(h, "webhook-id").to_owned())
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    let bodies: Vec<_> = got.iter().map(|(_, _, b)| b.clone()).collect();
    assert!(
        bodies.iter().all(|b| *b == bodies[0]),
        "the same body every time"
    );
    // Backoff: the gaps grow.
    let gaps: Vec<_> = got
        .windows(2)
        .map(|w| w[1].0.duration_since(w[0].0))
        .collect();
    assert!(gaps[0] >= Duration::from_millis(100), "{gaps:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rows = outbox_when_delivered(&ledger, Duration::from_secs(3)).await;
    assert_eq!(
        (rows[0].attempts, rows[0].delivered_at.is_some()),
        (4, true),
        "{rows:?}"
    );
    assert_eq!(received.all().len(), 4);
    stop.cancel();

    let (url, received) = receiver(vec![Some(410)]).await;
    let (app, ledger, _secret, stop) = served_with_hook(&url, 3600).await;
    app.settled("s-1", "t-1", "m-1", "outcome_unknown").await;
    assert_eq!(
        wait_for(&received, 1, Duration::from_secs(3)).await.len(),
        1
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(ledger.webhooks().list_endpoints().await.unwrap()[0]
        .disabled_at
        .is_some());
    app.settled("s-1", "t-1", "m-2", "outcome_unknown").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        received.all().len(),
        1,
        "nothing more to a disabled endpoint"
    );
    stop.cancel();
}

#[tokio::test]
async fn a_receiver_that_never_answers_does_not_slow_settles() {
    let (url, received) = receiver(vec![None]).await;
    let (app, _ledger, _secret, stop) = served_with_hook(&url, 3600).await;
    let mut slowest = Duration::ZERO;
    for i in 0..30 {
        let t = Instant::now();
        app.settled("s-1", "t-1", &format!("m-{i}"), "outcome_unknown")
            .await;
        slowest = slowest.max(t.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Deliveries were attempted: 4 of them, the most one endpoint has in flight (docs/api.md "Webhooks",
    // "Per endpoint"); none has timed out yet.
    assert_eq!(received.all().len(), 4, "deliveries in flight");
    // Nothing was delivered, so nobody was alerted: no `alerted_at` anywhere.
    let (_, queue) = app.get_json("/api/unknowns").await;
    let items = queue["matches"].as_array().expect("matches");
    assert_eq!(items.len(), 30, "{queue}");
    assert!(
        items.iter().all(|m| m.get("alerted_at").is_none()),
        "{queue}"
    );
    let (_, history) = app
        .get_json("/api/sessions/s-1/mutations/m-0/history")
        .await;
    assert!(history.get("alerted_at").is_none(), "{history}");
    // approve + intent + settle, each well under the 10 s the receiver holds every delivery.
    assert!(
        slowest < Duration::from_secs(1),
        "slowest settle {slowest:?}"
    );
    eprintln!("slowest approve+intent+settle with a receiver that never answers: {slowest:?}");
    stop.cancel();
}

/// A server whose ledger runs on `clock` (sessions live 30 days), with one endpoint (all events) per URL
/// of `urls`, and the worker running with `options` and the server's metrics.
async fn served_with_hooks_on(
    clock: Arc<crate::metrics::Manual>,
    urls: &[&str],
    options: server::webhooks::WorkerOptions,
) -> (TestApp, ledger::Ledger, CancellationToken) {
    let dir = tempfile::tempdir().unwrap();
    let a = args(dir.path(), 30 * 24 * 3600);
    let built = server::serve::build_with_clock(&a, TOKEN.into(), clock)
        .await
        .unwrap();
    for url in urls {
        built
            .ledger
            .webhooks()
            .add_endpoint(
                url,
                "outcome.unknown,outcome.unknown_stale,outcome.resolved",
                &server::webhooks::new_secret(),
            )
            .await
            .unwrap();
    }
    let stop = CancellationToken::new();
    tokio::spawn(server::webhooks::run_worker(
        built.ledger.webhooks(),
        options,
        built.state.metrics.clone(),
        stop.clone(),
    ));
    let ledger = built.ledger.clone();
    let app = serve_built(dir, built, ConnLimits::default()).await;
    (app, ledger, stop)
}

/// The samples of `GET /metrics` once the webhook delivery attempts counted (every
/// `outcomes_webhook_deliveries_total` series, summed) are `attempts`, or as they stand after 10 s. The
/// worker counts an attempt once its outcome is recorded in the outbox, so the outbox gauges of that
/// scrape already hold it.
async fn scrape_after_attempts(app: &TestApp, attempts: f64) -> BTreeMap<String, f64> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let all = crate::metrics::scrape(app).await;
        let counted: f64 = all
            .iter()
            .filter(|(k, _)| k.starts_with("outcomes_webhook_deliveries_total{"))
            .map(|(_, v)| v)
            .sum();
        if counted >= attempts || Instant::now() > end {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The webhook series of a scrape: every `outcomes_webhook_*` sample.
fn webhook_series(all: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    all.iter()
        .filter(|(k, _)| k.starts_with("outcomes_webhook_"))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

fn series(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

const UNKNOWN_FAILED: &str =
    "outcomes_webhook_deliveries_total{event=\"outcome.unknown\",result=\"failed\"}";
const UNKNOWN_DELIVERED: &str =
    "outcomes_webhook_deliveries_total{event=\"outcome.unknown\",result=\"delivered\"}";
const UNKNOWN_GONE: &str =
    "outcomes_webhook_deliveries_total{event=\"outcome.unknown\",result=\"gone\"}";
const UNKNOWN_GAVE_UP: &str =
    "outcomes_webhook_deliveries_total{event=\"outcome.unknown\",result=\"gave_up\"}";
const PENDING: &str = "outcomes_webhook_outbox_pending";
const OLDEST: &str = "outcomes_webhook_outbox_oldest_pending_age_seconds";

/// The webhook figures of `GET /metrics` (docs/api.md "Metrics") after a known sequence on a manual
/// clock, the receivers' answers fixed: one unknown outcome for three endpoints, `a` answering 500 then
/// 200, `b` 410, `c` always 503. Every attempt is counted by event and result, and the outbox's backlog
/// (pending rows, the oldest one's age) is read from the database at each scrape.
#[tokio::test]
async fn webhook_deliveries_and_the_outbox_backlog_are_exact_in_metrics() {
    let (a, got_a) = receiver(vec![Some(500), Some(200)]).await;
    let (b, got_b) = receiver(vec![Some(410)]).await;
    let (c, got_c) = receiver(vec![Some(503)]).await;
    let clock = Arc::new(crate::metrics::Manual(AtomicI64::new(crate::metrics::T0)));
    let (app, _ledger, stop) = served_with_hooks_on(
        clock.clone(),
        &[&a, &b, &c],
        server::webhooks::WorkerOptions {
            // No stale alert within the test's 25 h; a first retry 5 to 10 s after a failure.
            stale_after_secs: 31_536_000,
            webhook_allow_private: true,
            webhook_retry_base_ms: 10_000,
            ..Default::default()
        },
    )
    .await;
    let first = crate::metrics::scrape(&app).await;
    assert_eq!(
        webhook_series(&first),
        series(&[(PENDING, 0.0), (OLDEST, 0.0)]),
        "no attempt yet, so no deliveries series"
    );

    // T0: m1 settles unknown, one row per endpoint; each is tried at once (the clock stands still, so
    // no retry comes due until it moves): a fails, b disables its endpoint, c fails.
    app.settled("s-1", "t-1", "m1", "outcome_unknown").await;
    clock.advance_ms(2_000);
    let all = scrape_after_attempts(&app, 3.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[
            (UNKNOWN_FAILED, 2.0),
            (UNKNOWN_GONE, 1.0),
            (PENDING, 2.0),
            (OLDEST, 2.0),
        ])
    );

    // T0+12 s: the retries are due (5 to 10 s after T0): a delivers, c fails again.
    clock.advance_ms(10_000);
    let all = scrape_after_attempts(&app, 5.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[
            (UNKNOWN_FAILED, 3.0),
            (UNKNOWN_DELIVERED, 1.0),
            (UNKNOWN_GONE, 1.0),
            (PENDING, 1.0),
            (OLDEST, 12.0),
        ])
    );

    // 25 h later c's next attempt fails past the 24 h window: given up; nothing is pending.
    clock.advance_ms(25 * 3600 * 1000);
    let all = scrape_after_attempts(&app, 6.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[
            (UNKNOWN_FAILED, 3.0),
            (UNKNOWN_DELIVERED, 1.0),
            (UNKNOWN_GONE, 1.0),
            (UNKNOWN_GAVE_UP, 1.0),
            (PENDING, 0.0),
            (OLDEST, 0.0),
        ])
    );
    assert_eq!(
        (got_a.all().len(), got_b.all().len(), got_c.all().len()),
        (2, 1, 3)
    );
    stop.cancel();
}

/// A destination found private at delivery (a loopback receiver, without `--webhook-allow-private`)
/// gets nothing; its deliveries stay pending and are tried again (a name may resolve elsewhere later),
/// each attempt counted `failed`, until 24 h after the event, then `gave_up`.
#[tokio::test]
async fn a_private_destination_is_tried_again_counted_failed_then_given_up() {
    let (url, received) = receiver(vec![Some(200)]).await;
    let clock = Arc::new(crate::metrics::Manual(AtomicI64::new(crate::metrics::T0)));
    let (app, ledger, stop) = served_with_hooks_on(
        clock.clone(),
        &[&url],
        server::webhooks::WorkerOptions {
            stale_after_secs: 31_536_000,
            webhook_allow_private: false,
            webhook_retry_base_ms: 10_000,
            ..Default::default()
        },
    )
    .await;
    app.settled("s-1", "t-1", "m1", "outcome_unknown").await;
    app.settled("s-1", "t-1", "m2", "outcome_unknown").await;
    clock.advance_ms(1_000);
    let all = scrape_after_attempts(&app, 2.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[(UNKNOWN_FAILED, 2.0), (PENDING, 2.0), (OLDEST, 1.0)])
    );
    let rows = ledger.webhooks().outbox().await.unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| (r.attempts, r.delivered_at, r.failed_at))
            .collect::<Vec<_>>(),
        vec![(1, None, None), (1, None, None)],
        "kept for another attempt"
    );
    // Tried again once the wait is over: refused again.
    clock.advance_ms(10_000);
    let all = scrape_after_attempts(&app, 4.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[(UNKNOWN_FAILED, 4.0), (PENDING, 2.0), (OLDEST, 11.0)])
    );
    clock.advance_ms(25 * 3600 * 1000);
    let all = scrape_after_attempts(&app, 6.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[
            (UNKNOWN_FAILED, 4.0),
            (UNKNOWN_GAVE_UP, 2.0),
            (PENDING, 0.0),
            (OLDEST, 0.0),
        ])
    );
    assert!(received.all().is_empty(), "nothing was sent to it");
    stop.cancel();
}

/// The worker prunes the outbox when it starts (docs/api.md "Webhooks", "Pruning"): 8 days on, the
/// delivered rows of a reconciled operation are gone, the delivered alert about an outcome still unknown
/// stays (the operation's `alerted_at` reads the same), and a pending row stays.
#[tokio::test]
async fn the_worker_prunes_finished_rows_but_keeps_the_alert_of_an_open_unknown_and_pending_rows() {
    let (ok, _) = receiver(vec![Some(200)]).await;
    let (never, _) = receiver(vec![Some(500)]).await;
    let clock = Arc::new(crate::metrics::Manual(AtomicI64::new(crate::metrics::T0)));
    let options = server::webhooks::WorkerOptions {
        stale_after_secs: 31_536_000,
        webhook_allow_private: true,
        // One failure, then nothing more within the test (the next attempt is 30 to 60 min later).
        webhook_retry_base_ms: 3_600_000,
        ..Default::default()
    };
    let (app, ledger, stop) =
        served_with_hooks_on(clock.clone(), &[&ok, &never], options.clone()).await;
    // m1 unknown then reconciled, m2 unknown: each row delivered to `ok`, failed once at `never`.
    app.settled("s-1", "t-1", "m1", "outcome_unknown").await;
    app.settled("s-1", "t-1", "m2", "outcome_unknown").await;
    let (s, body) = app
        .step(
            "s-1",
            "m1",
            "reconciliation",
            serde_json::json!({"attempt_id": "a1", "completed": true,
                "evidence": {"source": "dashboards", "reference": "d-1", "observed_at": "2027-01-15T08:05:00Z"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    scrape_after_attempts(&app, 6.0).await;
    stop.cancel();
    let content = |rows: &[ledger::webhooks::OutboxRow]| {
        let mut v: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.endpoint_id,
                    r.event.clone(),
                    r.mutation_id.clone(),
                    r.delivered_at.is_some(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let row =
        |e: i64, ev: &str, m: &str, delivered: bool| (e, ev.to_owned(), m.to_owned(), delivered);
    let (u, r) = ("outcome.unknown", "outcome.resolved");
    assert_eq!(
        content(&ledger.webhooks().outbox().await.unwrap()),
        vec![
            row(1, r, "m1", true),
            row(1, u, "m1", true),
            row(1, u, "m2", true),
            row(2, r, "m1", false),
            row(2, u, "m1", false),
            row(2, u, "m2", false),
        ]
    );
    let history = "/api/sessions/s-1/mutations/m2/history";
    let (_, before) = app.get_json(history).await;
    assert_eq!(before["alerted_at"], "2027-01-15T08:00:00.000Z", "{before}");

    // The rows of `never` failed once and wait for their next attempt.
    assert!(
        ledger
            .webhooks()
            .outbox()
            .await
            .unwrap()
            .iter()
            .all(|r| r.attempts == 1 && r.failed_at.is_none()),
        "one attempt each"
    );
    // 8 days on, a worker starts: it prunes at once (then it tries `never` again, past its 24 h: given
    // up, which keeps those rows another 7 days).
    clock.advance_ms(8 * 24 * 3600 * 1000);
    let stop = CancellationToken::new();
    tokio::spawn(server::webhooks::run_worker(
        ledger.webhooks(),
        options,
        app.state.metrics.clone(),
        stop.clone(),
    ));
    let end = Instant::now() + Duration::from_secs(5);
    let mut rows = ledger.webhooks().outbox().await.unwrap();
    while rows.len() > 4 && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
        rows = ledger.webhooks().outbox().await.unwrap();
    }
    stop.cancel();
    assert_eq!(
        content(&rows),
        vec![
            row(1, u, "m2", true),
            row(2, r, "m1", false),
            row(2, u, "m1", false),
            row(2, u, "m2", false),
        ]
    );
    let (_, after) = app.get_json(history).await;
    assert_eq!(after["alerted_at"], before["alerted_at"], "{after}");
}

/// Writes `n` unknown outcomes (session `s-1`, mutations `m-0`, `m-1`, …) through the batch API, 50 per
/// batch (approve, intent, settle `outcome_unknown` each).
async fn unknowns(app: &TestApp, from: usize, n: usize) {
    let ops: Vec<serde_json::Value> = (from..from + n)
        .flat_map(|i| {
            let m = format!("m-{i}");
            [
                serde_json::json!({"op": "approve", "session_key": "s-1", "logical_turn_id": "t-1", "mutation_id": m, "tool": "mcp__dashboards__create"}),
                serde_json::json!({"op": "intent", "session_key": "s-1", "mutation_id": m, "attempt_id": "a1"}),
                serde_json::json!({"op": "settle", "session_key": "s-1", "mutation_id": m, "attempt_id": "a1", "status": "outcome_unknown"}),
            ]
        })
        .collect();
    for chunk in ops.chunks(150) {
        app.batch_ok(chunk.to_vec()).await;
    }
}

/// A server on the system clock with one endpoint (all events) per URL of `urls`, the worker running
/// with `options`.
async fn served_with_hooks(
    urls: &[&str],
    options: server::webhooks::WorkerOptions,
) -> (TestApp, ledger::Ledger, CancellationToken) {
    let dir = tempfile::tempdir().unwrap();
    let a = args(dir.path(), 3600);
    let built = server::serve::build(&a, TOKEN.into()).await.unwrap();
    for url in urls {
        built
            .ledger
            .webhooks()
            .add_endpoint(
                url,
                "outcome.unknown,outcome.unknown_stale,outcome.resolved",
                &server::webhooks::new_secret(),
            )
            .await
            .unwrap();
    }
    let stop = CancellationToken::new();
    tokio::spawn(server::webhooks::run_worker(
        built.ledger.webhooks(),
        options,
        built.state.metrics.clone(),
        stop.clone(),
    ));
    let ledger = built.ledger.clone();
    let app = serve_built(dir, built, ConnLimits::default()).await;
    (app, ledger, stop)
}

/// 300 unknowns for `dead` receivers that accept the connection and never answer, then a healthy one:
/// the time from the first write until the healthy receiver has all 300 (or the count it has after
/// 10 s), and what each dead receiver got meanwhile.
async fn healthy_beside_dead(dead: usize) -> (usize, Duration, Vec<usize>) {
    let mut urls = Vec::new();
    let mut dead_got = Vec::new();
    for _ in 0..dead {
        let (url, got) = receiver(vec![None]).await;
        urls.push(url);
        dead_got.push(got);
    }
    let (healthy, got) = receiver(vec![Some(200)]).await;
    urls.push(healthy);
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    let (app, _ledger, stop) = served_with_hooks(
        &refs,
        server::webhooks::WorkerOptions {
            webhook_allow_private: true,
            ..Default::default()
        },
    )
    .await;
    let start = Instant::now();
    unknowns(&app, 0, 300).await;
    let within = (start + Duration::from_secs(10)).saturating_duration_since(Instant::now());
    let all = wait_for(&got, 300, within).await;
    let took = start.elapsed();
    let dead_counts = dead_got.iter().map(|d| d.all().len()).collect();
    stop.cancel();
    let ids: std::collections::BTreeSet<String> = all
        .iter()
        .map(|(_, h, _)| header(h, "webhook-id").to_owned())
        .collect();
    assert_eq!(ids.len(), all.len(), "each alert once");
    (all.len(), took, dead_counts)
}

/// A receiver that never answers delays only its own deliveries (docs/api.md "Webhooks", "Per
/// endpoint"): beside it a healthy receiver gets all 300 `outcome.unknown` alerts within 10 s of the
/// first write, while the dead one holds at most 4 deliveries in flight (it got exactly 4: none has
/// timed out yet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_receiver_beside_one_that_never_answers_gets_300_alerts_within_10_s() {
    let (n, took, dead) = healthy_beside_dead(1).await;
    eprintln!("beside 1 dead endpoint: the healthy receiver got {n} of 300 in {took:?}; the dead one {dead:?}");
    assert_eq!(n, 300, "within {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(dead, vec![4]);
}

/// The same beside three receivers that never answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_receiver_beside_three_that_never_answer_gets_300_alerts_within_10_s() {
    let (n, took, dead) = healthy_beside_dead(3).await;
    eprintln!("beside 3 dead endpoints: the healthy receiver got {n} of 300 in {took:?}; the dead ones {dead:?}");
    assert_eq!(n, 300, "within {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(dead, vec![4, 4, 4]);
}

/// A server on `clock` with one endpoint (all events) at `url` whose worker is not running yet.
async fn served_without_worker(
    clock: Arc<crate::metrics::Manual>,
    url: &str,
) -> (TestApp, ledger::Ledger) {
    let dir = tempfile::tempdir().unwrap();
    let a = args(dir.path(), 30 * 24 * 3600);
    let built = server::serve::build_with_clock(&a, TOKEN.into(), clock)
        .await
        .unwrap();
    built
        .ledger
        .webhooks()
        .add_endpoint(
            url,
            "outcome.unknown,outcome.unknown_stale,outcome.resolved",
            &server::webhooks::new_secret(),
        )
        .await
        .unwrap();
    let ledger = built.ledger.clone();
    (serve_built(dir, built, ConnLimits::default()).await, ledger)
}

fn start_worker(
    app: &TestApp,
    ledger: &ledger::Ledger,
    options: server::webhooks::WorkerOptions,
) -> CancellationToken {
    let stop = CancellationToken::new();
    tokio::spawn(server::webhooks::run_worker(
        ledger.webhooks(),
        options,
        app.state.metrics.clone(),
        stop.clone(),
    ));
    stop
}

const DROPPED: &str = "outcomes_webhook_outbox_dropped_total{endpoint=\"1\"}";

/// The outbox per endpoint is bounded (docs/api.md "Webhooks", "The bound"): with a bound of 5 and 8
/// pending rows the worker gives up the 3 oldest (never attempted) and counts them in `/metrics`; every
/// write was answered 200 all along; 3 more rows later drop the next 3 oldest pending.
#[tokio::test]
async fn past_the_bound_the_oldest_pending_rows_are_dropped_and_counted() {
    let (url, received) = receiver(vec![Some(200)]).await;
    let clock = Arc::new(crate::metrics::Manual(AtomicI64::new(crate::metrics::T0)));
    let (app, ledger) = served_without_worker(clock.clone(), &url).await;
    for i in 1..=8 {
        app.settled("s-1", "t-1", &format!("m{i}"), "outcome_unknown")
            .await;
    }
    // A loopback destination without --webhook-allow-private: each attempt is refused (failed) at
    // once, nothing is sent; after 5 failures in a row the endpoint waits (the clock stands still).
    let stop = start_worker(
        &app,
        &ledger,
        server::webhooks::WorkerOptions {
            stale_after_secs: 31_536_000,
            webhook_allow_private: false,
            webhook_retry_base_ms: 10_000,
            webhook_outbox_max_pending: 5,
        },
    );
    let all = scrape_after_attempts(&app, 5.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[
            (UNKNOWN_FAILED, 5.0),
            (DROPPED, 3.0),
            (PENDING, 5.0),
            (OLDEST, 0.0)
        ])
    );
    let rows = ledger.webhooks().outbox().await.unwrap();
    let state = |rows: &[ledger::webhooks::OutboxRow]| {
        rows.iter()
            .map(|r| {
                (
                    r.mutation_id.clone(),
                    r.attempts,
                    r.failed_at.is_some(),
                    r.last_error.clone().unwrap_or_default(),
                )
            })
            .collect::<Vec<_>>()
    };
    let dropped = |m: &str| {
        (
            m.to_owned(),
            0,
            true,
            ledger::webhooks::DROPPED_ERROR.to_owned(),
        )
    };
    let refused = "the destination is a private, loopback or link-local address (127.0.0.1); pass \
                   --webhook-allow-private to allow it";
    let tried = |m: &str| (m.to_owned(), 1, false, refused.to_owned());
    assert_eq!(
        state(&rows),
        vec![
            dropped("m1"),
            dropped("m2"),
            dropped("m3"),
            tried("m4"),
            tried("m5"),
            tried("m6"),
            tried("m7"),
            tried("m8"),
        ]
    );

    // Three more writes, all answered 200: the endpoint waits, so they stay pending, and the three
    // oldest pending rows go.
    for i in 9..=11 {
        app.settled("s-1", "t-1", &format!("m{i}"), "outcome_unknown")
            .await;
    }
    let end = Instant::now() + Duration::from_secs(5);
    let mut all = crate::metrics::scrape(&app).await;
    while all.get(DROPPED) != Some(&6.0) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
        all = crate::metrics::scrape(&app).await;
    }
    assert_eq!(
        webhook_series(&all),
        series(&[
            (UNKNOWN_FAILED, 5.0),
            (DROPPED, 6.0),
            (PENDING, 5.0),
            (OLDEST, 0.0)
        ])
    );
    let rows = ledger.webhooks().outbox().await.unwrap();
    let pending = |m: &str| (m.to_owned(), 0, false, String::new());
    assert_eq!(
        state(&rows),
        vec![
            dropped("m1"),
            dropped("m2"),
            dropped("m3"),
            (
                "m4".to_owned(),
                1,
                true,
                ledger::webhooks::DROPPED_ERROR.to_owned()
            ),
            (
                "m5".to_owned(),
                1,
                true,
                ledger::webhooks::DROPPED_ERROR.to_owned()
            ),
            (
                "m6".to_owned(),
                1,
                true,
                ledger::webhooks::DROPPED_ERROR.to_owned()
            ),
            tried("m7"),
            tried("m8"),
            pending("m9"),
            pending("m10"),
            pending("m11"),
        ]
    );
    assert!(received.all().is_empty(), "nothing was sent");
    stop.cancel();
}

/// An endpoint with no delivery for 24 h since its first failure is disabled, and `webhooks list` says
/// so (docs/api.md "Webhooks", "Per endpoint"): 5 unknowns fail at T0 (the endpoint then waits as a
/// whole), one probe at T0+12 h fails, and the probe at T0+24 h 1 min disables it, giving up the row of
/// T0+12 h (only 12 h old) without an attempt; nothing more is queued for it.
#[tokio::test]
async fn an_endpoint_failing_for_24_h_is_disabled_and_listed_so() {
    let (url, received) = receiver(vec![Some(500)]).await;
    let clock = Arc::new(crate::metrics::Manual(AtomicI64::new(crate::metrics::T0)));
    let (app, ledger) = served_without_worker(clock.clone(), &url).await;
    for i in 1..=5 {
        app.settled("s-1", "t-1", &format!("m{i}"), "outcome_unknown")
            .await;
    }
    let stop = start_worker(
        &app,
        &ledger,
        server::webhooks::WorkerOptions {
            stale_after_secs: 31_536_000,
            webhook_allow_private: true,
            webhook_retry_base_ms: 10_000,
            ..Default::default()
        },
    );
    let all = scrape_after_attempts(&app, 5.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[(UNKNOWN_FAILED, 5.0), (PENDING, 5.0), (OLDEST, 0.0)])
    );
    let t0 = ledger::store::format_time(crate::metrics::T0);
    let dir = app._dir.path().to_owned();
    let list = || {
        let (code, stdout, stderr) = webhooks(&dir, &["list"]);
        assert_eq!(code, 0, "{stderr}");
        stdout
    };
    assert_eq!(
        list(),
        format!("1\t{url}\toutcome.unknown,outcome.unknown_stale,outcome.resolved\tadded {t0}\tfailing since {t0} (5 failed attempts)\n")
    );

    // T0+12 h: the endpoint's wait is over; a new unknown; one probe (the earliest due row) fails.
    clock.advance_ms(12 * 3600 * 1000);
    app.settled("s-1", "t-1", "m6", "outcome_unknown").await;
    let all = scrape_after_attempts(&app, 6.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[(UNKNOWN_FAILED, 6.0), (PENDING, 6.0), (OLDEST, 43_200.0)])
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(received.all().len(), 6, "one probe");

    // T0+24 h 1 min: the next probe fails 24 h after the first failure: disabled, every pending row
    // given up (the probe counted gave_up), m6's without an attempt.
    clock.advance_ms(12 * 3600 * 1000 + 60_000);
    let all = scrape_after_attempts(&app, 7.0).await;
    assert_eq!(
        webhook_series(&all),
        series(&[
            (UNKNOWN_FAILED, 6.0),
            (UNKNOWN_GAVE_UP, 1.0),
            (PENDING, 0.0),
            (OLDEST, 0.0)
        ])
    );
    let disabled = ledger::store::format_time(crate::metrics::T0 + 24 * 3600 * 1000 + 60_000);
    assert_eq!(
        list(),
        format!("1\t{url}\toutcome.unknown,outcome.unknown_stale,outcome.resolved\tadded {t0}\tdisabled {disabled} (failing since {t0})\n")
    );
    let rows = ledger.webhooks().outbox().await.unwrap();
    let m6 = rows.iter().find(|r| r.mutation_id == "m6").unwrap();
    assert_eq!(
        (m6.attempts, m6.failed_at, m6.last_error.as_deref()),
        (
            0,
            Some(crate::metrics::T0 + 24 * 3600 * 1000 + 60_000),
            Some("endpoint disabled (no delivery for 24 h since its first failure)")
        )
    );
    // Nothing more is queued for it.
    app.settled("s-1", "t-1", "m7", "outcome_unknown").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ledger.webhooks().outbox().await.unwrap().len(), 6);
    assert_eq!(received.all().len(), 7);
    stop.cancel();
}
