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
