//! JSON answers for requests hyper refuses before any handler runs.
//!
//! hyper's HTTP/1 parser (httparse) refuses a request head holding a byte HTTP does not allow — a control
//! character other than HTAB (NUL, DEL, ...) in a header value, a bad header name, a malformed request line
//! — and answers by itself: `400 Bad Request` (or 414, 431) with an empty body, then closes. No handler,
//! middleware or fallback sees that request, so the only place to give it our JSON error body is the
//! connection's byte stream. [`JsonParseErrors`] wraps a connection's I/O: it remembers the last bytes read,
//! and when hyper writes one of its own bodiless 400/414/431 heads (ours always carry a `content-type`), it
//! writes instead the same status with a JSON body `{"error": {"code", "message", "field"?}}` naming the
//! header at fault. A `Last-Event-ID` holding such a byte on `/api/mutation-events` is answered exactly as
//! the handler answers any other invalid cursor: 400 `invalid_cursor`, `"field": "Last-Event-ID"`.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes read last that are kept to explain a refused request head (at least; at most twice as many).
/// Small, since every open connection keeps them: a refused header further back than this is answered
/// `malformed_request` without naming it.
const KEEP: usize = 8 * 1024;

/// A connection's I/O, with hyper's bodiless parse-error answers replaced by JSON ones (module doc).
pub struct JsonParseErrors<IO> {
    inner: IO,
    /// The last bytes read (at most [`KEEP`]).
    recent: Vec<u8>,
    /// A replacement answer still to be written, and how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<IO> JsonParseErrors<IO> {
    pub fn new(inner: IO) -> Self {
        JsonParseErrors {
            inner,
            recent: Vec::new(),
            pending: None,
        }
    }

    /// The wrapped I/O.
    pub fn get_ref(&self) -> &IO {
        &self.inner
    }

    fn remember(&mut self, read: &[u8]) {
        if read.len() >= KEEP {
            self.recent.clear();
            self.recent.extend_from_slice(&read[read.len() - KEEP..]);
            return;
        }
        self.recent.extend_from_slice(read);
        if self.recent.len() > 2 * KEEP {
            let drop = self.recent.len() - KEEP;
            self.recent.drain(..drop);
        }
    }
}

impl<IO: AsyncWrite + Unpin> JsonParseErrors<IO> {
    /// Writes what is left of a replacement answer; Ready(Ok) once it is all written.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }

