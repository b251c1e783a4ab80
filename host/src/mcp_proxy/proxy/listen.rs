//! `--listen ADDR` (docs/mcp-proxy.md "Clients by URL (--listen)"): the proxy serves MCP Streamable HTTP
//! to its clients instead of stdio, in front of a command or a `--url`. Each client session (an
//! `initialize` POST without `Mcp-Session-Id`) gets its own upstream session (a new child process, or a
//! new remote session) and its own [`State`]: the same two pipelines as on stdio run per session, the
//! client's stdin replaced by the lines of its POST bodies and the writer to stdout by a router
//! ([`route`]) that sends each line of the server's to the HTTP answer it belongs to: an answer to the
//! POST that carried its request, a progress notification to the POST that named its `progressToken`,
//! anything else (the server's own notifications and requests) to the session's GET stream (or, while
//! none is open, to a POST stream still open). A POST's answer is an SSE stream when the client accepts
//! one (it ends once every request of the POST is answered), else a JSON body; a message's content is
//! never changed (its CR and LF blanks become spaces, [`as_line`]). A POST's SSE events carry ids, and a
//! client whose stream was cut resumes it with `Last-Event-ID` ([`Streams`]). `DELETE` ends the upstream session
//! (the child is killed, the remote session ended): calls still in flight are settled
//! `outcome_unknown` by the state ([`State::give_up_all`]).
//!
//! Security: a loopback address unless `--listen-token` is given; with it every request carries
//! `X-Outcomes-Proxy-Token` (401 otherwise, compared in constant time), a header never sent upstream
//! (the proxy sends the server no header of its clients'); a browser `Origin` other than localhost is
//! refused (403), as MCP asks of local servers against DNS rebinding.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State as AxState};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::StreamReader;
use tokio_util::sync::CancellationToken;

use super::http::{wait_signal, Remote};
use super::to_client::server_to_client;
use super::to_server::client_to_server;
use super::{finish, start_to, Out, State, ToServer, Upstream};
use crate::mcp_proxy::ledger::Recorder;
use crate::mcp_proxy::message::{self, Line, Message};
use crate::mcp_proxy::remote::as_line;
use crate::mcp_proxy::tools::ToolSet;
use crate::mcp_proxy::Config;

/// The header a client sends the `--listen-token` in.
pub const TOKEN_HEADER: HeaderName = HeaderName::from_static("x-outcomes-proxy-token");
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The path the proxy serves MCP at: `http://ADDR/mcp`.
pub const MCP_PATH: &str = "/mcp";
/// Lines queued for one HTTP answer at most; past it the session's router waits (a client that stops
/// reading its GET stream holds its own session's server back). A POST's SSE answer is taken from its
/// queue at once into its [`Replay`], kept for resumption.
const ANSWER_QUEUE: usize = 256;
/// How long the end of a session waits for the server's last lines after the child was killed or the
/// remote session ended.
const END_WAIT: Duration = Duration::from_secs(2);

/// `--listen` and `--listen-token`.
#[derive(Debug, Clone)]
pub(in crate::mcp_proxy) struct Listen {
    pub addr: SocketAddr,
    pub token: Option<String>,
}

/// Makes a new client session's settings, tool set and recorder (its ledger session: a new key per
/// client session unless `--session-key` is given), and says which ledger session it is.
pub(in crate::mcp_proxy) type NewSession =
    Arc<dyn Fn() -> (Config, ToolSet, Recorder, String) + Send + Sync>;

/// Checks `--listen` at start: an address that is not loopback needs a token. Errors as a sentence.
pub(in crate::mcp_proxy) fn check(listen: &Listen) -> Result<(), String> {
    if !listen.addr.ip().is_loopback() && listen.token.is_none() {
        return Err(format!(
            "--listen {}: not a loopback address, so anyone who reaches it could call the MCP server \
             through the proxy; give --listen-token TOKEN (clients send it as X-Outcomes-Proxy-Token) \
             or listen on 127.0.0.1",
            listen.addr
        ));
    }
    if listen.token.as_deref().is_some_and(str::is_empty) {
        return Err("--listen-token: empty".into());
    }
    Ok(())
}

