//! Hostile text in every string a client sends, on both backends alike (docs/api.md "Text a client
//! sends"): U+0000 (NUL, which a Postgres `text` cannot hold), a lone surrogate escape (`"\ud800"`, which
//! is not a character) and 1 MiB, in every JSON body field, form field, path segment, query parameter and
//! cursor. Each answers a 4xx (never a 5xx) that names the field where the answer is JSON, or a readable
//! page, and changes nothing; the few values the contract accepts (host metadata is sanitised, evidence has
//! no length limit) are stored alike on both backends. A sign-in whose name holds NUL is a failed
//! sign-in, counted toward the failed-credential limit. The suite runs on Postgres when
//! `OUTCOMES_TEST_POSTGRES` is set (docs/ledger.md "Tests"), as every other.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::http::cursor::Position;
use server::serve::AccessArg;

use crate::helpers::access::{fresh_ip, post_sign_in};
use crate::helpers::{client_at, form, with_staff, TestApp, PASSWORD, STAFF, TOKEN};

const MIB: usize = 1 << 20;

/// The three hostile strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hostile {
    /// `a` U+0000 `b`.
    Nul,
    /// `a`, the lone high surrogate U+D800 (JSON `\ud800`; in a URL its CESU-8 bytes `%ED%A0%80`, which
    /// are not UTF-8), `b`.
    Surrogate,
    /// 1 MiB of `x`.
    Mib,
}

use Hostile::{Mib, Nul, Surrogate};

const ALL: [Hostile; 3] = [Nul, Surrogate, Mib];

impl Hostile {
    /// As a JSON string literal.
    fn json(self) -> String {
        match self {
            Nul => r#""a\u0000b""#.to_owned(),
            Surrogate => r#""a\ud800b""#.to_owned(),
            Mib => format!("\"{}\"", "x".repeat(MIB)),
        }
    }

    /// Percent-encoded, for a path segment, a query value or a form field.
    fn encoded(self) -> String {
        match self {
            Nul => "a%00b".to_owned(),
            Surrogate => "a%ED%A0%80b".to_owned(),
            Mib => "x".repeat(MIB),
        }
    }
}

/// What came back: the status and, for a JSON error, its `code` and `field` (for a batch, those of its
/// first result). A page (HTML) has neither.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    status: u16,
    code: Option<String>,
    field: Option<String>,
}

/// An answer: `code` and `field` empty for none.
fn a(status: u16, code: &str, field: &str) -> Answer {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    Answer {
        status,
        code: some(code),
        field: some(field),
    }
}

/// 422 `invalid_field` naming `field`.
fn invalid(field: &str) -> Answer {
    a(422, "invalid_field", field)
}

/// 400 `malformed_json`: what a lone surrogate escape makes of any JSON body.
fn malformed() -> Answer {
    a(400, "malformed_json", "")
}

/// A page (or a JSON answer without an error) with `status`.
fn page(status: u16) -> Answer {
    a(status, "", "")
}

/// The answer a request over the server's header size gets: hyper's own 431, answered as JSON by
/// `server::http::malformed` (docs/api.md).
fn head_too_large() -> Answer {
    a(431, "headers_too_large", "")
}

