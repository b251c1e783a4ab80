//! The remote upstream (`--url`, docs/mcp-proxy.md "Remote servers (Streamable HTTP)"): MCP Streamable
//! HTTP (protocol versions 2025-03-26 to 2025-11-25) in place of the child's stdin and stdout. Each line
//! the client → server pipeline forwards is one `POST` to the URL, its body the line's bytes without the
//! newline; the answer (`application/json`: one message or a batch; `text/event-stream`: SSE, one message
//! per event) is turned into lines fed to the server → client pipeline, which reads them as it reads a
//! child's output. The `Mcp-Session-Id` of the `initialize` answer and the negotiated
//! `MCP-Protocol-Version` go on every later request; the server's own messages come on a `GET` stream
//! opened once the client said `notifications/initialized`; at the client's end of input the session is
//! ended with `DELETE`. A request that fails or is refused before it answered the requests it carried is
//! classified by [`crate::mcp_proxy::remote`] and reported to the state ([`State::upstream_failed`]).

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::StreamReader;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::to_client::server_to_client;
use super::to_server::client_to_server;
use super::{finish, start, State, ToServer, UpstreamFailure, OUT_QUEUE};
use crate::mcp_proxy::ledger::Recorder;
use crate::mcp_proxy::message::{self, Message};
use crate::mcp_proxy::read;
use crate::mcp_proxy::remote::{
    as_line, framing, status_verdict, transport_verdict, Framing, StaticHeader, Verdict,
};
use crate::mcp_proxy::tools::ToolSet;
use crate::mcp_proxy::Config;

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// `Accept` of a POST: both answer framings, as MCP Streamable HTTP requires.
const ACCEPT_POST: &str = "application/json, text/event-stream";

/// How long connecting to the server may take (a timeout is a connection not made: nothing was sent).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the pipeline waits for a POST that carries no request (notifications, the client's
/// answers: the server answers 202 at once) before it forwards the next line, so that they reach the
/// server in the client's order; past it the POST goes on in the background.
const NOTIFY_WAIT: Duration = Duration::from_secs(10);
/// The `GET` stream: reconnections after it drops, at most, and the wait before each (the server's
/// SSE `retry` when it sent one).
const GET_RETRIES: u32 = 5;
const GET_RETRY_WAIT: Duration = Duration::from_secs(1);
/// An answer's SSE stream that ended or was cut before all its answers: resumed with a `GET` and
/// `Last-Event-ID` (when the server gave its events ids) at most this many times in a row, after the
/// server's SSE `retry` or [`RESUME_WAIT`] (at most [`RETRY_WAIT_MAX`]).
const RESUME_TRIES: u32 = 3;
const RESUME_WAIT: Duration = Duration::from_millis(500);
const RETRY_WAIT_MAX: Duration = Duration::from_secs(30);
/// Event ids remembered to drop an event delivered twice (a replay after `Last-Event-ID` may hold
/// events of other streams already delivered): the latest this many.
const SEEN_EVENTS: usize = 65_536;
/// Bytes of an SSE event's framing (`data: ` prefixes, `id:` and `event:` lines) allowed on top of
/// `--max-line-bytes`.
const SSE_SLACK: usize = 64 * 1024;
/// How long the `DELETE` that ends the session may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

/// Answer lines for the server → client pipeline.
type Lines = mpsc::Sender<io::Result<Bytes>>;

/// The remote server's session as the proxy holds it.
pub(in crate::mcp_proxy) struct Remote {
    http: reqwest::Client,
    url: url::Url,
    /// `--header`s.
    headers: HeaderMap,
    /// `Mcp-Session-Id` of the `initialize` answer, if the server gave one.
    session: Mutex<Option<HeaderValue>>,
    /// `result.protocolVersion` of the `initialize` answer.
    protocol: Mutex<Option<HeaderValue>>,
    /// Taken (dropped) at the end: then the server → client pipeline sees the end of its input once the
    /// requests in flight dropped their clones.
    lines: Mutex<Option<Lines>>,
    /// The POSTs in flight.
    posts: TaskTracker,
    /// Cancels the POSTs in flight and the GET stream (a signal, or the end).
    stop: CancellationToken,
    get_started: std::sync::atomic::AtomicBool,
    /// Ids of the SSE events delivered (the latest [`SEEN_EVENTS`]): MCP event ids are unique within a
    /// session, so one seen again (a replay) is not delivered again.
    seen: Mutex<SeenEvents>,
    state: Arc<State>,
}

