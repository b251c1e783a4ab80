//! Lines with a bounded memory (docs/mcp-proxy.md "Long lines"): [`read_line`] reads one line of at most
//! `--max-line-bytes` bytes whole, or tells that the line is longer; [`read_chunk`] then reads the rest of
//! such a line piece by piece, so an over-long line is never held whole. [`HeadScan`] reads, from the
//! bytes of a line fed piece by piece, the top-level `id` of each JSON-RPC message in it and whether the
//! message is a request or a response, wherever in the message those members come (the TypeScript SDK
//! writes `id` last, after the whole `result`), with a bounded state whatever the line's length.
//!
//! serde_json reads only whole documents into memory (or pulls from a blocking reader), so the scan is
//! this module's own: it follows strings (with their escapes) and nesting, captures the raw text of the
//! message-level members it needs (at most [`CAPTURE_MAX`] bytes each) and hands that text to serde_json.
//! It does not validate: a malformed line may yield a head, which the proxy only ever uses to say
//! "unknown" or "not forwarded", never to settle a call as done.

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The raw text of a member's key or value kept by [`HeadScan`] at most; longer is unreadable. A
/// JSON-RPC id longer than this is not one the proxy can match.
pub const CAPTURE_MAX: usize = 1024;

/// One read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// A whole line: its bytes (at most `max` before its newline), with the newline; the last line of
    /// the input may lack it.
    Line(Vec<u8>),
    /// A line longer than `max` bytes: its first bytes (more than `max`, at most `max` plus one buffer
    /// fill), no newline among them. The rest follows through [`read_chunk`].
    Long(Vec<u8>),
    /// The end of the input.
    End,
}

/// Reads one line of at most `max` bytes (not counting its newline) from `r`; see [`Read`].
pub async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> std::io::Result<Read> {
    let mut line = Vec::new();
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(if line.is_empty() {
                Read::End
            } else {
                Read::Line(line)
            });
        }
        let (take, ended) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let content = line.len() + take - usize::from(ended);
        if content > max {
            // Keep no more than this fill: the line is long, its newline comes later.
            let keep = if ended { take - 1 } else { take };
            line.extend_from_slice(&buf[..keep]);
            r.consume(keep);
            return Ok(Read::Long(line));
        }
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if ended {
            return Ok(Read::Line(line));
        }
    }
}

/// The next piece of a long line (at most one buffer fill) and whether it ends the line (its newline
/// included); `None` at the end of the input.
pub async fn read_chunk<R: AsyncBufRead + Unpin>(
    r: &mut R,
) -> std::io::Result<Option<(Bytes, bool)>> {
    let buf = r.fill_buf().await?;
    if buf.is_empty() {
        return Ok(None);
    }
    let (take, ended) = match memchr::memchr(b'\n', buf) {
        Some(i) => (i + 1, true),
        None => (buf.len(), false),
    };
    let chunk = Bytes::copy_from_slice(&buf[..take]);
    r.consume(take);
    Ok(Some((chunk, ended)))
}

/// What [`HeadScan`] read of one JSON-RPC message: its `id` when it is a string or a number (the last
/// one when the member is repeated, as JavaScript's `JSON.parse` keeps), whether it has a `method`
/// member, and whether it has a `result` or an `error` member.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Head {
    pub id: Option<Value>,
    pub method: bool,
    pub answer: bool,
}

impl Head {
    /// A request's id (a message with `method` and `id`).
    pub fn request_id(&self) -> Option<&Value> {
        self.id.as_ref().filter(|_| self.method)
    }

    /// A response's id (`id` and `result` or `error`, no `method`).
    pub fn response_id(&self) -> Option<&Value> {
        self.id.as_ref().filter(|_| self.answer && !self.method)
    }
}

/// Which part of a message-level member the scan is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Key,
    Value,
}

/// The member whose value is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Id,
    Other,
}

/// The incremental scan of one line (see the module's documentation). Feed it the line's bytes in
/// order with [`HeadScan::feed`]; each message's [`Head`] is handed to the callback when the message's
/// closing brace is read (a message cut short by the end of the line gives none). A line whose first
/// byte that is not blank is `{` holds one message; `[`, a batch whose object elements are messages;
/// anything else, none. Its state is a few counters and two buffers of at most [`CAPTURE_MAX`] bytes.
#[derive(Debug)]
pub struct HeadScan {
    /// 1 for a single message, 2 for a batch's elements; `None` before the first byte that is not blank;
    /// 0 when the line holds no message.
    message_depth: Option<u32>,
    /// How many objects and arrays are open.
    depth: u32,
    in_string: bool,
    escaped: bool,
    slot: Slot,
    member: Member,
    /// The raw text of the current key, or of the current `id` value.
    capture: Vec<u8>,
    overflow: bool,
    head: Head,
}

