//! The proxy at work (docs/mcp-proxy.md "Ordering" and "Failure behaviour"): the child process, the
//! client → server pipeline (one ordered pipeline: a protected call waits for its approve + intent, and
//! every later line waits behind it), the server → client pipeline (each line forwarded first, its
//! settlement written in the background), the proxy's own timeouts, and the exit.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::task::TaskTracker;

use super::ledger::{NewCall, Operation, Recorder, Settle};
use super::message::{self, Line, Message};
use super::outcome::{self, Decision};
use super::tools::ToolSet;
use super::turns::TurnClock;
use super::{Config, OnLedgerDown};

/// The JSON-RPC error code of the proxy's answer when the ledger could not record a protected call
/// (the call was not forwarded).
pub const LEDGER_REFUSED: i64 = -32010;
/// The JSON-RPC error code of the proxy's answer when a protected call went unanswered past
/// `--call-timeout-secs` (MCP SDKs' "request timeout" code).
pub const CALL_TIMED_OUT: i64 = -32001;

/// How long the exit waits for the background ledger writes after the child exited (their own retries
/// stop at about 30 s), and after a termination signal (the client may kill the proxy soon after).
const DRAIN_AFTER_EXIT: std::time::Duration = std::time::Duration::from_secs(35);
const DRAIN_AFTER_SIGNAL: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a `tools/call` waits for the answers to the `initialize` and `tools/list` requests the
/// client sent before it (a client that sends everything at once, without waiting for answers).
const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// Lines queued for the client at most: past it, reading the server's output waits (so a client that
/// stops reading holds the server back instead of filling the proxy's memory).
const OUT_QUEUE: usize = 1024;
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

enum Out {
    Line(Bytes),
    Flush(oneshot::Sender<()>),
}

struct State {
    cfg: Config,
    recorder: Recorder,
    tools: Mutex<ToolSet>,
    /// `serverInfo.name` of the `initialize` answer.
    server_name: Mutex<Option<String>>,
    watched: Mutex<HashMap<String, Watch>>,
    out: mpsc::Sender<Out>,
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

    /// Queues a line for the client; waits while [`OUT_QUEUE`] lines are queued (a client not reading).
    async fn send(&self, bytes: impl Into<Bytes>) {
        let _ = self.out.send(Out::Line(bytes.into())).await;
    }

    fn new_operation(&self) -> Operation {
        let n = self.next_op.fetch_add(1, Ordering::Relaxed) + 1;
        let mutation_id = format!("op-{}-{n}", self.cfg.run);
        Operation {
            attempt_id: format!("{mutation_id}-a1"),
            mutation_id,
        }
    }

    /// Writes `settle` for `op` in the background.
    fn spawn_settle(self: &Arc<Self>, op: Operation, settle: Settle) -> JoinHandle<()> {
        let st = self.clone();
        self.tracker.spawn(async move {
            st.recorder.settle(&op, settle).await;
        })
    }

    /// Settles every call still in flight `outcome_unknown` (the child exited or its pipe closed before
    /// the answer).
    fn give_up_all(self: &Arc<Self>) {
        let calls: Vec<Arc<Pending>> = {
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
                        Some(op)
                    }
                    _ => None,
                })
                .collect()
        };
        for p in calls {
            tracing::warn!(
                operation_id = %p.op.mutation_id,
                "no answer before the MCP server's output ended: the call is recorded outcome_unknown"
            );
            self.spawn_settle(p.op.clone(), Settle::Unknown);
        }
    }
}

