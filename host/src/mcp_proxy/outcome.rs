//! What an answer to a protected `tools/call` says happened (docs/mcp-proxy.md "Outcome rules"), and
//! the host metadata the operator mapped out of it (`--metadata`). Pure: an answer's JSON text in, a
//! decision out; only the members needed are read from it, the rest is skipped unread (docs/mcp-proxy.md
//! "Long lines"). The proxy never guesses: what it did not see is `outcome_unknown`.

use serde::de::MapAccess;

use super::read::{self, Members, Obj, Scalar};

/// How a result with `isError: true` is recorded (`--is-error-as`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IsErrorAs {
    /// `failed`: the server's own statement that the tool failed.
    Failed,
    /// `outcome_unknown`: for servers whose error results do not prove that nothing happened.
    Unknown,
}

/// The ledger transition an answer leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Settle `completed`: a result without `isError: true`.
    Completed,
    /// Settle `failed`: a result with `isError: true` (with `--is-error-as failed`).
    Failed,
    /// Cancellation (published `not_executed`): JSON-RPC error -32601 (method not found) or -32602
    /// (invalid params): the tool never ran.
    NotExecuted,
    /// Settle `outcome_unknown` (no reason): any other JSON-RPC error, an `isError` result with
    /// `--is-error-as unknown`, or an answer that is neither a result nor an error.
    Unknown,
}

/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params".
pub const INVALID_PARAMS: i64 = -32602;

/// The members of an answer [`decide`] reads: whether `result` is there and its `isError`, whether
/// `error` is there and its `code`.
#[derive(Debug, Default)]
struct Answer {
    result: Option<ResultHead>,
    error: Option<ErrorHead>,
}

impl Members for Answer {
    const NAMES: &'static [&'static str] = &["result", "error"];

    fn member<'de, A: MapAccess<'de>>(
        &mut self,
        index: usize,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match index {
            0 => self.result = Some(map.next_value::<Obj<ResultHead>>()?.0),
            _ => self.error = Some(map.next_value::<Obj<ErrorHead>>()?.0),
        }
        Ok(())
    }
}

/// `result.isError`, when the boolean `true`.
#[derive(Debug, Default)]
struct ResultHead {
    is_error: bool,
}

impl Members for ResultHead {
    const NAMES: &'static [&'static str] = &["isError"];

    fn member<'de, A: MapAccess<'de>>(&mut self, _: usize, map: &mut A) -> Result<(), A::Error> {
        self.is_error = map.next_value::<Scalar>()? == Scalar::Bool(true);
        Ok(())
    }
}

/// `error.code`, when an integer.
#[derive(Debug, Default)]
struct ErrorHead {
    code: Option<i64>,
}

impl Members for ErrorHead {
    const NAMES: &'static [&'static str] = &["code"];

    fn member<'de, A: MapAccess<'de>>(&mut self, _: usize, map: &mut A) -> Result<(), A::Error> {
        self.code = match map.next_value::<Scalar>()? {
            Scalar::Number(n) => n.as_i64(),
            _ => None,
        };
        Ok(())
    }
}

/// The decision for `answer`, the JSON text of the server's whole response object
/// (`{"jsonrpc","id","result"|"error"}`); text that is not JSON is an answer that says nothing
/// (`Unknown`).
pub fn decide(answer: &[u8], is_error_as: IsErrorAs) -> Decision {
    let answer = read::whole::<Obj<Answer>>(answer).unwrap_or_default().0;
    if let Some(result) = answer.result {
        if result.is_error {
            return match is_error_as {
                IsErrorAs::Failed => Decision::Failed,
                IsErrorAs::Unknown => Decision::Unknown,
            };
        }
        return Decision::Completed;
    }
    match answer.error.and_then(|e| e.code) {
        Some(METHOD_NOT_FOUND | INVALID_PARAMS) => Decision::NotExecuted,
        _ => Decision::Unknown,
    }
}

/// Whether an answer (its JSON text) that arrived after the proxy gave up on it (timeout, the client's
/// cancellation) is evidence that the call completed: a result without `isError: true`. A late error
/// (any kind) leaves the outcome unknown.
pub fn late_success(answer: &[u8]) -> bool {
    decide(answer, IsErrorAs::Unknown) == Decision::Completed
}

/// `--metadata id=/ptr,url=/ptr,title=/ptr`: JSON pointers (RFC 6901) into a completed result's
/// `structuredContent`, each field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataMap {
    pub id: Option<String>,
    pub url: Option<String>,
    pub title: Option<String>,
}