    /// When `buf` starts with one of hyper's own parse-error heads, queues the JSON answer instead and
    /// returns the length of the head it replaces.
    fn replace(&mut self, buf: &[u8]) -> Option<usize> {
        let head_len = hyper_parse_error_head(buf)?;
        let status = &buf[9..12];
        let answer = json_answer(status, &self.recent)?;
        self.pending = Some((answer, 0));
        Some(head_len)
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for JsonParseErrors<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.remember(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for JsonParseErrors<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        if let Some(replaced) = this.replace(buf) {
            // Written from here on; a failure shows at the next write, flush or shutdown.
            let _ = this.poll_pending(cx)?;
            return Poll::Ready(Ok(replaced));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        // hyper writes a head as its own first slice.
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            if let Some(replaced) = this.replace(first) {
                let _ = this.poll_pending(cx)?;
                return Poll::Ready(Ok(replaced));
            }
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// The length of `buf`'s leading response head when it is one hyper writes by itself for a request it
/// could not parse: status 400, 414 or 431, `content-length: 0`, no `content-type`.
fn hyper_parse_error_head(buf: &[u8]) -> Option<usize> {
    if !(buf.starts_with(b"HTTP/1.1 400 ")
        || buf.starts_with(b"HTTP/1.1 414 ")
        || buf.starts_with(b"HTTP/1.1 431 "))
    {
        return None;
    }
    let end = find(buf, b"\r\n\r\n")? + 4;
    let head = buf[..end].to_ascii_lowercase();
    (find(&head, b"\r\ncontent-length: 0\r\n").is_some()
        && find(&head, b"\r\ncontent-type:").is_none())
    .then_some(end)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A byte a header value may hold (RFC 9110 field-vchar, SP, HTAB, obs-text).
fn value_byte(b: u8) -> bool {
    b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80
}

/// The head of the request hyper refused: what follows the last blank line in `recent` (the request the
/// client sent last, before any trailing blank line of its own).
fn refused_head(recent: &[u8]) -> &[u8] {
    let trimmed = recent.strip_suffix(b"\r\n\r\n").unwrap_or(recent);
    let start = trimmed
        .windows(4)
        .rposition(|w| w == b"\r\n\r\n")
        .map_or(0, |i| i + 4);
    &trimmed[start..]
}

/// The JSON answer for a refused request with this status, given the bytes read last.
fn json_answer(status: &[u8], recent: &[u8]) -> Option<Vec<u8>> {
    let head = refused_head(recent);
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = lines.next().unwrap_or_default();
    let bad_header = lines.find_map(|line| {
        let colon = line.iter().position(|&b| b == b':')?;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        (!value.iter().all(|&b| value_byte(b)))
            .then(|| String::from_utf8_lossy(name).trim().to_owned())
    });
    let (reason, error) = match status {
        b"414" => (
            "URI Too Long",
            serde_json::json!({"code": "uri_too_long", "message": "the request target is longer than the server accepts"}),
        ),
        b"431" => (
            "Request Header Fields Too Large",
            serde_json::json!({"code": "headers_too_large", "message": "the request header is larger than the server accepts"}),
        ),
        b"400" => {
            let replay = request_line.starts_with(b"GET /api/mutation-events")
                && matches!(request_line.get(24), Some(b'?' | b' '));
            match bad_header {
                Some(name) if replay && name.eq_ignore_ascii_case("last-event-id") => (
                    "Bad Request",
                    // Exactly the handler's answer for any other invalid cursor.
                    serde_json::json!({"code": "invalid_cursor", "message": "a cursor is one or more ASCII digits with value at most 9223372036854775807", "field": "Last-Event-ID"}),
                ),
                Some(name) => (
                    "Bad Request",
                    serde_json::json!({"code": "invalid_header", "message": format!("the {name} header holds a control character, which HTTP does not allow"), "field": name}),
                ),
                None => (
                    "Bad Request",
                    serde_json::json!({"code": "malformed_request", "message": "the request line or a header is not valid HTTP/1.1"}),
                ),
            }
        }
        _ => return None,
    };
    let body = serde_json::json!({ "error": error }).to_string();
    Some(
        format!(
            "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{}connection: close\r\n\r\n{body}",
            String::from_utf8_lossy(status),
            body.len(),
            crate::http::security::RAW_HEADER_LINES,
        )
        .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Serves `request` with a hyper HTTP/1 connection over [`JsonParseErrors`]; the handler answers 200
    /// `ok`. Returns the whole answer.
    async fn serve(request: &[u8]) -> String {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let service = hyper::service::service_fn(|_req| async {
            Ok::<_, std::convert::Infallible>(hyper::Response::new(http_body_util::Full::new(
                bytes::Bytes::from_static(b"ok"),
            )))
        });
        let task = tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(JsonParseErrors::new(server));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
        let (mut read, mut write) = tokio::io::split(client);
        write.write_all(request).await.unwrap();
        let mut answer = Vec::new();
        read.read_to_end(&mut answer).await.unwrap();
        task.await.unwrap();
        String::from_utf8(answer).unwrap()
    }

    fn body(answer: &str) -> serde_json::Value {
        serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap()
    }

    #[tokio::test]
    async fn a_control_byte_in_last_event_id_of_a_replay_is_an_invalid_cursor() {
        let answer = serve(b"GET /api/mutation-events?session_id=s HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 1\x002\r\n\r\n").await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"),
            "{answer}"
        );
        assert_eq!(
            body(&answer),
            serde_json::json!({"error": {"code": "invalid_cursor", "message": "a cursor is one or more ASCII digits with value at most 9223372036854775807", "field": "Last-Event-ID"}})
        );
    }

    #[tokio::test]
    async fn other_refused_heads_get_json_naming_the_header() {
        let answer = serve(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Thing: a\x7fb\r\n\r\n").await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        assert_eq!(
            body(&answer),
            serde_json::json!({"error": {"code": "invalid_header", "message": "the X-Thing header holds a control character, which HTTP does not allow", "field": "X-Thing"}})
        );
        let answer = serve(b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: a\r\n\r\n").await;
        assert_eq!(
            body(&answer),
            serde_json::json!({"error": {"code": "malformed_request", "message": "the request line or a header is not valid HTTP/1.1"}})
        );
    }

    #[tokio::test]
    async fn a_refused_head_after_a_served_request_on_the_same_connection() {
        let answer = serve(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /api/mutation-events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: \x01\r\n\r\n").await;
        let (first, second) = answer.split_at(answer.find("HTTP/1.1 400").expect(&answer));
        assert!(
            first.starts_with("HTTP/1.1 200 OK\r\n") && first.ends_with("\r\n\r\nok"),
            "{first}"
        );
        assert_eq!(body(second)["error"]["code"], "invalid_cursor");
    }

    #[tokio::test]
    async fn good_requests_pass_unchanged() {
        let answer =
            serve(b"GET /a HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 1\r\nConnection: close\r\n\r\n")
                .await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
    }
}
