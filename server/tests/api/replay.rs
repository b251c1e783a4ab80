//! `GET /api/mutation-events`: exact bytes, headers, cursors and the error order 400 → 404 → 409.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{record, spawn};

#[tokio::test]
async fn full_replay_frames_each_revision_and_ends_with_the_highest_id() {
    let app = spawn().await;
    app.settled("s", "t", "m1", "completed").await; // revisions 1 (intent), 2 (settle)
    app.start("s", "t", "m2").await; // revision 3
    let (status, headers, body) = app.replay("session_id=s&logical_turn_id=t", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(headers["cache-control"], "no-store");
    let expected = format!(
        "retry: 3000\n\nevent: mutation_outcome\nid: 2\ndata: {}\n\nevent: mutation_outcome\nid: 3\ndata: {}\n\nid: 3\n\n",
        record("t", "m1", "completed"),
        record("t", "m2", "outcome_unknown"),
    );
    assert_eq!(body, expected);
}

#[tokio::test]
async fn unknown_outcome_is_replayed_after_any_cursor_and_the_final_id_never_drops_below_it() {
    let app = spawn().await;
    app.start("s", "t", "u").await; // 1
    app.step(
        "s",
        "u",
        "settlement",
        json!({"attempt_id": "a1", "status": "outcome_unknown"}),
    )
    .await; // 2
    app.settled("s", "t", "c", "completed").await; // 3, 4
    let (_, _, body) = app
        .replay("session_id=s&logical_turn_id=t&after=4", None)
        .await;
    assert_eq!(
        body,
        format!(
            "retry: 3000\n\nevent: mutation_outcome\nid: 2\ndata: {}\n\nid: 4\n\n",
            record("t", "u", "outcome_unknown")
        )
    );
    let (_, _, body) = app
        .replay("session_id=s&logical_turn_id=t&after=2", None)
        .await;
    assert_eq!(
        body,
        format!(
            "retry: 3000\n\nevent: mutation_outcome\nid: 2\ndata: {}\n\nevent: mutation_outcome\nid: 4\ndata: {}\n\nid: 4\n\n",
            record("t", "u", "outcome_unknown"),
            record("t", "c", "completed")
        )
    );
}

#[tokio::test]
async fn the_cursor_comes_from_last_event_id_and_after_wins() {
    let app = spawn().await;
    app.settled("s", "t", "m1", "completed").await; // 1, 2
    app.settled("s", "t", "m2", "failed").await; // 3, 4
    let (_, _, body) = app
        .replay("session_id=s&logical_turn_id=t", Some("2"))
        .await;
    assert_eq!(
        body,
        format!(
            "retry: 3000\n\nevent: mutation_outcome\nid: 4\ndata: {}\n\nid: 4\n\n",
            record("t", "m2", "failed")
        )
    );
    let (_, _, body) = app
        .replay("session_id=s&logical_turn_id=t&after=4", Some("0"))
        .await;
    assert_eq!(body, "retry: 3000\n\nid: 4\n\n");
    let (_, _, body) = app
        .replay("session_id=s&logical_turn_id=t&after=0", None)
        .await;
    assert!(body.contains("id: 2\n") && body.contains("id: 4\n"));
}

#[tokio::test]
async fn a_known_turn_without_published_entries_replays_empty() {
    let app = spawn().await;
    app.approve("s", "t", "m").await;
    let (status, _, body) = app.replay("session_id=s&logical_turn_id=t", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "retry: 3000\n\n");
}

#[tokio::test]
async fn replay_errors_are_400_then_404_then_409() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    for (query, last_event_id, status, code) in [
        ("logical_turn_id=t", None, 400, "missing_parameter"),
        ("session_id=s", None, 400, "missing_parameter"),
        (
            "session_id=nobody&logical_turn_id=t&after=-1",
            None,
            400,
            "invalid_cursor",
        ),
        (
            "session_id=s&logical_turn_id=t&after=1.0",
            None,
            400,
            "invalid_cursor",
        ),
        (
            "session_id=s&logical_turn_id=t&after=%201",
            None,
            400,
            "invalid_cursor",
        ),
        (
            "session_id=s&logical_turn_id=t&after=9223372036854775808",
            None,
            400,
            "invalid_cursor",
        ),
        (
            "session_id=s&logical_turn_id=t",
            Some("x"),
            400,
            "invalid_cursor",
        ),
        (
            "session_id=nobody&logical_turn_id=t&after=99",
            None,
            404,
            "session_not_found",
        ),
        (
            "session_id=s&logical_turn_id=nope&after=99",
            None,
            404,
            "turn_not_found",
        ),
        (
            "session_id=s&logical_turn_id=t&after=3",
            None,
            409,
            "cursor_ahead",
        ),
        (
            "session_id=s&logical_turn_id=t",
            Some("3"),
            409,
            "cursor_ahead",
        ),
    ] {
        let (s, headers, body) = app.replay(query, last_event_id).await;
        assert_eq!(s.as_u16(), status, "{query} {last_event_id:?}: {body}");
        assert_eq!(headers["content-type"], "application/json");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["code"], code, "{query}");
    }
    let (s, _, _) = app
        .replay("session_id=s&logical_turn_id=t&after=2", None)
        .await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn legacy_entries_come_first_without_id_and_only_in_a_full_replay() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await; // 1, 2
    let key = ledger::ids::SessionKey::parse("s").unwrap();
    let legacy: ledger::projection::LedgerEntry = serde_json::from_value(json!({
        "logical_turn_id": "t", "mutation_id": "old", "tool": "mcp__dashboards__create",
        "status": "outcome_unknown", "intent_recorded": true
    }))
    .unwrap();
    app.state.engine.import_legacy(&key, &legacy).await.unwrap();
    let (_, _, body) = app.replay("session_id=s&logical_turn_id=t", None).await;
    assert_eq!(
        body,
        format!(
            "retry: 3000\n\nevent: mutation_outcome\ndata: {}\n\nevent: mutation_outcome\nid: 2\ndata: {}\n\nid: 2\n\n",
            record("t", "old", "outcome_unknown"),
            record("t", "m", "completed")
        )
    );
    let (_, _, body) = app
        .replay("session_id=s&logical_turn_id=t&after=0", None)
        .await;
    assert!(!body.contains("\"old\""), "{body}");
}

