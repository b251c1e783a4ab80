//! Several instances on one Postgres (docs/ledger.md "Backends"): two `outcomes serve` processes share a
//! database. Any instance takes any write; 32 concurrent writers spread over both on one turn get unique,
//! strictly increasing revisions; both replay the same; a live subscriber on one instance receives, in
//! revision order, every change written through the other; killing an instance loses nothing it
//! answered; a staff sign-in and a viewer link made on one instance work on the other, and a claim taken
//! through one reaches the other's staff streams live. Runs only when the
//! suite runs on Postgres (`OUTCOMES_TEST_POSTGRES`): a SQLite ledger serves one process.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::binary::{Server, TOKEN};
use crate::helpers::{database_for, enc, form, postgres};

const SESSION: &str = "shared";
const TURN: &str = "t-1";

/// Two servers on the database of `dir`, each with a data directory of its own.
fn two_servers(dir: &std::path::Path, extra: &[&str]) -> (Server, Server, Vec<tempfile::TempDir>) {
    let database = database_for(dir);
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = vec!["--database", database.as_str()];
    args.extend_from_slice(extra);
    let a = Server::start(da.path(), &args);
    let b = Server::start(db.path(), &args);
    (a, b, vec![da, db])
}

/// A host call with the token: status and JSON body (Null when none).
async fn host(
    client: &reqwest::Client,
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> Result<(StatusCode, Value), reqwest::Error> {
    let r = client
        .request(method, format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await?;
    let status = r.status();
    let text = r.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

async fn approve(
    c: &reqwest::Client,
    base: &str,
    m: &str,
) -> Result<(StatusCode, Value), reqwest::Error> {
    host(
        c,
        base,
        reqwest::Method::POST,
        &format!("/api/host/sessions/{}/mutations", enc(SESSION)),
        json!({"logical_turn_id": TURN, "mutation_id": m, "tool": "mcp__dashboards__create"}),
    )
    .await
}

async fn step(
    c: &reqwest::Client,
    base: &str,
    m: &str,
    what: &str,
    body: Value,
) -> Result<(StatusCode, Value), reqwest::Error> {
    host(
        c,
        base,
        reqwest::Method::POST,
        &format!(
            "/api/host/sessions/{}/mutations/{}/{what}",
            enc(SESSION),
            enc(m)
        ),
        body,
    )
    .await
}

/// The replay snapshot of the shared turn as one instance serves it (the exact body).
async fn replay(c: &reqwest::Client, base: &str) -> String {
    let r = c
        .get(format!(
            "{base}/api/mutation-events?session_id={SESSION}&logical_turn_id={TURN}"
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.text().await.unwrap()
}

/// The cookies a response sets, as a `Cookie` header sends them back (`name=value; name=value`).
fn cookies(r: &reqwest::Response) -> String {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").to_owned())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The `mutation_outcome` events of an SSE body: (revision, mutation id, published status).
fn outcomes(sse: &str) -> Vec<(i64, String, String)> {
    sse.split("\n\n")
        .filter_map(|frame| {
            let data = frame.strip_prefix("event: mutation_outcome\ndata: ")?;
            let v: Value = serde_json::from_str(data).ok()?;
            Some((
                v["mutation_revision"].as_i64()?,
                v["outcome"]["mutation_id"].as_str()?.to_owned(),
                v["outcome"]["status"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_postgres_share_writes_replays_live_events_and_sign_ins() {
    if postgres().is_none() {
        eprintln!("skipped on SQLite: several instances need Postgres (OUTCOMES_TEST_POSTGRES)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut a, b, _dirs) = two_servers(dir.path(), &["--access", "signed-in"]);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    // The session exists before B's subscriber opens (the live stream is per session).
    let (s, body) = approve(&client, &a.base, "seed").await.unwrap();
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let mut live = client
        .get(format!("{}/api/run-events?session_id={SESSION}", b.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), StatusCode::OK);

    // 32 writers over both instances on one turn; each request of a writer goes to the other instance
    // than the one before, so every writer crosses instances.
    let writers = 32;
    let mut tasks = Vec::new();
    for i in 0..writers {
        let (c, bases) = (client.clone(), [a.base.clone(), b.base.clone()]);
        tasks.push(tokio::spawn(async move {
            let m = format!("m-{i}");
            let base = |k: usize| bases[(i + k) % 2].clone();
            let (s, body) = approve(&c, &base(0), &m).await.unwrap();
            assert_eq!(s, StatusCode::CREATED, "{body}");
            let (s, intent) = step(&c, &base(1), &m, "intent", json!({"attempt_id": "a1"}))
                .await
                .unwrap();
            assert_eq!(s, StatusCode::OK, "{intent}");
            let status = ["completed", "failed", "outcome_unknown"][i % 3];
            let (s, settled) = step(
                &c,
                &base(2),
                &m,
                "settlement",
                json!({"attempt_id": "a1", "status": status}),
            )
            .await
            .unwrap();
            assert_eq!(s, StatusCode::OK, "{settled}");
            let (r1, r2) = (
                intent["revision"].as_i64().unwrap(),
                settled["revision"].as_i64().unwrap(),
            );
            assert!(r1 < r2, "{m}: {r1} then {r2}");
            (m, (r1, r2), base(2))
        }));
    }
    let mut revisions = Vec::new();
    let mut settles: HashMap<String, i64> = HashMap::new();
    let mut through_a = 0;
    for t in tasks {
        let (m, (r1, r2), settled_on) = t.await.unwrap();
        revisions.extend([r1, r2]);
        settles.insert(m, r2);
        through_a += usize::from(settled_on == a.base);
    }
    assert_eq!(through_a, writers / 2, "half the settles went through A");
    revisions.sort_unstable();
    assert_eq!(
        revisions,
        (1..=2 * writers as i64).collect::<Vec<_>>(),
        "every revision taken once"
    );

    // Both instances replay the turn identically (read-your-writes across instances).
    let (ra, rb) = (
        replay(&client, &a.base).await,
        replay(&client, &b.base).await,
    );
    assert_eq!(ra, rb);
    assert!(ra.contains("\nid: 64\n"), "{ra}");

    // B's subscriber got every settle, those written through A included, in revision order, once each.
    let mut sse = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while outcomes(&sse).len() < writers && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), live.chunk()).await {
            Ok(Ok(Some(bytes))) => sse.push_str(&String::from_utf8_lossy(&bytes)),
            _ => break,
        }
    }
    let got = outcomes(&sse);
    let revs: Vec<i64> = got.iter().map(|g| g.0).collect();
    let mut sorted = revs.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(revs, sorted, "in revision order, each once: {revs:?}");
    let by_mutation: HashMap<String, i64> = got.iter().map(|g| (g.1.clone(), g.0)).collect();
    assert_eq!(by_mutation, settles, "every settle, with its revision");
    assert!(!sse.contains("event: resync"), "{sse}");

    // A staff sign-in made on A works on B; a viewer link minted on A opens on B.
    let out = std::process::Command::new(crate::helpers::binary::BIN)
        .args([
            "staff",
            "add",
            "ada",
            "--database",
            &database_for(dir.path()),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let password = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .to_owned();
    let signed = client
        .post(format!("{}/sign-in", a.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", &a.base)
        .body(form(&[
            ("name", "ada"),
            ("password", &password),
            ("next", "/unknowns"),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), StatusCode::SEE_OTHER);
    let cookie = cookies(&signed);
    assert!(!cookie.is_empty());
    let unknowns = |base: String, cookie: Option<String>| {
        let c = client.clone();
        async move {
            let mut r = c.get(format!("{base}/api/unknowns"));
            if let Some(cookie) = cookie {
                r = r.header("cookie", cookie);
            }
            r.send().await.unwrap().status()
        }
    };
    assert_eq!(
        unknowns(b.base.clone(), Some(cookie.clone())).await,
        StatusCode::OK
    );
    assert_eq!(
        unknowns(b.base.clone(), None).await,
        StatusCode::UNAUTHORIZED
    );
    // A claim taken through A reaches a staff stream on B as `claim_changed` (docs/api.md "Claims"),
    // within 2 s, as it does on A; then its release.
    let mut staff_live = client
        .get(format!("{}/api/run-events?session_id={SESSION}", b.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(staff_live.status(), StatusCode::OK);
    let claim_changed = "event: claim_changed\ndata: {\"mutation_id\":\"seed\"}\n\n";
    for (method, status) in [
        (reqwest::Method::POST, StatusCode::CREATED),
        (reqwest::Method::DELETE, StatusCode::NO_CONTENT),
    ] {
        let r = client
            .request(
                method.clone(),
                format!("{}/api/sessions/{SESSION}/mutations/seed/claim", a.base),
            )
            .header("cookie", &cookie)
            .header("origin", &a.base)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{method} claim through A");
        let sent = Instant::now();
        let mut seen = String::new();
        let arrived = tokio::time::timeout(Duration::from_secs(2), async {
            while let Ok(Some(chunk)) = staff_live.chunk().await {
                seen.push_str(&String::from_utf8_lossy(&chunk));
                if seen.contains(claim_changed) {
                    return;
                }
            }
        })
        .await;
        assert!(
            arrived.is_ok(),
            "{method}: no claim_changed on B within 2 s ({:?}): {seen}",
            sent.elapsed()
        );
    }
    drop(staff_live);
    let (s, link) = host(
        &client,
        &a.base,
        reqwest::Method::POST,
        &format!("/api/host/sessions/{SESSION}/viewer-links"),
        json!({}),
    )
    .await
    .unwrap();
    assert_eq!(s, StatusCode::CREATED, "{link}");
    let opened = client
        .get(format!("{}{}", b.base, link["url"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), StatusCode::SEE_OTHER);
    // Revoking the links through A closes the viewer's stream on B at once (not at its next heartbeat).
    let viewer_cookie = cookies(&opened);
    let mut viewer = client
        .get(format!("{}/api/run-events?session_id={SESSION}", b.base))
        .header("cookie", viewer_cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(viewer.status(), StatusCode::OK);
    let (s, body) = host(
        &client,
        &a.base,
        reqwest::Method::DELETE,
        &format!("/api/host/sessions/{SESSION}/viewer-links"),
        Value::Null,
    )
    .await
    .unwrap();
    assert!(s.is_success(), "{s} {body}");
    let revoked = Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = viewer.chunk().await {}
    })
    .await;
    assert!(
        closed.is_ok(),
        "the viewer's stream on B is still open after 5 s"
    );
    assert!(revoked.elapsed() < Duration::from_secs(5));

    // Deleting a session through A ends its streams on B.
    let (s, body) = host(
        &client,
        &a.base,
        reqwest::Method::POST,
        "/api/host/sessions/other/mutations",
        json!({"logical_turn_id": TURN, "mutation_id": "o-1", "tool": "t"}),
    )
    .await
    .unwrap();
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let mut other = client
        .get(format!("{}/api/run-events?session_id=other", b.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    let (s, body) = host(
        &client,
        &a.base,
        reqwest::Method::DELETE,
        "/api/host/sessions/other",
        Value::Null,
    )
    .await
    .unwrap();
    assert!(s.is_success(), "{s} {body}");
    let ended = crate::helpers::read_until(&mut other, "event: session_ended").await;
    assert!(
        ended.contains("event: session_ended\ndata: {\"reason\":\"deleted\"}"),
        "{ended}"
    );

    // kill -9 of A while writers keep writing through both: everything answered 2xx, by either, is
    // there afterwards, with its status and revision, as B reads it.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (c, bases) = (client.clone(), [a.base.clone(), b.base.clone()]);
        tasks.push(tokio::spawn(async move {
            let mut answered: Vec<(String, String, i64)> = Vec::new();
            for n in 0..200 {
                let m = format!("k-{i}-{n}");
                let base = &bases[(i + n) % 2];
                let Ok((s, _)) = approve(&c, base, &m).await else {
                    continue;
                };
                if s != StatusCode::CREATED {
                    continue;
                }
                let Ok((s, _)) = step(&c, base, &m, "intent", json!({"attempt_id": "a1"})).await
                else {
                    continue;
                };
                if s != StatusCode::OK {
                    continue;
                }
                if let Ok((StatusCode::OK, v)) = step(
                    &c,
                    base,
                    &m,
                    "settlement",
                    json!({"attempt_id": "a1", "status": "completed"}),
                )
                .await
                {
                    answered.push((m, "completed".into(), v["revision"].as_i64().unwrap()));
                }
            }
            answered
        }));
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    a.kill();
    let mut answered = Vec::new();
    for t in tasks {
        answered.extend(t.await.unwrap());
    }
    assert!(
        answered.len() > 100,
        "enough settles answered: {}",
        answered.len()
    );
    let r = client
        .get(format!(
            "{}/api/mutation-outcomes?session_id={SESSION}",
            b.base
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let history: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    let stored: BTreeMap<String, String> = history["mutation_outcomes"]
        .as_array()
        .expect("a list of records")
        .iter()
        .map(|o| {
            (
                o["mutation_id"].as_str().unwrap_or_default().to_owned(),
                o["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for (m, status, _) in &answered {
        assert_eq!(
            stored.get(m),
            Some(status),
            "{m} was answered and must be there"
        );
    }
    // Revisions answered around the kill stay unique too.
    let mut seen: Vec<i64> = answered.iter().map(|a| a.2).collect();
    seen.sort_unstable();
    let n = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), n, "no revision answered twice");
}

/// A TCP proxy to the suite's Postgres that the test can cut: every open connection dropped and new
/// ones refused while `up` is false.
struct Proxy {
    port: u16,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (up2, conns2) = (up.clone(), conns.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                if !up2.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let upstream = upstream.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                conns2.lock().unwrap().push(task.abort_handle());
            }
        });
        Proxy { port, up, conns }
    }

    fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }

    fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The database goes away while the server runs: writes answer 503 with `Retry-After` and change
/// nothing; when it is back, writes succeed again by themselves, the live stream is told to `resync`
/// (it may have missed what was committed meanwhile) and then carries new events; nothing answered 2xx
/// is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_answers_503_with_retry_after_and_recovers_by_itself() {
    let Some(base) = postgres() else {
        eprintln!("skipped on SQLite: a database connection to lose is Postgres's");
        return;
    };
    let url = url::Url::parse(&base).unwrap();
    let upstream = format!(
        "{}:{}",
        url.host_str().unwrap_or("127.0.0.1"),
        url.port().unwrap_or(5432)
    );
    let proxy = Proxy::start(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let mut proxied = url::Url::parse(&database_for(dir.path())).unwrap();
    proxied.set_host(Some("127.0.0.1")).unwrap();
    proxied.set_port(Some(proxy.port)).unwrap();
    let database = proxied.to_string();
    let app = crate::helpers::spawn_configured(
        |a| {
            a.database = Some(database);
            a.write_wait_ms = 1000;
        },
        server::conn::ConnLimits::default(),
    )
    .await;
    app.settled("s", "t", "m-before", "completed").await;
    let mut live = app.get("/api/run-events?session_id=s").await;
    assert_eq!(live.status(), StatusCode::OK);

    proxy.cut();
    let mut refused = 0;
    for n in 0..3 {
        let (status, body) = app.approve("s", "t", &format!("m-down-{n}")).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(
            ["unavailable", "busy"].contains(&body["error"]["code"].as_str().unwrap_or("")),
            "{body}"
        );
        refused += 1;
    }
    let r = app
        .client
        .post(format!("{}/api/host/sessions/s/mutations", app.base))
        .bearer_auth(crate::helpers::TOKEN)
        .json(&json!({"logical_turn_id": "t", "mutation_id": "m-down-x", "tool": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        r.headers().get("retry-after").is_some(),
        "{:?}",
        r.headers()
    );

    proxy.restore();
    // Recovers by itself: the same write succeeds within a few seconds.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut status = StatusCode::SERVICE_UNAVAILABLE;
    while Instant::now() < deadline {
        status = app.approve("s", "t", "m-after").await.0;
        if status == StatusCode::CREATED {
            break;
        }
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(status, StatusCode::CREATED, "writes succeed again");
    // What was refused while down changed nothing.
    for n in 0..refused {
        let (s, _) = app
            .step(
                "s",
                &format!("m-down-{n}"),
                "intent",
                json!({"attempt_id": "a1"}),
            )
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND);
    }
    // The stream resyncs once the listener is back, then carries new events.
    let got = crate::helpers::read_until(&mut live, "event: resync").await;
    // Naming no turn: every turn (what was committed meanwhile may be in any).
    assert!(
        got.contains("event: resync\ndata: {\"logical_turn_ids\":[]}\n\n"),
        "{got}"
    );
    app.step("s", "m-after", "intent", json!({"attempt_id": "a1"}))
        .await;
    app.step(
        "s",
        "m-after",
        "settlement",
        json!({"attempt_id": "a1", "status": "completed"}),
    )
    .await;
    let got = crate::helpers::read_until(&mut live, "\"m-after\"").await;
    assert!(got.contains("\"mutation_id\":\"m-after\""), "{got}");
    // Nothing answered was lost.
    let (s, history) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(s, StatusCode::OK);
    let ids: Vec<&str> = history["mutation_outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["mutation_id"].as_str())
        .collect();
    assert_eq!(ids, vec!["m-before", "m-after"]);
}

/// A lock held in the database (a DBA's `LOCK TABLE`, a `VACUUM FULL`) never hangs a read: after the
/// write wait it answers 503 `busy` with `Retry-After`, and a page 503 with `Retry-After` too (was: the
/// read hung as long as the lock was held, the page 502). (A streamed read, such as the history, has
/// sent its 200 by then: it closes the connection before the body's end, docs/api.md "History".)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_behind_a_database_lock_answers_503_after_the_wait_and_so_does_its_page() {
    if postgres().is_none() {
        eprintln!("skipped on SQLite: a lock that blocks reads is Postgres's");
        return;
    }
    use sqlx::Connection;
    let app = crate::helpers::spawn_configured(
        |a| a.write_wait_ms = 500,
        server::conn::ConnLimits::default(),
    )
    .await;
    app.settled("s", "t", "m1", "completed").await;
    let mut dba = sqlx::PgConnection::connect(&database_for(app._dir.path()))
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut dba).await.unwrap();
    sqlx::query("LOCK TABLE entries IN ACCESS EXCLUSIVE MODE")
        .execute(&mut dba)
        .await
        .unwrap();
    let started = Instant::now();
    let r = app.get("/api/sessions").await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["retry-after"], "1");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "busy");
    let page = app.get("/sessions/s").await;
    assert_eq!(page.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(page.headers()["retry-after"], "1");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    sqlx::query("ROLLBACK").execute(&mut dba).await.unwrap();
    let (status, _) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(status, StatusCode::OK);
}
