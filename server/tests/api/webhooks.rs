//! Webhooks (docs/api.md "Webhooks"): `outcomes webhooks add|list|remove` as an operator runs it (refused
//! input exits 2 and stores nothing), and the delivery worker against a local receiver: signed per
//! Standard Webhooks, `outcome.unknown` within 2 s of the settle, retries with the same `webhook-id`, 410
//! disables the endpoint, `outcome.resolved` after a reconciliation, and a receiver that never answers
//! does not slow settles.

use std::process::Command;
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
