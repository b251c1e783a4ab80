//! The proxy at work (docs/mcp-proxy.md "Ordering" and "Failure behaviour"): the child process, the
//! client → server pipeline (one ordered pipeline: a protected call waits for its approve + intent, and
//! every later line waits behind it), the server → client pipeline (each line forwarded first, its
//! settlement written in the background), the proxy's own timeouts, and the exit. The two pipelines are
//! [`to_server`] (client → server) and [`to_client`] (server → client); this module starts the child, the
//! writer to the client and the viewer link, and waits for the exit. With `--url` the server is remote
//! ([`http`], docs/mcp-proxy.md "Remote servers (Streamable HTTP)"): the same two pipelines run, the
//! child's stdin and stdout replaced by HTTP requests and the lines of their answers ([`ToServer`]).
//! With `--listen` ([`listen`], docs/mcp-proxy.md "Clients by URL (--listen)") each client session runs
//! its own state and pipelines, the client's stdin replaced by its POST bodies and the writer to stdout
//! by a router to its HTTP answers.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::task::TaskTracker;

use super::ledger::{Operation, Recorder, Settle};
use super::message;
use super::read;
use super::remote::{StaticHeader, Verdict};
use super::tools::ToolSet;
use super::turns::TurnClock;
use super::Config;

mod http;
mod listen;
mod to_client;
mod to_server;

use to_client::server_to_client;
use to_server::client_to_server;

/// The JSON-RPC error code of the proxy's answer when the ledger could not record a protected call
/// (the call was not forwarded).
pub const LEDGER_REFUSED: i64 = -32010;
/// The JSON-RPC error code of the proxy's answer when a protected call went unanswered past
/// `--call-timeout-secs` (MCP SDKs' "request timeout" code).
pub const CALL_TIMED_OUT: i64 = -32001;
/// The JSON-RPC error code of the proxy's answer to a request the server's output ended without
/// answering (MCP SDKs' "connection closed" code).
pub const SERVER_GONE: i64 = -32000;
/// The JSON-RPC error code of the proxy's answer to a client request in a line over `--max-line-bytes`
/// (not forwarded).
pub const LINE_TOO_LONG: i64 = -32011;

/// The JSON-RPC error code of the proxy's answer to a request a remote server did not execute: it could
/// not be sent (connection refused, DNS), or the server refused it before processing it (HTTP 401, 403,
/// 400, 404, …: docs/mcp-proxy.md "Remote servers (Streamable HTTP)").
pub const UPSTREAM_REFUSED: i64 = -32012;

/// The JSON-RPC error code ("Invalid Request") of the proxy's answer to a client request whose id is
/// already in use by a request in flight (not forwarded).
pub const DUPLICATE_ID: i64 = -32600;

/// How long the exit waits for the background ledger writes after the child exited (their own retries
/// stop at about 30 s), and after a termination signal (the client may kill the proxy soon after).
const DRAIN_AFTER_EXIT: std::time::Duration = std::time::Duration::from_secs(35);
const DRAIN_AFTER_SIGNAL: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a `tools/call` waits for the answers to the `initialize` and `tools/list` requests the
/// client sent before it (a client that sends everything at once, without waiting for answers).
const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// Lines (or pieces of a long line) queued for the client at most; they also hold at most
/// `--max-line-bytes` + [`OUT_SLACK`] bytes. Past either, reading the server's output waits (so a client
/// that stops reading holds the server back instead of filling the proxy's memory).
const OUT_QUEUE: usize = 1024;
const OUT_SLACK: usize = 128 * 1024;
/// How long a terminated child gets to exit after SIGTERM before it is killed.
const CHILD_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// What the proxy waits for an answer to, by request id ([`message::id_key`]).
enum Watch {
    Initialize,
    ToolsList,
    /// A protected call in flight.
    Call {
        op: Arc<Pending>,
        timer: Option<AbortHandle>,
    },
    /// A protected call the proxy gave up on (settled `outcome_unknown`): after its own timeout (the
    /// client has the proxy's answer, so a late answer is not forwarded) or the client's cancellation
    /// (a late answer is forwarded). A late success reconciles it.
    GaveUp {
        op: Arc<Pending>,
        settled: Option<JoinHandle<()>>,
        forward_late: bool,
    },
}

