//! Staff tokens and the trusted proxy (docs/access.md).

use std::net::Ipv4Addr;

use reqwest::{Method, StatusCode};
use serde_json::json;
use server::serve::AccessArg;

use crate::helpers::access::{bearer, get, plain, send, two_sessions};
use crate::helpers::{client_at, server, with_staff, STAFF};

// ---------------------------------------------------------------------------------------------------
// 5. Staff tokens and the trusted proxy
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_staff_token_reads_but_never_writes() {
    let app = server(AccessArg::SignedIn).await;
    two_sessions(&app).await;
    let token = app.staff_token().await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let h = [("authorization", format!("{scheme} {token}"))];
        let r = get(&app, "/api/sessions", &h).await;
        assert_eq!(r.status, StatusCode::OK, "{scheme}");
        assert_eq!(r.json()["sessions"].as_array().unwrap().len(), 2);
        assert_eq!(
            get(&app, "/api/me", &h).await.json(),
            json!({"access": "staff", "name": "ada", "can_sign_out": false})
        );
    }
    // The host API: 401, as often as it is tried (a valid staff token is not a guess: never 429).
    for i in 0..12 {
        let r = send(
            &plain(),
            Method::POST,
            &format!("{}/api/host/sessions/alpha/mutations", app.base),
            &[bearer(&token)],
            Some(r#"{"logical_turn_id": "t9", "mutation_id": "m9", "tool": "x"}"#),
        )
        .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "try {i}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], "unauthorized");
    }
    let r = send(
        &plain(),
        Method::DELETE,
        &format!("{}/api/host/sessions/alpha", app.base),
        &[bearer(&token)],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // Nothing was written.
    assert_eq!(
        get(&app, "/api/sessions/alpha/turns", &[bearer(&token)])
            .await
            .json()["turns"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A removed account's token stops working.
    assert!(app.state.access.store.remove_staff(STAFF).await.unwrap());
    assert_eq!(
        get(&app, "/api/sessions", &[bearer(&token)]).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn the_trusted_proxy_header_counts_only_from_the_trusted_proxy() {
    let app = with_staff(|a| {
        a.access = AccessArg::SignedIn;
        a.trusted_user_header = Some("x-forwarded-user".parse().unwrap());
        a.trusted_proxy = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    app.settled("alpha", "t1", "m1", "completed").await;
    let h = [("x-forwarded-user", "grace".to_owned())];
    let me = get(&app, "/api/me", &h).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(
        me.json(),
        json!({"access": "staff", "name": "grace", "can_sign_out": false})
    );
    assert_eq!(
        get(&app, "/api/sessions/alpha/turns", &h).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get(&app, "/sessions/alpha", &h).await.status,
        StatusCode::OK
    );
    // Without the header: closed.
    assert_eq!(
        get(&app, "/api/me", &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
    // A value that is not a plain name: ignored.
    assert_eq!(
        get(&app, "/api/me", &[("x-forwarded-user", "a b".into())])
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    // From another address: ignored.
    let r = send(
        &client_at(Ipv4Addr::new(127, 0, 0, 2)),
        Method::GET,
        &format!("{}/api/me", app.base),
        &h,
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // The proxy's header does not open the host API.
    let r = send(
        &plain(),
        Method::POST,
        &format!("{}/api/host/sessions/alpha/viewer-links", app.base),
        &h,
        Some("{}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);

    // A server whose trusted proxy is elsewhere ignores the header from here.
    let app = with_staff(|a| {
        a.access = AccessArg::SignedIn;
        a.trusted_user_header = Some("x-forwarded-user".parse().unwrap());
        a.trusted_proxy = vec!["10.0.0.0/8".parse().unwrap()];
    })
    .await;
    assert_eq!(
        get(&app, "/api/me", &h).await.status,
        StatusCode::UNAUTHORIZED
    );
    let r = get(&app, "/sessions/alpha", &h).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}
