//! Reliability suite (see `reliability`): connections that misbehave — live subscriptions of vanished
//! clients, and slow-header clients past the file limit.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::binary::{self as support, Server, TOKEN};

// ---------------------------------------------------------------------------------------------------------
// Live subscriptions of vanished clients
// ---------------------------------------------------------------------------------------------------------

/// Opens a live stream of `session` and resets it (RST) as soon as the response head arrived.
fn open_and_reset(addr: std::net::SocketAddr, session: &str) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET /api/run-events?session_id={session} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).expect("response head");
    assert_eq!(&head, b"HTTP/1.1 200");
    socket2::SockRef::from(&s)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(s); // RST
}

/// Thousands of live streams on a quiet session (no event is ever published to it), each reset by its
/// client: the server's memory returns to its baseline, and a new stream still opens and receives events.
/// (Before: each dead subscription stayed until the session's next event; 30,000 took RSS 15 → 196 MiB.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_live_subscriptions_on_a_quiet_session_give_their_memory_back() {
    let n = if support::soak() { 30_000 } else { 5_000 };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-live-streams", "100000"]);
    let client = support::client();
    let host = |path: &str, body: Value| {
        client
            .post(format!(
                "{}/api/host/sessions/quiet/mutations{path}",
                server.base
            ))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
    };
    assert_eq!(
        host(
            "",
            json!({"logical_turn_id": "t", "mutation_id": "m1", "tool": "tool"})
        )
        .await
        .unwrap()
        .status()
        .as_u16(),
        201
    );
    let addr = server.addr;
    let started = Instant::now();
    // Warm up (allocator pools, connection buffers), then take the baseline.
    tokio::task::spawn_blocking(move || (0..1_000).for_each(|_| open_and_reset(addr, "quiet")))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline = support::rss_kib(server.pid());
    tokio::task::spawn_blocking(move || (0..n).for_each(|_| open_and_reset(addr, "quiet")))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = support::rss_kib(server.pid());
    // 6 KiB a leaked subscription (what the old hub kept) would be n * 6 KiB; allow a tenth of that.
    let allowed = (n as u64 * 6 / 10).max(4 * 1024);
    assert!(
        after <= baseline + allowed,
        "RSS {baseline} KiB before, {after} KiB after {n} reset streams (allowed +{allowed} KiB)"
    );
    // A new stream opens and receives an event.
    let mut stream = client
        .get(format!("{}/api/run-events?session_id=quiet", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    for (path, body) in [
        ("/m1/intent", json!({"attempt_id": "a1"})),
        (
            "/m1/settlement",
            json!({"attempt_id": "a1", "status": "completed"}),
        ),
    ] {
        assert_eq!(
            host(path, body).await.unwrap().status().as_u16(),
            200,
            "{path}"
        );
    }
    let mut got = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(chunk)) = stream.chunk().await {
            got.push_str(&String::from_utf8_lossy(&chunk));
            if got.contains("\"m1\"") {
                break;
            }
        }
    })
    .await;
    assert!(
        got.contains("event: mutation_outcome\ndata: {\"mutation_revision\":2,"),
        "{got}"
    );
    println!(
        "figures: subscription-leak: {n} streams opened and reset on a quiet session; RSS {baseline} KiB before, {after} KiB after ({:+} KiB); a new stream received its event; {:.1} s",
        after as i64 - baseline as i64,
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------------------
// Slow-header clients
// ---------------------------------------------------------------------------------------------------------

/// A server limited to 1,024 open files, and 1,100 connections that send half a request header and then
/// nothing: `/healthz` answers every time, within a second, while they stay open. (Before: `/healthz`
/// stopped answering for as long as they stayed open, `accept error: Too many open files`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_connections_past_the_file_limit_never_starve_healthz() {
    use std::io::Write;
    let slow_count = if support::soak() { 5_000 } else { 1_100 };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_file_limit(dir.path(), &[], 1024);
    let started = Instant::now();
    let addr = server.addr;
    let slow = tokio::task::spawn_blocking(move || {
        let mut slow = Vec::new();
        for _ in 0..slow_count {
            match std::net::TcpStream::connect(addr) {
                Ok(mut s) => {
                    let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
                    slow.push(s);
                }
                Err(e) => panic!("connect: {e}"),
            }
        }
        slow
    })
    .await
    .unwrap();
    let tries = 40;
    let mut answered = 0;
    for i in 0..tries {
        let t = Instant::now();
        match support::raw_get(addr, "/healthz", Duration::from_secs(1)) {
            Some((200, _)) => answered += 1,
            other => panic!(
                "healthz try {i}: {other:?} after {:?}\n{}",
                t.elapsed(),
                server.log()
            ),
        }
    }
    assert_eq!(answered, tries);
    assert!(
        !server.log().contains("Too many open files"),
        "{}",
        server.log()
    );
    drop(slow);
    println!(
        "figures: slow-header: {slow_count} half-sent request heads against a 1,024-file server; /healthz answered {answered} of {tries} tries, each within 1 s; {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
