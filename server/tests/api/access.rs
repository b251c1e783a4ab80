//! Who may see what (docs/access.md): every role against every endpoint, viewer scoping, signing in and
//! out, viewer links, staff tokens, the trusted proxy, and the security headers.
//!
//! The failed-credential limiter counts per client address, so each role of the tables sends from its own
//! loopback address (127.0.0.0/8 is all loopback), and the wrong-bearer role from a new address each
//! request: no row turns 401 into 429 because of the rows before it.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::serve::AccessArg;

use crate::helpers::{
    client_at, cookie_in, form, read_until, server, set_cookies, with_staff, TestApp, PASSWORD,
    STAFF, TOKEN,
};

// ---------------------------------------------------------------------------------------------------
// Plumbing
// ---------------------------------------------------------------------------------------------------

/// A client from 127.0.0.1 that does not follow redirects.
fn plain() -> reqwest::Client {
    client_at(Ipv4Addr::LOCALHOST)
}

/// A fresh loopback address for each call (127.0.1.1, 127.0.1.2, …).
fn fresh_ip() -> Ipv4Addr {
    static NEXT: AtomicU8 = AtomicU8::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Ipv4Addr::new(127, 0, 1 + n / 250, 1 + n % 250)
}

/// A response read whole, except a live stream that answered 200 (only its head is kept).
struct Got {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Got {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

async fn send(
    client: &reqwest::Client,
    method: Method,
    url: &str,
    headers: &[(&str, String)],
    body: Option<&str>,
) -> Got {
    let mut req = client.request(method, url);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_owned());
    }
    let r = req.send().await.expect("request");
    let status = r.status();
    let headers = r.headers().clone();
    let streaming = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
        && url.contains("/api/run-events");
    let body = if streaming {
        drop(r);
        String::new()
    } else {
        r.text().await.expect("body")
    };
    Got {
        status,
        headers,
        body,
    }
}

/// GET `path` with `headers` from 127.0.0.1.
async fn get(app: &TestApp, path: &str, headers: &[(&str, String)]) -> Got {
    send(
        &plain(),
        Method::GET,
        &format!("{}{path}", app.base),
        headers,
        None,
    )
    .await
}

fn cookie(name: &str, value: &str) -> (&'static str, String) {
    ("cookie", format!("{name}={value}"))
}

fn bearer(token: &str) -> (&'static str, String) {
    ("authorization", format!("Bearer {token}"))
}

/// The value a response's `Set-Cookie` gives cookie `name`.
fn set_cookie_value(h: &HeaderMap, name: &str) -> Option<String> {
    cookie_in(&set_cookies(h), name)
}

/// Whether the response clears cookie `name` (`name=; …; Max-Age=0`).
fn clears(h: &HeaderMap, name: &str) -> bool {
    set_cookies(h)
        .iter()
        .any(|c| c.starts_with(&format!("{name}=;")) && c.contains("Max-Age=0"))
}

/// Whether `loc` is the sign-in page that comes back to `path` once signed in: exactly
/// `/sign-in?next=<path, form-urlencoded>` (docs/access.md).
fn sends_to_sign_in(loc: &str, path: &str) -> bool {
    loc == format!("/sign-in?{}", form(&[("next", path)]))
}

fn location(g: &Got) -> String {
    g.headers
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// `POST /sign-in` from `client`, with `Origin: origin` when given.
async fn post_sign_in(
    app: &TestApp,
    client: &reqwest::Client,
    origin: Option<&str>,
    name: &str,
    password: &str,
    next: &str,
) -> Got {
    post_sign_in_with(app, client, origin, None, name, password, next).await
}

/// `POST /sign-in`, with `Origin` and `Sec-Fetch-Site` when given.
async fn post_sign_in_with(
    app: &TestApp,
    client: &reqwest::Client,
    origin: Option<&str>,
    fetch_site: Option<&str>,
    name: &str,
    password: &str,
    next: &str,
) -> Got {
    let mut req = client
        .post(format!("{}/sign-in", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("name", name),
            ("password", password),
            ("next", next),
        ]));
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    if let Some(f) = fetch_site {
        req = req.header("sec-fetch-site", f);
    }
    let r = req.send().await.expect("request");
    let status = r.status();
    let headers = r.headers().clone();
    let body = r.text().await.unwrap();
    Got {
        status,
        headers,
        body,
    }
}

