//! `GET /api/run-events`: the live stream's exact bytes; in-flight intent is not emitted.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{record, spawn};

#[tokio::test]
async fn settled_changes_are_emitted_live_in_revision_order_and_intent_is_not() {
    let app = spawn().await;
    app.approve("s", "t", "m").await;
    let r = app.get("/api/run-events?session_id=s").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let mut body = r.bytes_stream();
    app.step("s", "m", "intent", json!({"attempt_id": "a1"}))
        .await; // revision 1: not emitted
    app.step(
        "s",
        "m",
        "settlement",
        json!({"attempt_id": "a1", "status": "completed"}),
    )
    .await; // 2
    app.step("s", "m", "metadata", json!({"title": "Service overview"}))
        .await; // 3
    let mut received = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while received.matches("\n\n").count() < 2 {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .expect("events arrive")
            .unwrap()
            .unwrap();
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let with_title =
        record("t", "m", "completed").replace(r#""title":null"#, r#""title":"Service overview""#);
    assert_eq!(
        received,
        format!(
            "event: mutation_outcome\ndata: {{\"mutation_revision\":2,\"outcome\":{}}}\n\nevent: mutation_outcome\ndata: {{\"mutation_revision\":3,\"outcome\":{}}}\n\n",
            record("t", "m", "completed"),
            with_title
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