/// The proxy's client sessions and what makes new ones.
struct App {
    upstream: Upstream,
    new_session: NewSession,
    token: Option<String>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl App {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One client session: the way to its client → server pipeline, where the server's lines go, and the
/// token that ends it.
struct Session {
    /// The lines of the client's POSTs; taken at the end.
    input: tokio::sync::Mutex<Option<mpsc::Sender<io::Result<Bytes>>>>,
    routes: Arc<Mutex<Routes>>,
    end: CancellationToken,
    /// Set when a termination signal ends the session (its ledger writes then get less time).
    signalled: std::sync::atomic::AtomicBool,
    /// Done once the session ended (its upstream stopped, its ledger writes waited for).
    ended: CancellationToken,
    /// The SSE answers of its POSTs, kept so that a client whose stream was cut resumes it.
    streams: Mutex<Streams>,
}

/// A session's resumable SSE answers: each POST answered as SSE is stream `n` (from 1), its events
/// numbered from 1 and sent with the id `<n>-<event>` (unique in the session, as MCP asks; the priming
/// event is `<n>-0`). A `GET` with `Last-Event-ID: <n>-<k>` replays stream `n` from its event `k + 1` on
/// and follows it until the POST's requests are answered. A stream is kept until its last event was
/// sent to a client, or [`RESUME_WINDOW`] after its end.
#[derive(Default)]
struct Streams {
    last: u64,
    open: HashMap<u64, Arc<Replay>>,
}

impl Streams {
    fn lock(m: &Mutex<Streams>) -> std::sync::MutexGuard<'_, Streams> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The events of one stream so far, and whether it ended (every request of its POST answered, or the
/// session gone).
struct Replay {
    events: Mutex<(Vec<Bytes>, bool)>,
    /// Bumped at each new event and at the end.
    more: tokio::sync::watch::Sender<u64>,
}

/// How long a stream's events are kept after it ended, for a client whose connection was cut before it
/// got them all.
const RESUME_WINDOW: Duration = Duration::from_secs(60);

/// Where the server's lines of one session go ([`route`]).
#[derive(Default)]
struct Routes {
    /// By request id key ([`message::id_key`]): the answer of the POST that carried the request.
    by_id: HashMap<String, mpsc::Sender<Bytes>>,
    /// By `progressToken` (as JSON text): the answer of the POST whose request named it.
    by_progress: HashMap<String, mpsc::Sender<Bytes>>,
    /// The GET stream, when one is open.
    get: Option<mpsc::Sender<Bytes>>,
}

impl Routes {
    /// Where a message that answers no request goes: the GET stream, else a POST answer still open.
    fn other(&self) -> Option<mpsc::Sender<Bytes>> {
        self.get
            .iter()
            .chain(self.by_id.values())
            .find(|s| !s.is_closed())
            .cloned()
    }
}

/// Serves MCP Streamable HTTP at `http://ADDR/mcp` until a termination signal; then every session is
/// ended (calls in flight settled `outcome_unknown`) and the exit code is 128 + the signal. Errors,
/// as sentences: the address cannot be bound.
pub(super) async fn run(
    listen: Listen,
    upstream: Upstream,
    new_session: NewSession,
    max_body: usize,
) -> Result<i32, String> {
    check(&listen)?;
    let app = Arc::new(App {
        upstream,
        new_session,
        token: listen.token,
        sessions: Mutex::new(HashMap::new()),
    });
    let router = axum::Router::new()
        .route(
            MCP_PATH,
            axum::routing::post(post)
                .get(get_stream)
                .delete(delete)
                .options(|| async { StatusCode::NO_CONTENT }),
        )
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(app.clone());
    let listener = tokio::net::TcpListener::bind(listen.addr)
        .await
        .map_err(|e| format!("--listen {}: cannot listen: {e}", listen.addr))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("--listen {}: {e}", listen.addr))?;
    eprintln!("outcomes mcp-proxy: listening on http://{addr}{MCP_PATH}");
    // An answer is written in small pieces (headers, then SSE events): without TCP_NODELAY, Nagle's
    // algorithm and the client's delayed ACK would hold each back about 40 ms.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY on a client connection: {e}");
        }
    });
    let stop = CancellationToken::new();
    let server = {
        let stop = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
        })
    };
    let signal = wait_signal().await;
    let sessions: Vec<Arc<Session>> = app.lock().drain().map(|(_, s)| s).collect();
    for s in &sessions {
        s.signalled
            .store(true, std::sync::atomic::Ordering::Relaxed);
        s.end.cancel();
    }
    for s in &sessions {
        s.ended.cancelled().await;
    }
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
    Ok(128 + signal)
}

