//! Staff notes (docs/api.md "Operator actions"): kept in the history with their actor, who may add them,
//! the origin a staff change needs behind the SSO proxy, and what a viewer sees of staff work.

use reqwest::StatusCode;
use serde_json::{json, Value};
use server::serve::AccessArg;

use crate::helpers::access::plain;
use crate::helpers::operator::{
    as_viewer_reads, error, evidence_body, get, get_text, history_path, lines, notes, post,
    post_raw, reconciliation, signed_in, snapshot, Who,
};
use crate::helpers::{form, record, with_staff, TestApp, TOKEN};

// ---------------------------------------------------------------------------------------------------
// Notes
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_staff_note_is_kept_in_the_history_with_its_actor_and_changes_nothing_else() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    let token = app.staff_token().await;
    let before = snapshot(&app, "s", "t", "m").await;

    let (s, row) = post(
        &app,
        Who::Bearer(&token),
        &notes("s", "m"),
        json!({"text": "called the provider: no answer yet"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{row}");
    assert_eq!(row["kind"], "note");
    assert_eq!(row["actor"], "staff:ada");
    assert_eq!(row["revision"], Value::Null);
    assert_eq!(row["note"], "called the provider: no answer yet");
    assert_eq!(row["ledger_status"], "outcome_unknown");
    assert_eq!(row["attempt_id"], "a1");
    assert_eq!(row["evidence"], Value::Null);
    assert_eq!(
        row["outcome"],
        serde_json::from_str::<Value>(&record("t", "m", "outcome_unknown")).unwrap()
    );

    // The history API serves exactly the row the answer gave, after the ones before it.
    let after = snapshot(&app, "s", "t", "m").await;
    let changes = after["history"]["changes"].as_array().unwrap();
    let old = before["history"]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), old.len() + 1);
    assert_eq!(&changes[..old.len()], &old[..]);
    assert_eq!(changes[old.len()], row);
    // No revision, the entry unchanged, not session activity.
    assert_eq!(after["entries"], before["entries"]);
    assert_eq!(after["turns"], before["turns"]);
    // The support queue counts it.
    let (_, q) = get(&app, Who::Bearer(&token), "/api/operations/m").await;
    assert_eq!(q["matches"][0]["notes"], 1);

    // Exactly 4096 bytes is a note; 4097 is not, counted in bytes (not characters).
    for (text, ok) in [
        ("a".repeat(4096), true),
        ("é".repeat(2048), true),
        ("a".repeat(4097), false),
        (format!("a{}", "é".repeat(2048)), false),
        (String::new(), false),
    ] {
        let before = snapshot(&app, "s", "t", "m").await;
        let (s, body) = post(
            &app,
            Who::Bearer(&token),
            &notes("s", "m"),
            json!({ "text": text }),
        )
        .await;
        if ok {
            assert_eq!(s, StatusCode::CREATED, "{} bytes: {body}", text.len());
            assert_eq!(body["note"], text.as_str());
        } else {
            assert_eq!(
                error(s, &body),
                (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    Some("invalid_field"),
                    Some("text")
                ),
                "{} bytes",
                text.len()
            );
            assert_eq!(
                snapshot(&app, "s", "t", "m").await,
                before,
                "nothing changed"
            );
        }
    }

    // Missing or mistyped text: 422 naming it; malformed JSON: 400; unknown session or mutation: 404.
    let before = snapshot(&app, "s", "t", "m").await;
    for (body, expected) in [
        (
            "{}",
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_field"),
                Some("text"),
            ),
        ),
        (
            r#"{"text": 7}"#,
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_field"),
                Some("text"),
            ),
        ),
        (
            "{not json",
            (StatusCode::BAD_REQUEST, Some("malformed_json"), None),
        ),
    ] {
        let (s, v) = post_raw(&app, Who::Bearer(&token), &notes("s", "m"), body).await;
        assert_eq!(error(s, &v), expected, "{body}");
    }
    let (s, v) = post(
        &app,
        Who::Bearer(&token),
        &notes("s", "nope"),
        json!({"text": "x"}),
    )
    .await;
    assert_eq!(error(s, &v).1, Some("mutation_not_found"), "{s} {v}");
    let (s, v) = post(
        &app,
        Who::Bearer(&token),
        &notes("nobody", "m"),
        json!({"text": "x"}),
    )
    .await;
    assert_eq!(
        (s, error(s, &v).1),
        (StatusCode::NOT_FOUND, Some("session_not_found"))
    );
    assert_eq!(snapshot(&app, "s", "t", "m").await, before);
}

