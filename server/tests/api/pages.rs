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
        "/sessions/s/operations/nope",
        "/sessions/nobody/operations/m",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
    assert_eq!(
        app.get("/sessions/s/turns/t").await.status(),
        StatusCode::OK
    );
    assert_eq!(app.get("/operations/m").await.status(), StatusCode::OK);
    assert_eq!(
        app.get("/sessions/s/operations/m").await.status(),
        StatusCode::OK
    );
}

/// A route parameter in the page's `<title>` is text, never markup (leptos_meta writes the server-side
/// title unescaped; a tester's link redirected the browser with an injected `<meta http-equiv=refresh>`).
#[tokio::test]
async fn ids_in_the_title_are_escaped() {
    let app = spawn().await;
    let hostile = "x%3C%2Ftitle%3E%3Cmeta%20http-equiv%3Drefresh%20content%3D0%3E%26";
    for path in [
        format!("/sessions/s/operations/{hostile}"),
        format!("/operations/{hostile}"),
        format!("/sessions/{hostile}"),
        format!("/sessions/s/turns/{hostile}"),
        format!("/find?q={hostile}"),
    ] {
        let (_, html) = page(&app, &path).await;
        let title = html
            .split_once("<title>")
            .and_then(|(_, rest)| rest.split_once("</title>"))
            .map(|(t, _)| t.to_owned())
            .unwrap_or_default();
        assert!(
            title.contains("x&lt;/title&gt;&lt;meta http-equiv=refresh content=0&gt;&amp;"),
            "{path}: {title}"
        );
        assert!(!html.contains("<meta http-equiv"), "{path}");
    }
}

/// The page, its status and its HTML.
async fn page(app: &crate::helpers::TestApp, path: &str) -> (StatusCode, String) {
    let r = app.get(path).await;
    (r.status(), r.text().await.unwrap())
}

#[tokio::test]
async fn pages_for_ids_that_could_never_be_stored_answer_the_404_page() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    let no_session = "No session with this id.";
    let no_turn = "This session has no logical turn with this id.";
    let no_operation = "No published outcome has this operation id.";
    for bad in crate::history::never_stored() {
        for (path, says) in [
            (format!("/sessions/{bad}"), no_session),
            (format!("/sessions/{bad}/turns/t"), no_session),
            (format!("/sessions/{bad}/turns/{bad}"), no_session),
            (format!("/sessions/s/turns/{bad}"), no_turn),
            (format!("/operations/{bad}"), no_operation),
        ] {
            let (status, html) = page(&app, &path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            assert!(html.contains(says), "{path}: {html}");
            assert!(!html.contains("The server answered"), "{path}: {html}");
        }
        // Find: the same page as for an id that matches nothing.
        let (status, html) = page(&app, &format!("/find?q={bad}")).await;
        assert_eq!(status, StatusCode::OK, "find {bad}");
        assert!(
            html.contains("No session and no published operation has the id"),
            "{html}"
        );
        assert!(!html.contains("error-panel"), "{html}");
    }
    // Ordinary missing ids: the same 404 pages.
    for (path, says) in [
        ("/sessions/nobody", no_session),
        ("/sessions/nobody/turns/t", no_session),
        ("/sessions/s/turns/nope", no_turn),
        ("/operations/nope", no_operation),
    ] {
        let (status, html) = page(&app, path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(html.contains(says), "{path}: {html}");
    }
    let (status, html) = page(&app, "/find?q=nobody").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("No session and no published operation has the id"));
    // And the ones that exist still render.
    for path in ["/sessions/s", "/sessions/s/turns/t", "/operations/m"] {
        assert_eq!(page(&app, path).await.0, StatusCode::OK, "{path}");
    }
}
