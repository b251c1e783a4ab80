//! The paged reads (docs/api.md "Paging"): a turn's entries with `after_revision`, `limit` and `after`;
//! exact statuses, values and error bodies.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn, TestApp};

/// What an entries answer says, without its times: `latest_revision`, `next`, and per entry its
/// sequence, revision, mutation id, published status, ledger status and whether it is settled.
fn summary(v: &Value) -> Value {
    let entries: Vec<Value> = v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("entries in {v}"))
        .iter()
        .map(|e| {
            json!([
                e["sequence"],
                e["mutation_revision"],
                e["outcome"]["mutation_id"],
                e["outcome"]["status"],
                e["ledger_status"],
                !e["settled_at"].is_null()
            ])
        })
        .collect();
    json!({"latest_revision": v["latest_revision"], "entries": entries, "next": v["next"]})
}

async fn entries(app: &TestApp, query: &str) -> (StatusCode, Value) {
    app.get_json(&format!("/api/sessions/s/turns/t/entries{query}"))
        .await
}

/// Turn `t` of session `s`: `a` completed (revisions 1, 2; sequence 1), `b` approved only (2, never
/// published), `c` in flight (3; sequence 3), `d` settled unknown (4, 5; sequence 4), then `old`, a
/// legacy entry without a revision (sequence 5).
async fn turn_with_every_kind() -> TestApp {
    let app = spawn().await;
    app.settled("s", "t", "a", "completed").await;
    app.approve("s", "t", "b").await;
    app.start("s", "t", "c").await;
    app.settled("s", "t", "d", "outcome_unknown").await;
    let legacy: ledger::projection::LedgerEntry = serde_json::from_value(json!({
        "logical_turn_id": "t", "mutation_id": "old", "tool": "mcp__dashboards__create",
        "status": "failed", "intent_recorded": true
    }))
    .unwrap();
    let key = ledger::ids::SessionKey::parse("s").unwrap();
    app.state.engine.import_legacy(&key, &legacy).await.unwrap();
    app
}

const A: [&str; 2] = ["a", "completed"];

fn row(seq: i64, rev: Option<i64>, m: &str, status: &str, ledger: &str, settled: bool) -> Value {
    json!([seq, rev, m, status, ledger, settled])
}

#[tokio::test]
async fn after_revision_answers_only_what_changed_after_it_in_flight_included() {
    let app = turn_with_every_kind().await;
    let a = row(1, Some(2), A[0], A[1], "completed", true);
    let c = row(
        3,
        Some(3),
        "c",
        "outcome_unknown",
        "execution_started",
        false,
    );
    let d = row(4, Some(5), "d", "outcome_unknown", "outcome_unknown", true);
    let old = row(5, None, "old", "failed", "failed", true);
    let (s, v) = entries(&app, "").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["session_key"], "s");
    assert_eq!(v["logical_turn_id"], "t");
    assert_eq!(
        summary(&v),
        json!({"latest_revision": 5, "entries": [a, c, d, old], "next": null})
    );
    for (after, expected) in [
        ("0", json!([a, c, d])),
        ("2", json!([c, d])),
        ("3", json!([d])),
        ("4", json!([d])),
        ("5", json!([])),
    ] {
        let (s, v) = entries(&app, &format!("?after_revision={after}")).await;
        assert_eq!(s, StatusCode::OK, "{after}: {v}");
        assert_eq!(
            summary(&v),
            json!({"latest_revision": 5, "entries": expected, "next": null}),
            "after_revision={after}"
        );
    }
    // Leading zeros are digits like any other.
    let (_, v) = entries(&app, "?after_revision=0003").await;
    assert_eq!(summary(&v)["entries"], json!([d]));
    // Past the turn's latest revision: 409, naming the parameter.
    assert_eq!(
        entries(&app, "?after_revision=6").await,
        (
            StatusCode::CONFLICT,
            json!({"error": {"code": "cursor_ahead", "message": "cursor 6 is past the turn's latest revision 5", "field": "after_revision"}})
        )
    );
}