#[tokio::test]
async fn percent_encoded_ids_round_trip_through_the_router() {
    let app = spawn().await;
    let session = "séance/1 50%";
    let turn = "turn #1?";
    app.settled(session, turn, "m/1", "completed").await;
    let q = format!(
        "session_id={}&logical_turn_id={}",
        crate::helpers::enc(session),
        crate::helpers::enc(turn)
    );
    let (status, _, body) = app.replay(&q, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(r#""mutation_id":"m/1""#), "{body}");
    let (status, v) = app
        .get_json(&format!(
            "/api/sessions/{}/turns/{}/entries",
            crate::helpers::enc(session),
            crate::helpers::enc(turn)
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["entries"][0]["outcome"]["logical_turn_id"], turn);
    let (status, v) = app
        .get_json(&format!("/api/operations/{}", crate::helpers::enc("m/1")))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["matches"][0]["session_key"], session);
}

#[tokio::test]
async fn cursor_ahead_names_the_field_the_cursor_came_from() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await; // latest revision 2
    let ahead = |field: &str| json!({"error": {"code": "cursor_ahead", "message": "cursor 3 is past the turn's latest revision 2", "field": field}});
    let (s, _, body) = app
        .replay("session_id=s&logical_turn_id=t&after=3", None)
        .await;
    assert_eq!(
        (s, serde_json::from_str::<serde_json::Value>(&body).unwrap()),
        (StatusCode::CONFLICT, ahead("after"))
    );
    let (s, _, body) = app
        .replay("session_id=s&logical_turn_id=t", Some("3"))
        .await;
    assert_eq!(
        (s, serde_json::from_str::<serde_json::Value>(&body).unwrap()),
        (StatusCode::CONFLICT, ahead("Last-Event-ID"))
    );
    // `after` wins over the header, and the error names the one used.
    let (s, _, body) = app
        .replay("session_id=s&logical_turn_id=t&after=3", Some("1"))
        .await;
    assert_eq!(
        (s, serde_json::from_str::<serde_json::Value>(&body).unwrap()),
        (StatusCode::CONFLICT, ahead("after"))
    );
}

/// Sends `head` (a whole request head, `\r\n\r\n` included) over a raw TCP connection and returns the
/// status, the lower-cased header block and the body (`Connection: close` is expected in `head`).
async fn raw(app: &crate::helpers::TestApp, head: &[u8]) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(head).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut answer),
    )
    .await
    .expect("the server answers and closes")
    .unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a response head");
    let status = head[9..12].parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

#[tokio::test]
async fn a_last_event_id_with_a_control_or_non_ascii_byte_is_a_json_400_naming_it() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    let invalid = json!({"error": {"code": "invalid_cursor", "message": "a cursor is one or more ASCII digits with value at most 9223372036854775807", "field": "Last-Event-ID"}});
    for value in [
        &b"1\x002"[..],
        b"\x00",
        b"1\x01",
        b"1\x1f",
        b"1\x7f",
        b"1\x80",
        b"\xc3\xa9",
        b"\xff",
    ] {
        let mut head = b"GET /api/mutation-events?session_id=s&logical_turn_id=t HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: ".to_vec();
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
        let (status, headers, body) = raw(&app, &head).await;
        assert_eq!(status, 400, "{value:?}: {headers}\n{body}");
        assert!(
            headers.contains("content-type: application/json"),
            "{value:?}: {headers}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&body).unwrap(),
            invalid,
            "{value:?}"
        );
    }
    // The same connection path serves a good cursor.
    let (status, _, body) = raw(
        &app,
        b"GET /api/mutation-events?session_id=s&logical_turn_id=t HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains("id: 2"), "{body}");
}