/// Starts `command` and proxies until it exits; answers the exit code (see [`super::run`]).
pub(super) async fn run(
    cfg: Config,
    tools: ToolSet,
    recorder: Recorder,
    command: &[String],
) -> Result<i32, String> {
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the MCP server {:?}: {e}", command[0]))?;
    let child_in = child
        .stdin
        .take()
        .ok_or("the MCP server's stdin is not piped")?;
    let child_out = child
        .stdout
        .take()
        .ok_or("the MCP server's stdout is not piped")?;

    let (tx, rx) = mpsc::channel(OUT_QUEUE);
    let writer = tokio::spawn(write_client(rx));
    let turns = TurnClock::new(cfg.turn_gap, &cfg.run);
    let state = Arc::new(State {
        cfg,
        recorder,
        tools: Mutex::new(tools),
        server_name: Mutex::new(None),
        watched: Mutex::new(HashMap::new()),
        out: tx,
        tracker: TaskTracker::new(),
        next_op: AtomicU64::new(0),
        recorded: Notify::new(),
        lists: tokio::sync::watch::Sender::new(0),
    });
    let viewer = state
        .cfg
        .viewer_link
        .then(|| tokio::spawn(viewer_link(state.clone())));
    let to_server = tokio::spawn(client_to_server(state.clone(), child_in, turns));
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
    state.give_up_all();
    to_server.abort();
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
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        state.out.send(Out::Flush(ack)),
    )
    .await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), acked).await;
    writer.abort();
    Ok(exit_code(status))
}

/// Waits for the child to exit. On SIGTERM, SIGINT or SIGHUP to the proxy, passes SIGTERM to the child
/// and kills it after [`CHILD_GRACE`]. Answers its status and whether a signal ended the wait.
#[cfg(unix)]
async fn wait_child(
    child: &mut tokio::process::Child,
) -> (std::io::Result<std::process::ExitStatus>, bool) {
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
    tokio::select! {
        status = child.wait() => return (status, false),
        _ = recv(&mut term) => {}
        _ = recv(&mut int) => {}
        _ = recv(&mut hup) => {}
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
/// queued.
async fn write_client(mut rx: mpsc::Receiver<Out>) {
    let mut out = tokio::io::stdout();
    let mut gone = false;
    while let Some(m) = rx.recv().await {
        match m {
            Out::Line(bytes) => {
                if gone {
                    continue;
                }
                if out.write_all(&bytes).await.is_err()
                    || (rx.is_empty() && out.flush().await.is_err())
                {
                    tracing::warn!("the client's stdin is closed: answers are no longer delivered");
                    gone = true;
                }
            }
            Out::Flush(ack) => {
                let _ = out.flush().await;
                let _ = ack.send(());
            }
        }
    }
}

/// Reads the client's lines (stdin) and forwards them to the child in order; a protected call is held
/// until its approve + intent are recorded. At the client's end of input, closes the child's stdin (the
/// MCP stdio way to ask a server to exit).
async fn client_to_server(state: Arc<State>, mut child_in: ChildStdin, mut turns: TurnClock) {
    let mut stdin = BufReader::with_capacity(64 * 1024, tokio::io::stdin());
    loop {
        let mut line = Vec::new();
        match stdin.read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("cannot read the client's messages: {e}");
                break;
            }
        }
        let Some(forward) = client_line(&state, line, &mut turns).await else {
            continue;
        };
        if let Err(e) = child_in.write_all(&forward).await {
            tracing::warn!("the MCP server's stdin is closed: {e}");
            break;
        }
    }
    let _ = child_in.shutdown().await;
}