impl Watch {
    fn is_list(&self) -> bool {
        matches!(self, Watch::Initialize | Watch::ToolsList)
    }
}

/// A recorded call waiting for its answer.
#[derive(Debug)]
struct Pending {
    op: Operation,
    request_id: Value,
}

/// A client request forwarded to the server and not answered yet: its id, its order among them, and its
/// client batch (the JSON-RPC batch line it came in, numbered), if any.
#[derive(Debug, Clone)]
struct Asked {
    id: Value,
    seq: u64,
    batch: Option<u64>,
}

enum Out {
    /// Bytes for the client: a whole line, or a piece of a long one. `own`: a line of the proxy's own,
    /// which starts on a new line even when the server's output ended inside one. The permit holds the
    /// bytes' share of the queue's byte budget until they are written.
    Line {
        bytes: Bytes,
        own: bool,
        _permit: OwnedSemaphorePermit,
    },
    Flush(oneshot::Sender<()>),
}

/// The right to write to the client: whoever holds it writes whole lines, so a long line streamed under
/// one lock has nothing written inside it.
struct OutLock<'a> {
    tx: tokio::sync::MutexGuard<'a, mpsc::Sender<Out>>,
    budget: &'a Arc<Semaphore>,
    cap: usize,
}

impl OutLock<'_> {
    /// Queues bytes for the client; waits while the queue is full (in lines or bytes).
    async fn push(&self, bytes: Bytes, own: bool) {
        let n = u32::try_from(bytes.len().min(self.cap)).unwrap_or(u32::MAX);
        let Ok(permit) = self.budget.clone().acquire_many_owned(n).await else {
            return;
        };
        let _ = self
            .tx
            .send(Out::Line {
                bytes,
                own,
                _permit: permit,
            })
            .await;
    }
}

struct State {
    cfg: Config,
    recorder: Recorder,
    tools: Mutex<ToolSet>,
    /// `serverInfo.name` of the `initialize` answer.
    server_name: Mutex<Option<String>>,
    watched: Mutex<HashMap<String, Watch>>,
    /// The client's requests forwarded to the server and not answered yet, by id key
    /// ([`message::id_key`]): the proxy answers them itself when the server's output ends.
    asked: Mutex<HashMap<String, Asked>>,
    next_asked: AtomicU64,
    next_batch: AtomicU64,
    out: tokio::sync::Mutex<mpsc::Sender<Out>>,
    /// The queue's byte budget (`--max-line-bytes` + [`OUT_SLACK`]) and its size.
    budget: Arc<Semaphore>,
    budget_cap: usize,
    /// The background ledger writes (settle, cancel, reconcile, metadata).
    tracker: TaskTracker,
    next_op: AtomicU64,
    /// Signalled after each recorded call (the viewer link waits for the session to exist).
    recorded: Notify,
    /// How many `initialize` and `tools/list` requests await their answer: a `tools/call` that follows
    /// them waits (at most [`LIST_WAIT`]) until the answers named the server and listed its tools.
    lists: tokio::sync::watch::Sender<usize>,
}