#[tokio::test]
async fn only_staff_may_add_a_note() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    app.settled("other", "t", "m", "completed").await;
    let signed = app.sign_in().await;
    let own_viewer = app.viewer("s").await;
    let other_viewer = app.viewer("other").await;
    let before = snapshot(&app, "s", "t", "m").await;
    let body = json!({"text": "a note"});
    for (who, expected) in [
        (
            Who::Bearer(TOKEN),
            (StatusCode::FORBIDDEN, Some("staff_only")),
        ),
        (
            Who::Cookie(&own_viewer),
            (StatusCode::FORBIDDEN, Some("staff_only")),
        ),
        (
            Who::Cookie(&other_viewer),
            (StatusCode::FORBIDDEN, Some("staff_only")),
        ),
        (
            Who::Nobody,
            (StatusCode::UNAUTHORIZED, Some("unauthorized")),
        ),
        (
            Who::CookieNoOrigin(&signed),
            (StatusCode::FORBIDDEN, Some("origin_mismatch")),
        ),
    ] {
        let (s, v) = post(&app, who, &notes("s", "m"), body.clone()).await;
        assert_eq!((s, v["error"]["code"].as_str()), expected, "{v}");
    }
    assert_eq!(
        snapshot(&app, "s", "t", "m").await,
        before,
        "nothing changed"
    );

    // A signed-in browser with its Origin: recorded as the staff member.
    let (s, row) = post(&app, Who::Cookie(&signed), &notes("s", "m"), body).await;
    assert_eq!(
        (s, row["actor"].as_str()),
        (StatusCode::CREATED, Some("staff:ada"))
    );

    // Open access (loopback default): reading needs nothing, a note still needs staff.
    let open = with_staff(|_| {}).await;
    open.settled("s", "t", "m", "outcome_unknown").await;
    let (s, v) = post(&open, Who::Nobody, &notes("s", "m"), json!({"text": "x"})).await;
    assert_eq!(error(s, &v).1, Some("staff_only"), "{s}");
    assert_eq!(s, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn behind_the_sso_proxy_a_staff_change_needs_a_matching_origin_too() {
    // The proxy adds its header to whatever the browser sends, a page of another site's form post
    // included: like a cookie, it needs the Origin check.
    let app = with_staff(|a| {
        a.access = AccessArg::SignedIn;
        a.trusted_user_header = Some("x-forwarded-user".parse().unwrap());
        a.trusted_proxy = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    let before = snapshot(&app, "s", "t", "m").await;
    let send = |origin: Option<&str>, path: &str, body: String, content_type: &str| {
        let mut req = plain()
            .post(format!("{}{path}", app.base))
            .header("x-forwarded-user", "grace")
            .header("content-type", content_type)
            .body(body);
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    let json_note = json!({"text": "via the proxy"}).to_string();
    for origin in [None, Some("http://evil.example")] {
        let r = send(
            origin,
            &notes("s", "m"),
            json_note.clone(),
            "application/json",
        )
        .await
        .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "origin_mismatch");
        let r = send(
            origin,
            "/sessions/s/operations/m/notes",
            form(&[("text", "via the proxy")]),
            "application/x-www-form-urlencoded",
        )
        .await
        .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
    }
    assert_eq!(
        snapshot(&app, "s", "t", "m").await,
        before,
        "nothing changed"
    );
    let r = send(
        Some(&app.base),
        &notes("s", "m"),
        json_note,
        "application/json",
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let row: Value = r.json().await.unwrap();
    assert_eq!(row["actor"], "staff:grace");
}

// ---------------------------------------------------------------------------------------------------
// What a viewer sees of staff work
// ---------------------------------------------------------------------------------------------------

/// A page's HTML with `who`.
async fn page_html(app: &TestApp, who: Who<'_>, path: &str) -> (StatusCode, String) {
    let (s, _, body) = get_text(app, who, path).await;
    (s, body)
}

/// Issue 40 ("Status checks"): the provider's status kept with a reconciliation's evidence is for staff,
/// as are the evidence's source and reference (free text typed for staff): their history, export and
/// operation page show them; a viewer's have the evidence's `observed_at` only (nor anything else in the
/// page's hydration data).
#[tokio::test]
async fn a_reconciliations_provider_status_and_evidence_text_are_shown_to_staff_and_never_to_a_viewer(
) {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    let token = app.staff_token().await;
    let staff = Who::Bearer(&token);
    let mut body = evidence_body("a1");
    body["evidence"]["provider_status"] = json!("completed");
    let (s, v) = post(&app, staff, &reconciliation("s", "m"), body).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let cookie = app.viewer("s").await;
    let viewer = Who::CookieNoOrigin(&cookie);
    let evidence = json!({"source": "codehost-status", "reference": "issue #419",
                          "observed_at": "2026-11-29T10:00:00Z"});
    let mut with_status = evidence.clone();
    with_status["provider_status"] = json!("completed");

    let (_, full) = get(&app, staff, &history_path("s", "m")).await;
    let last = |h: &Value| h["changes"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last(&full)["evidence"], with_status);
    let (_, by_host) = get(&app, Who::Bearer(TOKEN), &history_path("s", "m")).await;
    assert_eq!(by_host, full);
    let (s, seen) = get(&app, viewer, &history_path("s", "m")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(seen, as_viewer_reads(&full));
    assert_eq!(
        last(&seen)["evidence"],
        json!({"observed_at": evidence["observed_at"]})
    );

    let export = "/api/sessions/s/export?history=true";
    let (_, _, staff_export) = get_text(&app, staff, export).await;
    assert!(
        staff_export.contains(r#""provider_status":"completed""#),
        "{staff_export}"
    );
    let (s, _, viewer_export) = get_text(&app, viewer, export).await;
    assert_eq!(s, StatusCode::OK);
    for secret in ["provider_status", "codehost-status", "issue #419"] {
        assert!(!viewer_export.contains(secret), "{viewer_export}");
    }

    let (s, html) = page_html(&app, staff, "/sessions/s/operations/m").await;
    assert_eq!(s, StatusCode::OK);
    assert!(html.contains("Provider status"), "{html}");
    assert!(html.contains("provider-status"), "{html}");
    let (s, html) = page_html(&app, viewer, "/sessions/s/operations/m").await;
    assert_eq!(s, StatusCode::OK);
    for secret in [
        "Provider status",
        "provider-status",
        "provider_status",
        "codehost-status",
        "issue #419",
    ] {
        assert!(!html.contains(secret), "a viewer's page shows {secret:?}");
    }
}

#[tokio::test]
async fn a_viewer_never_sees_a_staff_note_its_count_or_a_staff_name() {
    const NOTE: &str = "internal: customer is on the escalation list";
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    app.settled("s", "t", "other", "completed").await;
    let token = app.staff_token().await;
    let staff = Who::Bearer(&token);
    let (s, _) = post(&app, staff, &notes("s", "m"), json!({ "text": NOTE })).await;
    assert_eq!(s, StatusCode::CREATED);
    // A staff reconciliation: its row stays, its actor loses the name.
    let (s, v) = post(&app, staff, &reconciliation("s", "m"), evidence_body("a1")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _) = post(
        &app,
        staff,
        &notes("s", "m"),
        json!({"text": "second internal remark"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let cookie = app.viewer("s").await;
    let viewer = Who::CookieNoOrigin(&cookie);

    // The history API: staff read everything, the viewer the same rows without notes and names.
    let (_, full) = get(&app, staff, &history_path("s", "m")).await;
    let kinds: Vec<&str> = full["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "approval",
            "intent",
            "settlement",
            "note",
            "reconciliation",
            "note"
        ]
    );
    assert_eq!(full["changes"][3]["note"], NOTE);
    assert_eq!(full["changes"][4]["actor"], "staff:ada");
    let (s, seen) = get(&app, viewer, &history_path("s", "m")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(seen, as_viewer_reads(&full));
    let actors: Vec<&str> = seen["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["actor"].as_str().unwrap())
        .collect();
    assert_eq!(actors, ["host", "host", "host", "staff"]);
    // The host and open access are not viewers: they read the full history.
    let (_, by_host) = get(&app, Who::Bearer(TOKEN), &history_path("s", "m")).await;
    assert_eq!(by_host, full);

    // `/api/operations/{id}`: the same match without `notes` and `last_note` for the viewer.
    let (_, found) = get(&app, staff, "/api/operations/m").await;
    assert_eq!(found["matches"][0]["notes"], 2);
    assert_eq!(found["matches"][0]["last_note"], "second internal remark");
    let (s, seen) = get(&app, viewer, "/api/operations/m").await;
    assert_eq!(s, StatusCode::OK);
    let mut expected = found.clone();
    let internal = expected["matches"][0].as_object_mut().unwrap();
    internal.remove("notes");
    internal.remove("last_note");
    assert_eq!(seen, expected);
    assert!(seen["matches"][0].get("notes").is_none(), "{seen}");
    let (_, none) = get(&app, viewer, "/api/operations/nope").await;
    assert_eq!(none, json!({"matches": []}));

    // Every other answer a viewer gets holds neither the note nor the name.
    let export = "/api/sessions/s/export?history=true".to_owned();
    for path in [
        "/api/sessions/s/turns".to_owned(),
        "/api/sessions/s/turns/t/entries".to_owned(),
        "/api/mutation-outcomes?session_id=s".to_owned(),
        "/api/mutation-events?session_id=s&logical_turn_id=t".to_owned(),
        "/api/me".to_owned(),
        export.clone(),
    ] {
        let (s, _, body) = get_text(&app, viewer, &path).await;
        assert_eq!(s, StatusCode::OK, "{path}: {body}");
        for secret in [NOTE, "second internal remark", "staff:ada", "\"notes\""] {
            assert!(!body.contains(secret), "{path} shows {secret:?}: {body}");
        }
    }
    // The export's histories are exactly what the history API answers the viewer.
    let (_, _, staff_export) = get_text(&app, staff, &export).await;
    let (_, _, viewer_export) = get_text(&app, viewer, &export).await;
    let staff_lines = lines(&staff_export);
    let viewer_lines = lines(&viewer_export);
    assert_eq!(viewer_lines.len(), staff_lines.len());
    for (v, s) in viewer_lines.iter().zip(&staff_lines) {
        if s.get("changes").is_some() {
            let (_, answer) = get(
                &app,
                viewer,
                &history_path("s", s["mutation_id"].as_str().unwrap()),
            )
            .await;
            assert_eq!(v, &answer);
            assert_eq!(v, &as_viewer_reads(s));
        } else {
            assert_eq!(v, s);
        }
    }
    assert!(staff_export.contains(NOTE));

    // The pages render through the same API as their caller: staff see the note and the name, the
    // viewer neither, and "by support" where staff acted.
    for path in [
        "/sessions/s/operations/m",
        "/operations/m",
        "/sessions/s",
        "/sessions/s/turns/t",
    ] {
        let (s, html) = page_html(&app, viewer, path).await;
        assert_eq!(s, StatusCode::OK, "{path}");
        for secret in [
            NOTE,
            "second internal remark",
            "staff:ada",
            "staff ada",
            "Add a note",
            "1 note",
            "2 notes",
        ] {
            assert!(
                !html.contains(secret),
                "{path} shows {secret:?} to a viewer"
            );
        }
    }
    let (_, html) = page_html(&app, viewer, "/sessions/s/operations/m").await;
    assert!(html.contains("by support"), "{html}");
    let (_, html) = page_html(&app, staff, "/sessions/s/operations/m").await;
    assert!(html.contains(NOTE));
    assert!(html.contains("by staff ada"));
    assert!(html.contains("Notes are internal"));
    let (_, html) = page_html(&app, staff, "/operations/m").await;
    assert!(html.contains("2 notes"));
}