#[derive(Default)]
struct SeenEvents {
    ids: HashSet<String>,
    order: std::collections::VecDeque<String>,
}

impl SeenEvents {
    /// Notes `id`; answers whether it is new.
    fn first_time(&mut self, id: &str) -> bool {
        if !self.ids.insert(id.to_owned()) {
            return false;
        }
        self.order.push_back(id.to_owned());
        if self.order.len() > SEEN_EVENTS {
            if let Some(old) = self.order.pop_front() {
                self.ids.remove(&old);
            }
        }
        true
    }
}

/// Where an SSE stream stands: the id of its last event and the server's `retry`, for a resumption.
#[derive(Debug, Default)]
struct Cursor {
    last_id: Option<String>,
    retry: Option<Duration>,
    /// The stream ended at an event over `--max-line-bytes`: a replay from `last_id` would bring it
    /// again, so the stream is not resumed.
    over_limit: bool,
}

impl Cursor {
    fn wait(&self, default: Duration) -> Duration {
        self.retry.unwrap_or(default).min(RETRY_WAIT_MAX)
    }
}

/// Proxies to the server at `url` until the client's input ends (then the requests in flight are waited
/// for and the session is ended) or a signal; answers the exit code: 0, or 128 + the signal.
pub(super) async fn run(
    cfg: Config,
    tools: ToolSet,
    recorder: Recorder,
    url: url::Url,
    headers: &[StaticHeader],
) -> Result<i32, String> {
    let (state, writer, viewer, turns) = start(cfg, tools, recorder);
    let (remote, answers) = Remote::open(state.clone(), url, headers)?;
    let to_server = tokio::spawn(client_to_server(
        state.clone(),
        ToServer::Http(remote.clone()),
        turns,
        tokio::io::stdin(),
    ));
    let mut to_client = tokio::spawn(server_to_client(state.clone(), answers));
    let signal = tokio::select! {
        _ = &mut to_client => None,
        s = wait_signal() => Some(s),
    };
    if signal.is_some() {
        // The requests in flight are given up (settled outcome_unknown below); the session is ended.
        to_server.abort();
        remote.abandon().await;
        if tokio::time::timeout(Duration::from_secs(2), &mut to_client)
            .await
            .is_err()
        {
            to_client.abort();
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), state.give_up_all()).await;
    to_server.abort();
    finish(&state, signal.is_some(), writer, viewer).await;
    Ok(signal.map_or(0, |s| 128 + s))
}

/// The server → client pipeline's input of a [`Remote`]: the lines of its answers.
pub(super) type AnswerLines = StreamReader<ReceiverStream<io::Result<Bytes>>, Bytes>;

