//! Requests of the operator-action tests (docs/api.md "Operator actions"): who sends them ([`Who`]), the
//! sign-in and viewer cookies, the operator paths, and what a refusal must leave as it was.

use reqwest::StatusCode;
use serde_json::{json, Value};
use server::serve::AccessArg;

use super::access::plain;
use super::{enc, server, TestApp, TOKEN};

/// A server in signed-in mode with staff account `ada`.
pub async fn signed_in() -> TestApp {
    server(AccessArg::SignedIn).await
}

/// How a request is authenticated.
#[derive(Clone, Copy)]
pub enum Who<'a> {
    Nobody,
    Bearer(&'a str),
    /// A cookie, sent with `Origin: <the server>`.
    Cookie(&'a str),
    /// A cookie without `Origin`.
    CookieNoOrigin(&'a str),
}

impl Who<'_> {
    pub fn apply(self, app: &TestApp, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Who::Nobody => req,
            Who::Bearer(t) => req.bearer_auth(t),
            Who::Cookie(c) => req.header("cookie", c).header("origin", &app.base),
            Who::CookieNoOrigin(c) => req.header("cookie", c),
        }
    }
}

/// `POST <path>` with a raw JSON body; status and body (Null when not JSON).
pub async fn post_raw(app: &TestApp, who: Who<'_>, path: &str, body: &str) -> (StatusCode, Value) {
    let req = plain()
        .post(format!("{}{path}", app.base))
        .header("content-type", "application/json")
        .body(body.to_owned());
    let r = who.apply(app, req).send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

pub async fn post(app: &TestApp, who: Who<'_>, path: &str, body: Value) -> (StatusCode, Value) {
    post_raw(app, who, path, &body.to_string()).await
}

/// `GET <path>` as `who`, redirects not followed: the response.
async fn get_as(app: &TestApp, who: Who<'_>, path: &str) -> reqwest::Response {
    who.apply(app, plain().get(format!("{}{path}", app.base)))
        .send()
        .await
        .unwrap()
}

/// GET with `who`: status and JSON body.
pub async fn get(app: &TestApp, who: Who<'_>, path: &str) -> (StatusCode, Value) {
    let r = get_as(app, who, path).await;
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

pub fn notes(session: &str, mutation: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/notes",
        enc(session),
        enc(mutation)
    )
}

pub fn reconciliation(session: &str, mutation: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/reconciliation",
        enc(session),
        enc(mutation)
    )
}

pub fn history_path(session: &str, mutation: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/history",
        enc(session),
        enc(mutation)
    )
}

pub fn claim_path(session: &str, mutation: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/claim",
        enc(session),
        enc(mutation)
    )
}

/// A second staff member, `bob`, and a staff token of theirs.
pub async fn bob(app: &TestApp) -> String {
    app.add_staff("bob", "bob's long password").await;
    app.staff_token_of("bob").await
}

/// DELETE with `who`: status and JSON body (Null when not JSON).
pub async fn delete(app: &TestApp, who: Who<'_>, path: &str) -> (StatusCode, Value) {
    let r = who
        .apply(app, plain().delete(format!("{}{path}", app.base)))
        .send()
        .await
        .unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Everything a refusal must leave as it was: the operation's history and its turn's entries (with the
/// latest revision) and the session's turns (with its last activity).
pub async fn snapshot(app: &TestApp, session: &str, turn: &str, mutation: &str) -> Value {
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
pub type Refusal<'a> = (StatusCode, Option<&'a str>, Option<&'a str>);

pub fn error(status: StatusCode, body: &Value) -> Refusal<'_> {
    (
        status,
        body["error"]["code"].as_str(),
        body["error"]["field"].as_str(),
    )
}

pub fn evidence_body(attempt: &str) -> Value {
    json!({"attempt_id": attempt, "completed": true, "evidence": {
        "source": "codehost-status", "reference": "issue #419", "observed_at": "2026-11-29T10:00:00Z"}})
}

/// `history` as a viewer must read it: no `note` rows, every `staff:<name>` actor as `staff`, evidence
/// with `observed_at` only (no `source`, `reference` or `provider_status`).
pub fn as_viewer_reads(history: &Value) -> Value {
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
            // A reconciliation's evidence: when it was observed, without its free text.
            if let Some(e) = c["evidence"].as_object_mut() {
                e.retain(|k, _| k == "observed_at");
            }
            c
        })
        .collect();
    h["changes"] = Value::Array(changes);
    h
}

/// `GET <path>` as `who`: status, headers and the body as text.
pub async fn get_text(
    app: &TestApp,
    who: Who<'_>,
    path: &str,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let r = get_as(app, who, path).await;
    let status = r.status();
    let headers = r.headers().clone();
    (status, headers, r.text().await.unwrap())
}

pub fn lines(body: &str) -> Vec<Value> {
    assert!(
        body.is_empty() || body.ends_with('\n'),
        "every line ends: {body:?}"
    );
    body.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}
