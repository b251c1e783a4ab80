//! The server → client pipeline (docs/mcp-proxy.md "Failure behaviour"): each line forwarded first, its
//! settlement written in the background; batches, late answers, and lines over `--max-line-bytes`
//! (streamed unread, docs/mcp-proxy.md "Long lines").

use std::ops::Range;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncRead, BufReader};

use super::{without, State, Watch};
use crate::mcp_proxy::ledger::{Operation, Settle};
use crate::mcp_proxy::lines::{self, HeadScan, Read};
use crate::mcp_proxy::message::{self, Message};
use crate::mcp_proxy::outcome::{self, Decision};
use crate::mcp_proxy::read;

/// Reads the server's lines (the child's stdout, or the lines of a remote server's answers) and forwards
/// each to the client at once; answers to watched requests are then read for the ledger in the
/// background. A line over `--max-line-bytes` is streamed to the client piece by piece ([`long_line`]).
/// At the end of the server's output, every call still in flight is settled `outcome_unknown` and every
/// request left unanswered gets the proxy's error.
pub(super) async fn server_to_client<R: AsyncRead + Unpin>(state: Arc<State>, child_out: R) {
    let mut reader = BufReader::with_capacity(64 * 1024, child_out);
    loop {
        let line = match lines::read_line(&mut reader, state.cfg.max_line_bytes).await {
            Ok(Read::Line(line)) => line,
            Ok(Read::Long(head)) => {
                if long_line(&state, &mut reader, head).await {
                    continue;
                }
                break;
            }
            Ok(Read::End) => break,
            Err(e) => {
                tracing::warn!("cannot read the MCP server's output: {e}");
                break;
            }
        };
        if message::is_batch(&line) {
            server_batch(&state, line).await;
            continue;
        }
        let Some(id) = message::response_id(&line) else {
            state.send(line).await;
            continue;
        };
        let key = message::id_key(&id);
        state.lock_asked().remove(&key);
        let watch = state.lock_watched().remove(&key);
        let line = Bytes::from(line);
        match watch {
            None => state.send(line).await,
            Some(w) => {
                let forward = answer(&state, w, line.clone());
                if forward {
                    state.send(line).await;
                }
            }
        }
    }
    state.give_up_all().await;
}

/// A line over `--max-line-bytes` (`head`: its first bytes) forwarded to the client as it is read,
/// piece by piece, never held whole; nothing else is written to the client inside it. Meanwhile
/// [`HeadScan`] reads the id of each response in it: a protected call it answers is settled
/// `outcome_unknown` (its answer was not read, [`unread_answer`]). Answers whether the line ended (else
/// the output did).
async fn long_line<R: AsyncRead + Unpin>(
    state: &Arc<State>,
    reader: &mut BufReader<R>,
    head: Vec<u8>,
) -> bool {
    let mut scan = HeadScan::new();
    let mut on_head = |h: lines::Head| {
        if let Some(id) = h.response_id() {
            unread_answer(state, id);
        }
    };
    let mut total = head.len();
    scan.feed(&head, &mut on_head);
    let out = state.lock_out().await;
    out.push(Bytes::from(head), false).await;
    let ended = loop {
        match lines::read_chunk(reader).await {
            Ok(Some((chunk, ended))) => {
                total += chunk.len();
                scan.feed(&chunk, &mut on_head);
                out.push(chunk, false).await;
                if ended {
                    break true;
                }
            }
            Ok(None) => break false,
            Err(e) => {
                tracing::warn!("cannot read the MCP server's output: {e}");
                break false;
            }
        }
    };
    drop(out);
    tracing::warn!(
        "a line of {total} bytes from the MCP server, over --max-line-bytes ({}), was forwarded unread{}",
        state.cfg.max_line_bytes,
        if ended { "" } else { " (the output ended inside it)" }
    );
    ended
}

