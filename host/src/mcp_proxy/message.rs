//! What the proxy reads in a JSON-RPC message (docs/mcp-proxy.md "Ordering"). MCP's stdio transport
//! frames one JSON-RPC message (or a batch: a JSON array of them) per line; the proxy forwards each line's
//! bytes unchanged and only reads, from its text, the few members it needs (`id`, `method`, `params.name`,
//! `params._meta`, `params.requestId`, whether `result` or `error` is there), skipping the rest unread
//! ([`super::read`]: a line costs about its own size, docs/mcp-proxy.md "Long lines"). Everything here is
//! pure: bytes in, a description out. A line that is not JSON, or JSON that is not a message, is
//! described as [`Message::Other`] and forwarded untouched.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::read::{self, Members, Obj, ObjVisitor, Scalar};

/// The `_meta` key a client may set on `tools/call` params to name the logical turn of the call.
pub const TURN_META_KEY: &str = "outcomes/logical_turn_id";

/// The `_meta` key of a `tools/call` that carries the client's W3C trace context (as MCP clients with
/// OpenTelemetry propagate it): the proxy passes it on the call's approve (docs/mcp-proxy.md).
pub const TRACEPARENT_META_KEY: &str = "traceparent";

/// One JSON-RPC message as the proxy sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request (`method` and `id`). For `tools/call`, `tool` is `params.name` and `turn` is
    /// `params._meta["outcomes/logical_turn_id"]` when it is a string; `traceparent` is
    /// `params._meta.traceparent` when it is a well-formed W3C `traceparent` (a malformed one is left
    /// out: the call is recorded without it, never refused for it).
    Request {
        id: Value,
        method: String,
        tool: Option<String>,
        turn: Option<String>,
        traceparent: Option<String>,
    },
    /// A notification (`method`, no `id`). For `notifications/cancelled`, `cancels` is
    /// `params.requestId`; for a `tools/call` sent as a notification, `tool`/`turn`/`traceparent` as for
    /// a request.
    Notification {
        method: String,
        cancels: Option<Value>,
        tool: Option<String>,
        turn: Option<String>,
        traceparent: Option<String>,
    },
    /// A response (`id` and `result` or `error`).
    Response { id: Value },
    /// Anything else: not JSON, not an object, a message with neither method nor id.
    Other,
}

impl Message {
    /// The `id` of a request or response.
    pub fn id(&self) -> Option<&Value> {
        match self {
            Message::Request { id, .. } | Message::Response { id } => Some(id),
            _ => None,
        }
    }
}

/// A line: one message ([`Message::Other`] when it is none), or a batch (a JSON array): its elements
/// that are messages, each with its index in the array (the others, [`Message::Other`], are left out,
/// so a batch of a million numbers costs nothing per number).
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Single(Message),
    Batch(Vec<(usize, Message)>),
}

impl Line {
    /// The messages of the line with their index in it (0 for a single message).
    pub fn messages(&self) -> Box<dyn Iterator<Item = (usize, &Message)> + '_> {
        match self {
            Line::Single(m) => Box::new(std::iter::once((0, m))),
            Line::Batch(ms) => Box::new(ms.iter().map(|(i, m)| (*i, m))),
        }
    }
}

/// Describes one line (its bytes, with or without the trailing newline). Never fails: what cannot be
/// read is [`Message::Other`].
pub fn inspect(line: &[u8]) -> Line {
    read::whole::<WholeLine>(line).map_or(Line::Single(Message::Other), |l| l.0)
}

/// Describes one message from its JSON text (a line, or a batch's element).
pub fn read_message(message: &[u8]) -> Message {
    read::whole::<Obj<Msg>>(message).map_or(Message::Other, |m| describe(m.0))
}

/// The members of a message the proxy reads.
#[derive(Debug, Default)]
struct Msg {
    /// `id` when it is a string or a number (`null` is not one the proxy can match).
    id: Option<Value>,
    /// `method` when it is a string.
    method: Option<String>,
    /// Whether it has a `method` member (whatever its value).
    has_method: bool,
    params: Params,
    /// Whether it has a `result` or an `error` member (whatever their value: unread).
    answer: bool,
}

