//! The support desk over HTTP (docs/api.md "Claims", "Support queue", "Live run events"): a claim reaches
//! the session's open staff streams at once (`claim_changed`), never a viewer's; a claim ends when its
//! operation is reconciled; the queue's `claimed` filter; assigning an operation to a colleague; bulk
//! actions on several operations.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::access::{bearer, cookie, plain};
use crate::helpers::operator::{
    bob, claim_path, delete, error, evidence_body, get, history_path, post, signed_in, Who,
};
use crate::helpers::{enc, read_until, TestApp, TOKEN};

/// Opens the session's live stream with `header`; asserts 200.
async fn stream(app: &TestApp, session: &str, header: (&'static str, String)) -> reqwest::Response {
    let r = plain()
        .get(format!("{}/api/run-events?session_id={session}", app.base))
        .header(header.0, header.1)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r
}

/// The kinds and actors of an operation's history rows, in order.
async fn rows(app: &TestApp, session: &str, mutation: &str) -> Vec<(String, String)> {
    let (s, h) = get(app, Who::Bearer(TOKEN), &history_path(session, mutation)).await;
    assert_eq!(s, StatusCode::OK, "{h}");
    h["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["actor"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_claim_or_release_reaches_the_sessions_staff_streams_at_once_and_never_a_viewers() {
    let app = signed_in().await;
    app.settled("desk", "t1", "op-1", "outcome_unknown").await;
    let ada = app.staff_token().await;
    let viewer = app.viewer_token("desk").await;
    let mut staff_stream = stream(&app, "desk", bearer(&ada)).await;
    let mut host_stream = stream(&app, "desk", bearer(TOKEN)).await;
    let mut viewer_stream = stream(&app, "desk", cookie("outcomes_viewer", &viewer)).await;

    let (s, _) = post(
        &app,
        Who::Bearer(&ada),
        &claim_path("desk", "op-1"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let hint = "event: claim_changed\ndata: {\"mutation_id\":\"op-1\"}\n\n";
    let got = tokio::time::timeout(Duration::from_secs(2), read_until(&mut staff_stream, hint))
        .await
        .expect("within 2 s");
    assert!(got.contains(hint), "{got}");
    assert!(read_until(&mut host_stream, hint).await.contains(hint));

    // A claim already held changes nothing and says nothing; a release says it again.
    let (s, _) = post(
        &app,
        Who::Bearer(&ada),
        &claim_path("desk", "op-1"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = delete(&app, Who::Bearer(&ada), &claim_path("desk", "op-1")).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let got = read_until(&mut staff_stream, hint).await;
    assert_eq!(got.matches("claim_changed").count(), 1, "{got}");

    // The viewer's stream: the next settlement arrives, and no claim hint before it.
    app.settled("desk", "t1", "op-2", "completed").await;
    let got = read_until(&mut viewer_stream, "\"op-2\"").await;
    assert!(got.contains("\"op-2\""), "{got}");
    assert!(!got.contains("claim_changed"), "{got}");
}

#[tokio::test]
async fn a_claim_ends_when_its_operation_is_reconciled_and_the_history_shows_it() {
    let app = signed_in().await;
    app.settled("desk", "t1", "op-1", "outcome_unknown").await;
    app.settled("desk", "t1", "op-2", "outcome_unknown").await;
    let ada = app.staff_token().await;
    let bob = bob(&app).await;
    let (s, _) = post(
        &app,
        Who::Bearer(&ada),
        &claim_path("desk", "op-1"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);

    // Bob reconciles the operation ada is on: her claim ends in the same change, by bob.
    let path = "/api/sessions/desk/mutations/op-1/reconciliation";
    let (s, body) = post(&app, Who::Bearer(&bob), path, evidence_body("a1")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let got = rows(&app, "desk", "op-1").await;
    let tail: Vec<(&str, &str)> = got[got.len() - 3..]
        .iter()
        .map(|(k, a)| (k.as_str(), a.as_str()))
        .collect();
    assert_eq!(
        tail,
        vec![
            ("claim", "staff:ada"),
            ("reconciliation", "staff:bob"),
            ("release", "staff:bob")
        ]
    );
    let (_, h) = get(&app, Who::Bearer(&ada), &history_path("desk", "op-1")).await;
    assert_eq!(h.get("claim"), None, "{h}");
    let (_, found) = get(&app, Who::Bearer(&ada), "/api/operations/op-1").await;
    assert_eq!(found["matches"][0].get("claim"), None, "{found}");

    // The host's reconciliation ends a claim too; an unclaimed one gains no release row.
    let (s, _) = post(
        &app,
        Who::Bearer(&ada),
        &claim_path("desk", "op-2"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, body) = app
        .host(
            reqwest::Method::POST,
            "/api/host/sessions/desk/mutations/op-2/reconciliation",
            evidence_body("a1"),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let got = rows(&app, "desk", "op-2").await;
    assert_eq!(
        got.last().map(|(k, a)| (k.as_str(), a.as_str())),
        Some(("release", "host"))
    );
    app.settled("desk", "t1", "op-3", "outcome_unknown").await;
    let path = "/api/sessions/desk/mutations/op-3/reconciliation";
    let (s, _) = post(&app, Who::Bearer(&bob), path, evidence_body("a1")).await;
    assert_eq!(s, StatusCode::OK);
    let got = rows(&app, "desk", "op-3").await;
    assert_eq!(got.last().map(|(k, _)| k.as_str()), Some("reconciliation"));
}

#[tokio::test]
async fn the_queue_lists_only_mine_or_only_the_unclaimed_and_refuses_what_it_cannot_read() {
    let app = signed_in().await;
    for m in ["op-a", "op-b", "op-c"] {
        app.settled("desk", "t1", m, "outcome_unknown").await;
    }
    let ada = app.staff_token().await;
    let bob = bob(&app).await;
    let (s, _) = post(
        &app,
        Who::Bearer(&ada),
        &claim_path("desk", "op-a"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _) = post(
        &app,
        Who::Bearer(&bob),
        &claim_path("desk", "op-b"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let ids = |page: &Value| -> Vec<String> {
        page["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                m["entry"]["outcome"]["mutation_id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let (s, mine) = get(&app, Who::Bearer(&ada), "/api/unknowns?claim=mine").await;
    assert_eq!(s, StatusCode::OK, "{mine}");
    assert_eq!(
        (ids(&mine), &mine["total"]),
        (vec!["op-a".to_owned()], &json!(1))
    );
    let (_, mine) = get(&app, Who::Bearer(&bob), "/api/unknowns?claim=mine").await;
    assert_eq!(ids(&mine), vec!["op-b"]);
    let (_, free) = get(&app, Who::Bearer(&ada), "/api/unknowns?claim=unclaimed").await;
    assert_eq!(
        (ids(&free), &free["total"]),
        (vec!["op-c".to_owned()], &json!(1))
    );
    let (_, all) = get(&app, Who::Bearer(&ada), "/api/unknowns?claim=").await;
    assert_eq!(all["total"], json!(3));
    // After a release, the row is unclaimed again.
    let (s, _) = delete(&app, Who::Bearer(&ada), &claim_path("desk", "op-a")).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, free) = get(
        &app,
        Who::Bearer(&ada),
        "/api/unknowns?claim=unclaimed&sort=tool",
    )
    .await;
    assert_eq!(free["total"], json!(2));
    let (_, mine) = get(&app, Who::Bearer(&ada), "/api/unknowns?claim=mine").await;
    assert_eq!(mine["total"], json!(0));

    // Anything else: 400 naming `claim`; "mine" asked by a caller who is not staff: 403 `staff_only`
    // (for who asks: Schemathesis found the 400 for a schema-valid request).
    let (s, body) = get(&app, Who::Bearer(&ada), "/api/unknowns?claim=yours").await;
    assert_eq!(
        error(s, &body),
        (
            StatusCode::BAD_REQUEST,
            Some("invalid_parameter"),
            Some("claim")
        )
    );
    let (s, body) = get(&app, Who::Bearer(TOKEN), "/api/unknowns?claim=mine").await;
    assert_eq!(
        error(s, &body),
        (StatusCode::FORBIDDEN, Some("staff_only"), None)
    );
    let (s, free) = get(&app, Who::Bearer(TOKEN), "/api/unknowns?claim=unclaimed").await;
    assert_eq!((s, &free["total"]), (StatusCode::OK, &json!(2)));
}

fn assign_path(session: &str, mutation: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/assignment",
        enc(session),
        enc(mutation)
    )
}

#[tokio::test]
async fn staff_assign_an_operation_to_a_named_colleague_and_an_unknown_name_is_refused() {
    let app = signed_in().await;
    app.settled("desk", "t1", "op-1", "outcome_unknown").await;
    let ada = app.staff_token().await;
    let bob = bob(&app).await;
    let before = rows(&app, "desk", "op-1").await;

    // An unknown name, an empty one, a missing one: 422 naming `to`; nothing written.
    for (body, words) in [
        (
            json!({"to": "carol"}),
            "there is no staff account named \"carol\"",
        ),
        (json!({"to": "bob'; --"}), "there is no staff account named"),
        (json!({"to": ""}), "to is required"),
        (json!({}), "to is required"),
    ] {
        let (s, got) = post(
            &app,
            Who::Bearer(&ada),
            &assign_path("desk", "op-1"),
            body.clone(),
        )
        .await;
        assert_eq!(
            error(s, &got),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_field"),
                Some("to")
            ),
            "{body}: {got}"
        );
        assert!(
            got["error"]["message"].as_str().unwrap().starts_with(words),
            "{got}"
        );
    }
    assert_eq!(rows(&app, "desk", "op-1").await, before);

    // Ada hands it to bob: a claim row by ada naming bob; bob holds it.
    let mut staff_stream = stream(&app, "desk", bearer(&bob)).await;
    let (s, row) = post(
        &app,
        Who::Bearer(&ada),
        &assign_path("desk", "op-1"),
        json!({"to": "bob"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{row}");
    assert_eq!(
        (&row["kind"], &row["actor"], &row["note"], &row["revision"]),
        (
            &json!("claim"),
            &json!("staff:ada"),
            &json!("bob"),
            &Value::Null
        )
    );
    let hint = "event: claim_changed\ndata: {\"mutation_id\":\"op-1\"}\n\n";
    assert!(read_until(&mut staff_stream, hint).await.contains(hint));
    let (_, h) = get(&app, Who::Bearer(&ada), &history_path("desk", "op-1")).await;
    assert_eq!(h["claim"], json!({"by": "bob", "at": row["at"]}));
    let (_, q) = get(&app, Who::Bearer(&bob), "/api/unknowns?claim=mine").await;
    assert_eq!(q["total"], json!(1));
    let (_, q) = get(&app, Who::Bearer(&ada), "/api/unknowns").await;
    assert_eq!(q["matches"][0]["claim"]["by"], json!("bob"));
    // Again: 200 with that row, nothing written. Bob claiming it: he holds it already.
    let (s, again) = post(
        &app,
        Who::Bearer(&ada),
        &assign_path("desk", "op-1"),
        json!({"to": "bob"}),
    )
    .await;
    assert_eq!((s, &again), (StatusCode::OK, &row));
    let (s, _) = post(
        &app,
        Who::Bearer(&bob),
        &claim_path("desk", "op-1"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    // Ada may not claim it now; bob may hand it back to her.
    let (s, body) = post(
        &app,
        Who::Bearer(&ada),
        &claim_path("desk", "op-1"),
        json!({}),
    )
    .await;
    assert_eq!(
        error(s, &body),
        (StatusCode::CONFLICT, Some("already_claimed"), None)
    );
    let (s, _) = post(
        &app,
        Who::Bearer(&bob),
        &assign_path("desk", "op-1"),
        json!({"to": "ada"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (_, h) = get(&app, Who::Bearer(&ada), &history_path("desk", "op-1")).await;
    assert_eq!(h["claim"]["by"], json!("ada"));
    // A third staff member's claim is not taken over: 409, as a claim.
    app.add_staff("cy", "cy's long password here").await;
    let cy = app.staff_token_of("cy").await;
    let (s, body) = post(
        &app,
        Who::Bearer(&cy),
        &assign_path("desk", "op-1"),
        json!({"to": "cy"}),
    )
    .await;
    assert_eq!(
        (error(s, &body), &body["error"]["claim"]["by"]),
        (
            (StatusCode::CONFLICT, Some("already_claimed"), None),
            &json!("ada")
        )
    );

    // A viewer never sees it: no claim rows, no claim.
    let viewer = app.viewer("desk").await;
    let r = plain()
        .get(format!("{}{}", app.base, history_path("desk", "op-1")))
        .header("cookie", viewer)
        .send()
        .await
        .unwrap();
    let h: Value = r.json().await.unwrap();
    assert!(
        h["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["kind"] != "claim"),
        "{h}"
    );
    assert_eq!(h.get("claim"), None);
}

/// A JSON body's POST as `who`: status and body.
async fn post_json(app: &TestApp, who: Who<'_>, path: &str, body: Value) -> (StatusCode, Value) {
    post(app, who, path, body).await
}

#[tokio::test]
async fn several_unknowns_are_reconciled_with_one_piece_of_evidence_each_about_its_own_attempt() {
    let app = signed_in().await;
    for m in ["op-1", "op-2", "op-3"] {
        app.settled("desk", "t1", m, "outcome_unknown").await;
    }
    let ada = app.staff_token().await;
    let bob = bob(&app).await;
    // Bob reconciled op-2 already; ada is on op-1.
    let (s, _) = post(
        &app,
        Who::Bearer(&bob),
        "/api/sessions/desk/mutations/op-2/reconciliation",
        evidence_body("a1"),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = post(
        &app,
        Who::Bearer(&ada),
        &claim_path("desk", "op-1"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let evidence = json!({"source": "payments-api status page", "reference": "INC-2041", "observed_at": "2026-12-06T18:50:00Z"});
    let before2 = rows(&app, "desk", "op-2").await;

    // Bad evidence: 422 naming the field, nothing done.
    let mut bad = evidence.clone();
    bad["observed_at"] = json!("18:50");
    let body = json!({"operations": [{"session_key": "desk", "mutation_id": "op-1", "attempt_id": "a1"}], "completed": false, "evidence": bad});
    let (s, got) = post_json(&app, Who::Bearer(&ada), "/api/reconciliations", body).await;
    assert_eq!(
        error(s, &got),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("invalid_field"),
            Some("evidence.observed_at")
        )
    );
    let (s, got) = post_json(
        &app,
        Who::Bearer(&ada),
        "/api/reconciliations",
        json!({"operations": [], "completed": false, "evidence": evidence}),
    )
    .await;
    assert_eq!(
        error(s, &got),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("invalid_field"),
            Some("operations")
        )
    );
    assert_eq!(rows(&app, "desk", "op-1").await.last().unwrap().0, "claim");

    // Four operations: two reconciled, one already reconciled by bob (409), one on another attempt (409),
    // one unknown (404): each listed in order, nothing partial hidden.
    let body = json!({"operations": [
        {"session_key": "desk", "mutation_id": "op-1", "attempt_id": "a1"},
        {"session_key": "desk", "mutation_id": "op-2", "attempt_id": "a1"},
        {"session_key": "desk", "mutation_id": "op-3", "attempt_id": "a0"},
        {"session_key": "desk", "mutation_id": "op-9", "attempt_id": "a1"},
    ], "completed": false, "evidence": evidence});
    let (s, got) = post_json(&app, Who::Bearer(&ada), "/api/reconciliations", body).await;
    assert_eq!(s, StatusCode::OK, "{got}");
    let summary: Vec<(&str, u64, Option<&str>)> = got["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["mutation_id"].as_str().unwrap(),
                r["status"].as_u64().unwrap(),
                r["error"]["code"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("op-1", 200, None),
            ("op-2", 409, Some("already_settled")),
            ("op-3", 409, Some("attempt_mismatch")),
            ("op-9", 404, Some("mutation_not_found")),
        ]
    );
    assert_eq!(
        (&got["reconciled"], &got["refused"]),
        (&json!(1), &json!(3))
    );
    // Not executed: the entry is approved again (a fresh attempt may follow), as one reconciliation leaves it.
    assert_eq!(
        (
            &got["results"][0]["entry"]["mutation_id"],
            &got["results"][0]["entry"]["ledger_status"]
        ),
        (&json!("op-1"), &json!("approved"))
    );
    // Its own history rows: the reconciliation by ada about attempt a1, then the end of her claim.
    let (_, h) = get(&app, Who::Bearer(&ada), &history_path("desk", "op-1")).await;
    let changes = h["changes"].as_array().unwrap();
    let n = changes.len();
    assert_eq!(
        (
            &changes[n - 2]["kind"],
            &changes[n - 2]["actor"],
            &changes[n - 2]["attempt_id"],
            &changes[n - 2]["evidence"]["reference"]
        ),
        (
            &json!("reconciliation"),
            &json!("staff:ada"),
            &json!("a1"),
            &json!("INC-2041")
        )
    );
    assert_eq!(changes[n - 1]["kind"], json!("release"));
    assert_eq!(rows(&app, "desk", "op-2").await, before2);
    assert_eq!(
        rows(&app, "desk", "op-3").await.last().unwrap().0,
        "settlement"
    );
}

#[tokio::test]
async fn the_queue_forms_claim_release_and_reconcile_selected_rows_after_a_confirmation_listing_each(
) {
    let app = signed_in().await;
    for m in ["op-1", "op-2", "op 3/x"] {
        app.settled("desk", "t1", m, "outcome_unknown").await;
    }
    let signed = app.sign_in().await;
    let bob = bob(&app).await;
    let form_post = |path: &'static str, fields: Vec<(&'static str, String)>| {
        let app = &app;
        let signed = signed.clone();
        async move {
            let body = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(fields.iter().map(|(k, v)| (*k, v.as_str())))
                .finish();
            let r = plain()
                .post(format!("{}{path}", app.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .header("cookie", signed)
                .header("origin", &app.base)
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status(), r.text().await.unwrap())
        }
    };
    let op = |m: &str| format!("desk/{}/a1", enc(m));
    // Bob is on op-2: a bulk claim claims op-1 and op 3/x and lists op-2 refused.
    let (s, _) = post(
        &app,
        Who::Bearer(&bob),
        &claim_path("desk", "op-2"),
        json!({}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, page) = form_post(
        "/unknowns/bulk",
        vec![
            ("op", op("op-1")),
            ("op", op("op-2")),
            ("op", op("op 3/x")),
            ("action", "claim".into()),
        ],
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert!(
        page.contains("2 of 3 done; 1 refused (nothing changed for it)."),
        "{page}"
    );
    assert!(page.contains(r#"data-result="refused" class="result py-1 font-medium text-red-800 dark:text-red-300">Refused: bob is already on it"#), "{page}");
    assert_eq!(
        page.matches(">Claimed: you are on it<").count(),
        2,
        "{page}"
    );
    assert!(
        page.contains(r#"href="/sessions/desk/operations/op%203%2Fx""#),
        "{page}"
    );
    assert!(page.contains("Signed in as"), "{page}");
    let (_, h) = get(&app, Who::Bearer(&bob), &history_path("desk", "op 3/x")).await;
    assert_eq!(h["claim"]["by"], json!("ada"));

    // Reconcile: first the confirmation, listing every operation with its attempt; nothing done yet.
    let (s, page) = form_post(
        "/unknowns/bulk",
        vec![
            ("op", op("op-1")),
            ("op", op("op 3/x")),
            ("action", "reconcile".into()),
        ],
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert!(
        page.contains("Reconcile 2 operations with one piece of evidence"),
        "{page}"
    );
    assert!(
        page.contains(r#"<input type="hidden" name="op" value="desk/op-1/a1">"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<input type="hidden" name="op" value="desk/op%203%2Fx/a1">"#),
        "{page}"
    );
    assert!(
        page.contains(r#"action="/unknowns/bulk/reconciliation""#),
        "{page}"
    );
    assert_eq!(rows(&app, "desk", "op-1").await.last().unwrap().0, "claim");

    // A bad time keeps the page: the list, the typed values, the field named; nothing done.
    let evidence = |at: &str| {
        vec![
            ("op", op("op-1")),
            ("op", op("op 3/x")),
            ("completed", "true".to_owned()),
            ("source", "status page".to_owned()),
            ("reference", "INC-7".to_owned()),
            ("observed_at", at.to_owned()),
            ("provider_status", String::new()),
        ]
    };
    let (s, page) = form_post("/unknowns/bulk/reconciliation", evidence("18:50")).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    assert!(
        page.contains(r#"value="18:50" aria-invalid="true" aria-describedby="observed-at-error""#),
        "{page}"
    );
    assert!(
        page.contains(r#"value="INC-7""#) && page.contains(r#"value="true" required checked"#),
        "{page}"
    );
    assert!(page.contains("Nothing was reconciled."), "{page}");
    assert!(
        page.contains(r#"name="op" value="desk/op%203%2Fx/a1""#),
        "{page}"
    );
    assert_eq!(rows(&app, "desk", "op-1").await.last().unwrap().0, "claim");

    // Bob reconciles op 3/x meanwhile: the bulk reconciles op-1 and lists op 3/x as refused.
    let (s, _) = post(
        &app,
        Who::Bearer(&bob),
        &format!(
            "/api/sessions/desk/mutations/{}/reconciliation",
            enc("op 3/x")
        ),
        evidence_body("a1"),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, page) = form_post(
        "/unknowns/bulk/reconciliation",
        evidence("2026-12-06T18:50:00Z"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert!(
        page.contains("1 of 2 done; 1 refused (nothing changed for it)."),
        "{page}"
    );
    assert!(page.contains(">Reconciled<"), "{page}");
    assert!(
        page.contains(">Refused: This outcome is not unknown: it is already settled"),
        "{page}"
    );
    let last = rows(&app, "desk", "op-1").await;
    assert_eq!(
        last[last.len() - 2..].to_vec(),
        vec![
            ("reconciliation".to_owned(), "staff:ada".to_owned()),
            ("release".to_owned(), "staff:ada".to_owned())
        ]
    );

    // Release, and no rows selected: a page saying to select rows (422).
    let (s, page) = form_post(
        "/unknowns/bulk",
        vec![("op", op("op-2")), ("action", "release".into())],
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert!(page.contains(">Released<"), "{page}");
    // Nothing selected (the queue without JavaScript): a page to select rows on, for the queue's filters,
    // each box naming its operation and attempt; a selection from the queue names no attempt, and the
    // confirmation names the current one.
    let (s, page) = form_post(
        "/unknowns/bulk",
        vec![
            ("action", "claim".into()),
            ("state", "unknown".into()),
            ("session_like", "DESK".into()),
        ],
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert!(page.contains("Select the operations to act on"), "{page}");
    assert!(page.contains("1 row of the queue"), "{page}");
    assert!(
        page.contains(r#"<input type="checkbox" name="op" value="desk/op-2/a1""#),
        "{page}"
    );
    assert!(!page.contains("op-1"), "{page}");
    let (s, page) = form_post(
        "/unknowns/bulk",
        vec![("op", "desk/op-2/".into()), ("action", "reconcile".into())],
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert!(
        page.contains(r#"<input type="hidden" name="op" value="desk/op-2/a1">"#),
        "{page}"
    );
}
