//! What a viewer may see (docs/access.md): one session's viewer never receives another session's data;
//! viewer links minted, checked, opened and revoked, and a viewer's live stream closing on revocation.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::serve::AccessArg;

use crate::helpers::access::{
    bearer, clears, cookie, get, location, open_link, plain, revoke, send, sends_to_sign_in, Got,
};
use crate::helpers::{read_until, server, set_cookies, TestApp, TOKEN};

// ---------------------------------------------------------------------------------------------------
// 2. One session's viewer never receives another session's data
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn one_sessions_viewer_never_receives_another_sessions_data() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("alpha", "t1", "op-shared", "completed").await;
    app.settled("bravo", "turn-bravo-secret", "op-shared", "failed")
        .await;
    app.settled("bravo", "turn-bravo-secret", "op-bravo-secret", "completed")
        .await;
    let (s, _) = app
        .step(
            "bravo",
            "op-bravo-secret",
            "metadata",
            json!({"title": "Bravo quarterly numbers"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let v = vec![cookie("outcomes_viewer", &app.viewer_token("alpha").await)];

    // Every read of bravo answers exactly what a session that does not exist answers.
    for (of_bravo, of_nobody) in [
        (
            "/api/mutation-outcomes?session_id=bravo",
            "/api/mutation-outcomes?session_id=nobody",
        ),
        (
            "/api/mutation-events?session_id=bravo&logical_turn_id=turn-bravo-secret",
            "/api/mutation-events?session_id=nobody&logical_turn_id=turn-bravo-secret",
        ),
        ("/api/sessions/bravo/turns", "/api/sessions/nobody/turns"),
        (
            "/api/sessions/bravo/turns/turn-bravo-secret/entries",
            "/api/sessions/nobody/turns/turn-bravo-secret/entries",
        ),
        (
            "/api/run-events?session_id=bravo",
            "/api/run-events?session_id=nobody",
        ),
        (
            "/api/sessions/bravo/mutations/op-bravo-secret/history",
            "/api/sessions/nobody/mutations/op-bravo-secret/history",
        ),
    ] {
        let b = get(&app, of_bravo, &v).await;
        let n = get(&app, of_nobody, &v).await;
        assert_eq!(b.status, StatusCode::NOT_FOUND, "{of_bravo}: {}", b.body);
        assert_eq!(n.status, StatusCode::NOT_FOUND, "{of_nobody}");
        assert_eq!(b.body, n.body, "{of_bravo}");
        assert_eq!(
            b.json(),
            json!({"error": {"code": "session_not_found", "message": "unknown session", "field": "session_id"}}),
            "{of_bravo}"
        );
        assert!(!b.body.contains("secret"), "{of_bravo}: {}", b.body);
    }
    assert_eq!(app.state.hub.subscriber_count("bravo"), 0);
    // Staff do read bravo.
    let staff = vec![bearer(&app.staff_token().await)];
    let r = get(&app, "/api/mutation-outcomes?session_id=bravo", &staff).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("op-bravo-secret"));

    // Operations: an id used in both sessions shows the viewer only alpha's match.
    let r = get(&app, "/api/operations/op-shared", &v).await;
    assert_eq!(r.status, StatusCode::OK);
    let matches = r.json()["matches"].as_array().unwrap().clone();
    assert_eq!(matches.len(), 1, "{}", r.body);
    assert_eq!(matches[0]["session_key"], "alpha");
    assert_eq!(matches[0]["entry"]["outcome"]["status"], "completed");
    assert!(!r.body.contains("bravo"), "{}", r.body);
    let r = get(&app, "/api/operations/op-bravo-secret", &v).await;
    assert_eq!(r.json(), json!({"matches": []}));
    assert_eq!(
        get(&app, "/api/operations/op-shared", &staff).await.json()["matches"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Pages: bravo's are the 404 of a session that does not exist, and show none of its ids.
    for path in [
        "/sessions/bravo",
        "/sessions/bravo/turns/turn-bravo-secret",
        "/operations/op-bravo-secret",
    ] {
        let r = get(&app, path, &v).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        // Nothing of bravo but what the viewer typed.
        for bravo_only in [
            "op-bravo-secret",
            "turn-bravo-secret",
            "op-shared",
            "failed",
        ] {
            assert!(
                path.contains(bravo_only) || !r.body.contains(bravo_only),
                "{path} shows {bravo_only}: {}",
                r.body
            );
        }
        // Staff see it (so the check above can fail).
        let s = get(&app, path, &staff).await;
        assert_eq!(s.status, StatusCode::OK, "{path}");
        assert!(
            ["op-bravo-secret", "turn-bravo-secret", "op-shared"]
                .iter()
                .any(|b| !path.contains(b) && s.body.contains(b)),
            "{path}: {}",
            s.body
        );
    }
    // bravo's pages are exactly the page of a session that does not exist.
    for (of_bravo, of_nobody) in [
        ("/sessions/bravo", "/sessions/nobody"),
        (
            "/sessions/bravo/turns/turn-bravo-secret",
            "/sessions/nobody/turns/turn-bravo-secret",
        ),
    ] {
        let b = get(&app, of_bravo, &v).await;
        let n = get(&app, of_nobody, &v).await;
        assert_eq!(n.status, StatusCode::NOT_FOUND, "{of_nobody}");
        assert_eq!(b.body, n.body, "{of_bravo}");
        assert!(b.body.contains("Page not found."), "{}", b.body);
    }
    let r = get(&app, "/operations/op-shared", &v).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("alpha"), "{}", r.body);
    assert!(!r.body.contains("bravo"), "{}", r.body);
    // Find is not there for a viewer: it tells nothing about bravo either.
    let b = get(&app, "/find?q=bravo", &v).await;
    let n = get(&app, "/find?q=nobody", &v).await;
    assert_eq!(b.status, StatusCode::NOT_FOUND);
    assert_eq!(b.body, n.body);

    // Live: the viewer's stream of alpha carries alpha's events only.
    let mut stream = plain()
        .get(format!("{}/api/run-events?session_id=alpha", app.base))
        .header(v[0].0, v[0].1.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    app.settled("bravo", "turn-bravo-secret", "op-bravo-live-1", "completed")
        .await;
    app.settled("alpha", "t1", "op-alpha-live-1", "completed")
        .await;
    app.settled("bravo", "turn-bravo-secret", "op-bravo-live-2", "completed")
        .await;
    app.settled("alpha", "t1", "op-alpha-live-2", "completed")
        .await;
    let got = read_until(&mut stream, "op-alpha-live-2").await;
    assert!(got.contains("op-alpha-live-1"), "{got}");
    assert!(got.contains("op-alpha-live-2"), "{got}");
    assert!(!got.contains("bravo"), "{got}");
    assert_eq!(got.matches("event: mutation_outcome").count(), 2, "{got}");
}

// ---------------------------------------------------------------------------------------------------
// 4. Viewer links
// ---------------------------------------------------------------------------------------------------

async fn post_link(app: &TestApp, session: &str, body: Option<&str>) -> Got {
    send(
        &plain(),
        Method::POST,
        &format!("{}/api/host/sessions/{session}/viewer-links", app.base),
        &[bearer(TOKEN)],
        body,
    )
    .await
}

fn parse_time(s: &str) -> i64 {
    use cookie::time::format_description::well_known::Rfc3339;
    let t = cookie::time::OffsetDateTime::parse(s, &Rfc3339).expect(s);
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap()
}

#[tokio::test]
async fn viewer_links_are_minted_checked_opened_and_revoked() {
    let app = server(AccessArg::SignedIn).await;
    for s in ["alpha", "charlie"] {
        app.settled(s, "t1", "m1", "completed").await;
    }
    let store = &app.state.access.store;

    // `{}` and an empty body: 7 days.
    for body in [Some("{}"), None, Some("  ")] {
        let before = store.now_ms();
        let r = post_link(&app, "alpha", body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{body:?}: {}", r.body);
        let v = r.json();
        let url = v["url"].as_str().unwrap();
        let token = url.strip_prefix("/v/").expect(url);
        assert_eq!(token.len(), 43, "{url}");
        assert!(token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        let at = parse_time(v["expires_at"].as_str().unwrap());
        let week = 7 * 24 * 3600 * 1000;
        assert!((before + week..=store.now_ms() + week).contains(&at), "{v}");
        assert_eq!(v.as_object().unwrap().len(), 2, "{v}");
    }
    // The longest life, and one second.
    let before = store.now_ms();
    let r = post_link(&app, "alpha", Some(r#"{"expires_in_secs": 31622400}"#)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let at = parse_time(r.json()["expires_at"].as_str().unwrap());
    assert!(at >= before + 31_622_400_000 && at <= store.now_ms() + 31_622_400_000);
    // JSON Schema's integer: 60.0 is the integer 60 (Schemathesis sends it as valid data).
    let before = store.now_ms();
    let r = post_link(&app, "alpha", Some(r#"{"expires_in_secs": 60.0}"#)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let at = parse_time(r.json()["expires_at"].as_str().unwrap());
    assert!(at >= before + 60_000 && at <= store.now_ms() + 60_000);
    // A link of one second works, then does not.
    let r = post_link(&app, "alpha", Some(r#"{"expires_in_secs": 1}"#)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let short = r.json()["url"].as_str().unwrap().to_owned();
    let short_cookie = open_link(&app, &short).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = get(&app, &short, &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = get(
        &app,
        "/api/sessions/alpha/turns",
        &[cookie("outcomes_viewer", &short_cookie)],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(clears(&r.headers, "outcomes_viewer"));

    // Refusals.
    for (body, status, code, field) in [
        (
            r#"{"expires_in_secs": 0}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (
            r#"{"expires_in_secs": 31622401}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (
            r#"{"expires_in_secs": -1}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (
            r#"{"expires_in_secs": "x"}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (
            r#"{"expires_in_secs": 1.5}"#,
            422,
            "invalid_field",
            Some("expires_in_secs"),
        ),
        (r#"{"expires_in_secs":"#, 400, "malformed_json", None),
        ("not json", 400, "malformed_json", None),
        ("[]", 400, "malformed_json", None),
    ] {
        let r = post_link(&app, "alpha", Some(body)).await;
        assert_eq!(r.status.as_u16(), status, "{body}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], code, "{body}: {}", r.body);
        if let Some(f) = field {
            assert_eq!(r.json()["error"]["field"], f, "{body}");
        }
    }
    let r = post_link(&app, "nobody", Some("{}")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "session_not_found");
    // 422 before 404.
    let r = post_link(&app, "nobody", Some(r#"{"expires_in_secs": 0}"#)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Opening a link: 303 to its session with the cookie.
    let url = app.mint_link("charlie").await;
    let token = url.strip_prefix("/v/").unwrap().to_owned();
    let r = get(&app, &url, &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/sessions/charlie");
    let set = set_cookies(&r.headers);
    assert_eq!(set.len(), 1, "{set:?}");
    assert!(
        set[0].starts_with(&format!("outcomes_viewer={token};")),
        "{}",
        set[0]
    );
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set[0].contains(attr), "{attr}: {}", set[0]);
    }
    let max_age: u64 = set[0]
        .split("; ")
        .find_map(|a| a.strip_prefix("Max-Age="))
        .expect("Max-Age")
        .parse()
        .unwrap();
    assert!((604_700..=604_800).contains(&max_age), "{max_age}");
    let v = vec![cookie("outcomes_viewer", &token)];
    let me = get(&app, "/api/me", &v).await;
    assert_eq!(
        me.json(),
        json!({"access": "viewer", "can_sign_out": true, "session_key": "charlie"})
    );
    assert_eq!(
        get(&app, "/api/sessions/charlie/turns", &v).await.status,
        StatusCode::OK
    );
    // A session key that needs encoding comes back percent-encoded.
    app.settled("a b/c", "t1", "m1", "completed").await;
    let url = app.mint_link("a%20b%2Fc").await;
    let r = get(&app, &url, &[]).await;
    assert_eq!(location(&r), "/sessions/a%20b%2Fc");

    // A wrong token: 404 page.
    for wrong in [
        "/v/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".to_owned(),
        format!("/v/{}x", token),
        format!("/v/{}", &token[..42]),
    ] {
        let r = get(&app, &wrong, &[]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{wrong}");
        assert!(r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        assert!(r.body.contains("This link no longer works."), "{}", r.body);
        assert!(set_cookies(&r.headers).is_empty());
    }

    // Revoking: the cookie stops working at once.
    assert_eq!(revoke(&app, "charlie").await, json!({"revoked": 1}));
    let r = get(&app, "/api/sessions/charlie/turns", &v).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert!(clears(&r.headers, "outcomes_viewer"));
    // A page opened with the revoked link's cookie: the end user's plain page (this link no longer
    // works), never the staff sign-in form; the cookie is cleared, so the next page asks for a sign-in.
    let r = get(&app, "/sessions/charlie", &v).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert!(r.body.contains("This link no longer works."), "{}", r.body);
    assert!(
        r.body
            .contains("Ask whoever shared it with you for a new link."),
        "{}",
        r.body
    );
    assert!(!r.body.contains("/sign-in"), "{}", r.body);
    assert!(!r.body.contains("Password"), "{}", r.body);
    assert!(clears(&r.headers, "outcomes_viewer"));
    // The cleared cookie leaves a marker behind (an open page's read may clear it before the end user
    // reloads): a page asked for with only the marker is the same plain page, not the sign-in form.
    let marker = set_cookies(&r.headers)
        .into_iter()
        .find(|c| c.starts_with("outcomes_viewer_ended=1"))
        .expect("the link-ended marker");
    assert!(marker.contains("HttpOnly"), "{marker}");
    let m = vec![cookie("outcomes_viewer_ended", "1")];
    let r = get(&app, "/sessions/charlie", &m).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert!(r.body.contains("This link no longer works."), "{}", r.body);
    let r = get(&app, "/api/sessions/charlie/turns", &m).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    // Without it (a new browser, or after signing in or out): the sign-in form, as for anyone.
    let r = get(&app, "/sessions/charlie", &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(
        sends_to_sign_in(&location(&r), "/sessions/charlie"),
        "{}",
        location(&r)
    );
    let r = get(&app, &url_of(&token), &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.body.contains("This link no longer works."), "{}", r.body);
    assert!(!r.body.contains("/sign-in"), "{}", r.body);
    assert_eq!(revoke(&app, "charlie").await, json!({"revoked": 0}));
    // Revoking all six of alpha's links (the expired one included).
    assert_eq!(revoke(&app, "alpha").await, json!({"revoked": 6}));

    // Deleting the session deletes its links: the cookie stops working, even once the key is used again.
    app.settled("delta", "t1", "m1", "completed").await;
    let delta = app.viewer_token("delta").await;
    let d = vec![cookie("outcomes_viewer", &delta)];
    assert_eq!(
        get(&app, "/api/sessions/delta/turns", &d).await.status,
        StatusCode::OK
    );
    let (s, _) = app
        .host(Method::DELETE, "/api/host/sessions/delta", Value::Null)
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    app.settled("delta", "t1", "m2", "completed").await;
    let r = get(&app, "/api/sessions/delta/turns", &d).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert!(clears(&r.headers, "outcomes_viewer"));
    assert_eq!(
        get(&app, &url_of(&delta), &[]).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(revoke(&app, "delta").await, json!({"revoked": 0}));
}

fn url_of(token: &str) -> String {
    format!("/v/{token}")
}

#[tokio::test]
async fn a_viewers_live_stream_closes_when_its_links_are_revoked() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("echo", "t1", "m1", "completed").await;
    app.settled("other", "t1", "m1", "completed").await;
    let viewer = app.viewer_token("echo").await;
    let _other_viewer = app.viewer_token("other").await;
    let open = |headers: Vec<(&'static str, String)>| {
        let base = app.base.clone();
        async move {
            let mut req = plain().get(format!("{base}/api/run-events?session_id=echo"));
            for (k, v) in headers {
                req = req.header(k, v);
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            r
        }
    };
    let mut viewer_stream = open(vec![cookie("outcomes_viewer", &viewer)]).await;
    let mut host_stream = open(vec![bearer(TOKEN)]).await;
    assert_eq!(app.state.hub.subscriber_count("echo"), 2);

    // Revoking another session's links leaves this stream open.
    assert_eq!(revoke(&app, "other").await, json!({"revoked": 1}));
    app.settled("echo", "t1", "m2", "completed").await;
    let got = read_until(&mut viewer_stream, "\"m2\"").await;
    assert!(got.contains("\"m2\""), "{got}");
    assert!(read_until(&mut host_stream, "\"m2\"")
        .await
        .contains("\"m2\""));

    // Revoking its own: the viewer's stream ends; the host's stays.
    assert_eq!(revoke(&app, "echo").await, json!({"revoked": 1}));
    let rest = tokio::time::timeout(Duration::from_secs(5), viewer_stream.text())
        .await
        .expect("the viewer's stream ends within 5 s")
        .unwrap();
    assert!(!rest.contains("mutation_outcome"), "{rest}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while app.state.hub.subscriber_count("echo") != 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the subscription is freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app.settled("echo", "t1", "m3", "completed").await;
    assert!(read_until(&mut host_stream, "\"m3\"")
        .await
        .contains("\"m3\""));
    // And the cookie opens no new stream.
    let r = get(
        &app,
        "/api/run-events?session_id=echo",
        &[cookie("outcomes_viewer", &viewer)],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}
