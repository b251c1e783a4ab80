//! Export of a session (docs/api.md "Export"): `GET /api/sessions/{session_key}/export[?history=true]`,
//! JSON Lines streamed a chunk of the ledger's read at a time, as a download. Read access as every
//! session read (a viewer of another session gets the 404 of an unknown session).

use axum::extract::State;
use axum::http::header::CONTENT_DISPOSITION;
use axum::http::HeaderValue;
use axum::response::Response;
use bytes::Bytes;
use ledger::ids::SessionKey;
use ledger::{HistoryChunks, OperationHistoryChunks};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::extract::{ReadPath, ReadQuery};
use super::query::{read_param, unknown};
use crate::access::Principal;
use crate::error::ApiError;
use crate::sse;
use crate::AppState;

/// `GET /api/sessions/{session_key}/export`, documented.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(export))
}

/// `?history=true|false`.
#[derive(Deserialize)]
pub struct ExportParams {
    history: Option<String>,
}

/// `GET /api/sessions/{session_key}/export[?history=true]` → 200 `application/x-ndjson`, as a download
/// (`Content-Disposition: attachment`): every `mutation_outcome/v1` record of the session, one a line,
/// exactly the records and order of `GET /api/mutation-outcomes?session_id=<key>`; with `history=true`,
/// after them one line per operation of the session (published or not) in the shape of the history API's
/// answer, in the same order (for a viewer, as the history API answers a viewer: no staff notes, staff
/// actors as `staff`). Streamed: the server holds one chunk of the read at a time.
#[utoipa::path(
    get,
    path = "/api/sessions/{session_key}/export",
    tag = "read",
    params(
        ("session_key" = String, Path, description = "session key, percent-encoded"),
        ("history" = Option<bool>, Query, description = "true: after the records, one line per operation in the shape of the history API's answer; default false"),
    ),
    responses(
        (status = 200, description = "JSON Lines: every record of the session, one a line (as GET /api/mutation-outcomes), then with history=true one operation history a line (as GET /api/sessions/{session_key}/mutations/{mutation_id}/history)", content_type = "application/x-ndjson"),
        (status = 400, description = "history is neither true nor false, or a malformed query or path", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn export(
    State(state): State<AppState>,
    principal: Principal,
    // The query before the path: its errors come first.
    ReadQuery(params): ReadQuery<ExportParams>,
    ReadPath(key): ReadPath<String>,
) -> Result<Response, ApiError> {
    let with_history = match params.history.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_parameter",
                "history is true or false",
                Some("history"),
            ))
        }
    };
    let key = key.map_err(|_| unknown("session_id"))?;
    let key = read_param(Some(key), "session_id", SessionKey::parse)?;
    principal.may_read(&key)?;
    let records = state.sessions.history(&key).await?;
    let histories = if with_history {
        Some(state.sessions.operation_histories(&key).await?)
    } else {
        None
    };
    let internal = principal.sees_internal();
    let mut response = sse::ndjson_stream(lines(records, histories, internal));
    let disposition = format!("attachment; filename=\"{}\"", filename(&key));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        response.headers_mut().insert(CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// The download's name: `session-<key>.ndjson`, the key kept to ASCII letters, digits, `.`, `_` and `-`
/// (anything else becomes `_`) and at most 100 of them, so it is safe as a file name and in the quoted
/// header value.
pub fn filename(key: &SessionKey) -> String {
    let safe: String = key
        .as_str()
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("session-{safe}.ndjson")
}

/// Each of `items` as one JSON line, in one buffer.
fn to_lines<T: Serialize>(items: &[T]) -> Result<Vec<u8>, serde_json::Error> {
    let mut buf = Vec::with_capacity(items.len() * 256);
    for item in items {
        serde_json::to_writer(&mut buf, item)?;
        buf.push(b'\n');
    }
    Ok(buf)
}

/// The records, a chunk per write, then (when asked) the operation histories, a chunk per write. A store
/// failure ends the body early (the connection is closed before its end).
/// Without `internal` (a viewer), each history is written without what is internal to staff
/// ([`crate::access::without_internal`]).
fn lines(
    mut records: HistoryChunks,
    histories: Option<OperationHistoryChunks>,
    internal: bool,
) -> impl futures::Stream<Item = sse::Chunk> {
    async_stream::stream! {
        loop {
            let chunk = match records.next_chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(error = %e, "export read failed");
                    yield Err(sse::broken("the export's records"));
                    return;
                }
            };
            match to_lines(&chunk) {
                Ok(buf) if buf.is_empty() => {}
                Ok(buf) => yield Ok(Bytes::from(buf)),
                Err(e) => {
                    tracing::error!(error = %e, "record did not serialise");
                    yield Err(sse::broken("a record"));
                    return;
                }
            }
        }
        let Some(mut histories) = histories else { return };
        loop {
            let chunk = match histories.next_chunk().await {
                Ok(Some(mut chunk)) => {
                    if !internal {
                        chunk.iter_mut().for_each(crate::access::without_internal);
                    }
                    chunk
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(error = %e, "export history read failed");
                    yield Err(sse::broken("the export's histories"));
                    return;
                }
            };
            match to_lines(&chunk) {
                Ok(buf) if buf.is_empty() => {}
                Ok(buf) => yield Ok(Bytes::from(buf)),
                Err(e) => {
                    tracing::error!(error = %e, "history did not serialise");
                    yield Err(sse::broken("an operation history"));
                    return;
                }
            }
        }
    }
}
