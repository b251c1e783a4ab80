//! `GET /api/mutation-outcomes` and the dashboard reads.

use reqwest::StatusCode;
use serde_json::json;

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
