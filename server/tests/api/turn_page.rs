//! The turn page's reads (docs/api.md "A turn's place", "A turn's timeline"): a turn's number and its
//! neighbours; its page titled by number with previous / next links.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::spawn;

#[tokio::test]
async fn a_turn_s_place_names_its_number_and_its_neighbours() {
    let app = spawn().await;
    app.settled("s-place", "turn-1", "op-1", "completed").await;
    app.settled("s-place", "turn-b7f", "op-2", "failed").await;
    app.settled("s-place", "turn-3", "op-3", "completed").await;

    let (s, first) = app.get_json("/api/sessions/s-place/turns/turn-1").await;
    assert_eq!(s, StatusCode::OK, "{first}");
    let at = first["first_recorded_at"].as_str().unwrap().to_owned();
    assert!(at.ends_with('Z') && at.len() >= 20, "{at}");
    assert_eq!(
        first,
        json!({"session_key": "s-place", "logical_turn_id": "turn-1", "number": 1,
            "first_recorded_at": at, "total": 3, "previous": null,
            "next": {"logical_turn_id": "turn-b7f", "number": 2}})
    );
    let (s, middle) = app.get_json("/api/sessions/s-place/turns/turn-b7f").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(middle["number"], 2);
    assert_eq!(middle["total"], 3);
    assert_eq!(
        middle["previous"],
        json!({"logical_turn_id": "turn-1", "number": 1})
    );
    assert_eq!(
        middle["next"],
        json!({"logical_turn_id": "turn-3", "number": 3})
    );
    let (_, last) = app.get_json("/api/sessions/s-place/turns/turn-3").await;
    assert_eq!(last["number"], 3);
    assert_eq!(last["next"], json!(null));
    assert_eq!(
        last["previous"],
        json!({"logical_turn_id": "turn-b7f", "number": 2})
    );

    // Unknown turn, unknown session: the entries API's 404s.
    let (s, body) = app.get_json("/api/sessions/s-place/turns/turn-9").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        json!({"error": {"code": "turn_not_found", "message": "unknown logical turn"}})
    );
    let (s, body) = app.get_json("/api/sessions/nobody/turns/turn-1").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "session_not_found");
}

#[tokio::test]
async fn a_turn_page_is_titled_by_its_number_with_previous_and_next_links() {
    let app = spawn().await;
    app.settled("s-nav", "turn-1", "op-1", "completed").await;
    app.settled("s-nav", "turn-b7f", "op-2", "completed").await;
    app.settled("s-nav", "3", "op-3", "completed").await;

    let page = app
        .get("/sessions/s-nav/turns/turn-1")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("<title>Turn 1 · Outcome ledger</title>"),
        "{page}"
    );
    assert!(!page.contains("class=\"prev-turn"), "{page}");
    assert!(
        page.contains(
            r#"<a rel="external" href="/sessions/s-nav/turns/turn-b7f" class="next-turn"#
        ),
        "{page}"
    );
    assert!(page.contains(">1 of 3<"), "{page}");

    // An id that says more than its number is shown beside it.
    let page = app
        .get("/sessions/s-nav/turns/turn-b7f")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("<title>Turn 2 (turn-b7f) · Outcome ledger</title>"),
        "{page}"
    );
    assert!(
        page.contains(r#"<a rel="external" href="/sessions/s-nav/turns/turn-1" class="prev-turn"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<a rel="external" href="/sessions/s-nav/turns/3" class="next-turn"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<bdi class="font-mono">turn-b7f"#),
        "{page}"
    );
    assert!(page.contains("← Turn 1"), "{page}");
    assert!(page.contains("Turn 3 →"), "{page}");

    let page = app
        .get("/sessions/s-nav/turns/3")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("<title>Turn 3 · Outcome ledger</title>"),
        "{page}"
    );
    assert!(!page.contains("class=\"next-turn"), "{page}");
    assert!(page.contains("← Turn 2"), "{page}");
}

