//! What the proxy reads in a JSON-RPC message (docs/mcp-proxy.md "Ordering"). MCP's stdio transport
//! frames one JSON-RPC message (or a batch: a JSON array of them) per line; the proxy forwards each line's
//! bytes unchanged and only inspects a parsed copy. Everything here is pure: bytes in, a description out.
//! A line that is not JSON, or JSON that is not a message, is described as [`Message::Other`] and
//! forwarded untouched.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

/// The `_meta` key a client may set on `tools/call` params to name the logical turn of the call.
pub const TURN_META_KEY: &str = "outcomes/logical_turn_id";

/// One JSON-RPC message as the proxy sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request (`method` and `id`). For `tools/call`, `tool` is `params.name` and `turn` is
    /// `params._meta["outcomes/logical_turn_id"]` when it is a string.
    Request {
        id: Value,
        method: String,
        tool: Option<String>,
        turn: Option<String>,
    },
    /// A notification (`method`, no `id`). For `notifications/cancelled`, `cancels` is
    /// `params.requestId`; for a `tools/call` sent as a notification, `tool`/`turn` as for a request.
    Notification {
        method: String,
        cancels: Option<Value>,
        tool: Option<String>,
        turn: Option<String>,
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

/// A line: one message, a batch of them (a JSON array; each element described on its own), or
/// [`Message::Other`] as a single message.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Single(Message),
    Batch(Vec<Message>),
}

/// Describes one line (its bytes, with or without the trailing newline). Never fails: what cannot be
/// read is [`Message::Other`].
pub fn inspect(line: &[u8]) -> Line {
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Array(items)) => Line::Batch(items.iter().map(describe).collect()),
        Ok(v) => Line::Single(describe(&v)),
        Err(_) => Line::Single(Message::Other),
    }
}

/// Describes one parsed message.
pub fn describe(v: &Value) -> Message {
    let Some(obj) = v.as_object() else {
        return Message::Other;
    };
    let id = obj.get("id").filter(|id| is_id(id)).cloned();
    match (obj.get("method").and_then(Value::as_str), id) {
        (Some(method), id) => {
            let params = obj.get("params");
            let (tool, turn) = if method == "tools/call" {
                call_params(params)
            } else {
                (None, None)
            };
            match id {
                Some(id) => Message::Request {
                    id,
                    method: method.to_owned(),
                    tool,
                    turn,
                },
                None => Message::Notification {
                    method: method.to_owned(),
                    cancels: (method == "notifications/cancelled")
                        .then(|| params.and_then(|p| p.get("requestId")).cloned())
                        .flatten()
                        .filter(is_id),
                    tool,
                    turn,
                },
            }
        }
        (None, Some(id)) if obj.contains_key("result") || obj.contains_key("error") => {
            Message::Response { id }
        }
        _ => Message::Other,
    }
}

/// A JSON-RPC id: a string or a number (`null` is not one the proxy can match).
fn is_id(v: &Value) -> bool {
    v.is_string() || v.is_number()
}

/// `params.name` and `params._meta["outcomes/logical_turn_id"]` of a `tools/call`, each when a string.
fn call_params(params: Option<&Value>) -> (Option<String>, Option<String>) {
    let Some(p) = params else {
        return (None, None);
    };
    let tool = p.get("name").and_then(Value::as_str).map(str::to_owned);
    let turn = p
        .get("_meta")
        .and_then(|m| m.get(TURN_META_KEY))
        .and_then(Value::as_str)
        .map(str::to_owned);
    (tool, turn)
}

/// The key under which the proxy matches an answer to its request: the id's JSON text (`1` and `"1"`
/// are different ids, as JSON-RPC says).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// The cheap first look at a line from the server: whether it is a single response and its id, read
/// without building the (possibly large) result. `None` for anything else (requests and notifications
/// from the server, batches, lines that are not JSON): the caller reads those with [`inspect`] when it
/// needs to.
pub fn response_id(line: &[u8]) -> Option<Value> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        id: Option<Value>,
        #[serde(default)]
        method: Option<IgnoredAny>,
        #[serde(default)]
        result: Option<IgnoredAny>,
        #[serde(default)]
        error: Option<IgnoredAny>,
    }
    let head: Head = serde_json::from_slice(line).ok()?;
    let id = head.id.filter(is_id)?;
    (head.method.is_none() && (head.result.is_some() || head.error.is_some())).then_some(id)
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

    fn single(s: &str) -> Message {
        match inspect(s.as_bytes()) {
            Line::Single(m) => m,
            Line::Batch(_) => panic!("batch"),
        }
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
            }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#),
            Message::Request {
                id: json!("a"),
                method: "tools/list".into(),
                tool: None,
                turn: None
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
                turn: None
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
                turn: None
            }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Message::Notification {
                method: "notifications/initialized".into(),
                cancels: None,
                tool: None,
                turn: None
            }
        );
        // A tools/call without an id is a notification still carrying its tool.
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"w"}}"#),
            Message::Notification {
                method: "tools/call".into(),
                cancels: None,
                tool: Some("w".into()),
                turn: None
            }
        );
        // A null id is no id the proxy can match.
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"w"}}"#),
            Message::Notification {
                method: "tools/call".into(),
                cancels: None,
                tool: Some("w".into()),
                turn: None
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
                Message::Request {
                    id: json!(1),
                    method: "tools/call".into(),
                    tool: Some("w".into()),
                    turn: None
                },
                Message::Notification {
                    method: "notifications/progress".into(),
                    cancels: None,
                    tool: None,
                    turn: None
                },
                Message::Other,
            ])
        );
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
