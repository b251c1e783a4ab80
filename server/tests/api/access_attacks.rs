//! Regression tests for what a security tester found in access (docs/access.md): each test fails on the
//! behaviour the tester found and passes on the fixed one. (The viewer token kept out of the log is tested
//! against the real binary, in `staff_cli.rs`.)
//!
//! - concurrent wrong passwords: an attempt that waited for a password-check slot looks at the failure
//!   limit again, so a right password queued behind wrong ones is refused once the limit is reached;
//! - live streams check their credential again: a viewer's closes when its link expires, a staff stream
//!   ends at the next heartbeat after a sign-out or the removal of the account;
//! - paths with `.` / `..` segments (also percent-encoded) are 400 `invalid_path`;
//! - refusals made before any route (CONNECT, `OPTIONS *`, 414, a control byte in a header) carry the
//!   security headers;
//! - a client's `X-Request-Id` is kept only when plain;
//! - open reads need a loopback `Host` (DNS rebinding);
//! - revoking the viewer links of an unknown session is 404.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::http::live::HEARTBEAT;
use server::serve::AccessArg;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::access::open_link_from;
use crate::helpers::{
    client_at, cookie_in, form, read_until, server, set_cookies, spawn, TestApp, PASSWORD, STAFF,
    TOKEN,
};

// ---------------------------------------------------------------------------------------------------
// Plumbing
// ---------------------------------------------------------------------------------------------------

/// `POST /sign-in` as `ada` with `Origin` = the server: status and the `Set-Cookie` values.
async fn sign_in(
    app: &TestApp,
    client: &reqwest::Client,
    password: &str,
) -> (StatusCode, Vec<String>) {
    sign_in_at(&app.base, client, password).await
}

/// `POST <base>/sign-in` as `ada` with `Origin: <base>`: status and the `Set-Cookie` values.
async fn sign_in_at(
    base: &str,
    client: &reqwest::Client,
    password: &str,
) -> (StatusCode, Vec<String>) {
    let r = client
        .post(format!("{base}/sign-in"))
        .header("origin", base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("name", STAFF),
            ("password", password),
            ("next", "/"),
        ]))
        .send()
        .await
        .expect("request");
    let status = r.status();
    let cookies = set_cookies(r.headers());
    let _ = r.text().await;
    (status, cookies)
}

/// Opens `/api/run-events?session_id=<session>` with `header`; asserts 200.
async fn open_stream(
    app: &TestApp,
    client: &reqwest::Client,
    session: &str,
    header: (&str, String),
) -> reqwest::Response {
    let r = client
        .get(format!("{}/api/run-events?session_id={session}", app.base))
        .header(header.0, header.1)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r
}