impl State {
    fn lock_watched(&self) -> std::sync::MutexGuard<'_, HashMap<String, Watch>> {
        self.watched.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn server_name(&self) -> String {
        if let Some(n) = &self.cfg.fixed_name {
            return n.clone();
        }
        self.server_name
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| self.cfg.fallback_name.clone())
    }

    fn lock_asked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Asked>> {
        self.asked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes the client's requests of one line, forwarded to the server now (`batch`: the line is a
    /// batch). Called before the line is written, so the answer cannot come first.
    fn ask(&self, ids: &[&Value], batch: bool) {
        let batch = batch.then(|| self.next_batch.fetch_add(1, Ordering::Relaxed));
        let mut asked = self.lock_asked();
        for id in ids {
            let seq = self.next_asked.fetch_add(1, Ordering::Relaxed);
            asked.insert(
                message::id_key(id),
                Asked {
                    id: (*id).clone(),
                    seq,
                    batch,
                },
            );
        }
    }

    /// The right to write to the client, waited for while a long line is streamed.
    async fn lock_out(&self) -> OutLock<'_> {
        OutLock {
            tx: self.out.lock().await,
            budget: &self.budget,
            cap: self.budget_cap,
        }
    }

    /// Queues a line of the server's for the client; waits while the queue is full (a client not
    /// reading).
    async fn send(&self, bytes: impl Into<Bytes>) {
        self.lock_out().await.push(bytes.into(), false).await;
    }

    /// Queues a line of the proxy's own for the client.
    async fn send_own(&self, bytes: impl Into<Bytes>) {
        self.lock_out().await.push(bytes.into(), true).await;
    }

    fn new_operation(&self) -> Operation {
        let n = self.next_op.fetch_add(1, Ordering::Relaxed) + 1;
        let mutation_id = format!("op-{}-{n}", self.cfg.run);
        Operation {
            attempt_id: format!("{mutation_id}-a1"),
            mutation_id,
        }
    }

    /// Cancels `op` (`not_executed`: the tool was not called) in the background.
    fn spawn_cancel(self: &Arc<Self>, op: Operation) -> JoinHandle<()> {
        let st = self.clone();
        self.tracker.spawn(async move {
            st.recorder.cancel(&op).await;
        })
    }

    /// A remote server's request failed or was refused before it answered the requests `ids` it carried
    /// (docs/mcp-proxy.md "Remote servers (Streamable HTTP)"): each still awaiting its answer gets the
    /// proxy's error, and a protected call in flight among them is cancelled (`not_executed`) or settled
    /// `outcome_unknown`, by `failure`'s verdict. Requests already answered (the proxy's timeout) or
    /// cancelled by the client are left alone.
    async fn upstream_failed(self: &Arc<Self>, ids: &[Value], failure: &UpstreamFailure) {
        for id in ids {
            let key = message::id_key(id);
            if self.lock_asked().remove(&key).is_none() {
                continue;
            }
            let call = {
                let mut w = self.lock_watched();
                match w.get(&key) {
                    Some(Watch::Call { .. }) => match w.remove(&key) {
                        Some(Watch::Call { op, timer }) => {
                            if let Some(t) = timer {
                                t.abort();
                            }
                            Some(op)
                        }
                        _ => None,
                    },
                    Some(v) if v.is_list() => {
                        w.remove(&key);
                        self.lists.send_modify(|n| *n = n.saturating_sub(1));
                        None
                    }
                    _ => None,
                }
            };
            if let Some(p) = &call {
                match failure.verdict {
                    Verdict::NotExecuted => {
                        tracing::warn!(operation_id = %p.op.mutation_id, "{}: recorded not_executed", failure.why);
                        self.spawn_cancel(p.op.clone());
                    }
                    Verdict::Unknown => {
                        tracing::warn!(operation_id = %p.op.mutation_id, "{}: recorded outcome_unknown", failure.why);
                        self.spawn_settle(p.op.clone(), Settle::Unknown);
                    }
                }
            }
            let mut line = serde_json::to_vec(&failure.error(id, call.as_ref().map(|p| &p.op)))
                .unwrap_or_default();
            line.push(b'\n');
            self.send_own(line).await;
        }
    }

    /// Writes `settle` for `op` in the background.
    fn spawn_settle(self: &Arc<Self>, op: Operation, settle: Settle) -> JoinHandle<()> {
        let st = self.clone();
        self.tracker.spawn(async move {
            st.recorder.settle(&op, settle).await;
        })
    }

    /// The server's output ended (the child exited or closed it): every call still in flight is settled
    /// `outcome_unknown`, and every request it left unanswered gets the proxy's JSON-RPC error
    /// ([`SERVER_GONE`]; a protected call's names its operation id and the unknown outcome), those of one
    /// client batch together in one array line (docs/mcp-proxy.md "Failure behaviour").
    async fn give_up_all(self: &Arc<Self>) {
        let calls: HashMap<String, Arc<Pending>> = {
            let mut w = self.lock_watched();
            w.retain(|_, v| !v.is_list());
            self.lists.send_replace(0);
            let keys: Vec<String> = w
                .iter()
                .filter(|(_, v)| matches!(v, Watch::Call { .. }))
                .map(|(k, _)| k.clone())
                .collect();
            keys.into_iter()
                .filter_map(|k| match w.remove(&k) {
                    Some(Watch::Call { op, timer }) => {
                        if let Some(t) = timer {
                            t.abort();
                        }
                        Some((k, op))
                    }
                    _ => None,
                })
                .collect()
        };
        for p in calls.values() {
            tracing::warn!(
                operation_id = %p.op.mutation_id,
                "no answer before the MCP server's output ended: the call is recorded outcome_unknown"
            );
            self.spawn_settle(p.op.clone(), Settle::Unknown);
        }
        let mut asked: Vec<(String, Asked)> = self.lock_asked().drain().collect();
        asked.sort_by_key(|(_, a)| a.seq);
        // Consecutive requests of one batch are answered together.
        let mut groups: Vec<(Option<u64>, Vec<Value>)> = Vec::new();
        for (key, a) in asked {
            let error = gone_error(&a.id, calls.get(&key).map(|p| &p.op));
            match groups.last_mut() {
                Some((Some(b), errors)) if a.batch == Some(*b) => errors.push(error),
                _ => groups.push((a.batch, vec![error])),
            }
        }
        for (batch, errors) in groups {
            let value = match batch {
                Some(_) => Value::Array(errors),
                None => errors.into_iter().next().unwrap_or(Value::Null),
            };
            let mut line = serde_json::to_vec(&value).unwrap_or_default();
            line.push(b'\n');
            self.send_own(line).await;
        }
    }
}

