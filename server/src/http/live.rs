//! `GET /api/run-events?session_id=<key>`: the long-lived live stream of a session (docs/api.md "Live run events").
//! Each event is `event: mutation_outcome` with `data: {"mutation_revision": n, "outcome": <record>}` (no
//! `id:`: revisions are per turn), in revision order per turn; after each commit's outcomes, one
//! `event: turn_changed` with `data: {"logical_turn_id": "<id>", "latest_revision": n}` per turn the
//! commit changed visibly (any change that takes a revision, in-flight intent included; the turn's latest
//! revision after the commit; a page catches up through the entries API's `after_revision`); `event: resync` with
//! `data: {"logical_turn_ids": [...]}` when the client fell behind; `event: claim_changed` with
//! `data: {"mutation_id"}` when who holds an operation's claim changed (not on a viewer's stream); `event: heartbeat` with
//! `data: {"at": "<RFC 3339>"}` every 15 s; `event: session_ended` with `data: {"reason": "deleted" |
//! "expired"}` before the stream of a deleted or expired session closes.
//! A stream whose client does not read ends once a write would leave more than [`MAX_UNSENT_BYTES`] untaken
//! for [`STALL_GRACE`]; its client resumes through its cursor.
//! Errors: 400 (missing parameter) → 404 (unknown or expired session) → 503 `too_many_streams` with
//! `Retry-After` (a cap on live streams in total or per session is reached).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Extension, State};
use axum::response::Response;
use bytes::Bytes;
use ledger::ids::SessionKey;
use ledger::wire::Resync;

use super::extract::ReadQuery;
use super::query::read_param;
use super::read::SessionParam;
use crate::access::{still_valid, Presented, Principal};
use crate::error::ApiError;
use crate::hub::LiveMessage;
use crate::sse;
use crate::AppState;
use utoipa_axum::{router::OpenApiRouter, routes};

/// Bytes of responses the connection's socket has taken so far (written to the kernel), as a request
/// extension: a long response compares it with what it produced to know how much of it is still buffered
/// in this process (this module closes a stream whose client does not read). `conn` counts them.
#[derive(Debug, Clone, Default)]
pub struct SentBytes(Arc<AtomicU64>);

impl SentBytes {
    /// Bytes taken by the socket since the connection opened.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Counts `n` more bytes taken by the socket (the connection's writer calls it).
    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::AcqRel);
    }
}

/// `GET /api/run-events`, documented.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(run_events))
}

/// One event of a `text/event-stream` answer, as the OpenAPI document describes each event of the stream
/// (documentation only): its `event:` name, its `data:` (one line of JSON here), and `id:` / `retry:`
/// where the stream sends them.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ServerSentEvent {
    /// `mutation_outcome`, `turn_changed`, `claim_changed` (staff only), `resync`, `heartbeat`,
    /// `session_ended`.
    event: String,
    /// JSON on one line.
    data: String,
    /// The revision (replay snapshots only).
    id: Option<String>,
    /// Reconnection delay in ms (replay snapshots only).
    retry: Option<u64>,
}

