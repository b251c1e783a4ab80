//! `GET /api/mutation-outcomes` and the dashboard reads.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn, spawn_with_ttl};

#[tokio::test]
async fn history_lists_outcomes_oldest_turn_first_and_omits_unpublished_approvals() {
    let app = spawn().await;
    app.settled("s", "t1", "a", "completed").await;
    app.approve("s", "t2", "never-started").await;
    app.settled("s", "t2", "b", "failed").await;
    app.settled("s", "t1", "c", "completed").await;
    let (status, v) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<_> = v["mutation_outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["mutation_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "c", "b"]);
    assert_eq!(
        v["mutation_outcomes"][0],
        json!({"schema": "mutation_outcome/v1", "logical_turn_id": "t1", "mutation_id": "a",
               "tool": "mcp__dashboards__create", "status": "completed", "resource_id": null, "url": null, "title": null})
    );
}

#[tokio::test]
async fn history_errors_are_400_without_a_session_and_404_for_an_unknown_one() {
    let app = spawn().await;
    let (s, v) = app.get_json("/api/mutation-outcomes").await;
    assert_eq!(
        (s, v["error"]["field"].clone()),
        (StatusCode::BAD_REQUEST, json!("session_id"))
    );
    let (s, v) = app
        .get_json("/api/mutation-outcomes?session_id=nobody")
        .await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!("session_not_found"))
    );
}

#[tokio::test]
async fn an_expired_session_is_hidden_and_refuses_writes() {
    let app = spawn_with_ttl(1).await;
    app.settled("s", "t", "m", "completed").await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (s, v) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!("session_expired"))
    );
    let (s, _, _) = app.replay("session_id=s&logical_turn_id=t", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, v) = app.approve("s", "t", "m2").await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!("session_expired"))
    );
    assert_eq!(app.get_json("/api/sessions").await.1["sessions"], json!([]));
}