/// The proxy's answer to request `id` that the server's output ended without answering: for a protected
/// call (`op`), naming its operation and the unknown outcome.
fn gone_error(id: &Value, op: Option<&Operation>) -> Value {
    match op {
        Some(op) => message::error_value(
            id,
            SERVER_GONE,
            &format!(
                "outcomes mcp-proxy: the MCP server's output ended before it answered; the outcome is \
                 unknown (operation {}): the tool may or may not have run, do not repeat it blindly",
                op.mutation_id
            ),
            Some(serde_json::json!({"operation_id": op.mutation_id, "outcome": "outcome_unknown"})),
        ),
        None => message::error_value(
            id,
            SERVER_GONE,
            "outcomes mcp-proxy: the MCP server's output ended before it answered this request",
            None,
        ),
    }
}

/// Why a remote server did not answer requests (docs/mcp-proxy.md "Remote servers (Streamable HTTP)"):
/// what it means for a protected call, why (a sentence naming the URL or the HTTP status), and the
/// HTTP status when there was one.
#[derive(Debug, Clone)]
pub(super) struct UpstreamFailure {
    pub verdict: Verdict,
    pub why: String,
    pub status: Option<u16>,
}

impl UpstreamFailure {
    /// The proxy's answer to request `id` (`op`: the protected call it was): [`UPSTREAM_REFUSED`] with
    /// `data.tool_called: false` when not executed, [`SERVER_GONE`] with `data.outcome: outcome_unknown`
    /// when the outcome is unknown; `data.http_status` when the server answered with a status.
    fn error(&self, id: &Value, op: Option<&Operation>) -> Value {
        let mut data = serde_json::Map::new();
        if let Some(op) = op {
            data.insert("operation_id".into(), Value::from(op.mutation_id.clone()));
        }
        if let Some(s) = self.status {
            data.insert("http_status".into(), Value::from(s));
        }
        let operation = op
            .map(|op| format!(" (operation {})", op.mutation_id))
            .unwrap_or_default();
        let (code, message) = match self.verdict {
            Verdict::NotExecuted => {
                data.insert("tool_called".into(), Value::Bool(false));
                (
                    UPSTREAM_REFUSED,
                    format!(
                        "outcomes mcp-proxy: {}, so the MCP server did NOT execute this request{operation}: \
                         nothing was called",
                        self.why
                    ),
                )
            }
            Verdict::Unknown if op.is_some() => {
                data.insert("outcome".into(), Value::from("outcome_unknown"));
                (
                    SERVER_GONE,
                    format!(
                        "outcomes mcp-proxy: {}; the outcome is unknown{operation}: the tool may or may \
                         not have run, do not repeat it blindly",
                        self.why
                    ),
                )
            }
            Verdict::Unknown => (
                SERVER_GONE,
                format!(
                    "outcomes mcp-proxy: {}: the MCP server did not answer this request",
                    self.why
                ),
            ),
        };
        let data = (!data.is_empty()).then_some(Value::Object(data));
        message::error_value(id, code, &message, data)
    }
}