/// Interval of the `heartbeat` events.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// The live stream. Subscribes before answering, so a client that then replays misses nothing. The stream
/// ends when the server shuts down; a client that goes away frees its queue.
#[utoipa::path(
    get,
    path = "/api/run-events",
    tag = "live",
    params(("session_id" = String, Query, min_length = 1, description = "session key")),
    responses(
        (status = 200, description = "long-lived stream: `mutation_outcome` events with data `{\"mutation_revision\", \"outcome\"}` (settled changes); after each commit's outcomes one `turn_changed` event with data `{\"logical_turn_id\", \"latest_revision\"}` per turn the commit changed visibly (intent included: catch up through the entries API's `after_revision`); `resync` events, `heartbeat` events every 15 s, a `session_ended` event before the stream of a deleted or expired session closes", content_type = "text/event-stream", body = ServerSentEvent),
        (status = 400, description = "missing parameter", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session", body = ledger::wire::ErrorBody),
        (status = 503, description = "too many live streams (in total or for this session); retry after `Retry-After` seconds", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn run_events(
    State(state): State<AppState>,
    principal: Principal,
    presented: Option<Extension<Presented>>,
    sent: Option<Extension<SentBytes>>,
    ReadQuery(params): ReadQuery<SessionParam>,
) -> Result<Response, ApiError> {
    let key = read_param(params.session_id_opt(), "session_id", SessionKey::parse)?;
    principal.may_read(&key)?;
    // A viewer's stream closes when the link expires or its session's links are revoked; any stream
    // whose credential stops holding (a revoked link, a removed account or token, a sign-out) sends no
    // further event and closes at its next event or heartbeat.
    let viewer_until = match &principal {
        Principal::Viewer { expires_at, .. } => Some(*expires_at),
        _ => None,
    };
    let presented = presented.map_or(Presented::Lasting, |Extension(p)| p);
    let mut revocations = state.hub.viewer_revocations();
    // Listening for revocations before checking again: a revocation between the middleware's check and
    // now is seen here, one after it arrives as a message.
    if !still_valid(&state, &presented).await {
        return Err(ApiError::credential_required());
    }
    let expiry = viewer_until.map(|until| {
        tokio::time::Instant::now()
            + Duration::from_millis(u64::try_from(until - now_ms()).unwrap_or(0))
    });
    let subscription = state.hub.subscribe(&key);
    // Checked after subscribing: a change committed in between is both queued and replayed, never lost.
    state.sessions.check_session(&key).await?;
    let mut subscription = subscription.map_err(|limit| {
        tracing::warn!(%limit, "live stream refused");
        ApiError::unavailable("too_many_streams", limit.to_string())
    })?;
    let shutdown = state.shutdown.clone();
    let mut unsent = Unsent::new(sent.map(|Extension(s)| s));
    let stream = async_stream::stream! {
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
        let mut last_write: Option<tokio::time::Instant> = None;
        loop {
            let message = tokio::select! {
                m = subscription.next() => m,
                revoked = revocations.recv(), if viewer_until.is_some() => match revoked {
                    Ok(k) if k != key => continue,
                    // Its own session, or lagged (it may have missed its session): close.
                    _ => None,
                },
                _ = async { tokio::time::sleep_until(expiry.unwrap_or_else(tokio::time::Instant::now)).await }, if expiry.is_some() => None,
                _ = heartbeat.tick() => {
                    if !still_valid(&state, &presented).await {
                        break;
                    }
                    let at = ledger::store::format_time(now_ms());
                    let mut buf = Vec::with_capacity(64);
                    if sse::frame(&mut buf, "heartbeat", None, &Heartbeat { at }).is_ok() {
                        if !unsent.room_for(buf.len()).await {
                            break;
                        }
                        yield Ok::<_, std::io::Error>(Bytes::from(buf));
                    }
                    continue;
                }
                _ = shutdown.cancelled() => None,
            };
            let Some(message) = message else { break };
            // A busy stream gathers what arrives within LINGER of its last write and sends it in one
            // write: a thousand streams of a busy session then cost a write each per LINGER, not one per
            // event. A quiet stream sends at once.
            if let (Some(at), LiveMessage::Frame(_)) = (last_write, &message) {
                if at.elapsed() < LINGER {
                    tokio::time::sleep_until(at + LINGER).await;
                }
            }
            let mut buf = Vec::new();
            let viewer = viewer_until.is_some();
            let mut ended = append(&mut buf, message, viewer);
            while !ended && buf.len() < BATCH_BYTES {
                match subscription.try_next() {
                    Some(m) => ended = append(&mut buf, m, viewer),
                    None => break,
                }
            }
            // Nothing is sent once the credential stopped holding (a sign-out, a removed account or
            // token, even by another process): checked before each write, not only at heartbeats.
            if presented != Presented::Lasting && !still_valid(&state, &presented).await {
                break;
            }
            if !buf.is_empty() {
                if !unsent.room_for(buf.len()).await {
                    break;
                }
                last_write = Some(tokio::time::Instant::now());
                buf.shrink_to_fit();
                yield Ok(Bytes::from(buf));
            }
            if ended {
                break;
            }
        }
    };
    Ok(sse::event_stream(stream))
}

/// A busy live stream writes at most once per this interval (docs/api.md, "Live run events").
pub const LINGER: Duration = Duration::from_millis(100);

/// A write of a live stream holds at most about this many bytes of events.
const BATCH_BYTES: usize = 16 * 1024;

/// A live stream's bytes its client has not taken yet (buffered in this process) stay below this; a
/// stream that would pass it and does not get below within [`STALL_GRACE`] is closed, and its client
/// resumes through its cursor (docs/api.md "Live run events").
pub const MAX_UNSENT_BYTES: u64 = 16 * 1024;

/// How long a live stream waits for its client to take enough bytes for the next write.
pub const STALL_GRACE: Duration = Duration::from_secs(2);

/// What a live stream produced against what its connection's socket took.
struct Unsent {
    sent: Option<SentBytes>,
    /// The socket's count when the stream started, plus what the stream produced since.
    produced: u64,
}

impl Unsent {
    fn new(sent: Option<SentBytes>) -> Unsent {
        let produced = sent.as_ref().map_or(0, SentBytes::get);
        Unsent { sent, produced }
    }

    /// Counts `len` more bytes as produced and answers true when the client has taken all that was
    /// produced before, or enough of it that these `len` bytes too stay within [`MAX_UNSENT_BYTES`],
    /// waiting up to [`STALL_GRACE`] for the client to read; false (the stream is to close) when it has not.
    async fn room_for(&mut self, len: usize) -> bool {
        let Some(sent) = &self.sent else {
            return true;
        };
        let len = len as u64;
        let deadline = tokio::time::Instant::now() + STALL_GRACE;
        loop {
            let unsent = self.produced.saturating_sub(sent.get());
            if unsent == 0 || unsent + len <= MAX_UNSENT_BYTES {
                self.produced += len;
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::info!(
                    unsent,
                    "live stream closed: its client does not read; it resumes through its cursor"
                );
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// `data` of a `heartbeat` event.
#[derive(serde::Serialize)]
struct Heartbeat {
    at: String,
}

/// `data` of a `session_ended` event.
#[derive(serde::Serialize)]
struct Ended {
    reason: &'static str,
}

/// Appends `message` as its SSE bytes; `true` when it ends the stream (`session_ended`).
fn append(buf: &mut Vec<u8>, message: LiveMessage, viewer: bool) -> bool {
    let (framed, ends) = match message {
        // A viewer never reads claims: their hints are not sent to a viewer's stream.
        LiveMessage::Frame(frame) if frame.staff_only && viewer => (Ok(()), false),
        LiveMessage::Frame(frame) => {
            buf.extend_from_slice(&frame.bytes);
            (Ok(()), false)
        }
        LiveMessage::Resync(turns) => {
            let data = Resync {
                logical_turn_ids: turns,
            };
            (sse::frame(buf, "resync", None, &data), false)
        }
        LiveMessage::Ended(reason) => {
            let data = Ended {
                reason: reason.as_str(),
            };
            (sse::frame(buf, "session_ended", None, &data), true)
        }
    };
    if let Err(err) = framed {
        tracing::error!(error = %err, "live event did not serialise");
    }
    ends
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
