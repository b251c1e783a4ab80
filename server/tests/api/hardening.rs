//! Concurrent, vanishing and greedy clients, and a ledger another process holds (docs/api.md, "Limits").

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use server::serve::ServeArgs;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use server::conn::ConnLimits;

use crate::helpers::{
    database_for, postgres, read_until, record, spawn_configured, TestApp, TOKEN,
};

/// A server like `spawn()`, with `edit` applied to its arguments first.
async fn spawn_with(edit: impl FnOnce(&mut ServeArgs)) -> TestApp {
    spawn_configured(edit, ConnLimits::default()).await
}

/// A server with the given connection limits (and otherwise the defaults).
async fn spawn_with_limits(limits: ConnLimits) -> TestApp {
    spawn_configured(|_| {}, limits).await
}

/// Whatever a stream still sends until it ends (within 5 s).
async fn rest_of_stream(stream: reqwest::Response) -> String {
    tokio::time::timeout(Duration::from_secs(5), stream.text())
        .await
        .expect("the stream ends")
        .unwrap()
}

#[tokio::test]
async fn deleting_a_session_sends_session_ended_and_ends_its_live_streams() {
    let app = spawn_with(|_| {}).await;
    app.settled("s", "t", "m1", "completed").await;
    let mut stream = app.get("/api/run-events?session_id=s").await;
    assert_eq!(stream.status(), StatusCode::OK);
    assert_eq!(app.state.hub.subscriber_count("s"), 1);
    app.settled("s", "t", "m2", "failed").await;
    let first = read_until(&mut stream, "\"latest_revision\":4}\n\n").await;
    assert_eq!(
        first,
        format!(
            "event: turn_changed\ndata: {{\"logical_turn_id\":\"t\",\"latest_revision\":3}}\n\n\
             event: mutation_outcome\ndata: {{\"mutation_revision\":4,\"outcome\":{}}}\n\n\
             event: turn_changed\ndata: {{\"logical_turn_id\":\"t\",\"latest_revision\":4}}\n\n",
            record("t", "m2", "failed")
        )
    );
    let r = app
        .client
        .delete(format!("{}/api/host/sessions/s", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // The rest of the stream: the end event, then the body ends.
    let rest = rest_of_stream(stream).await;
    assert_eq!(
        rest,
        "event: session_ended\ndata: {\"reason\":\"deleted\"}\n\n"
    );
    assert_eq!(app.state.hub.subscriber_count("s"), 0);
}

#[tokio::test]
async fn an_expired_session_gets_session_ended_when_the_retention_sweep_deletes_it() {
    let app = spawn_with(|a| a.session_ttl_secs = 1).await;
    app.settled("s", "t", "m1", "completed").await;
    let stream = app.get("/api/run-events?session_id=s").await;
    assert_eq!(stream.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let rules = ledger::engine::PurgeRules {
        grace: Duration::ZERO,
        mode: ledger::engine::PurgeMode::Sweep,
        paced: None,
    };
    assert_eq!(
        app.state.engine.purge_expired(rules).await.unwrap().deleted,
        ["s"]
    );
    let rest = rest_of_stream(stream).await;
    assert_eq!(
        rest,
        "event: session_ended\ndata: {\"reason\":\"expired\"}\n\n"
    );
}

#[tokio::test]
async fn live_streams_past_the_caps_answer_503_json_with_retry_after() {
    let app = spawn_with(|a| {
        a.max_live_streams = 3;
        a.max_live_streams_per_session = 2;
    })
    .await;
    for s in ["a", "b"] {
        app.settled(s, "t", "m", "completed").await;
    }
    let a1 = app.get("/api/run-events?session_id=a").await;
    let _a2 = app.get("/api/run-events?session_id=a").await;
    let refused = app.get("/api/run-events?session_id=a").await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {"code": "too_many_streams", "message": "this session has as many live streams open as the server allows (2)"}})
    );
    let _b1 = app.get("/api/run-events?session_id=b").await;
    let refused = app.get("/api/run-events?session_id=b").await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "the server has as many live streams open as it allows (3)"
    );
    // An unknown session is still a 404 first.
    assert_eq!(
        app.get("/api/run-events?session_id=nobody").await.status(),
        StatusCode::NOT_FOUND
    );
    // A client that leaves frees its place at once.
    drop(a1);
    let mut ok = false;
    for _ in 0..50 {
        let r = app.get("/api/run-events?session_id=b").await;
        if r.status() == StatusCode::OK {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok, "a freed place is taken again");
}