impl Remote {
    /// A new session with the server at `url` for `state` (none is opened before the client's
    /// `initialize`), and the lines of its answers for [`server_to_client`]. Errors: the HTTP client
    /// cannot be made.
    pub(super) fn open(
        state: Arc<State>,
        url: url::Url,
        headers: &[StaticHeader],
    ) -> Result<(Arc<Remote>, AnswerLines), String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot make an HTTP client for {url}: {e}"))?;
        let mut map = HeaderMap::new();
        for h in headers {
            map.append(h.name.clone(), h.value.clone());
        }
        let (tx, rx) = mpsc::channel(OUT_QUEUE);
        let remote = Arc::new(Remote {
            http,
            url,
            headers: map,
            session: Mutex::new(None),
            protocol: Mutex::new(None),
            lines: Mutex::new(Some(tx)),
            posts: TaskTracker::new(),
            stop: CancellationToken::new(),
            get_started: std::sync::atomic::AtomicBool::new(false),
            seen: Mutex::new(SeenEvents::default()),
            state,
        });
        Ok((remote, StreamReader::new(ReceiverStream::new(rx))))
    }

    /// Ends the session at once (a signal, or a `--listen` client's `DELETE`): the POSTs in flight and
    /// the GET stream are stopped (their requests are then given up by the state: `outcome_unknown`),
    /// the session is ended with `DELETE` (at most [`DELETE_TIMEOUT`]) and the answer lines end.
    pub(super) async fn abandon(&self) {
        self.stop.cancel();
        self.take_lines();
        let _ = tokio::time::timeout(DELETE_TIMEOUT, self.delete()).await;
    }

    fn take_lines(&self) -> Option<Lines> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn lines(&self) -> Option<Lines> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The headers of every request: `--header`s, then `Mcp-Session-Id` and `MCP-Protocol-Version` once
    /// known.
    fn headers(&self) -> HeaderMap {
        let mut h = self.headers.clone();
        if let Some(s) = self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            h.insert(MCP_SESSION_ID, s);
        }
        if let Some(v) = self
            .protocol
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            h.insert(MCP_PROTOCOL_VERSION, v);
        }
        h
    }

    /// Sends one line of the client's as a POST in the background. A POST that carries no request
    /// (notifications, answers) is waited for, at most [`NOTIFY_WAIT`], so the next line follows it.
    pub(super) async fn post(self: &Arc<Self>, mut line: Vec<u8>) {
        let Some(lines) = self.lines() else {
            return;
        };
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let inspected = message::inspect(&line);
        let mut requests = Vec::new();
        let (mut initialize, mut initialized) = (None, false);
        for (_, m) in inspected.messages() {
            match m {
                Message::Request { id, method, .. } => {
                    if method == "initialize" {
                        initialize = Some(message::id_key(id));
                    }
                    requests.push(id.clone());
                }
                Message::Notification { method, .. } if method == "notifications/initialized" => {
                    initialized = true;
                }
                _ => {}
            }
        }
        let me = self.clone();
        let carries_requests = !requests.is_empty();
        let body = Bytes::from(line);
        let task = self.posts.spawn(async move {
            tokio::select! {
                _ = me.stop.cancelled() => {}
                _ = me.exchange(body, requests, initialize, &lines) => {
                    if initialized {
                        me.start_get_stream();
                    }
                }
            }
        });
        if !carries_requests {
            let _ = tokio::time::timeout(NOTIFY_WAIT, task).await;
        }
    }

    /// One POST and its answer. Each request in it that the answer did not answer is reported to the
    /// state with why ([`State::upstream_failed`]); a POST accepted without an answer (202, 204) leaves
    /// its requests to the GET stream (and `--call-timeout-secs`).
    async fn exchange(
        &self,
        body: Bytes,
        requests: Vec<Value>,
        initialize: Option<String>,
        lines: &Lines,
    ) {
        let mut answered = HashSet::new();
        let failure = self
            .answer_of(body, &requests, initialize.as_deref(), lines, &mut answered)
            .await;
        let unanswered: Vec<Value> = requests
            .into_iter()
            .filter(|id| !answered.contains(&message::id_key(id)))
            .collect();
        if let (Some(failure), false) = (failure, unanswered.is_empty()) {
            self.state.upstream_failed(&unanswered, &failure).await;
        }
    }

    /// Sends the POST and delivers its answer's messages; answers why the requests it did not answer
    /// went unanswered (`None`: accepted without an answer).
    async fn answer_of(
        &self,
        body: Bytes,
        requests: &[Value],
        initialize: Option<&str>,
        lines: &Lines,
        answered: &mut HashSet<String>,
    ) -> Option<UpstreamFailure> {
        let sent = self
            .http
            .post(self.url.clone())
            .headers(self.headers())
            .header(ACCEPT, ACCEPT_POST)
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => return Some(self.transport_failure(&e)),
        };
        if initialize.is_some() {
            if let Some(s) = response.headers().get(MCP_SESSION_ID) {
                *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(s.clone());
            }
        }
        let status = response.status();
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return None;
        }
        if status != StatusCode::OK {
            let (verdict, why) = status_verdict(status);
            return Some(UpstreamFailure {
                verdict,
                why: format!(
                    "the MCP server at {} answered HTTP {status}: {why}",
                    self.url
                ),
                status: Some(status.as_u16()),
            });
        }
        let unknown = |why: String| UpstreamFailure {
            verdict: Verdict::Unknown,
            why,
            status: None,
        };
        match framing(response.headers().get(CONTENT_TYPE)) {
            Framing::Json => match self.json_body(response).await {
                Ok(b) => {
                    self.deliver(&b, initialize, lines, answered).await;
                    Some(unknown(format!(
                        "the MCP server's answer at {} did not answer this request",
                        self.url
                    )))
                }
                Err(e) => Some(unknown(format!(
                    "the MCP server's answer at {} could not be read: {e}",
                    self.url
                ))),
            },
            Framing::EventStream => {
                let mut cursor = Cursor::default();
                let why = self
                    .events(response, requests, initialize, lines, answered, &mut cursor)
                    .await;
                let why = self
                    .resume(why, requests, initialize, lines, answered, &mut cursor)
                    .await;
                Some(unknown(why))
            }
            Framing::Other => Some(unknown(format!(
                "the MCP server at {} answered {:?}, neither application/json nor text/event-stream",
                self.url,
                response.headers().get(CONTENT_TYPE)
            ))),
        }
    }

    /// A request that got no HTTP answer: not sent (connection refused, DNS, connect timeout:
    /// `not_executed`) or lost after it was sent (`outcome_unknown`).
    fn transport_failure(&self, e: &reqwest::Error) -> UpstreamFailure {
        let verdict = transport_verdict(e.is_connect());
        let why = match verdict {
            Verdict::NotExecuted => format!("cannot connect to the MCP server at {}", self.url),
            Verdict::Unknown => format!(
                "the connection to the MCP server at {} was lost after the request was sent",
                self.url
            ),
        };
        UpstreamFailure {
            verdict,
            why: error_chain(&why, e),
            status: None,
        }
    }

    /// An answer's SSE stream ended or was cut (`why`) before it answered all of `requests`: resumed by
    /// a `GET` with `Last-Event-ID` (MCP Streamable HTTP "Resumability and Redelivery"; a server that
    /// gave no event ids cannot be resumed), at most [`RESUME_TRIES`] times in a row. Answers why the
    /// requests still unanswered went unanswered.
    async fn resume(
        &self,
        mut why: String,
        requests: &[Value],
        initialize: Option<&str>,
        lines: &Lines,
        answered: &mut HashSet<String>,
        cursor: &mut Cursor,
    ) -> String {
        let mut tries = 0;
        while tries < RESUME_TRIES && !cursor.over_limit && !all_answered(requests, answered) {
            let Some(last) = cursor
                .last_id
                .as_deref()
                .and_then(|i| HeaderValue::from_str(i).ok())
            else {
                break;
            };
            tries += 1;
            tokio::time::sleep(cursor.wait(RESUME_WAIT)).await;
            let before = cursor.last_id.clone();
            let sent = self
                .http
                .get(self.url.clone())
                .headers(self.headers())
                .header(LAST_EVENT_ID, last)
                .header(ACCEPT, "text/event-stream")
                .send()
                .await;
            match sent {
                Ok(r)
                    if r.status() == StatusCode::OK
                        && framing(r.headers().get(CONTENT_TYPE)) == Framing::EventStream =>
                {
                    tracing::info!(
                        "resuming an answer's event stream at {} after: {why}",
                        self.url
                    );
                    why = self
                        .events(r, requests, initialize, lines, answered, cursor)
                        .await;
                    if cursor.last_id != before {
                        tries = 0;
                    }
                }
                Ok(r) => {
                    why = format!(
                        "{why}; resuming it with Last-Event-ID was answered HTTP {}",
                        r.status()
                    );
                    break;
                }
                Err(e) => {
                    why = error_chain(&format!("{why}; resuming it with Last-Event-ID failed"), &e);
                }
            }
        }
        why
    }

    /// Reads an SSE stream until it ends, or until `requests` (when there are some) are all answered,
    /// delivering each event's data as one message (an event whose id was delivered before is dropped);
    /// answers why it ended (for the requests it did not answer). `cursor` follows its event ids and
    /// `retry`.
    async fn events(
        &self,
        response: reqwest::Response,
        requests: &[Value],
        initialize: Option<&str>,
        lines: &Lines,
        answered: &mut HashSet<String>,
        cursor: &mut Cursor,
    ) -> String {
        let held = Arc::new(AtomicUsize::new(0));
        let mut events = capped(response, held.clone(), self.answer_limit()).eventsource();
        while let Some(event) = events.next().await {
            match event {
                Ok(ev) => {
                    held.store(0, Ordering::Relaxed);
                    if ev.retry.is_some() {
                        cursor.retry = ev.retry;
                    }
                    if !ev.id.is_empty() {
                        cursor.last_id = Some(ev.id.clone());
                        let new = self
                            .seen
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .first_time(&ev.id);
                        if !new {
                            continue;
                        }
                    }
                    if ev.data.is_empty() {
                        continue;
                    }
                    self.deliver(ev.data.as_bytes(), initialize, lines, answered)
                        .await;
                    if !requests.is_empty() && all_answered(requests, answered) {
                        return "answered".into();
                    }
                }
                Err(e) => {
                    if matches!(
                        e,
                        eventsource_stream::EventStreamError::Transport(BodyError::OverLimit(_))
                    ) {
                        cursor.over_limit = true;
                    }
                    return format!(
                        "the MCP server's event stream at {} was cut before the answer: {e}",
                        self.url
                    );
                }
            }
        }
        format!(
            "the MCP server's event stream at {} ended before the answer",
            self.url
        )
    }

    /// The most bytes of one answer (a JSON body, an SSE event with its framing) the proxy reads:
    /// `--max-line-bytes` plus [`SSE_SLACK`].
    fn answer_limit(&self) -> usize {
        self.state.cfg.max_line_bytes.saturating_add(SSE_SLACK)
    }

    /// An `application/json` body, read whole up to [`Remote::answer_limit`] bytes.
    async fn json_body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, BodyError> {
        let limit = self.answer_limit();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
            if body.len() + chunk.len() > limit {
                return Err(BodyError::OverLimit(self.state.cfg.max_line_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// One message (or batch) of the server's, as one line for the client; the ids it answers are noted
    /// in `answered`. The answer to `initialize` also sets the `MCP-Protocol-Version` of later requests
    /// (before the client can read it).
    async fn deliver(
        &self,
        json: &[u8],
        initialize: Option<&str>,
        lines: &Lines,
        answered: &mut HashSet<String>,
    ) {
        let mut note = |raw: &[u8]| {
            if let Message::Response { id } = message::read_message(raw) {
                let key = message::id_key(&id);
                if initialize == Some(key.as_str()) {
                    if let Some(v) =
                        message::protocol_version(raw).and_then(|v| HeaderValue::from_str(&v).ok())
                    {
                        *self.protocol.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
                    }
                }
                answered.insert(key);
            }
        };
        if message::is_batch(json) {
            read::elements(json, |_, raw| note(raw.get().as_bytes()));
        } else {
            note(json);
        }
        let _ = lines.send(Ok(Bytes::from(as_line(json)))).await;
    }

    /// Opens the GET stream for the server's own messages once (after `notifications/initialized`):
    /// each event forwarded; after a drop, reopened with `Last-Event-ID` (at most [`GET_RETRIES`]
    /// times in a row); a server without one (405) is fine.
    fn start_get_stream(self: &Arc<Self>) {
        if self
            .get_started
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let Some(lines) = self.lines() else {
            return;
        };
        let me = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = me.stop.cancelled() => {}
                _ = me.get_stream(&lines) => {}
            }
        });
    }

    async fn get_stream(&self, lines: &Lines) {
        let mut cursor = Cursor::default();
        let mut failures = 0u32;
        loop {
            let mut headers = self.headers();
            if let Some(id) = cursor
                .last_id
                .as_deref()
                .and_then(|i| HeaderValue::from_str(i).ok())
            {
                headers.insert(LAST_EVENT_ID, id);
            }
            let sent = self
                .http
                .get(self.url.clone())
                .headers(headers)
                .header(ACCEPT, "text/event-stream")
                .send()
                .await;
            match sent {
                Ok(r)
                    if r.status() == StatusCode::OK
                        && framing(r.headers().get(CONTENT_TYPE)) == Framing::EventStream =>
                {
                    failures = 0;
                    let mut none = HashSet::new();
                    let why = self
                        .events(r, &[], None, lines, &mut none, &mut cursor)
                        .await;
                    tracing::debug!("the GET stream ended: {why}");
                    if cursor.over_limit {
                        // A replay would bring that event again: reopened afresh, what the server
                        // sent meanwhile is lost.
                        tracing::warn!("{why}: the GET stream is reopened without Last-Event-ID");
                        cursor = Cursor::default();
                    }
                }
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!("the MCP server offers no GET stream (405)");
                    return;
                }
                Ok(r) => {
                    tracing::warn!(
                        "the MCP server answered the GET stream with HTTP {}",
                        r.status()
                    );
                    return;
                }
                Err(e) => tracing::warn!("the GET stream to {} failed: {e}", self.url),
            }
            failures += 1;
            if failures > GET_RETRIES {
                tracing::warn!(
                    "the GET stream to {} dropped {GET_RETRIES} times in a row: the server's own messages \
                     are no longer received",
                    self.url
                );
                return;
            }
            tokio::time::sleep(cursor.wait(GET_RETRY_WAIT)).await;
        }
    }

    /// The client's input ended: waits for the POSTs in flight (their answers forwarded), stops the GET
    /// stream, ends the session (`DELETE`), and ends the server → client pipeline's input.
    pub(super) async fn finish(&self) {
        self.posts.close();
        self.posts.wait().await;
        self.stop.cancel();
        let _ = tokio::time::timeout(DELETE_TIMEOUT, self.delete()).await;
        self.take_lines();
    }

    /// `DELETE` of the session, when the server gave one (a 405 says it does not allow it: fine).
    async fn delete(&self) {
        if self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
        {
            return;
        }
        match self
            .http
            .delete(self.url.clone())
            .headers(self.headers())
            .send()
            .await
        {
            Ok(r) if r.status().is_success() || r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!("session ended: HTTP {}", r.status());
            }
            Ok(r) => tracing::warn!(
                "ending the MCP session at {}: HTTP {}",
                self.url,
                r.status()
            ),
            Err(e) => tracing::warn!("ending the MCP session at {}: {e}", self.url),
        }
    }
}