/// Where the MCP server is: a command the proxy starts (stdio), or a remote URL (MCP Streamable HTTP,
/// docs/mcp-proxy.md "Remote servers (Streamable HTTP)").
#[derive(Clone)]
pub(super) enum Upstream {
    Command(Vec<String>),
    Url {
        url: url::Url,
        headers: Vec<StaticHeader>,
    },
}

/// The client → server pipeline's way to the server: the child's stdin, or HTTP requests to a remote
/// server.
pub(super) enum ToServer {
    Stdio(ChildStdin),
    Http(Arc<http::Remote>),
}

impl ToServer {
    /// Forwards one line (its bytes as read, newline included). An error (the child's stdin closed) ends
    /// the pipeline; a remote request's failure is the request's own ([`State::upstream_failed`]).
    async fn send(&mut self, line: Vec<u8>) -> Result<(), String> {
        match self {
            ToServer::Stdio(w) => w
                .write_all(&line)
                .await
                .map_err(|e| format!("the MCP server's stdin is closed: {e}")),
            ToServer::Http(remote) => {
                remote.post(line).await;
                Ok(())
            }
        }
    }

    /// The client's input ended: closes the child's stdin (MCP's way to ask a stdio server to stop), or
    /// waits for the remote requests in flight and ends the remote session ([`http::Remote::finish`]).
    async fn close(self) {
        match self {
            ToServer::Stdio(mut w) => {
                let _ = w.shutdown().await;
            }
            ToServer::Http(remote) => remote.finish().await,
        }
    }
}

/// Proxies to `upstream` until it ends; answers the exit code (see [`super::run`]).
pub(super) async fn run(
    cfg: Config,
    tools: ToolSet,
    recorder: Recorder,
    upstream: Upstream,
) -> Result<i32, String> {
    match upstream {
        Upstream::Command(command) => run_stdio(cfg, tools, recorder, &command).await,
        Upstream::Url { url, headers } => http::run(cfg, tools, recorder, url, &headers).await,
    }
}

pub(super) use listen::{check as check_listen, Listen, NewSession};

/// Serves `--listen` clients in front of `upstream` until a termination signal (see [`listen::run`]).
pub(super) async fn run_listen(
    listen: Listen,
    upstream: Upstream,
    new_session: NewSession,
    max_body: usize,
) -> Result<i32, String> {
    listen::run(listen, upstream, new_session, max_body).await
}

/// What both upstreams share: the state, the writer to the client (stdout), the viewer link's task, and
/// the turn clock of the client → server pipeline.
fn start(
    cfg: Config,
    tools: ToolSet,
    recorder: Recorder,
) -> (
    Arc<State>,
    JoinHandle<()>,
    Option<JoinHandle<()>>,
    TurnClock,
) {
    start_to(cfg, tools, recorder, |rx| tokio::spawn(write_client(rx)))
}

/// [`start`] with another writer to the client: `writer` is given the queue of what goes to the client
/// (`--listen`: [`listen`] routes each line to the HTTP answer it belongs to).
fn start_to(
    cfg: Config,
    tools: ToolSet,
    recorder: Recorder,
    writer: impl FnOnce(mpsc::Receiver<Out>) -> JoinHandle<()>,
) -> (
    Arc<State>,
    JoinHandle<()>,
    Option<JoinHandle<()>>,
    TurnClock,
) {
    let (tx, rx) = mpsc::channel(OUT_QUEUE);
    let budget_cap = cfg.max_line_bytes + OUT_SLACK;
    let writer = writer(rx);
    let turns = TurnClock::new(cfg.turn_gap, &cfg.run);
    let state = Arc::new(State {
        cfg,
        recorder,
        tools: Mutex::new(tools),
        server_name: Mutex::new(None),
        watched: Mutex::new(HashMap::new()),
        asked: Mutex::new(HashMap::new()),
        next_asked: AtomicU64::new(0),
        next_batch: AtomicU64::new(0),
        out: tokio::sync::Mutex::new(tx),
        budget: Arc::new(Semaphore::new(budget_cap)),
        budget_cap,
        tracker: TaskTracker::new(),
        next_op: AtomicU64::new(0),
        recorded: Notify::new(),
        lists: tokio::sync::watch::Sender::new(0),
    });
    let viewer = state
        .cfg
        .viewer_link
        .then(|| tokio::spawn(viewer_link(state.clone())));
    (state, writer, viewer, turns)
}

