//! Server-rendered pages read without JavaScript.

use reqwest::StatusCode;

use crate::helpers::spawn;

#[tokio::test]
async fn the_turn_page_is_rendered_on_the_server_with_the_unknown_explanation() {
    let app = spawn().await;
    app.settled("s 1", "t/1", "op-419", "outcome_unknown").await;
    let r = app.get("/sessions/s%201/turns/t%2F1").await;
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.unwrap();
    assert!(html.contains("data-mutation-id=\"op-419\""), "{html}");
    assert!(html.contains("The result of this write is not established"));
    assert!(html.contains("automatic resend is paused"));
}

#[tokio::test]
async fn a_title_holding_markup_is_escaped_text() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    app.step(
        "s",
        "m",
        "metadata",
        serde_json::json!({"title": "<script>alert(1)</script>", "url": "javascript:alert(1)"}),
    )
    .await;
    let html = app.get("/sessions/s/turns/t").await.text().await.unwrap();
    assert!(!html.contains("<script>alert(1)"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("javascript:"));
}

#[tokio::test]
async fn pages_for_missing_things_answer_404() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    for path in [
        "/sessions/nobody",
        "/sessions/s/turns/nope",
        "/operations/nope",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
    assert_eq!(
        app.get("/sessions/s/turns/t").await.status(),
        StatusCode::OK
    );
    assert_eq!(app.get("/operations/m").await.status(), StatusCode::OK);
}
