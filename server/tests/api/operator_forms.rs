//! The operator actions as no-JavaScript forms (docs/api.md "Operator actions"): notes and reconciliations
//! posted from the operation page, a form sent after the sign-in ended, and a GET on a form path.

use reqwest::StatusCode;
use serde_json::json;
use server::serve::AccessArg;

use crate::helpers::access::plain;
use crate::helpers::operator::{get, history_path, post, reconciliation, signed_in, snapshot, Who};
use crate::helpers::{enc, form, with_staff, TestApp, PASSWORD, STAFF, TOKEN};

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
    let req = plain()
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
    let signed = app.sign_in().await;
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
    let own_viewer = app.viewer(session).await;
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
        let signed = app.sign_in().await;
        let r = plain()
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
            plain()
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
        let r = plain()
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
    let signed = app.sign_in().await;
    let page = format!("/sessions/{}/operations/{}", enc(session), enc(mutation));
    for action in ["notes", "reconciliation"] {
        // Signed in (where a sign-in that began on a form comes back to): the operation page.
        let r = plain()
            .get(format!("{}{page}/{action}", app.base))
            .header("cookie", &signed)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{action}");
        assert_eq!(r.headers()["location"], page.as_str());
        // Without a credential: the sign-in page first.
        let r = plain()
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

/// A bad evidence time (a clock time typed alone, "18:50") keeps the page: the site's header (the way to
/// the sessions, the queue and the search, who is signed in), the reconciliation form with every value
/// typed, and the problem said next to the observed time, which is named and marked invalid.
#[tokio::test]
async fn a_bad_evidence_time_keeps_the_site_header_the_form_and_the_typed_values() {
    let app = signed_in().await;
    let (session, mutation) = ("desk", "op-time");
    app.settled(session, "t", mutation, "outcome_unknown").await;
    let signed = app.sign_in().await;
    let page = format!("/sessions/{session}/operations/{mutation}");
    let before = snapshot(&app, session, "t", mutation).await;
    let (s, location, content_type, body) = post_form(
        &app,
        Who::Cookie(&signed),
        &format!("{page}/reconciliation"),
        &[
            ("attempt_id", "a1"),
            ("completed", "false"),
            ("source", "status page"),
            ("reference", "incident 7"),
            ("observed_at", "18:50"),
            ("provider_status", ""),
        ],
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(location, "");
    assert!(content_type.starts_with("text/html"), "{content_type}");
    // The site's header, as on every page of a signed-in staff member.
    assert!(
        body.contains(r#"<nav"#) && body.contains(r#"aria-label="Main""#),
        "{body}"
    );
    assert!(body.contains(r#"href="/unknowns""#), "{body}");
    assert!(body.contains(r#"action="/find""#), "{body}");
    assert!(body.contains("Signed in as"), "{body}");
    assert!(body.contains(r#"action="/sign-out""#), "{body}");
    // The form, posting where the operation page's form posts, with what was typed.
    assert!(
        body.contains(&format!(r#"action="{page}/reconciliation""#)),
        "{body}"
    );
    for value in ["a1", "status page", "incident 7", "18:50"] {
        assert!(
            body.contains(&format!(r#"value="{value}""#)),
            "{value}: {body}"
        );
    }
    assert!(body.contains(r#"value="false" checked"#), "{body}");
    // The field named, next to it.
    assert!(
        body.contains(
            r#"value="18:50" aria-invalid="true" aria-describedby="observed-at-error" class="w-full rounded border-2 border-red-600"#
        ),
        "{body}"
    );
    assert!(
        body.contains(r#"<span id="observed-at-error" role="alert""#),
        "{body}"
    );
    assert!(
        body.contains("Enter when you observed it at the provider"),
        "{body}"
    );
    assert_eq!(snapshot(&app, session, "t", mutation).await, before);
}