/// What both upstreams share at the end, once the calls in flight were given up: the viewer link
/// stopped, the background ledger writes waited for (at most [`DRAIN_AFTER_EXIT`], after a signal
/// [`DRAIN_AFTER_SIGNAL`]), the client's output flushed.
async fn finish(
    state: &Arc<State>,
    signalled: bool,
    writer: JoinHandle<()>,
    viewer: Option<JoinHandle<()>>,
) {
    if let Some(v) = viewer {
        v.abort();
    }
    state.tracker.close();
    let drain = if signalled {
        DRAIN_AFTER_SIGNAL
    } else {
        DRAIN_AFTER_EXIT
    };
    if tokio::time::timeout(drain, state.tracker.wait())
        .await
        .is_err()
    {
        tracing::error!(
            "ledger writes still pending after {} s at exit: their entries stay as last written \
             (in flight is published outcome_unknown)",
            drain.as_secs()
        );
    }
    let (ack, acked) = oneshot::channel();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
        state.out.lock().await.send(Out::Flush(ack)).await
    })
    .await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), acked).await;
    writer.abort();
}

/// Starts the MCP server `command` (program and arguments; not empty) as a child with piped stdin and
/// stdout and the proxy's stderr, killed when dropped; answers it with its stdin and stdout, or why it
/// could not start.
pub(super) fn spawn_server(
    command: &[String],
) -> Result<
    (
        tokio::process::Child,
        tokio::process::ChildStdin,
        tokio::process::ChildStdout,
    ),
    String,
> {
    let (program, args) = command
        .split_first()
        .ok_or("no MCP server command was given")?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the MCP server {program:?}: {e}"))?;
    let child_in = child
        .stdin
        .take()
        .ok_or("the MCP server's stdin is not piped")?;
    let child_out = child
        .stdout
        .take()
        .ok_or("the MCP server's stdout is not piped")?;
    Ok((child, child_in, child_out))
}

/// Starts `command` and proxies until it exits; answers the exit code (see [`super::run`]).
async fn run_stdio(
    cfg: Config,
    tools: ToolSet,
    recorder: Recorder,
    command: &[String],
) -> Result<i32, String> {
    let (mut child, child_in, child_out) = spawn_server(command)?;

    let (state, writer, viewer, turns) = start(cfg, tools, recorder);
    let to_server = tokio::spawn(client_to_server(
        state.clone(),
        ToServer::Stdio(child_in),
        turns,
        tokio::io::stdin(),
    ));
    let mut to_client = tokio::spawn(server_to_client(state.clone(), child_out));

    let (status, signalled) = wait_child(&mut child).await;
    // Whatever the child wrote before it exited still reaches the client (bounded: a grandchild may hold
    // the pipe open).
    if tokio::time::timeout(std::time::Duration::from_secs(2), &mut to_client)
        .await
        .is_err()
    {
        to_client.abort();
    }
    // Its settles start at once; its answers wait at most 2 s for a client that does not read.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), state.give_up_all()).await;
    to_server.abort();
    finish(&state, signalled, writer, viewer).await;
    Ok(exit_code(status))
}

/// Waits for the child to exit. On SIGTERM, SIGINT or SIGHUP to the proxy, passes SIGTERM to the child
/// and kills it after [`CHILD_GRACE`]. Answers its status and whether a signal ended the wait.
#[cfg(unix)]
async fn wait_child(
    child: &mut tokio::process::Child,
) -> (std::io::Result<std::process::ExitStatus>, bool) {
    tokio::select! {
        status = child.wait() => return (status, false),
        _ = http::wait_signal() => {}
    }
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with our own child's pid and a valid signal number has no memory effects.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let status = match tokio::time::timeout(CHILD_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    (status, true)
}

/// Waits for the child to exit; on Ctrl-C, kills it (there is no SIGTERM to pass on).
#[cfg(not(unix))]
async fn wait_child(
    child: &mut tokio::process::Child,
) -> (std::io::Result<std::process::ExitStatus>, bool) {
    tokio::select! {
        status = child.wait() => return (status, false),
        _ = tokio::signal::ctrl_c() => {}
    }
    let _ = child.start_kill();
    (child.wait().await, true)
}

