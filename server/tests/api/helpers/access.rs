//! Requests as each role of the access tests sends them (docs/access.md): a client per loopback address,
//! a response read whole ([`Got`]), cookies and bearers, signing in, viewer links and their revocation.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU8, Ordering};

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{client_at, cookie_in, enc, form, set_cookies, TestApp, PASSWORD, STAFF};

/// A client from 127.0.0.1 that does not follow redirects.
pub fn plain() -> reqwest::Client {
    client_at(Ipv4Addr::LOCALHOST)
}

/// A fresh loopback address for each call (127.0.1.1, 127.0.1.2, …).
pub fn fresh_ip() -> Ipv4Addr {
    static NEXT: AtomicU8 = AtomicU8::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Ipv4Addr::new(127, 0, 1 + n / 250, 1 + n % 250)
}

/// A response read whole, except a live stream that answered 200 (only its head is kept).
pub struct Got {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Got {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

pub async fn send(
    client: &reqwest::Client,
    method: Method,
    url: &str,
    headers: &[(&str, String)],
    body: Option<&str>,
) -> Got {
    let mut req = client.request(method, url);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_owned());
    }
    let r = req.send().await.expect("request");
    let status = r.status();
    let headers = r.headers().clone();
    let streaming = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
        && url.contains("/api/run-events");
    let body = if streaming {
        drop(r);
        String::new()
    } else {
        r.text().await.expect("body")
    };
    Got {
        status,
        headers,
        body,
    }
}

/// GET `path` with `headers` from 127.0.0.1.
pub async fn get(app: &TestApp, path: &str, headers: &[(&str, String)]) -> Got {
    send(
        &plain(),
        Method::GET,
        &format!("{}{path}", app.base),
        headers,
        None,
    )
    .await
}

pub fn cookie(name: &str, value: &str) -> (&'static str, String) {
    ("cookie", format!("{name}={value}"))
}

pub fn bearer(token: &str) -> (&'static str, String) {
    ("authorization", format!("Bearer {token}"))
}

/// The value a response's `Set-Cookie` gives cookie `name`.
pub fn set_cookie_value(h: &HeaderMap, name: &str) -> Option<String> {
    cookie_in(&set_cookies(h), name)
}

/// Whether the response clears cookie `name` (`name=; …; Max-Age=0`).
pub fn clears(h: &HeaderMap, name: &str) -> bool {
    set_cookies(h)
        .iter()
        .any(|c| c.starts_with(&format!("{name}=;")) && c.contains("Max-Age=0"))
}

/// Whether `loc` is the sign-in page that comes back to `path` once signed in: exactly
/// `/sign-in?next=<path, form-urlencoded>` (docs/access.md).
pub fn sends_to_sign_in(loc: &str, path: &str) -> bool {
    loc == format!("/sign-in?{}", form(&[("next", path)]))
}

pub fn location(g: &Got) -> String {
    g.headers
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// `POST /sign-in` from `client`, with `Origin: origin` when given.
pub async fn post_sign_in(
    app: &TestApp,
    client: &reqwest::Client,
    origin: Option<&str>,
    name: &str,
    password: &str,
    next: &str,
) -> Got {
    post_sign_in_with(app, client, origin, None, name, password, next).await
}

/// `POST /sign-in`, with `Origin` and `Sec-Fetch-Site` when given.
pub async fn post_sign_in_with(
    app: &TestApp,
    client: &reqwest::Client,
    origin: Option<&str>,
    fetch_site: Option<&str>,
    name: &str,
    password: &str,
    next: &str,
) -> Got {
    let mut req = client
        .post(format!("{}/sign-in", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("name", name),
            ("password", password),
            ("next", next),
        ]));
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    if let Some(f) = fetch_site {
        req = req.header("sec-fetch-site", f);
    }
    let r = req.send().await.expect("request");
    let status = r.status();
    let headers = r.headers().clone();
    let body = r.text().await.unwrap();
    Got {
        status,
        headers,
        body,
    }
}

impl TestApp {
    /// Signs [`STAFF`] in (`POST /sign-in` from [`plain`], redirects not followed): the sign-in cookie's
    /// value.
    pub async fn sign_in_id(&self) -> String {
        let r = post_sign_in(self, &plain(), Some(&self.base), STAFF, PASSWORD, "/").await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        set_cookie_value(&r.headers, "outcomes_sign_in").expect("sign-in cookie")
    }

    /// [`Self::sign_in_id`] as a `Cookie` header value: `outcomes_sign_in=<id>`.
    pub async fn sign_in(&self) -> String {
        format!("outcomes_sign_in={}", self.sign_in_id().await)
    }

    /// Mints a viewer link of the session `session` (its raw key) and opens it as a browser would: the
    /// viewer cookie's value.
    pub async fn viewer_token(&self, session: &str) -> String {
        let url = self.mint_link(&enc(session)).await;
        open_link(self, &url).await
    }

    /// [`Self::viewer_token`] as a `Cookie` header value: `outcomes_viewer=<token>`.
    pub async fn viewer(&self, session: &str) -> String {
        format!("outcomes_viewer={}", self.viewer_token(session).await)
    }
}

/// Opens a viewer link as a browser would: the viewer cookie's value.
pub async fn open_link(app: &TestApp, url: &str) -> String {
    open_link_from(app, &plain(), url).await
}

/// Opens a viewer link from `client` as a browser would: the viewer cookie's value.
pub async fn open_link_from(app: &TestApp, client: &reqwest::Client, url: &str) -> String {
    let r = send(
        client,
        Method::GET,
        &format!("{}{url}", app.base),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    set_cookie_value(&r.headers, "outcomes_viewer").expect("viewer cookie")
}

pub async fn revoke(app: &TestApp, session: &str) -> Value {
    let (s, body) = app
        .host(
            Method::DELETE,
            &format!("/api/host/sessions/{session}/viewer-links"),
            Value::Null,
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    body
}

/// Two sessions: `alpha` (turn t1: op-alpha, op-shared) and `bravo` (turn t1: op-bravo, op-shared, the
/// latter unknown so the support queue is not empty).
pub async fn two_sessions(app: &TestApp) {
    app.settled("alpha", "t1", "op-alpha", "completed").await;
    app.settled("alpha", "t1", "op-shared", "completed").await;
    app.settled("bravo", "t1", "op-bravo", "completed").await;
    app.settled("bravo", "t1", "op-shared", "outcome_unknown")
        .await;
}