/// Refuses a request without the `--listen-token` (401) or from a browser page that is not on
/// localhost (403).
fn guard(app: &App, headers: &HeaderMap) -> Result<(), Refused> {
    if let Some(token) = &app.token {
        let given = headers
            .get(&TOKEN_HEADER)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if !bool::from(given.ct_eq(token.as_bytes())) {
            return Err(Refused(
                StatusCode::UNAUTHORIZED,
                "outcomes mcp-proxy: this proxy needs its --listen-token in X-Outcomes-Proxy-Token",
            ));
        }
    }
    if let Some(origin) = headers.get(axum::http::header::ORIGIN) {
        if !local_origin(origin) {
            return Err(Refused(
                StatusCode::FORBIDDEN,
                "outcomes mcp-proxy: requests from a web page not on localhost are refused (Origin)",
            ));
        }
    }
    Ok(())
}

/// Whether a browser `Origin` is a page on this machine: `http(s)://localhost`, `127.0.0.1` or `[::1]`,
/// any port.
fn local_origin(origin: &HeaderValue) -> bool {
    let Some(url) = origin.to_str().ok().and_then(|o| url::Url::parse(o).ok()) else {
        return false;
    };
    matches!(url.scheme(), "http" | "https")
        && match url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        }
}

/// A request refused before it reached a session: its status and why.
#[derive(Debug, Clone, Copy)]
struct Refused(StatusCode, &'static str);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        refusal(self.0, self.1)
    }
}

/// An HTTP error with a JSON-RPC error body (id null), as MCP SDK servers answer.
fn refusal(status: StatusCode, message: &str) -> Response {
    let body = message::error_value(&Value::Null, -32000, message, None);
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&body).unwrap_or_default(),
    )
        .into_response()
}

/// The protocol versions the proxy serves its clients: Streamable HTTP's handshake era (`initialize`,
/// then `Mcp-Session-Id`); which one a session speaks is the server's answer to `initialize`.
const SERVED_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
/// Where a request of MCP 2026-07-28 (no `initialize`, no session: every request self-contained) names
/// its protocol version, besides the `MCP-Protocol-Version` header.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// MCP's JSON-RPC error code for a protocol version the server does not support (2026-07-28).
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// A request without a session that names a protocol version the proxy does not serve (its `_meta`
/// envelope's, else its `MCP-Protocol-Version` header): MCP 2026-07-28's session-less requests, e.g. a
/// client's `server/discover` probe. Answered 400 with MCP's "unsupported protocol version" error
/// (-32022) naming the versions served, so that a client negotiates: the official SDKs fall back to
/// `initialize` at one of them; a client that speaks only newer versions gets this error, not a bare
/// "no session". `None` for anything else (a body without one request, no version named, a served one).
fn unsupported_version(headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    let request: Value = serde_json::from_slice(body).ok()?;
    let id = request.get("id")?;
    request.get("method")?.as_str()?;
    let requested = match request
        .pointer("/params/_meta")
        .and_then(|m| m.get(PROTOCOL_VERSION_META))
    {
        Some(v) => v.as_str()?.to_owned(),
        None => headers.get(MCP_PROTOCOL_VERSION)?.to_str().ok()?.to_owned(),
    };
    if SERVED_VERSIONS.contains(&requested.as_str()) {
        return None;
    }
    let message = format!(
        "Unsupported protocol version: outcomes mcp-proxy serves MCP {} (initialize, then \
         Mcp-Session-Id), not {requested}",
        SERVED_VERSIONS.join(", ")
    );
    let data = serde_json::json!({"supported": SERVED_VERSIONS, "requested": requested});
    let body = message::error_value(id, UNSUPPORTED_PROTOCOL_VERSION, &message, Some(data));
    Some(
        (
            StatusCode::BAD_REQUEST,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            serde_json::to_vec(&body).unwrap_or_default(),
        )
            .into_response(),
    )
}

/// The session a request names in `Mcp-Session-Id`: `Ok(None)` when it names none, 404 when it names
/// one the proxy does not know (ended, or never made).
fn session_of(app: &App, headers: &HeaderMap) -> Result<Option<(String, Arc<Session>)>, Refused> {
    let Some(id) = headers.get(&MCP_SESSION_ID) else {
        return Ok(None);
    };
    let id = id.to_str().unwrap_or_default().to_owned();
    match app.lock().get(&id) {
        Some(s) => Ok(Some((id, s.clone()))),
        None => Err(Refused(
            StatusCode::NOT_FOUND,
            "outcomes mcp-proxy: no such session (it ended): initialize a new one",
        )),
    }
}

