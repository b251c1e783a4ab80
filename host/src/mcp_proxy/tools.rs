//! Which tools are protected (docs/mcp-proxy.md "Which calls are recorded"): every tool whose
//! `tools/list` entry lacks `annotations.readOnlyHint: true` (MCP's default is "may write"), every tool
//! the proxy has not seen in a `tools/list` answer (the proxy sends no request of its own), and every
//! tool named in `--protect`; minus the tools named in `--skip`. Pure: the proxy feeds it each
//! `tools/list` answer it forwards.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::read::{self, Members, Obj, Scalar};

/// The tools seen so far and the operator's overrides.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    /// Tool name → read-only (`annotations.readOnlyHint == true`) in the latest `tools/list` entry seen.
    seen: HashMap<String, bool>,
    protect: HashSet<String>,
    skip: HashSet<String>,
}

impl ToolSet {
    /// The overrides by tool name (the server's own names, not `mcp__…`). Error: a name in both lists.
    pub fn new(protect: &[String], skip: &[String]) -> Result<Self, String> {
        let protect: HashSet<String> = protect.iter().cloned().collect();
        let skip: HashSet<String> = skip.iter().cloned().collect();
        let mut both: Vec<&String> = protect.intersection(&skip).collect();
        if !both.is_empty() {
            both.sort();
            return Err(format!(
                "--protect and --skip both name {}: a tool is either recorded or not",
                both.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(ToolSet {
            seen: HashMap::new(),
            protect,
            skip,
        })
    }

    /// Reads one `tools/list` answer, the JSON text of the server's whole response object (its
    /// `result`: `{"tools": [{"name", "annotations"?}, …], "nextCursor"?}`; one page: pages add up, a
    /// tool listed again takes its latest annotations). Only each entry's `name` and
    /// `annotations.readOnlyHint` are read, the rest skipped unread. Entries without a string name are
    /// ignored; an answer without a `result.tools` array (or text that is not JSON) changes nothing.
    pub fn learn(&mut self, answer: &[u8]) {
        let Some(tools) = read::whole::<Obj<ListAnswer>>(answer).and_then(|a| a.0.tools) else {
            return;
        };
        for (name, read_only) in tools {
            self.seen.insert(name, read_only);
        }
    }

    /// Whether a call of `tool` is recorded in the ledger.
    pub fn is_protected(&self, tool: &str) -> bool {
        if self.skip.contains(tool) {
            return false;
        }
        if self.protect.contains(tool) {
            return true;
        }
        self.seen.get(tool) != Some(&true)
    }
}

/// `result.tools` of a `tools/list` answer: each named entry's name and whether it is read-only
/// (`annotations.readOnlyHint` is the boolean `true`); `None` when it is no array.
#[derive(Debug, Default)]
struct ListAnswer {
    tools: Option<Vec<(String, bool)>>,
}

impl Members for ListAnswer {
    const NAMES: &'static [&'static str] = &["result"];

    fn member<'de, A: MapAccess<'de>>(&mut self, _: usize, map: &mut A) -> Result<(), A::Error> {
        self.tools = map.next_value::<Obj<ListResult>>()?.0.tools.0;
        Ok(())
    }
}

#[derive(Debug, Default)]
struct ListResult {
    tools: Tools,
}

impl Members for ListResult {
    const NAMES: &'static [&'static str] = &["tools"];

    fn member<'de, A: MapAccess<'de>>(&mut self, _: usize, map: &mut A) -> Result<(), A::Error> {
        self.tools = map.next_value()?;
        Ok(())
    }
}

/// The named entries of a `tools` array, read one at a time (an entry without a string name is not
/// kept); `None` when the value is no array.
#[derive(Debug, Default)]
struct Tools(Option<Vec<(String, bool)>>);

impl<'de> Deserialize<'de> for Tools {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tools;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tools, A::Error> {
                let mut tools = Vec::new();
                while let Some(Obj(t)) = seq.next_element::<Obj<Tool>>()? {
                    if let Some(name) = t.name {
                        tools.push((name, t.read_only));
                    }
                }
                Ok(Tools(Some(tools)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Tools, A::Error> {
                read::skip_map(map)?;
                Ok(Tools(None))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Tools, E> {
                Ok(Tools(None))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Tools, E> {
                Ok(Tools(None))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Tools, E> {
                Ok(Tools(None))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Tools, E> {
                Ok(Tools(None))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Tools, E> {
                Ok(Tools(None))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Tools, E> {
                Ok(Tools(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// One `tools` entry: its `name` when a string, and whether `annotations.readOnlyHint` is `true`.
#[derive(Debug, Default)]
struct Tool {
    name: Option<String>,
    read_only: bool,
}

impl Members for Tool {
    const NAMES: &'static [&'static str] = &["name", "annotations"];

    fn member<'de, A: MapAccess<'de>>(
        &mut self,
        index: usize,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match index {
            0 => self.name = map.next_value::<Scalar>()?.into_string(),
            _ => self.read_only = map.next_value::<Obj<Annotations>>()?.0 .0,
        }
        Ok(())
    }
}

/// `annotations.readOnlyHint` is the boolean `true`.
#[derive(Debug, Default)]
struct Annotations(bool);

impl Members for Annotations {
    const NAMES: &'static [&'static str] = &["readOnlyHint"];

    fn member<'de, A: MapAccess<'de>>(&mut self, _: usize, map: &mut A) -> Result<(), A::Error> {
        self.0 = map.next_value::<Scalar>()? == Scalar::Bool(true);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Teaches `set` a `tools/list` answer with this `result`, as the proxy reads it: its JSON text.
    fn learn(set: &mut ToolSet, result: Value) {
        set.learn(
            json!({"jsonrpc": "2.0", "id": 2, "result": result})
                .to_string()
                .as_bytes(),
        );
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unseen_and_unannotated_tools_are_protected_read_only_ones_are_not() {
        let mut set = ToolSet::new(&[], &[]).expect("set");
        // Nothing listed yet: every tool may write.
        assert!(set.is_protected("read_file"));
        learn(
            &mut set,
            json!({"tools": [
            {"name": "read_file", "annotations": {"readOnlyHint": true}},
            {"name": "write_file", "annotations": {"readOnlyHint": false}},
            {"name": "edit_file"},
            {"name": "odd", "annotations": {"readOnlyHint": "true"}},
            {"name": "destructive_but_read_only_false", "annotations": {"destructiveHint": true}},
            {"annotations": {"readOnlyHint": true}},
        ], "nextCursor": "p2"}),
        );
        assert!(!set.is_protected("read_file"));
        assert!(set.is_protected("write_file"));
        assert!(set.is_protected("edit_file"));
        // Only the JSON boolean true is the hint.
        assert!(set.is_protected("odd"));
        assert!(set.is_protected("destructive_but_read_only_false"));
        assert!(set.is_protected("never_listed"));
        // The second page adds to the first.
        learn(
            &mut set,
            json!({"tools": [{"name": "list_dir", "annotations": {"readOnlyHint": true}}]}),
        );
        assert!(!set.is_protected("list_dir"));
        assert!(!set.is_protected("read_file"));
        // A later list without the hint makes the tool protected again.
        learn(&mut set, json!({"tools": [{"name": "read_file"}]}));
        assert!(set.is_protected("read_file"));
        // A result that is not a tools list changes nothing.
        learn(&mut set, json!({"content": []}));
        assert!(!set.is_protected("list_dir"));
    }

    #[test]
    fn a_tools_list_is_read_whatever_else_it_holds() {
        let mut set = ToolSet::new(&[], &[]).expect("set");
        let zeros = format!("[{}0]", "0,".repeat(100_000));
        let answer = format!(
            r#"{{"result":{{"tools":[0,{zeros},{{"inputSchema":{zeros},"name":"r","annotations":{{"x":{zeros},"readOnlyHint":true}}}}],"nextCursor":{zeros}}},"jsonrpc":"2.0","id":2}}"#
        );
        set.learn(answer.as_bytes());
        assert!(!set.is_protected("r"));
        // The last of a repeated tools array counts; text that is not JSON changes nothing.
        set.learn(br#"{"id":2,"result":{"tools":[{"name":"a","annotations":{"readOnlyHint":true}}],"tools":[{"name":"r"}]}}"#);
        assert!(set.is_protected("r"));
        assert!(set.is_protected("a"));
        set.learn(
            br#"{"id":2,"result":{"tools":[{"name":"a","annotations":{"readOnlyHint":true}}]"#,
        );
        assert!(set.is_protected("a"));
    }

    #[test]
    fn protect_and_skip_override_by_name() {
        let mut set =
            ToolSet::new(&names(&["read_file"]), &names(&["write_file", "unlisted"])).expect("set");
        learn(
            &mut set,
            json!({"tools": [
                {"name": "read_file", "annotations": {"readOnlyHint": true}},
                {"name": "write_file"},
            ]}),
        );
        assert!(set.is_protected("read_file"));
        assert!(!set.is_protected("write_file"));
        assert!(!set.is_protected("unlisted"));
        assert!(set.is_protected("other"));
    }

    #[test]
    fn a_name_in_both_lists_is_refused() {
        let err = ToolSet::new(&names(&["a", "b"]), &names(&["b", "c"])).expect_err("both");
        assert_eq!(
            err,
            "--protect and --skip both name b: a tool is either recorded or not"
        );
    }
}
