//! Spawns the real server on a loopback port per test, with its own SQLite file, and talks real HTTP.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use server::conn::ConnLimits;
use server::serve::{AccessArg, ServeArgs};
use server::AppState;

pub mod access;
pub mod binary;
pub mod operator;

pub const TOKEN: &str = "test-host-token";

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub state: AppState,
    pub _dir: tempfile::TempDir,
}

pub use testkit::{postgres, skipped_on_postgres};

/// The ledger of a test whose files are in `dir`: `dir/ledger.sqlite`, or on Postgres a schema of its
/// own named after `dir` (the ledger creates it), so a server restarted on the same `dir` finds the same
/// ledger.
pub fn database_for(dir: &std::path::Path) -> String {
    match postgres() {
        None => dir.join("ledger.sqlite").to_string_lossy().into_owned(),
        Some(base) => {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            dir.hash(&mut h);
            std::process::id().hash(&mut h);
            testkit::in_schema(&base, &format!("t_{:016x}", h.finish()))
        }
    }
}

pub fn args(dir: &std::path::Path, ttl_secs: u64) -> ServeArgs {
    ServeArgs {
        addr: "127.0.0.1:0".parse().expect("loopback"),
        database: Some(database_for(dir)),
        data_dir: dir.to_path_buf(),
        host_token: Some(TOKEN.into()),
        site_root: dir.join("site").to_string_lossy().into_owned(),
        session_ttl_secs: ttl_secs,
        purge: Default::default(),
        demo_when_empty: false,
        write_wait_ms: 10_000,
        in_flight_deadline_secs: 900,
        skip_integrity_check: false,
        header_timeout_secs: 10,
        send_timeout_secs: 30,
        body_timeout_secs: 30,
        max_connections: 4096,
        max_live_streams: 1024,
        max_live_streams_per_session: 64,
        access: server::serve::AccessArg::Auto,
        sign_in_idle_secs: 12 * 3600,
        trusted_user_header: None,
        trusted_proxy: Vec::new(),
        metrics_addr: None,
        webhooks: Default::default(),
        otel: Default::default(),
        support_contact: None,
        support_label: None,
    }
}

pub async fn spawn() -> TestApp {
    spawn_with_ttl(3600).await
}

pub async fn spawn_with_ttl(ttl_secs: u64) -> TestApp {
    spawn_configured(|a| a.session_ttl_secs = ttl_secs, ConnLimits::default()).await
}

/// A server whose arguments are the defaults above with `edit` applied, serving with `limits`.
pub async fn spawn_configured(edit: impl FnOnce(&mut ServeArgs), limits: ConnLimits) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut a = args(dir.path(), 3600);
    edit(&mut a);
    let built = server::serve::build(&a, TOKEN.into())
        .await
        .expect("server builds");
    serve_built(dir, built, limits).await
}

/// Serves `built` on a free loopback port with `limits`, its files in `dir`.
pub async fn serve_built(
    dir: tempfile::TempDir,
    built: server::serve::Built,
    limits: ConnLimits,
) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(server::conn::serve(
        listener,
        built.router,
        limits,
        std::future::pending::<()>(),
    ));
    TestApp {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        state: built.state,
        _dir: dir,
    }
}

impl TestApp {
    /// Writes `ops` through `POST /api/host/batch`, 999 at a time; every result must be 200 or 201.
    pub async fn batch_ok(&self, ops: Vec<Value>) {
        for chunk in ops.chunks(999) {
            let (s, v) = self
                .host(
                    Method::POST,
                    "/api/host/batch",
                    json!({"operations": chunk}),
                )
                .await;
            assert_eq!(s, StatusCode::OK, "{v}");
            for r in v["results"].as_array().unwrap() {
                assert!(r["status"] == 200 || r["status"] == 201, "{r} in a batch");
            }
        }
    }

    /// A host API call with the token; returns status and JSON body (Null when empty).
    pub async fn host(&self, method: Method, path: &str, body: Value) -> (StatusCode, Value) {
        let r = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .expect("request");
        let status = r.status();
        let text = r.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request")
    }

