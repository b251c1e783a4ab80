//! Reconciliation by staff (docs/api.md "Operator actions"): as the host would, with its live event, and
//! refused exactly as the host API refuses, changing nothing.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::access::plain;
use crate::helpers::operator::{
    error, evidence_body, get, history_path, notes, post, post_raw, reconciliation, signed_in,
    snapshot, Refusal, Who,
};
use crate::helpers::{read_until, record, TOKEN};

// ---------------------------------------------------------------------------------------------------
// Reconciliation by staff
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn staff_reconcile_an_unknown_outcome_as_the_host_would_with_its_live_event() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await; // revisions 1, 2
    let token = app.staff_token().await;
    let mut live = plain()
        .get(format!("{}/api/run-events?session_id=s", app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), StatusCode::OK);

    // A note first: it sends nothing live.
    let (s, _) = post(
        &app,
        Who::Bearer(&token),
        &notes("s", "m"),
        json!({"text": "checking"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, entry) = post(
        &app,
        Who::Bearer(&token),
        &reconciliation("s", "m"),
        evidence_body("a1"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{entry}");
    assert_eq!(
        entry,
        json!({"session_key": "s", "logical_turn_id": "t", "mutation_id": "m",
               "ledger_status": "completed", "intent_recorded": true, "attempt_id": "a1", "revision": 3})
    );
    let got = read_until(&mut live, "\"latest_revision\":3}\n\n").await;
    assert_eq!(
        got,
        format!(
            "event: mutation_outcome\ndata: {{\"mutation_revision\":3,\"outcome\":{}}}\n\n\
             event: turn_changed\ndata: {{\"logical_turn_id\":\"t\",\"latest_revision\":3}}\n\n",
            record("t", "m", "completed")
        )
    );

    let (_, h) = get(&app, Who::Bearer(&token), &history_path("s", "m")).await;
    let last = h["changes"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "reconciliation");
    assert_eq!(last["actor"], "staff:ada");
    assert_eq!(last["revision"], 3);
    assert_eq!(last["ledger_status"], "completed");
    assert_eq!(
        last["evidence"],
        json!({"source": "codehost-status", "reference": "issue #419", "observed_at": "2026-11-29T10:00:00Z"})
    );
    let (_, outcomes) = get(
        &app,
        Who::Bearer(&token),
        "/api/mutation-outcomes?session_id=s",
    )
    .await;
    assert_eq!(outcomes["mutation_outcomes"][0]["status"], "completed");

    // Settled now: the host's refusal, with the unchanged entry.
    let (s, v) = post(
        &app,
        Who::Bearer(&token),
        &reconciliation("s", "m"),
        evidence_body("a1"),
    )
    .await;
    assert_eq!(
        error(s, &v),
        (StatusCode::CONFLICT, Some("already_settled"), None)
    );
    assert_eq!(v["error"]["current"], entry);
}

#[tokio::test]
async fn staff_reconciliation_refuses_exactly_as_the_host_api_and_changes_nothing() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    let token = app.staff_token().await;
    let before = snapshot(&app, "s", "t", "m").await;
    let ev = |source: &str, reference: &str, observed_at: &str| {
        json!({"attempt_id": "a1", "completed": true, "evidence": {
            "source": source, "reference": reference, "observed_at": observed_at}})
    };
    let cases: Vec<(String, Refusal)> = vec![
        (
            evidence_body("a0").to_string(),
            (StatusCode::CONFLICT, Some("attempt_mismatch"), None),
        ),
        (
            ev("", "issue #419", "2026-11-29T10:00:00Z").to_string(),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_field"),
                Some("evidence.source"),
            ),
        ),
        (
            ev("codehost-status", "  ", "2026-11-29T10:00:00Z").to_string(),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_field"),
                Some("evidence.reference"),
            ),
        ),
        (
            ev("codehost-status", "issue #419", "yesterday at ten").to_string(),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_field"),
                Some("evidence.observed_at"),
            ),
        ),
        (
            json!({"attempt_id": "a1", "completed": true, "evidence": {"source": "x", "reference": "y",
                   "observed_at": "2026-11-29T10:00:00Z", "provider_status": "pending"}})
            .to_string(),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_field"),
                Some("evidence.provider_status"),
            ),
        ),
        (
            json!({"completed": true}).to_string(),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_field"),
                Some("attempt_id"),
            ),
        ),
        (
            "[]".to_owned(),
            (StatusCode::BAD_REQUEST, Some("malformed_json"), None),
        ),
    ];
    for (body, expected) in &cases {
        let (s, staff) = post_raw(&app, Who::Bearer(&token), &reconciliation("s", "m"), body).await;
        assert_eq!(error(s, &staff), *expected, "{body}: {staff}");
        // The host API answers the same body exactly the same.
        let (hs, host) = post_raw(
            &app,
            Who::Bearer(TOKEN),
            "/api/host/sessions/s/mutations/m/reconciliation",
            body,
        )
        .await;
        assert_eq!((hs, &host), (s, &staff), "{body}");
        assert_eq!(
            snapshot(&app, "s", "t", "m").await,
            before,
            "{body}: nothing changed"
        );
    }
    // Unknown mutation, then the host token and a viewer: refused, nothing changed.
    let (s, v) = post(
        &app,
        Who::Bearer(&token),
        &reconciliation("s", "zz"),
        evidence_body("a1"),
    )
    .await;
    assert_eq!(
        (s, error(s, &v).1),
        (StatusCode::NOT_FOUND, Some("mutation_not_found"))
    );
    let viewer = app.viewer("s").await;
    for who in [Who::Bearer(TOKEN), Who::Cookie(&viewer)] {
        let (s, v) = post(&app, who, &reconciliation("s", "m"), evidence_body("a1")).await;
        assert_eq!(
            (s, error(s, &v).1),
            (StatusCode::FORBIDDEN, Some("staff_only"))
        );
    }
    let (s, _) = post(
        &app,
        Who::Nobody,
        &reconciliation("s", "m"),
        evidence_body("a1"),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(snapshot(&app, "s", "t", "m").await, before);
}