/// An answer to request `id` that came in a line over `--max-line-bytes`, forwarded unread: a protected
/// call in flight is settled `outcome_unknown` (a later answer with the same id is then a late answer,
/// forwarded); an awaited `initialize` or `tools/list` is no longer awaited (its answer not learned); a
/// call the proxy gave up on stays `outcome_unknown`.
fn unread_answer(state: &Arc<State>, id: &Value) {
    let key = message::id_key(id);
    state.lock_asked().remove(&key);
    let mut w = state.lock_watched();
    match w.remove(&key) {
        Some(Watch::Call { op, timer }) => {
            if let Some(t) = timer {
                t.abort();
            }
            tracing::warn!(
                operation_id = %op.op.mutation_id,
                "the call's answer came in a line over --max-line-bytes, forwarded unread: recorded outcome_unknown"
            );
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
        Some(watch) if watch.is_list() => {
            tracing::warn!(
                "the answer to the client's initialize or tools/list came in a line over --max-line-bytes: \
                 not read (an unlisted tool is recorded)"
            );
            state.lists.send_modify(|n| *n = n.saturating_sub(1));
        }
        Some(Watch::GaveUp { op, .. }) => tracing::info!(
            operation_id = %op.op.mutation_id,
            "a late answer in a line over --max-line-bytes, not read: the outcome stays unknown"
        ),
        _ => {}
    }
}

/// One answer to a watched request (`answer`: its JSON text, the whole line or a batch's element): updates
/// the server name or the tool set before it is forwarded, and writes the ledger's transition in the
/// background. Only the members needed are read from the text, nothing else is built from it
/// (docs/mcp-proxy.md "Long lines"). Answers whether the line is forwarded (not: a late answer after the
/// proxy's timeout).
fn answer(state: &Arc<State>, watch: Watch, answer: Bytes) -> bool {
    match watch {
        Watch::Initialize => {
            if let Some(name) = message::server_name(&answer) {
                *state.server_name.lock().unwrap_or_else(|p| p.into_inner()) = Some(name);
            }
            state.lists.send_modify(|n| *n = n.saturating_sub(1));
            true
        }
        Watch::ToolsList => {
            state
                .tools
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .learn(&answer);
            state.lists.send_modify(|n| *n = n.saturating_sub(1));
            true
        }
        Watch::Call { op, timer } => {
            if let Some(t) = timer {
                t.abort();
            }
            let st = state.clone();
            state.tracker.spawn(async move {
                // Read, then let go of the answer before the ledger writes (which may retry for 30 s).
                let (decision, metadata) = {
                    let decision = outcome::decide(&answer, st.cfg.is_error_as);
                    let metadata = st.cfg.metadata.extract(&answer);
                    drop(answer);
                    (decision, metadata)
                };
                settle_answer(&st, &op.op, decision, metadata).await;
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
            state.tracker.spawn(async move {
                let success = outcome::late_success(&answer);
                drop(answer);
                if let Some(h) = settled {
                    let _ = h.await;
                }
                if success {
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

/// The ledger transition of a protected call's answer (`decision`), then its host metadata (read from
/// the answer by `--metadata`).
async fn settle_answer(
    state: &State,
    op: &Operation,
    decision: Decision,
    metadata: Option<[Option<String>; 3]>,
) {
    let r = &state.recorder;
    match decision {
        Decision::Completed => match metadata {
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
/// Its elements are read one at a time ([`read::elements`]); only the answers to requests in flight are
/// kept (their index, id and place in the line) until the whole line is known to be a JSON array.
async fn server_batch(state: &Arc<State>, line: Vec<u8>) {
    let line = Bytes::from(line);
    let start = line.as_ptr() as usize;
    // (index in the batch, id key, the element's place in the line)
    let mut answers: Vec<(usize, String, Range<usize>)> = Vec::new();
    let is_array = read::elements(&line, |i, raw| {
        if let Message::Response { id } = message::read_message(raw.get().as_bytes()) {
            let key = message::id_key(&id);
            if state.lock_watched().contains_key(&key) || state.lock_asked().contains_key(&key) {
                let at = raw.get().as_ptr() as usize - start;
                answers.push((i, key, at..at + raw.get().len()));
            }
        }
    });
    if !is_array {
        state.send(line).await;
        return;
    }
    let mut dropped = Vec::new();
    for (i, key, place) in answers {
        let watch = state.lock_watched().remove(&key);
        state.lock_asked().remove(&key);
        if let Some(w) = watch {
            if !answer(state, w, line.slice(place)) {
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
    use serde_json::json;

    use super::*;

    #[test]
    fn a_late_answer_is_referenced_by_server_and_request_id() {
        assert_eq!(late_reference("fs", &json!(7)), "fs request 7");
        assert_eq!(late_reference("fs", &json!("call-7")), "fs request call-7");
    }
}