/// One client line: what it starts (watches, records) and the bytes to forward (`None`: nothing).
async fn client_line(state: &Arc<State>, line: Vec<u8>, turns: &mut TurnClock) -> Option<Vec<u8>> {
    let inspected = message::inspect(&line);
    let messages: &[Message] = match &inspected {
        Line::Single(m) => std::slice::from_ref(m),
        Line::Batch(ms) => ms,
    };
    let has_call = messages.iter().any(|m| {
        matches!(m, Message::Request { method, .. } | Message::Notification { method, .. } if method == "tools/call")
    });
    if has_call {
        await_lists(state).await;
    }
    // (index in the line, request id, new call)
    let mut calls: Vec<(usize, Option<Value>, NewCall)> = Vec::new();
    let now = Instant::now();
    for (i, m) in messages.iter().enumerate() {
        match m {
            Message::Request { id, method, .. } if method == "initialize" => {
                watch(state, message::id_key(id), Watch::Initialize);
            }
            Message::Request { id, method, .. } if method == "tools/list" => {
                watch(state, message::id_key(id), Watch::ToolsList);
            }
            Message::Request {
                id,
                method,
                tool: Some(tool),
                turn,
            } if method == "tools/call" => {
                if let Some(c) = new_call(state, tool, turn.as_deref(), turns, now) {
                    calls.push((i, Some(id.clone()), c));
                }
            }
            Message::Notification {
                method,
                tool: Some(tool),
                turn,
                ..
            } if method == "tools/call" => {
                if let Some(c) = new_call(state, tool, turn.as_deref(), turns, now) {
                    calls.push((i, None, c));
                }
            }
            Message::Notification {
                cancels: Some(id), ..
            } => cancelled(state, id),
            _ => {}
        }
    }
    if calls.is_empty() {
        return Some(line);
    }

    let news: Vec<NewCall> = calls.iter().map(|(_, _, c)| c.clone()).collect();
    // Per call: recorded, or why not and whether the batch may have landed all the same.
    let mut maybe_landed = false;
    let results: Vec<Result<(), String>> = match state.recorder.record(&news).await {
        Ok(r) => r,
        Err(e) => {
            maybe_landed = e.maybe_landed();
            // The batch's answer lost: its intents may be recorded. A call not forwarded is then
            // withdrawn (cancelled before the router: the truth, not_executed).
            if state.cfg.on_ledger_down == OnLedgerDown::Refuse && maybe_landed {
                for c in &news {
                    let (st, op) = (state.clone(), c.op.clone());
                    state
                        .tracker
                        .spawn(async move { st.recorder.withdraw(&op).await });
                }
            }
            vec![Err(e.to_string()); news.len()]
        }
    };

    let mut refused: Vec<usize> = Vec::new();
    let mut unanswerable: Vec<Operation> = Vec::new();
    for ((i, id, call), result) in calls.into_iter().zip(results) {
        match (result, id) {
            (Ok(()), Some(id)) => {
                state.recorded.notify_one();
                watch_call(state, id, call.op);
            }
            (Ok(()), None) => {
                // A tools/call sent as a notification is never answered: its outcome is unknown.
                state.recorded.notify_one();
                unanswerable.push(call.op);
            }
            (Err(why), id) if state.cfg.on_ledger_down == OnLedgerDown::Forward => {
                tracing::warn!(
                    operation_id = %call.op.mutation_id, request_id = ?id,
                    "the ledger could not record the call, forwarded anyway (--on-ledger-down forward), \
                     nothing recorded: {why}"
                );
                // Its intent may have landed all the same: then its answer still settles it (a settle of
                // nothing recorded is refused and logged).
                if let (true, Some(id)) = (maybe_landed, id) {
                    watch_call(state, id, call.op);
                }
            }
            (Err(why), id) => {
                tracing::warn!(
                    operation_id = %call.op.mutation_id, request_id = ?id,
                    "the ledger could not record the call: NOT forwarded: {why}"
                );
                if let Some(id) = id {
                    let refusal = message::error_line(
                        &id,
                        LEDGER_REFUSED,
                        &format!(
                            "outcomes mcp-proxy: the ledger could not record this call, so the tool was \
                             NOT called (operation {}): {why}",
                            call.op.mutation_id
                        ),
                        json!({"operation_id": call.op.mutation_id, "tool_called": false}),
                    );
                    state.send(refusal).await;
                }
                refused.push(i);
            }
        }
    }
    for op in unanswerable {
        state.spawn_settle(op, Settle::Unknown);
    }
    if refused.is_empty() {
        return Some(line);
    }
    match inspected {
        Line::Single(_) => None,
        Line::Batch(_) => without(&line, &refused),
    }
}

/// Watches the answer to an `initialize` or `tools/list` request.
fn watch(state: &Arc<State>, key: String, w: Watch) {
    let earlier = state.lock_watched().insert(key, w);
    state.lists.send_modify(|n| *n += 1);
    replaced(state, earlier);
}