/// Why an answer's body was not read to its end.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("{0}")]
    Transport(reqwest::Error),
    /// A JSON body or one SSE event over `--max-line-bytes` (its value): not read further, not
    /// forwarded (docs/mcp-proxy.md "Remote servers (Streamable HTTP)", memory).
    #[error("an answer over --max-line-bytes ({0} bytes): not read, not forwarded")]
    OverLimit(usize),
}

/// A response body for the SSE parser, which holds an event's bytes until the event ends: the bytes
/// since the last event (`held`, set to 0 by the reader at each event) may not pass `limit`, else
/// the body ends with [`BodyError::OverLimit`] (so one event costs the proxy at most about `limit`).
fn capped(
    response: reqwest::Response,
    held: Arc<AtomicUsize>,
    limit: usize,
) -> std::pin::Pin<Box<dyn futures::Stream<Item = Result<Bytes, BodyError>> + Send>> {
    Box::pin(cap_stream(
        response
            .bytes_stream()
            .map(|c| c.map_err(BodyError::Transport)),
        held,
        limit,
    ))
}

/// [`capped`] for any byte stream.
fn cap_stream<S>(
    stream: S,
    held: Arc<AtomicUsize>,
    limit: usize,
) -> impl futures::Stream<Item = Result<Bytes, BodyError>> + Send
where
    S: futures::Stream<Item = Result<Bytes, BodyError>> + Send,
{
    let over = limit.saturating_sub(SSE_SLACK);
    stream.map(move |chunk| {
        let chunk = chunk?;
        let now = held.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
        if now > limit {
            return Err(BodyError::OverLimit(over));
        }
        Ok(chunk)
    })
}

