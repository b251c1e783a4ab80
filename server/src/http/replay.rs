//! `GET /api/mutation-events?session_id=<key>&logical_turn_id=<id>[&after=<n>]` (seed 000, "Events";
//! docs/api.md "Replay snapshot"): a finite `text/event-stream` snapshot. Exact framing:
//!
//! ```text
//! retry: <ms>\n\n
//! event: mutation_outcome\ndata: <json>\n\n            (legacy entries, full replay only, no id)
//! event: mutation_outcome\nid: <n>\ndata: <json>\n\n   (oldest revision first)
//! id: <max(cursor, highest revision sent)>\n\n          (when above 0)
//! ```
//!
//! Errors, in order: 400 (missing parameter, invalid cursor) → 404 (unknown or expired session, unknown
//! turn; an identifier that could never have been stored is unknown) → 409 (cursor past the turn's latest
//! revision; `field` names where the cursor came from). `after` wins over `Last-Event-ID`.

use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use ledger::ids::{Cursor, LogicalTurnId, SessionKey};
use ledger::ReplayChunks;
use serde::Deserialize;

use super::extract::ReadQuery;
use super::query::{read_id, unknown};
use crate::access::Principal;
use crate::error::ApiError;
use crate::sse;
use crate::AppState;
use utoipa_axum::{router::OpenApiRouter, routes};

/// `GET /api/mutation-events`, documented.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(mutation_events))
}

/// The reconnection delay announced in every snapshot.
pub const RETRY: Duration = Duration::from_millis(3000);

#[derive(Deserialize)]
pub struct ReplayParams {
    session_id: Option<String>,
    logical_turn_id: Option<String>,
    after: Option<String>,
}

/// The `Last-Event-ID` header (documentation only: the handler reads it from the headers, after `after`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct CursorHeader {
    /// Cursor, when `after` is absent: a revision, ASCII digits, 0 to 2^63-1.
    #[param(rename = "Last-Event-ID", value_type = i64, required = false, minimum = 0, maximum = 9_223_372_036_854_774_784_i64)]
    last_event_id: Option<i64>,
}

/// Where the cursor came from: the parameter an error about it names.
const AFTER: &str = "after";
const LAST_EVENT_ID: &str = "Last-Event-ID";

/// The cursor and the field it came from (`after` wins over `Last-Event-ID`); 400 `invalid_cursor` naming
/// that field when it is not one or more ASCII digits up to 2^63-1 (a header value that is not visible
/// ASCII included).
fn cursor(
    params_after: Option<String>,
    headers: &HeaderMap,
) -> Result<Option<(Cursor, &'static str)>, ApiError> {
    let invalid = |field: &str| {
        ApiError::bad_request(
            "invalid_cursor",
            "a cursor is one or more ASCII digits with value at most 9223372036854775807",
            Some(field),
        )
    };
    if let Some(a) = params_after {
        return Cursor::parse(&a)
            .map(|c| Some((c, AFTER)))
            .map_err(|_| invalid(AFTER));
    }
    match headers.get("last-event-id") {
        None => Ok(None),
        Some(v) => {
            let s = v.to_str().map_err(|_| invalid(LAST_EVENT_ID))?;
            Cursor::parse(s)
                .map(|c| Some((c, LAST_EVENT_ID)))
                .map_err(|_| invalid(LAST_EVENT_ID))
        }
    }
}

/// The snapshot's body, exactly as framed on the wire, one write per chunk of the ledger's read: `retry:`
/// first, then the events, then the final `id:` block when above 0.
fn snapshot_body(mut chunks: ReplayChunks) -> impl futures::Stream<Item = sse::Chunk> {
    async_stream::stream! {
        let mut buf = Vec::with_capacity(64);
        sse::frame_retry(&mut buf, RETRY.as_millis());
        loop {
            let events = match chunks.next_chunk().await {
                Ok(Some(events)) => events,
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(error = %e, "replay read failed");
                    yield Err(sse::broken("the replay read"));
                    return;
                }
            };
            for e in &events {
                if let Err(err) = sse::frame(&mut buf, "mutation_outcome", e.revision, &e.outcome) {
                    tracing::error!(error = %err, "record did not serialise");
                    yield Err(sse::broken("a record"));
                    return;
                }
            }
            if !buf.is_empty() {
                yield Ok(Bytes::from(std::mem::take(&mut buf)));
            }
        }
        if let Some(id) = chunks.final_id() {
            sse::frame_id(&mut buf, id);
        }
        if !buf.is_empty() {
            yield Ok(Bytes::from(buf));
        }
    }
}

/// The replay endpoint.
#[utoipa::path(
    get,
    path = "/api/mutation-events",
    tag = "history",
    params(
        ("session_id" = String, Query, min_length = 1, description = "session key"),
        ("logical_turn_id" = String, Query, min_length = 1, description = "logical turn"),
        ("after" = Option<i64>, Query, minimum = 0, maximum = 9_223_372_036_854_774_784_i64, description = "cursor: a revision, ASCII digits, 0 to 2^63-1; wins over Last-Event-ID"),
        CursorHeader,
    ),
    responses(
        (status = 200, description = "finite snapshot: `retry:`, events `mutation_outcome` with `id: <revision>`, final `id:`", content_type = "text/event-stream", body = super::live::ServerSentEvent),
        (status = 400, description = "missing parameter or invalid cursor", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session, or unknown turn", body = ledger::wire::ErrorBody),
        (status = 409, description = "cursor past the turn's latest revision", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn mutation_events(
    State(state): State<AppState>,
    principal: Principal,
    headers: HeaderMap,
    ReadQuery(params): ReadQuery<ReplayParams>,
) -> Result<Response, ApiError> {
    // An identifier that could never have been stored is an unknown one: 404 in its turn, after the 400s.
    let key = read_id(params.session_id, "session_id", SessionKey::parse)?;
    let turn = read_id(
        params.logical_turn_id,
        "logical_turn_id",
        LogicalTurnId::parse,
    )?;
    let cursor = cursor(params.after, &headers)?;
    let key = key.ok_or_else(|| unknown("session_id"))?;
    principal.may_read(&key)?;
    let Some(turn) = turn else {
        state.sessions.check_session(&key).await?;
        return Err(unknown("logical_turn_id"));
    };
    let chunks = state
        .sessions
        .replay_chunks(&key, &turn, cursor.map(|(c, _)| c))
        .await
        .map_err(|e| {
            let mut error = ApiError::from(e);
            if let Some((_, field)) = cursor.filter(|_| error.detail.code == "cursor_ahead") {
                error.detail.field = Some(field.to_owned());
            }
            error
        })?;
    Ok(sse::event_stream(snapshot_body(chunks)))
}
