//! The support workbench over HTTP (docs/api.md "Claims", "Support queue", "Search"): claims as JSON and
//! as no-JavaScript forms, who may make them and who may see them; the queue's orders, substring filters
//! and what they refuse; search, its paging and what it refuses.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::access::plain;
use crate::helpers::operator::{
    bob, claim_path, delete, error, get, history_path, post, signed_in, Who,
};
use crate::helpers::{enc, form, TOKEN};

#[tokio::test]
async fn one_staff_member_holds_a_claim_the_others_are_told_who_and_a_viewer_never_sees_it() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    let ada = app.staff_token().await;
    let bob = bob(&app).await;

    let (s, row) = post(&app, Who::Bearer(&ada), &claim_path("s", "m"), json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{row}");
    assert_eq!(
        (
            &row["kind"],
            &row["actor"],
            &row["revision"],
            &row["ledger_status"]
        ),
        (
            &json!("claim"),
            &json!("staff:ada"),
            &Value::Null,
            &json!("outcome_unknown")
        )
    );
    let (s, again) = post(&app, Who::Bearer(&ada), &claim_path("s", "m"), json!({})).await;
    assert_eq!((s, &again), (StatusCode::OK, &row));
    let (s, body) = post(&app, Who::Bearer(&bob), &claim_path("s", "m"), json!({})).await;
    assert_eq!(
        error(s, &body),
        (StatusCode::CONFLICT, Some("already_claimed"), None)
    );
    assert_eq!(
        body["error"]["claim"],
        json!({"by": "ada", "at": row["at"]})
    );
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("ada is already on it"));

    // Staff see it in the queue and the look-up; the host's reads are not a viewer's.
    let (_, queue) = get(&app, Who::Bearer(&bob), "/api/unknowns").await;
    assert_eq!(
        queue["matches"][0]["claim"],
        json!({"by": "ada", "at": row["at"]})
    );
    let (_, found) = get(&app, Who::Bearer(TOKEN), "/api/operations/m").await;
    assert_eq!(found["matches"][0]["claim"]["by"], "ada");

    // A viewer: no claim anywhere, and may not claim.
    let cookie = app.viewer("s").await;
    let (s, history) = get(&app, Who::Cookie(&cookie), &history_path("s", "m")).await;
    assert_eq!(s, StatusCode::OK);
    assert!(history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["kind"] != "claim" && c["kind"] != "release"));
    let (_, found) = get(&app, Who::Cookie(&cookie), "/api/operations/m").await;
    let found = &found["matches"][0];
    assert!(
        found.get("claim").is_none()
            && found.get("last_note").is_none()
            && found.get("notes").is_none()
    );
    let (s, body) = post(&app, Who::Cookie(&cookie), &claim_path("s", "m"), json!({})).await;
    assert_eq!(
        error(s, &body),
        (StatusCode::FORBIDDEN, Some("staff_only"), None)
    );
    let (s, body) = post(&app, Who::Bearer(TOKEN), &claim_path("s", "m"), json!({})).await;
    assert_eq!(
        error(s, &body),
        (StatusCode::FORBIDDEN, Some("staff_only"), None)
    );
    // A signed-in browser's change needs its Origin.
    let ada_cookie = app.sign_in().await;
    let (s, body) = delete(
        &app,
        Who::CookieNoOrigin(&ada_cookie),
        &claim_path("s", "m"),
    )
    .await;
    assert_eq!(
        error(s, &body),
        (StatusCode::FORBIDDEN, Some("origin_mismatch"), None)
    );

    // Released by anyone (204, twice); then bob takes it.
    for _ in 0..2 {
        let (s, _) = delete(&app, Who::Bearer(&bob), &claim_path("s", "m")).await;
        assert_eq!(s, StatusCode::NO_CONTENT);
    }
    let (s, row) = post(
        &app,
        Who::Cookie(&ada_cookie),
        &claim_path("s", "m"),
        json!({}),
    )
    .await;
    assert_eq!(
        (s, &row["actor"]),
        (StatusCode::CREATED, &json!("staff:ada"))
    );
    let (_, history) = get(&app, Who::Bearer(&bob), &history_path("s", "m")).await;
    let staff_rows: Vec<(&str, &str)> = history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "claim" || c["kind"] == "release")
        .map(|c| (c["kind"].as_str().unwrap(), c["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        staff_rows,
        [
            ("claim", "staff:ada"),
            ("release", "staff:bob"),
            ("claim", "staff:ada")
        ]
    );

    // Unknown operation, malformed ids.
    let (s, body) = post(&app, Who::Bearer(&bob), &claim_path("s", "nope"), json!({})).await;
    assert_eq!(
        error(s, &body),
        (StatusCode::NOT_FOUND, Some("mutation_not_found"), None)
    );
    let (s, body) = post(&app, Who::Bearer(&bob), &claim_path("s", ".."), json!({})).await;
    assert_eq!(s.as_u16() / 100, 4, "{body}");
}

#[tokio::test]
async fn the_claim_buttons_work_without_javascript_and_go_back_only_to_this_server() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    let cookie = app.sign_in().await;
    let send = |path: &'static str, next: &'static str| {
        let app = &app;
        let cookie = cookie.clone();
        async move {
            plain()
                .post(format!("{}/sessions/s/operations/m/{path}", app.base))
                .header("cookie", cookie)
                .header("origin", &app.base)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form(&[("next", next)]))
                .send()
                .await
                .unwrap()
        }
    };
    let r = send("claim", "/unknowns?sort=tool").await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/unknowns?sort=tool");
    let (_, queue) = get(&app, Who::Bearer(TOKEN), "/api/unknowns").await;
    assert_eq!(queue["matches"][0]["claim"]["by"], "ada");
    for elsewhere in [
        "//evil.example/x",
        "https://evil.example/",
        "/\\evil.example",
    ] {
        let r = send("release", elsewhere).await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        assert_eq!(
            r.headers()["location"],
            "/sessions/s/operations/m",
            "{elsewhere}"
        );
    }
    let (_, queue) = get(&app, Who::Bearer(TOKEN), "/api/unknowns").await;
    assert!(queue["matches"][0].get("claim").is_none());
    // Held by another: a page saying so, with the conflict's status.
    let bob = bob(&app).await;
    let (s, _) = post(&app, Who::Bearer(&bob), &claim_path("s", "m"), json!({})).await;
    assert_eq!(s, StatusCode::CREATED);
    let r = send("claim", "/unknowns").await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let page = r.text().await.unwrap();
    assert!(
        page.contains("The operation was not claimed.") && page.contains("bob is already on it"),
        "{page}"
    );
}

