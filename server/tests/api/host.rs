//! The host write API: statuses in the order 401 → 400 → 422 → 404 → 409, and that errors change nothing.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{spawn, TOKEN};

#[tokio::test]
async fn host_api_refuses_a_missing_or_wrong_token_with_401() {
    let app = spawn().await;
    let url = format!("{}/api/host/sessions/s/mutations", app.base);
    let body = json!({"logical_turn_id": "t", "mutation_id": "m", "tool": "x"});
    let none = app.client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
    let v: Value = none.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unauthorized");
    let wrong = app
        .client
        .post(&url)
        .bearer_auth("nope")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    // 401 comes before 400: a malformed body without a token is still 401.
    let malformed = app.client.post(&url).body("{").send().await.unwrap();
    assert_eq!(malformed.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.get_json("/api/sessions").await.1["sessions"], json!([]));
}

#[tokio::test]
async fn approve_answers_201_with_the_entry_state() {
    let app = spawn().await;
    let (status, body) = app.approve("s1", "t1", "m1").await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        body,
        json!({"session_key": "s1", "logical_turn_id": "t1", "mutation_id": "m1", "ledger_status": "approved",
               "intent_recorded": false, "attempt_id": null, "revision": null})
    );
}

#[tokio::test]
async fn malformed_json_is_400_and_a_broken_field_is_422_naming_it() {
    let app = spawn().await;
    let url = format!("{}/api/host/sessions/s/mutations", app.base);
    let r = app
        .client
        .post(&url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{\"logical_turn_id\":")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "malformed_json"
    );
    let r = app
        .client
        .post(&url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("[1]")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);

    let (s, v) = app
        .host(
            Method::POST,
            "/api/host/sessions/s/mutations",
            json!({"logical_turn_id": "t", "tool": "x"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["error"]["field"], "mutation_id");
    let (s, v) = app
        .host(
            Method::POST,
            "/api/host/sessions/s/mutations",
            json!({"logical_turn_id": "t", "mutation_id": 5, "tool": "x"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["error"]["field"], "mutation_id");
    let (s, v) = app
        .host(
            Method::POST,
            "/api/host/sessions/s/mutations",
            json!({"logical_turn_id": "t\n", "mutation_id": "m", "tool": "x"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["error"]["field"], "logical_turn_id");
    let long = "k".repeat(257);
    let (s, v) = app
        .host(
            Method::POST,
            &format!("/api/host/sessions/{long}/mutations"),
            json!({"logical_turn_id": "t", "mutation_id": "m", "tool": "x"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["error"]["field"], "session_key");
    // Nothing was stored by any of these.
    assert_eq!(app.get_json("/api/sessions").await.1["sessions"], json!([]));
}

/// `.` and `..` are path steps no address can carry: a session, turn or operation with such an id could
/// never be opened (the tester's `..` unknown could not be reconciled). Refused with 422 naming the
/// field, in a body as in a path; on reads, such an id names nothing (404).
#[tokio::test]
async fn dot_and_dot_dot_ids_are_refused_and_name_nothing() {
    let app = spawn().await;
    for (body, field) in [
        (
            json!({"logical_turn_id": "..", "mutation_id": "m", "tool": "x"}),
            "logical_turn_id",
        ),
        (
            json!({"logical_turn_id": "t", "mutation_id": ".", "tool": "x"}),
            "mutation_id",
        ),
    ] {
        let (s, v) = app
            .host(Method::POST, "/api/host/sessions/s/mutations", body)
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(v["error"]["field"], field);
    }
    // (A path segment `%2E%2E` never arrives as such: WHATWG clients, this one included, resolve it.)
    let (s, v) = app
        .host(
            Method::POST,
            "/api/host/batch",
            json!({"operations": [{"op": "approve", "session_key": ".", "logical_turn_id": "t", "mutation_id": "m", "tool": "x"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["results"][0]["status"], 422);
    assert_eq!(v["results"][0]["error"]["field"], "session_key");
    // Other dots are plain text.
    let (s, _) = app
        .host(
            Method::POST,
            "/api/host/sessions/.../mutations",
            json!({"logical_turn_id": ".t", "mutation_id": "m.", "tool": "x"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, v) = app.get_json("/api/mutation-outcomes?session_id=.").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], "session_not_found");
    assert_eq!(app.get_json("/api/sessions").await.1["total"], 1);
}

#[tokio::test]
async fn writes_to_an_unknown_session_or_mutation_are_404() {
    let app = spawn().await;
    let (s, v) = app
        .step("nobody", "m", "intent", json!({"attempt_id": "a"}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], "session_not_found");
    app.approve("s", "t", "m").await;
    let (s, v) = app
        .step("s", "other", "intent", json!({"attempt_id": "a"}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], "mutation_not_found");
}

#[tokio::test]
async fn a_redelivered_intent_is_409_with_the_current_state_and_changes_nothing() {
    let app = spawn().await;
    app.start("s", "t", "m").await;
    let (s, v) = app
        .step("s", "m", "intent", json!({"attempt_id": "a2"}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(v["error"]["code"], "already_recorded");
    assert_eq!(v["error"]["current"]["ledger_status"], "execution_started");
    assert_eq!(v["error"]["current"]["attempt_id"], "a1");
    assert_eq!(v["error"]["current"]["revision"], 1);
    let (s, v) = app.approve("s", "t", "m").await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(v["error"]["current"]["revision"], 1);
}

#[tokio::test]
async fn settlement_names_the_current_attempt_and_a_late_settle_of_an_unknown_is_refused() {
    let app = spawn().await;
    app.start("s", "t", "m").await;
    let (s, v) = app
        .step(
            "s",
            "m",
            "settlement",
            json!({"attempt_id": "zz", "status": "completed"}),
        )
        .await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::CONFLICT, json!("attempt_mismatch"))
    );
    let (s, v) = app
        .step(
            "s",
            "m",
            "settlement",
            json!({"attempt_id": "a1", "status": "completed", "reason": "execution_timeout"}),
        )
        .await;
    assert_eq!(
        (s, v["error"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("reason"))
    );
    let (s, v) = app
        .step(
            "s",
            "m",
            "settlement",
            json!({"attempt_id": "a1", "status": "done"}),
        )
        .await;
    assert_eq!(
        (s, v["error"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("status"))
    );
    let (s, v) = app
        .step(
            "s",
            "m",
            "settlement",
            json!({"attempt_id": "a1", "status": "outcome_unknown", "reason": "execution_timeout"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["revision"], 2);
    let (s, v) = app
        .step(
            "s",
            "m",
            "settlement",
            json!({"attempt_id": "a1", "status": "completed"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(v["error"]["code"], "unknown_outcome_needs_reconciliation");
    let (s, _) = app
        .step("s", "m", "attempts", json!({"attempt_id": "a2"}))
        .await;
    assert_eq!(
        s,
        StatusCode::CONFLICT,
        "no blind resend of an unknown outcome"
    );
}

#[tokio::test]
async fn reconciliation_needs_conclusive_evidence_for_the_original_attempt() {
    let app = spawn().await;
    app.start("s", "t", "m").await;
    app.step(
        "s",
        "m",
        "settlement",
        json!({"attempt_id": "a1", "status": "outcome_unknown"}),
    )
    .await;
    let evidence = |status: &str| json!({"source": "codehost-status", "reference": "issue #419", "observed_at": "2026-11-29T10:00:00Z", "provider_status": status});
    for inconclusive in ["accepted", "pending", "unknown"] {
        let (s, v) = app
            .step(
                "s",
                "m",
                "reconciliation",
                json!({"attempt_id": "a1", "completed": true, "evidence": evidence(inconclusive)}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{inconclusive}");
        assert_eq!(v["error"]["field"], "evidence.provider_status");
    }
    let (s, v) = app
        .step("s", "m", "reconciliation", json!({"attempt_id": "a1", "completed": true, "evidence": {"source": "", "reference": "r", "observed_at": "t"}}))
        .await;
    assert_eq!(
        (s, v["error"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("evidence.source"))
    );
    let (s, v) = app
        .step(
            "s",
            "m",
            "reconciliation",
            json!({"attempt_id": "other", "completed": true, "evidence": evidence("completed")}),
        )
        .await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::CONFLICT, json!("attempt_mismatch"))
    );
    let (_, history) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(history["mutation_outcomes"][0]["status"], "outcome_unknown");
    let (s, v) = app
        .step(
            "s",
            "m",
            "reconciliation",
            json!({"attempt_id": "a1", "completed": true, "evidence": evidence("completed")}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["ledger_status"], "completed");
    let (_, history) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(history["mutation_outcomes"][0]["status"], "completed");
}

#[tokio::test]
async fn an_identical_metadata_attach_changes_nothing() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    let meta = json!({"id": "dash-1", "url": "https://app.example.com/d/dash-1", "title": "Service overview"});
    let (s, v) = app.step("s", "m", "metadata", meta.clone()).await;
    assert_eq!((s, v["revision"].clone()), (StatusCode::OK, json!(3)));
    let (s, v) = app.step("s", "m", "metadata", meta).await;
    assert_eq!((s, v["revision"].clone()), (StatusCode::OK, json!(3)));
}

#[tokio::test]
async fn large_metadata_below_the_body_limit_is_accepted_and_sanitised() {
    // Seed 000: over-long values are truncated (title) or withheld (resource_id, url), never refused.
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    let meta = json!({
        "id": "i".repeat(100 * 1024),
        "url": format!("https://app.example.com/{}", "p".repeat(100 * 1024)),
        "title": "é".repeat(100 * 1024),
    });
    let (s, v) = app.step("s", "m", "metadata", meta).await;
    assert_eq!(
        (s, v["revision"].clone()),
        (StatusCode::OK, json!(3)),
        "{v}"
    );
    let (_, history) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    let record = &history["mutation_outcomes"][0];
    assert_eq!(record["resource_id"], Value::Null);
    assert_eq!(record["url"], Value::Null);
    // 200 KiB of two-byte characters, published as the first 512 bytes.
    assert_eq!(record["title"], json!("é".repeat(256)));

    // A single field of almost the whole 2 MiB body limit is accepted too.
    let title = format!("Service overview {}", "x".repeat(2 * 1024 * 1024 - 1024));
    let (s, v) = app
        .step("s", "m", "metadata", json!({"title": title}))
        .await;
    assert_eq!(
        (s, v["revision"].clone()),
        (StatusCode::OK, json!(4)),
        "{v}"
    );
    let (_, history) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(
        history["mutation_outcomes"][0]["title"],
        json!(&title[..512])
    );
}

#[tokio::test]
async fn batch_applies_in_order_with_one_result_each() {
    let app = spawn().await;
    let ops = json!({"operations": [
        {"op": "approve", "session_key": "s", "logical_turn_id": "t", "mutation_id": "m1", "tool": "x"},
        {"op": "intent", "session_key": "s", "mutation_id": "m1", "attempt_id": "a"},
        {"op": "settle", "session_key": "s", "mutation_id": "m1", "attempt_id": "a", "status": "failed"},
        {"op": "intent", "session_key": "s", "mutation_id": "m1", "attempt_id": "a"},
        {"op": "launch", "session_key": "s", "mutation_id": "m1"},
        {"op": "approve", "session_key": "s", "logical_turn_id": "t", "mutation_id": "m2", "tool": "x"}
    ]});
    let (s, v) = app.host(Method::POST, "/api/host/batch", ops).await;
    assert_eq!(s, StatusCode::OK);
    let statuses: Vec<_> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [201, 200, 200, 409, 422, 201]);
    assert_eq!(v["results"][2]["entry"]["ledger_status"], "failed");
    assert_eq!(v["results"][4]["error"]["field"], "op");
    let (_, history) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(history["mutation_outcomes"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn deleting_a_session_removes_its_history() {
    let app = spawn().await;
    app.settled("s", "t", "m", "completed").await;
    let (s, _) = app
        .host(Method::DELETE, "/api/host/sessions/s", Value::Null)
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    assert_eq!(
        app.get_json("/api/mutation-outcomes?session_id=s").await.0,
        StatusCode::NOT_FOUND
    );
    let (s, _) = app
        .host(Method::DELETE, "/api/host/sessions/s", Value::Null)
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_bad_path_is_400_before_a_bad_body_is_422() {
    let app = spawn().await;
    let (s, v) = app
        .host(
            Method::POST,
            "/api/host/sessions/t%FF/mutations",
            json!({"logical_turn_id": 5}),
        )
        .await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("invalid_path"))
    );
}

#[tokio::test]
async fn an_oversized_body_and_a_wrong_method_answer_json_errors() {
    let app = spawn().await;
    let big = json!({"title": "x".repeat(3 * 1024 * 1024)});
    app.settled("s", "t", "m", "completed").await;
    let (s, v) = app.step("s", "m", "metadata", big).await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::PAYLOAD_TOO_LARGE, json!("body_too_large"))
    );
    let (s, v) = app.host(Method::GET, "/api/host/batch", Value::Null).await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::METHOD_NOT_ALLOWED, json!("method_not_allowed"))
    );
    let (s, v) = app.host(Method::DELETE, "/api/sessions", Value::Null).await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::METHOD_NOT_ALLOWED, json!("method_not_allowed"))
    );
}

#[tokio::test]
async fn evidence_needs_an_rfc3339_observation_time() {
    let app = spawn().await;
    app.start("s", "t", "m").await;
    app.step(
        "s",
        "m",
        "settlement",
        json!({"attempt_id": "a1", "status": "outcome_unknown"}),
    )
    .await;
    let (s, v) = app
        .step("s", "m", "reconciliation", json!({"attempt_id": "a1", "completed": false, "evidence": {"source": "s", "reference": "r", "observed_at": "yesterday-ish"}}))
        .await;
    assert_eq!(
        (s, v["error"]["field"].clone()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("evidence.observed_at")
        )
    );
    let (_, history) = app.get_json("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(history["mutation_outcomes"][0]["status"], "outcome_unknown");
}

#[tokio::test]
async fn the_bearer_scheme_is_matched_case_insensitively() {
    let app = spawn().await;
    let url = format!("{}/api/host/sessions/s/mutations", app.base);
    for (i, scheme) in ["Bearer", "bearer", "BEARER", "bEaReR"]
        .into_iter()
        .enumerate()
    {
        let r = app
            .client
            .post(&url)
            .header("Authorization", format!("{scheme} {TOKEN}"))
            .json(&json!({"logical_turn_id": "t", "mutation_id": format!("m{i}"), "tool": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED, "{scheme}");
    }
    for value in [
        format!("Basic {TOKEN}"),
        format!("Bearer{TOKEN}"),
        format!("Bearers {TOKEN}"),
        format!("bearer {TOKEN}x"),
        TOKEN.to_owned(),
    ] {
        let r = app
            .client
            .post(&url)
            .header("Authorization", &value)
            .json(&json!({"logical_turn_id": "t", "mutation_id": "refused", "tool": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{value}");
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            json!({"error": {"code": "unauthorized", "message": "a valid host token is required: Authorization: Bearer <host token>"}})
        );
    }
    // Nothing refused was recorded: approving it now is a first approval.
    assert_eq!(
        app.approve("s", "t", "refused").await.0,
        StatusCode::CREATED
    );
}

/// `commissioned_after` names another mutation of the same session (new work after an unknown outcome):
/// itself, an unknown one or another session's is 404 `mutation_not_found` naming it, one that breaks the
/// identifier rule 422 naming it; either records nothing. A valid one is accepted, the original unchanged.
#[tokio::test]
async fn approve_commissioned_after_names_another_mutation_of_the_same_session() {
    let app = spawn().await;
    app.start("s1", "t1", "orig").await;
    app.approve("other", "t1", "elsewhere").await;
    let approve = |mutation: &str, after: &str| {
        json!({"logical_turn_id": "t2", "mutation_id": mutation, "tool": "github.create_issue",
               "commissioned_after": after})
    };
    for (mutation, after, expected) in [
        ("m2", "m2", StatusCode::NOT_FOUND),
        ("m3", "no-such", StatusCode::NOT_FOUND),
        ("m4", "elsewhere", StatusCode::NOT_FOUND),
        ("m5", "\u{7}", StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let (status, body) = app
            .host(
                Method::POST,
                "/api/host/sessions/s1/mutations",
                approve(mutation, after),
            )
            .await;
        assert_eq!(
            (status, body["error"]["field"].as_str()),
            (expected, Some("commissioned_after")),
            "{mutation} after {after}: {body}"
        );
        let (status, _) = app
            .host(
                Method::POST,
                &format!("/api/host/sessions/s1/mutations/{mutation}/intent"),
                json!({"attempt_id": "a"}),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{mutation} was recorded");
    }
    let (status, body) = app
        .host(
            Method::POST,
            "/api/host/sessions/s1/mutations",
            approve("next", "orig"),
        )
        .await;
    assert_eq!(
        (status, body["ledger_status"].as_str()),
        (StatusCode::CREATED, Some("approved"))
    );
    let (_, turn) = app.get_json("/api/sessions/s1/turns/t1/entries").await;
    assert_eq!(turn["entries"][0]["outcome"]["mutation_id"], "orig");
    assert_eq!(turn["entries"][0]["ledger_status"], "execution_started");
    assert_eq!(turn["entries"].as_array().map(Vec::len), Some(1));
}

/// `traceparent` (docs/api.md "Host write API"): a W3C trace context, optional on approve and on the
/// batch's `approve`; malformed (wrong length, not hex, an all-zero id, version ff) is 422 naming it and
/// records nothing; a valid one is accepted.
#[tokio::test]
async fn a_malformed_traceparent_is_422_naming_it_and_records_nothing() {
    let app = spawn().await;
    let approve = |mutation: &str, tp: Value| {
        json!({"logical_turn_id": "t1", "mutation_id": mutation, "tool": "github.create_issue",
               "traceparent": tp})
    };
    let bad = [
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01"),
        json!("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
        json!("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        json!(42),
    ];
    for (i, tp) in bad.iter().enumerate() {
        let m = format!("m{i}");
        let (status, body) = app
            .host(
                Method::POST,
                "/api/host/sessions/s1/mutations",
                approve(&m, tp.clone()),
            )
            .await;
        assert_eq!(
            (status, body["error"]["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("traceparent")),
            "{tp}: {body}"
        );
        let mut item = approve(&m, tp.clone());
        item["op"] = json!("approve");
        item["session_key"] = json!("s1");
        let (status, v) = app
            .host(
                Method::POST,
                "/api/host/batch",
                json!({"operations": [item]}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(v["results"][0]["status"], 422, "{tp}: {v}");
        assert_eq!(v["results"][0]["error"]["field"], "traceparent");
    }
    let (status, _) = app.get_json("/api/mutation-outcomes?session_id=s1").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a refused approve recorded its session"
    );
    let (status, body) = app
        .host(
            Method::POST,
            "/api/host/sessions/s1/mutations",
            approve(
                "ok",
                json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            ),
        )
        .await;
    assert_eq!(
        (status, body["ledger_status"].as_str()),
        (StatusCode::CREATED, Some("approved")),
        "{body}"
    );
}

/// docs/api.md "The ledger's id": `GET /api/host/ledger` answers 32 random hex digits, host token only;
/// the same on every call and for every instance on one database (a second server built on the same
/// ledger), another for another ledger.
#[tokio::test]
async fn the_ledger_id_is_random_made_once_and_the_same_for_every_instance() {
    let app = spawn().await;
    let url = format!("{}/api/host/ledger", app.base);
    let id = |base: String| {
        let client = app.client.clone();
        async move {
            let r = client
                .get(format!("{base}/api/host/ledger"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            let v: Value = r.json().await.unwrap();
            v["ledger_id"].as_str().unwrap().to_owned()
        }
    };
    let first = id(app.base.clone()).await;
    assert_eq!(first.len(), 32, "{first}");
    assert!(
        first
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{first}"
    );
    assert_eq!(id(app.base.clone()).await, first);
    let none = app.client.get(&url).send().await.unwrap();
    assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
    // Another instance on the same ledger.
    let again = crate::helpers::serve_built(
        tempfile::tempdir().unwrap(),
        server::serve::build(&crate::helpers::args(app._dir.path(), 3600), TOKEN.into())
            .await
            .unwrap(),
        server::conn::ConnLimits::default(),
    )
    .await;
    assert_eq!(id(again.base.clone()).await, first);
    // Another ledger, another id.
    let other = spawn().await;
    assert_ne!(id(other.base.clone()).await, first);
}

/// Issue 40 ("Status checks"): the queue of open unknowns names each item's current attempt (what a host
/// reconciles), and the provider's status a host passes through with its evidence is kept on the
/// reconciliation's history row and in the export; evidence without it has no such key.
#[tokio::test]
async fn unknowns_name_the_attempt_and_the_provider_status_is_kept_in_the_history() {
    let app = spawn().await;
    for m in ["m", "n"] {
        app.start("s", "t", m).await;
        let (s, v) = app
            .step(
                "s",
                m,
                "settlement",
                json!({"attempt_id": "a1", "status": "outcome_unknown"}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    app.start("s", "t", "in-flight").await;
    let (s, v) = app.get_json("/api/unknowns").await;
    assert_eq!(s, StatusCode::OK);
    let items: Vec<(&str, &Value)> = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["entry"]["outcome"]["mutation_id"].as_str().unwrap(),
                &m["attempt_id"],
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            ("m", &json!("a1")),
            ("n", &json!("a1")),
            ("in-flight", &json!("a1"))
        ]
    );
    // A fresh attempt after a not-executed reconciliation is the one the queue names.
    let evidence = json!({"source": "codehost-status", "reference": "issue #419",
                          "observed_at": "2026-11-29T10:00:00Z", "provider_status": "not_accepted"});
    let (s, v) = app
        .step(
            "s",
            "n",
            "reconciliation",
            json!({"attempt_id": "a1", "completed": false, "evidence": evidence}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, v) = app
        .step("s", "n", "attempts", json!({"attempt_id": "a2"}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, v) = app
        .step(
            "s",
            "n",
            "settlement",
            json!({"attempt_id": "a2", "status": "outcome_unknown"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, v) = app
        .get_json("/api/unknowns?session_key=s&tool=mcp__dashboards__create")
        .await;
    let n = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["entry"]["outcome"]["mutation_id"] == "n")
        .unwrap();
    assert_eq!(n["attempt_id"], "a2");

    let (s, v) = app
        .step(
            "s",
            "m",
            "reconciliation",
            json!({"attempt_id": "a1", "completed": true, "evidence": {"source": "codehost-status",
                   "reference": "issue #419", "observed_at": "2026-11-29T10:00:00Z",
                   "provider_status": "completed"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, h) = app.get_json("/api/sessions/s/mutations/m/history").await;
    assert_eq!(s, StatusCode::OK, "{h}");
    let last = h["changes"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last,
        json!({
            "kind": "reconciliation",
            "at": last["at"],
            // The turn's revisions: every change of m, n and in-flight took one (the ninth is this).
            "revision": 9,
            "actor": "host",
            "attempt_id": "a1",
            "ledger_status": "completed",
            "reason": null,
            "evidence": {"source": "codehost-status", "reference": "issue #419",
                         "observed_at": "2026-11-29T10:00:00Z", "provider_status": "completed"},
            "note": null,
            "outcome": {"schema": "mutation_outcome/v1", "logical_turn_id": "t", "mutation_id": "m",
                        "tool": "mcp__dashboards__create", "status": "completed", "resource_id": null,
                        "url": null, "title": null},
            "deadline_at": last["deadline_at"],
            "settled_by": null,
            "established_by": "host"
        })
    );
    assert!(
        last["at"].is_string() && last["deadline_at"].is_string(),
        "{last}"
    );
    // The export's history lines carry the same rows.
    let r = app.get("/api/sessions/s/export?history=true").await;
    assert_eq!(r.status(), StatusCode::OK);
    let body = r.text().await.unwrap();
    let exported: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &Value| l["mutation_id"] == "m" && l.get("changes").is_some())
        .collect();
    assert_eq!(exported.len(), 1, "{body}");
    assert_eq!(
        exported[0]["changes"].as_array().unwrap().last(),
        Some(&last)
    );
    let (_, h) = app.get_json("/api/sessions/s/mutations/n/history").await;
    let reconciled = h["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "reconciliation")
        .unwrap();
    assert_eq!(reconciled["evidence"]["provider_status"], "not_accepted");
}