#[tokio::test]
async fn dashboard_reads_give_turns_entries_and_the_unknowns_queue() {
    let app = spawn().await;
    app.settled("s", "t1", "a", "completed").await;
    app.start("s", "t2", "b").await;
    app.settled("s", "t2", "c", "outcome_unknown").await;
    let (_, v) = app.get_json("/api/sessions/s/turns").await;
    assert_eq!(v["turns"][0]["logical_turn_id"], "t1");
    assert_eq!(v["turns"][0]["latest_revision"], 2);
    assert_eq!(
        v["turns"][1]["counts"],
        json!({"completed": 0, "failed": 0, "not_executed": 0, "outcome_unknown": 2, "in_flight": 1})
    );
    let (_, v) = app.get_json("/api/sessions/s/turns/t2/entries").await;
    assert_eq!(v["latest_revision"], 3);
    assert_eq!(v["entries"][0]["ledger_status"], "execution_started");
    assert_eq!(v["entries"][0]["settled_at"], json!(null));
    assert_eq!(v["entries"][1]["ledger_status"], "outcome_unknown");
    let (_, v) = app.get_json("/api/unknowns").await;
    let ids: Vec<_> = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["entry"]["outcome"]["mutation_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["b", "c"]);
    assert_eq!(
        app.get_json("/api/unknowns?limit=0").await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        app.get_json("/api/sessions/nobody/turns").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get_json("/healthz").await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
}

/// Identifiers no write could have stored (the identifier rule: at most 256 bytes, no control
/// characters, UTF-8), percent-encoded for a path or a query: NUL, another C0 control, line feed, DEL, NEL
/// (a C1 control), bytes that are not UTF-8, 257 bytes.
pub fn never_stored() -> Vec<String> {
    let mut ids: Vec<String> = [
        "a%00b", "a%01b", "a%0Ab", "a%7Fb", "a%C2%85b", "%FF", "a%C0%80b",
    ]
    .map(String::from)
    .into();
    ids.push("x".repeat(257));
    ids
}

#[tokio::test]
async fn reads_naming_an_identifier_that_could_never_be_stored_answer_404() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    let session_not_found = json!({"error": {"code": "session_not_found", "message": "unknown session", "field": "session_id"}});
    let turn_not_found =
        json!({"error": {"code": "turn_not_found", "message": "unknown logical turn"}});
    for bad in never_stored() {
        for path in [
            format!("/api/mutation-outcomes?session_id={bad}"),
            format!("/api/sessions/{bad}/turns"),
            format!("/api/sessions/{bad}/turns/t/entries"),
            format!("/api/sessions/{bad}/turns/{bad}/entries"),
            format!("/api/mutation-events?session_id={bad}&logical_turn_id=t"),
            format!("/api/mutation-events?session_id={bad}&logical_turn_id={bad}&after=1"),
            format!("/api/run-events?session_id={bad}"),
        ] {
            assert_eq!(
                app.get_json(&path).await,
                (StatusCode::NOT_FOUND, session_not_found.clone()),
                "{path}"
            );
        }
        for path in [
            format!("/api/sessions/s/turns/{bad}/entries"),
            format!("/api/mutation-events?session_id=s&logical_turn_id={bad}"),
            format!("/api/mutation-events?session_id=s&logical_turn_id={bad}&after=99"),
        ] {
            assert_eq!(
                app.get_json(&path).await,
                (StatusCode::NOT_FOUND, turn_not_found.clone()),
                "{path}"
            );
        }
        // An unknown session's 404 comes before the turn's, as for well-formed ids.
        assert_eq!(
            app.get_json(&format!("/api/sessions/nobody/turns/{bad}/entries"))
                .await,
            (StatusCode::NOT_FOUND, session_not_found.clone())
        );
        // The support look-up: an unknown operation id matches nothing.
        assert_eq!(
            app.get_json(&format!("/api/operations/{bad}")).await,
            (StatusCode::OK, json!({"matches": []})),
            "{bad}"
        );
    }
    // 256 bytes is a valid identifier: simply unknown, the same answers.
    let longest = "y".repeat(256);
    assert_eq!(
        app.get_json(&format!("/api/sessions/{longest}/turns"))
            .await,
        (StatusCode::NOT_FOUND, session_not_found.clone())
    );
    // The 400s still come first: an invalid cursor before any 404.
    assert_eq!(
        app.get_json("/api/mutation-events?session_id=a%00b&logical_turn_id=a%00b&after=x")
            .await,
        (
            StatusCode::BAD_REQUEST,
            json!({"error": {"code": "invalid_cursor", "message": "a cursor is one or more ASCII digits with value at most 9223372036854775807", "field": "after"}})
        )
    );
}

#[tokio::test]
async fn an_identifier_that_could_never_be_stored_in_an_expired_session_is_session_expired() {
    let app = spawn_with_ttl(1).await;
    app.settled("s", "t", "m", "completed").await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let expired = json!({"error": {"code": "session_expired", "message": "the session has expired; its history is no longer available"}});
    for path in [
        "/api/sessions/s/turns/a%00b/entries",
        "/api/sessions/s/turns/%FF/entries",
        "/api/mutation-events?session_id=s&logical_turn_id=a%00b",
    ] {
        assert_eq!(
            app.get_json(path).await,
            (StatusCode::NOT_FOUND, expired.clone()),
            "{path}"
        );
    }
}

#[tokio::test]
async fn missing_and_empty_read_parameters_stay_400() {
    let app = spawn().await;
    for (path, field) in [
        ("/api/mutation-outcomes", "session_id"),
        ("/api/run-events", "session_id"),
        ("/api/mutation-events?logical_turn_id=t", "session_id"),
        ("/api/mutation-events?session_id=a%00b", "logical_turn_id"),
    ] {
        assert_eq!(
            app.get_json(path).await,
            (
                StatusCode::BAD_REQUEST,
                json!({"error": {"code": "missing_parameter", "message": format!("the {field} parameter is required"), "field": field}})
            ),
            "{path}"
        );
    }
    for (path, field) in [
        ("/api/mutation-outcomes?session_id=", "session_id"),
        ("/api/run-events?session_id=", "session_id"),
        (
            "/api/mutation-events?session_id=&logical_turn_id=t",
            "session_id",
        ),
        (
            "/api/mutation-events?session_id=s&logical_turn_id=",
            "logical_turn_id",
        ),
    ] {
        assert_eq!(
            app.get_json(path).await,
            (
                StatusCode::BAD_REQUEST,
                json!({"error": {"code": "invalid_parameter", "message": format!("{field}: must not be empty"), "field": field}})
            ),
            "{path}"
        );
    }
}

/// `GET /api/sessions/{key}/mutations/{id}/history`: an unknown outcome reconciled shows every change with
/// its kind, actor, revision, attempt, status after, evidence and the record as of that revision; the
/// session's 404 comes first, then the mutation's.
#[tokio::test]
async fn the_history_of_an_operation_shows_it_was_unknown_and_how_it_was_reconciled() {
    let app = spawn().await;
    app.start("s", "t1", "pay").await;
    let (status, _) = app
        .step(
            "s",
            "pay",
            "settlement",
            json!({"attempt_id": "a1", "status": "outcome_unknown", "reason": "execution_timeout"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // A refused change leaves no row.
    let (status, _) = app
        .step(
            "s",
            "pay",
            "settlement",
            json!({"attempt_id": "a1", "status": "completed"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let evidence = json!({"source": "payments-api", "reference": "refund re_123", "observed_at": "2026-11-29T10:00:00Z"});
    let (status, _) = app
        .step(
            "s",
            "pay",
            "reconciliation",
            json!({"attempt_id": "a1", "completed": true, "evidence": evidence}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let (status, h) = app.get_json("/api/sessions/s/mutations/pay/history").await;
    assert_eq!(status, StatusCode::OK, "{h}");
    assert_eq!(
        (
            &h["session_key"],
            &h["logical_turn_id"],
            &h["mutation_id"],
            &h["commissioned_after"],
            &h["commissioned"]
        ),
        (
            &json!("s"),
            &json!("t1"),
            &json!("pay"),
            &json!(null),
            &json!([])
        )
    );
    let changes = h["changes"].as_array().unwrap();
    let summary: Vec<(String, Value, String, String)> = changes
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["revision"].clone(),
                c["actor"].as_str().unwrap().to_owned(),
                c["ledger_status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "approval".into(),
                json!(null),
                "host".into(),
                "approved".into()
            ),
            (
                "intent".into(),
                json!(1),
                "host".into(),
                "execution_started".into()
            ),
            (
                "settlement".into(),
                json!(2),
                "host".into(),
                "outcome_unknown".into()
            ),
            (
                "reconciliation".into(),
                json!(3),
                "host".into(),
                "completed".into()
            ),
        ]
    );
    assert_eq!(changes[0]["outcome"], json!(null));
    assert_eq!(changes[1]["attempt_id"], "a1");
    assert_eq!(changes[2]["reason"], "execution_timeout");
    assert_eq!(changes[2]["outcome"]["status"], "outcome_unknown");
    assert_eq!(changes[3]["evidence"], evidence);
    assert_eq!(changes[3]["outcome"]["status"], "completed");
    assert_eq!(changes[3]["outcome"]["mutation_id"], "pay");

    for (path, code) in [
        (
            "/api/sessions/nobody/mutations/pay/history",
            "session_not_found",
        ),
        (
            "/api/sessions/s/mutations/nothing/history",
            "mutation_not_found",
        ),
        (
            "/api/sessions/s/mutations/%FF/history",
            "mutation_not_found",
        ),
        (
            "/api/sessions/%FF/mutations/pay/history",
            "session_not_found",
        ),
    ] {
        let (status, body) = app.get_json(path).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some(code)),
            "{path}"
        );
    }
}