async fn answer_of(r: reqwest::Response, batch: bool) -> Answer {
    let status = r.status().as_u16();
    let is_json = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let text = r.text().await.unwrap_or_default();
    let v: Value = if is_json {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let (status, e) = if batch && status == 200 {
        let first = &v["results"][0];
        (
            u16::try_from(first["status"].as_u64().unwrap_or(0)).unwrap(),
            first["error"].clone(),
        )
    } else {
        (status, v["error"].clone())
    };
    Answer {
        status,
        code: e["code"].as_str().map(str::to_owned),
        field: e["field"].as_str().map(str::to_owned),
    }
}

/// Sends a request over a plain TCP connection (a target of 1 MiB, which the HTTP client refuses to
/// build) and reads the answer until the server closes: its status and JSON error.
async fn raw_answer(
    app: &TestApp,
    method: &Method,
    target: &str,
    bearer: &str,
    body: &str,
) -> Answer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = app.base.trim_start_matches("http://");
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    if !bearer.is_empty() {
        head.push_str(&format!("Authorization: Bearer {bearer}\r\n"));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let mut s = tokio::net::TcpStream::connect(host).await.unwrap();
    // A long request may be refused before it is all read: the write then fails, the answer is there.
    let _ = s.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let Some((head, body)) = answer.split_once("\r\n\r\n") else {
        return Answer {
            status: 0,
            code: Some(format!("no answer: {:?}", &answer[..answer.len().min(200)])),
            field: None,
        };
    };
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let e = serde_json::from_str::<Value>(body).unwrap_or(Value::Null)["error"].clone();
    Answer {
        status,
        code: e["code"].as_str().map(str::to_owned),
        field: e["field"].as_str().map(str::to_owned),
    }
}

/// Sends `body` (raw) to `path` with the bearer (none when empty) and `content_type` (none when
/// empty), from `client` (a target too long for it: [`raw_answer`]). For `POST /api/host/batch`, the
/// answer of its first result when it answers 200.
async fn send_raw(
    app: &TestApp,
    client: &reqwest::Client,
    method: Method,
    path: &str,
    bearer: &str,
    content_type: &str,
    body: String,
) -> Answer {
    if path.len() > 60_000 {
        return raw_answer(app, &method, path, bearer, &body).await;
    }
    let mut req = client
        .request(method, format!("{}{path}", app.base))
        .body(body);
    if !bearer.is_empty() {
        req = req.bearer_auth(bearer);
    }
    if !content_type.is_empty() {
        req = req.header("content-type", content_type);
    }
    match req.send().await {
        // A batch's answer is its first result's.
        Ok(r) => answer_of(r, path == "/api/host/batch").await,
        // The connection closed without an answer (never expected: the table says what is).
        Err(e) => Answer {
            status: 0,
            code: Some(format!("no answer: {e:?}").chars().take(300).collect()),
            field: None,
        },
    }
}

/// A client from 127.0.0.1 that does not follow redirects.
fn plain() -> reqwest::Client {
    crate::helpers::access::plain()
}

/// Everything the ledger holds of session `s` as the host reads it (the sessions list, and the export
/// with every operation's history: notes and claims included).
async fn ledger_state(app: &TestApp) -> Value {
    let get = |path: &'static str| async move {
        let r = app
            .client
            .get(format!("{}{path}", app.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    };
    json!({
        "sessions": get("/api/sessions").await,
        "export": get("/api/sessions/s/export?history=true").await,
    })
}

/// A server (reads closed, staff `ada`) whose session `s` holds an entry in each state the operations
/// need: `fresh` (approved), `running` (in flight, attempt `a1`), `unknown` (outcome unknown, `a1`), `done`
/// (completed), `cancelled` (not executed); and a staff API token.
async fn prepared() -> (TestApp, String) {
    let app = with_staff(|a| a.access = AccessArg::SignedIn).await;
    assert_eq!(app.approve("s", "t", "fresh").await.0, StatusCode::CREATED);
    app.start("s", "t", "running").await;
    app.settled("s", "t", "unknown", "outcome_unknown").await;
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

/// Sets the value at `path` (`evidence.source`, `operations[0].op`) of `v` to `to`.
fn set_at(v: &mut Value, path: &str, to: Value) {
    let mut cur = v;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, i)) => (k, Some(i.trim_end_matches(']').parse::<usize>().unwrap())),
            None => (part, None),
        };
        if !key.is_empty() {
            cur = &mut cur[key];
        }
        if let Some(i) = index {
            cur = &mut cur[i];
        }
    }
    *cur = to;
}

/// `template` as JSON text with the string at `field` replaced by `h`'s JSON literal.
fn body_with(template: &Value, field: &str, h: Hostile) -> String {
    const MARK: &str = "@@hostile@@";
    let mut v = template.clone();
    set_at(&mut v, field, json!(MARK));
    let text = v.to_string();
    assert_eq!(text.matches(MARK).count(), 1, "{field}");
    text.replace(&format!("\"{MARK}\""), &h.json())
}

fn evidence() -> Value {
    json!({"source": "p", "reference": "r", "observed_at": "2026-11-29T10:00:00Z", "provider_status": "completed"})
}

fn reconcile_body() -> Value {
    json!({"attempt_id": "a1", "completed": true, "evidence": evidence()})
}

/// The answers of one string field: to NUL and to 1 MiB (a lone surrogate escape is always 400
/// `malformed_json`: serde_json refuses it as malformed JSON, so it never reaches a field).
struct JsonCase {
    method: Method,
    path: &'static str,
    staff: bool,
    template: Value,
    field: &'static str,
    nul: Answer,
    mib: Answer,
}