/// Whether every request of `requests` is in `answered` (by [`message::id_key`]).
fn all_answered(requests: &[Value], answered: &HashSet<String>) -> bool {
    requests
        .iter()
        .all(|id| answered.contains(&message::id_key(id)))
}

/// `what` and the causes of `e` (reqwest's own message hides them: "error sending request").
fn error_chain(what: &str, e: &reqwest::Error) -> String {
    let mut out = what.to_owned();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// How long the proxy's end may take once a signal came: the ordered end (calls given up and settled,
/// the upstream session ended, background writes) takes at most about 20 s; past this bound, or at a
/// second signal, the proxy exits at once (docs/mcp-proxy.md "Failure behaviour").
pub(super) const SIGNAL_END_BOUND: Duration = Duration::from_secs(30);

/// Waits for SIGTERM, SIGINT or SIGHUP; answers its number. From then on the proxy's end is bounded:
/// a second signal, or [`SIGNAL_END_BOUND`] after the first, exits the process with 128 + the first
/// signal's number, whatever the ordered end still waits for (a proxy that stays alive after SIGTERM
/// was seen once, its ordered end waiting on a peer that had gone). Writes the proxy had not made stay
/// as last written: an intent without its settlement is settled by the ledger at its deadline.
#[cfg(unix)]
pub(super) async fn wait_signal() -> i32 {
    wait_signal_bounded(SIGNAL_END_BOUND, |code| std::process::exit(code)).await
}

/// [`wait_signal`] with its bound and its exit given (a test passes its own).
#[cfg(unix)]
async fn wait_signal_bounded(bound: Duration, exit: impl FnOnce(i32) + Send + 'static) -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    let first = tokio::select! {
        _ = recv(&mut term) => libc::SIGTERM,
        _ = recv(&mut int) => libc::SIGINT,
        _ = recv(&mut hup) => libc::SIGHUP,
    };
    tokio::spawn(async move {
        let why = tokio::select! {
            _ = recv(&mut term) => "a second signal",
            _ = recv(&mut int) => "a second signal",
            _ = recv(&mut hup) => "a second signal",
            _ = tokio::time::sleep(bound) => "the end took too long",
        };
        tracing::error!(
            "{why} after signal {first}: exiting now; calls still in flight are left to the ledger's \
             deadline (outcome_unknown)"
        );
        exit(128 + first);
    });
    first
}