/// The child's exit code, 128 + the signal that ended it, or 1 when its status could not be read.
fn exit_code(status: std::io::Result<std::process::ExitStatus>) -> i32 {
    #[cfg(unix)]
    use std::os::unix::process::ExitStatusExt;
    match status {
        #[cfg(unix)]
        Ok(s) => s
            .code()
            .or_else(|| s.signal().map(|sig| 128 + sig))
            .unwrap_or(1),
        #[cfg(not(unix))]
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            tracing::error!("cannot read the MCP server's exit status: {e}");
            1
        }
    }
}

/// Writes lines to the client (stdout) in the order they were sent, flushing whenever nothing else is
/// queued. A line of the proxy's own after output that ended inside a line (the server's last line
/// without its newline) starts on a new line, so the client can read it.
async fn write_client(mut rx: mpsc::Receiver<Out>) {
    let mut out = tokio::io::stdout();
    let mut gone = false;
    let mut line_open = false;
    while let Some(m) = rx.recv().await {
        match m {
            Out::Line {
                bytes,
                own,
                _permit: permit,
            } => {
                if gone || bytes.is_empty() {
                    continue;
                }
                let newline: &[u8] = if own && line_open { b"\n" } else { b"" };
                line_open = bytes.last() != Some(&b'\n');
                if out.write_all(newline).await.is_err()
                    || out.write_all(&bytes).await.is_err()
                    || (rx.is_empty() && out.flush().await.is_err())
                {
                    tracing::warn!("the client's stdin is closed: answers are no longer delivered");
                    gone = true;
                }
                // The bytes are written: their share of the queue's byte budget is free.
                drop(permit);
            }
            Out::Flush(ack) => {
                let _ = out.flush().await;
                let _ = ack.send(());
            }
        }
    }
}

/// Mints the viewer link once the session exists (at start when it already does, else after the first
/// recorded call) and prints it.
async fn viewer_link(state: Arc<State>) {
    loop {
        match state.recorder.viewer_link().await {
            Ok(Some(url)) => {
                eprintln!("outcomes mcp-proxy: viewer link: {url}");
                return;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("cannot mint a viewer link yet: {e}"),
        }
        state.recorded.notified().await;
    }
}

/// A batch line without the elements at `indexes`, `None` when nothing is left (or the line is no JSON
/// array). The elements kept are each forwarded byte for byte (read one at a time as raw JSON,
/// [`read::elements`]), joined by commas in a new array line.
fn without(line: &[u8], indexes: &[usize]) -> Option<Vec<u8>> {
    let mut rest = Vec::with_capacity(line.len() + 1);
    rest.push(b'[');
    let mut kept = 0usize;
    let is_array = read::elements(line, |i, raw| {
        if !indexes.contains(&i) {
            if kept > 0 {
                rest.push(b',');
            }
            rest.extend_from_slice(raw.get().as_bytes());
            kept += 1;
        }
    });
    if !is_array || kept == 0 {
        return None;
    }
    rest.extend_from_slice(b"]\n");
    Some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_loses_only_the_named_elements() {
        let line = br#"[{"id":1,"result":{}}, {"id":2,"result":{}},{"id":3,"error":{"code":1}}]"#;
        assert_eq!(
            without(line, &[1]).expect("rest"),
            br#"[{"id":1,"result":{}},{"id":3,"error":{"code":1}}]"#
                .iter()
                .chain(b"\n")
                .copied()
                .collect::<Vec<u8>>()
        );
        assert_eq!(without(line, &[0, 1, 2]), None);
        assert_eq!(without(b"not json", &[0]), None);
    }

    #[cfg(unix)]
    #[test]
    fn exit_codes_are_the_childs() {
        use std::os::unix::process::ExitStatusExt;
        let exited = |code: i32| Ok(std::process::ExitStatus::from_raw(code << 8));
        assert_eq!(exit_code(exited(0)), 0);
        assert_eq!(exit_code(exited(3)), 3);
        // Killed by SIGKILL (9): 128 + 9.
        assert_eq!(exit_code(Ok(std::process::ExitStatus::from_raw(9))), 137);
        assert_eq!(exit_code(Err(std::io::Error::other("x"))), 1);
    }
}
