//! The import configuration as read from a file (docs/import.md "Import agent transcripts"): write tools, the
//! classification's patterns and JSON field rules, and per-tool metadata rules, with their defaults.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// Default timeout patterns: the result only says the call timed out (anchored at the start, after an
/// optional `Error`, allowing a few words before, so a result that merely mentions a timeout is normal).
pub const DEFAULT_TIMEOUT_PATTERNS: [&str; 2] = [
    r"(?i)^\W*(error\W*)?(\S+\s+){0,6}(timed out|deadline exceeded)\b",
    r"(?i)^\W*(error\W*)?((http|status)\W*)?(timeout(error)?\b|gateway time-?out\b|504\b)",
];

/// Default transport patterns: the result only says the connection broke or the gateway failed.
pub const DEFAULT_UNKNOWN_PATTERNS: [&str; 2] = [
    r"(?i)^\W*(error\W*)?(\S+\s+){0,6}(connection (was )?(reset|closed|aborted|broken|broke|lost|dropped)|broken pipe|econnreset|socket hang up)\b",
    r"(?i)^\W*(error\W*)?((http|status)\W*)?(50[23]\b|bad gateway\b|service unavailable\b)",
];

/// Default failure pattern: the result text starts with `Error` (any case).
pub const DEFAULT_FAILED_PATTERNS: [&str; 1] = [r"(?i)^\s*error\b"];

/// The import configuration, as read from a config file (the CLI reads TOML; any serde format works).
/// Unknown keys are refused. A list given in the file replaces that list's defaults; a list left out keeps
/// them.
///
/// ```toml
/// write_tools = ["create_issue"]          # added to --write-tools
/// [classify]
/// failed_fields = [{ pointer = "/error" }, { pointer = "/status", equals = "failed" }]
/// [metadata.create_issue]
/// id_pointer = "/number"
/// url_template = "https://code.example.com/acme/shop/issues/{id}"
/// title_template = "Issue #{id}"
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImportConfig {
    /// Names of the write tools (in addition to those given on the command line).
    pub write_tools: Vec<String>,
    /// How results are classified.
    pub classify: ClassifyConfig,
    /// Per tool name: where its resource id, url and title come from.
    pub metadata: BTreeMap<String, MetadataRule>,
}

/// Patterns (regular expressions, `regex` syntax) and JSON field rules of
/// [`Importer::classify`](crate::Importer::classify).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassifyConfig {
    /// Text patterns meaning the call timed out: `outcome_unknown` + `execution_timeout`.
    pub timeout_patterns: Vec<String>,
    /// Text patterns meaning the reply was lost in transport: `outcome_unknown`.
    pub unknown_patterns: Vec<String>,
    /// Text patterns meaning the tool refused or failed: `failed`.
    pub failed_patterns: Vec<String>,
    /// JSON field rules meaning the tool refused or failed: `failed`.
    pub failed_fields: Vec<FieldRule>,
}

impl Default for ClassifyConfig {
    fn default() -> Self {
        let owned = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect();
        ClassifyConfig {
            timeout_patterns: owned(&DEFAULT_TIMEOUT_PATTERNS),
            unknown_patterns: owned(&DEFAULT_UNKNOWN_PATTERNS),
            failed_patterns: owned(&DEFAULT_FAILED_PATTERNS),
            failed_fields: vec![
                FieldRule {
                    pointer: "/error".into(),
                    equals: None,
                },
                FieldRule {
                    pointer: "/status".into(),
                    equals: Some(Value::from("failed")),
                },
                FieldRule {
                    pointer: "/isError".into(),
                    equals: Some(Value::Bool(true)),
                },
            ],
        }
    }
}

/// A rule on the result parsed as JSON: matches when the JSON pointer (RFC 6901, e.g. `/error`) resolves
/// and, with `equals`, the value equals it; without `equals`, when the value is not `null`, `false` or `""`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldRule {
    pub pointer: String,
    #[serde(default)]
    pub equals: Option<Value>,
}

/// Where one tool's host metadata comes from. Pointers are JSON pointers into the result parsed as JSON
/// (a string or number there is taken); templates replace `{id}` with the resource id (percent-encoded in
/// the url) and are skipped when there is no id. A pointer wins over a template.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetadataRule {
    pub id_pointer: Option<String>,
    pub url_pointer: Option<String>,
    pub url_template: Option<String>,
    pub title_pointer: Option<String>,
    pub title_template: Option<String>,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no write tools: name them with --write-tools or write_tools in the config")]
    NoWriteTools,
    #[error("{list}: invalid pattern {pattern:?}: {source}")]
    Pattern {
        list: &'static str,
        pattern: String,
        source: regex::Error,
    },
    #[error("{field}: {pointer:?} is not a JSON pointer (empty, or starting with '/')")]
    Pointer { field: String, pointer: String },
}

/// `Ok` when `pointer` is a JSON pointer (empty, or starting with `/`); else [`ConfigError::Pointer`]
/// naming `field`.
pub(crate) fn check_pointer(field: String, pointer: &str) -> Result<(), ConfigError> {
    if pointer.is_empty() || pointer.starts_with('/') {
        Ok(())
    } else {
        Err(ConfigError::Pointer {
            field,
            pointer: pointer.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Importer;

    #[test]
    fn config_errors_name_what_is_wrong() {
        assert!(matches!(
            Importer::new("", Vec::<String>::new(), ImportConfig::default()),
            Err(ConfigError::NoWriteTools)
        ));
        let mut bad = ImportConfig::default();
        bad.classify.failed_patterns = vec!["(".into()];
        let e = Importer::new("", ["t".to_owned()], bad).expect_err("bad pattern");
        assert!(e
            .to_string()
            .starts_with("classify.failed_patterns: invalid pattern \"(\""));
        let mut bad = ImportConfig::default();
        bad.classify.failed_fields = vec![FieldRule {
            pointer: "error".into(),
            equals: None,
        }];
        let e = Importer::new("", ["t".to_owned()], bad).expect_err("bad pointer");
        assert_eq!(
            e.to_string(),
            "classify.failed_fields[0]: \"error\" is not a JSON pointer (empty, or starting with '/')"
        );
    }
}
