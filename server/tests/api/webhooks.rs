//! Webhooks (docs/api.md "Webhooks"): `outcomes webhooks add|list|remove` as an operator runs it (refused
//! input exits 2 and stores nothing), and the delivery worker against a local receiver: signed per
//! Standard Webhooks, `outcome.unknown` within 2 s of the settle, retries with the same `webhook-id`, 410
//! disables the endpoint, `outcome.resolved` after a reconciliation, and a receiver that never answers
//! does not slow settles.

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
    assert!(
        received.all().len() >= 10,
        "deliveries were attempted: {}",
        received.all().len()
    );
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
    assert_eq!(before["alerted_at"], "2027-01-15T08:00:00Z", "{before}");

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