/// Thousands of live streams on a quiet session, each reset by its client right after its headers:
/// every subscription is freed without any event being published, and a new stream still opens and
/// receives events afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_reset_by_their_clients_are_freed_without_any_event() {
    let app = spawn_with(|a| a.max_live_streams = 100_000).await;
    app.settled("quiet", "t", "m1", "completed").await;
    let addr = app.base.trim_start_matches("http://").to_owned();
    let request = "GET /api/run-events?session_id=quiet HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";
    let rounds = 3_000;
    for _ in 0..rounds {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        // Linger 0: close sends RST at once (it never blocks, which is why tokio deprecates linger).
        #[allow(deprecated)]
        s.set_linger(Some(Duration::ZERO)).unwrap();
        drop(s); // RST
    }
    let mut left = usize::MAX;
    for _ in 0..100 {
        left = app.state.hub.total_subscribers();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(left, 0, "subscriptions left after {rounds} resets");
    let mut stream = app.get("/api/run-events?session_id=quiet").await;
    assert_eq!(stream.status(), StatusCode::OK);
    app.settled("quiet", "t", "m2", "completed").await;
    let got = read_until(&mut stream, "\"m2\"").await;
    assert!(got.contains("\"mutation_id\":\"m2\""), "{got}");
}

/// A write while another connection holds SQLite's write lock (on Postgres: a lock on the `turns` table
/// that the write's row locks wait for) waits up to `--write-wait-ms`, then answers 503 `busy` with
/// `Retry-After` and changes nothing; once the lock is free the same request succeeds.
#[tokio::test]
async fn a_write_behind_another_process_lock_answers_503_busy_after_the_wait() {
    let app = spawn_with(|a| a.write_wait_ms = 300).await;
    app.settled("s", "t", "m1", "completed").await;
    // Another process: a plain connection to the same database, holding the lock.
    let blocker = hold_write_lock(&database_for(app._dir.path())).await;
    let started = std::time::Instant::now();
    let (status, body) = app.approve("s", "t", "m2").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "busy");
    assert!(started.elapsed() >= Duration::from_millis(250), "it waited");
    drop(blocker);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (status, body) = app.approve("s", "t", "m2").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// Holds `BEGIN IMMEDIATE` on the database through a connection of its own (as `sqlite3` or a backup tool in
/// another process would), on a thread of its own, until the returned sender is dropped.
pub(crate) async fn hold_write_lock(db: &str) -> tokio::sync::oneshot::Sender<()> {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let (held_tx, held) = tokio::sync::oneshot::channel::<()>();
    if postgres().is_some() {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(db).await.expect("connect");
        sqlx::query("BEGIN").execute(&mut c).await.expect("begin");
        sqlx::query("LOCK TABLE turns IN EXCLUSIVE MODE")
            .execute(&mut c)
            .await
            .expect("lock");
        tokio::spawn(async move {
            let _ = released.await;
            let _ = sqlx::query("ROLLBACK").execute(&mut c).await;
            let _ = c.close().await;
        });
        return release;
    }
    let _ = &held_tx;
    let url = format!("sqlite://{db}");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            use sqlx::Connection;
            let mut c = sqlx::SqliteConnection::connect(&url)
                .await
                .expect("connect");
            sqlx::query("BEGIN IMMEDIATE")
                .execute(&mut c)
                .await
                .expect("lock");
            let _ = held_tx.send(());
            let _ = released.await;
            let _ = sqlx::query("ROLLBACK").execute(&mut c).await;
            let _ = c.close().await;
        });
    });
    held.await.expect("lock held");
    release
}