/// `params._meta.progressToken` of a request, read for routing its progress notifications.
#[derive(Deserialize)]
struct WithProgress {
    params: Option<ProgressParams>,
}
#[derive(Deserialize)]
struct ProgressParams {
    #[serde(rename = "_meta")]
    meta: Option<ProgressMeta>,
    #[serde(rename = "progressToken")]
    progress_token: Option<Value>,
}
#[derive(Deserialize)]
struct ProgressMeta {
    #[serde(rename = "progressToken")]
    progress_token: Option<Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    Many(Vec<WithProgress>),
    One(WithProgress),
}

/// The progress tokens the requests of a POST body name (as JSON text).
fn progress_tokens(body: &[u8]) -> Vec<String> {
    let all = match serde_json::from_slice::<OneOrMany>(body) {
        Ok(OneOrMany::One(m)) => vec![m],
        Ok(OneOrMany::Many(ms)) => ms,
        Err(_) => Vec::new(),
    };
    all.into_iter()
        .filter_map(|m| m.params?.meta?.progress_token)
        .map(|t| t.to_string())
        .collect()
}

/// The `progressToken` of a `notifications/progress` line of the server's (as JSON text).
fn progress_of(line: &[u8]) -> Option<String> {
    serde_json::from_slice::<WithProgress>(line)
        .ok()?
        .params?
        .progress_token
        .map(|t| t.to_string())
}

/// `POST /mcp`: one message or batch of the client's. An `initialize` without `Mcp-Session-Id` makes a
/// session (its id in the answer's `Mcp-Session-Id`); notifications and answers are forwarded and
/// acknowledged with 202; requests are answered with an SSE stream (the client accepts one) or a JSON
/// body, once the server answered them.
async fn post(AxState(app): AxState<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = guard(&app, &headers) {
        return r.into_response();
    }
    let line = as_line(&body);
    let inspected = message::inspect(&line);
    let requests: Vec<String> = inspected
        .messages()
        .filter_map(|(_, m)| match m {
            Message::Request { id, .. } => Some(message::id_key(id)),
            _ => None,
        })
        .collect();
    let initialize = inspected
        .messages()
        .any(|(_, m)| matches!(m, Message::Request { method, .. } if method == "initialize"));
    let (id, session) = match session_of(&app, &headers) {
        Err(r) => return r.into_response(),
        Ok(Some(s)) => s,
        Ok(None) if initialize => match open_session(&app).await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("{e}");
                return refusal(StatusCode::BAD_GATEWAY, &format!("outcomes mcp-proxy: {e}"));
            }
        },
        Ok(None) => {
            if let Some(refused) = unsupported_version(&headers, &body) {
                return refused;
            }
            return refusal(
                StatusCode::BAD_REQUEST,
                "outcomes mcp-proxy: no Mcp-Session-Id: initialize a session first",
            );
        }
    };
    let session_header = HeaderValue::from_str(&id).ok();
    if matches!(inspected, Line::Single(Message::Other)) {
        return refusal(
            StatusCode::BAD_REQUEST,
            "outcomes mcp-proxy: the body is no JSON-RPC message",
        );
    }
    let (tx, rx) = mpsc::channel(ANSWER_QUEUE);
    if !requests.is_empty() {
        let tokens = progress_tokens(&body);
        let mut routes = session.routes.lock().unwrap_or_else(|p| p.into_inner());
        for r in &requests {
            routes.by_id.insert(r.clone(), tx.clone());
        }
        for t in tokens {
            routes.by_progress.insert(t, tx.clone());
        }
    }
    drop(tx);
    {
        let input = session.input.lock().await;
        let sent = match input.as_ref() {
            Some(i) => i.send(Ok(Bytes::from(line))).await.is_ok(),
            None => false,
        };
        if !sent {
            return refusal(
                StatusCode::NOT_FOUND,
                "outcomes mcp-proxy: the session ended: initialize a new one",
            );
        }
    }
    let mut response = if requests.is_empty() {
        StatusCode::ACCEPTED.into_response()
    } else if accepts_sse(&headers) {
        sse_answer(&session, rx, requests, primes(&headers)).into_response()
    } else {
        json_answer(rx, requests).await
    };
    if let Some(v) = session_header {
        response.headers_mut().insert(MCP_SESSION_ID, v);
    }
    response
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

/// The request ids a line of the server's answers (its responses, one or a batch's).
fn answered_ids(line: &[u8]) -> Vec<String> {
    message::inspect(line)
        .messages()
        .filter_map(|(_, m)| match m {
            Message::Response { id } => Some(message::id_key(id)),
            _ => None,
        })
        .collect()
}

