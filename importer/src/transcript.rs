//! Transcripts in the OpenAI chat format, as read (docs/import.md "Import agent transcripts"):
//! - a file is a JSON array of conversations, or JSON Lines (one conversation per line); see
//!   [`parse_transcripts`];
//! - a conversation is a list of messages, or an object holding one under `messages` or `traj` (and
//!   optionally its own `id`); see [`messages`]. It stays a [`serde_json::Value`] as parsed: its session key
//!   may be the hash of exactly that JSON;
//! - each message is deserialised on its own into a typed [`Message`] ([`Message::read`]), so one malformed
//!   message is reported with its position and the others are still read: `system`/`developer`
//!   (ignored), `user` (starts a new logical turn), `assistant` with `tool_calls: [{"id", "type":
//!   "function", "function": {"name", "arguments"}}]` ([`ToolCall`]), and `tool` results with
//!   `tool_call_id` and `content` (a string, or an array of parts whose `text` fields are joined by `\n`).
//!   Arguments are never read.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Where a conversation came from in its file: a JSON Lines line (1-based) or an index in a JSON array
/// (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    Line(usize),
    Index(usize),
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Line(n) => write!(f, "{n}"),
            Position::Index(i) => write!(f, "conversation {i}"),
        }
    }
}

/// Splits a transcript file into conversations. When the whole text is one JSON value it is an array of
/// conversations, or one conversation (an object, or an array whose first element is a message, i.e. an
/// object with a `role`). Otherwise it is JSON Lines: each non-blank line is one conversation, and a line
/// that is not JSON is returned as an `Err` with the parser's message (`not JSON: ...`), without losing the
/// other lines.
pub fn parse_transcripts(text: &str) -> Vec<(Position, Result<Value, String>)> {
    if let Ok(whole) = serde_json::from_str::<Value>(text) {
        let single = match &whole {
            Value::Array(items) => items
                .first()
                .is_some_and(|first| first.get("role").is_some()),
            _ => true,
        };
        return match whole {
            Value::Array(items) if !single => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Position::Index(i), Ok(v)))
                .collect(),
            other => vec![(Position::Index(0), Ok(other))],
        };
    }
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            (
                Position::Line(n + 1),
                serde_json::from_str::<Value>(line).map_err(|e| format!("not JSON: {e}")),
            )
        })
        .collect()
}

/// The messages of a conversation: the conversation itself when it is an array, else its `messages` (or,
/// without that key, `traj`). Errors, as sentences: the key holds something other than an array, the
/// object has neither key, the conversation is neither an array nor an object.
pub fn messages(conversation: &Value) -> Result<&[Value], String> {
    match conversation {
        Value::Array(messages) => Ok(messages),
        Value::Object(o) => match o.get("messages").or_else(|| o.get("traj")) {
            Some(Value::Array(messages)) => Ok(messages),
            Some(_) => Err("`messages`/`traj` is not a list of messages".into()),
            None => Err("an object without `messages` or `traj` is not a conversation".into()),
        },
        _ => Err("a conversation is a list of messages or an object holding one".into()),
    }
}

/// One message of a conversation, deserialised by [`Message::read`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// `system` or `developer`: ignored.
    Instructions,
    /// `user`: starts a new logical turn.
    User,
    /// `assistant`, with its `tool_calls` in order (none when the key is absent or `null`).
    Assistant { tool_calls: Vec<ToolCall> },
    /// `tool`: the result for the call `tool_call_id`, its content as text.
    Tool { tool_call_id: String, text: String },
}

/// One element of an assistant message's `tool_calls`. Every element keeps its position (a call's
/// mutation id counts them), so an unusable one is a variant, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCall {
    /// A function call: its `function.name`, and the `id` its result names (`None` when there is no string
    /// `id`: the result cannot be matched).
    Function { id: Option<String>, name: String },
    /// A call whose `type` is present and not `"function"` (`null` included): not a function call.
    NotAFunction,
    /// A function call without a string `function.name` (or not an object at all).
    Unnamed,
}

/// Why a message could not be read. The texts are those reported after `message m: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Not an object, or an object without `role`.
    #[error("not a message: no `role`")]
    NotAMessage,
    #[error("`role` is not a string")]
    RoleNotAString,
    #[error("unknown role {0:?}")]
    UnknownRole(String),
    #[error("`tool_calls` is not an array")]
    ToolCallsNotAnArray,
    /// A tool result without a string `tool_call_id`.
    #[error("tool result without `tool_call_id`")]
    NoToolCallId,
    #[error("content is neither a string nor an array of parts")]
    Content,
}