/// The timeline picture of a turn: an SVG with a bar per write (the in-flight one growing), its words
/// in a title and a description, its own closed policy that lets its style apply.
#[tokio::test]
async fn a_turn_s_timeline_is_an_svg_with_a_bar_per_write() {
    let app = spawn().await;
    app.settled("s-tl", "turn-1", "op-done", "completed").await;
    app.settled("s-tl", "turn-1", "op-broke", "failed").await;
    app.start("s-tl", "turn-1", "op-flying").await;

    let r = app
        .get("/api/sessions/s-tl/turns/turn-1/timeline.svg?at=5")
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let h = r.headers().clone();
    assert_eq!(h["content-type"], "image/svg+xml; charset=utf-8");
    assert_eq!(
        h["content-security-policy"],
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    );
    assert_eq!(h["cache-control"], "no-store");
    assert_eq!(h["x-content-type-options"], "nosniff");
    let svg = r.text().await.unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"90\" viewBox=\"0 0 640 90\" role=\"img\" aria-labelledby=\"t d\"><title id=\"t\">Turn 1: 3 writes, from intent to settlement, over "), "{svg}");
    assert_eq!(svg.matches("<rect class=\"bar ").count(), 3, "{svg}");
    assert_eq!(svg.matches("data-status=\"completed\"").count(), 1, "{svg}");
    assert_eq!(svg.matches("data-status=\"failed\"").count(), 1, "{svg}");
    assert_eq!(svg.matches("data-status=\"in flight\"").count(), 1, "{svg}");
    assert_eq!(
        svg.matches("<animate attributeName=\"width\"").count(),
        1,
        "{svg}"
    );
    assert!(
        svg.contains("<desc id=\"d\">dashboards · create: completed, started at +0 ms, took "),
        "{svg}"
    );
    assert!(
        // A write without a title is named by its tool in words, as everywhere a viewer reads.
        svg.contains("dashboards · create: in flight since +"),
        "{svg}"
    );

    // It is the turn's: another turn, another session, nothing.
    let (s, body) = app
        .get_json("/api/sessions/s-tl/turns/turn-9/timeline.svg")
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "turn_not_found");
    let (s, body) = app
        .get_json("/api/sessions/nobody/turns/turn-1/timeline.svg")
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "session_not_found");
}

/// Who may read a turn's place and picture: who may read its entries. Anonymous in signed-in mode: 401;
/// a viewer of another session: exactly the 404 of a session that does not exist; its own viewer and
/// staff: 200.
#[tokio::test]
async fn a_turn_s_place_and_timeline_are_read_as_its_entries_are() {
    use crate::helpers::access::{bearer, cookie, get};
    use crate::helpers::server;
    use server::serve::AccessArg;

    let app = server(AccessArg::SignedIn).await;
    app.settled("alpha", "t1", "op-a", "completed").await;
    app.settled("bravo", "turn-bravo-secret", "op-b", "completed")
        .await;
    let alpha_viewer = vec![cookie("outcomes_viewer", &app.viewer_token("alpha").await)];
    let staff = vec![bearer(&app.staff_token().await)];
    for (of_bravo, of_nobody, of_alpha) in [
        (
            "/api/sessions/bravo/turns/turn-bravo-secret",
            "/api/sessions/nobody/turns/turn-bravo-secret",
            "/api/sessions/alpha/turns/t1",
        ),
        (
            "/api/sessions/bravo/turns/turn-bravo-secret/timeline.svg",
            "/api/sessions/nobody/turns/turn-bravo-secret/timeline.svg",
            "/api/sessions/alpha/turns/t1/timeline.svg",
        ),
    ] {
        let r = get(&app, of_bravo, &[]).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{of_bravo}");
        assert_eq!(r.json()["error"]["code"], "unauthorized", "{of_bravo}");
        let b = get(&app, of_bravo, &alpha_viewer).await;
        let n = get(&app, of_nobody, &alpha_viewer).await;
        assert_eq!(b.status, StatusCode::NOT_FOUND, "{of_bravo}: {}", b.body);
        assert_eq!(b.body, n.body, "{of_bravo}");
        assert_eq!(
            b.json(),
            json!({"error": {"code": "session_not_found", "message": "unknown session", "field": "session_id"}}),
            "{of_bravo}"
        );
        assert!(!b.body.contains("secret"), "{of_bravo}: {}", b.body);
        let s = get(&app, of_bravo, &staff).await;
        assert_eq!(s.status, StatusCode::OK, "{of_bravo}");
        assert!(
            s.body.contains("op-b") || s.body.contains("turn-bravo-secret"),
            "{}",
            s.body
        );
        let own = get(&app, of_alpha, &alpha_viewer).await;
        assert_eq!(own.status, StatusCode::OK, "{of_alpha}: {}", own.body);
        let anon = get(&app, of_alpha, &[]).await;
        assert_eq!(anon.status, StatusCode::UNAUTHORIZED, "{of_alpha}");
    }
}