/// A POST's answer as SSE: one event per line routed to it, until every request in `requests` is
/// answered (or the session ended).
///
/// The stream is resumable ([`Streams`]): a task takes the lines routed to it into its [`Replay`] (so
/// they are kept when the client's connection is cut), and the answer sends them from there. With
/// `prime` (a client of MCP 2025-11-25 or later, which expects it) the first event is the priming one,
/// an id and empty data, so that the client can resume even before the first message.
fn sse_answer(
    session: &Arc<Session>,
    mut rx: mpsc::Receiver<Bytes>,
    mut requests: Vec<String>,
    prime: bool,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let (more, _) = tokio::sync::watch::channel(0);
    let replay = Arc::new(Replay {
        events: Mutex::new((Vec::new(), false)),
        more,
    });
    let n = {
        let mut streams = Streams::lock(&session.streams);
        streams.last += 1;
        let n = streams.last;
        streams.open.insert(n, replay.clone());
        n
    };
    let (weak, kept) = (Arc::downgrade(session), replay.clone());
    let session = weak.clone();
    tokio::spawn(async move {
        while !requests.is_empty() {
            let Some(line) = rx.recv().await else { break };
            let answered = answered_ids(&line);
            requests.retain(|r| !answered.contains(r));
            kept.events
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .0
                .push(line);
            kept.more.send_modify(|v| *v += 1);
        }
        kept.events.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        kept.more.send_modify(|v| *v += 1);
        // Only the session's copy (if a client did not take it all) is kept for the window.
        drop(kept);
        tokio::time::sleep(RESUME_WINDOW).await;
        if let Some(s) = session.upgrade() {
            Streams::lock(&s.streams).open.remove(&n);
        }
    });
    Sse::new(replayed(weak, n, replay, 0, prime))
}

/// Stream `n`'s events from number `from + 1` on (the priming event first with `prime`), following it
/// to its end; once its last event was sent, `session`'s copy is dropped.
fn replayed(
    session: std::sync::Weak<Session>,
    n: u64,
    replay: Arc<Replay>,
    from: usize,
    prime: bool,
) -> impl futures::Stream<Item = Result<Event, Infallible>> {
    async_stream::stream! {
        if prime {
            yield Ok(Event::default().id(format!("{n}-0")).data(""));
        }
        let mut more = replay.more.subscribe();
        let mut next = from;
        loop {
            more.borrow_and_update();
            let (new, ended) = {
                let events = replay.events.lock().unwrap_or_else(|p| p.into_inner());
                (events.0.get(next..).unwrap_or_default().to_vec(), events.1)
            };
            for line in new {
                next += 1;
                yield Ok(event(&line).id(format!("{n}-{next}")));
            }
            if ended {
                break;
            }
            if more.changed().await.is_err() {
                break;
            }
        }
        if let Some(s) = session.upgrade() {
            Streams::lock(&s.streams).open.remove(&n);
        }
    }
}

/// Whether a client expects a priming event: its `MCP-Protocol-Version` is 2025-11-25 or later (the
/// version that asks servers for one; earlier clients may not take an event without data).
fn primes(headers: &HeaderMap) -> bool {
    headers
        .get(MCP_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= "2025-11-25")
}

/// A `Last-Event-ID` of the proxy's: the stream and the number of the last event the client got.
fn last_event(headers: &HeaderMap) -> Option<(u64, usize)> {
    let v = headers.get("last-event-id")?.to_str().ok()?;
    let (n, k) = v.split_once('-')?;
    Some((n.parse().ok()?, k.parse().ok()?))
}

/// One line of the server's as one SSE event (its text, the newline left out).
fn event(line: &[u8]) -> Event {
    let text = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(line));
    Event::default().data(text)
}

