//! `GET /metrics` (docs/api.md "Metrics"): exact values after a known sequence of writes on a manual
//! clock (the ledger's gauges read at the scrape, the transitions, the host request histogram, busy
//! answers, failed credentials, live streams), the support queue's oldest unknown as the same figure,
//! who may read it (docs/access.md), the separate listener of `--metrics-addr`, and two servers on one
//! Postgres database reporting the same ledger gauges.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::conn::ConnLimits;
use server::serve::ServeArgs;

use crate::helpers::{args, database_for, enc, postgres, TestApp, STAFF, TOKEN};

/// A clock the test moves (ms since the Unix epoch).
pub(crate) struct Manual(pub(crate) AtomicI64);

impl ledger::Clock for Manual {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Manual {
    pub(crate) fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

pub(crate) const T0: i64 = 1_800_000_000_000;
const OTHER_TOOL: &str = "mcp__codehost__create_issue";

/// A server on `database` (the test defaults, `edit` applied) whose ledger runs on `clock`.
async fn spawn_on(
    dir: tempfile::TempDir,
    database: String,
    clock: Arc<Manual>,
    edit: impl FnOnce(&mut ServeArgs),
) -> TestApp {
    let mut a = args(dir.path(), 3600);
    a.database = Some(database);
    edit(&mut a);
    let built = server::serve::build_with_clock(&a, TOKEN.into(), clock)
        .await
        .expect("server builds");
    crate::helpers::serve_built(dir, built, ConnLimits::default()).await
}

async fn spawn_clocked(clock: Arc<Manual>, edit: impl FnOnce(&mut ServeArgs)) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let database = database_for(dir.path());
    spawn_on(dir, database, clock, edit).await
}

/// The samples of an exposition, `name{labels}` → value, parsed by the text format's line rule (a
/// comment starts with `#`; a sample is the series and its value separated by the last space).
pub(crate) fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("a sample line");
            (series.to_owned(), value.parse::<f64>().expect("a value"))
        })
        .collect()
}

