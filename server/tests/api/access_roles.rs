//! Who may see what (docs/access.md), role by role: every role against every endpoint, in tables.
//!
//! The failed-credential limiter counts per client address, so each role of the tables sends from its own
//! loopback address (127.0.0.0/8 is all loopback), and the wrong-bearer role from a new address each
//! request: no row turns 401 into 429 because of the rows before it.

use std::net::Ipv4Addr;

use reqwest::{Method, StatusCode};
use serde_json::json;
use server::serve::AccessArg;

use crate::helpers::access::{
    bearer, clears, cookie, fresh_ip, location, revoke, send, sends_to_sign_in, two_sessions, Got,
};
use crate::helpers::{client_at, server, TestApp, TOKEN};

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
    let signed_in = app.sign_in_id().await;
    // A viewer cookie of alpha whose links are then revoked, then a live one.
    let revoked = app.viewer_token("alpha").await;
    assert_eq!(revoke(&app, "alpha").await, json!({"revoked": 1}));
    let viewer = app.viewer_token("alpha").await;
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
        // The support desk (docs/api.md "Claims", "Bulk actions"): assigning and bulk reconciling are
        // staff's, as the other operator actions; the queue's bulk forms are pages a viewer cannot open.
        ("POST /api/sessions/alpha/mutations/op-alpha/assignment", ["401", "401", "403", "422", "422", "403", "403", "401", "401"]),
        ("POST /api/reconciliations", ["401", "401", "403", "422", "422", "403", "403", "401", "401"]),
        ("POST /sessions/alpha/operations/op-alpha/assignment", ["303 sign-in", "401", "403", "415", "415", "403", "403", "303 sign-in", "303 sign-in"]),
        ("POST /unknowns/bulk", ["303 sign-in", "401", "403", "415", "415", "403", "404", "303 sign-in", "303 sign-in"]),
        ("POST /unknowns/bulk/reconciliation", ["303 sign-in", "401", "403", "415", "415", "403", "404", "303 sign-in", "303 sign-in"]),
    ];
    let mut mismatches = run_table(&app, "signed-in mode", &roles, table).await;

    // Open mode (the loopback default): no credential reads everything; a viewer is still scoped.
    let app = server(AccessArg::Auto).await;
    two_sessions(&app).await;
    let viewer = app.viewer_token("alpha").await;
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