/// A watch replaced by a request reusing its id (which JSON-RPC forbids while it is in flight): a list
/// is no longer awaited; a protected call's answer can no longer be told apart, so it is settled
/// `outcome_unknown`.
fn replaced(state: &Arc<State>, earlier: Option<Watch>) {
    match earlier {
        Some(w) if w.is_list() => state.lists.send_modify(|n| *n = n.saturating_sub(1)),
        Some(Watch::Call { op, timer }) => {
            if let Some(t) = timer {
                t.abort();
            }
            tracing::warn!(
                operation_id = %op.op.mutation_id,
                "the client sent another request with the same id before this call's answer: recorded outcome_unknown"
            );
            state.spawn_settle(op.op.clone(), Settle::Unknown);
        }
        _ => {}
    }
}

/// Waits until the `initialize` and `tools/list` requests sent so far are answered. An `initialize` is
/// awaited as long as the child runs, however slowly it starts (`npx -y` on a cold cache): the tool names
/// recorded come from its `serverInfo.name` (docs/mcp-proxy.md "Ordering"), and a server that never
/// answers it answers no call either; the child's exit releases the wait ([`State::give_up_all`]). Then a
/// `tools/list` is awaited at most [`LIST_WAIT`] (the server may never answer it; an unlisted tool is then
/// recorded, the safe side).
async fn await_lists(state: &Arc<State>) {
    let mut rx = state.lists.subscribe();
    loop {
        let initializing = state
            .lock_watched()
            .values()
            .any(|v| matches!(v, Watch::Initialize));
        if !initializing || *rx.borrow_and_update() == 0 {
            break;
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
    if *rx.borrow() == 0 {
        return;
    }
    if tokio::time::timeout(LIST_WAIT, rx.wait_for(|n| *n == 0))
        .await
        .is_err()
    {
        tracing::warn!(
            "no answer to the client's tools/list within {} s: calls are classified without it (an unlisted \
             tool is recorded)",
            LIST_WAIT.as_secs()
        );
        state.lock_watched().retain(|_, v| !v.is_list());
        state.lists.send_replace(0);
    }
}

/// A new protected call of `tool`, or `None` when the tool is not protected.
fn new_call(
    state: &State,
    tool: &str,
    named_turn: Option<&str>,
    turns: &mut TurnClock,
    now: Instant,
) -> Option<NewCall> {
    let protected = state
        .tools
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_protected(tool);
    if !protected {
        turns.touch(now);
        return None;
    }
    Some(NewCall {
        op: state.new_operation(),
        turn: turns.turn_for(named_turn, now),
        tool: format!("mcp__{}__{tool}", state.server_name()),
    })
}

/// Watches a recorded call's answer (and starts its timeout). A request id already in flight (a client
/// reusing an id, which JSON-RPC forbids) makes the earlier call's answer impossible to tell apart: it
/// is settled `outcome_unknown`.
fn watch_call(state: &Arc<State>, id: Value, op: Operation) {
    let key = message::id_key(&id);
    let pending = Arc::new(Pending { op, request_id: id });
    let timer = state.cfg.call_timeout.map(|after| {
        let (st, p, k) = (state.clone(), pending.clone(), key.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(line) = timed_out(&st, &k, &p, after) {
                st.send(line).await;
            }
        })
        .abort_handle()
    });
    let earlier = state
        .lock_watched()
        .insert(key, Watch::Call { op: pending, timer });
    replaced(state, earlier);
}

/// `--call-timeout-secs` elapsed without an answer: settle `outcome_unknown` with `execution_timeout`
/// and answer the line for the client (`None`: the answer came first).
fn timed_out(
    state: &Arc<State>,
    key: &str,
    pending: &Arc<Pending>,
    after: std::time::Duration,
) -> Option<Vec<u8>> {
    let mut w = state.lock_watched();
    match w.get(key) {
        Some(Watch::Call { op, .. }) if Arc::ptr_eq(op, pending) => {}
        _ => return None,
    }
    let id = &pending.op.mutation_id;
    tracing::warn!(operation_id = %id, "no answer within {} s: recorded outcome_unknown (execution_timeout)", after.as_secs());
    let line = message::error_line(
        &pending.request_id,
        CALL_TIMED_OUT,
        &format!(
            "outcomes mcp-proxy: no answer from the MCP server within {} s; the outcome is unknown \
             (operation {id}): the tool may or may not have run, do not repeat it blindly",
            after.as_secs()
        ),
        json!({"operation_id": id, "outcome": "outcome_unknown", "reason": "execution_timeout"}),
    );
    let settled = state.spawn_settle(pending.op.clone(), Settle::TimedOut);
    w.insert(
        key.to_owned(),
        Watch::GaveUp {
            op: pending.clone(),
            settled: Some(settled),
            forward_late: false,
        },
    );
    Some(line)
}

/// The client's `notifications/cancelled` for request `id` (forwarded unchanged by the caller): a
/// protected call in flight is settled `outcome_unknown`.
fn cancelled(state: &Arc<State>, id: &Value) {
    let key = message::id_key(id);
    let mut w = state.lock_watched();
    if w.get(&key).is_some_and(Watch::is_list) {
        // A cancelled list may never be answered: it is no longer awaited.
        w.remove(&key);
        state.lists.send_modify(|n| *n = n.saturating_sub(1));
        return;
    }
    let Some(Watch::Call { .. }) = w.get(&key) else {
        return;
    };
    let Some(Watch::Call { op, timer }) = w.remove(&key) else {
        return;
    };
    if let Some(t) = timer {
        t.abort();
    }
    tracing::info!(operation_id = %op.op.mutation_id, "the client cancelled the call: recorded outcome_unknown");
    let settled = state.spawn_settle(op.op.clone(), Settle::Unknown);
    w.insert(
        key,
        Watch::GaveUp {
            op,
            settled: Some(settled),
            forward_late: true,
        },
    );
}

/// Reads the child's lines (stdout) and forwards each to the client at once; answers to watched
/// requests are then read for the ledger in the background. At the end of the child's output, every
/// call still in flight is settled `outcome_unknown`.
async fn server_to_client(state: Arc<State>, child_out: ChildStdout) {
    let mut reader = BufReader::with_capacity(64 * 1024, child_out);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("cannot read the MCP server's output: {e}");
                break;
            }
        }
        if message::is_batch(&line) {
            server_batch(&state, line).await;
            continue;
        }
        let Some(id) = message::response_id(&line) else {
            state.send(line).await;
            continue;
        };
        let key = message::id_key(&id);
        let watch = state.lock_watched().remove(&key);
        let line = Bytes::from(line);
        match watch {
            None => state.send(line).await,
            Some(w) => {
                let forward = answer(&state, w, &line, None);
                if forward {
                    state.send(line).await;
                }
            }
        }
    }
    state.give_up_all();
}