/// Reads a live stream to its end, for at most `within`: what arrived, and whether it ended.
async fn read_to_end(r: &mut reqwest::Response, within: Duration) -> (String, bool) {
    let mut got = String::new();
    let ended = tokio::time::timeout(within, async {
        // Until the end of the body, or the connection closed mid-body: the stream is over either way.
        while let Ok(Some(chunk)) = r.chunk().await {
            got.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .is_ok();
    (got, ended)
}

/// Waits (5 s at most) until session `key` has `n` live subscribers.
async fn wait_for_subscribers(app: &TestApp, key: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while app.state.hub.subscriber_count(key) != n {
        assert!(
            Instant::now() < deadline,
            "{key}: {} subscriber(s), expected {n}",
            app.state.hub.subscriber_count(key)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A response read off a raw TCP connection.
struct Raw {
    status: u16,
    /// Header names lower-cased, values as sent.
    headers: Vec<(String, String)>,
    body: String,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// Sends `request` (whole, `Connection: close` expected in it) over a new TCP connection and reads the
/// answer until the server closes. A connection reset after the answer (the server closing with part of
/// a long request unread) keeps what was read.
async fn raw(app: &TestApp, request: &[u8]) -> Raw {
    let addr = app.base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    // A long request may be refused before it is all read: the write then fails, the answer is there.
    let _ = s.write_all(request).await;
    let mut answer = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server answers and closes");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("a response head: {answer:?}"));
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {status_line:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Raw {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// `GET <target>` with `Host: <host>`, over a raw connection.
async fn raw_get(app: &TestApp, target: &str, host: &str) -> Raw {
    raw(
        app,
        format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
}

/// The `host:port` of the test server.
fn authority(app: &TestApp) -> String {
    app.base.trim_start_matches("http://").to_owned()
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
}

// ---------------------------------------------------------------------------------------------------
// Concurrent wrong passwords
// ---------------------------------------------------------------------------------------------------

/// 40 wrong passwords sent at once from one address, then the right one, all waiting for a
/// password-check slot (the test holds every slot until they are all queued, as a busy server would):
/// once the limit is reached, those still waiting are refused unchecked, the right password included.
/// Before, each attempt looked at the limit only on arrival, so all 41 were checked and the right
/// password, checked last, signed in (or waited past the 10 s check timeout: 503).
///
/// The address has 8 failures already (counted directly), so the limit is reached after a few checks:
/// Argon2 takes over a second per check in an unoptimised build, and 10 or more checks two at a time
/// would bring the last waiting attempts close to the 10 s a sign-in waits for a slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_wrong_passwords_do_not_get_past_the_sign_in_limit() {
    let app = server(AccessArg::SignedIn).await;
    let ip = Ipv4Addr::new(127, 0, 2, 1);
    let attacker = client_at(ip);
    for i in 1..=8 {
        assert!(
            app.state.failures.fail(IpAddr::V4(ip)).is_ok(),
            "failure {i}"
        );
    }
    let slots = app.state.password_checks.clone();
    let all = u32::try_from(slots.available_permits()).unwrap();
    assert!(all >= 1);
    let held = slots
        .clone()
        .try_acquire_many_owned(all)
        .expect("every slot");

    let mut wrong = Vec::new();
    for i in 0..40 {
        let (base, c) = (app.base.clone(), attacker.clone());
        let password = format!("wrong password {i}");
        wrong.push(tokio::spawn(async move {
            sign_in_at(&base, &c, &password).await.0
        }));
    }
    // Every wrong attempt has arrived and waits for a slot (nothing can be checked yet).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(slots.available_permits(), 0);
    let right = {
        let (base, c) = (app.base.clone(), attacker.clone());
        tokio::spawn(async move { sign_in_at(&base, &c, PASSWORD).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!right.is_finished(), "the right password waits its turn");
    drop(held);
    let released = Instant::now();

    let mut statuses = Vec::new();
    for t in wrong {
        statuses.push(t.await.unwrap());
    }
    let (right_status, right_cookies) = right.await.unwrap();
    let count = |s: StatusCode| statuses.iter().filter(|&&x| x == s).count();
    let (unauthorized, too_many) = (
        count(StatusCode::UNAUTHORIZED),
        count(StatusCode::TOO_MANY_REQUESTS),
    );
    println!(
        "40 wrong passwords: {unauthorized} × 401, {too_many} × 429, others {:?}; the right one: {right_status}; all answered {:?} after the slots were released",
        statuses
            .iter()
            .filter(|s| **s != StatusCode::UNAUTHORIZED && **s != StatusCode::TOO_MANY_REQUESTS)
            .collect::<Vec<_>>(),
        released.elapsed()
    );
    // 8 failures + 2 = the 10 the limit allows in a row; past them, 429.
    assert_eq!(
        unauthorized, 2,
        "wrong passwords answered 401: {statuses:?}"
    );
    assert_eq!(
        unauthorized + too_many,
        40,
        "every wrong password is 401 or 429: {statuses:?}"
    );
    assert_eq!(
        right_status,
        StatusCode::TOO_MANY_REQUESTS,
        "the right password queued behind the wrong ones"
    );
    assert!(
        cookie_in(&right_cookies, "outcomes_sign_in").is_none(),
        "{right_cookies:?}"
    );
    assert!(right_cookies.is_empty(), "{right_cookies:?}");

    // And after them, the right password is still refused without being checked.
    let (status, cookies) = sign_in(&app, &attacker, PASSWORD).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(cookies.is_empty(), "{cookies:?}");
    // The limit is per address: from another one the right password signs in.
    let (status, cookies) = sign_in(&app, &client_at(Ipv4Addr::new(127, 0, 2, 2)), PASSWORD).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(cookie_in(&cookies, "outcomes_sign_in").is_some());
}

// ---------------------------------------------------------------------------------------------------
// Live streams whose credential stops holding
// ---------------------------------------------------------------------------------------------------

/// A viewer link of 2 s: the viewer's live stream ends when the link expires (not before), without
/// waiting for a heartbeat. Before, it went on for as long as the client held it.
#[tokio::test]
async fn a_viewers_live_stream_ends_when_its_link_expires() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("expiring", "t1", "m1", "completed").await;
    let client = client_at(Ipv4Addr::new(127, 0, 2, 10));
    let minted = Instant::now();
    let url = app
        .mint_link_with("expiring", json!({"expires_in_secs": 2}))
        .await;
    let viewer = open_link_from(&app, &client, &url).await;
    let opened = Instant::now();
    let mut stream = open_stream(
        &app,
        &client,
        "expiring",
        ("cookie", format!("outcomes_viewer={viewer}")),
    )
    .await;
    assert_eq!(app.state.hub.subscriber_count("expiring"), 1);
    let (rest, ended) = read_to_end(&mut stream, Duration::from_secs(4)).await;
    assert!(
        ended,
        "the stream is still open 4 s after it was opened (the link expired 2 s after minting): {rest:?}"
    );
    let at = minted.elapsed();
    println!(
        "the viewer's stream ended {:?} after the link was minted ({:?} after it was opened)",
        at,
        opened.elapsed()
    );
    assert!(
        at >= Duration::from_millis(1900),
        "the stream ended before its link expired: {at:?}"
    );
    assert!(!rest.contains("mutation_outcome"), "{rest}");
    wait_for_subscribers(&app, "expiring", 0).await;
    // The expired link opens no new stream.
    let r = client
        .get(format!("{}/api/run-events?session_id=expiring", app.base))
        .header("cookie", format!("outcomes_viewer={viewer}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// A staff member signed in holds a live stream and signs out: the stream ends at the next heartbeat
/// (within `HEARTBEAT` + 5 s of the sign-out), without sending that heartbeat. Before, it went on.
#[tokio::test]
async fn a_staff_live_stream_ends_within_a_heartbeat_of_signing_out() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("watched", "t1", "m-before-0", "completed")
        .await;
    let client = client_at(Ipv4Addr::new(127, 0, 2, 20));
    let (status, set) = sign_in(&app, &client, PASSWORD).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let id = cookie_in(&set, "outcomes_sign_in").expect("sign-in cookie");
    let cookie = ("cookie", format!("outcomes_sign_in={id}"));
    let mut stream = open_stream(&app, &client, "watched", cookie.clone()).await;
    app.settled("watched", "t1", "m-before", "completed").await;
    let got = read_until(&mut stream, "\"m-before\"").await;
    assert!(got.contains("\"m-before\""), "the stream works: {got}");

    let r = client
        .post(format!("{}/sign-out", app.base))
        .header(cookie.0, cookie.1.clone())
        .header("origin", &app.base)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let signed_out = Instant::now();
    let (rest, ended) = read_to_end(&mut stream, HEARTBEAT + Duration::from_secs(5)).await;
    assert!(
        ended,
        "the stream is still open {:?} after signing out: {rest:?}",
        signed_out.elapsed()
    );
    println!(
        "the stream ended {:?} after the sign-out",
        signed_out.elapsed()
    );
    assert!(
        !rest.contains("event: heartbeat"),
        "a heartbeat after the sign-out: {rest}"
    );
    wait_for_subscribers(&app, "watched", 0).await;
    // The cookie opens no new stream.
    let r = client
        .get(format!("{}/api/run-events?session_id=watched", app.base))
        .header(cookie.0, cookie.1)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// A staff API token holds a live stream and its account is removed: the stream ends at the next
/// heartbeat (within `HEARTBEAT` + 5 s), without sending that heartbeat. Before, it went on.
#[tokio::test]
async fn a_staff_token_live_stream_ends_within_a_heartbeat_of_removing_the_account() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("watched", "t1", "m-before-0", "completed")
        .await;
    let token = app.staff_token().await;
    let client = client_at(Ipv4Addr::new(127, 0, 2, 30));
    let bearer = ("authorization", format!("Bearer {token}"));
    let mut stream = open_stream(&app, &client, "watched", bearer.clone()).await;
    app.settled("watched", "t1", "m-before", "completed").await;
    let got = read_until(&mut stream, "\"m-before\"").await;
    assert!(got.contains("\"m-before\""), "the stream works: {got}");

    assert!(app.state.access.store.remove_staff(STAFF).await.unwrap());
    let removed = Instant::now();
    let (rest, ended) = read_to_end(&mut stream, HEARTBEAT + Duration::from_secs(5)).await;
    assert!(
        ended,
        "the stream is still open {:?} after the account was removed: {rest:?}",
        removed.elapsed()
    );
    println!(
        "the stream ended {:?} after the account was removed",
        removed.elapsed()
    );
    assert!(
        !rest.contains("event: heartbeat"),
        "a heartbeat after the removal: {rest}"
    );
    wait_for_subscribers(&app, "watched", 0).await;
    let r = client
        .get(format!("{}/api/run-events?session_id=watched", app.base))
        .header(bearer.0, bearer.1)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// The stricter property: once a staff member has signed out, or their account is removed, no event
/// settled afterwards reaches their open live stream, and the stream ends within `HEARTBEAT` + 5 s.
///
/// Fails today: a staff stream checks its credential only at each heartbeat (docs/access.md: "closes at
/// the next heartbeat at the latest"), so an outcome settled between the sign-out (or removal) and that
/// heartbeat is still delivered. A viewer's stream has no such window: revoking its links ends it at once.
#[tokio::test]
async fn no_event_settled_after_the_credential_ended_reaches_a_staff_stream() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("watched", "t1", "m-before-0", "completed")
        .await;
    let signed_in = client_at(Ipv4Addr::new(127, 0, 2, 40));
    let (status, set) = sign_in(&app, &signed_in, PASSWORD).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let id = cookie_in(&set, "outcomes_sign_in").expect("sign-in cookie");
    let cookie = ("cookie", format!("outcomes_sign_in={id}"));
    let mut by_cookie = open_stream(&app, &signed_in, "watched", cookie.clone()).await;

    // A second account, whose token will stop holding when the account is removed.
    app.add_staff("grace", "another password").await;
    let token = app.staff_token_of("grace").await;
    let by_token = client_at(Ipv4Addr::new(127, 0, 2, 41));
    let mut by_token_stream = open_stream(
        &app,
        &by_token,
        "watched",
        ("authorization", format!("Bearer {token}")),
    )
    .await;
    app.settled("watched", "t1", "m-before", "completed").await;
    for s in [&mut by_cookie, &mut by_token_stream] {
        let got = read_until(s, "\"m-before\"").await;
        assert!(got.contains("\"m-before\""), "the stream works: {got}");
    }

    let r = signed_in
        .post(format!("{}/sign-out", app.base))
        .header(cookie.0, cookie.1)
        .header("origin", &app.base)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(app.state.access.store.remove_staff("grace").await.unwrap());
    let ended_at = Instant::now();
    app.settled("watched", "t1", "m-after", "completed").await;

    let mut problems = Vec::new();
    for (what, s) in [
        ("signed out", &mut by_cookie),
        ("account removed", &mut by_token_stream),
    ] {
        let (rest, ended) = read_to_end(s, HEARTBEAT + Duration::from_secs(5)).await;
        println!(
            "{what}: the stream ended: {ended}, {:?} after the credential ended; it got: {rest:?}",
            ended_at.elapsed()
        );
        if !ended {
            problems.push(format!("{what}: the stream is still open"));
        }
        if rest.contains("m-after") {
            problems.push(format!(
                "{what}: an outcome settled after the credential ended reached the stream: {rest:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------------
// Dot segments in paths
// ---------------------------------------------------------------------------------------------------

/// `.` and `..` segments, literal or percent-encoded, are 400 `invalid_path` (JSON) on a signed-in
/// server: never a page or an asset reached past the sign-in redirect. `...` is no dot segment.
#[tokio::test]
async fn paths_with_dot_segments_are_400_invalid_path() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("x", "t1", "m1", "completed").await;
    let host = authority(&app);
    for target in [
        "/pkg/../sessions/x",
        "/v/../find",
        "/pkg/%2e%2e/sessions/x",
        "/pkg/%2E%2E/sessions/x",
        "/v/%2e%2e/find",
        "/pkg/./../sessions/x",
        "/pkg/%2e/x",
        "/sessions/x/..",
        "/api/../sessions/x",
    ] {
        let r = raw_get(&app, target, &host).await;
        assert_eq!(r.status, 400, "{target}: {}", r.body);
        assert!(
            r.header("content-type")
                .is_some_and(|v| v.starts_with("application/json")),
            "{target}: {:?}",
            r.headers
        );
        assert_eq!(r.json()["error"]["code"], "invalid_path", "{target}");
        assert!(r.header("location").is_none(), "{target}");
        assert!(!r.body.contains("m1"), "{target}: {}", r.body);
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    // Three dots is a name, not a dot segment: the page asks to sign in.
    for (target, next) in [
        ("/sessions/...", "%2Fsessions%2F..."),
        ("/sessions/%2e%2e%2e", "%2Fsessions%2F%252e%252e%252e"),
    ] {
        let r = raw_get(&app, target, &host).await;
        assert_eq!(r.status, 303, "{target}: {}", r.body);
        assert_eq!(
            r.header("location"),
            Some(format!("/sign-in?next={next}").as_str()),
            "{target}"
        );
    }
}

// ---------------------------------------------------------------------------------------------------
// Refusals before any route carry the security headers
// ---------------------------------------------------------------------------------------------------

fn assert_security_headers(what: &str, r: &Raw) {
    assert_eq!(
        r.header("x-content-type-options"),
        Some("nosniff"),
        "{what}: {:?}",
        r.headers
    );
    assert_eq!(
        r.header("referrer-policy"),
        Some("no-referrer"),
        "{what}: {:?}",
        r.headers
    );
    assert_eq!(
        r.header("x-frame-options"),
        Some("DENY"),
        "{what}: {:?}",
        r.headers
    );
    assert_eq!(
        r.header("cache-control"),
        Some("no-store"),
        "{what}: {:?}",
        r.headers
    );
    let csp = r
        .header("content-security-policy")
        .unwrap_or_else(|| panic!("{what}: no content-security-policy: {:?}", r.headers));
    assert_eq!(
        csp, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        "{what}"
    );
}

#[tokio::test]
async fn refusals_before_any_route_carry_the_security_headers() {
    let app = spawn().await;
    let host = authority(&app);

    let r = raw(
        &app,
        format!("CONNECT {host} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(r.status, 405, "CONNECT: {}", r.body);
    assert_eq!(r.json()["error"]["code"], "method_not_allowed");
    assert_security_headers("CONNECT", &r);

    let r = raw(
        &app,
        format!("OPTIONS * HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(r.status, 405, "OPTIONS *: {}", r.body);
    assert_eq!(r.json()["error"]["code"], "method_not_allowed");
    assert_security_headers("OPTIONS *", &r);

    let long = format!("/{}", "a".repeat(70_000));
    let r = raw_get(&app, &long, &host).await;
    assert_eq!(r.status, 414, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "uri_too_long");
    assert_security_headers("414", &r);

    let r = raw(
        &app,
        format!(
            "GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Evil: a\x01b\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_header", "{}", r.body);
    assert_security_headers("a \\x01 byte in a header", &r);
}

// ---------------------------------------------------------------------------------------------------
// X-Request-Id
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_client_request_id_is_kept_only_when_plain() {
    let app = spawn().await;
    let client = client_at(Ipv4Addr::new(127, 0, 2, 60));
    let get = |id: &'static str| {
        let (c, base) = (client.clone(), app.base.clone());
        async move {
            let r = c
                .get(format!("{base}/healthz"))
                .header("x-request-id", id)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            r.headers()["x-request-id"].to_str().unwrap().to_owned()
        }
    };
    assert_eq!(get("abc-123").await, "abc-123");
    assert_eq!(get("a.b_c:D-9").await, "a.b_c:D-9");
    for forged in [
        "x}: forged staff=admin",
        "x staff=admin",
        "a\tb",
        "{\"a\":1}",
    ] {
        let echoed = get(forged).await;
        assert_ne!(echoed, forged);
        assert!(
            is_uuid(&echoed),
            "{forged:?} was replaced by {echoed:?}, not a UUID"
        );
    }
    // 128 characters are kept, 129 are not.
    let ok = "a".repeat(128);
    let long = "a".repeat(129);
    let r = client
        .get(format!("{}/healthz", app.base))
        .header("x-request-id", &ok)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], ok.as_str());
    let r = client
        .get(format!("{}/healthz", app.base))
        .header("x-request-id", &long)
        .send()
        .await
        .unwrap();
    assert!(is_uuid(r.headers()["x-request-id"].to_str().unwrap()));
}

// ---------------------------------------------------------------------------------------------------
// Open reads need a loopback Host (DNS rebinding)
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn open_reads_need_a_loopback_host() {
    // The default test server: loopback, `--access auto`, so reads are open.
    let app = spawn().await;
    app.settled("s", "t1", "m1", "completed").await;
    let port = authority(&app).rsplit(':').next().unwrap().to_owned();

    for host in ["evil.example", &format!("evil.example:{port}")] {
        let r = raw_get(&app, "/api/sessions", host).await;
        assert_eq!(r.status, 401, "Host {host}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], "unauthorized", "Host {host}");
        let r = raw_get(&app, "/", host).await;
        assert_eq!(r.status, 303, "Host {host}: {}", r.body);
        assert_eq!(
            r.header("location"),
            Some("/sign-in?next=%2F"),
            "Host {host}"
        );
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("app.localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let r = raw_get(&app, "/api/sessions", &host).await;
        assert_eq!(r.status, 200, "Host {host}: {}", r.body);
        assert_eq!(
            r.json()["sessions"].as_array().map(Vec::len),
            Some(1),
            "Host {host}: {}",
            r.body
        );
    }
    let r = raw_get(&app, "/", &format!("localhost:{port}")).await;
    assert_eq!(r.status, 200);
    // The host token still reads whatever the Host.
    let r = raw(
        &app,
        format!(
            "GET /api/sessions HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

// ---------------------------------------------------------------------------------------------------
// Revoking the links of an unknown session
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn revoking_the_links_of_an_unknown_session_is_404() {
    let app = spawn().await;
    let (s, body) = app
        .host(
            Method::DELETE,
            "/api/host/sessions/nobody/viewer-links",
            Value::Null,
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "session_not_found", "{body}");

    app.settled("known", "t1", "m1", "completed").await;
    let (s, body) = app
        .host(
            Method::DELETE,
            "/api/host/sessions/known/viewer-links",
            Value::Null,
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"revoked": 0}));
}