/// A POST's answer as a JSON body, for a client that does not accept SSE: the answer (a batch's answers
/// in an array) once every request is answered; the server's other messages meanwhile are dropped
/// (a JSON body holds answers only).
async fn json_answer(mut rx: mpsc::Receiver<Bytes>, mut requests: Vec<String>) -> Response {
    let batch = requests.len() > 1;
    let mut answers: Vec<Bytes> = Vec::new();
    while !requests.is_empty() {
        let Some(line) = rx.recv().await else { break };
        let answered = answered_ids(&line);
        if answered.is_empty() {
            continue;
        }
        requests.retain(|r| !answered.contains(r));
        answers.push(line);
    }
    let trim = |b: &Bytes| b.strip_suffix(b"\n").unwrap_or(b).to_vec();
    let body = match (batch, answers.len()) {
        (_, 0) => return StatusCode::ACCEPTED.into_response(),
        (false, _) => trim(&answers[0]),
        (true, _) => {
            let mut out = vec![b'['];
            for (i, a) in answers.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let a = trim(a);
                // A batch of answers from the server is one line already: its elements join the array.
                match (a.first(), a.last()) {
                    (Some(b'['), Some(b']')) => out.extend_from_slice(&a[1..a.len() - 1]),
                    _ => out.extend_from_slice(&a),
                }
            }
            out.push(b']');
            out
        }
    };
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// `GET /mcp`: the session's stream of the server's own messages (one open at a time: a new one
/// replaces the old).
async fn get_stream(AxState(app): AxState<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(r) = guard(&app, &headers) {
        return r.into_response();
    }
    let session = match session_of(&app, &headers) {
        Err(r) => return r.into_response(),
        Ok(Some((_, s))) => s,
        Ok(None) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "outcomes mcp-proxy: no Mcp-Session-Id",
            )
        }
    };
    if !accepts_sse(&headers) {
        return refusal(
            StatusCode::NOT_ACCEPTABLE,
            "outcomes mcp-proxy: the GET stream is text/event-stream",
        );
    }
    if let Some((n, k)) = last_event(&headers) {
        let (replay, last) = {
            let streams = Streams::lock(&session.streams);
            (streams.open.get(&n).cloned(), streams.last)
        };
        let rest = replay.as_ref().map(|r| {
            let events = r.events.lock().unwrap_or_else(|p| p.into_inner());
            events.0.len() > k || !events.1
        });
        match (replay, rest) {
            (Some(replay), Some(true)) => {
                let from = Arc::downgrade(&session);
                return Sse::new(replayed(from, n, replay, k, false))
                    .keep_alive(KeepAlive::default())
                    .into_response();
            }
            // A stream of this session's that ended and was sent (or whose window passed): nothing to
            // resume. 405 is Streamable HTTP's "no SSE stream offered at GET": a client does not retry
            // it, while an ordinary GET stream would replace the session's own (the TypeScript SDK
            // resumes a stream that ended with an error answer, and reopens any GET stream that ends).
            _ if n <= last => return refusal(
                StatusCode::METHOD_NOT_ALLOWED,
                "outcomes mcp-proxy: that stream ended and its events were sent: nothing to resume",
            ),
            _ => {}
        }
    }
    let (tx, mut rx) = mpsc::channel(ANSWER_QUEUE);
    session.routes.lock().unwrap_or_else(|p| p.into_inner()).get = Some(tx);
    let stream = async_stream::stream! {
        while let Some(line) = rx.recv().await {
            yield Ok::<_, Infallible>(event(&line));
        }
    };
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `DELETE /mcp`: ends the session (the child killed, the remote session ended; calls in flight
/// settled `outcome_unknown`). Answers once the upstream stopped; its ledger writes go on after.
async fn delete(AxState(app): AxState<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(r) = guard(&app, &headers) {
        return r.into_response();
    }
    let (id, session) = match session_of(&app, &headers) {
        Err(r) => return r.into_response(),
        Ok(Some(s)) => s,
        Ok(None) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "outcomes mcp-proxy: no Mcp-Session-Id",
            )
        }
    };
    app.lock().remove(&id);
    session.end.cancel();
    StatusCode::OK.into_response()
}

