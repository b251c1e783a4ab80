//! `GET /api/run-events`: the live stream's exact bytes; in-flight intent sends only its `turn_changed`
//! hint; each commit sends its outcomes, then one hint per turn it changed; a refusal sends nothing.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{record, spawn};

/// Reads the stream until it holds `events` whole events (5 s at most); returns exactly what arrived.
async fn events(
    body: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    events: usize,
) -> String {
    let mut received = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while received.matches("\n\n").count() < events {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .unwrap_or_else(|_| panic!("events arrive; got {received:?}"))
            .unwrap()
            .unwrap();
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    received
}

fn outcome(revision: i64, record: &str) -> String {
    format!("event: mutation_outcome\ndata: {{\"mutation_revision\":{revision},\"outcome\":{record}}}\n\n")
}

fn hint(turn: &str, latest: i64) -> String {
    format!("event: turn_changed\ndata: {{\"logical_turn_id\":\"{turn}\",\"latest_revision\":{latest}}}\n\n")
}

#[tokio::test]
async fn settled_changes_are_emitted_live_in_revision_order_and_every_change_hints_its_turn() {
    let app = spawn().await;
    app.approve("s", "t", "m").await;
    let r = app.get("/api/run-events?session_id=s").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let mut body = r.bytes_stream();
    app.step("s", "m", "intent", json!({"attempt_id": "a1"}))
        .await; // revision 1: in flight, only the hint
    assert_eq!(events(&mut body, 1).await, hint("t", 1));
    app.step(
        "s",
        "m",
        "settlement",
        json!({"attempt_id": "a1", "status": "completed"}),
    )
    .await; // 2: the outcome, then the hint
    assert_eq!(
        events(&mut body, 2).await,
        format!(
            "{}{}",
            outcome(2, &record("t", "m", "completed")),
            hint("t", 2)
        )
    );
    app.step("s", "m", "metadata", json!({"title": "Service overview"}))
        .await; // 3
    let with_title =
        record("t", "m", "completed").replace(r#""title":null"#, r#""title":"Service overview""#);
    assert_eq!(
        events(&mut body, 2).await,
        format!("{}{}", outcome(3, &with_title), hint("t", 3))
    );
}

#[tokio::test]
async fn approve_and_intent_hint_the_turn_with_no_outcome_and_a_refusal_sends_nothing() {
    let app = spawn().await;
    app.approve("s", "t", "m0").await; // the session exists before subscribing
    let r = app.get("/api/run-events?session_id=s").await;
    let mut body = r.bytes_stream();
    // An approve takes no revision: nothing. The intent: the hint alone.
    app.start("s", "t", "m").await;
    assert_eq!(events(&mut body, 1).await, hint("t", 1));
    // Refused (a redelivered intent, an unknown attempt's settlement), an identical attach of nothing
    // new: nothing is sent. The next change's events are the next bytes on the stream.
    let (s, _) = app
        .step("s", "m", "intent", json!({"attempt_id": "a1"}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, _) = app
        .step(
            "s",
            "m",
            "settlement",
            json!({"attempt_id": "other", "status": "failed"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, _) = app.approve("s", "t", "m").await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, _) = app
        .step("s", "m", "cancellation", json!({"attempt_id": "a1"}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        events(&mut body, 2).await,
        format!(
            "{}{}",
            outcome(2, &record("t", "m", "not_executed")),
            hint("t", 2)
        )
    );
    // A fresh attempt is in flight again: the hint alone.
    let (s, _) = app
        .step("s", "m", "attempts", json!({"attempt_id": "a2"}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(events(&mut body, 1).await, hint("t", 3));
}

#[tokio::test]
async fn a_batch_sends_its_outcomes_then_one_hint_per_turn_with_its_latest_revision() {
    let app = spawn().await;
    app.approve("s", "t1", "m0").await;
    let r = app.get("/api/run-events?session_id=s").await;
    let mut body = r.bytes_stream();
    let ops = json!({"operations": [
        {"op": "approve", "session_key": "s", "logical_turn_id": "t1", "mutation_id": "m1", "tool": "mcp__dashboards__create"},
        {"op": "intent", "session_key": "s", "mutation_id": "m1", "attempt_id": "a"},
        {"op": "approve", "session_key": "s", "logical_turn_id": "t2", "mutation_id": "m2", "tool": "mcp__dashboards__create"},
        {"op": "intent", "session_key": "s", "mutation_id": "m2", "attempt_id": "a"},
        {"op": "settle", "session_key": "s", "mutation_id": "m1", "attempt_id": "a", "status": "failed"},
        {"op": "intent", "session_key": "s", "mutation_id": "m1", "attempt_id": "a"},
        {"op": "intent", "session_key": "other", "mutation_id": "m9", "attempt_id": "a"}
    ]});
    let (s, v) = app
        .host(reqwest::Method::POST, "/api/host/batch", ops)
        .await;
    assert_eq!(s, StatusCode::OK);
    let statuses: Vec<_> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [201, 200, 201, 200, 200, 409, 404]);
    // One commit: its outcome, then t1 (first changed) at 2, then t2 at 1.
    assert_eq!(
        events(&mut body, 3).await,
        format!(
            "{}{}{}",
            outcome(2, &record("t1", "m1", "failed")),
            hint("t1", 2),
            hint("t2", 1)
        )
    );
}

#[tokio::test]
async fn run_events_need_a_known_session() {
    let app = spawn().await;
    assert_eq!(
        app.get("/api/run-events").await.status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        app.get("/api/run-events?session_id=nobody").await.status(),
        StatusCode::NOT_FOUND
    );
}