impl Members for Msg {
    const NAMES: &'static [&'static str] = &["id", "method", "params", "result", "error"];

    fn member<'de, A: MapAccess<'de>>(
        &mut self,
        index: usize,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match index {
            0 => self.id = map.next_value::<Scalar>()?.into_id(),
            1 => {
                self.method = map.next_value::<Scalar>()?.into_string();
                self.has_method = true;
            }
            2 => self.params = map.next_value::<Obj<Params>>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
                self.answer = true;
            }
        }
        Ok(())
    }
}

/// `params.name`, `params._meta["outcomes/logical_turn_id"]` (each when a string) and
/// `params.requestId` (when a string or a number).
#[derive(Debug, Default)]
struct Params {
    name: Option<String>,
    meta: Meta,
    request_id: Option<Value>,
}

impl Members for Params {
    const NAMES: &'static [&'static str] = &["name", "_meta", "requestId"];

    fn member<'de, A: MapAccess<'de>>(
        &mut self,
        index: usize,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match index {
            0 => self.name = map.next_value::<Scalar>()?.into_string(),
            1 => self.meta = map.next_value::<Obj<Meta>>()?.0,
            _ => self.request_id = map.next_value::<Scalar>()?.into_id(),
        }
        Ok(())
    }
}

/// `_meta["outcomes/logical_turn_id"]` and `_meta.traceparent`, each when a string.
#[derive(Debug, Default)]
struct Meta {
    turn: Option<String>,
    traceparent: Option<String>,
}

impl Members for Meta {
    const NAMES: &'static [&'static str] = &[TURN_META_KEY, TRACEPARENT_META_KEY];

    fn member<'de, A: MapAccess<'de>>(
        &mut self,
        index: usize,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let v = map.next_value::<Scalar>()?.into_string();
        match index {
            0 => self.turn = v,
            _ => self.traceparent = v,
        }
        Ok(())
    }
}

/// A whole line read as [`Line`].
struct WholeLine(Line);

