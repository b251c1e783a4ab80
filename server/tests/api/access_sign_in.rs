//! Signing in and out (docs/access.md), and the failed-password limit.

use std::net::Ipv4Addr;

use reqwest::{Method, StatusCode};
use serde_json::json;
use server::serve::AccessArg;

use crate::helpers::access::{
    clears, cookie, get, location, plain, post_sign_in, post_sign_in_with, send, sends_to_sign_in,
    set_cookie_value,
};
use crate::helpers::{client_at, server, set_cookies, PASSWORD, STAFF};

// ---------------------------------------------------------------------------------------------------
// 3. Signing in and out
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn signing_in_and_out() {
    let app = server(AccessArg::SignedIn).await;
    app.settled("alpha", "t1", "op-alpha", "completed").await;
    let c = plain();
    let base = app.base.clone();

    // The form.
    let r = get(&app, "/sign-in?next=%2Fsessions%2Falpha", &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(r.body.contains("action=\"/sign-in\""), "{}", r.body);
    assert!(r.body.contains("value=\"/sessions/alpha\""), "{}", r.body);

    // A wrong password: 401 with the form again and the problem.
    let r = post_sign_in(&app, &c, Some(&base), STAFF, "wrong", "/").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(
        r.body.contains("The name or the password is wrong."),
        "{}",
        r.body
    );
    assert!(set_cookies(&r.headers).is_empty());
    // An unknown name: the same answer.
    let r = post_sign_in(&app, &c, Some(&base), "nobody", PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.body.contains("The name or the password is wrong."));

    // The right password without Origin, or from another origin: 403, no cookie.
    let r = post_sign_in(&app, &c, None, STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "origin_mismatch");
    assert!(set_cookies(&r.headers).is_empty());
    let r = post_sign_in(&app, &c, Some("http://evil.example"), STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(set_cookies(&r.headers).is_empty());
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    let other_port = format!("http://127.0.0.1:{}", port.wrapping_add(1));
    let r = post_sign_in(&app, &c, Some(&other_port), STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{other_port}");
    // `Origin: null` counts only with the browser's own `Sec-Fetch-Site: same-origin`.
    for site in [None, Some("cross-site"), Some("same-site"), Some("none")] {
        let r = post_sign_in_with(&app, &c, Some("null"), site, STAFF, PASSWORD, "/").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{site:?}");
        assert!(set_cookies(&r.headers).is_empty());
    }
    let r = post_sign_in_with(
        &app,
        &c,
        Some("null"),
        Some("same-origin"),
        STAFF,
        PASSWORD,
        "/",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(set_cookie_value(&r.headers, "outcomes_sign_in").is_some());
    // The browser's word does not rescue a foreign origin.
    let r = post_sign_in_with(
        &app,
        &c,
        Some("http://evil.example"),
        Some("same-origin"),
        STAFF,
        PASSWORD,
        "/",
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // Success: 303 to next with the cookie.
    let r = post_sign_in(
        &app,
        &c,
        Some(&base),
        STAFF,
        PASSWORD,
        "/sessions/alpha?x=1",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(location(&r), "/sessions/alpha?x=1");
    let set = set_cookies(&r.headers);
    assert_eq!(set.len(), 1, "{set:?}");
    let id = set_cookie_value(&r.headers, "outcomes_sign_in").unwrap();
    assert!(id.len() >= 43, "{id}");
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set[0].contains(attr), "{attr}: {}", set[0]);
    }
    assert!(
        !set[0].contains("Max-Age"),
        "a browser-session cookie: {}",
        set[0]
    );
    assert!(!set[0].contains("Secure"), "plain http: {}", set[0]);

    // next elsewhere: back to `/`.
    for evil in ["https://evil.example/", "//evil.example/", "/sign-out"] {
        let r = post_sign_in(&app, &c, Some(&base), STAFF, PASSWORD, evil).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{evil}");
        assert_eq!(location(&r), "/", "{evil}");
    }

    // The cookie works.
    let me = get(&app, "/api/me", &[cookie("outcomes_sign_in", &id)]).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(
        me.json(),
        json!({"access": "staff", "name": "ada", "can_sign_out": true})
    );
    let page = get(&app, "/sessions/alpha", &[cookie("outcomes_sign_in", &id)]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("data-access=\"staff\""), "{}", page.body);
    // Signed in, the form goes straight on.
    let r = get(
        &app,
        "/sign-in?next=%2Funknowns",
        &[cookie("outcomes_sign_in", &id)],
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/unknowns");

    // A change made with the cookie needs Origin; signing out without it is refused and changes nothing.
    let r = send(
        &c,
        Method::POST,
        &format!("{base}/sign-out"),
        &[cookie("outcomes_sign_in", &id)],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        get(&app, "/api/me", &[cookie("outcomes_sign_in", &id)])
            .await
            .status,
        StatusCode::OK
    );

    // Sign out: 303 to the sign-in page, both cookies cleared, the sign-in over on the server.
    let r = send(
        &c,
        Method::POST,
        &format!("{base}/sign-out"),
        &[cookie("outcomes_sign_in", &id), ("origin", base.clone())],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(location(&r), "/sign-in");
    assert!(clears(&r.headers, "outcomes_sign_in"), "{:?}", r.headers);
    assert!(clears(&r.headers, "outcomes_viewer"), "{:?}", r.headers);
    for path in ["/api/me", "/api/sessions/alpha/turns"] {
        let r = get(&app, path, &[cookie("outcomes_sign_in", &id)]).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(r.json()["error"]["code"], "unauthorized", "{path}");
        assert!(clears(&r.headers, "outcomes_sign_in"), "{path}");
    }

    // A forged cookie on a page: 303 to sign in (whatever Accept says), and the cookie is cleared.
    let forged = server::staff::new_sign_in_id();
    for accept in ["text/html", "application/json"] {
        let r = get(
            &app,
            "/sessions/alpha?tab=1",
            &[
                cookie("outcomes_sign_in", &forged),
                ("accept", accept.into()),
            ],
        )
        .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{accept}");
        assert!(
            sends_to_sign_in(&location(&r), "/sessions/alpha?tab=1"),
            "{}",
            location(&r)
        );
        assert!(clears(&r.headers, "outcomes_sign_in"), "{:?}", r.headers);
        assert!(!r.body.contains("op-alpha"));
    }
}

#[tokio::test]
async fn the_eleventh_wrong_password_is_429_and_then_even_the_right_one_is() {
    let app = server(AccessArg::SignedIn).await;
    let c = plain();
    for i in 1..=10 {
        let r = post_sign_in(&app, &c, Some(&app.base), STAFF, "wrong", "/").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "attempt {i}");
    }
    let r = post_sign_in(&app, &c, Some(&app.base), STAFF, "wrong", "/").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(r.body.contains("Too many failed sign-ins"), "{}", r.body);
    let r = post_sign_in(&app, &c, Some(&app.base), STAFF, PASSWORD, "/").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers.contains_key("retry-after"));
    assert!(set_cookies(&r.headers).is_empty());
    // Another address is not blocked.
    let r = post_sign_in(
        &app,
        &client_at(Ipv4Addr::new(127, 0, 0, 2)),
        Some(&app.base),
        STAFF,
        PASSWORD,
        "/",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}