/// Four times as many slow-header connections as the server allows in all: `/healthz` and ordinary clients
/// are answered at once, every time, while they stay open; the slow ones are closed by the header timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_clients_never_starve_healthz_or_other_clients() {
    let app = spawn_with_limits(ConnLimits {
        header_timeout: Duration::from_secs(2),
        max_connections: 50,
        ..Default::default()
    })
    .await;
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ")
            .await
            .unwrap();
        slow.push(s);
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    for i in 0..40 {
        let r = client
            .get(format!("{}/healthz", app.base))
            .send()
            .await
            .unwrap_or_else(|e| panic!("healthz {i} got no answer: {e}"));
        assert_eq!(r.status(), StatusCode::OK, "healthz {i}");
    }
    // The header timeout closes what is left of the slow ones (evicted ones are closed already).
    let started = std::time::Instant::now();
    for mut s in slow {
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("closed by the server within the header timeout");
        // Closed without an answer (EOF), or reset: never a response to a request that never finished.
        match n {
            Ok(0) | Err(_) => {}
            Ok(n) => panic!(
                "a half-sent request got {:?}",
                String::from_utf8_lossy(&buf[..n])
            ),
        }
    }
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// When every open connection is serving a request (here: live streams), a new connection is answered
/// 503 JSON `too_many_connections` with `Retry-After`, and the streams already served keep going.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_with_every_connection_busy_a_new_one_gets_503() {
    let app = spawn_with_limits(ConnLimits {
        max_connections: 8,
        ..Default::default()
    })
    .await;
    app.settled("s", "t", "m1", "completed").await;
    let mut streams = Vec::new();
    for _ in 0..8 {
        // A client of its own per stream: a connection of its own.
        let client = reqwest::Client::new();
        let r = client
            .get(format!("{}/api/run-events?session_id=s", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        streams.push(r);
    }
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut answer))
        .await
        .expect("answered")
        .unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    assert!(answer.contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert!(
        answer.ends_with("{\"error\":{\"code\":\"too_many_connections\",\"message\":\"the server has as many connections open as it allows, all of them busy; retry later\"}}"),
        "{answer}"
    );
    assert_eq!(app.state.hub.subscriber_count("s"), 8);
    // A stream served before the cap still receives events (written through the engine: every
    // connection is busy).
    use ledger::ids::{AttemptId, LogicalTurnId, MutationId, SessionKey, ToolName};
    let key = SessionKey::parse("s").unwrap();
    let m2 = MutationId::parse("m2").unwrap();
    let a1 = AttemptId::parse("a1").unwrap();
    for op in [
        ledger::Command::new(
            key.clone(),
            m2.clone(),
            ledger::Action::Approve {
                logical_turn_id: LogicalTurnId::parse("t").unwrap(),
                tool: ToolName::parse("tool").unwrap(),
                commissioned_after: None,
                traceparent: None,
            },
        ),
        ledger::Command::new(
            key.clone(),
            m2.clone(),
            ledger::Action::RecordIntent {
                attempt_id: a1.clone(),
                deadline_secs: None,
            },
        ),
        ledger::Command::new(
            key.clone(),
            m2.clone(),
            ledger::Action::Settle {
                attempt_id: a1.clone(),
                settlement: ledger::Settlement::Completed,
                reason: None,
            },
        ),
    ] {
        app.state.engine.apply(op).await.unwrap();
    }
    let got = read_until(&mut streams[0], "\"m2\"").await;
    assert!(got.contains("\"mutation_id\":\"m2\""), "{got}");
}

#[tokio::test]
async fn a_path_that_names_no_page_is_a_readable_404_page() {
    let app = spawn_with(|_| {}).await;
    for path in ["/sessions//turns/x", "/no/such/page", "/sessions/a/b/c/d"] {
        let r = app.get(path).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
        let html = r.text().await.unwrap();
        assert!(html.contains("Page not found."), "{path}: {html}");
    }
}

/// `CONNECT` (no path) is refused with 405 JSON before any route or the page fallback sees it; before, the
/// page fallback panicked on it and the client got no answer.
#[tokio::test]
async fn connect_is_refused_with_405_json_and_the_connection_keeps_serving() {
    let app = spawn_with(|_| {}).await;
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"CONNECT a:1 HTTP/1.1\r\nhost: a:1\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("answered")
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(
        answer.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{answer}"
    );
    assert!(answer.ends_with("{\"error\":{\"code\":\"method_not_allowed\",\"message\":\"this endpoint does not answer this method\"}}"), "{answer}");
    // The same connection still serves.
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("answered")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200 OK\r\n"));
}