/// Makes a client session: its state (a new ledger session unless `--session-key`), its upstream (the
/// command started, or a remote session), both pipelines, and the task that ends it. Errors: the
/// command cannot be started.
async fn open_session(app: &Arc<App>) -> Result<(String, Arc<Session>), String> {
    let (cfg, tools, recorder, key) = (app.new_session)();
    let id = format!("{:032x}", rand::random::<u128>());
    let routes = Arc::new(Mutex::new(Routes::default()));
    let (state, writer, viewer, turns) = {
        let routes = routes.clone();
        start_to(cfg, tools, recorder, move |rx| {
            tokio::spawn(route(rx, routes))
        })
    };
    let (in_tx, in_rx) = mpsc::channel::<io::Result<Bytes>>(16);
    let input = StreamReader::new(ReceiverStream::new(in_rx));
    let session = Arc::new(Session {
        input: tokio::sync::Mutex::new(Some(in_tx)),
        routes,
        end: CancellationToken::new(),
        signalled: std::sync::atomic::AtomicBool::new(false),
        ended: CancellationToken::new(),
        streams: Mutex::new(Streams::default()),
    });
    match &app.upstream {
        Upstream::Command(command) => {
            let (mut child, child_in, child_out) = super::spawn_server(command)?;
            let to_server = tokio::spawn(client_to_server(
                state.clone(),
                ToServer::Stdio(child_in),
                turns,
                input,
            ));
            let mut to_client = tokio::spawn(server_to_client(state.clone(), child_out));
            let (s, app, id2) = (session.clone(), app.clone(), id.clone());
            tokio::spawn(async move {
                let ended_by_client = tokio::select! {
                    _ = s.end.cancelled() => true,
                    _ = child.wait() => false,
                };
                if ended_by_client {
                    // Killed first: a POST waiting to queue its line (the child not reading) then
                    // fails and lets go of the input.
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    s.input.lock().await.take();
                }
                if tokio::time::timeout(END_WAIT, &mut to_client)
                    .await
                    .is_err()
                {
                    to_client.abort();
                }
                let _ = tokio::time::timeout(END_WAIT, state.give_up_all()).await;
                to_server.abort();
                end_session(&app, &id2, &s, &state, writer, viewer).await;
            });
        }
        Upstream::Url { url, headers } => {
            let (remote, answers) = Remote::open(state.clone(), url.clone(), headers)?;
            let to_server = tokio::spawn(client_to_server(
                state.clone(),
                ToServer::Http(remote.clone()),
                turns,
                input,
            ));
            let mut to_client = tokio::spawn(server_to_client(state.clone(), answers));
            let (s, app, id2) = (session.clone(), app.clone(), id.clone());
            tokio::spawn(async move {
                let ended_by_client = tokio::select! {
                    _ = s.end.cancelled() => true,
                    _ = &mut to_client => false,
                };
                if ended_by_client {
                    to_server.abort();
                    s.input.lock().await.take();
                    remote.abandon().await;
                    if tokio::time::timeout(END_WAIT, &mut to_client)
                        .await
                        .is_err()
                    {
                        to_client.abort();
                    }
                }
                let _ = tokio::time::timeout(END_WAIT, state.give_up_all()).await;
                to_server.abort();
                end_session(&app, &id2, &s, &state, writer, viewer).await;
            });
        }
    }
    eprintln!("outcomes mcp-proxy: client session {id}: ledger session {key}");
    app.lock().insert(id.clone(), session.clone());
    Ok((id, session))
}

/// The end of a session, once its upstream stopped: its ledger writes waited for ([`finish`]), its HTTP
/// answers still open ended, and it is forgotten (later requests naming it get 404).
async fn end_session(
    app: &App,
    id: &str,
    session: &Session,
    state: &Arc<State>,
    writer: tokio::task::JoinHandle<()>,
    viewer: Option<tokio::task::JoinHandle<()>>,
) {
    app.lock().remove(id);
    session.input.lock().await.take();
    let signalled = session.signalled.load(std::sync::atomic::Ordering::Relaxed);
    finish(state, signalled, writer, viewer).await;
    *session.routes.lock().unwrap_or_else(|p| p.into_inner()) = Routes::default();
    session.ended.cancel();
    tracing::info!("client session {id} ended");
}

/// The writer to the client of one session: gathers the pieces of each line, then sends the line to
/// where it belongs ([`Routes`]): an answer to the POST of its request, a progress notification to the
/// POST that named its token, anything else to the GET stream (else an open POST stream; with neither
/// open it is dropped, logged).
async fn route(mut rx: mpsc::Receiver<Out>, routes: Arc<Mutex<Routes>>) {
    let mut pending: Vec<u8> = Vec::new();
    while let Some(m) = rx.recv().await {
        match m {
            Out::Line { bytes, _permit, .. } => {
                let mut rest = &bytes[..];
                while let Some(n) = memchr::memchr(b'\n', rest) {
                    pending.extend_from_slice(&rest[..=n]);
                    rest = &rest[n + 1..];
                    let line = Bytes::from(std::mem::take(&mut pending));
                    route_line(&routes, line).await;
                }
                pending.extend_from_slice(rest);
            }
            Out::Flush(ack) => {
                if !pending.is_empty() {
                    let line = Bytes::from(std::mem::take(&mut pending));
                    route_line(&routes, line).await;
                }
                let _ = ack.send(());
            }
        }
    }
}

