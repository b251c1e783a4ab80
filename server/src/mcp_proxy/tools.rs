//! Which tools are protected (docs/mcp-proxy.md "Which calls are recorded"): every tool whose
//! `tools/list` entry lacks `annotations.readOnlyHint: true` (MCP's default is "may write"), every tool
//! the proxy has not seen in a `tools/list` answer (the proxy sends no request of its own), and every
//! tool named in `--protect`; minus the tools named in `--skip`. Pure: the proxy feeds it each
//! `tools/list` result it forwards.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

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

    /// Reads one `tools/list` result (`{"tools": [{"name", "annotations"?}, …], "nextCursor"?}`; one
    /// page: pages add up, a tool listed again takes its latest annotations). Entries without a string
    /// name are ignored; a result without a `tools` array changes nothing.
    pub fn learn(&mut self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for tool in tools {
            if let Some(name) = tool.get("name").and_then(Value::as_str) {
                let read_only = tool
                    .get("annotations")
                    .and_then(|a| a.get("readOnlyHint"))
                    .and_then(Value::as_bool)
                    == Some(true);
                self.seen.insert(name.to_owned(), read_only);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unseen_and_unannotated_tools_are_protected_read_only_ones_are_not() {
        let mut set = ToolSet::new(&[], &[]).expect("set");
        // Nothing listed yet: every tool may write.
        assert!(set.is_protected("read_file"));
        set.learn(&json!({"tools": [
            {"name": "read_file", "annotations": {"readOnlyHint": true}},
            {"name": "write_file", "annotations": {"readOnlyHint": false}},
            {"name": "edit_file"},
            {"name": "odd", "annotations": {"readOnlyHint": "true"}},
            {"name": "destructive_but_read_only_false", "annotations": {"destructiveHint": true}},
            {"annotations": {"readOnlyHint": true}},
        ], "nextCursor": "p2"}));
        assert!(!set.is_protected("read_file"));
        assert!(set.is_protected("write_file"));
        assert!(set.is_protected("edit_file"));
        // Only the JSON boolean true is the hint.
        assert!(set.is_protected("odd"));
        assert!(set.is_protected("destructive_but_read_only_false"));
        assert!(set.is_protected("never_listed"));
        // The second page adds to the first.
        set.learn(&json!({"tools": [{"name": "list_dir", "annotations": {"readOnlyHint": true}}]}));
        assert!(!set.is_protected("list_dir"));
        assert!(!set.is_protected("read_file"));
        // A later list without the hint makes the tool protected again.
        set.learn(&json!({"tools": [{"name": "read_file"}]}));
        assert!(set.is_protected("read_file"));
        // A result that is not a tools list changes nothing.
        set.learn(&json!({"content": []}));
        assert!(!set.is_protected("list_dir"));
    }

    #[test]
    fn protect_and_skip_override_by_name() {
        let mut set =
            ToolSet::new(&names(&["read_file"]), &names(&["write_file", "unlisted"])).expect("set");
        set.learn(&json!({"tools": [
            {"name": "read_file", "annotations": {"readOnlyHint": true}},
            {"name": "write_file"},
        ]}));
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