/// One answer to a watched request (`line` its bytes, or `parsed` when it came in a batch): updates the
/// server name or the tool set before it is forwarded, and writes the ledger's transition in the
/// background. Answers whether the line is forwarded (not: a late answer after the proxy's timeout).
fn answer(state: &Arc<State>, watch: Watch, line: &Bytes, parsed: Option<&Value>) -> bool {
    let parse = || -> Value {
        parsed
            .cloned()
            .unwrap_or_else(|| serde_json::from_slice(line).unwrap_or(Value::Null))
    };
    match watch {
        Watch::Initialize => {
            let v = parse();
            if let Some(name) = v
                .pointer("/result/serverInfo/name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            {
                *state.server_name.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(name.to_owned());
            }
            state.lists.send_modify(|n| *n = n.saturating_sub(1));
            true
        }
        Watch::ToolsList => {
            if let Some(result) = parse().get("result") {
                state
                    .tools
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .learn(result);
            }
            state.lists.send_modify(|n| *n = n.saturating_sub(1));
            true
        }
        Watch::Call { op, timer } => {
            if let Some(t) = timer {
                t.abort();
            }
            let st = state.clone();
            let (line, parsed) = (line.clone(), parsed.cloned());
            state.tracker.spawn(async move {
                let v =
                    parsed.unwrap_or_else(|| serde_json::from_slice(&line).unwrap_or(Value::Null));
                settle_answer(&st, &op.op, &v).await;
            });
            true
        }
        Watch::GaveUp {
            op,
            settled,
            forward_late,
        } => {
            let observed_at = ledger::store::format_time(now_ms());
            let reference = late_reference(&state.server_name(), &op.request_id);
            let st = state.clone();
            let (line, parsed) = (line.clone(), parsed.cloned());
            state.tracker.spawn(async move {
                if let Some(h) = settled {
                    let _ = h.await;
                }
                let v = parsed.unwrap_or_else(|| serde_json::from_slice(&line).unwrap_or(Value::Null));
                if outcome::late_success(&v) {
                    tracing::info!(operation_id = %op.op.mutation_id, "a late success answered the call: reconciled completed");
                    st.recorder
                        .reconcile_completed(&op.op, &reference, &observed_at)
                        .await;
                } else {
                    tracing::info!(operation_id = %op.op.mutation_id, "a late answer that is no success: the outcome stays unknown");
                }
            });
            forward_late
        }
    }
}

