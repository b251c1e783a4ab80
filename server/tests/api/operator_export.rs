//! The session export (docs/api.md "Export").

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::operator::{
    as_viewer_reads, error, get, get_text, history_path, lines, notes, post, signed_in, Who,
};
use crate::helpers::{enc, record, with_staff};

// ---------------------------------------------------------------------------------------------------
// Export
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_export_is_the_sessions_records_then_its_operation_histories() {
    let app = signed_in().await;
    let token = app.staff_token().await;
    let staff = Who::Bearer(&token);
    let key = "exp ort/ç";
    app.settled(key, "t1", "a", "completed").await;
    app.approve(key, "t2", "never-started").await;
    app.settled(key, "t2", "b", "outcome_unknown").await;
    app.settled(key, "t1", "c", "failed").await;
    let (s, _) = app
        .step(
            key,
            "a",
            "metadata",
            json!({"id": "dash-1", "title": "Overview"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app
        .host(
            Method::POST,
            &format!("/api/host/sessions/{}/mutations", enc(key)),
            json!({"logical_turn_id": "t2", "mutation_id": "b-again", "tool": "mcp__dashboards__create",
                   "commissioned_after": "b"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _) = post(
        &app,
        staff,
        &notes(key, "b"),
        json!({"text": "line one\nline two"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);

    let path = format!("/api/sessions/{}/export", enc(key));
    let (s, headers, body) = get_text(&app, staff, &path).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(headers["content-type"], "application/x-ndjson");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"session-exp_ort__.ndjson\""
    );
    assert_eq!(headers["cache-control"], "no-store");
    assert!(
        headers.get("content-length").is_none(),
        "streamed: {headers:?}"
    );
    // Exactly the records of GET /api/mutation-outcomes, in its order, one a line.
    let (_, outcomes) = get(
        &app,
        staff,
        &format!("/api/mutation-outcomes?session_id={}", enc(key)),
    )
    .await;
    let records = outcomes["mutation_outcomes"].as_array().unwrap().clone();
    assert_eq!(records.len(), 3);
    assert_eq!(lines(&body), records);
    assert!(body.starts_with(&record("t1", "a", "completed").replace(
        r#""resource_id":null,"url":null,"title":null"#,
        r#""resource_id":"dash-1","url":null,"title":"Overview""#
    )));
    let (_, _, same) = get_text(&app, staff, &format!("{path}?history=false")).await;
    assert_eq!(same, body);

    // With history: after the records, every operation's history answer, in the records' order.
    let (s, _, with_history) = get_text(&app, staff, &format!("{path}?history=true")).await;
    assert_eq!(s, StatusCode::OK);
    assert!(with_history.starts_with(&body));
    let histories = lines(&with_history[body.len()..]);
    let order = ["a", "c", "never-started", "b", "b-again"];
    assert_eq!(histories.len(), order.len());
    for (h, m) in histories.iter().zip(order) {
        let (_, answer) = get(&app, staff, &history_path(key, m)).await;
        assert_eq!(h, &answer, "{m}");
    }
    assert_eq!(histories[3]["commissioned"], json!(["b-again"]));
    assert_eq!(histories[4]["commissioned_after"], "b");
    assert_eq!(
        histories[3]["changes"].as_array().unwrap().last().unwrap()["actor"],
        "staff:ada"
    );

    // Errors: a bad history parameter (400, before the session is looked up), unknown session (404),
    // a viewer of another session (the same 404); a viewer of this one reads it.
    for bad in ["yes", "1", "TRUE", ""] {
        let (s, v) = get(&app, staff, &format!("{path}?history={bad}")).await;
        assert_eq!(
            error(s, &v),
            (
                StatusCode::BAD_REQUEST,
                Some("invalid_parameter"),
                Some("history")
            ),
            "{bad}"
        );
        let (s, v) = get(
            &app,
            staff,
            &format!("/api/sessions/nobody/export?history={bad}"),
        )
        .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    }
    let (s, v) = get(&app, staff, "/api/sessions/nobody/export").await;
    assert_eq!(error(s, &v).1, Some("session_not_found"));
    assert_eq!(s, StatusCode::NOT_FOUND);
    app.settled("other", "t", "m", "completed").await;
    let other = app.viewer("other").await;
    let (s, v) = get(&app, Who::CookieNoOrigin(&other), &path).await;
    assert_eq!(
        (s, error(s, &v).1),
        (StatusCode::NOT_FOUND, Some("session_not_found"))
    );
    let own = app.viewer(key).await;
    let (s, _, as_viewer) = get_text(
        &app,
        Who::CookieNoOrigin(&own),
        &format!("{path}?history=true"),
    )
    .await;
    // The viewer's export is the staff's without what is internal to staff: the note on `b` and the
    // staff name are not in it (docs/access.md "Viewer links").
    assert_eq!(s, StatusCode::OK);
    assert!(as_viewer.starts_with(&body));
    assert_eq!(
        lines(&as_viewer[body.len()..]),
        histories.iter().map(as_viewer_reads).collect::<Vec<_>>()
    );
    assert!(!as_viewer.contains("line one") && !as_viewer.contains("staff:ada"));
    let (s, _) = get(&app, Who::Nobody, &path).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_large_export_crosses_the_read_chunks_in_order() {
    let app = with_staff(|_| {}).await;
    // 1,200 operations in two turns (records are read 1,000 and histories 100 per chunk).
    let mut ids = Vec::new();
    for part in 0..4 {
        let mut ops = Vec::new();
        for i in 0..300 {
            let n = part * 300 + i;
            let (turn, m) = (format!("t{}", n % 2), format!("m{n:04}"));
            ops.push(json!({"op": "approve", "session_key": "big", "logical_turn_id": turn, "mutation_id": m, "tool": "w"}));
            ops.push(
                json!({"op": "intent", "session_key": "big", "mutation_id": m, "attempt_id": "a1"}),
            );
            ops.push(json!({"op": "settle", "session_key": "big", "mutation_id": m, "attempt_id": "a1", "status": "completed"}));
            ids.push((n % 2, m));
        }
        let (s, v) = app
            .host(
                Method::POST,
                "/api/host/batch",
                json!({ "operations": ops }),
            )
            .await;
        assert_eq!(s, StatusCode::OK);
        assert!(v["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"].as_u64().unwrap() < 300));
    }
    // Turn t0 was recorded first, then t1; each in recorded order.
    ids.sort_by_key(|(turn, _)| *turn);
    let (s, _, body) = get_text(&app, Who::Nobody, "/api/sessions/big/export?history=true").await;
    assert_eq!(s, StatusCode::OK);
    let all = lines(&body);
    assert_eq!(all.len(), 2 * ids.len());
    let (_, outcomes) = get(&app, Who::Nobody, "/api/mutation-outcomes?session_id=big").await;
    assert_eq!(
        &all[..ids.len()],
        outcomes["mutation_outcomes"].as_array().unwrap().as_slice()
    );
    let histories = &all[ids.len()..];
    let order: Vec<&str> = histories
        .iter()
        .map(|h| h["mutation_id"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = ids.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(order, expected);
    for i in [0, 99, 100, 101, 599, 600, 999, 1000, 1199] {
        let (_, answer) = get(&app, Who::Nobody, &history_path("big", &ids[i].1)).await;
        assert_eq!(histories[i], answer, "{i}");
    }
}
