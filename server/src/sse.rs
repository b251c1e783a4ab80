//! Streamed answers: `text/event-stream` framing (docs/api.md, "Replay" and "Live run events") and bodies
//! sent a chunk at a time (history, replay), so a large answer is never held whole in memory and a chunk
//! leaves in one write.
//!
//! An event is framed exactly as `event: <name>\n`, then `id: <n>\n` when it has one, then
//! `data: <JSON on one line>\n`, then a blank line. serde_json escapes every control character, so the
//! JSON never breaks the line.

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::HeaderValue;
use axum::response::Response;
use bytes::Bytes;
use futures::Stream;
use serde::Serialize;

/// Appends one event to `buf`: `event: <name>\n[id: <id>\n]data: <json>\n\n`.
pub fn frame(
    buf: &mut Vec<u8>,
    event: &str,
    id: Option<i64>,
    data: &impl Serialize,
) -> Result<(), serde_json::Error> {
    buf.extend_from_slice(b"event: ");
    buf.extend_from_slice(event.as_bytes());
    if let Some(id) = id {
        buf.extend_from_slice(b"\nid: ");
        buf.extend_from_slice(id.to_string().as_bytes());
    }
    buf.extend_from_slice(b"\ndata: ");
    serde_json::to_writer(&mut *buf, data)?;
    buf.extend_from_slice(b"\n\n");
    Ok(())
}

/// Appends an `id:`-only block: `id: <id>\n\n` (it moves a client's Last-Event-ID without an event).
pub fn frame_id(buf: &mut Vec<u8>, id: i64) {
    buf.extend_from_slice(b"id: ");
    buf.extend_from_slice(id.to_string().as_bytes());
    buf.extend_from_slice(b"\n\n");
}

/// Appends `retry: <ms>\n\n`.
pub fn frame_retry(buf: &mut Vec<u8>, ms: u128) {
    buf.extend_from_slice(b"retry: ");
    buf.extend_from_slice(ms.to_string().as_bytes());
    buf.extend_from_slice(b"\n\n");
}

/// A chunk of a streamed body; an `Err` ends the answer without its end, so a client never takes a
/// broken read for a complete one.
pub type Chunk = Result<Bytes, std::io::Error>;

/// A `text/event-stream` answer (`Cache-Control: no-store`) whose body is `chunks`.
pub fn event_stream<S>(chunks: S) -> Response
where
    S: Stream<Item = Chunk> + Send + 'static,
{
    streamed("text/event-stream", chunks)
}

/// An `application/json` answer whose body is `chunks`.
pub fn json_stream<S>(chunks: S) -> Response
where
    S: Stream<Item = Chunk> + Send + 'static,
{
    streamed("application/json", chunks)
}

/// An `application/x-ndjson` answer (JSON Lines) whose body is `chunks`.
pub fn ndjson_stream<S>(chunks: S) -> Response
where
    S: Stream<Item = Chunk> + Send + 'static,
{
    streamed("application/x-ndjson", chunks)
}

fn streamed<S>(content_type: &'static str, chunks: S) -> Response
where
    S: Stream<Item = Chunk> + Send + 'static,
{
    let mut response = Response::new(Body::from_stream(chunks));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The error that ends a streamed body after a store failure (logged by the caller).
pub fn broken(what: &str) -> std::io::Error {
    std::io::Error::other(format!("{what} failed while streaming"))
}