/// `GET /metrics` with the host token: status, `Content-Type` and the samples.
pub(crate) async fn scrape(app: &TestApp) -> BTreeMap<String, f64> {
    let r = app
        .client
        .get(format!("{}/metrics", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    samples(&r.text().await.unwrap())
}

/// The ledger's gauges of a scrape (every sample named after one of them, the webhook outbox's
/// included).
fn ledger_gauges(all: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    all.iter()
        .filter(|(k, _)| {
            k.starts_with("outcomes_unknown_")
                || k.starts_with("outcomes_in_flight")
                || k.starts_with("outcomes_webhook_outbox_")
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

pub(crate) fn expect(all: &BTreeMap<String, f64>, wanted: &[(&str, f64)]) {
    for (series, value) in wanted {
        assert_eq!(all.get(*series), Some(value), "{series} in {all:#?}");
    }
}

async fn approve_tool(app: &TestApp, session: &str, m: &str, tool: &str) {
    let (s, body) = app
        .host(
            Method::POST,
            &format!("/api/host/sessions/{}/mutations", enc(session)),
            json!({"logical_turn_id": "t-1", "mutation_id": m, "tool": tool}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
}

async fn ok_step(app: &TestApp, session: &str, m: &str, what: &str, body: Value) {
    let (s, answer) = app.step(session, m, what, body).await;
    assert_eq!(s, StatusCode::OK, "{what}: {answer}");
}

/// The queue's `oldest_unknown_age_secs`.
async fn queue_oldest(app: &TestApp) -> Value {
    let (s, page) = app.get_json("/api/unknowns").await;
    assert_eq!(s, StatusCode::OK, "{page}");
    page["oldest_unknown_age_secs"].clone()
}

/// The OpenTelemetry outbox's backlog (docs/api.md "Metrics"): with the export's trigger on and no
/// worker running (no endpoint in this test), two settled writes wait; their gauges read the rows and the
/// oldest one's change; the export worker's counter has no series before its first span.
#[tokio::test]
async fn the_otel_outbox_backlog_is_read_at_each_scrape() {
    let clock = Arc::new(Manual(AtomicI64::new(T0)));
    let app = spawn_clocked(clock.clone(), |_| {}).await;
    app.state.otel.set_enabled(true).await.unwrap();
    app.settled("s-1", "t-1", "m1", "completed").await;
    clock.advance_ms(4_000);
    app.settled("s-1", "t-1", "m2", "outcome_unknown").await;
    clock.advance_ms(3_500);
    let all = scrape(&app).await;
    expect(
        &all,
        &[
            ("outcomes_otel_outbox_pending", 2.0),
            ("outcomes_otel_outbox_oldest_pending_age_seconds", 7.0),
        ],
    );
    assert!(
        !all.keys()
            .any(|k| k.starts_with("outcomes_otel_spans_total")),
        "{all:#?}"
    );
}

/// The known sequence of the issue (the same as e2e/metrics/test_metrics.py), on a manual clock:
/// T0 m1 (dashboards) settles unknown; T0+10 s m2 in flight, m3 completes, and a batch approves, starts
/// and settles m4 (codehost) unknown; a wrong token; a write refused 503 `busy`; one live stream; at
/// T0+40.5 s every figure is exact; reconciling m1 makes m4 the oldest.
#[tokio::test]
async fn every_figure_is_exact_after_a_known_sequence_of_writes() {
    let clock = Arc::new(Manual(AtomicI64::new(T0)));
    let app = spawn_clocked(clock.clone(), |a| a.write_wait_ms = 300).await;
    let first = scrape(&app).await;
    expect(
        &first,
        &[
            ("outcomes_unknown_open", 0.0),
            ("outcomes_unknown_oldest_age_seconds", 0.0),
            ("outcomes_in_flight", 0.0),
            ("outcomes_in_flight_oldest_age_seconds", 0.0),
            ("outcomes_live_streams", 0.0),
            ("outcomes_busy_total", 0.0),
            ("outcomes_failed_credentials_total", 0.0),
            ("outcomes_deadline_settlements_total", 0.0),
            ("outcomes_webhook_outbox_pending", 0.0),
            ("outcomes_webhook_outbox_oldest_pending_age_seconds", 0.0),
            ("outcomes_otel_outbox_pending", 0.0),
            ("outcomes_otel_outbox_oldest_pending_age_seconds", 0.0),
        ],
    );
    assert_eq!(first.len(), 12, "{first:#?}");
    assert_eq!(queue_oldest(&app).await, Value::Null);

    app.settled("s-1", "t-1", "m1", "outcome_unknown").await;
    clock.advance_ms(10_000);
    app.start("s-1", "t-1", "m2").await;
    app.settled("s-1", "t-1", "m3", "completed").await;
    let (s, body) = app
        .host(
            Method::POST,
            "/api/host/batch",
            json!({"operations": [
                {"op": "approve", "session_key": "s-2", "mutation_id": "m4", "logical_turn_id": "t-1", "tool": OTHER_TOOL},
                {"op": "intent", "session_key": "s-2", "mutation_id": "m4", "attempt_id": "a1"},
                {"op": "settle", "session_key": "s-2", "mutation_id": "m4", "attempt_id": "a1", "status": "outcome_unknown"},
                {"op": "settle", "session_key": "s-2", "mutation_id": "nope", "attempt_id": "a1", "status": "completed"},
            ]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["results"][3]["status"], 404, "{body}");
    // A wrong bearer token: one failed credential.
    let r = app
        .client
        .get(format!("{}/api/sessions", app.base))
        .bearer_auth("not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // A write while another connection holds the ledger's write lock: 503 busy after 300 ms.
    let blocker = crate::hardening::hold_write_lock(&database_for(app._dir.path())).await;
    let (s, body) = app.approve("s-1", "t-1", "m5").await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "busy");
    drop(blocker);
    // One live stream, open while scraped.
    let stream = app.get("/api/run-events?session_id=s-1").await;
    assert_eq!(stream.status(), StatusCode::OK);
    clock.advance_ms(30_500);

    let all = scrape(&app).await;
    let d = "mcp__dashboards__create";
    expect(
        &all,
        &[
            ("outcomes_unknown_open", 2.0),
            (&format!("outcomes_unknown_open{{tool=\"{d}\"}}"), 1.0),
            (
                &format!("outcomes_unknown_open{{tool=\"{OTHER_TOOL}\"}}"),
                1.0,
            ),
            ("outcomes_unknown_oldest_age_seconds", 40.0),
            ("outcomes_in_flight", 1.0),
            ("outcomes_in_flight_oldest_age_seconds", 30.0),
            ("outcomes_live_streams", 1.0),
            ("outcomes_busy_total", 1.0),
            ("outcomes_failed_credentials_total", 1.0),
            (
                "outcomes_transitions_total{kind=\"approve\",status=\"approved\"}",
                4.0,
            ),
            (
                "outcomes_transitions_total{kind=\"intent\",status=\"execution_started\"}",
                4.0,
            ),
            (
                "outcomes_transitions_total{kind=\"settle\",status=\"outcome_unknown\"}",
                2.0,
            ),
            (
                "outcomes_transitions_total{kind=\"settle\",status=\"completed\"}",
                1.0,
            ),
            // m1, m2, m3, and m5 refused busy.
            (
                "outcomes_host_request_duration_seconds_count{operation=\"approve\"}",
                4.0,
            ),
            (
                "outcomes_host_request_duration_seconds_count{operation=\"intent\"}",
                3.0,
            ),
            (
                "outcomes_host_request_duration_seconds_count{operation=\"settle\"}",
                2.0,
            ),
            (
                "outcomes_host_request_duration_seconds_count{operation=\"batch\"}",
                1.0,
            ),
            (
                "outcomes_host_request_duration_seconds_bucket{operation=\"batch\",le=\"+Inf\"}",
                1.0,
            ),
        ],
    );
    // Exactly these transitions and operations: nothing else was counted.
    let series = |prefix: &str| all.keys().filter(|k| k.starts_with(prefix)).count();
    assert_eq!(series("outcomes_transitions_total"), 4, "{all:#?}");
    assert_eq!(
        series("outcomes_host_request_duration_seconds_count"),
        4,
        "{all:#?}"
    );
    // The busy approve waited its 300 ms: above the 0.25 s bucket.
    assert_eq!(
        all["outcomes_host_request_duration_seconds_bucket{operation=\"approve\",le=\"0.25\"}"],
        3.0
    );
    assert_eq!(queue_oldest(&app).await, json!(40));

    // Reconciling m1 leaves m4 (T0+10 s) the oldest unknown: 30 s; its tool's series is gone.
    ok_step(
        &app,
        "s-1",
        "m1",
        "reconciliation",
        json!({"attempt_id": "a1", "completed": true,
               "evidence": {"source": "dashboards", "reference": "d-1", "observed_at": "2027-01-15T08:05:00Z"}}),
    )
    .await;
    drop(stream);
    let all = scrape(&app).await;
    expect(
        &all,
        &[
            ("outcomes_unknown_open", 1.0),
            (
                &format!("outcomes_unknown_open{{tool=\"{OTHER_TOOL}\"}}"),
                1.0,
            ),
            ("outcomes_unknown_oldest_age_seconds", 30.0),
            (
                "outcomes_transitions_total{kind=\"reconcile\",status=\"completed\"}",
                1.0,
            ),
        ],
    );
    assert!(
        !all.contains_key(&format!("outcomes_unknown_open{{tool=\"{d}\"}}")),
        "{all:#?}"
    );
    assert_eq!(queue_oldest(&app).await, json!(30));
}

/// Reads closed (`--access signed-in`): 401 JSON without a credential or with a wrong token (counted as
/// a failed credential); 200 with the host token, a staff token or a staff sign-in; 404 for a viewer.
/// Open on loopback under `auto`, but only for a request whose `Host` names the loopback.
#[tokio::test]
async fn metrics_follow_read_access() {
    let clock = Arc::new(Manual(AtomicI64::new(T0)));
    let closed = spawn_clocked(clock.clone(), |a| {
        a.access = server::serve::AccessArg::SignedIn
    })
    .await;
    let url = format!("{}/metrics", closed.base);
    let r = closed.client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    let r = closed
        .client
        .get(&url)
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = closed
        .client
        .get(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r
        .text()
        .await
        .unwrap()
        .lines()
        .any(|l| l == "outcomes_failed_credentials_total 1"));
    // Staff: a token.
    closed.add_staff(STAFF, crate::helpers::PASSWORD).await;
    let staff = closed.staff_token().await;
    let r = closed
        .client
        .get(&url)
        .bearer_auth(&staff)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // A viewer of one session: 404, as the other cross-session reads.
    closed.settled("s-1", "t-1", "m1", "completed").await;
    let (s, link) = closed
        .host(
            Method::POST,
            "/api/host/sessions/s-1/viewer-links",
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{link}");
    let token = link["url"].as_str().unwrap().trim_start_matches("/v/");
    let r = closed
        .client
        .get(&url)
        .header("cookie", format!("outcomes_viewer={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // auto on loopback: open, but not to a request naming another host (DNS rebinding).
    let open = spawn_clocked(clock, |_| {}).await;
    let url = format!("{}/metrics", open.base);
    let r = open.client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = open
        .client
        .get(&url)
        .header("host", "metrics.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// `--metrics-addr`: the separate listener answers `GET /metrics` (and a JSON 404 elsewhere); on a
/// non-loopback address it needs a credential even where the main listener's reads are open.
#[tokio::test]
async fn the_separate_listener_serves_metrics_and_closes_reads_off_loopback() {
    let clock = Arc::new(Manual(AtomicI64::new(T0)));
    let app = spawn_clocked(clock, |_| {}).await;
    app.settled("s-1", "t-1", "m1", "outcome_unknown").await;
    for (declared, open) in [("127.0.0.1:9", true), ("0.0.0.0:9", false)] {
        let router = server::serve::listener_router(&app.state, declared.parse().unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(server::conn::serve(
            listener,
            router,
            ConnLimits::default(),
            std::future::pending::<()>(),
        ));
        let r = app
            .client
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap();
        let want = if open {
            StatusCode::OK
        } else {
            StatusCode::UNAUTHORIZED
        };
        assert_eq!(r.status(), want, "{declared}");
        let r = app
            .client
            .get(format!("{base}/metrics"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r
            .text()
            .await
            .unwrap()
            .lines()
            .any(|l| l == "outcomes_unknown_open 1"));
        let r = app
            .client
            .get(format!("{base}/api/sessions"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            r.json::<Value>().await.unwrap()["error"]["code"],
            "not_found"
        );
    }
}

/// Two servers on one Postgres database (docs/ledger.md "Backends") report the same ledger gauges (the
/// webhook outbox's backlog included), whichever took the writes; their own counters stay their own.
/// Postgres only.
#[tokio::test]
async fn two_servers_on_one_postgres_database_report_the_same_ledger_gauges() {
    if postgres().is_none() {
        eprintln!("skipped on SQLite: two servers share a ledger only on Postgres");
        return;
    }
    let clock = Arc::new(Manual(AtomicI64::new(T0)));
    let dir = tempfile::tempdir().unwrap();
    let database = database_for(dir.path());
    let a = spawn_on(dir, database.clone(), clock.clone(), |_| {}).await;
    let b = spawn_on(
        tempfile::tempdir().unwrap(),
        database,
        clock.clone(),
        |_| {},
    )
    .await;
    // A webhook endpoint no worker delivers to (none runs here): its outbox rows stay pending.
    a.state
        .webhooks
        .add_endpoint("https://alerts.example/hook", "outcome.unknown", "whsec_x")
        .await
        .unwrap();
    a.settled("s-1", "t-1", "m1", "outcome_unknown").await;
    clock.advance_ms(5_000);
    b.start("s-2", "t-1", "m2").await;
    approve_tool(&b, "s-2", "m3", OTHER_TOOL).await;
    ok_step(&b, "s-2", "m3", "intent", json!({"attempt_id": "a1"})).await;
    ok_step(
        &b,
        "s-2",
        "m3",
        "settlement",
        json!({"attempt_id": "a1", "status": "outcome_unknown"}),
    )
    .await;
    clock.advance_ms(7_250);
    let (on_a, on_b) = (scrape(&a).await, scrape(&b).await);
    assert_eq!(ledger_gauges(&on_a), ledger_gauges(&on_b));
    expect(
        &on_a,
        &[
            ("outcomes_unknown_open", 2.0),
            ("outcomes_unknown_oldest_age_seconds", 12.0),
            ("outcomes_in_flight", 1.0),
            ("outcomes_in_flight_oldest_age_seconds", 7.0),
            ("outcomes_webhook_outbox_pending", 2.0),
            ("outcomes_webhook_outbox_oldest_pending_age_seconds", 12.0),
            (
                "outcomes_transitions_total{kind=\"settle\",status=\"outcome_unknown\"}",
                1.0,
            ),
        ],
    );
    expect(
        &on_b,
        &[(
            "outcomes_transitions_total{kind=\"settle\",status=\"outcome_unknown\"}",
            1.0,
        )],
    );
    assert_eq!(queue_oldest(&a).await, json!(12));
    assert_eq!(queue_oldest(&b).await, json!(12));
}
