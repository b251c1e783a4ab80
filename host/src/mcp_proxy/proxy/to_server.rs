//! The client → server pipeline (docs/mcp-proxy.md "Ordering"): one ordered pipeline in which a
//! protected call waits for its approve + intent and every later line waits behind it; the proxy's own
//! call timeouts and the client's cancellations; a client line over `--max-line-bytes` is not forwarded
//! (docs/mcp-proxy.md "Long lines").

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, BufReader};

use super::{
    without, Pending, State, ToServer, Watch, CALL_TIMED_OUT, DUPLICATE_ID, LEDGER_REFUSED,
    LINE_TOO_LONG, LIST_WAIT,
};
use crate::mcp_proxy::ledger::{NewCall, Operation, Settle};
use crate::mcp_proxy::lines::{self, HeadScan, Read};
use crate::mcp_proxy::message::{self, Line, Message};
use crate::mcp_proxy::turns::TurnClock;
use crate::mcp_proxy::OnLedgerDown;

/// Reads the client's lines (`input`: stdin, or the bodies of a `--listen` client's POSTs as lines) and forwards them to the server (the child's stdin, or a remote
/// server's URL) in order; a protected call is held until its approve + intent are recorded. At the
/// client's end of input, closes the child's stdin (the MCP stdio way to ask a server to exit), or ends
/// the remote session ([`ToServer::close`]).
pub(super) async fn client_to_server<R: AsyncRead + Unpin>(
    state: Arc<State>,
    mut upstream: ToServer,
    mut turns: TurnClock,
    input: R,
) {
    let mut stdin = BufReader::with_capacity(64 * 1024, input);
    loop {
        let line = match lines::read_line(&mut stdin, state.cfg.max_line_bytes).await {
            Ok(Read::Line(line)) => line,
            Ok(Read::Long(head)) => {
                if refuse_long_line(&state, &mut stdin, head).await {
                    continue;
                }
                break;
            }
            Ok(Read::End) => break,
            Err(e) => {
                tracing::warn!("cannot read the client's messages: {e}");
                break;
            }
        };
        let Some(forward) = client_line(&state, line, &mut turns).await else {
            continue;
        };
        if let Err(e) = upstream.send(forward).await {
            tracing::warn!("{e}");
            break;
        }
    }
    upstream.close().await;
}

/// Requests of one over-long client line answered at most (their errors are built in memory).
const LONG_LINE_ANSWERS: usize = 1000;

/// A client line over `--max-line-bytes` (`head`: its first bytes), read to its end piece by piece and
/// NOT forwarded: the proxy cannot read it whole, so it cannot tell whether it holds a protected call to
/// record (fail closed). Each request in it whose id [`HeadScan`] reads (at most [`LONG_LINE_ANSWERS`])
/// gets the error [`LINE_TOO_LONG`], in an array when the line is a batch; anything else in it is
/// dropped, logged. Answers whether the line ended (else the input did).
async fn refuse_long_line<R: AsyncRead + Unpin>(
    state: &Arc<State>,
    input: &mut BufReader<R>,
    head: Vec<u8>,
) -> bool {
    let batch = message::is_batch(&head);
    let mut scan = HeadScan::new();
    let (mut ids, mut unanswered) = (Vec::new(), 0usize);
    let mut on_head = |h: lines::Head| match h.request_id() {
        Some(id) if ids.len() < LONG_LINE_ANSWERS => ids.push(id.clone()),
        _ => unanswered += 1,
    };
    let mut total = head.len();
    scan.feed(&head, &mut on_head);
    drop(head);
    let ended = loop {
        match lines::read_chunk(input).await {
            Ok(Some((chunk, ended))) => {
                total += chunk.len();
                scan.feed(&chunk, &mut on_head);
                if ended {
                    break true;
                }
            }
            Ok(None) => break false,
            Err(e) => {
                tracing::warn!("cannot read the client's messages: {e}");
                break false;
            }
        }
    };
    let max = state.cfg.max_line_bytes;
    tracing::warn!(
        "a line of {total} bytes from the client, over --max-line-bytes ({max}), was NOT forwarded: \
         {} request(s) in it answered with an error, {unanswered} other message(s) in it dropped",
        ids.len()
    );
    let errors: Vec<Value> = ids
        .iter()
        .map(|id| {
            message::error_value(
                id,
                LINE_TOO_LONG,
                &format!(
                    "outcomes mcp-proxy: this message is over --max-line-bytes ({max} bytes), so the proxy \
                     could not read it and did NOT forward it to the MCP server: nothing was called"
                ),
                Some(json!({"forwarded": false, "max_line_bytes": max})),
            )
        })
        .collect();
    let answer = match (batch, errors.len()) {
        (_, 0) => None,
        (true, _) => Some(Value::Array(errors)),
        (false, _) => errors.into_iter().last(),
    };
    if let Some(v) = answer {
        let mut line = serde_json::to_vec(&v).unwrap_or_default();
        line.push(b'\n');
        state.send_own(line).await;
    }
    ended
}

