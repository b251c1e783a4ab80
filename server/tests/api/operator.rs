//! Operator actions (docs/api.md "Operator actions"): staff notes and staff reconciliation, as JSON and
//! as no-JavaScript forms, who may do them, that a refusal changes nothing; and the session export
//! (docs/api.md "Export").

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::serve::AccessArg;

use crate::helpers::{
    enc, form, read_until, record, server, with_staff, TestApp, PASSWORD, STAFF, TOKEN,
};

// ---------------------------------------------------------------------------------------------------
// Plumbing
// ---------------------------------------------------------------------------------------------------

/// A server in signed-in mode with staff account `ada`.
pub(crate) async fn signed_in() -> TestApp {
    server(AccessArg::SignedIn).await
}

pub(crate) fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// `ada`'s sign-in cookie, as `outcomes_sign_in=<id>`.
pub(crate) async fn sign_in(app: &TestApp) -> String {
    let r = no_redirects()
        .post(format!("{}/sign-in", app.base))
        .header("origin", &app.base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("name", STAFF),
            ("password", PASSWORD),
            ("next", "/"),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let set = r.headers()["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

/// A viewer cookie of `session`, as `outcomes_viewer=<token>`.
pub(crate) async fn viewer(app: &TestApp, session: &str) -> String {
    let url = app.mint_link(&enc(session)).await;
    let r = no_redirects()
        .get(format!("{}{url}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let set = r.headers()["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

/// How a request is authenticated.
#[derive(Clone, Copy)]
pub(crate) enum Who<'a> {
    Nobody,
    Bearer(&'a str),
    /// A cookie, sent with `Origin: <the server>`.
    Cookie(&'a str),
    /// A cookie without `Origin`.
    CookieNoOrigin(&'a str),
}

impl Who<'_> {
    pub(crate) fn apply(
        self,
        app: &TestApp,
        req: reqwest::RequestBuilder,
    ) -> reqwest::RequestBuilder {
        match self {
            Who::Nobody => req,
            Who::Bearer(t) => req.bearer_auth(t),
            Who::Cookie(c) => req.header("cookie", c).header("origin", &app.base),
            Who::CookieNoOrigin(c) => req.header("cookie", c),
        }
    }
}

/// `POST <path>` with a raw JSON body; status and body (Null when not JSON).
pub(crate) async fn post_raw(
    app: &TestApp,
    who: Who<'_>,
    path: &str,
    body: &str,
) -> (StatusCode, Value) {
    let req = no_redirects()
        .post(format!("{}{path}", app.base))
        .header("content-type", "application/json")
        .body(body.to_owned());
    let r = who.apply(app, req).send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

pub(crate) async fn post(
    app: &TestApp,
    who: Who<'_>,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    post_raw(app, who, path, &body.to_string()).await
}

/// GET with `who`: status and JSON body.
pub(crate) async fn get(app: &TestApp, who: Who<'_>, path: &str) -> (StatusCode, Value) {
    let r = who
        .apply(app, no_redirects().get(format!("{}{path}", app.base)))
        .send()
        .await
        .unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn notes(session: &str, mutation: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/notes",
        enc(session),
        enc(mutation)
    )
}

fn reconciliation(session: &str, mutation: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/reconciliation",
        enc(session),
        enc(mutation)
    )
}

pub(crate) fn history_path(session: &str, mutation: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/history",
        enc(session),
        enc(mutation)
    )
}

/// Everything a refusal must leave as it was: the operation's history and its turn's entries (with the
/// latest revision) and the session's turns (with its last activity).
async fn snapshot(app: &TestApp, session: &str, turn: &str, mutation: &str) -> Value {
    let token = Who::Bearer(TOKEN);
    let (s, history) = get(app, token, &history_path(session, mutation)).await;
    assert_eq!(s, StatusCode::OK, "{history}");
    let (_, entries) = get(
        app,
        token,
        &format!("/api/sessions/{}/turns/{}/entries", enc(session), enc(turn)),
    )
    .await;
    let (_, turns) = get(app, token, &format!("/api/sessions/{}/turns", enc(session))).await;
    json!({"history": history, "entries": entries, "turns": turns})
}

/// An error answer in short: status, code, field.
pub(crate) type Refusal<'a> = (StatusCode, Option<&'a str>, Option<&'a str>);

pub(crate) fn error(status: StatusCode, body: &Value) -> Refusal<'_> {
    (
        status,
        body["error"]["code"].as_str(),
        body["error"]["field"].as_str(),
    )
}

fn evidence_body(attempt: &str) -> Value {
    json!({"attempt_id": attempt, "completed": true, "evidence": {
        "source": "codehost-status", "reference": "issue #419", "observed_at": "2026-11-29T10:00:00Z"}})
}

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
    let signed = sign_in(&app).await;
    let own_viewer = viewer(&app, "s").await;
    let other_viewer = viewer(&app, "other").await;
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
        let mut req = no_redirects()
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

/// `history` as a viewer must read it: no `note` rows, every `staff:<name>` actor as `staff`.
fn as_viewer_reads(history: &Value) -> Value {
    let mut h = history.clone();
    let changes: Vec<Value> = h["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] != "note")
        .map(|c| {
            let mut c = c.clone();
            if c["actor"].as_str().unwrap().starts_with("staff:") {
                c["actor"] = json!("staff");
            }
            c
        })
        .collect();
    h["changes"] = Value::Array(changes);
    h
}

/// A page's HTML with `who`.
async fn page_html(app: &TestApp, who: Who<'_>, path: &str) -> (StatusCode, String) {
    let (s, _, body) = get_text(app, who, path).await;
    (s, body)
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
    let cookie = viewer(&app, "s").await;
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

// ---------------------------------------------------------------------------------------------------
// Reconciliation by staff
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn staff_reconcile_an_unknown_outcome_as_the_host_would_with_its_live_event() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await; // revisions 1, 2
    let token = app.staff_token().await;
    let mut live = no_redirects()
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
    let viewer = viewer(&app, "s").await;
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

// ---------------------------------------------------------------------------------------------------
// The no-JavaScript forms
// ---------------------------------------------------------------------------------------------------

/// A form's fields.
type Fields<'a> = Vec<(&'a str, &'a str)>;

/// A form POST to a page path with `who`: status, Location, content type and body.
async fn post_form(
    app: &TestApp,
    who: Who<'_>,
    path: &str,
    fields: &[(&str, &str)],
) -> (StatusCode, String, String, String) {
    post_page(
        app,
        who,
        path,
        "application/x-www-form-urlencoded",
        form(fields),
    )
    .await
}

/// A POST of `body` as `content_type` to a page path with `who`: as [`post_form`].
async fn post_page(
    app: &TestApp,
    who: Who<'_>,
    path: &str,
    content_type: &str,
    body: String,
) -> (StatusCode, String, String, String) {
    let req = no_redirects()
        .post(format!("{}{path}", app.base))
        .header("content-type", content_type)
        .body(body);
    let r = who.apply(app, req).send().await.unwrap();
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (location, content_type) = (header("location"), header("content-type"));
    (r.status(), location, content_type, r.text().await.unwrap())
}

#[tokio::test]
async fn the_operation_page_forms_post_notes_and_reconciliations_and_go_back() {
    let app = signed_in().await;
    let (session, mutation) = ("chat 42/x", "op:1");
    app.settled(session, "t", mutation, "outcome_unknown").await;
    let signed = sign_in(&app).await;
    let page = format!("/sessions/{}/operations/{}", enc(session), enc(mutation));
    let back = "/sessions/chat%2042%2Fx/operations/op%3A1";
    assert_eq!(page, back);

    // A note: 303 back to the operation page, recorded as the staff member.
    let (s, location, _, _) = post_form(
        &app,
        Who::Cookie(&signed),
        &format!("{page}/notes"),
        &[("text", "asked support to check")],
    )
    .await;
    assert_eq!((s, location.as_str()), (StatusCode::SEE_OTHER, back));
    let (_, h) = get(&app, Who::Bearer(TOKEN), &history_path(session, mutation)).await;
    let last = h["changes"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (
            last["kind"].as_str(),
            last["actor"].as_str(),
            last["note"].as_str()
        ),
        (
            Some("note"),
            Some("staff:ada"),
            Some("asked support to check")
        )
    );

    // Refusals: a page saying what is wrong, with the status, linking back; nothing changed.
    let before = snapshot(&app, session, "t", mutation).await;
    let good = [
        ("attempt_id", "a1"),
        ("completed", "true"),
        ("source", "codehost-status"),
        ("reference", "issue #419"),
        ("observed_at", "2026-11-29T10:00:00Z"),
        ("provider_status", ""),
    ];
    let with = |field: &str, value: &'static str| {
        let mut f = good.to_vec();
        for p in f.iter_mut() {
            if p.0 == field {
                p.1 = value;
            }
        }
        f
    };
    let too_long = "a".repeat(4097);
    let refusals: Vec<(&str, Fields, StatusCode, &str)> = vec![
        (
            "notes",
            vec![("text", "")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "1 to 4096 bytes",
        ),
        (
            "notes",
            vec![("text", too_long.as_str())],
            StatusCode::UNPROCESSABLE_ENTITY,
            "1 to 4096 bytes",
        ),
        (
            "reconciliation",
            with("attempt_id", "a0"),
            StatusCode::CONFLICT,
            "another attempt",
        ),
        (
            "reconciliation",
            with("source", ""),
            StatusCode::UNPROCESSABLE_ENTITY,
            "where the evidence comes from",
        ),
        (
            "reconciliation",
            with("reference", ""),
            StatusCode::UNPROCESSABLE_ENTITY,
            "reference",
        ),
        (
            "reconciliation",
            with("observed_at", "29/11/2026"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "RFC 3339",
        ),
        (
            "reconciliation",
            with("completed", "maybe"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "completed or was not executed",
        ),
        (
            "reconciliation",
            with("provider_status", "pending"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "not conclusive",
        ),
    ];
    for (action, fields, status, words) in &refusals {
        let (s, location, content_type, body) = post_form(
            &app,
            Who::Cookie(&signed),
            &format!("{page}/{action}"),
            fields,
        )
        .await;
        assert_eq!(s, *status, "{action} {fields:?}: {body}");
        assert_eq!(location, "");
        assert!(content_type.starts_with("text/html"), "{content_type}");
        assert!(body.contains(words), "{action} {fields:?}: {body}");
        assert!(body.contains("Nothing was changed."));
        assert!(body.contains(&format!("href=\"{back}\"")), "{body}");
        // The form again, filled in with what was typed (a reload of the operation page would not be),
        // posting where the page's form posts.
        assert!(
            body.contains(&format!("action=\"{back}/{action}\"")),
            "{action} {fields:?}: {body}"
        );
        for (name, value) in fields.iter() {
            let value = value.replace('&', "&amp;").replace('"', "&quot;");
            let kept = match *name {
                "text" => format!(">{value}</textarea>"),
                "completed" if matches!(value.as_str(), "true" | "false") => {
                    format!("value=\"{value}\" required checked")
                }
                "completed" | "provider_status" if value.is_empty() => continue,
                "completed" => continue,
                _ => format!("name=\"{name}\""),
            };
            assert!(body.contains(&kept), "{action} {name}: {kept} in {body}");
            if !value.is_empty() && !matches!(*name, "completed" | "text") {
                assert!(
                    body.contains(&format!("value=\"{value}\"")),
                    "{action} {name}={value}: {body}"
                );
            }
        }
        assert_eq!(snapshot(&app, session, "t", mutation).await, before);
    }
    // The problem is said next to the field it is about, which is marked invalid.
    let (s, _, _, body) = post_form(
        &app,
        Who::Cookie(&signed),
        &format!("{page}/reconciliation"),
        &with("observed_at", "29/11/2026"),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body.contains(r#"aria-invalid="true" aria-describedby="observed-at-error""#),
        "{body}"
    );
    assert!(
        body.contains(r#"<span id="observed-at-error" role="alert""#),
        "{body}"
    );
    // The time observed at the provider is never guessed: an empty or missing one is refused, naming it.
    for fields in [with("observed_at", ""), with("observed_at", "  ")] {
        let (s, _, _, body) = post_form(
            &app,
            Who::Cookie(&signed),
            &format!("{page}/reconciliation"),
            &fields,
        )
        .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(
            body.contains("Enter when you observed it at the provider"),
            "{body}"
        );
        assert!(body.contains(r#"value="issue #419""#), "{body}");
    }
    let mut body = json!({"attempt_id": "a1", "completed": true,
        "evidence": {"source": "codehost-status", "reference": "issue #419"}});
    let (s, e) = post(
        &app,
        Who::Cookie(&signed),
        &reconciliation(session, mutation),
        body.clone(),
    )
    .await;
    assert_eq!(
        (s, e["error"]["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("evidence.observed_at")
        ),
        "{e}"
    );
    body["evidence"]["observed_at"] = json!("");
    let (s, e) = post(
        &app,
        Who::Cookie(&signed),
        &reconciliation(session, mutation),
        body,
    )
    .await;
    assert_eq!(
        (s, e["error"]["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("evidence.observed_at")
        ),
        "{e}"
    );
    assert_eq!(snapshot(&app, session, "t", mutation).await, before);
    // A form is read strictly: a byte that is not UTF-8 once percent-decoded is refused (never replaced
    // by U+FFFD), so is a field given twice, or another media type; the media type's case does not matter.
    for (content_type, body, status, words) in [
        (
            "application/x-www-form-urlencoded",
            "text=a%FF%FEb",
            StatusCode::BAD_REQUEST,
            "not UTF-8",
        ),
        (
            "application/x-www-form-urlencoded",
            "text=a&text=b",
            StatusCode::BAD_REQUEST,
            "could not be read",
        ),
        (
            "text/plain",
            "text=a",
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "application/x-www-form-urlencoded",
        ),
    ] {
        let (s, _, _, page_body) = post_page(
            &app,
            Who::Cookie(&signed),
            &format!("{page}/notes"),
            content_type,
            body.to_owned(),
        )
        .await;
        assert_eq!(s, status, "{body}: {page_body}");
        assert!(page_body.contains(words), "{body}: {page_body}");
        assert!(page_body.contains("Nothing was changed."));
        assert_eq!(snapshot(&app, session, "t", mutation).await, before);
    }
    let (s, location, _, _) = post_page(
        &app,
        Who::Cookie(&signed),
        &format!("{page}/notes"),
        "Application/X-WWW-Form-Urlencoded; charset=UTF-8",
        "text=caf%C3%A9".to_owned(),
    )
    .await;
    assert_eq!((s, location.as_str()), (StatusCode::SEE_OTHER, back));
    let (_, h) = get(&app, Who::Bearer(TOKEN), &history_path(session, mutation)).await;
    assert_eq!(
        h["changes"].as_array().unwrap().last().unwrap()["note"],
        "café"
    );
    let before = snapshot(&app, session, "t", mutation).await;
    // Unknown operation: 404 page. Not staff: 403 page. No Origin: the middleware's 403.
    let (s, _, _, body) = post_form(
        &app,
        Who::Cookie(&signed),
        &format!("/sessions/{}/operations/nope/notes", enc(session)),
        &[("text", "x")],
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(body.contains("no such operation"), "{body}");
    let own_viewer = viewer(&app, session).await;
    for who in [Who::Cookie(&own_viewer), Who::Bearer(TOKEN)] {
        let (s, _, _, body) =
            post_form(&app, who, &format!("{page}/notes"), &[("text", "x")]).await;
        assert_eq!(s, StatusCode::FORBIDDEN);
        assert!(body.contains("Only signed-in staff"), "{body}");
    }
    let (s, _, _, body) = post_form(
        &app,
        Who::CookieNoOrigin(&signed),
        &format!("{page}/notes"),
        &[("text", "x")],
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert!(body.contains("origin_mismatch"), "{body}");
    // No credential: the sign-in page, before anything is read.
    let (s, location, _, _) = post_form(
        &app,
        Who::Nobody,
        &format!("{page}/notes"),
        &[("text", "x")],
    )
    .await;
    assert_eq!(s, StatusCode::SEE_OTHER);
    assert!(location.starts_with("/sign-in?next="), "{location}");
    assert_eq!(snapshot(&app, session, "t", mutation).await, before);

    // The reconciliation itself: 303 back, the outcome completed by the staff member.
    let (s, location, _, body) = post_form(
        &app,
        Who::Cookie(&signed),
        &format!("{page}/reconciliation"),
        &good,
    )
    .await;
    assert_eq!(
        (s, location.as_str()),
        (StatusCode::SEE_OTHER, back),
        "{body}"
    );
    let (_, h) = get(&app, Who::Bearer(TOKEN), &history_path(session, mutation)).await;
    let last = h["changes"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (
            last["kind"].as_str(),
            last["actor"].as_str(),
            last["ledger_status"].as_str()
        ),
        (Some("reconciliation"), Some("staff:ada"), Some("completed"))
    );
    assert_eq!(last["evidence"]["reference"], "issue #419");
    // Once settled, the same form is a 409 page.
    let (s, _, _, body) = post_form(
        &app,
        Who::Cookie(&signed),
        &format!("{page}/reconciliation"),
        &good,
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(body.contains("already settled"), "{body}");
}

/// The hidden field `name` of a page, HTML-escaped as the page writes it.
fn hidden(name: &str, value: &str) -> String {
    let value = value
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(r#"<input type="hidden" name="{name}" value="{value}""#)
}

/// The history rows of a mutation (kind, note).
async fn rows(app: &TestApp, session: &str, mutation: &str) -> Vec<(String, Option<String>)> {
    let (_, h) = get(app, Who::Bearer(TOKEN), &history_path(session, mutation)).await;
    h["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["note"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_form_sent_after_the_sign_in_ended_comes_back_filled_after_signing_in_and_is_sent_once() {
    for access in [AccessArg::SignedIn, AccessArg::Auto] {
        let app = with_staff(|a| a.access = access).await;
        let (session, mutation) = ("chat 42/x", "op:1");
        app.settled(session, "t", mutation, "outcome_unknown").await;
        let page = format!("/sessions/{}/operations/{}", enc(session), enc(mutation));
        let before = rows(&app, session, mutation).await;
        // A sign-in that ended (idle, signed out elsewhere): its cookie names nothing live.
        let signed = sign_in(&app).await;
        let r = no_redirects()
            .post(format!("{}/sign-out", app.base))
            .header("cookie", &signed)
            .header("origin", &app.base)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        let note = "Asked payments \"support\" <b>& waited</b>";
        let (s, location, content_type, body) = post_form(
            &app,
            Who::Cookie(&signed),
            &format!("{page}/notes"),
            &[("text", note)],
        )
        .await;
        // The sign-in page, keeping the note: nothing was saved.
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{access:?}: {body}");
        assert_eq!(location, "");
        assert!(content_type.starts_with("text/html"));
        assert!(
            body.contains(r#"<form method="post" action="/sign-in""#),
            "{body}"
        );
        assert!(
            body.contains("your note was not saved. It is kept"),
            "{body}"
        );
        assert!(
            body.contains(&hidden("pending_action", &format!("{page}/notes"))),
            "{body}"
        );
        assert!(body.contains(&hidden("pending_text", note)), "{body}");
        assert!(!body.contains("Bearer"), "{body}");
        assert_eq!(rows(&app, session, mutation).await, before);

        // A wrong password keeps it too.
        let fields = |password: &'static str, action: String| {
            vec![
                ("name", STAFF.to_owned()),
                ("password", password.to_owned()),
                ("next", page.clone()),
                ("pending_action", action),
                ("pending_text", note.to_owned()),
            ]
        };
        let send = |fields: Vec<(&'static str, String)>| {
            let body = form(
                &fields
                    .iter()
                    .map(|(k, v)| (*k, v.as_str()))
                    .collect::<Vec<_>>(),
            );
            no_redirects()
                .post(format!("{}/sign-in", app.base))
                .header("origin", &app.base)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
        };
        let r = send(fields("wrong", format!("{page}/notes")))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let body = r.text().await.unwrap();
        assert!(
            body.contains("The name or the password is wrong."),
            "{body}"
        );
        assert!(body.contains(&hidden("pending_text", note)), "{body}");

        // Signing in: the note form again, filled in, for the person to check and send; not sent yet.
        let r = send(fields(PASSWORD, format!("{page}/notes")))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let cookie = r.headers()["set-cookie"].to_str().unwrap();
        let fresh = cookie.split(';').next().unwrap().to_owned();
        assert!(fresh.starts_with("outcomes_sign_in="), "{fresh}");
        let body = r.text().await.unwrap();
        assert!(
            body.contains("Signed in as ada. Your note is not saved yet."),
            "{body}"
        );
        assert!(
            body.contains(&format!(r#"<form method="post" action="{page}/notes""#)),
            "{body}"
        );
        assert!(
            body.contains("Asked payments \"support\" &lt;b&gt;&amp; waited&lt;/b&gt;</textarea>"),
            "{body}"
        );
        assert!(!body.contains("<b>"), "{body}");
        assert!(body.contains(&format!(r#"href="{page}""#)), "{body}");
        assert_eq!(rows(&app, session, mutation).await, before);
        // Sent once, by the person: one note.
        let (s, location, _, _) = post_form(
            &app,
            Who::Cookie(&fresh),
            &format!("{page}/notes"),
            &[("text", note)],
        )
        .await;
        assert_eq!(
            (s, location.as_str()),
            (StatusCode::SEE_OTHER, page.as_str())
        );
        let after = rows(&app, session, mutation).await;
        assert_eq!(after.len(), before.len() + 1);
        assert_eq!(
            after.last().unwrap(),
            &("note".to_owned(), Some(note.to_owned()))
        );

        // A reconciliation keeps every field it had.
        let typed = [
            ("attempt_id", "a1"),
            ("completed", "false"),
            ("source", "payments-api"),
            ("reference", "refund re_1"),
            ("observed_at", "2026-12-01T18:30:00Z"),
            ("provider_status", ""),
        ];
        let (s, _, _, body) = post_form(
            &app,
            Who::Cookie(&signed),
            &format!("{page}/reconciliation"),
            &typed,
        )
        .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{body}");
        for (k, v) in typed {
            assert!(
                body.contains(&hidden(&format!("pending_{k}"), v)),
                "{k}: {body}"
            );
        }
        let mut again: Vec<(&str, &str)> =
            vec![("name", STAFF), ("password", PASSWORD), ("next", "/")];
        let action = format!("{page}/reconciliation");
        again.push(("pending_action", action.as_str()));
        let pending: Vec<(String, &str)> = typed
            .iter()
            .map(|(k, v)| (format!("pending_{k}"), *v))
            .collect();
        again.extend(pending.iter().map(|(k, v)| (k.as_str(), *v)));
        let r = no_redirects()
            .post(format!("{}/sign-in", app.base))
            .header("origin", &app.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&again))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let body = r.text().await.unwrap();
        assert!(
            body.contains("The outcome is not reconciled yet."),
            "{body}"
        );
        for needle in [
            r#"value="payments-api""#,
            r#"value="refund re_1""#,
            r#"value="2026-12-01T18:30:00Z""#,
            r#"value="false" checked"#,
            r#"name="attempt_id" value="a1""#,
        ] {
            assert!(body.contains(needle), "{needle}: {body}");
        }
        assert_eq!(rows(&app, session, mutation).await, after);

        // A form that names anything but an operator form of this server is not kept: the usual 303.
        for elsewhere in [
            "/sign-out".to_owned(),
            "https://evil.example/sessions/a/operations/m/notes".to_owned(),
            format!("{page}/other"),
            "/api/sessions/a/mutations/m/notes".to_owned(),
        ] {
            let r = send(fields(PASSWORD, elsewhere.clone())).await.unwrap();
            assert_eq!(r.status(), StatusCode::SEE_OTHER, "{elsewhere}");
            assert_eq!(r.headers()["location"], page.as_str(), "{elsewhere}");
        }
        // From another site (no matching Origin) nothing is kept: the sign-in page as before (reads
        // closed) or the refusal (open access).
        let (s, location, _, body) = post_form(
            &app,
            Who::CookieNoOrigin(&signed),
            &format!("{page}/notes"),
            &[("text", note)],
        )
        .await;
        assert!(!body.contains("pending_text"), "{body}");
        match access {
            AccessArg::SignedIn => {
                assert_eq!(s, StatusCode::SEE_OTHER);
                assert!(location.starts_with("/sign-in?next="), "{location}");
            }
            _ => assert_eq!(s, StatusCode::FORBIDDEN, "{body}"),
        }
        assert_eq!(rows(&app, session, mutation).await, after);
    }
}

#[tokio::test]
async fn a_get_on_a_form_path_goes_to_its_operation_page() {
    let app = signed_in().await;
    let (session, mutation) = ("chat 42/x", "op:1");
    app.settled(session, "t", mutation, "outcome_unknown").await;
    let signed = sign_in(&app).await;
    let page = format!("/sessions/{}/operations/{}", enc(session), enc(mutation));
    for action in ["notes", "reconciliation"] {
        // Signed in (where a sign-in that began on a form comes back to): the operation page.
        let r = no_redirects()
            .get(format!("{}{page}/{action}", app.base))
            .header("cookie", &signed)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{action}");
        assert_eq!(r.headers()["location"], page.as_str());
        // Without a credential: the sign-in page first.
        let r = no_redirects()
            .get(format!("{}{page}/{action}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        assert!(r.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with("/sign-in?next="));
    }
}

// ---------------------------------------------------------------------------------------------------
// Export
// ---------------------------------------------------------------------------------------------------

/// `GET <path>` with the host token: status, headers and the body as text.
async fn get_text(
    app: &TestApp,
    who: Who<'_>,
    path: &str,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let r = who
        .apply(app, no_redirects().get(format!("{}{path}", app.base)))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let headers = r.headers().clone();
    (status, headers, r.text().await.unwrap())
}

fn lines(body: &str) -> Vec<Value> {
    assert!(
        body.is_empty() || body.ends_with('\n'),
        "every line ends: {body:?}"
    );
    body.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

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
    let other = viewer(&app, "other").await;
    let (s, v) = get(&app, Who::CookieNoOrigin(&other), &path).await;
    assert_eq!(
        (s, error(s, &v).1),
        (StatusCode::NOT_FOUND, Some("session_not_found"))
    );
    let own = viewer(&app, key).await;
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