#[cfg(not(unix))]
pub(super) async fn wait_signal() -> i32 {
    let _ = tokio::signal::ctrl_c().await;
    2
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A signal starts the bounded end: a second signal exits at once with 128 + the first's number.
    /// (One test for both cases: signals go to the whole test process.)
    #[cfg(unix)]
    #[tokio::test]
    async fn after_a_signal_a_second_one_or_the_bound_exits() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let waiting = tokio::spawn({
            let tx = tx.clone();
            wait_signal_bounded(Duration::from_secs(3600), move |code| {
                let _ = tx.send(code);
            })
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        // SAFETY: raise(3) with a valid signal number; the handler above is installed.
        unsafe { libc::raise(libc::SIGHUP) };
        assert_eq!(waiting.await.unwrap(), libc::SIGHUP);
        assert!(rx.try_recv().is_err(), "no exit at the first signal");
        unsafe { libc::raise(libc::SIGHUP) };
        let code = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        assert_eq!(code.unwrap(), Some(128 + libc::SIGHUP));

        let waiting = tokio::spawn(wait_signal_bounded(
            Duration::from_millis(200),
            move |code| {
                let _ = tx.send(code);
            },
        ));
        tokio::time::sleep(Duration::from_millis(100)).await;
        unsafe { libc::raise(libc::SIGHUP) };
        assert_eq!(waiting.await.unwrap(), libc::SIGHUP);
        let code = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        assert_eq!(
            code.unwrap(),
            Some(128 + libc::SIGHUP),
            "the bound exits without a second signal"
        );
    }

    #[test]
    fn an_event_id_is_delivered_once_among_the_latest_kept() {
        let mut seen = SeenEvents::default();
        assert!(seen.first_time("e1"));
        assert!(!seen.first_time("e1"));
        for i in 0..SEEN_EVENTS {
            assert!(seen.first_time(&format!("x{i}")));
        }
        // The oldest id was forgotten (memory stays bounded); the latest are kept.
        assert!(seen.first_time("e1"));
        assert!(!seen.first_time(&format!("x{}", SEEN_EVENTS - 1)));
        assert_eq!(seen.ids.len(), SEEN_EVENTS);
    }

    #[test]
    fn requests_are_answered_by_id_value() {
        let answered: HashSet<String> = [message::id_key(&json!(1)), message::id_key(&json!("a"))]
            .into_iter()
            .collect();
        assert!(all_answered(&[json!(1.0), json!("a")], &answered));
        assert!(!all_answered(&[json!(1), json!("1")], &answered));
        assert!(all_answered(&[], &answered));
    }

    /// Through the SSE parser: events within `--max-line-bytes` pass (the count starts again at each
    /// event), one over it ends the stream with an error before it is held whole.
    #[tokio::test]
    async fn an_sse_event_over_the_limit_ends_the_stream() {
        let max = 100;
        let limit = max + SSE_SLACK;
        let held = Arc::new(AtomicUsize::new(0));
        let small = || Ok(Bytes::from("id: 1\ndata: {\"a\":1}\n\n"));
        let big: Vec<Result<Bytes, BodyError>> = (0..SSE_SLACK / 1024 + 2)
            .map(|i| {
                Ok(Bytes::from(if i == 0 {
                    format!("data: {}", "x".repeat(1024))
                } else {
                    "x".repeat(1024)
                }))
            })
            .collect();
        let chunks: Vec<Result<Bytes, BodyError>> =
            (0..(2 * limit / 20)).map(|_| small()).chain(big).collect();
        let small_events = 2 * limit / 20;
        let mut events =
            cap_stream(futures::stream::iter(chunks), held.clone(), limit).eventsource();
        for _ in 0..small_events {
            let ev = events
                .next()
                .await
                .expect("an event")
                .expect("within the limit");
            assert_eq!(ev.data, r#"{"a":1}"#);
            held.store(0, Ordering::Relaxed);
        }
        let e = events
            .next()
            .await
            .expect("the end")
            .expect_err("over the limit");
        assert!(
            e.to_string().contains("over --max-line-bytes (100 bytes)"),
            "{e}"
        );
    }

    #[test]
    fn the_servers_retry_is_capped() {
        let c = Cursor {
            retry: Some(Duration::from_secs(3600)),
            ..Cursor::default()
        };
        assert_eq!(c.wait(RESUME_WAIT), RETRY_WAIT_MAX);
        assert_eq!(Cursor::default().wait(RESUME_WAIT), RESUME_WAIT);
    }
}