/// The ledger transition of a protected call's answer, then its host metadata.
async fn settle_answer(state: &State, op: &Operation, answer: &Value) {
    let r = &state.recorder;
    match outcome::decide(answer, state.cfg.is_error_as) {
        Decision::Completed => match state.cfg.metadata.extract(answer) {
            Some(fields) => {
                r.complete_with_metadata(op, &fields).await;
            }
            None => {
                r.settle(op, Settle::Completed).await;
            }
        },
        Decision::Failed => {
            r.settle(op, Settle::Failed).await;
        }
        Decision::NotExecuted => {
            r.cancel(op).await;
        }
        Decision::Unknown => {
            r.settle(op, Settle::Unknown).await;
        }
    }
}

/// A batch from the server: each answer in it handled as a single one; late answers after the proxy's
/// timeout are left out of the forwarded array (the rest forwarded unchanged when nothing is left out).
async fn server_batch(state: &Arc<State>, line: Vec<u8>) {
    let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(&line) else {
        state.send(line).await;
        return;
    };
    let line = Bytes::from(line);
    let mut dropped = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Message::Response { id } = message::describe(item) else {
            continue;
        };
        let watch = state.lock_watched().remove(&message::id_key(&id));
        if let Some(w) = watch {
            if !answer(state, w, &line, Some(item)) {
                dropped.push(i);
            }
        }
    }
    if dropped.is_empty() {
        state.send(line).await;
    } else if let Some(rest) = without(&line, &dropped) {
        state.send(rest).await;
    }
}

/// A batch line without the elements at `indexes`, `None` when nothing is left. The elements kept are
/// each forwarded byte for byte (read as raw JSON), joined by commas in a new array line.
fn without(line: &[u8], indexes: &[usize]) -> Option<Vec<u8>> {
    let items: Vec<&serde_json::value::RawValue> = serde_json::from_slice(line).ok()?;
    let rest: Vec<&str> = items
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !indexes.contains(i))
        .map(|(_, v)| v.get())
        .collect();
    if rest.is_empty() {
        return None;
    }
    Some(format!("[{}]\n", rest.join(",")).into_bytes())
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

/// The evidence reference of a late answer: `<server name> request <id>`, a string id as its text, a
/// number as its digits (`secure-filesystem-server request 7`).
fn late_reference(server: &str, id: &Value) -> String {
    match id {
        Value::String(s) => format!("{server} request {s}"),
        other => format!("{server} request {other}"),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
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

    #[test]
    fn a_late_answer_is_referenced_by_server_and_request_id() {
        assert_eq!(late_reference("fs", &json!(7)), "fs request 7");
        assert_eq!(late_reference("fs", &json!("call-7")), "fs request call-7");
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