/// Adds a case per `(field, answer to NUL, answer to 1 MiB)` of `fields` (an answer of status 0: the
/// value is accepted, tested on its own).
fn push(
    cases: &mut Vec<JsonCase>,
    method: Method,
    path: &'static str,
    staff: bool,
    template: Value,
    fields: &[(&'static str, Answer, Answer)],
) {
    for (field, nul, mib) in fields {
        cases.push(JsonCase {
            method: method.clone(),
            path,
            staff,
            template: template.clone(),
            field,
            nul: nul.clone(),
            mib: mib.clone(),
        });
    }
}

fn json_cases() -> Vec<JsonCase> {
    let mut cases = Vec::new();
    let id = |f: &'static str| (f, invalid(f), invalid(f));
    // In a batch item, the error names the field as the single call does.
    let item_field = |f: &'static str, named: &'static str| (f, invalid(named), invalid(named));
    let accepted = page(0);
    push(
        &mut cases,
        Method::POST,
        "/api/host/sessions/s/mutations",
        false,
        json!({"logical_turn_id": "t", "mutation_id": "new1", "tool": "x", "commissioned_after": "fresh"}),
        &[
            id("logical_turn_id"),
            id("mutation_id"),
            id("tool"),
            id("commissioned_after"),
        ],
    );
    push(
        &mut cases,
        Method::POST,
        "/api/host/sessions/s/mutations/fresh/intent",
        false,
        json!({"attempt_id": "a1"}),
        &[id("attempt_id")],
    );
    push(
        &mut cases,
        Method::POST,
        "/api/host/sessions/s/mutations/running/settlement",
        false,
        json!({"attempt_id": "a1", "status": "outcome_unknown", "reason": "execution_timeout"}),
        &[id("attempt_id"), id("status"), id("reason")],
    );
    push(
        &mut cases,
        Method::POST,
        "/api/host/sessions/s/mutations/running/cancellation",
        false,
        json!({"attempt_id": "a1", "reason": "pre_dispatch_deadline"}),
        &[id("attempt_id"), id("reason")],
    );
    // 1 MiB of evidence is accepted (no length rule): `a_mebibyte_of_evidence_is_stored_alike`.
    let reconcile_fields = [
        id("attempt_id"),
        (
            "evidence.source",
            invalid("evidence.source"),
            accepted.clone(),
        ),
        (
            "evidence.reference",
            invalid("evidence.reference"),
            accepted.clone(),
        ),
        id("evidence.observed_at"),
        id("evidence.provider_status"),
    ];
    for (path, staff) in [
        (
            "/api/host/sessions/s/mutations/unknown/reconciliation",
            false,
        ),
        ("/api/sessions/s/mutations/unknown/reconciliation", true),
    ] {
        push(
            &mut cases,
            Method::POST,
            path,
            staff,
            reconcile_body(),
            &reconcile_fields,
        );
    }
    push(
        &mut cases,
        Method::POST,
        "/api/host/sessions/s/mutations/cancelled/attempts",
        false,
        json!({"attempt_id": "a2"}),
        &[id("attempt_id")],
    );
    // A number field sent a string: the type is wrong, whatever the string.
    push(
        &mut cases,
        Method::POST,
        "/api/host/sessions/s/viewer-links",
        false,
        json!({"expires_in_secs": 60}),
        &[id("expires_in_secs")],
    );
    let mut item = reconcile_body();
    item["op"] = json!("reconcile");
    item["session_key"] = json!("s");
    item["mutation_id"] = json!("unknown");
    push(
        &mut cases,
        Method::POST,
        "/api/host/batch",
        false,
        json!({"operations": [item]}),
        &[
            item_field("operations[0].op", "op"),
            item_field("operations[0].session_key", "session_key"),
            item_field("operations[0].mutation_id", "mutation_id"),
            item_field("operations[0].attempt_id", "attempt_id"),
            (
                "operations[0].evidence.source",
                invalid("evidence.source"),
                accepted.clone(),
            ),
            (
                "operations[0].evidence.reference",
                invalid("evidence.reference"),
                accepted.clone(),
            ),
            item_field("operations[0].evidence.observed_at", "evidence.observed_at"),
            item_field(
                "operations[0].evidence.provider_status",
                "evidence.provider_status",
            ),
        ],
    );
    push(
        &mut cases,
        Method::POST,
        "/api/host/batch",
        false,
        json!({"operations": [{"op": "approve", "session_key": "s", "mutation_id": "new2", "logical_turn_id": "t", "tool": "x", "commissioned_after": "fresh"}]}),
        &[
            item_field("operations[0].logical_turn_id", "logical_turn_id"),
            item_field("operations[0].tool", "tool"),
            item_field("operations[0].commissioned_after", "commissioned_after"),
        ],
    );
    push(
        &mut cases,
        Method::POST,
        "/api/sessions/s/mutations/unknown/notes",
        true,
        json!({"text": "x"}),
        &[id("text")],
    );
    cases
}

/// Every string field of every JSON body, host API and operator actions: NUL is a 422 naming the field
/// (a write's identifier, an enum, evidence, a note), a lone surrogate escape 400 `malformed_json`, 1 MiB
/// a 422 for its length or shape; nothing changes, and the answers are the same on both backends. 1 MiB
/// of evidence is accepted (`a_mebibyte_of_evidence_is_stored_alike`), host metadata sanitised
/// (`host_metadata_holding_nul_is_sanitised_alike`).
#[tokio::test]
async fn every_json_string_field_refuses_nul_surrogates_and_megabytes_alike() {
    let (app, staff) = prepared().await;
    let before = ledger_state(&app).await;
    let c = plain();
    let mut wrong = Vec::new();
    for case in json_cases() {
        let bearer = if case.staff { staff.as_str() } else { TOKEN };
        for h in ALL {
            let expected = match h {
                Nul => case.nul.clone(),
                Surrogate => malformed(),
                Mib => case.mib.clone(),
            };
            if expected.status == 0 {
                continue;
            }
            let body = body_with(&case.template, case.field, h);
            let got = send_raw(
                &app,
                &c,
                case.method.clone(),
                case.path,
                bearer,
                "application/json",
                body,
            )
            .await;
            if got != expected {
                wrong.push(format!(
                    "{} {} {} {h:?}: got {got:?}, expected {expected:?}",
                    case.method, case.path, case.field
                ));
            }
        }
    }
    // Host metadata: only the surrogate is refused (the rest is sanitised).
    for field in ["id", "url", "title"] {
        let got = send_raw(
            &app,
            &c,
            Method::PUT,
            "/api/host/sessions/s/mutations/done/metadata",
            TOKEN,
            "application/json",
            body_with(
                &json!({"id": "d", "url": "https://h.example/d", "title": "T"}),
                field,
                Surrogate,
            ),
        )
        .await;
        if got != malformed() {
            wrong.push(format!("metadata {field}: got {got:?}"));
        }
    }
    // A key holding NUL is a key no body has: ignored like any unknown key (the intent is then a
    // redelivery of `done`'s, refused with 409 as without it).
    let got = send_raw(
        &app,
        &c,
        Method::POST,
        "/api/host/sessions/s/mutations/done/intent",
        TOKEN,
        "application/json",
        r#"{"attempt_id":"a1","a\u0000b":"c\u0000d"}"#.to_owned(),
    )
    .await;
    if got != a(409, "already_recorded", "") {
        wrong.push(format!("a key holding NUL: got {got:?}"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(ledger_state(&app).await, before);
}

/// The full body of the new refusal, for the host API, a batch item and a staff note.
#[tokio::test]
async fn nul_in_evidence_or_a_note_is_422_naming_the_field() {
    let (app, staff) = prepared().await;
    let before = ledger_state(&app).await;
    let refusal = |field: &str| {
        json!({"error": {"code": "invalid_field",
            "message": "holds U+0000 (NUL), which the ledger never stores: remove it",
            "field": field}})
    };
    let mut body = reconcile_body();
    body["evidence"]["reference"] = json!("issue\u{0}#419");
    let (s, v) = app
        .step("s", "unknown", "reconciliation", body.clone())
        .await;
    assert_eq!(
        (s, v),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            refusal("evidence.reference")
        )
    );
    let mut item = body.clone();
    item["op"] = json!("reconcile");
    item["session_key"] = json!("s");
    item["mutation_id"] = json!("unknown");
    let (s, v) = app
        .host(
            Method::POST,
            "/api/host/batch",
            json!({"operations": [item]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v,
        json!({"results": [{"status": 422, "error": refusal("evidence.reference")["error"]}]})
    );
    let r = app
        .client
        .post(format!(
            "{}/api/sessions/s/mutations/unknown/notes",
            app.base
        ))
        .bearer_auth(&staff)
        .json(&json!({"text": "called\u{0}"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json::<Value>().await.unwrap(), refusal("text"));
    assert_eq!(ledger_state(&app).await, before);
}

/// One path segment of a request, as the router reads it: NUL names an identifier no write could have
/// stored (a write: 422 naming it; a read: unknown), bytes that are not UTF-8 are a malformed path (a
/// write: 400 `invalid_path`; a read: unknown), and 1 MiB is over the request head's limit (431).
#[tokio::test]
async fn every_path_segment_refuses_nul_surrogates_and_megabytes_alike() {
    let (app, staff) = prepared().await;
    let before = ledger_state(&app).await;
    let approve = json!({"logical_turn_id": "t", "mutation_id": "new3", "tool": "x"}).to_string();
    let intent = json!({"attempt_id": "a1"}).to_string();
    let note = json!({"text": "x"}).to_string();
    let bad_path = a(400, "invalid_path", "");
    let session_nf = a(404, "session_not_found", "session_id");
    let write = |f: &str| [invalid(f), bad_path.clone(), head_too_large()];
    // (method, path, who: host / staff / nobody, body, [NUL, surrogate, 1 MiB])
    let cases: Vec<(Method, String, &str, String, [Answer; 3])> = vec![
        (
            Method::POST,
            "/api/host/sessions/{}/mutations".into(),
            "host",
            approve.clone(),
            write("session_key"),
        ),
        (
            Method::POST,
            "/api/host/sessions/s/mutations/{}/intent".into(),
            "host",
            intent.clone(),
            write("mutation_id"),
        ),
        (
            Method::DELETE,
            "/api/host/sessions/{}".into(),
            "host",
            String::new(),
            write("session_key"),
        ),
        (
            Method::POST,
            "/api/host/sessions/{}/viewer-links".into(),
            "host",
            String::new(),
            write("session_key"),
        ),
        (
            Method::DELETE,
            "/api/host/sessions/{}/viewer-links".into(),
            "host",
            String::new(),
            write("session_key"),
        ),
        (
            Method::POST,
            "/api/sessions/s/mutations/{}/notes".into(),
            "staff",
            note.clone(),
            write("mutation_id"),
        ),
        (
            Method::POST,
            "/api/sessions/{}/mutations/unknown/reconciliation".into(),
            "staff",
            reconcile_body().to_string(),
            write("session_key"),
        ),
        (
            Method::POST,
            "/api/sessions/{}/mutations/unknown/claim".into(),
            "staff",
            String::new(),
            write("session_key"),
        ),
        (
            Method::DELETE,
            "/api/sessions/s/mutations/{}/claim".into(),
            "staff",
            String::new(),
            write("mutation_id"),
        ),
        (
            Method::GET,
            "/api/sessions/{}/turns".into(),
            "staff",
            String::new(),
            [session_nf.clone(), session_nf.clone(), head_too_large()],
        ),
        (
            Method::GET,
            "/api/sessions/s/turns/{}/entries".into(),
            "staff",
            String::new(),
            [
                a(404, "turn_not_found", ""),
                a(404, "turn_not_found", ""),
                head_too_large(),
            ],
        ),
        (
            Method::GET,
            "/api/sessions/s/mutations/{}/history".into(),
            "staff",
            String::new(),
            [
                a(404, "mutation_not_found", ""),
                a(404, "mutation_not_found", ""),
                head_too_large(),
            ],
        ),
        (
            Method::GET,
            "/api/sessions/{}/export".into(),
            "staff",
            String::new(),
            [session_nf.clone(), session_nf.clone(), head_too_large()],
        ),
        (
            Method::GET,
            "/api/operations/{}".into(),
            "staff",
            String::new(),
            [page(200), page(200), head_too_large()],
        ),
        // Pages read the API as their caller and answer its status, as a page.
        (
            Method::GET,
            "/sessions/{}".into(),
            "staff",
            String::new(),
            [page(404), page(404), head_too_large()],
        ),
        (
            Method::GET,
            "/sessions/s/turns/{}".into(),
            "staff",
            String::new(),
            [page(404), page(404), head_too_large()],
        ),
        (
            Method::GET,
            "/sessions/s/operations/{}".into(),
            "staff",
            String::new(),
            [page(404), page(404), head_too_large()],
        ),
        (
            Method::GET,
            "/operations/{}".into(),
            "staff",
            String::new(),
            [page(404), page(404), head_too_large()],
        ),
    ];
    let c = plain();
    let mut wrong = Vec::new();
    for (method, path, who, body, expected) in &cases {
        for (h, expected) in ALL.into_iter().zip(expected) {
            let path = path.replace("{}", &h.encoded());
            let bearer = match *who {
                "host" => TOKEN,
                _ => staff.as_str(),
            };
            let ct = if body.is_empty() {
                ""
            } else {
                "application/json"
            };
            let got = send_raw(&app, &c, method.clone(), &path, bearer, ct, body.clone()).await;
            if &got != expected {
                wrong.push(format!(
                    "{method} {} {h:?}: got {got:?}, expected {expected:?}",
                    &path[..path.len().min(80)]
                ));
            }
        }
    }
    // A viewer link's token: one that names nothing (a failed credential, from an address of its own).
    let viewer = client_at(fresh_ip());
    for (h, expected) in ALL
        .into_iter()
        .zip([page(404), page(404), head_too_large()])
    {
        let got = send_raw(
            &app,
            &viewer,
            Method::GET,
            &format!("/v/{}", h.encoded()),
            "",
            "",
            String::new(),
        )
        .await;
        if got != expected {
            wrong.push(format!("/v/ {h:?}: got {got:?}, expected {expected:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(ledger_state(&app).await, before);
}

/// A crafted cursor: the canonical encoding of `position` (base64url of its JSON), so only what it holds
/// is hostile.
fn crafted(position: Position) -> String {
    position.encode()
}

/// Every query parameter of the read APIs and pages, and cursors whose JSON holds NUL: identifiers that
/// could never have been stored are unknown (404) or match nothing (200, empty), text filters with a
/// control character are 400 `invalid_parameter`, a cursor holding NUL is 400 `invalid_cursor`, 1 MiB is
/// over the request head's limit (431); pages answer their read's status.
#[tokio::test]
async fn every_query_parameter_and_cursor_refuses_nul_surrogates_and_megabytes_alike() {
    let (app, staff) = prepared().await;
    let before = ledger_state(&app).await;
    let p = |f: &str| a(400, "invalid_parameter", f);
    let cursor = a(400, "invalid_cursor", "after");
    let ok = page(200);
    let big = head_too_large();
    // (path with `{}` for the value, [NUL, surrogate, 1 MiB]); a surrogate in a query is decoded as
    // U+FFFD (the query is form-decoded, replacing bytes that are not UTF-8), so it is plain text.
    let cases: Vec<(&str, [Answer; 3])> = vec![
        (
            "/api/sessions?prefix={}",
            [ok.clone(), ok.clone(), big.clone()],
        ),
        (
            "/api/sessions?tool={}",
            [ok.clone(), ok.clone(), big.clone()],
        ),
        (
            "/api/sessions?has_unknown={}",
            [p("has_unknown"), p("has_unknown"), big.clone()],
        ),
        (
            "/api/sessions?active_after={}",
            [p("active_after"), p("active_after"), big.clone()],
        ),
        (
            "/api/sessions?limit={}",
            [p("limit"), p("limit"), big.clone()],
        ),
        (
            "/api/sessions?after={}",
            [cursor.clone(), cursor.clone(), big.clone()],
        ),
        (
            "/api/unknowns?tool={}",
            [ok.clone(), ok.clone(), big.clone()],
        ),
        (
            "/api/unknowns?session_key={}",
            [ok.clone(), ok.clone(), big.clone()],
        ),
        (
            "/api/unknowns?tool_like={}",
            [p("tool_like"), ok.clone(), big.clone()],
        ),
        (
            "/api/unknowns?session_like={}",
            [p("session_like"), ok.clone(), big.clone()],
        ),
        ("/api/unknowns?sort={}", [p("sort"), p("sort"), big.clone()]),
        (
            "/api/unknowns?min_age_secs={}",
            [p("min_age_secs"), p("min_age_secs"), big.clone()],
        ),
        (
            "/api/unknowns?settled_after={}",
            [p("settled_after"), p("settled_after"), big.clone()],
        ),
        (
            "/api/unknowns?after={}",
            [cursor.clone(), cursor.clone(), big.clone()],
        ),
        ("/api/search?q={}", [p("q"), ok.clone(), big.clone()]),
        (
            "/api/search?q=x&after={}",
            [cursor.clone(), cursor.clone(), big.clone()],
        ),
        (
            "/api/mutation-outcomes?session_id={}",
            [
                a(404, "session_not_found", "session_id"),
                a(404, "session_not_found", "session_id"),
                big.clone(),
            ],
        ),
        (
            "/api/mutation-events?session_id=s&logical_turn_id={}",
            [
                a(404, "turn_not_found", ""),
                a(404, "turn_not_found", ""),
                big.clone(),
            ],
        ),
        (
            "/api/mutation-events?session_id=s&logical_turn_id=t&after={}",
            [cursor.clone(), cursor.clone(), big.clone()],
        ),
        (
            "/api/run-events?session_id={}",
            [
                a(404, "session_not_found", "session_id"),
                a(404, "session_not_found", "session_id"),
                big.clone(),
            ],
        ),
        (
            "/api/sessions/s/turns?order={}",
            [p("order"), p("order"), big.clone()],
        ),
        (
            "/api/sessions/s/turns?after={}",
            [cursor.clone(), cursor.clone(), big.clone()],
        ),
        (
            "/api/sessions/s/turns/t/entries?after={}",
            [cursor.clone(), cursor.clone(), big.clone()],
        ),
        (
            "/api/sessions/s/export?history={}",
            [p("history"), p("history"), big.clone()],
        ),
        ("/sign-in?next={}", [page(303), page(303), big.clone()]),
        ("/?prefix={}", [ok.clone(), ok.clone(), big.clone()]),
        ("/?tool={}", [ok.clone(), ok.clone(), big.clone()]),
        ("/?after={}", [page(400), page(400), big.clone()]),
        (
            "/unknowns?tool_like={}",
            [page(400), ok.clone(), big.clone()],
        ),
        (
            "/unknowns?session_key={}",
            [ok.clone(), ok.clone(), big.clone()],
        ),
        ("/unknowns?after={}", [page(400), page(400), big.clone()]),
        // The find page says a text the search refuses matches nothing (200).
        ("/find?q={}", [ok.clone(), ok.clone(), big.clone()]),
    ];
    let c = plain();
    let mut wrong = Vec::new();
    for (path, expected) in &cases {
        for (h, expected) in ALL.into_iter().zip(expected) {
            let path = path.replace("{}", &h.encoded());
            let got = send_raw(&app, &c, Method::GET, &path, &staff, "", String::new()).await;
            if &got != expected {
                wrong.push(format!(
                    "{} {h:?}: got {got:?}, expected {expected:?}",
                    &path[..path.len().min(80)]
                ));
            }
        }
    }
    // Cursors in their canonical encoding whose strings hold NUL: 400 on the API, a 400 page on the
    // pages (never the database's error).
    let nul = || "a\u{0}b".to_owned();
    let sessions = crafted(Position::Sessions { at: 1, key: nul() });
    let unknowns = crafted(Position::Unknowns {
        at: 1,
        seq: 1,
        key: Some(nul()),
        by: Some("tool.asc".to_owned()),
    });
    let search = crafted(Position::Search {
        s: Some(1),
        k: Some(nul()),
        o: Some(1),
        w: None,
        wk: None,
    });
    // The window of a short text's search (docs/ledger.md "A short text"), its key holding NUL.
    let window = crafted(Position::Search {
        s: Some(1),
        k: None,
        o: Some(1),
        w: Some([1, 1]),
        wk: Some(nul()),
    });
    for (path, expected) in [
        (format!("/api/sessions?after={sessions}"), cursor.clone()),
        (
            format!("/api/unknowns?sort=tool&after={unknowns}"),
            cursor.clone(),
        ),
        (format!("/api/search?q=x&after={search}"), cursor.clone()),
        (format!("/api/search?q=x&after={window}"), cursor.clone()),
        (format!("/?after={sessions}"), page(400)),
        (format!("/unknowns?sort=tool&after={unknowns}"), page(400)),
        // The find page shows the search's refusal in the page (200).
        (format!("/find?q=x&after={search}"), page(200)),
    ] {
        let got = send_raw(&app, &c, Method::GET, &path, &staff, "", String::new()).await;
        if got != expected {
            wrong.push(format!("{path}: got {got:?}, expected {expected:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Where the answer is 200, a filter holding NUL matched nothing.
    for path in ["/api/sessions?prefix=a%00b", "/api/sessions?prefix=%00"] {
        let r = c
            .get(format!("{}{path}", app.base))
            .bearer_auth(&staff)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            json!({"sessions": [], "next": null, "total": 0}),
            "{path}"
        );
    }
    assert_eq!(ledger_state(&app).await, before);
}

/// A form, the hostile field, and the statuses of [NUL, surrogate, 1 MiB] (0: accepted).
type FormCase = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
    [u16; 3],
);

/// The operation page's forms (no JavaScript), as staff: NUL in a note or in evidence is the form again
/// with the problem (422), a field that is not UTF-8 a refusal page (400), 1 MiB a 422 for its length or
/// shape; nothing changes.
#[tokio::test]
async fn every_form_field_refuses_nul_surrogates_and_megabytes_alike() {
    let (app, staff) = prepared().await;
    let before = ledger_state(&app).await;
    const RECONCILE: &[(&str, &str)] = &[
        ("attempt_id", "a1"),
        ("completed", "true"),
        ("source", "p"),
        ("reference", "r"),
        ("observed_at", "2026-11-29T10:00:00Z"),
        ("provider_status", "completed"),
    ];
    // (path, the form, the hostile field, [NUL, surrogate, 1 MiB]); 0: accepted (evidence of any size).
    let cases: Vec<FormCase> = vec![
        (
            "/sessions/s/operations/unknown/notes",
            &[("text", "x")],
            "text",
            [422, 400, 422],
        ),
        (
            "/sessions/s/operations/unknown/reconciliation",
            RECONCILE,
            "attempt_id",
            [422, 400, 422],
        ),
        (
            "/sessions/s/operations/unknown/reconciliation",
            RECONCILE,
            "completed",
            [422, 400, 422],
        ),
        (
            "/sessions/s/operations/unknown/reconciliation",
            RECONCILE,
            "source",
            [422, 400, 0],
        ),
        (
            "/sessions/s/operations/unknown/reconciliation",
            RECONCILE,
            "reference",
            [422, 400, 0],
        ),
        (
            "/sessions/s/operations/unknown/reconciliation",
            RECONCILE,
            "observed_at",
            [422, 400, 422],
        ),
        (
            "/sessions/s/operations/unknown/reconciliation",
            RECONCILE,
            "provider_status",
            [422, 400, 422],
        ),
        // Nobody holds a claim, so a release writes nothing; `next` that is not a path of this server
        // goes back to the operation page.
        (
            "/sessions/s/operations/unknown/release",
            &[("next", "/")],
            "next",
            [303, 400, 303],
        ),
    ];
    let c = plain();
    let mut wrong = Vec::new();
    for (path, fields, hostile, expected) in &cases {
        for (h, expected) in ALL.into_iter().zip(expected) {
            if *expected == 0 {
                continue;
            }
            let others: Vec<(&str, &str)> = fields
                .iter()
                .copied()
                .filter(|(k, _)| k != hostile)
                .collect();
            let body = format!("{}&{hostile}={}", form(&others), h.encoded());
            let got = send_raw(
                &app,
                &c,
                Method::POST,
                path,
                &staff,
                "application/x-www-form-urlencoded",
                body,
            )
            .await;
            if got != page(*expected) {
                wrong.push(format!(
                    "{path} {hostile} {h:?}: got {got:?}, expected {expected}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The page says what is wrong, next to the field.
    let body = format!("{}&source=a%00b", form(&RECONCILE[..2]))
        + "&reference=r&observed_at=2026-11-29T10%3A00%3A00Z";
    let r = c
        .post(format!(
            "{}/sessions/s/operations/unknown/reconciliation",
            app.base
        ))
        .bearer_auth(&staff)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = r.text().await.unwrap();
    assert!(page.contains("holds a NUL character (U+0000)"), "{page}");
    assert_eq!(ledger_state(&app).await, before);
}

/// `POST /sign-in` with a name (or password) holding NUL is a wrong sign-in on both backends: 401 with the
/// form again, and it counts toward the failed-credential limit: the 11th failure within 60 s from one
/// address is 429 with `Retry-After`, and then even the right password is. Before: Postgres answered 500
/// to every one, never rate-limited.
#[tokio::test]
async fn a_sign_in_name_holding_nul_is_a_wrong_sign_in_and_counts_toward_the_limit() {
    let app = with_staff(|a| a.access = AccessArg::SignedIn).await;
    let c = client_at(fresh_ip());
    for i in 1..=10 {
        let (name, password) = match i % 3 {
            0 => ("ada\u{0}", PASSWORD),
            1 => ("\u{0}", "x"),
            _ => (STAFF, "correct horse\u{0}"),
        };
        let r = post_sign_in(&app, &c, Some(&app.base), name, password, "/").await;
        assert_eq!(
            r.status,
            StatusCode::UNAUTHORIZED,
            "attempt {i}: {}",
            r.body
        );
        assert!(
            r.body.contains("The name or the password is wrong."),
            "{}",
            r.body
        );
    }
    let r = post_sign_in(&app, &c, Some(&app.base), "ada\u{0}", PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(r.body.contains("Too many failed sign-ins"), "{}", r.body);
    let r = post_sign_in(&app, &c, Some(&app.base), STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    // The other hostile names: a surrogate's bytes (form-decoded as U+FFFD) and 1 MiB are wrong names.
    let other = client_at(fresh_ip());
    for name in ["a%ED%A0%80b".to_owned(), "x".repeat(MIB)] {
        let r = other
            .post(format!("{}/sign-in", app.base))
            .header("origin", &app.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "{}&name={name}",
                form(&[("password", PASSWORD), ("next", "/")])
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::UNAUTHORIZED,
            "{}",
            &name[..name.len().min(20)]
        );
    }
    // The right name and password from a fresh address still sign in.
    let r = post_sign_in(
        &app,
        &client_at(fresh_ip()),
        Some(&app.base),
        STAFF,
        PASSWORD,
        "/",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
}

/// Host metadata holding NUL is sanitised as any control character, and the same value is stored on
/// both backends: the title drops it, a resource id holding it is withheld, a url's path keeps it
/// percent-encoded; 1 MiB of title is truncated to 512 bytes.
#[tokio::test]
async fn host_metadata_holding_nul_is_sanitised_alike() {
    let (app, _) = prepared().await;
    let (s, v) = app
        .step(
            "s",
            "done",
            "metadata",
            json!({"id": "r\u{0}1", "url": "https://h.example/p\u{0}q", "title": "Service\u{0} overview"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let record = |v: &Value| {
        v["mutation_outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["mutation_id"] == "done")
            .cloned()
            .unwrap()
    };
    let (s, v) = app.get_json_as("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(s, StatusCode::OK);
    let r = record(&v);
    assert_eq!(
        (&r["resource_id"], &r["url"], &r["title"]),
        (
            &Value::Null,
            &json!("https://h.example/p%00q"),
            &json!("Service overview")
        )
    );
    let (s, v) = app
        .step(
            "s",
            "done",
            "metadata",
            json!({"id": "d", "url": null, "title": "x".repeat(MIB)}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, v) = app.get_json_as("/api/mutation-outcomes?session_id=s").await;
    assert_eq!(record(&v)["title"], json!("x".repeat(512)));
}

/// Evidence has no length rule: 1 MiB of `source` is accepted (200) and stored whole, alike on both
/// backends.
#[tokio::test]
async fn a_mebibyte_of_evidence_is_stored_alike() {
    let (app, _) = prepared().await;
    let mut body = reconcile_body();
    body["evidence"]["source"] = json!("x".repeat(MIB));
    let (s, v) = app.step("s", "unknown", "reconciliation", body).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["ledger_status"], "completed");
    let (s, v) = app
        .get_json_as("/api/sessions/s/mutations/unknown/history")
        .await;
    assert_eq!(s, StatusCode::OK);
    let text = v.to_string();
    assert!(
        text.contains(&"x".repeat(MIB)),
        "the evidence is kept whole"
    );
}

impl TestApp {
    /// GET with the host token: status and JSON body.
    async fn get_json_as(&self, path: &str) -> (StatusCode, Value) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let s = r.status();
        (s, r.json().await.unwrap_or(Value::Null))
    }
}