/// One client line: what it starts (watches, records) and the bytes to forward (`None`: nothing).
async fn client_line(state: &Arc<State>, line: Vec<u8>, turns: &mut TurnClock) -> Option<Vec<u8>> {
    let inspected = message::inspect(&line);
    let has_call = inspected.messages().any(|(_, m)| {
        matches!(m, Message::Request { method, .. } | Message::Notification { method, .. } if method == "tools/call")
    });
    if has_call {
        await_lists(state).await;
    }
    let duplicates = duplicate_ids(state, &inspected).await;
    // (index in the line, request id, new call)
    let mut calls: Vec<(usize, Option<Value>, NewCall)> = Vec::new();
    let now = Instant::now();
    for (i, m) in inspected.messages() {
        if duplicates.contains(&i) {
            continue;
        }
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
                traceparent,
            } if method == "tools/call" => {
                if let Some(c) = new_call(state, tool, turn.as_deref(), turns, now) {
                    let c = NewCall {
                        traceparent: traceparent.clone(),
                        ..c
                    };
                    calls.push((i, Some(id.clone()), c));
                }
            }
            Message::Notification {
                method,
                tool: Some(tool),
                turn,
                traceparent,
                ..
            } if method == "tools/call" => {
                if let Some(c) = new_call(state, tool, turn.as_deref(), turns, now) {
                    let c = NewCall {
                        traceparent: traceparent.clone(),
                        ..c
                    };
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
        ask(state, &inspected, &duplicates);
        return forwarded(line, &inspected, &duplicates);
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

    let mut refused: Vec<usize> = duplicates;
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
                    state.send_own(refusal).await;
                }
                refused.push(i);
            }
        }
    }
    for op in unanswerable {
        state.spawn_settle(op, Settle::Unknown);
    }
    ask(state, &inspected, &refused);
    forwarded(line, &inspected, &refused)
}

/// What of a client line is forwarded: all of it, or without the elements at `refused` (a single
/// message refused: nothing).
fn forwarded(line: Vec<u8>, inspected: &Line, refused: &[usize]) -> Option<Vec<u8>> {
    if refused.is_empty() {
        return Some(line);
    }
    match inspected {
        Line::Single(_) => None,
        Line::Batch(_) => without(&line, refused),
    }
}

/// The requests of a client line whose id is already in flight (forwarded and not answered), held by a
/// protected call the proxy gave up on (its timeout, or the client's cancellation: the server may still
/// answer it, and that late answer reconciles that call), or taken by an earlier request of the same
/// line: JSON-RPC forbids reusing an id while its request is in flight (MCP: ever, within a session),
/// and the answers could no longer be told apart. Each is answered with [`DUPLICATE_ID`] and NOT
/// forwarded (nothing recorded, nothing called); the request holding the id keeps it
/// (docs/mcp-proxy.md "Failure behaviour"). Answers the indexes of those requests in the line.
async fn duplicate_ids(state: &Arc<State>, inspected: &Line) -> Vec<usize> {
    let requests: Vec<(usize, &Value, String)> = inspected
        .messages()
        .filter_map(|(i, m)| match m {
            Message::Request { id, .. } => Some((i, id, message::id_key(id))),
            _ => None,
        })
        .collect();
    // One lock at a time (elsewhere `watched` is taken before `asked`).
    let in_use: Vec<bool> = {
        let asked = state.lock_asked();
        requests
            .iter()
            .map(|(_, _, k)| asked.contains_key(k))
            .collect()
    };
    let gave_up: Vec<bool> = {
        let watched = state.lock_watched();
        requests
            .iter()
            .map(|(_, _, k)| matches!(watched.get(k), Some(Watch::GaveUp { .. })))
            .collect()
    };
    let mut seen = std::collections::HashSet::new();
    let mut duplicates: Vec<(usize, Value)> = Vec::new();
    for (n, (i, id, key)) in requests.iter().enumerate() {
        if in_use[n] || gave_up[n] || !seen.insert(key.as_str()) {
            duplicates.push((*i, (*id).clone()));
        }
    }
    for (_, id) in &duplicates {
        tracing::warn!(request_id = %id, "the client reused the id of a request in flight: answered with an error, NOT forwarded");
        let refusal = message::error_line(
            id,
            DUPLICATE_ID,
            &format!(
                "outcomes mcp-proxy: request id {id} is already in use by a request in flight (JSON-RPC \
                 forbids reusing it before its answer), so this request was NOT forwarded: nothing was called"
            ),
            json!({"forwarded": false}),
        );
        state.send_own(refusal).await;
    }
    duplicates.into_iter().map(|(i, _)| i).collect()
}

/// Notes the requests of a line about to be forwarded (all but the elements at `refused`) as awaiting
/// the server's answer.
fn ask(state: &State, line: &Line, refused: &[usize]) {
    let batch = matches!(line, Line::Batch(_));
    let ids: Vec<&Value> = line
        .messages()
        .filter(|(i, _)| !refused.contains(i))
        .filter_map(|(_, m)| match m {
            Message::Request { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    if !ids.is_empty() {
        state.ask(&ids, batch);
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
        traceparent: None,
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
                st.send_own(line).await;
            }
        })
        .abort_handle()
    });
    keep_alive(state, &key, &pending);
    let earlier = state
        .lock_watched()
        .insert(key, Watch::Call { op: pending, timer });
    replaced(state, earlier);
}

/// While the call waits for its answer, extends its deadline every third of it (docs/api.md
/// "Deadlines"): a live proxy keeps a long call in flight, a dead one stops extending and the ledger
/// settles the call `outcome_unknown` at its deadline. Ends once the call is no longer watched (answered,
/// timed out, cancelled, or the server gone).
fn keep_alive(state: &Arc<State>, key: &str, pending: &Arc<Pending>) {
    let (st, p, k) = (state.clone(), pending.clone(), key.to_owned());
    let every = state.recorder.extend_every();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let waiting = matches!(
                st.lock_watched().get(&k),
                Some(Watch::Call { op, .. }) if Arc::ptr_eq(op, &p)
            );
            if !waiting {
                return;
            }
            st.recorder.extend(&p.op).await;
        }
    });
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
    state.lock_asked().remove(key);
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
    // The client gave up on it: it expects no answer, from the server or the proxy.
    state.lock_asked().remove(&key);
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