impl Message {
    /// Deserialises one message. Only the fields its role uses are read (`role`; `tool_calls` of an
    /// assistant; `tool_call_id` and `content` of a tool result); others are ignored. A tool result's
    /// content is a string, `null` or absent (empty), or an array of parts whose text (a string part, or a
    /// part's string `text`) is joined by `\n`, other parts (images) left out. Errors: [`MessageError`].
    pub fn read(message: &Value) -> Result<Message, MessageError> {
        if !message.is_object() {
            return Err(MessageError::NotAMessage);
        }
        let role = match RoleField::deserialize(message) {
            Ok(RoleField { role }) => role,
            Err(_) => return Err(MessageError::NotAMessage),
        };
        let role = match role {
            Field::Absent => return Err(MessageError::NotAMessage),
            Field::Null | Field::Other => return Err(MessageError::RoleNotAString),
            Field::Is(role) => role,
        };
        match role.as_str() {
            "system" | "developer" => Ok(Message::Instructions),
            "user" => Ok(Message::User),
            "assistant" => match AssistantFields::deserialize(message).map(|f| f.tool_calls) {
                Ok(Field::Absent | Field::Null) => Ok(Message::Assistant {
                    tool_calls: Vec::new(),
                }),
                Ok(Field::Is(tool_calls)) => Ok(Message::Assistant { tool_calls }),
                Ok(Field::Other) | Err(_) => Err(MessageError::ToolCallsNotAnArray),
            },
            "tool" => {
                let Ok(fields) = ToolFields::deserialize(message) else {
                    return Err(MessageError::NoToolCallId);
                };
                let Field::Is(tool_call_id) = fields.tool_call_id else {
                    return Err(MessageError::NoToolCallId);
                };
                let text = match fields.content {
                    Field::Absent | Field::Null => String::new(),
                    Field::Is(Content::Text(text)) => text,
                    Field::Is(Content::Parts(parts)) => parts
                        .into_iter()
                        .filter_map(Part::text)
                        .collect::<Vec<_>>()
                        .join("\n"),
                    Field::Other => return Err(MessageError::Content),
                };
                Ok(Message::Tool { tool_call_id, text })
            }
            other => Err(MessageError::UnknownRole(other.to_owned())),
        }
    }
}

/// A field as found: absent, `null`, of the expected shape `T`, or of another shape. Never fails to
/// deserialise (the value is read whole, then tried as `T`), so a wrong field is reported by the reader,
/// with its own text, instead of failing the message.
#[derive(Debug, Default)]
enum Field<T> {
    #[default]
    Absent,
    Null,
    Is(T),
    Other,
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => Field::Null,
            value => T::deserialize(value).map_or(Field::Other, Field::Is),
        })
    }
}

/// `T` read from a JSON object only (serde would also read a struct from an array, by position).
#[derive(Debug)]
struct Object<T>(T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            value @ Value::Object(_) => T::deserialize(value).map(Object).map_err(D::Error::custom),
            _ => Err(D::Error::custom("not an object")),
        }
    }
}

#[derive(Deserialize)]
struct RoleField {
    #[serde(default)]
    role: Field<String>,
}

#[derive(Deserialize)]
struct AssistantFields {
    #[serde(default)]
    tool_calls: Field<Vec<ToolCall>>,
}

#[derive(Deserialize)]
struct ToolFields {
    #[serde(default)]
    tool_call_id: Field<String>,
    #[serde(default)]
    content: Field<Content>,
}

/// A tool result's `content` of a usable shape.
#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

/// One part of an array content: a string, an object (its string `text` is taken), or anything else
/// (left out).
#[derive(Deserialize)]
#[serde(untagged)]
enum Part {
    Text(String),
    Fields(Object<PartFields>),
    Other(serde::de::IgnoredAny),
}

impl Part {
    /// The part's text; `None` for a part without one (an image).
    fn text(self) -> Option<String> {
        match self {
            Part::Text(text)
            | Part::Fields(Object(PartFields {
                text: Field::Is(text),
            })) => Some(text),
            Part::Fields(_) | Part::Other(_) => None,
        }
    }
}

#[derive(Deserialize)]
struct PartFields {
    #[serde(default)]
    text: Field<String>,
}

#[derive(Deserialize)]
struct ToolCallFields {
    #[serde(default, rename = "type")]
    kind: Field<String>,
    #[serde(default)]
    id: Field<String>,
    #[serde(default)]
    function: Field<Object<FunctionFields>>,
}