    pub async fn get_json(&self, path: &str) -> (StatusCode, Value) {
        let r = self.get(path).await;
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn approve(&self, session: &str, turn: &str, mutation: &str) -> (StatusCode, Value) {
        self.host(
            Method::POST,
            &format!("/api/host/sessions/{}/mutations", enc(session)),
            json!({"logical_turn_id": turn, "mutation_id": mutation, "tool": "mcp__dashboards__create"}),
        )
        .await
    }

    pub async fn step(
        &self,
        session: &str,
        mutation: &str,
        what: &str,
        body: Value,
    ) -> (StatusCode, Value) {
        let method = if what == "metadata" {
            Method::PUT
        } else {
            Method::POST
        };
        self.host(
            method,
            &format!(
                "/api/host/sessions/{}/mutations/{}/{what}",
                enc(session),
                enc(mutation)
            ),
            body,
        )
        .await
    }

    /// approve + intent (attempt `a1`).
    pub async fn start(&self, session: &str, turn: &str, mutation: &str) {
        assert_eq!(
            self.approve(session, turn, mutation).await.0,
            StatusCode::CREATED
        );
        assert_eq!(
            self.step(session, mutation, "intent", json!({"attempt_id": "a1"}))
                .await
                .0,
            StatusCode::OK
        );
    }

    /// approve + intent + settle.
    pub async fn settled(&self, session: &str, turn: &str, mutation: &str, status: &str) {
        self.start(session, turn, mutation).await;
        let (s, body) = self
            .step(
                session,
                mutation,
                "settlement",
                json!({"attempt_id": "a1", "status": status}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }

    /// The replay snapshot's status, headers and exact body.
    pub async fn replay(
        &self,
        query: &str,
        last_event_id: Option<&str>,
    ) -> (StatusCode, reqwest::header::HeaderMap, String) {
        let mut req = self
            .client
            .get(format!("{}/api/mutation-events?{query}", self.base));
        if let Some(id) = last_event_id {
            req = req.header("Last-Event-ID", id);
        }
        let r = req.send().await.expect("request");
        let status = r.status();
        let headers = r.headers().clone();
        (status, headers, r.text().await.expect("body"))
    }
}

pub fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

/// The exact record JSON of an outcome without metadata.
pub fn record(turn: &str, mutation: &str, status: &str) -> String {
    format!(
        r#"{{"schema":"mutation_outcome/v1","logical_turn_id":"{turn}","mutation_id":"{mutation}","tool":"mcp__dashboards__create","status":"{status}","resource_id":null,"url":null,"title":null}}"#
    )
}

/// The staff account [`with_staff`] adds, and its password.
pub const STAFF: &str = "ada";
pub const PASSWORD: &str = "correct horse battery staple";

/// A server with the test defaults, `edit` applied, and the staff account [`STAFF`].
pub async fn with_staff(edit: impl FnOnce(&mut ServeArgs)) -> TestApp {
    let app = spawn_configured(edit, ConnLimits::default()).await;
    let hash = server::staff::hash_password(PASSWORD).expect("hash");
    assert!(app
        .state
        .access
        .store
        .add_staff(STAFF, &hash)
        .await
        .expect("staff added"));
    app
}

/// A server in `access` mode (otherwise the test defaults) with the staff account [`STAFF`].
pub async fn server(access: AccessArg) -> TestApp {
    with_staff(|a| a.access = access).await
}

impl TestApp {
    /// Adds the staff account `name` with `password`.
    pub async fn add_staff(&self, name: &str, password: &str) {
        let hash = server::staff::hash_password(password).expect("hash");
        assert!(self
            .state
            .access
            .store
            .add_staff(name, &hash)
            .await
            .expect("staff added"));
    }

    /// A new staff API token of the account `name` (which exists).
    pub async fn staff_token_of(&self, name: &str) -> String {
        let token = server::staff::new_staff_token();
        assert!(self
            .state
            .access
            .store
            .add_staff_token(name, &token)
            .await
            .expect("token added"));
        token
    }

    /// A new staff API token of [`STAFF`].
    pub async fn staff_token(&self) -> String {
        self.staff_token_of(STAFF).await
    }

    /// Mints a viewer link of `session` with `body` (host token): its `/v/<token>` url.
    pub async fn mint_link_with(&self, session: &str, body: Value) -> String {
        let (s, v) = self
            .host(
                Method::POST,
                &format!("/api/host/sessions/{session}/viewer-links"),
                body,
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        v["url"].as_str().expect("url").to_owned()
    }

    /// [`Self::mint_link_with`] an empty body (the default lifetime).
    pub async fn mint_link(&self, session: &str) -> String {
        self.mint_link_with(session, json!({})).await
    }
}

/// Every `Set-Cookie` value of a response's headers.
pub fn set_cookies(h: &reqwest::header::HeaderMap) -> Vec<String> {
    h.get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().expect("ASCII cookie").to_owned())
        .collect()
}

/// The value a `Set-Cookie` list gives cookie `name`.
pub fn cookie_in(set: &[String], name: &str) -> Option<String> {
    set.iter().find_map(|c| {
        c.strip_prefix(&format!("{name}="))
            .map(|rest| rest.split(';').next().unwrap_or("").to_owned())
    })
}

/// A client that sends from `ip` (a loopback address) and does not follow redirects: each role or
/// attacker of a test gets its own address, so the per-address failure limit counts only its own.
pub fn client_at(ip: std::net::Ipv4Addr) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(std::net::IpAddr::V4(ip))
        .build()
        .expect("client")
}

/// A form body (`application/x-www-form-urlencoded`).
pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// Reads a streaming response until `needle` has arrived (or 5 s passed); returns what arrived.
pub async fn read_until(r: &mut reqwest::Response, needle: &str) -> String {
    let mut got = String::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while let Ok(Some(chunk)) = r.chunk().await {
            got.push_str(&String::from_utf8_lossy(&chunk));
            if got.contains(needle) {
                break;
            }
        }
    })
    .await;
    got
}