async fn route_line(routes: &Mutex<Routes>, line: Bytes) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let inspected = message::inspect(&line);
    let to = {
        let mut r = routes.lock().unwrap_or_else(|p| p.into_inner());
        let mut to = None;
        for (_, m) in inspected.messages() {
            if let Message::Response { id } = m {
                if let Some(s) = r.by_id.remove(&message::id_key(id)) {
                    to.get_or_insert(s);
                }
            }
        }
        if to.is_none() {
            if let Line::Single(Message::Notification { method, .. }) = &inspected {
                if method == "notifications/progress" {
                    to = progress_of(&line)
                        .and_then(|t| r.by_progress.get(&t).cloned())
                        .filter(|s| !s.is_closed());
                }
            }
        }
        r.by_progress.retain(|_, s| !s.is_closed());
        to.or_else(|| r.other())
    };
    match to {
        Some(s) => {
            let _ = s.send(line).await;
        }
        None => tracing::warn!(
            "a message of the MCP server's with no open stream to the client (no GET stream): dropped"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_event_ids_name_a_stream_and_an_event() {
        let at = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert("last-event-id", HeaderValue::from_static(v));
            last_event(&h)
        };
        assert_eq!(at("3-0"), Some((3, 0)));
        assert_eq!(at("12-345"), Some((12, 345)));
        for bad in ["", "3", "-1", "a-1", "3-b", "3-1-2", "3--1"] {
            assert_eq!(at(bad), None, "{bad}");
        }
        assert_eq!(last_event(&HeaderMap::new()), None);
        let version = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static(v));
            primes(&h)
        };
        assert!(version("2025-11-25") && version("2026-07-28"));
        assert!(!version("2025-06-18") && !version("2025-03-26"));
        assert!(!primes(&HeaderMap::new()));
    }

    /// A session-less request naming a version the proxy does not serve gets -32022 with the versions
    /// served; one naming a served version, or none, or a notification, is not this refusal.
    #[tokio::test]
    async fn a_session_less_request_of_a_newer_protocol_is_told_the_versions_served() {
        let discover = br#"{"jsonrpc":"2.0","id":"d-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let refused = unsupported_version(&HeaderMap::new(), discover).expect("refused");
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        let body = axum::body::to_bytes(refused.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["id"], "d-1");
        assert_eq!(body["error"]["code"], -32022);
        assert_eq!(
            body["error"]["data"],
            serde_json::json!({"supported": ["2025-03-26", "2025-06-18", "2025-11-25"], "requested": "2026-07-28"})
        );
        let mut header = HeaderMap::new();
        header.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static("2026-07-28"));
        let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        assert!(unsupported_version(&header, list).is_some());
        assert!(unsupported_version(&HeaderMap::new(), list).is_none());
        header.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static("2025-11-25"));
        assert!(unsupported_version(&header, list).is_none());
        header.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static("2026-07-28"));
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(unsupported_version(&header, note).is_none());
    }

    #[test]
    fn only_local_origins_pass() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "http://LOCALHOST",
        ] {
            assert!(local_origin(&HeaderValue::from_static(ok)), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "file://",
            "http://10.0.0.1",
        ] {
            assert!(!local_origin(&HeaderValue::from_static(bad)), "{bad}");
        }
    }

    #[test]
    fn a_non_loopback_listen_needs_a_token() {
        let at = |a: &str, t: Option<&str>| Listen {
            addr: a.parse().expect("addr"),
            token: t.map(str::to_owned),
        };
        assert!(check(&at("127.0.0.1:0", None)).is_ok());
        assert!(check(&at("[::1]:0", None)).is_ok());
        let e = check(&at("0.0.0.0:8080", None)).expect_err("refused");
        assert!(e.contains("--listen-token"), "{e}");
        assert!(check(&at("0.0.0.0:8080", Some("t"))).is_ok());
        assert!(check(&at("0.0.0.0:8080", Some(""))).is_err());
    }

    #[test]
    fn progress_tokens_are_read_from_requests_and_notifications() {
        assert_eq!(
            progress_tokens(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7}}}"#),
            ["7"]
        );
        assert_eq!(
            progress_tokens(br#"[{"id":1,"method":"a","params":{"_meta":{"progressToken":"t"}}},{"id":2,"method":"b"}]"#),
            ["\"t\""]
        );
        assert_eq!(
            progress_of(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#).as_deref(),
            Some("7")
        );
    }
}