#[derive(Deserialize)]
struct FunctionFields {
    #[serde(default)]
    name: Field<String>,
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Field::Is(Object(call)) = Field::<Object<ToolCallFields>>::deserialize(d)? else {
            return Ok(ToolCall::Unnamed);
        };
        match call.kind {
            Field::Absent => {}
            Field::Is(kind) if kind == "function" => {}
            _ => return Ok(ToolCall::NotAFunction),
        }
        let Field::Is(Object(FunctionFields {
            name: Field::Is(name),
        })) = call.function
        else {
            return Ok(ToolCall::Unnamed);
        };
        let id = match call.id {
            Field::Is(id) => Some(id),
            _ => None,
        };
        Ok(ToolCall::Function { id, name })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn transcripts_are_a_json_array_or_json_lines_with_bad_lines_reported() {
        let lines =
            "[{\"role\":\"user\",\"content\":\"a\"}]\n{broken\n\n{\"id\":\"x\",\"traj\":[]}\n";
        let parsed = parse_transcripts(lines);
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0].0, Position::Line(1));
        assert_eq!(parsed[1].0, Position::Line(2));
        assert!(parsed[1]
            .1
            .as_ref()
            .is_err_and(|e| e.starts_with("not JSON: key must be a string")));
        assert_eq!(
            parsed[2],
            (Position::Line(4), Ok(json!({"id": "x", "traj": []})))
        );
        let array = parse_transcripts("[[], {\"messages\": []}]");
        assert_eq!(
            array,
            vec![
                (Position::Index(0), Ok(json!([]))),
                (Position::Index(1), Ok(json!({"messages": []}))),
            ]
        );
        let one = parse_transcripts("[{\"role\": \"user\", \"content\": \"hi\"}]");
        assert_eq!(
            one,
            vec![(
                Position::Index(0),
                Ok(json!([{"role": "user", "content": "hi"}]))
            )]
        );
    }

    #[test]
    fn messages_are_read_by_shape_with_each_unusable_field_named() {
        use MessageError::*;
        for (message, expected) in [
            (json!("text"), Err(NotAMessage)),
            (json!(["user"]), Err(NotAMessage)),
            (json!({"content": "hi"}), Err(NotAMessage)),
            (json!({"role": null}), Err(RoleNotAString)),
            (json!({"role": 1}), Err(RoleNotAString)),
            (json!({"role": "robot"}), Err(UnknownRole("robot".into()))),
            (
                json!({"role": "developer", "content": 1}),
                Ok(Message::Instructions),
            ),
            (json!({"role": "user", "content": [1]}), Ok(Message::User)),
            (
                json!({"role": "assistant", "tool_calls": null}),
                Ok(Message::Assistant { tool_calls: vec![] }),
            ),
            (
                json!({"role": "assistant", "tool_calls": {}}),
                Err(ToolCallsNotAnArray),
            ),
            (
                json!({"role": "tool", "tool_call_id": 7, "content": "x"}),
                Err(NoToolCallId),
            ),
            (
                json!({"role": "tool", "tool_call_id": "a", "content": {"text": "x"}}),
                Err(Content),
            ),
            (
                json!({"role": "tool", "tool_call_id": "a", "content": null}),
                Ok(Message::Tool {
                    tool_call_id: "a".into(),
                    text: String::new(),
                }),
            ),
            (
                json!({"role": "tool", "tool_call_id": "a", "content": ["s", {"text": "t"}, {"text": 1}, ["u"], null]}),
                Ok(Message::Tool {
                    tool_call_id: "a".into(),
                    text: "s\nt".into(),
                }),
            ),
        ] {
            assert_eq!(Message::read(&message), expected, "{message}");
        }
        let calls = json!({"role": "assistant", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}},
            {"function": {"name": "t"}},
            {"id": 3, "function": {"name": "t"}},
            {"type": null, "function": {"name": "t"}},
            {"type": "custom", "function": {"name": "t"}},
            {"id": "b", "function": ["t"]},
            {"id": "b", "function": {"name": 1}},
            ["function", "t"],
            null,
        ]});
        let f = |id: Option<&str>| ToolCall::Function {
            id: id.map(str::to_owned),
            name: "t".into(),
        };
        assert_eq!(
            Message::read(&calls),
            Ok(Message::Assistant {
                tool_calls: vec![
                    f(Some("a")),
                    f(None),
                    f(None),
                    ToolCall::NotAFunction,
                    ToolCall::NotAFunction,
                    ToolCall::Unnamed,
                    ToolCall::Unnamed,
                    ToolCall::Unnamed,
                    ToolCall::Unnamed,
                ]
            })
        );
    }
}