impl<'de> Deserialize<'de> for WholeLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LineVisitor).map(WholeLine)
    }
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Line;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Line, A::Error> {
        ObjVisitor::<Msg>(PhantomData)
            .visit_map(map)
            .map(|m| Line::Single(describe(m)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Line, A::Error> {
        let mut messages = Vec::new();
        let mut i = 0;
        while let Some(Obj(m)) = seq.next_element::<Obj<Msg>>()? {
            match describe(m) {
                Message::Other => {}
                m => messages.push((i, m)),
            }
            i += 1;
        }
        Ok(Line::Batch(messages))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Line, E> {
        Ok(Line::Single(Message::Other))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Line, E> {
        Ok(Line::Single(Message::Other))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Line, E> {
        Ok(Line::Single(Message::Other))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Line, E> {
        Ok(Line::Single(Message::Other))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Line, E> {
        Ok(Line::Single(Message::Other))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Line, E> {
        Ok(Line::Single(Message::Other))
    }
}

/// Describes one message from its members read.
fn describe(m: Msg) -> Message {
    let Msg {
        id,
        method,
        params,
        answer,
        ..
    } = m;
    match (method, id) {
        (Some(method), id) => {
            let (tool, turn, traceparent) = if method == "tools/call" {
                let traceparent = params.meta.traceparent.and_then(|t| {
                    ledger::traceparent::Traceparent::parse(&t)
                        .ok()
                        .map(|t| t.as_str().to_owned())
                });
                (params.name, params.meta.turn, traceparent)
            } else {
                (None, None, None)
            };
            match id {
                Some(id) => Message::Request {
                    id,
                    method,
                    tool,
                    turn,
                    traceparent,
                },
                None => Message::Notification {
                    cancels: (method == "notifications/cancelled")
                        .then_some(params.request_id)
                        .flatten(),
                    method,
                    tool,
                    turn,
                    traceparent,
                },
            }
        }
        (None, Some(id)) if answer => Message::Response { id },
        _ => Message::Other,
    }
}

/// The key under which the proxy matches an answer to its request: the id's JSON text (`1` and `"1"`
/// are different ids, as JSON-RPC says), a number by its value: `1.0`, `1e0` and `1` are one id, `-0`
/// is `0` (a server may echo a number in another spelling: Node's JSON writes `1.0` as `1`, `1e2` as
/// `100`).
pub fn id_key(id: &Value) -> String {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every integer below it is exact in an f64
    match id {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < EXACT => format!("{}", f as i64),
            _ => id.to_string(),
        },
        _ => id.to_string(),
    }
}

/// The first look at a line from the server: whether it is a single response and its id, read without
/// building the (possibly large) result. `None` for anything else (requests and notifications from the
/// server, batches, lines that are not JSON). A message with a `method` member is no response, whatever
/// the member's value.
pub fn response_id(line: &[u8]) -> Option<Value> {
    let m = read::whole::<Obj<Msg>>(line)?.0;
    (m.answer && !m.has_method).then_some(m.id).flatten()
}

/// `result.serverInfo.name` of an answer to `initialize` (its JSON text), when a string that is not
/// empty.
pub fn server_name(answer: &[u8]) -> Option<String> {
    let tokens = ["result", "serverInfo", "name"].map(str::to_owned);
    read::at(answer, &tokens)
        .into_string()
        .filter(|n| !n.is_empty())
}

/// `result.protocolVersion` of an answer to `initialize` (its JSON text): the MCP version the server
/// chose, sent by a Streamable HTTP client as `MCP-Protocol-Version` on every later request.
pub fn protocol_version(answer: &[u8]) -> Option<String> {
    let tokens = ["result", "protocolVersion"].map(str::to_owned);
    read::at(answer, &tokens)
        .into_string()
        .filter(|n| !n.is_empty())
}

/// Whether a line is a JSON array (a batch), judged by its first non-blank byte.
pub fn is_batch(line: &[u8]) -> bool {
    line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// A JSON-RPC error response to request `id`, as one line (with its newline): `{"jsonrpc":"2.0","id",
/// "error":{"code","message","data"}}`.
pub fn error_line(id: &Value, code: i64, message: &str, data: Value) -> Vec<u8> {
    let mut out =
        serde_json::to_vec(&error_value(id, code, message, Some(data))).unwrap_or_default();
    out.push(b'\n');
    out
}

/// A JSON-RPC error response to request `id`: `{"jsonrpc":"2.0","id","error":{"code","message","data"?}}`
/// (`data` left out when `None`).
pub fn error_value(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = serde_json::json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A number id is matched by its value, whatever its spelling; a string is never a number.
    #[test]
    fn a_number_id_is_keyed_by_its_value() {
        let key = |text: &str| id_key(&serde_json::from_str::<Value>(text).unwrap());
        for (a, b) in [
            ("1", "1.0"),
            ("100", "1e2"),
            ("0", "-0"),
            ("0", "-0.0"),
            ("-3", "-3.0"),
        ] {
            assert_eq!(key(a), key(b), "{a} ~ {b}");
        }
        assert_ne!(key("1"), key("\"1\""));
        assert_ne!(key("1"), key("1.5"));
        assert_eq!(key("1.5"), "1.5");
        assert_eq!(key("18446744073709551615"), "18446744073709551615");
    }

    fn single(s: &str) -> Message {
        match inspect(s.as_bytes()) {
            Line::Single(m) => m,
            Line::Batch(_) => panic!("batch"),
        }
    }

    /// `params._meta.traceparent` of a `tools/call` (request or notification) is read when it is a
    /// well-formed W3C `traceparent`; a malformed one, one that is not a string, or one on another method
    /// is left out.
    #[test]
    fn a_tools_call_traceparent_is_read_when_well_formed() {
        const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let call = |tp: &str| {
            single(&format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"w","_meta":{{"traceparent":{tp},"outcomes/logical_turn_id":"t"}}}}}}"#
            ))
        };
        assert_eq!(
            call(&format!("\"{TP}\"")),
            Message::Request {
                id: json!(1),
                method: "tools/call".into(),
                tool: Some("w".into()),
                turn: Some("t".into()),
                traceparent: Some(TP.into()),
            }
        );
        for bad in [
            r#""00-00000000000000000000000000000000-00f067aa0ba902b7-01""#,
            r#""ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01""#,
            r#""00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7""#,
            "42",
        ] {
            let Message::Request {
                traceparent, turn, ..
            } = call(bad)
            else {
                panic!("{bad}: not a request");
            };
            assert_eq!((traceparent, turn.as_deref()), (None, Some("t")), "{bad}");
        }
        assert_eq!(
            single(&format!(
                r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"w","_meta":{{"traceparent":"{TP}"}}}}}}"#
            )),
            Message::Notification {
                method: "tools/call".into(),
                cancels: None,
                tool: Some("w".into()),
                turn: None,
                traceparent: Some(TP.into()),
            }
        );
        let Message::Request { traceparent, .. } = single(&format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"_meta":{{"traceparent":"{TP}"}}}}}}"#
        )) else {
            panic!("not a request");
        };
        assert_eq!(traceparent, None);
    }

    #[test]
    fn requests_notifications_responses_and_others_are_told_apart() {
        assert_eq!(
            single(
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a"},"_meta":{"outcomes/logical_turn_id":"turn-9","progressToken":1}}}"#
            ),
            Message::Request {
                id: json!(7),
                method: "tools/call".into(),
                tool: Some("write_file".into()),
                turn: Some("turn-9".into()),
                traceparent: None,
            }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#),
            Message::Request {
                id: json!("a"),
                method: "tools/list".into(),
                tool: None,
                turn: None,
                traceparent: None
            }
        );
        // A turn that is not a string is not a turn; a name that is not a string is no tool name.
        assert_eq!(
            single(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"_meta":{"outcomes/logical_turn_id":3}}}"#
            ),
            Message::Request {
                id: json!(1),
                method: "tools/call".into(),
                tool: None,
                turn: None,
                traceparent: None
            }
        );
        assert_eq!(
            single(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}"#
            ),
            Message::Notification {
                method: "notifications/cancelled".into(),
                cancels: Some(json!(7)),
                tool: None,
                turn: None,
                traceparent: None
            }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Message::Notification {
                method: "notifications/initialized".into(),
                cancels: None,
                tool: None,
                turn: None,
                traceparent: None
            }
        );
        // A tools/call without an id is a notification still carrying its tool.
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"w"}}"#),
            Message::Notification {
                method: "tools/call".into(),
                cancels: None,
                tool: Some("w".into()),
                turn: None,
                traceparent: None
            }
        );
        // A null id is no id the proxy can match.
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"w"}}"#),
            Message::Notification {
                method: "tools/call".into(),
                cancels: None,
                tool: Some("w".into()),
                turn: None,
                traceparent: None
            }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#),
            Message::Response { id: json!(3) }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}"#),
            Message::Response { id: json!("x") }
        );
        for other in [
            "",
            "not json",
            "42",
            r#""s""#,
            r#"{"jsonrpc":"2.0","id":3}"#,
            r#"{"a":1}"#,
        ] {
            assert_eq!(single(other), Message::Other, "{other:?}");
        }
    }

    #[test]
    fn a_batch_describes_each_element() {
        let line = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w"}},{"jsonrpc":"2.0","method":"notifications/progress","params":{}},7]"#;
        assert!(is_batch(line));
        assert!(is_batch(b"  [1]"));
        assert!(!is_batch(b"{\"a\":[1]}"));
        assert_eq!(
            inspect(line),
            Line::Batch(vec![
                (
                    0,
                    Message::Request {
                        id: json!(1),
                        method: "tools/call".into(),
                        tool: Some("w".into()),
                        turn: None,
                        traceparent: None
                    }
                ),
                (
                    1,
                    Message::Notification {
                        method: "notifications/progress".into(),
                        cancels: None,
                        tool: None,
                        turn: None,
                        traceparent: None
                    }
                ),
                // Element 2 (7) is no message: left out.
            ])
        );
        // Elements that are no messages keep the indexes of those that are.
        assert_eq!(
            inspect(br#"[0,{"a":1},[{"id":1,"result":{}}],{"jsonrpc":"2.0","id":"r","error":{}}]"#),
            Line::Batch(vec![(3, Message::Response { id: json!("r") })])
        );
        assert_eq!(inspect(b"[]"), Line::Batch(vec![]));
        assert_eq!(inspect(b"[1,2"), Line::Single(Message::Other));
    }

    #[test]
    fn what_the_proxy_does_not_need_is_skipped_whatever_it_holds() {
        // Large, deep or odd arguments and results do not hide the members read.
        let zeros = format!("[{}0]", "0,".repeat(200_000));
        let deep = format!("{}0{}", "[".repeat(10_000), "]".repeat(10_000));
        for big in [
            &zeros,
            &deep,
            &r#"{"x":"\ud800 a lone surrogate"}"#.to_owned(),
        ] {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"arguments":{big},"name":"w","_meta":{{"outcomes/logical_turn_id":"t"}}}}}}"#
            );
            assert_eq!(
                single(&call),
                Message::Request {
                    id: json!(5),
                    method: "tools/call".into(),
                    tool: Some("w".into()),
                    turn: Some("t".into()),
                    traceparent: None
                },
                "{}",
                &call[..80]
            );
            let answer = format!(r#"{{"jsonrpc":"2.0","result":{big},"id":5}}"#);
            assert_eq!(single(&answer), Message::Response { id: json!(5) });
            assert_eq!(response_id(answer.as_bytes()), Some(json!(5)));
        }
        // The last of a repeated member counts, as JSON.parse keeps it.
        assert_eq!(
            single(
                r#"{"id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"},"id":2}"#
            ),
            Message::Request {
                id: json!(2),
                method: "tools/call".into(),
                tool: Some("b".into()),
                turn: None,
                traceparent: None
            }
        );
        assert_eq!(single(r#"{"id":1,"result":{},"id":null}"#), Message::Other);
        // A method that is not a string: no request; a response for the batch reading, not for the first
        // look at a single line.
        assert_eq!(
            single(r#"{"id":1,"method":5,"result":{}}"#),
            Message::Response { id: json!(1) }
        );
        assert_eq!(response_id(br#"{"id":1,"method":5,"result":{}}"#), None);
    }

    #[test]
    fn the_server_name_is_read_from_the_initialize_answer() {
        assert_eq!(
            server_name(
                br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","serverInfo":{"name":"fs","version":"1"}}}"#
            ),
            Some("fs".into())
        );
        for none in [
            &br#"{"id":1,"result":{"serverInfo":{"name":""}}}"#[..],
            br#"{"id":1,"result":{"serverInfo":{"name":7}}}"#,
            br#"{"id":1,"result":[0,0,0]}"#,
            br#"{"id":1,"error":{"code":1}}"#,
            b"not json",
        ] {
            assert_eq!(server_name(none), None);
        }
    }

    #[test]
    fn the_cheap_look_finds_only_single_responses() {
        assert_eq!(
            response_id(
                br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"big"}]}}"#
            ),
            Some(json!(4))
        );
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","id":"q","error":{"code":1,"message":"m"}}"#),
            Some(json!("q"))
        );
        // A request from the server (sampling) has an id too, but it is no response.
        assert_eq!(
            response_id(
                br#"{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}"#
            ),
            None
        );
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#),
            None
        );
        assert_eq!(
            response_id(br#"[{"jsonrpc":"2.0","id":4,"result":{}}]"#),
            None
        );
        assert_eq!(response_id(b"garbage"), None);
    }

    #[test]
    fn ids_match_by_their_json_text_and_errors_are_one_line() {
        assert_eq!(id_key(&json!(1)), "1");
        assert_eq!(id_key(&json!("1")), "\"1\"");
        assert_ne!(id_key(&json!(1)), id_key(&json!("1")));
        let line = error_line(
            &json!("r-1"),
            -32010,
            "no ledger",
            json!({"operation_id": "op-1"}),
        );
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let v: Value = serde_json::from_slice(&line).expect("json");
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":"r-1","error":{"code":-32010,"message":"no ledger","data":{"operation_id":"op-1"}}})
        );
    }
}