#[tokio::test]
async fn the_queue_sorts_and_filters_and_refuses_what_it_cannot_read() {
    let app = signed_in().await;
    for (session, m, tool) in [
        ("Support-Chat-1", "m-1", "github.Create_Issue"),
        ("billing-7", "m-2", "stripe.refund"),
    ] {
        app.approve(session, "t", m).await;
        // The helpers approve with one tool: this one names its own.
        let (s, body) = app
            .host(
                Method::POST,
                &format!("/api/host/sessions/{}/mutations", enc(session)),
                json!({"logical_turn_id": "t", "mutation_id": format!("{m}-x"), "tool": tool}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{body}");
        for (what, body) in [
            ("intent", json!({"attempt_id": "a1"})),
            (
                "settlement",
                json!({"attempt_id": "a1", "status": "outcome_unknown"}),
            ),
        ] {
            let (s, body) = app.step(session, &format!("{m}-x"), what, body).await;
            assert_eq!(s, StatusCode::OK, "{body}");
        }
    }
    let ada = app.staff_token().await;
    let ids = |v: &Value| -> Vec<String> {
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                m["entry"]["outcome"]["mutation_id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let (s, v) = get(
        &app,
        Who::Bearer(&ada),
        "/api/unknowns?tool_like=create_issue",
    )
    .await;
    assert_eq!(
        (s, ids(&v), v["total"].clone()),
        (StatusCode::OK, vec!["m-1-x".to_owned()], json!(1))
    );
    let (_, v) = get(
        &app,
        Who::Bearer(&ada),
        "/api/unknowns?session_like=BILLING&tool_like=",
    )
    .await;
    assert_eq!(ids(&v), ["m-2-x"]);
    let (_, v) = get(
        &app,
        Who::Bearer(&ada),
        "/api/unknowns?sort=tool&order=desc",
    )
    .await;
    assert_eq!(ids(&v), ["m-2-x", "m-1-x"]);
    let (_, v) = get(&app, Who::Bearer(&ada), "/api/unknowns?sort=age&order=asc").await;
    assert_eq!(ids(&v), ["m-2-x", "m-1-x"]);
    let (_, v) = get(
        &app,
        Who::Bearer(&ada),
        "/api/unknowns?settled_after=2000-01-01T00:00:00Z&settled_before=2000-01-02T00:00:00Z",
    )
    .await;
    assert_eq!(
        (ids(&v), v["total"].clone()),
        (Vec::<String>::new(), json!(0))
    );
    // A page by session, then the next with its cursor; that cursor means nothing in another order.
    let (_, first) = get(
        &app,
        Who::Bearer(&ada),
        "/api/unknowns?sort=session&limit=1",
    )
    .await;
    assert_eq!(ids(&first), ["m-1-x"]);
    let next = first["next"].as_str().unwrap().to_owned();
    let (_, second) = get(
        &app,
        Who::Bearer(&ada),
        &format!("/api/unknowns?sort=session&limit=1&after={next}"),
    )
    .await;
    assert_eq!(
        (ids(&second), second["next"].clone()),
        (vec!["m-2-x".to_owned()], Value::Null)
    );
    let (s, body) = get(
        &app,
        Who::Bearer(&ada),
        &format!("/api/unknowns?limit=1&after={next}"),
    )
    .await;
    assert_eq!(
        error(s, &body),
        (
            StatusCode::BAD_REQUEST,
            Some("invalid_cursor"),
            Some("after")
        )
    );
    let long = "x".repeat(257);
    for (query, field) in [
        ("sort=oldest".to_owned(), "sort"),
        ("order=up".to_owned(), "order"),
        ("settled_after=yesterday".to_owned(), "settled_after"),
        (
            "settled_before=2026-13-01T00:00:00Z".to_owned(),
            "settled_before",
        ),
        (format!("tool_like={long}"), "tool_like"),
        ("session_like=a%07b".to_owned(), "session_like"),
    ] {
        let (s, body) = get(&app, Who::Bearer(&ada), &format!("/api/unknowns?{query}")).await;
        assert_eq!(
            error(s, &body),
            (
                StatusCode::BAD_REQUEST,
                Some("invalid_parameter"),
                Some(field)
            ),
            "{query}"
        );
    }
}

#[tokio::test]
async fn search_answers_sessions_and_operations_by_substring_pages_them_and_hides_itself_from_viewers(
) {
    let app = signed_in().await;
    for session in ["support-chat-1", "Support-Chat-2", "a\u{200B}b-chat"] {
        app.settled(session, "t", &format!("op-{}", session.len()), "completed")
            .await;
    }
    let (s, body) = app
        .host(
            Method::PUT,
            "/api/host/sessions/support-chat-1/mutations/op-14/metadata",
            json!({"id": "INV-0042", "url": "https://pay.example.com/r/42", "title": "Refund for Ada"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let ada = app.staff_token().await;
    let keys = |v: &Value| -> Vec<String> {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_key"].as_str().unwrap().to_owned())
            .collect()
    };
    let (s, v) = get(&app, Who::Bearer(&ada), "/api/search?q=SUPPORT-CHAT").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(keys(&v), ["Support-Chat-2", "support-chat-1"]);
    assert_eq!(v["sessions"][0]["counts"]["completed"], 1);
    assert_eq!(
        (v["operations"].clone(), v["next"].clone()),
        (json!([]), Value::Null)
    );
    let (_, mut v) = get(&app, Who::Bearer(&ada), "/api/search?q=ada").await;
    // Where and when (issue 41): the turn's number and the recorded and settled times (RFC 3339 UTC).
    let hit = v["operations"][0].as_object_mut().unwrap();
    let recorded = hit.remove("recorded_at").unwrap();
    let settled = hit.remove("settled_at").unwrap();
    // RFC 3339 in UTC, with as many digits of the second's fraction as it needs (".82Z", never ".820Z":
    // a fixed length failed one run in ten).
    use time::format_description::well_known::Rfc3339;
    let parsed = [&recorded, &settled].map(|t| {
        let t = t.as_str().unwrap();
        assert!(t.ends_with('Z'), "{t}");
        time::OffsetDateTime::parse(t, &Rfc3339).expect(t)
    });
    assert!(parsed[0] <= parsed[1], "{recorded} {settled}");
    assert_eq!(
        v["operations"],
        json!([{"session_key": "support-chat-1", "logical_turn_id": "t", "turn_number": 1,
                "mutation_id": "op-14", "tool": "mcp__dashboards__create", "title": "Refund for Ada",
                "status": "completed"}])
    );
    assert_eq!(v["searched_newest"], Value::Null);
    // The marked form of an invisible character finds it.
    let (_, v) = get(
        &app,
        Who::Bearer(&ada),
        &format!("/api/search?q={}", enc("a⟨U+200B⟩b")),
    )
    .await;
    assert_eq!(keys(&v), ["a\u{200B}b-chat"]);
    // Paged: one of each a page, the host may search too.
    let (_, first) = get(&app, Who::Bearer(TOKEN), "/api/search?q=chat&limit=1").await;
    assert_eq!(keys(&first), ["a\u{200B}b-chat"]);
    let mut seen = keys(&first);
    let mut next = first["next"].as_str().map(str::to_owned);
    while let Some(n) = next {
        let (s, page) = get(
            &app,
            Who::Bearer(TOKEN),
            &format!("/api/search?q=chat&limit=1&after={n}"),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{page}");
        seen.extend(keys(&page));
        next = page["next"].as_str().map(str::to_owned);
    }
    assert_eq!(
        seen,
        ["a\u{200B}b-chat", "Support-Chat-2", "support-chat-1"]
    );
    // Refused.
    for (query, code, field) in [
        ("", "invalid_parameter", Some("q")),
        ("q=%20%20", "invalid_parameter", Some("q")),
        ("q=a%01b", "invalid_parameter", Some("q")),
        ("q=chat&limit=0", "invalid_parameter", Some("limit")),
        ("q=chat&limit=101", "invalid_parameter", Some("limit")),
        ("q=chat&after=bm9wZQ", "invalid_cursor", Some("after")),
    ] {
        let (s, body) = get(&app, Who::Bearer(&ada), &format!("/api/search?{query}")).await;
        assert_eq!(
            error(s, &body),
            (StatusCode::BAD_REQUEST, Some(code), field),
            "{query}"
        );
    }
    let (s, body) = get(
        &app,
        Who::Bearer(&ada),
        &format!("/api/search?q={}", "x".repeat(257)),
    )
    .await;
    assert_eq!(
        error(s, &body),
        (
            StatusCode::BAD_REQUEST,
            Some("invalid_parameter"),
            Some("q")
        )
    );
    // A viewer: the search does not exist for them; nobody without a credential: 401.
    let cookie = app.viewer("support-chat-1").await;
    let (s, body) = get(&app, Who::Cookie(&cookie), "/api/search?q=chat").await;
    assert_eq!(error(s, &body).0, StatusCode::NOT_FOUND);
    let (s, _) = get(&app, Who::Nobody, "/api/search?q=chat").await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

/// Issue 41: a query of one or two characters (退款, "refund", is one word of two) finds them inside
/// titles, ids and resource ids, and pages them with a cursor that keeps its window; `searched_newest`
/// stays `null` while the ledger holds no more than the window (20,000 operations).
#[tokio::test]
async fn a_two_character_query_finds_titles_that_hold_it_and_pages_them() {
    let app = signed_in().await;
    for (session, turn, m, title) in [
        ("support-1", "turn-1", "op-1", "退款已处理"),
        ("support-1", "turn-2", "op-2", "Order shipped"),
        ("support-2", "turn-1", "op-3", "部分退款已处理"),
        ("support-2", "turn-2", "op-4", "退款 failed"),
    ] {
        app.settled(session, turn, m, "completed").await;
        let (s, body) = app
            .host(
                Method::PUT,
                &format!("/api/host/sessions/{session}/mutations/{m}/metadata"),
                json!({"id": format!("R-{m}"), "url": "https://pay.example.com/r", "title": title}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }
    let ada = app.staff_token().await;
    let found = |v: &Value| -> Vec<(String, String, u64, String)> {
        v["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["session_key"].as_str().unwrap().to_owned(),
                    o["mutation_id"].as_str().unwrap().to_owned(),
                    o["turn_number"].as_u64().unwrap(),
                    o["title"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let want = |rows: &[(&str, &str, u64, &str)]| -> Vec<(String, String, u64, String)> {
        rows.iter()
            .map(|&(s, m, n, t)| (s.to_owned(), m.to_owned(), n, t.to_owned()))
            .collect()
    };
    let (s, v) = get(
        &app,
        Who::Bearer(&ada),
        &format!("/api/search?q={}", enc("退款")),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        found(&v),
        want(&[
            ("support-2", "op-4", 2, "退款 failed"),
            ("support-2", "op-3", 1, "部分退款已处理"),
            ("support-1", "op-1", 1, "退款已处理"),
        ])
    );
    assert_eq!(
        (
            v["sessions"].clone(),
            v["next"].clone(),
            v["searched_newest"].clone()
        ),
        (json!([]), Value::Null, Value::Null)
    );
    // One character, inside ids: op-1 to op-4 and every resource id R-op-n; one a page, each once.
    let mut seen = Vec::new();
    let mut path = "/api/search?q=P&limit=1".to_owned();
    loop {
        let (s, page) = get(&app, Who::Bearer(&ada), &path).await;
        assert_eq!(s, StatusCode::OK, "{page}");
        assert_eq!(page["searched_newest"], Value::Null);
        seen.extend(found(&page).into_iter().map(|(_, m, _, _)| m));
        match page["next"].as_str() {
            Some(n) => path = format!("/api/search?q=P&limit=1&after={n}"),
            None => break,
        }
    }
    assert_eq!(seen, ["op-4", "op-3", "op-2", "op-1"]);
}