#[tokio::test]
async fn limit_and_after_page_through_the_turn_in_recorded_order() {
    let app = turn_with_every_kind().await;
    let (s, v) = entries(&app, "?limit=2").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        summary(&v),
        json!({"latest_revision": 5, "entries": [
            row(1, Some(2), "a", "completed", "completed", true),
            row(3, Some(3), "c", "outcome_unknown", "execution_started", false)
        ], "next": "eyJsIjoiZW50cmllcyIsInNlcSI6M30"})
    );
    let (s, v) = entries(&app, "?limit=2&after=eyJsIjoiZW50cmllcyIsInNlcSI6M30").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        summary(&v),
        json!({"latest_revision": 5, "entries": [
            row(4, Some(5), "d", "outcome_unknown", "outcome_unknown", true),
            row(5, None, "old", "failed", "failed", true)
        ], "next": null})
    );
    // With after_revision, one a page: a, c, d, then the end.
    let mut seen = Vec::new();
    let mut query = "?after_revision=0&limit=1".to_string();
    loop {
        let (s, v) = entries(&app, &query).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let page = summary(&v);
        assert_eq!(page["entries"].as_array().unwrap().len(), 1, "{page}");
        seen.push(page["entries"][0][2].clone());
        match page["next"].as_str() {
            Some(next) => query = format!("?after_revision=0&limit=1&after={next}"),
            None => break,
        }
    }
    assert_eq!(seen, [json!("a"), json!("c"), json!("d")]);
    // A page that is exactly full has no next when nothing follows.
    let (_, v) = entries(&app, "?limit=4").await;
    assert_eq!(v["next"], json!(null));
    assert_eq!(v["entries"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn entries_parameters_are_checked_before_the_session_and_name_their_field() {
    let app = turn_with_every_kind().await;
    let limit = json!({"error": {"code": "invalid_parameter", "message": "limit is a whole number from 1 to 1000", "field": "limit"}});
    let revision = json!({"error": {"code": "invalid_cursor", "message": "a cursor is one or more ASCII digits with value at most 9223372036854775807", "field": "after_revision"}});
    let after = json!({"error": {"code": "invalid_cursor", "message": "after is the opaque cursor a previous answer's next gave for this listing", "field": "after"}});
    // A sessions cursor (`{"l":"sessions","at":1,"key":"s"}`) is not an entries cursor.
    let sessions_cursor = "eyJsIjoic2Vzc2lvbnMiLCJhdCI6MSwia2V5IjoicyJ9";
    let cases = [
        ("limit=0", &limit),
        ("limit=1001", &limit),
        ("limit=", &limit),
        ("limit=%2B5", &limit),
        ("limit=1.0", &limit),
        ("limit=99999999999", &limit),
        ("after_revision=", &revision),
        ("after_revision=-1", &revision),
        ("after_revision=1.0", &revision),
        ("after_revision=9223372036854775808", &revision),
        ("after_revision=%201", &revision),
        ("after=", &after),
        ("after=garbage", &after),
        ("after=eyJsIjoiZW50cmllcyIsInNlcSI6M30%3D", &after),
        (&*format!("after={sessions_cursor}"), &after),
    ];
    for (query, body) in cases {
        for path in ["s/turns/t", "nobody/turns/t", "s/turns/nope"] {
            let got = app
                .get_json(&format!("/api/sessions/{path}/entries?{query}"))
                .await;
            assert_eq!(
                got,
                (StatusCode::BAD_REQUEST, body.clone()),
                "{path}?{query}"
            );
        }
    }
    // Then the 404s, then the 409.
    let (s, v) = app
        .get_json("/api/sessions/nobody/turns/t/entries?after_revision=99")
        .await;
    assert_eq!(
        (s, &v["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!("session_not_found"))
    );
    let (s, v) = app
        .get_json("/api/sessions/s/turns/nope/entries?after_revision=99")
        .await;
    assert_eq!(
        (s, &v["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!("turn_not_found"))
    );
    // Unknown parameters are ignored, as before.
    let (s, v) = entries(&app, "?limit=1&colour=blue").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["entries"].as_array().unwrap().len(), 1);
    assert_eq!(
        entries(&app, "?limit=1000").await.1["entries"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

/// `n` in-flight operations (approve + intent) in session `session`, one batch.
async fn in_flight_batch(app: &TestApp, session: &str, prefix: &str, n: usize, tool: &str) {
    let mut ops = Vec::with_capacity(2 * n);
    for i in 0..n {
        let m = format!("{prefix}{i:03}");
        ops.push(json!({"op": "approve", "session_key": session, "logical_turn_id": "t", "mutation_id": m, "tool": tool}));
        ops.push(
            json!({"op": "intent", "session_key": session, "mutation_id": m, "attempt_id": "a"}),
        );
    }
    let (s, v) = app
        .host(
            reqwest::Method::POST,
            "/api/host/batch",
            json!({"operations": ops}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == 201 || r["status"] == 200),
        "{v}"
    );
}

fn ids(v: &Value, list: &str) -> Vec<String> {
    v[list]
        .as_array()
        .unwrap_or_else(|| panic!("{list} in {v}"))
        .iter()
        .map(|m| match list {
            "matches" => format!(
                "{}/{}",
                m["session_key"].as_str().unwrap(),
                m["entry"]["outcome"]["mutation_id"].as_str().unwrap()
            ),
            _ => m["session_key"].as_str().unwrap().to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn the_support_queue_shows_all_218_open_unknowns_in_two_pages_with_their_total() {
    let app = spawn().await;
    in_flight_batch(&app, "s1", "m", 150, "mcp__dashboards__create").await;
    in_flight_batch(&app, "s2", "k", 68, "mcp__codehost__create_issue").await;
    app.settled("s1", "t", "done", "completed").await; // not open
    let (s, first) = app.get_json("/api/unknowns").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(first["total"], 218);
    let page1 = ids(&first, "matches");
    assert_eq!(page1.len(), 200);
    let next = first["next"].as_str().expect("a next cursor").to_owned();
    let (s, second) = app.get_json(&format!("/api/unknowns?after={next}")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(second["total"], 218);
    assert_eq!(second["next"], json!(null));
    let page2 = ids(&second, "matches");
    assert_eq!(page2.len(), 18);
    // Oldest first: every item once, none missing, in the order of one long read.
    let mut expected: Vec<String> = (0..150).map(|i| format!("s1/m{i:03}")).collect();
    expected.extend((0..68).map(|i| format!("s2/k{i:03}")));
    assert_eq!([page1, page2].concat(), expected);
    // Each item is as before: the entry, age_secs, notes.
    let item = &second["matches"][17];
    assert_eq!(item["entry"]["ledger_status"], "execution_started");
    assert_eq!(item["notes"], 0);
    assert!(item["age_secs"].is_u64(), "{item}");
    // Filters, each with its own total.
    let (_, v) = app
        .get_json("/api/unknowns?tool=mcp__codehost__create_issue&limit=10")
        .await;
    assert_eq!(
        (v["total"].clone(), ids(&v, "matches").len()),
        (json!(68), 10)
    );
    assert_eq!(ids(&v, "matches")[0], "s2/k000");
    let (_, v) = app
        .get_json("/api/unknowns?session_key=s2&limit=1000")
        .await;
    assert_eq!(
        (v["total"].clone(), v["next"].clone()),
        (json!(68), json!(null))
    );
    let (_, v) = app.get_json("/api/unknowns?min_age_secs=0&limit=1").await;
    assert_eq!(v["total"], 218);
    assert_eq!(
        app.get_json("/api/unknowns?min_age_secs=3600").await,
        (
            StatusCode::OK,
            json!({"matches": [], "next": null, "total": 0, "oldest_unknown_age_secs": null,
                   "in_flight_total": 218})
        )
    );
    assert_eq!(
        app.get_json("/api/unknowns?min_age_secs=9223372036854775807")
            .await,
        (
            StatusCode::OK,
            json!({"matches": [], "next": null, "total": 0, "oldest_unknown_age_secs": null,
                   "in_flight_total": 218})
        )
    );
    // A filter on an identifier no write could have stored matches nothing.
    let long = "x".repeat(257);
    assert_eq!(
        app.get_json(&format!("/api/unknowns?session_key={long}"))
            .await,
        (
            StatusCode::OK,
            json!({"matches": [], "next": null, "total": 0, "oldest_unknown_age_secs": null,
                   "in_flight_total": 218})
        )
    );
}

#[tokio::test]
async fn the_support_queue_refuses_malformed_parameters_naming_them() {
    let app = spawn().await;
    app.start("s", "t", "m").await;
    let bad = |field: &str, message: &str| json!({"error": {"code": "invalid_parameter", "message": message, "field": field}});
    let limit = bad("limit", "limit is a whole number from 1 to 1000");
    let age = bad(
        "min_age_secs",
        "min_age_secs is a whole number of seconds from 0 to 9223372036854775807",
    );
    let after = json!({"error": {"code": "invalid_cursor", "message": "after is the opaque cursor a previous answer's next gave for this listing", "field": "after"}});
    for (query, body) in [
        ("limit=0", &limit),
        ("limit=1001", &limit),
        ("limit=ten", &limit),
        ("min_age_secs=-1", &age),
        ("min_age_secs=1.5", &age),
        ("min_age_secs=9223372036854775808", &age),
        ("min_age_secs=", &age),
        ("tool=", &bad("tool", "tool: must not be empty")),
        (
            "session_key=",
            &bad("session_key", "session_key: must not be empty"),
        ),
        ("after=AAAA", &after),
        // An entries cursor is not a queue cursor.
        ("after=eyJsIjoiZW50cmllcyIsInNlcSI6M30", &after),
        // A queue cursor whose sequence is past i64.
        (
            "after=eyJsIjoidW5rbm93bnMiLCJhdCI6MSwic2VxIjo5MjIzMzcyMDM2ODU0Nzc1ODA4fQ",
            &after,
        ),
    ] {
        assert_eq!(
            app.get_json(&format!("/api/unknowns?{query}")).await,
            (StatusCode::BAD_REQUEST, body.clone()),
            "{query}"
        );
    }
    // Unknown parameters are ignored, as before.
    let (s, v) = app.get_json("/api/unknowns?colour=blue").await;
    assert_eq!((s, v["total"].clone()), (StatusCode::OK, json!(1)));
}

#[tokio::test]
async fn sessions_list_pages_with_filters_and_the_total() {
    let app = spawn().await;
    // Each a few milliseconds after the one before, so the order by last write is certain.
    let pause = || tokio::time::sleep(std::time::Duration::from_millis(5));
    app.settled("a%1", "t", "m", "completed").await;
    pause().await;
    app.start("a_2", "t", "m").await;
    pause().await;
    app.settled("ab", "t", "m", "outcome_unknown").await;
    pause().await;
    app.approve("b", "t", "m").await; // nothing published
    pause().await;
    app.settled("c", "t", "m", "failed").await;
    let (s, v) = app.get_json("/api/sessions").await;
    assert_eq!(s, StatusCode::OK);
    let all = ids(&v, "sessions");
    assert_eq!(all, ["c", "b", "ab", "a_2", "a%1"]);
    assert_eq!(
        (v["total"].clone(), v["next"].clone()),
        (json!(5), json!(null))
    );
    assert_eq!(
        v["sessions"][2]["counts"],
        json!({"completed": 0, "failed": 0, "not_executed": 0, "outcome_unknown": 1, "in_flight": 0})
    );
    assert_eq!(v["sessions"][2]["turn_count"], 1);
    // Two a page: 2 + 2 + 1, every session once.
    let mut seen = Vec::new();
    let mut query = "limit=2".to_owned();
    loop {
        let (s, v) = app.get_json(&format!("/api/sessions?{query}")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["total"], 5);
        seen.push(ids(&v, "sessions"));
        match v["next"].as_str() {
            Some(next) => query = format!("limit=2&after={next}"),
            None => break,
        }
    }
    assert_eq!(seen, [vec!["c", "b"], vec!["ab", "a_2"], vec!["a%1"]]);
    for (query, expected, total) in [
        ("has_unknown=true", vec!["ab", "a_2"], 2),
        ("has_unknown=false", vec!["c", "b", "a%1"], 3),
        (
            "tool=mcp__dashboards__create",
            vec!["c", "ab", "a_2", "a%1"],
            4,
        ),
        ("prefix=a", vec!["ab", "a_2", "a%1"], 3),
        ("prefix=a%25", vec!["a%1"], 1),
        ("prefix=a_", vec!["a_2"], 1),
        ("prefix=", vec!["c", "b", "ab", "a_2", "a%1"], 5),
        ("has_unknown=false&prefix=a&limit=1", vec!["a%1"], 1),
        ("has_unknown=true&limit=1", vec!["ab"], 2),
    ] {
        let (s, v) = app.get_json(&format!("/api/sessions?{query}")).await;
        assert_eq!(s, StatusCode::OK, "{query}: {v}");
        assert_eq!(
            (
                ids(&v, "sessions")
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                v["total"].as_u64()
            ),
            (expected, Some(total)),
            "{query}"
        );
    }
    let empty = json!({"sessions": [], "next": null, "total": 0});
    for query in [
        "prefix=zz",
        "tool=nope",
        &format!("tool={}", "x".repeat(257)),
    ] {
        assert_eq!(
            app.get_json(&format!("/api/sessions?{query}")).await,
            (StatusCode::OK, empty.clone()),
            "{query}"
        );
    }
}

#[tokio::test]
async fn sessions_list_refuses_malformed_parameters_naming_them() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    let bad = |field: &str, message: &str| json!({"error": {"code": "invalid_parameter", "message": message, "field": field}});
    let limit = bad("limit", "limit is a whole number from 1 to 200");
    let after = json!({"error": {"code": "invalid_cursor", "message": "after is the opaque cursor a previous answer's next gave for this listing", "field": "after"}});
    for (query, body) in [
        ("limit=0", &limit),
        ("limit=201", &limit),
        ("limit=-1", &limit),
        (
            "has_unknown=yes",
            &bad("has_unknown", "has_unknown is true or false"),
        ),
        (
            "has_unknown=TRUE",
            &bad("has_unknown", "has_unknown is true or false"),
        ),
        (
            "has_unknown=",
            &bad("has_unknown", "has_unknown is true or false"),
        ),
        ("tool=", &bad("tool", "tool: must not be empty")),
        ("after=", &after),
        ("after=not%20a%20cursor", &after),
        (&*format!("after={}", "A".repeat(2000)), &after),
        // A queue cursor (`{"l":"unknowns","at":1,"seq":2}`) is not a sessions cursor.
        ("after=eyJsIjoidW5rbm93bnMiLCJhdCI6MSwic2VxIjoyfQ", &after),
    ] {
        assert_eq!(
            app.get_json(&format!("/api/sessions?{query}")).await,
            (StatusCode::BAD_REQUEST, body.clone()),
            "{query}"
        );
    }
    // Unknown parameters are ignored, as before.
    let (s, v) = app.get_json("/api/sessions?colour=blue").await;
    assert_eq!((s, v["total"].clone()), (StatusCode::OK, json!(1)));
}

/// Issue 26: `active_after` / `active_before` (RFC 3339) keep the sessions whose last activity is in
/// `[after, before)`, with the other filters and paging (docs/api.md "Sessions"); a bad time is 400 naming
/// its field.
#[tokio::test]
async fn sessions_list_filters_by_last_activity_in_a_half_open_range() {
    let app = spawn().await;
    let pause = || tokio::time::sleep(std::time::Duration::from_millis(5));
    app.settled("a", "t", "m", "completed").await;
    pause().await;
    app.settled("b", "t", "m", "outcome_unknown").await;
    pause().await;
    app.settled("c", "t", "m", "failed").await;
    let (_, v) = app.get_json("/api/sessions").await;
    assert_eq!(ids(&v, "sessions"), ["c", "b", "a"]);
    let at = |i: usize| {
        v["sessions"][i]["last_activity"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (c, b, a) = (at(0), at(1), at(2));
    for (query, expected, total) in [
        (format!("active_after={b}"), vec!["c", "b"], 2),
        (format!("active_before={b}"), vec!["a"], 1),
        (
            format!("active_after={a}&active_before={c}"),
            vec!["b", "a"],
            2,
        ),
        (
            format!("active_after={a}&active_before={c}&limit=1"),
            vec!["b"],
            2,
        ),
        (
            format!("active_after={a}&active_before={c}&has_unknown=true"),
            vec!["b"],
            1,
        ),
        (format!("active_after={b}&active_before={b}"), vec![], 0),
        (format!("active_after={c}&active_before={a}"), vec![], 0),
        ("active_after=2999-01-01T00:00:00Z".to_owned(), vec![], 0),
        ("active_before=2000-01-01T00:00:00Z".to_owned(), vec![], 0),
        // An offset other than Z (`+` sent as %2B) is the same instant.
        (
            "active_after=2000-01-01T01:00:00%2B01:00&active_before=2999-01-01T00:00:00-00:30"
                .to_owned(),
            vec!["c", "b", "a"],
            3,
        ),
    ] {
        let (s, v) = app.get_json(&format!("/api/sessions?{query}")).await;
        assert_eq!(s, StatusCode::OK, "{query}: {v}");
        assert_eq!(
            (
                ids(&v, "sessions")
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                v["total"].as_u64()
            ),
            (expected, Some(total)),
            "{query}"
        );
    }
    // The next page keeps the range.
    let (_, page) = app
        .get_json(&format!(
            "/api/sessions?active_after={a}&active_before={c}&limit=1"
        ))
        .await;
    let next = page["next"].as_str().unwrap().to_owned();
    let (_, v) = app
        .get_json(&format!(
            "/api/sessions?active_after={a}&active_before={c}&limit=1&after={next}"
        ))
        .await;
    assert_eq!(
        (ids(&v, "sessions"), v["next"].clone()),
        (vec!["a".to_owned()], json!(null))
    );
    for field in ["active_after", "active_before"] {
        let body = json!({"error": {"code": "invalid_parameter",
            "message": format!("{field} is an RFC 3339 time, e.g. 2026-11-29T20:00:00Z"), "field": field}});
        for value in [
            "",
            "yesterday",
            "2026-11-29",
            "2026-11-29T20:00Z",
            "2026-11-29T20:00:00",
            "1796000000000",
        ] {
            let query = format!("{field}={value}");
            assert_eq!(
                app.get_json(&format!("/api/sessions?{query}")).await,
                (StatusCode::BAD_REQUEST, body.clone()),
                "{query}"
            );
        }
    }
}

#[tokio::test]
async fn the_sessions_list_answers_50_by_default_and_never_every_session() {
    let app = spawn().await;
    let ops: Vec<Value> = (0..51)
        .map(|i| json!({"op": "approve", "session_key": format!("s{i:02}"), "logical_turn_id": "t", "mutation_id": "m", "tool": "x"}))
        .collect();
    let (s, _) = app
        .host(
            reqwest::Method::POST,
            "/api/host/batch",
            json!({"operations": ops}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (_, v) = app.get_json("/api/sessions").await;
    // One commit: the same last write for all, so by key.
    let expected: Vec<String> = (0..50).map(|i| format!("s{i:02}")).collect();
    assert_eq!(ids(&v, "sessions"), expected);
    assert_eq!(v["total"], 51);
    let next = v["next"].as_str().expect("a next page").to_owned();
    let (_, v) = app.get_json(&format!("/api/sessions?after={next}")).await;
    assert_eq!(ids(&v, "sessions"), ["s50"]);
    assert_eq!(
        (v["total"].clone(), v["next"].clone()),
        (json!(51), json!(null))
    );
    let (_, v) = app.get_json("/api/sessions?limit=200").await;
    assert_eq!(
        (ids(&v, "sessions").len(), v["next"].clone()),
        (51, json!(null))
    );
}

/// By deadline a cursor's key is a deadline in ms: a forged one holding anything else is `400`
/// `invalid_cursor` on both backends (Postgres answered 500 when it cast it, found by the fresh tester).
#[tokio::test]
async fn a_forged_deadline_cursor_is_400_invalid_cursor() {
    use base64::Engine as _;
    let app = crate::helpers::spawn().await;
    // In the order the server writes a cursor's fields (a cursor is read only in that form).
    let cursor = |key: Option<&str>| {
        let key = key.map_or(String::new(), |k| format!(r#","key":"{k}""#));
        let c = format!(r#"{{"l":"unknowns","at":1,"seq":3{key},"by":"deadline.asc"}}"#);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c)
    };
    for key in [
        Some("abc"),
        Some("1.5"),
        Some("99999999999999999999"),
        Some(""),
        None,
    ] {
        let (s, v) = app
            .get_json(&format!(
                "/api/unknowns?sort=deadline&order=asc&after={}",
                cursor(key)
            ))
            .await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_cursor")),
            "{key:?}: {v}"
        );
    }
    let (s, v) = app
        .get_json(&format!(
            "/api/unknowns?sort=deadline&order=asc&after={}",
            cursor(Some("1800000000000"))
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
}