impl Default for HeadScan {
    fn default() -> Self {
        HeadScan {
            message_depth: None,
            depth: 0,
            in_string: false,
            escaped: false,
            slot: Slot::Key,
            member: Member::Other,
            capture: Vec::new(),
            overflow: false,
            head: Head::default(),
        }
    }
}

impl HeadScan {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the next bytes of the line; `found` gets each message's head as it completes.
    pub fn feed(&mut self, bytes: &[u8], found: &mut impl FnMut(Head)) {
        let mut i = 0;
        while i < bytes.len() {
            if self.message_depth == Some(0) {
                return;
            }
            // Inside a string the scan only looks for its end: skip to the next quote or backslash
            // unless the bytes are captured.
            if self.in_string && !self.escaped && !self.capturing() {
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    Some(j) => i += j,
                    None => return,
                }
            }
            self.byte(bytes[i], &mut *found);
            i += 1;
        }
    }

    /// Whether the current bytes are kept: a message-level key, or the value of `id`.
    fn capturing(&self) -> bool {
        match self.message_depth {
            Some(d) if d > 0 && self.depth >= d => match self.slot {
                Slot::Key => self.depth == d,
                Slot::Value => self.member == Member::Id,
            },
            _ => false,
        }
    }

    fn keep(&mut self, b: u8) {
        if self.capture.len() < CAPTURE_MAX {
            self.capture.push(b);
        } else {
            self.overflow = true;
        }
    }

    fn byte(&mut self, b: u8, found: &mut impl FnMut(Head)) {
        if self.message_depth.is_none() {
            match b {
                b' ' | b'\t' | b'\r' | b'\n' => return,
                b'{' => self.message_depth = Some(1),
                b'[' => self.message_depth = Some(2),
                _ => {
                    self.message_depth = Some(0);
                    return;
                }
            }
        }
        let Some(md) = self.message_depth else {
            return;
        };
        if self.in_string {
            if self.capturing() {
                self.keep(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return;
        }
        match b {
            b'"' => {
                if self.capturing() {
                    self.keep(b);
                }
                self.in_string = true;
            }
            b'{' | b'[' => {
                if self.capturing() {
                    self.keep(b);
                }
                self.depth += 1;
                if self.depth == md && b == b'{' {
                    self.start_message();
                }
            }
            b'}' | b']' => {
                if self.depth == md && b == b'}' {
                    self.end_member();
                    found(std::mem::take(&mut self.head));
                } else if self.capturing() && self.depth > md {
                    self.keep(b);
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == md && self.slot == Slot::Key => {
                let key = self
                    .take_capture()
                    .and_then(|raw| serde_json::from_slice::<String>(raw.trim_ascii()).ok());
                self.member = Member::Other;
                match key.as_deref() {
                    Some("id") => self.member = Member::Id,
                    Some("method") => self.head.method = true,
                    Some("result" | "error") => self.head.answer = true,
                    _ => {}
                }
                self.slot = Slot::Value;
            }
            b',' if self.depth == md => {
                self.end_member();
                self.slot = Slot::Key;
            }
            _ => {
                if self.capturing() {
                    self.keep(b);
                }
            }
        }
    }

    fn start_message(&mut self) {
        self.head = Head::default();
        self.slot = Slot::Key;
        self.member = Member::Other;
        self.capture.clear();
        self.overflow = false;
    }

    /// The end of a member's value (`,` or the message's `}`): an `id` value read.
    fn end_member(&mut self) {
        if self.slot == Slot::Value && self.member == Member::Id {
            self.head.id = self
                .take_capture()
                .and_then(|raw| serde_json::from_slice::<Value>(raw.trim_ascii()).ok())
                .filter(|v| v.is_string() || v.is_number());
        }
        self.capture.clear();
        self.overflow = false;
        self.member = Member::Other;
    }

    /// The captured text, `None` when it overflowed; the capture is emptied.
    fn take_capture(&mut self) -> Option<Vec<u8>> {
        let raw = std::mem::take(&mut self.capture);
        let overflow = std::mem::replace(&mut self.overflow, false);
        (!overflow).then_some(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The heads of `line` fed in pieces of `step` bytes.
    fn heads(line: &[u8], step: usize) -> Vec<Head> {
        let mut scan = HeadScan::new();
        let mut out = Vec::new();
        for piece in line.chunks(step) {
            scan.feed(piece, &mut |h| out.push(h));
        }
        out
    }

    fn all_steps(line: &str) -> Vec<Head> {
        let whole = heads(line.as_bytes(), line.len().max(1));
        for step in [1, 2, 3, 7] {
            assert_eq!(heads(line.as_bytes(), step), whole, "step {step}: {line}");
        }
        whole
    }

    fn head(id: Option<Value>, method: bool, answer: bool) -> Head {
        Head { id, method, answer }
    }

    #[test]
    fn the_id_is_read_wherever_it_comes_in_the_message() {
        // As the TypeScript SDK writes an answer: the id after the whole result.
        let last = r#"{"result":{"content":[{"type":"text","text":"a \"quoted\" {\"id\":9} [x] \\"}]},"jsonrpc":"2.0","id":7}"#;
        assert_eq!(all_steps(last), [head(Some(json!(7)), false, true)]);
        let first = r#" {"jsonrpc":"2.0","id":"r-1","error":{"code":-32603,"message":"m","data":{"id":3}}}"#;
        assert_eq!(all_steps(first), [head(Some(json!("r-1")), false, true)]);
        let request = r#"{"method":"tools/call","params":{"name":"w","arguments":{"id":5}},"jsonrpc":"2.0","id":12}"#;
        let h = all_steps(request);
        assert_eq!(h, [head(Some(json!(12)), true, false)]);
        assert_eq!(h[0].request_id(), Some(&json!(12)));
        assert_eq!(h[0].response_id(), None);
        // Blanks around members, an escaped key, a repeated id (the last one counts), a float id.
        assert_eq!(
            all_steps("{ \"\\u0069d\" : 1 , \"result\" : null , \"id\" :\t2.5 }\n"),
            [head(Some(json!(2.5)), false, true)]
        );
    }

    #[test]
    fn ids_that_are_not_strings_or_numbers_or_too_long_are_unreadable() {
        for line in [
            r#"{"id":null,"result":1}"#,
            r#"{"id":{"a":1},"result":1}"#,
            r#"{"id":[1],"result":1}"#,
            r#"{"id":true,"result":1}"#,
        ] {
            assert_eq!(all_steps(line), [head(None, false, true)], "{line}");
        }
        let long = format!(r#"{{"id":"{}","result":1}}"#, "x".repeat(CAPTURE_MAX));
        assert_eq!(all_steps(&long), [head(None, false, true)]);
        let fits = format!(r#"{{"id":"{}","result":1}}"#, "x".repeat(CAPTURE_MAX - 2));
        assert_eq!(
            all_steps(&fits)[0].id,
            Some(json!("x".repeat(CAPTURE_MAX - 2)))
        );
    }

    #[test]
    fn a_batch_gives_each_message_and_other_lines_give_none() {
        let batch = r#"[{"jsonrpc":"2.0","id":1,"result":{}}, 7, "s", {"method":"notifications/progress","params":{"id":4}},{"result":[{"id":8}],"id":"b"}]"#;
        assert_eq!(
            all_steps(batch),
            [
                head(Some(json!(1)), false, true),
                head(None, true, false),
                head(Some(json!("b")), false, true)
            ]
        );
        for none in [
            "",
            "   ",
            "not json",
            "42",
            r#""{\"id\":1}""#,
            "[[{\"id\":1,\"result\":1}]]",
        ] {
            assert_eq!(all_steps(none), [], "{none:?}");
        }
        // A message cut short gives no head.
        assert_eq!(all_steps(r#"{"result":{"x":"#), []);
        assert_eq!(all_steps(r#"{"id":3,"result":"abc"#), []);
    }

    #[tokio::test]
    async fn lines_over_the_limit_are_told_and_read_on_in_pieces() {
        let input = b"short\nexactly-10\n0123456789ABC\nlast".to_vec();
        let mut r = tokio::io::BufReader::with_capacity(4, &input[..]);
        assert_eq!(
            read_line(&mut r, 10).await.unwrap(),
            Read::Line(b"short\n".to_vec())
        );
        assert_eq!(
            read_line(&mut r, 10).await.unwrap(),
            Read::Line(b"exactly-10\n".to_vec())
        );
        let Read::Long(head) = read_line(&mut r, 10).await.unwrap() else {
            panic!("long");
        };
        assert!(head.len() > 10 && head.len() <= 14, "{head:?}");
        let mut rest = head;
        loop {
            let (chunk, ended) = read_chunk(&mut r).await.unwrap().expect("chunk");
            assert!(chunk.len() <= 4);
            rest.extend_from_slice(&chunk);
            if ended {
                break;
            }
        }
        assert_eq!(rest, b"0123456789ABC\n");
        assert_eq!(
            read_line(&mut r, 10).await.unwrap(),
            Read::Line(b"last".to_vec())
        );
        assert_eq!(read_line(&mut r, 10).await.unwrap(), Read::End);
        assert_eq!(read_chunk(&mut r).await.unwrap(), None);
    }
}