impl MetadataMap {
    /// Parses `key=/pointer` items separated by commas (`id`, `url`, `title`, each at most once; a comma
    /// inside a pointer is kept when the text after it does not start with `id=`, `url=` or `title=`).
    /// Errors, as sentences: an unknown or repeated key, an item without `=`, a pointer that is neither
    /// empty nor starts with `/`.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut items: Vec<String> = Vec::new();
        for part in spec.split(',') {
            let starts_item = ["id=", "url=", "title="]
                .iter()
                .any(|k| part.starts_with(k));
            match items.last_mut() {
                Some(last) if !starts_item => {
                    last.push(',');
                    last.push_str(part);
                }
                _ => items.push(part.to_owned()),
            }
        }
        let mut map = MetadataMap::default();
        for item in items {
            let Some((key, pointer)) = item.split_once('=') else {
                return Err(format!(
                    "--metadata item {item:?} is not key=/pointer (keys: id, url, title)"
                ));
            };
            if !pointer.is_empty() && !pointer.starts_with('/') {
                return Err(format!(
                    "--metadata {key}={pointer}: a JSON pointer is empty or starts with '/' (e.g. {key}=/{pointer})"
                ));
            }
            let slot = match key {
                "id" => &mut map.id,
                "url" => &mut map.url,
                "title" => &mut map.title,
                _ => {
                    return Err(format!(
                        "--metadata key {key:?} is not one of id, url, title"
                    ))
                }
            };
            if slot.replace(pointer.to_owned()).is_some() {
                return Err(format!("--metadata names {key} twice"));
            }
        }
        Ok(map)
    }

    /// The host metadata `(id, url, title)` read from `answer.result.structuredContent` (`answer`: the
    /// JSON text of the server's whole response object; each pointer's value read alone, the rest
    /// skipped unread): a string as it is, a number or boolean as its JSON text, anything else (missing,
    /// null, an object, an array) as `None`. `None` when the mapping finds nothing at all (then nothing
    /// is attached).
    pub fn extract(&self, answer: &[u8]) -> Option<[Option<String>; 3]> {
        if self.is_empty() {
            return None;
        }
        let read = |p: &Option<String>| -> Option<String> {
            let mut tokens = vec!["result".to_owned(), "structuredContent".to_owned()];
            tokens.extend(read::pointer_tokens(p.as_deref()?)?);
            match read::at(answer, &tokens) {
                Scalar::Str(s) => Some(s).filter(|s| !s.is_empty()),
                Scalar::Number(n) => Some(n.to_string()),
                Scalar::Bool(b) => Some(b.to_string()),
                Scalar::Other => None,
            }
        };
        let fields = [read(&self.id), read(&self.url), read(&self.title)];
        fields.iter().any(Option::is_some).then_some(fields)
    }

    /// Whether any field is mapped.
    pub fn is_empty(&self) -> bool {
        self.id.is_none() && self.url.is_none() && self.title.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    // The answers as the proxy reads them: their JSON text.
    fn decide(answer: &Value, is_error_as: IsErrorAs) -> Decision {
        super::decide(answer.to_string().as_bytes(), is_error_as)
    }

    fn late_success(answer: &Value) -> bool {
        super::late_success(answer.to_string().as_bytes())
    }

    fn extract(map: &MetadataMap, answer: &Value) -> Option<[Option<String>; 3]> {
        map.extract(answer.to_string().as_bytes())
    }

    #[test]
    fn answers_decide_as_the_rules_say() {
        let f = IsErrorAs::Failed;
        let u = IsErrorAs::Unknown;
        let ok =
            json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}});
        assert_eq!(decide(&ok, f), Decision::Completed);
        assert_eq!(decide(&ok, u), Decision::Completed);
        let explicit_ok = json!({"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}});
        assert_eq!(decide(&explicit_ok, f), Decision::Completed);
        let is_error = json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Access denied"}],"isError":true}});
        assert_eq!(decide(&is_error, f), Decision::Failed);
        assert_eq!(decide(&is_error, u), Decision::Unknown);
        // Only the boolean true is isError.
        let odd = json!({"jsonrpc":"2.0","id":1,"result":{"isError":"true"}});
        assert_eq!(decide(&odd, f), Decision::Completed);
        for code in [METHOD_NOT_FOUND, INVALID_PARAMS] {
            let e = json!({"jsonrpc":"2.0","id":1,"error":{"code":code,"message":"m"}});
            assert_eq!(decide(&e, f), Decision::NotExecuted, "{code}");
            assert_eq!(decide(&e, u), Decision::NotExecuted, "{code}");
        }
        for code in [-32603, -32000, -32001, -32600, -32700, 1, 0] {
            let e = json!({"jsonrpc":"2.0","id":1,"error":{"code":code,"message":"m"}});
            assert_eq!(decide(&e, f), Decision::Unknown, "{code}");
        }
        // An error without a numeric code, and an answer with neither result nor error.
        assert_eq!(
            decide(&json!({"id":1,"error":{"message":"m"}}), f),
            Decision::Unknown
        );
        assert_eq!(
            decide(&json!({"id":1,"error":{"code":"-32601"}}), f),
            Decision::Unknown
        );
        assert_eq!(decide(&json!({"id":1}), f), Decision::Unknown);
    }

    #[test]
    fn answers_decide_whatever_else_they_hold() {
        let f = IsErrorAs::Failed;
        let zeros = format!("[{}0]", "0,".repeat(100_000));
        let deep = format!("{}0{}", "[".repeat(10_000), "]".repeat(10_000));
        for big in [&zeros, &deep] {
            let ok = format!(
                r#"{{"result":{{"content":{big},"structuredContent":{{"n":{big},"title":"T"}}}},"jsonrpc":"2.0","id":1}}"#
            );
            assert_eq!(super::decide(ok.as_bytes(), f), Decision::Completed);
            let map = MetadataMap::parse("id=/n,title=/title").expect("parse");
            assert_eq!(
                map.extract(ok.as_bytes()),
                Some([None, None, Some("T".into())])
            );
            let failed = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":{big},"isError":true}}}}"#
            );
            assert_eq!(super::decide(failed.as_bytes(), f), Decision::Failed);
            let error =
                format!(r#"{{"jsonrpc":"2.0","id":1,"error":{{"data":{big},"code":-32602}}}}"#);
            assert_eq!(super::decide(error.as_bytes(), f), Decision::NotExecuted);
        }
        // A result that is not an object is a result; the last of a repeated member counts; text that is
        // not JSON says nothing.
        assert_eq!(
            super::decide(br#"{"id":1,"result":[0,0]}"#, f),
            Decision::Completed
        );
        assert_eq!(
            super::decide(br#"{"id":1,"result":{"isError":true},"result":{}}"#, f),
            Decision::Completed
        );
        assert_eq!(
            super::decide(br#"{"id":1,"result":{"isError":true}"#, f),
            Decision::Unknown
        );
        assert_eq!(super::decide(b"[1]", f), Decision::Unknown);
    }

    #[test]
    fn only_a_late_result_without_is_error_is_evidence() {
        assert!(late_success(&json!({"id":1,"result":{"content":[]}})));
        assert!(!late_success(&json!({"id":1,"result":{"isError":true}})));
        assert!(!late_success(
            &json!({"id":1,"error":{"code":-32602,"message":"m"}})
        ));
        assert!(!late_success(
            &json!({"id":1,"error":{"code":-32603,"message":"m"}})
        ));
    }

    #[test]
    fn metadata_pointers_parse_strictly() {
        assert_eq!(
            MetadataMap::parse("id=/id,url=/html_url,title=/title").expect("parse"),
            MetadataMap {
                id: Some("/id".into()),
                url: Some("/html_url".into()),
                title: Some("/title".into())
            }
        );
        // A comma inside a pointer stays in it.
        assert_eq!(
            MetadataMap::parse("title=/a,b,id=/n").expect("parse"),
            MetadataMap {
                id: Some("/n".into()),
                url: None,
                title: Some("/a,b".into())
            }
        );
        assert_eq!(
            MetadataMap::parse("name=/x").expect_err("key"),
            "--metadata key \"name\" is not one of id, url, title"
        );
        assert_eq!(
            MetadataMap::parse("id=/a,id=/b").expect_err("twice"),
            "--metadata names id twice"
        );
        assert_eq!(
            MetadataMap::parse("id=x").expect_err("pointer"),
            "--metadata id=x: a JSON pointer is empty or starts with '/' (e.g. id=/x)"
        );
        assert_eq!(
            MetadataMap::parse("id").expect_err("no ="),
            "--metadata item \"id\" is not key=/pointer (keys: id, url, title)"
        );
    }

    #[test]
    fn metadata_is_read_from_structured_content_only() {
        let map = MetadataMap::parse("id=/number,url=/html_url,title=/title").expect("parse");
        let answer = json!({"id":1,"result":{"content":[{"type":"text","text":"{\"number\":1}"}],
            "structuredContent":{"number":419,"html_url":"https://code.example.com/o/r/issues/419","title":"Refund rounds"}}});
        assert_eq!(
            extract(&map, &answer),
            Some([
                Some("419".into()),
                Some("https://code.example.com/o/r/issues/419".into()),
                Some("Refund rounds".into())
            ])
        );
        // Structures and nulls are not published; the text content is never read.
        let answer = json!({"id":1,"result":{"content":[],"structuredContent":{"number":null,"title":{"a":1}}}});
        assert_eq!(extract(&map, &answer), None);
        let answer = json!({"id":1,"result":{"content":[{"type":"text","text":"x"}]}});
        assert_eq!(extract(&map, &answer), None);
        let partial = json!({"id":1,"result":{"structuredContent":{"title":"T"}}});
        assert_eq!(
            extract(&map, &partial),
            Some([None, None, Some("T".into())])
        );
    }
}
