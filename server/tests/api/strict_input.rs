//! Strict input on the JSON endpoints (docs/api.md "Errors"): a body must be sent as `Content-Type:
//! application/json` (415 otherwise; parameters such as `charset` are fine, an empty body needs none), an
//! object may not hold a key twice (400 `duplicate_key` naming it), and `Authorization` may be sent once
//! (400 `invalid_header`). Each refusal changes nothing in the ledger.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::serve::AccessArg;

use crate::helpers::{with_staff, TestApp, TOKEN};

/// Sends `body` to `path` with the host token (or `bearer`) and the given `Content-Type` values (none
/// when empty); status and JSON body (Null when not JSON).
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    bearer: &str,
    content_types: &[&str],
    body: &str,
) -> (StatusCode, Value) {
    let mut req = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(bearer)
        .body(body.to_owned());
    for ct in content_types {
        req = req.header("content-type", *ct);
    }
    let r = req.send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Everything the ledger holds for the sessions of these tests, as the host reads it: the sessions list,
/// and each session's export with its histories.
async fn ledger_state(app: &TestApp) -> Value {
    let get = |path: String| async move {
        let r = app
            .client
            .get(format!("{}{path}", app.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    };
    let (_, sessions) = get("/api/sessions".to_owned()).await;
    let mut out = json!({ "sessions": serde_json::from_str::<Value>(&sessions).unwrap() });
    for key in ["s", "new"] {
        let (status, export) = get(format!("/api/sessions/{key}/export?history=true")).await;
        out[key] = json!([status.as_u16(), export]);
    }
    out
}

fn unsupported() -> Value {
    json!({"error": {"code": "unsupported_media_type",
        "message": "a JSON body must be sent with Content-Type: application/json",
        "field": "Content-Type"}})
}

fn duplicate(field: &str) -> Value {
    json!({"error": {"code": "duplicate_key",
        "message": format!("the body holds the key {field:?} twice; send each key once"),
        "field": field}})
}

/// Every JSON endpoint, with a body it accepts: (method, path, staff only, body).
fn endpoints() -> Vec<(Method, &'static str, bool, Value)> {
    vec![
        (
            Method::POST,
            "/api/host/sessions/new/mutations",
            false,
            json!({"logical_turn_id": "t", "mutation_id": "n1", "tool": "x"}),
        ),
        (
            Method::POST,
            "/api/host/sessions/s/mutations/fresh/intent",
            false,
            json!({"attempt_id": "a1"}),
        ),
        (
            Method::POST,
            "/api/host/sessions/s/mutations/running/settlement",
            false,
            json!({"attempt_id": "a1", "status": "completed"}),
        ),
        (
            Method::POST,
            "/api/host/sessions/s/mutations/running2/cancellation",
            false,
            json!({"attempt_id": "a1"}),
        ),
        (
            Method::POST,
            "/api/host/sessions/s/mutations/unknown/reconciliation",
            false,
            json!({"attempt_id": "a1", "completed": true, "evidence": {"source": "p", "reference": "r", "observed_at": "2026-11-29T10:00:00Z"}}),
        ),
        (
            Method::PUT,
            "/api/host/sessions/s/mutations/done/metadata",
            false,
            json!({"id": "d", "url": null, "title": "T"}),
        ),
        (
            Method::POST,
            "/api/host/sessions/s/mutations/cancelled/attempts",
            false,
            json!({"attempt_id": "a2"}),
        ),
        (
            Method::POST,
            "/api/host/batch",
            false,
            json!({"operations": [{"op": "approve", "session_key": "new", "logical_turn_id": "t", "mutation_id": "n2", "tool": "x"}]}),
        ),
        (
            Method::POST,
            "/api/host/sessions/s/viewer-links",
            false,
            json!({"expires_in_secs": 60}),
        ),
        (
            Method::POST,
            "/api/sessions/s/mutations/unknown2/notes",
            true,
            json!({"text": "x"}),
        ),
        (
            Method::POST,
            "/api/sessions/s/mutations/unknown2/reconciliation",
            true,
            json!({"attempt_id": "a1", "completed": false, "evidence": {"source": "p", "reference": "r", "observed_at": "2026-11-29T10:00:00Z"}}),
        ),
    ]
}

/// A server with staff `ada` and session `s` holding an entry in each state the endpoints need.
async fn prepared() -> (TestApp, String) {
    let app = with_staff(|a| a.access = AccessArg::SignedIn).await;
    app.approve("s", "t", "fresh").await;
    app.start("s", "t", "running").await;
    app.start("s", "t", "running2").await;
    app.settled("s", "t", "unknown", "outcome_unknown").await;
    app.settled("s", "t", "unknown2", "outcome_unknown").await;
    app.settled("s", "t", "done", "completed").await;
    app.start("s", "t", "cancelled").await;
    let (s, _) = app
        .step(
            "s",
            "cancelled",
            "cancellation",
            json!({"attempt_id": "a1", "reason": "pre_dispatch_deadline"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let token = app.staff_token().await;
    (app, token)
}

#[tokio::test]
async fn a_json_body_without_the_json_media_type_is_415_and_changes_nothing() {
    let (app, staff) = prepared().await;
    let before = ledger_state(&app).await;
    for (i, (method, path, staff_only, body)) in endpoints().into_iter().enumerate() {
        let bearer = if staff_only { staff.as_str() } else { TOKEN };
        let body = body.to_string();
        for types in [
            &[][..],
            &["text/plain"][..],
            &["application/x-www-form-urlencoded"][..],
            &["multipart/form-data; boundary=x"][..],
            &["application/jsonp"][..],
            &["text/json"][..],
            &["application/json", "text/plain"][..],
        ] {
            let (s, v) = send(&app, method.clone(), path, bearer, types, &body).await;
            assert_eq!(
                (s, v),
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, unsupported()),
                "{method} {path} {types:?}"
            );
        }
        // 415 comes right after 401: with a wrong token it is 401 (a few only: failed tokens are
        // rate-limited per address), with a malformed path or body 415.
        if i % 4 == 0 {
            let (s, _) = send(&app, method.clone(), path, "wrong", &["text/plain"], &body).await;
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{method} {path}");
        }
        let (s, v) = send(&app, method.clone(), path, bearer, &["text/plain"], "{").await;
        assert_eq!(
            (s, v),
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, unsupported()),
            "{method} {path}"
        );
        let bad_path = path.replacen("/s/", "/%FF/", 1);
        if bad_path != path {
            let (s, v) = send(
                &app,
                method.clone(),
                &bad_path,
                bearer,
                &["text/plain"],
                &body,
            )
            .await;
            assert_eq!(
                (s, v),
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, unsupported()),
                "{method} {bad_path}"
            );
        }
    }
    assert_eq!(ledger_state(&app).await, before);

    // The same bodies as application/json, with parameters or not, in any case: each is accepted.
    for (i, (method, path, staff_only, body)) in endpoints().into_iter().enumerate() {
        let bearer = if staff_only { staff.as_str() } else { TOKEN };
        let ct = [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
        ][i % 3];
        let (s, v) = send(&app, method.clone(), path, bearer, &[ct], &body.to_string()).await;
        assert!(s.is_success(), "{method} {path} {ct}: {s} {v}");
    }
}

#[tokio::test]
async fn an_empty_body_needs_no_content_type() {
    let (app, _) = prepared().await;
    // A viewer link's body is optional: empty without a Content-Type is the default lifetime.
    let (s, v) = send(
        &app,
        Method::POST,
        "/api/host/sessions/s/viewer-links",
        TOKEN,
        &[],
        "",
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    // Where a body is required, an empty one is malformed JSON (400), not a media type question.
    let before = ledger_state(&app).await;
    for types in [&[][..], &["text/plain"][..]] {
        let (s, v) = send(
            &app,
            Method::POST,
            "/api/host/sessions/new/mutations",
            TOKEN,
            types,
            "",
        )
        .await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("malformed_json")),
            "{types:?}"
        );
    }
    // A DELETE has no body and needs no Content-Type.
    let (s, _) = send(
        &app,
        Method::DELETE,
        "/api/host/sessions/s/viewer-links",
        TOKEN,
        &[],
        "",
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(ledger_state(&app).await, before);
}

#[tokio::test]
async fn a_key_given_twice_is_400_naming_it_and_changes_nothing() {
    let (app, staff) = prepared().await;
    let before = ledger_state(&app).await;
    let json = &["application/json"][..];
    let cases: [(Method, &str, &str, &str, &str); 7] = [
        (
            Method::POST,
            "/api/host/batch",
            TOKEN,
            r#"{"operations":"x","operations":[{"op":"approve","session_key":"new","logical_turn_id":"t","mutation_id":"n","tool":"x"}]}"#,
            "operations",
        ),
        (
            Method::POST,
            "/api/host/batch",
            TOKEN,
            r#"{"operations":[{"op":"approve","session_key":"new","logical_turn_id":"t","mutation_id":"n","tool":"x","tool":"y"}]}"#,
            "operations[0].tool",
        ),
        (
            Method::POST,
            "/api/host/sessions/new/mutations",
            TOKEN,
            r#"{"logical_turn_id":"t","mutation_id":"n","mutation_id":"n2","tool":"x"}"#,
            "mutation_id",
        ),
        (
            Method::POST,
            "/api/host/sessions/s/mutations/running/settlement",
            TOKEN,
            r#"{"attempt_id":"a1","status":"outcome_unknown","status":"completed"}"#,
            "status",
        ),
        (
            Method::POST,
            "/api/host/sessions/s/mutations/unknown/reconciliation",
            TOKEN,
            r#"{"attempt_id":"a1","completed":true,"evidence":{"source":"p","reference":"r","reference":"s","observed_at":"2026-11-29T10:00:00Z"}}"#,
            "evidence.reference",
        ),
        (
            Method::POST,
            "/api/host/sessions/s/viewer-links",
            TOKEN,
            r#"{"expires_in_secs":60,"expires_in_secs":31622400}"#,
            "expires_in_secs",
        ),
        (
            Method::POST,
            "/api/sessions/s/mutations/unknown2/notes",
            &staff,
            r#"{"text":"a","text":"b"}"#,
            "text",
        ),
    ];
    for (method, path, bearer, body, field) in cases {
        let (s, v) = send(&app, method.clone(), path, bearer, json, body).await;
        assert_eq!(
            (s, v),
            (StatusCode::BAD_REQUEST, duplicate(field)),
            "{path} {body}"
        );
    }
    assert_eq!(ledger_state(&app).await, before);
    // The same key in two objects is no duplicate.
    let (s, v) = send(
        &app,
        Method::POST,
        "/api/host/batch",
        TOKEN,
        json,
        r#"{"operations":[{"op":"approve","session_key":"new","logical_turn_id":"t","mutation_id":"n","tool":"x"},{"op":"approve","session_key":"new","logical_turn_id":"t","mutation_id":"n3","tool":"x"}]}"#,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["results"][1]["status"], 201);
}

#[tokio::test]
async fn authorization_sent_twice_is_400_and_changes_nothing() {
    let (app, staff) = prepared().await;
    let before = ledger_state(&app).await;
    let expected = json!({"error": {"code": "invalid_header",
        "message": "the Authorization header is sent more than once; send one",
        "field": "Authorization"}});
    let host = format!("Bearer {TOKEN}");
    let staff = format!("Bearer {staff}");
    for (method, path, second) in [
        (
            Method::POST,
            "/api/host/sessions/new/mutations",
            host.as_str(),
        ),
        (
            Method::POST,
            "/api/host/sessions/new/mutations",
            staff.as_str(),
        ),
        (
            Method::POST,
            "/api/host/sessions/new/mutations",
            "Bearer wrong",
        ),
        (Method::GET, "/api/sessions", staff.as_str()),
        (Method::GET, "/api/me", host.as_str()),
        (Method::GET, "/healthz", host.as_str()),
        (Method::GET, "/sessions/s", staff.as_str()),
    ] {
        let r = app
            .client
            .request(method.clone(), format!("{}{path}", app.base))
            .header("authorization", host.as_str())
            .header("authorization", second)
            .header("content-type", "application/json")
            .body(r#"{"logical_turn_id":"t","mutation_id":"twice","tool":"x"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::BAD_REQUEST,
            "{method} {path} {second}"
        );
        assert_eq!(r.json::<Value>().await.unwrap(), expected, "{path}");
    }
    assert_eq!(ledger_state(&app).await, before);
    // Once is fine.
    let (s, _) = send(
        &app,
        Method::POST,
        "/api/host/sessions/new/mutations",
        TOKEN,
        &["application/json"],
        r#"{"logical_turn_id":"t","mutation_id":"once","tool":"x"}"#,
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
}

#[tokio::test]
async fn the_api_document_lists_415_exactly_where_a_json_body_is_read() {
    let app = crate::helpers::spawn().await;
    let doc: Value = app
        .client
        .get(format!("{}/api/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut with_body = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let lists_415 = op["responses"].get("415").is_some();
            let has_body = op.get("requestBody").is_some();
            assert_eq!(lists_415, has_body, "{method} {path}");
            if has_body {
                assert!(
                    op["requestBody"]["content"]
                        .get("application/json")
                        .is_some(),
                    "{method} {path}"
                );
                with_body.push(format!("{method} {path}"));
            }
        }
    }
    with_body.sort();
    assert_eq!(
        with_body,
        [
            "post /api/host/batch",
            "post /api/host/sessions/{session_key}/mutations",
            "post /api/host/sessions/{session_key}/mutations/{mutation_id}/attempts",
            "post /api/host/sessions/{session_key}/mutations/{mutation_id}/cancellation",
            "post /api/host/sessions/{session_key}/mutations/{mutation_id}/deadline",
            "post /api/host/sessions/{session_key}/mutations/{mutation_id}/intent",
            "post /api/host/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
            "post /api/host/sessions/{session_key}/mutations/{mutation_id}/settlement",
            "post /api/host/sessions/{session_key}/viewer-links",
            // The desk's bulk reconciliation and assignment (docs/api.md "Bulk actions", "Claims").
            "post /api/reconciliations",
            "post /api/sessions/{session_key}/mutations/{mutation_id}/assignment",
            "post /api/sessions/{session_key}/mutations/{mutation_id}/notes",
            "post /api/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
            "put /api/host/sessions/{session_key}/mutations/{mutation_id}/metadata",
        ]
    );
}