/// Signs `ada` in; the sign-in cookie's value.
async fn sign_in_cookie(app: &TestApp) -> String {
    let r = post_sign_in(app, &plain(), Some(&app.base), STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    set_cookie_value(&r.headers, "outcomes_sign_in").expect("sign-in cookie")
}

/// Opens a viewer link as a browser would: the viewer cookie's value.
async fn open_link(app: &TestApp, url: &str) -> String {
    let r = get(app, url, &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    set_cookie_value(&r.headers, "outcomes_viewer").expect("viewer cookie")
}

async fn viewer_cookie(app: &TestApp, session: &str) -> String {
    let url = app.mint_link(session).await;
    open_link(app, &url).await
}

async fn revoke(app: &TestApp, session: &str) -> Value {
    let (s, body) = app
        .host(
            Method::DELETE,
            &format!("/api/host/sessions/{session}/viewer-links"),
            Value::Null,
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    body
}

/// Two sessions: `alpha` (turn t1: op-alpha, op-shared) and `bravo` (turn t1: op-bravo, op-shared, the
/// latter unknown so the support queue is not empty).
async fn two_sessions(app: &TestApp) {
    app.settled("alpha", "t1", "op-alpha", "completed").await;
    app.settled("alpha", "t1", "op-shared", "completed").await;
    app.settled("bravo", "t1", "op-bravo", "completed").await;
    app.settled("bravo", "t1", "op-shared", "outcome_unknown")
        .await;
}

// ---------------------------------------------------------------------------------------------------
// 1. Roles × endpoints
// ---------------------------------------------------------------------------------------------------

struct Role {
    name: &'static str,
    headers: Vec<(&'static str, String)>,
    /// `None`: a new client address for every request.
    ip: Option<Ipv4Addr>,
    /// The credential is a dead cookie: every answer must clear it (`+clear`).
    clears: bool,
}

/// What a response is, in the table's words: the status, then for a 303 to the sign-in page that comes
/// back here `sign-in` (any other 303: its Location), for `/api/operations` the sessions of the matches
/// (sorted), for `/api/me` the access; `+clear` when it clears a cookie.
fn describe(path: &str, g: &Got) -> String {
    let mut s = g.status.as_u16().to_string();
    if g.status == StatusCode::SEE_OTHER {
        let loc = location(g);
        if sends_to_sign_in(&loc, path) {
            s.push_str(" sign-in");
        } else {
            s.push_str(&format!(" → {loc}"));
        }
    }
    if g.status == StatusCode::OK && path.starts_with("/api/operations/") {
        let mut keys: Vec<String> = g.json()["matches"]
            .as_array()
            .expect("matches")
            .iter()
            .map(|m| m["session_key"].as_str().unwrap().to_owned())
            .collect();
        keys.sort();
        s.push_str(&format!(" [{}]", keys.join(",")));
    }
    if g.status == StatusCode::OK && path == "/api/me" {
        s.push_str(&format!(" {}", g.json()["access"].as_str().unwrap_or("?")));
    }
    if clears(&g.headers, "outcomes_sign_in") || clears(&g.headers, "outcomes_viewer") {
        s.push_str(" +clear");
    }
    s
}

/// Runs every role against every endpoint of `table` (expected answers in role order); prints the table
/// and returns the mismatches.
async fn run_table<const N: usize>(
    app: &TestApp,
    title: &str,
    roles: &[Role; N],
    table: &[(&str, [&str; N])],
) -> Vec<String> {
    let clients: Vec<Option<reqwest::Client>> = roles.iter().map(|r| r.ip.map(client_at)).collect();
    let mut mismatches = Vec::new();
    println!("\n### {title}\n");
    println!("| role | endpoint | expected | got | |");
    println!("|---|---|---|---|---|");
    for (role, client) in roles.iter().zip(&clients) {
        for (endpoint, expected) in table {
            let idx = roles.iter().position(|r| r.name == role.name).unwrap();
            let mut expected = expected[idx].to_owned();
            if role.clears {
                expected.push_str(" +clear");
            }
            let (method, path) = endpoint.split_once(' ').unwrap();
            let method: Method = method.parse().unwrap();
            let body = (method == Method::POST).then_some("{}");
            let url = format!("{}{path}", app.base);
            let g = match client {
                Some(c) => send(c, method, &url, &role.headers, body).await,
                None => send(&client_at(fresh_ip()), method, &url, &role.headers, body).await,
            };
            let got = describe(path, &g);
            let ok = got == expected;
            println!(
                "| {} | `{endpoint}` | {expected} | {got} | {} |",
                role.name,
                if ok { "ok" } else { "**MISMATCH**" }
            );
            if !ok {
                mismatches.push(format!(
                    "{title}: {} {endpoint}: expected {expected}, got {got}: {}",
                    role.name,
                    g.body.chars().take(300).collect::<String>()
                ));
            }
        }
    }
    mismatches
}

#[tokio::test]
async fn every_role_gets_exactly_its_answer_from_every_endpoint() {
    // Signed-in mode.
    let app = server(AccessArg::SignedIn).await;
    two_sessions(&app).await;
    let staff = app.staff_token().await;
    let signed_in = sign_in_cookie(&app).await;
    // A viewer cookie of alpha whose links are then revoked, then a live one.
    let revoked = viewer_cookie(&app, "alpha").await;
    assert_eq!(revoke(&app, "alpha").await, json!({"revoked": 1}));
    let viewer = viewer_cookie(&app, "alpha").await;
    let forged = server::staff::new_sign_in_id();

    let roles = [
        Role {
            name: "none",
            headers: vec![],
            ip: Some(Ipv4Addr::new(127, 0, 0, 10)),
            clears: false,
        },
        Role {
            name: "wrong bearer",
            headers: vec![bearer("not-a-token")],
            ip: None,
            clears: false,
        },
        Role {
            name: "host token",
            headers: vec![bearer(TOKEN)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 12)),
            clears: false,
        },
        Role {
            name: "staff token (Bearer)",
            headers: vec![bearer(&staff)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 13)),
            clears: false,
        },
        Role {
            name: "staff token (bearer)",
            headers: vec![("authorization", format!("bearer {staff}"))],
            ip: Some(Ipv4Addr::new(127, 0, 0, 14)),
            clears: false,
        },
        Role {
            name: "staff sign-in cookie",
            headers: vec![cookie("outcomes_sign_in", &signed_in)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 15)),
            clears: false,
        },
        Role {
            name: "viewer of alpha",
            headers: vec![cookie("outcomes_viewer", &viewer)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 16)),
            clears: false,
        },
        Role {
            name: "forged sign-in cookie",
            headers: vec![cookie("outcomes_sign_in", &forged)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 17)),
            clears: true,
        },
        Role {
            name: "revoked viewer cookie",
            headers: vec![cookie("outcomes_viewer", &revoked)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 18)),
            clears: true,
        },
    ];
    const A: [&str; 9] = [
        "401", "401", "200", "200", "200", "200", "200", "401", "401",
    ];
    const B: [&str; 9] = [
        "401", "401", "200", "200", "200", "200", "404", "401", "401",
    ];
    const P_A: [&str; 9] = [
        "303 sign-in",
        "401",
        "200",
        "200",
        "200",
        "200",
        "200",
        "303 sign-in",
        "404",
    ];
    const P_B: [&str; 9] = [
        "303 sign-in",
        "401",
        "200",
        "200",
        "200",
        "200",
        "404",
        "303 sign-in",
        "404",
    ];
    const OPEN: [&str; 9] = [
        "200", "401", "200", "200", "200", "200", "200", "200", "200",
    ];
    #[rustfmt::skip]
    let table: &[(&str, [&str; 9])] = &[
        // none, wrong bearer, host, staff Bearer, staff bearer, staff cookie, viewer of alpha, forged, revoked
        // (a page with a revoked viewer cookie: the end user's "this link no longer works" page, 404)
        ("GET /api/sessions", B),
        ("GET /api/unknowns", B),
        ("GET /api/sessions/alpha/turns", A),
        ("GET /api/sessions/bravo/turns", B),
        ("GET /api/sessions/alpha/turns/t1/entries", A),
        ("GET /api/sessions/bravo/turns/t1/entries", B),
        ("GET /api/sessions/alpha/mutations/op-alpha/history", A),
        ("GET /api/sessions/bravo/mutations/op-bravo/history", B),
        ("GET /api/mutation-outcomes?session_id=alpha", A),
        ("GET /api/mutation-outcomes?session_id=bravo", B),
        ("GET /api/mutation-events?session_id=alpha&logical_turn_id=t1", A),
        ("GET /api/mutation-events?session_id=bravo&logical_turn_id=t1", B),
        ("GET /api/run-events?session_id=alpha", A),
        ("GET /api/run-events?session_id=bravo", B),
        ("GET /api/operations/op-alpha", ["401", "401", "200 [alpha]", "200 [alpha]", "200 [alpha]", "200 [alpha]", "200 [alpha]", "401", "401"]),
        ("GET /api/operations/op-bravo", ["401", "401", "200 [bravo]", "200 [bravo]", "200 [bravo]", "200 [bravo]", "200 []", "401", "401"]),
        ("GET /api/operations/op-shared", ["401", "401", "200 [alpha,bravo]", "200 [alpha,bravo]", "200 [alpha,bravo]", "200 [alpha,bravo]", "200 [alpha]", "401", "401"]),
        ("GET /api/me", ["401", "401", "200 host", "200 staff", "200 staff", "200 staff", "200 viewer", "401", "401"]),
        ("GET /", P_B),
        ("GET /sessions/alpha", P_A),
        ("GET /sessions/bravo", P_B),
        ("GET /sessions/alpha/turns/t1", P_A),
        ("GET /sessions/bravo/turns/t1", P_B),
        ("GET /unknowns", P_B),
        ("GET /find", P_B),
        ("GET /operations/op-alpha", P_A),
        ("GET /operations/op-bravo", P_B),
        ("GET /healthz", OPEN),
        ("GET /sign-in", ["200", "401", "200", "303 → /", "303 → /", "303 → /", "200", "200", "200"]),
        ("GET /api/openapi.json", OPEN),
        ("POST /api/host/sessions/alpha/viewer-links", ["401", "401", "201", "401", "401", "401", "401", "401", "401"]),
        ("GET /api/sessions/alpha/export", A),
        ("GET /api/sessions/bravo/export", B),
        // Operator actions: staff only (403 `staff_only` for the host and a viewer; a cookie without
        // Origin is 403 `origin_mismatch`); the table's `{}` body is then a 422 (`text`, `attempt_id`).
        ("POST /api/sessions/alpha/mutations/op-alpha/notes", ["401", "401", "403", "422", "422", "403", "403", "401", "401"]),
        ("POST /api/sessions/bravo/mutations/op-shared/reconciliation", ["401", "401", "403", "422", "422", "403", "403", "401", "401"]),
        // Their forms are pages: no credential goes to sign-in; a JSON body is not a form (415).
        ("POST /sessions/alpha/operations/op-alpha/notes", ["303 sign-in", "401", "403", "415", "415", "403", "403", "303 sign-in", "303 sign-in"]),
        ("POST /sessions/bravo/operations/op-shared/reconciliation", ["303 sign-in", "401", "403", "415", "415", "403", "404", "303 sign-in", "303 sign-in"]),
    ];
    let mut mismatches = run_table(&app, "signed-in mode", &roles, table).await;

    // Open mode (the loopback default): no credential reads everything; a viewer is still scoped.
    let app = server(AccessArg::Auto).await;
    two_sessions(&app).await;
    let viewer = viewer_cookie(&app, "alpha").await;
    let roles = [
        Role {
            name: "none",
            headers: vec![],
            ip: Some(Ipv4Addr::new(127, 0, 0, 20)),
            clears: false,
        },
        Role {
            name: "wrong bearer",
            headers: vec![bearer("not-a-token")],
            ip: None,
            clears: false,
        },
        Role {
            name: "host token",
            headers: vec![bearer(TOKEN)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 22)),
            clears: false,
        },
        Role {
            name: "viewer of alpha",
            headers: vec![cookie("outcomes_viewer", &viewer)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 23)),
            clears: false,
        },
        Role {
            name: "forged sign-in cookie",
            headers: vec![cookie("outcomes_sign_in", &forged)],
            ip: Some(Ipv4Addr::new(127, 0, 0, 24)),
            clears: true,
        },
    ];
    #[rustfmt::skip]
    let table: &[(&str, [&str; 5])] = &[
        // none, wrong bearer, host, viewer of alpha, forged
        ("GET /api/sessions", ["200", "401", "200", "404", "200"]),
        ("GET /api/unknowns", ["200", "401", "200", "404", "200"]),
        ("GET /api/sessions/alpha/turns", ["200", "401", "200", "200", "200"]),
        ("GET /api/sessions/bravo/turns", ["200", "401", "200", "404", "200"]),
        ("GET /api/mutation-outcomes?session_id=bravo", ["200", "401", "200", "404", "200"]),
        ("GET /api/run-events?session_id=bravo", ["200", "401", "200", "404", "200"]),
        ("GET /api/operations/op-shared", ["200 [alpha,bravo]", "401", "200 [alpha,bravo]", "200 [alpha]", "200 [alpha,bravo]"]),
        ("GET /api/me", ["200 open", "401", "200 host", "200 viewer", "200 open"]),
        ("GET /", ["200", "401", "200", "404", "200"]),
        ("GET /sessions/alpha", ["200", "401", "200", "200", "200"]),
        ("GET /sessions/bravo", ["200", "401", "200", "404", "200"]),
        ("GET /healthz", ["200", "401", "200", "200", "200"]),
        ("POST /api/host/sessions/alpha/viewer-links", ["401", "401", "201", "401", "401"]),
        ("GET /api/sessions/bravo/export", ["200", "401", "200", "404", "200"]),
        // Open access reads, but changes nothing: an operator action still needs staff.
        ("POST /api/sessions/alpha/mutations/op-alpha/notes", ["403", "401", "403", "403", "403"]),
        ("POST /sessions/alpha/operations/op-alpha/notes", ["403", "401", "403", "403", "403"]),
    ];
    mismatches.extend(run_table(&app, "open mode", &roles, table).await);
    assert!(
        mismatches.is_empty(),
        "{} mismatch(es):\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------------
// 2. One session's viewer never receives another session's data
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn one_sessions_viewer_never_receives_another_sessions_data() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("alpha", "t1", "op-shared", "completed").await;
    app.settled("bravo", "turn-bravo-secret", "op-shared", "failed")
        .await;
    app.settled("bravo", "turn-bravo-secret", "op-bravo-secret", "completed")
        .await;
    let (s, _) = app
        .step(
            "bravo",
            "op-bravo-secret",
            "metadata",
            json!({"title": "Bravo quarterly numbers"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let v = vec![cookie(
        "outcomes_viewer",
        &viewer_cookie(&app, "alpha").await,
    )];

    // Every read of bravo answers exactly what a session that does not exist answers.
    for (of_bravo, of_nobody) in [
        (
            "/api/mutation-outcomes?session_id=bravo",
            "/api/mutation-outcomes?session_id=nobody",
        ),
        (
            "/api/mutation-events?session_id=bravo&logical_turn_id=turn-bravo-secret",
            "/api/mutation-events?session_id=nobody&logical_turn_id=turn-bravo-secret",
        ),
        ("/api/sessions/bravo/turns", "/api/sessions/nobody/turns"),
        (
            "/api/sessions/bravo/turns/turn-bravo-secret/entries",
            "/api/sessions/nobody/turns/turn-bravo-secret/entries",
        ),
        (
            "/api/run-events?session_id=bravo",
            "/api/run-events?session_id=nobody",
        ),
        (
            "/api/sessions/bravo/mutations/op-bravo-secret/history",
            "/api/sessions/nobody/mutations/op-bravo-secret/history",
        ),
    ] {
        let b = get(&app, of_bravo, &v).await;
        let n = get(&app, of_nobody, &v).await;
        assert_eq!(b.status, StatusCode::NOT_FOUND, "{of_bravo}: {}", b.body);
        assert_eq!(n.status, StatusCode::NOT_FOUND, "{of_nobody}");
        assert_eq!(b.body, n.body, "{of_bravo}");
        assert_eq!(
            b.json(),
            json!({"error": {"code": "session_not_found", "message": "unknown session", "field": "session_id"}}),
            "{of_bravo}"
        );
        assert!(!b.body.contains("secret"), "{of_bravo}: {}", b.body);
    }
    assert_eq!(app.state.hub.subscriber_count("bravo"), 0);
    // Staff do read bravo.
    let staff = vec![bearer(&app.staff_token().await)];
    let r = get(&app, "/api/mutation-outcomes?session_id=bravo", &staff).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("op-bravo-secret"));

    // Operations: an id used in both sessions shows the viewer only alpha's match.
    let r = get(&app, "/api/operations/op-shared", &v).await;
    assert_eq!(r.status, StatusCode::OK);
    let matches = r.json()["matches"].as_array().unwrap().clone();
    assert_eq!(matches.len(), 1, "{}", r.body);
    assert_eq!(matches[0]["session_key"], "alpha");
    assert_eq!(matches[0]["entry"]["outcome"]["status"], "completed");
    assert!(!r.body.contains("bravo"), "{}", r.body);
    let r = get(&app, "/api/operations/op-bravo-secret", &v).await;
    assert_eq!(r.json(), json!({"matches": []}));
    assert_eq!(
        get(&app, "/api/operations/op-shared", &staff).await.json()["matches"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Pages: bravo's are the 404 of a session that does not exist, and show none of its ids.
    for path in [
        "/sessions/bravo",
        "/sessions/bravo/turns/turn-bravo-secret",
        "/operations/op-bravo-secret",
    ] {
        let r = get(&app, path, &v).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        // Nothing of bravo but what the viewer typed.
        for bravo_only in [
            "op-bravo-secret",
            "turn-bravo-secret",
            "op-shared",
            "failed",
        ] {
            assert!(
                path.contains(bravo_only) || !r.body.contains(bravo_only),
                "{path} shows {bravo_only}: {}",
                r.body
            );
        }
        // Staff see it (so the check above can fail).
        let s = get(&app, path, &staff).await;
        assert_eq!(s.status, StatusCode::OK, "{path}");
        assert!(
            ["op-bravo-secret", "turn-bravo-secret", "op-shared"]
                .iter()
                .any(|b| !path.contains(b) && s.body.contains(b)),
            "{path}: {}",
            s.body
        );
    }
    // bravo's pages are exactly the page of a session that does not exist.
    for (of_bravo, of_nobody) in [
        ("/sessions/bravo", "/sessions/nobody"),
        (
            "/sessions/bravo/turns/turn-bravo-secret",
            "/sessions/nobody/turns/turn-bravo-secret",
        ),
    ] {
        let b = get(&app, of_bravo, &v).await;
        let n = get(&app, of_nobody, &v).await;
        assert_eq!(n.status, StatusCode::NOT_FOUND, "{of_nobody}");
        assert_eq!(b.body, n.body, "{of_bravo}");
        assert!(b.body.contains("Page not found."), "{}", b.body);
    }
    let r = get(&app, "/operations/op-shared", &v).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("alpha"), "{}", r.body);
    assert!(!r.body.contains("bravo"), "{}", r.body);
    // Find is not there for a viewer: it tells nothing about bravo either.
    let b = get(&app, "/find?q=bravo", &v).await;
    let n = get(&app, "/find?q=nobody", &v).await;
    assert_eq!(b.status, StatusCode::NOT_FOUND);
    assert_eq!(b.body, n.body);

    // Live: the viewer's stream of alpha carries alpha's events only.
    let mut stream = plain()
        .get(format!("{}/api/run-events?session_id=alpha", app.base))
        .header(v[0].0, v[0].1.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    app.settled("bravo", "turn-bravo-secret", "op-bravo-live-1", "completed")
        .await;
    app.settled("alpha", "t1", "op-alpha-live-1", "completed")
        .await;
    app.settled("bravo", "turn-bravo-secret", "op-bravo-live-2", "completed")
        .await;
    app.settled("alpha", "t1", "op-alpha-live-2", "completed")
        .await;
    let got = read_until(&mut stream, "op-alpha-live-2").await;
    assert!(got.contains("op-alpha-live-1"), "{got}");
    assert!(got.contains("op-alpha-live-2"), "{got}");
    assert!(!got.contains("bravo"), "{got}");
    assert_eq!(got.matches("event: mutation_outcome").count(), 2, "{got}");
}

// ---------------------------------------------------------------------------------------------------
// 3. Signing in and out
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn signing_in_and_out() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("alpha", "t1", "op-alpha", "completed").await;
    let c = plain();
    let base = app.base.clone();

    // The form.
    let r = get(&app, "/sign-in?next=%2Fsessions%2Falpha", &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(r.body.contains("action=\"/sign-in\""), "{}", r.body);
    assert!(r.body.contains("value=\"/sessions/alpha\""), "{}", r.body);

    // A wrong password: 401 with the form again and the problem.
    let r = post_sign_in(&app, &c, Some(&base), STAFF, "wrong", "/").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(
        r.body.contains("The name or the password is wrong."),
        "{}",
        r.body
    );
    assert!(set_cookies(&r.headers).is_empty());
    // An unknown name: the same answer.
    let r = post_sign_in(&app, &c, Some(&base), "nobody", PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.body.contains("The name or the password is wrong."));

    // The right password without Origin, or from another origin: 403, no cookie.
    let r = post_sign_in(&app, &c, None, STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "origin_mismatch");
    assert!(set_cookies(&r.headers).is_empty());
    let r = post_sign_in(&app, &c, Some("http://evil.example"), STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(set_cookies(&r.headers).is_empty());
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    let other_port = format!("http://127.0.0.1:{}", port.wrapping_add(1));
    let r = post_sign_in(&app, &c, Some(&other_port), STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{other_port}");
    // `Origin: null` counts only with the browser's own `Sec-Fetch-Site: same-origin`.
    for site in [None, Some("cross-site"), Some("same-site"), Some("none")] {
        let r = post_sign_in_with(&app, &c, Some("null"), site, STAFF, PASSWORD, "/").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{site:?}");
        assert!(set_cookies(&r.headers).is_empty());
    }
    let r = post_sign_in_with(
        &app,
        &c,
        Some("null"),
        Some("same-origin"),
        STAFF,
        PASSWORD,
        "/",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(set_cookie_value(&r.headers, "outcomes_sign_in").is_some());
    // The browser's word does not rescue a foreign origin.
    let r = post_sign_in_with(
        &app,
        &c,
        Some("http://evil.example"),
        Some("same-origin"),
        STAFF,
        PASSWORD,
        "/",
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // Success: 303 to next with the cookie.
    let r = post_sign_in(
        &app,
        &c,
        Some(&base),
        STAFF,
        PASSWORD,
        "/sessions/alpha?x=1",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(location(&r), "/sessions/alpha?x=1");
    let set = set_cookies(&r.headers);
    assert_eq!(set.len(), 1, "{set:?}");
    let id = set_cookie_value(&r.headers, "outcomes_sign_in").unwrap();
    assert!(id.len() >= 43, "{id}");
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set[0].contains(attr), "{attr}: {}", set[0]);
    }
    assert!(
        !set[0].contains("Max-Age"),
        "a browser-session cookie: {}",
        set[0]
    );
    assert!(!set[0].contains("Secure"), "plain http: {}", set[0]);

    // next elsewhere: back to `/`.
    for evil in ["https://evil.example/", "//evil.example/", "/sign-out"] {
        let r = post_sign_in(&app, &c, Some(&base), STAFF, PASSWORD, evil).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{evil}");
        assert_eq!(location(&r), "/", "{evil}");
    }

    // The cookie works.
    let me = get(&app, "/api/me", &[cookie("outcomes_sign_in", &id)]).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(
        me.json(),
        json!({"access": "staff", "name": "ada", "can_sign_out": true})
    );
    let page = get(&app, "/sessions/alpha", &[cookie("outcomes_sign_in", &id)]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("data-access=\"staff\""), "{}", page.body);
    // Signed in, the form goes straight on.
    let r = get(
        &app,
        "/sign-in?next=%2Funknowns",
        &[cookie("outcomes_sign_in", &id)],
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/unknowns");

    // A change made with the cookie needs Origin; signing out without it is refused and changes nothing.
    let r = send(
        &c,
        Method::POST,
        &format!("{base}/sign-out"),
        &[cookie("outcomes_sign_in", &id)],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        get(&app, "/api/me", &[cookie("outcomes_sign_in", &id)])
            .await
            .status,
        StatusCode::OK
    );

    // Sign out: 303 to the sign-in page, both cookies cleared, the sign-in over on the server.
    let r = send(
        &c,
        Method::POST,
        &format!("{base}/sign-out"),
        &[cookie("outcomes_sign_in", &id), ("origin", base.clone())],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(location(&r), "/sign-in");
    assert!(clears(&r.headers, "outcomes_sign_in"), "{:?}", r.headers);
    assert!(clears(&r.headers, "outcomes_viewer"), "{:?}", r.headers);
    for path in ["/api/me", "/api/sessions/alpha/turns"] {
        let r = get(&app, path, &[cookie("outcomes_sign_in", &id)]).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(r.json()["error"]["code"], "unauthorized", "{path}");
        assert!(clears(&r.headers, "outcomes_sign_in"), "{path}");
    }

    // A forged cookie on a page: 303 to sign in (whatever Accept says), and the cookie is cleared.
    let forged = server::staff::new_sign_in_id();
    for accept in ["text/html", "application/json"] {
        let r = get(
            &app,
            "/sessions/alpha?tab=1",
            &[
                cookie("outcomes_sign_in", &forged),
                ("accept", accept.into()),
            ],
        )
        .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{accept}");
        assert!(
            sends_to_sign_in(&location(&r), "/sessions/alpha?tab=1"),
            "{}",
            location(&r)
        );
        assert!(clears(&r.headers, "outcomes_sign_in"), "{:?}", r.headers);
        assert!(!r.body.contains("op-alpha"));
    }
}

#[tokio::test]
async fn the_eleventh_wrong_password_is_429_and_then_even_the_right_one_is() {
    let app = server(AccessArg::SignedIn).await;
    let c = plain();
    for i in 1..=10 {
        let r = post_sign_in(&app, &c, Some(&app.base), STAFF, "wrong", "/").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "attempt {i}");
    }
    let r = post_sign_in(&app, &c, Some(&app.base), STAFF, "wrong", "/").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(r.body.contains("Too many failed sign-ins"), "{}", r.body);
    let r = post_sign_in(&app, &c, Some(&app.base), STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers.contains_key("retry-after"));
    assert!(set_cookies(&r.headers).is_empty());
    // Another address is not blocked.
    let r = post_sign_in(
        &app,
        &client_at(Ipv4Addr::new(127, 0, 0, 2)),
        Some(&app.base),
        STAFF,
        PASSWORD,
        "/",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}

// ---------------------------------------------------------------------------------------------------
// 4. Viewer links
// ---------------------------------------------------------------------------------------------------

async fn post_link(app: &TestApp, session: &str, body: Option<&str>) -> Got {
    send(
        &plain(),
        Method::POST,
        &format!("{}/api/host/sessions/{session}/viewer-links", app.base),
        &[bearer(TOKEN)],
        body,
    )
    .await
}

fn parse_time(s: &str) -> i64 {
    use cookie::time::format_description::well_known::Rfc3339;
    let t = cookie::time::OffsetDateTime::parse(s, &Rfc3339).expect(s);
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap()
}

#[tokio::test]
async fn viewer_links_are_minted_checked_opened_and_revoked() {
    let app = server(AccessArg::SignedIn).await;
    for s in ["alpha", "charlie"] {
        app.settled(s, "t1", "m1", "completed").await;
    }
    let store = &app.state.access.store;

    // `{}` and an empty body: 7 days.
    for body in [Some("{}"), None, Some("  ")] {
        let before = store.now_ms();
        let r = post_link(&app, "alpha", body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{body:?}: {}", r.body);
        let v = r.json();
        let url = v["url"].as_str().unwrap();
        let token = url.strip_prefix("/v/").expect(url);
        assert_eq!(token.len(), 43, "{url}");
        assert!(token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        let at = parse_time(v["expires_at"].as_str().unwrap());
        let week = 7 * 24 * 3600 * 1000;
        assert!((before + week..=store.now_ms() + week).contains(&at), "{v}");
        assert_eq!(v.as_object().unwrap().len(), 2, "{v}");
    }
    // The longest life, and one second.
    let before = store.now_ms();
    let r = post_link(&app, "alpha", Some(r#"{"expires_in_secs": 31622400}"#)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let at = parse_time(r.json()["expires_at"].as_str().unwrap());
    assert!(at >= before + 31_622_400_000 && at <= store.now_ms() + 31_622_400_000);
    // JSON Schema's integer: 60.0 is the integer 60 (Schemathesis sends it as valid data).
    let before = store.now_ms();
    let r = post_link(&app, "alpha", Some(r#"{"expires_in_secs": 60.0}"#)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let at = parse_time(r.json()["expires_at"].as_str().unwrap());
    assert!(at >= before + 60_000 && at <= store.now_ms() + 60_000);
    // A link of one second works, then does not.
    let r = post_link(&app, "alpha", Some(r#"{"expires_in_secs": 1}"#)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let short = r.json()["url"].as_str().unwrap().to_owned();
    let short_cookie = open_link(&app, &short).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = get(&app, &short, &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = get(
        &app,
        "/api/sessions/alpha/turns",
        &[cookie("outcomes_viewer", &short_cookie)],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(clears(&r.headers, "outcomes_viewer"));

    // Refusals.
    for (body, status, code, field) in [
        (
            r#"{"expires_in_secs": 0}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (
            r#"{"expires_in_secs": 31622401}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (
            r#"{"expires_in_secs": -1}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (
            r#"{"expires_in_secs": "x"}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (
            r#"{"expires_in_secs": 1.5}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (r#"{"expires_in_secs":"#, 400, "malformed_json", None),
        ("not json", 400, "malformed_json", None),
        ("[]", 400, "malformed_json", None),
    ] {
        let r = post_link(&app, "alpha", Some(body)).await;
        assert_eq!(r.status.as_u16(), status, "{body}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], code, "{body}: {}", r.body);
        if let Some(f) = field {
            assert_eq!(r.json()["error"]["field"], f, "{body}");
        }
    }
    let r = post_link(&app, "nobody", Some("{}")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "session_not_found");
    // 422 before 404.
    let r = post_link(&app, "nobody", Some(r#"{"expires_in_secs": 0}"#)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Opening a link: 303 to its session with the cookie.
    let url = app.mint_link("charlie").await;
    let token = url.strip_prefix("/v/").unwrap().to_owned();
    let r = get(&app, &url, &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/sessions/charlie");
    let set = set_cookies(&r.headers);
    assert_eq!(set.len(), 1, "{set:?}");
    assert!(
        set[0].starts_with(&format!("outcomes_viewer={token};")),
        "{}",
        set[0]
    );
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set[0].contains(attr), "{attr}: {}", set[0]);
    }
    let max_age: u64 = set[0]
        .split("; ")
        .find_map(|a| a.strip_prefix("Max-Age="))
        .expect("Max-Age")
        .parse()
        .unwrap();
    assert!((604_700..=604_800).contains(&max_age), "{max_age}");
    let v = vec![cookie("outcomes_viewer", &token)];
    let me = get(&app, "/api/me", &v).await;
    assert_eq!(
        me.json(),
        json!({"access": "viewer", "can_sign_out": true, "session_key": "charlie"})
    );
    assert_eq!(
        get(&app, "/api/sessions/charlie/turns", &v).await.status,
        StatusCode::OK
    );
    // A session key that needs encoding comes back percent-encoded.
    app.settled("a b/c", "t1", "m1", "completed").await;
    let url = app.mint_link("a%20b%2Fc").await;
    let r = get(&app, &url, &[]).await;
    assert_eq!(location(&r), "/sessions/a%20b%2Fc");

    // A wrong token: 404 page.
    for wrong in [
        "/v/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".to_owned(),
        format!("/v/{}x", token),
        format!("/v/{}", &token[..42]),
    ] {
        let r = get(&app, &wrong, &[]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{wrong}");
        assert!(r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        assert!(r.body.contains("This link no longer works."), "{}", r.body);
        assert!(set_cookies(&r.headers).is_empty());
    }

    // Revoking: the cookie stops working at once.
    assert_eq!(revoke(&app, "charlie").await, json!({"revoked": 1}));
    let r = get(&app, "/api/sessions/charlie/turns", &v).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert!(clears(&r.headers, "outcomes_viewer"));
    // A page opened with the revoked link's cookie: the end user's plain page (this link no longer
    // works), never the staff sign-in form; the cookie is cleared, so the next page asks for a sign-in.
    let r = get(&app, "/sessions/charlie", &v).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert!(r.body.contains("This link no longer works."), "{}", r.body);
    assert!(
        r.body
            .contains("Ask whoever shared it with you for a new link."),
        "{}",
        r.body
    );
    assert!(!r.body.contains("/sign-in"), "{}", r.body);
    assert!(!r.body.contains("Password"), "{}", r.body);
    assert!(clears(&r.headers, "outcomes_viewer"));
    // The cleared cookie leaves a marker behind (an open page's read may clear it before the end user
    // reloads): a page asked for with only the marker is the same plain page, not the sign-in form.
    let marker = set_cookies(&r.headers)
        .into_iter()
        .find(|c| c.starts_with("outcomes_viewer_ended=1"))
        .expect("the link-ended marker");
    assert!(marker.contains("HttpOnly"), "{marker}");
    let m = vec![cookie("outcomes_viewer_ended", "1")];
    let r = get(&app, "/sessions/charlie", &m).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert!(r.body.contains("This link no longer works."), "{}", r.body);
    let r = get(&app, "/api/sessions/charlie/turns", &m).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    // Without it (a new browser, or after signing in or out): the sign-in form, as for anyone.
    let r = get(&app, "/sessions/charlie", &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(
        sends_to_sign_in(&location(&r), "/sessions/charlie"),
        "{}",
        location(&r)
    );
    let r = get(&app, &url_of(&token), &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.body.contains("This link no longer works."), "{}", r.body);
    assert!(!r.body.contains("/sign-in"), "{}", r.body);
    assert_eq!(revoke(&app, "charlie").await, json!({"revoked": 0}));
    // Revoking all six of alpha's links (the expired one included).
    assert_eq!(revoke(&app, "alpha").await, json!({"revoked": 6}));

    // Deleting the session deletes its links: the cookie stops working, even once the key is used again.
    app.settled("delta", "t1", "m1", "completed").await;
    let delta = viewer_cookie(&app, "delta").await;
    let d = vec![cookie("outcomes_viewer", &delta)];
    assert_eq!(
        get(&app, "/api/sessions/delta/turns", &d).await.status,
        StatusCode::OK
    );
    let (s, _) = app
        .host(Method::DELETE, "/api/host/sessions/delta", Value::Null)
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    app.settled("delta", "t1", "m2", "completed").await;
    let r = get(&app, "/api/sessions/delta/turns", &d).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert!(clears(&r.headers, "outcomes_viewer"));
    assert_eq!(
        get(&app, &url_of(&delta), &[]).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(revoke(&app, "delta").await, json!({"revoked": 0}));
}

fn url_of(token: &str) -> String {
    format!("/v/{token}")
}

#[tokio::test]
async fn a_viewers_live_stream_closes_when_its_links_are_revoked() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("echo", "t1", "m1", "completed").await;
    app.settled("other", "t1", "m1", "completed").await;
    let viewer = viewer_cookie(&app, "echo").await;
    let _other_viewer = viewer_cookie(&app, "other").await;
    let open = |headers: Vec<(&'static str, String)>| {
        let base = app.base.clone();
        async move {
            let mut req = plain().get(format!("{base}/api/run-events?session_id=echo"));
            for (k, v) in headers {
                req = req.header(k, v);
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            r
        }
    };
    let mut viewer_stream = open(vec![cookie("outcomes_viewer", &viewer)]).await;
    let mut host_stream = open(vec![bearer(TOKEN)]).await;
    assert_eq!(app.state.hub.subscriber_count("echo"), 2);

    // Revoking another session's links leaves this stream open.
    assert_eq!(revoke(&app, "other").await, json!({"revoked": 1}));
    app.settled("echo", "t1", "m2", "completed").await;
    let got = read_until(&mut viewer_stream, "\"m2\"").await;
    assert!(got.contains("\"m2\""), "{got}");
    assert!(read_until(&mut host_stream, "\"m2\"")
        .await
        .contains("\"m2\""));

    // Revoking its own: the viewer's stream ends; the host's stays.
    assert_eq!(revoke(&app, "echo").await, json!({"revoked": 1}));
    let rest = tokio::time::timeout(Duration::from_secs(5), viewer_stream.text())
        .await
        .expect("the viewer's stream ends within 5 s")
        .unwrap();
    assert!(!rest.contains("mutation_outcome"), "{rest}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while app.state.hub.subscriber_count("echo") != 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the subscription is freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app.settled("echo", "t1", "m3", "completed").await;
    assert!(read_until(&mut host_stream, "\"m3\"")
        .await
        .contains("\"m3\""));
    // And the cookie opens no new stream.
    let r = get(
        &app,
        "/api/run-events?session_id=echo",
        &[cookie("outcomes_viewer", &viewer)],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

// ---------------------------------------------------------------------------------------------------
// 5. Staff tokens and the trusted proxy
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_staff_token_reads_but_never_writes() {
    let app = server(AccessArg::SignedIn).await;
    two_sessions(&app).await;
    let token = app.staff_token().await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let h = [("authorization", format!("{scheme} {token}"))];
        let r = get(&app, "/api/sessions", &h).await;
        assert_eq!(r.status, StatusCode::OK, "{scheme}");
        assert_eq!(r.json()["sessions"].as_array().unwrap().len(), 2);
        assert_eq!(
            get(&app, "/api/me", &h).await.json(),
            json!({"access": "staff", "name": "ada", "can_sign_out": false})
        );
    }
    // The host API: 401, as often as it is tried (a valid staff token is not a guess: never 429).
    for i in 0..12 {
        let r = send(
            &plain(),
            Method::POST,
            &format!("{}/api/host/sessions/alpha/mutations", app.base),
            &[bearer(&token)],
            Some(r#"{"logical_turn_id": "t9", "mutation_id": "m9", "tool": "x"}"#),
        )
        .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "try {i}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], "unauthorized");
    }
    let r = send(
        &plain(),
        Method::DELETE,
        &format!("{}/api/host/sessions/alpha", app.base),
        &[bearer(&token)],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // Nothing was written.
    assert_eq!(
        get(&app, "/api/sessions/alpha/turns", &[bearer(&token)])
            .await
            .json()["turns"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A removed account's token stops working.
    assert!(app.state.access.store.remove_staff(STAFF).await.unwrap());
    assert_eq!(
        get(&app, "/api/sessions", &[bearer(&token)]).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn the_trusted_proxy_header_counts_only_from_the_trusted_proxy() {
    let app = with_staff(|a| {
        a.access = AccessArg::SignedIn;
        a.trusted_user_header = Some("x-forwarded-user".parse().unwrap());
        a.trusted_proxy = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    app.settled("alpha", "t1", "m1", "completed").await;
    let h = [("x-forwarded-user", "grace".to_owned())];
    let me = get(&app, "/api/me", &h).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(
        me.json(),
        json!({"access": "staff", "name": "grace", "can_sign_out": false})
    );
    assert_eq!(
        get(&app, "/api/sessions/alpha/turns", &h).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get(&app, "/sessions/alpha", &h).await.status,
        StatusCode::OK
    );
    // Without the header: closed.
    assert_eq!(
        get(&app, "/api/me", &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
    // A value that is not a plain name: ignored.
    assert_eq!(
        get(&app, "/api/me", &[("x-forwarded-user", "a b".into())])
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    // From another address: ignored.
    let r = send(
        &client_at(Ipv4Addr::new(127, 0, 0, 2)),
        Method::GET,
        &format!("{}/api/me", app.base),
        &h,
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // The proxy's header does not open the host API.
    let r = send(
        &plain(),
        Method::POST,
        &format!("{}/api/host/sessions/alpha/viewer-links", app.base),
        &h,
        Some("{}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);

    // A server whose trusted proxy is elsewhere ignores the header from here.
    let app = with_staff(|a| {
        a.access = AccessArg::SignedIn;
        a.trusted_user_header = Some("x-forwarded-user".parse().unwrap());
        a.trusted_proxy = vec!["10.0.0.0/8".parse().unwrap()];
    })
    .await;
    assert_eq!(
        get(&app, "/api/me", &h).await.status,
        StatusCode::UNAUTHORIZED
    );
    let r = get(&app, "/sessions/alpha", &h).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}

// ---------------------------------------------------------------------------------------------------
// 6. Security headers
// ---------------------------------------------------------------------------------------------------

/// The nonce of a CSP's `'nonce-…'` source.
fn csp_nonce(csp: &str) -> Option<String> {
    let start = csp.find("'nonce-")? + "'nonce-".len();
    let len = csp[start..].find('\'')?;
    Some(csp[start..start + len].to_owned())
}

fn assert_common_headers(what: &str, h: &HeaderMap) {
    assert_eq!(h["x-content-type-options"], "nosniff", "{what}");
    assert_eq!(h["referrer-policy"], "no-referrer", "{what}");
    assert_eq!(h["x-frame-options"], "DENY", "{what}");
    assert_eq!(h["cache-control"], "no-store", "{what}");
}

#[tokio::test]
async fn pages_and_api_answers_carry_the_security_headers() {
    let app = server(AccessArg::Auto).await;
    app.settled("alpha", "t1", "m1", "completed").await;

    let mut nonces = Vec::new();
    for path in ["/sessions/alpha", "/sessions/alpha", "/", "/nowhere"] {
        let r = get(&app, path, &[]).await;
        assert!(
            r.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
        assert_common_headers(path, &r.headers);
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(csp.contains("base-uri 'none'"), "{csp}");
        assert!(csp.contains("form-action 'self'"), "{csp}");
        assert!(
            csp.contains("script-src 'self' 'wasm-unsafe-eval' 'nonce-"),
            "{csp}"
        );
        let nonce = csp_nonce(csp).expect("a nonce");
        assert!(nonce.len() >= 22, "{nonce}");
        // Every script of the page carries this response's nonce.
        let scripts: Vec<&str> = r.body.split("<script").skip(1).collect();
        println!("{path}: {} script element(s)", scripts.len());
        for s in &scripts {
            let tag = &s[..s.find('>').unwrap()];
            assert!(
                tag.contains(&format!("nonce=\"{nonce}\"")),
                "{path}: <script{tag}> lacks nonce {nonce}"
            );
        }
        assert_eq!(
            r.body.matches("nonce=\"").count(),
            r.body.matches(&format!("nonce=\"{nonce}\"")).count(),
            "{path}: a nonce other than the CSP's"
        );
        nonces.push(nonce);
    }
    // The hydration scripts are there (without a built bundle they still reference it).
    let page = get(&app, "/sessions/alpha", &[]).await;
    assert!(page.body.contains("<script"), "{}", page.body);
    // A fresh nonce every response.
    let mut unique = nonces.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), nonces.len(), "{nonces:?}");

    // Stand-alone pages and JSON answers.
    for (path, html) in [
        ("/sign-in", true),
        ("/v/nope", true),
        ("/api/sessions", false),
        ("/api/sessions/alpha/turns", false),
        ("/api/sessions/nobody/turns", false),
        ("/healthz", false),
        ("/api/openapi.json", false),
    ] {
        let r = get(&app, path, &[]).await;
        assert_common_headers(path, &r.headers);
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        if html {
            assert!(csp.contains("'nonce-"), "{path}: {csp}");
        } else {
            assert_eq!(
                csp,
                "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                "{path}"
            );
            assert!(r.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"));
        }
    }
    // Refusals too.
    let r = get(&app, "/api/sessions", &[bearer("wrong")]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_common_headers("401", &r.headers);
    let closed = server(AccessArg::SignedIn).await;
    let r = get(&closed, "/sessions/alpha", &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_common_headers("303", &r.headers);
    let r = get(&closed, "/api/sessions", &[]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_common_headers("401 closed", &r.headers);
}