/// A client that sends requests and never reads the answers: once nothing could be sent for
/// `send_timeout`, its connection is closed, so it cannot hold a connection (and a buffered page) for
/// ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_closed_after_the_send_timeout() {
    let app = spawn_with_limits(ConnLimits {
        send_timeout: Duration::from_secs(1),
        ..Default::default()
    })
    .await;
    // A history large enough to fill the socket buffers in a few answers.
    let title = "x".repeat(500);
    for i in 0..300 {
        app.settled("big", "t", &format!("m{i}"), "completed").await;
        app.step("big", &format!("m{i}"), "metadata", json!({"title": title}))
            .await;
    }
    // The session's history: cheap to produce (no page rendering), so the timing depends on the socket
    // buffers only.
    let history = app
        .get("/api/mutation-outcomes?session_id=big")
        .await
        .text()
        .await
        .unwrap();
    assert!(history.len() > 200_000, "{} bytes", history.len());
    let addr = app.base.trim_start_matches("http://").to_owned();
    // A small receive buffer from the handshake on, so the window stays small.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut s = socket.connect(addr.parse().unwrap()).await.unwrap();
    // 40 histories (over 8 MB) asked for, none read: the socket buffers (4 MiB at most here) fill and
    // sending stalls.
    let requests =
        "GET /api/mutation-outcomes?session_id=big HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n".repeat(40);
    let _ = s.write_all(requests.as_bytes()).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    // Closed by the server: reading what is buffered ends in EOF or a reset instead of waiting.
    let mut sink = vec![0u8; 1 << 16];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match s.read(&mut sink).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    })
    .await
    .unwrap_or(false);
    assert!(
        closed,
        "the connection of a client that never reads was closed"
    );
}

/// A host that announces a body and stalls: past the body timeout the request is refused with a JSON 4xx
/// and the connection is freed, instead of holding it for ever.
#[tokio::test]
async fn a_stalled_request_body_is_refused_after_the_body_timeout() {
    let app = spawn_with(|a| a.body_timeout_secs = 1).await;
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /api/host/batch HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{{\"operat"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut answer))
        .await
        .expect("answered and closed")
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer}"
    );
    assert!(
        answer.ends_with("{\"error\":{\"code\":\"invalid_body\",\"message\":\"Failed to buffer the request body: data was not received within the designated timeout\"}}"),
        "{answer}"
    );
}

/// Failed host tokens are limited per client address (loopback included): ten wrong tokens answer 401,
/// the eleventh within the minute 429 JSON with `Retry-After`; the right token is never refused.
#[tokio::test]
async fn the_eleventh_failed_token_within_a_minute_answers_429_and_the_right_token_still_works() {
    let app = spawn_with(|_| {}).await;
    let url = format!("{}/api/host/sessions/s/mutations", app.base);
    let body = json!({"logical_turn_id": "t", "mutation_id": "m", "tool": "tool"});
    for i in 0..10 {
        let r = app
            .client
            .post(&url)
            .bearer_auth(format!("wrong-{i}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "failure {}", i + 1);
    }
    let r = app
        .client
        .post(&url)
        .header("authorization", "bearer wrong-11")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((50..=60).contains(&retry), "Retry-After {retry}");
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap(),
        json!({"error": {"code": "too_many_failures", "message": "too many failed credentials from this address; wait, then try again with a valid one"}})
    );
    // No token at all is a failure too.
    let r = app.client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    // The host with the right token is not locked out.
    let (status, body) = app.approve("s", "t", "m").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// A body declared over the 2 MiB limit is refused with 413 JSON at once, before any byte of it is sent
/// (it used to wait for the body until the body timeout), and nothing is recorded.
#[tokio::test]
async fn a_body_declared_over_the_limit_is_refused_at_once() {
    let app = crate::helpers::spawn().await;
    let addr = app.base.trim_start_matches("http://").to_owned();
    let request = format!(
        "POST /api/host/sessions/s/mutations HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        TOKEN,
        2 * 1024 * 1024 + 1
    );
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // The answer comes without the body being sent (well within the 30 s body timeout).
    tokio::time::timeout(Duration::from_secs(5), async {
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") || !answer.ends_with(b"}") {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("answered without waiting for the body");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains(r#""code":"body_too_large""#), "{text}");
    assert_eq!(
        app.get("/api/sessions/s/turns").await.status(),
        StatusCode::NOT_FOUND
    );
}
