//! Classification of a write call's result (docs/import.md "Import agent transcripts"), first match wins (seed
//! 002: a failure is reported only when evidence establishes it, a lost reply is unknown):
//! 1. no result at all → `outcome_unknown` (the reply was lost);
//! 2. a timeout pattern matches → `outcome_unknown` with reason `execution_timeout`;
//! 3. a transport pattern matches (connection reset or broken, 502/503) → `outcome_unknown`;
//! 4. a failure pattern matches the text, or a failure field rule matches the result's JSON → `failed`;
//! 5. otherwise → `completed`.

use ledger::command::Settlement;
use ledger::wire::Reason;
use regex::Regex;
use serde_json::Value;

use crate::config::{ClassifyConfig, ConfigError, FieldRule};

/// What a write call's result establishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classification {
    pub settlement: Settlement,
    /// `Some(ExecutionTimeout)` only with `OutcomeUnknown`.
    pub reason: Option<Reason>,
}

/// The compiled patterns and field rules of a [`ClassifyConfig`].
#[derive(Debug, Clone)]
pub(crate) struct Classifier {
    timeout: Vec<Regex>,
    unknown: Vec<Regex>,
    failed: Vec<Regex>,
    failed_fields: Vec<FieldRule>,
}

fn compile(list: &'static str, patterns: &[String]) -> Result<Vec<Regex>, ConfigError> {
    patterns
        .iter()
        .map(|p| {
            Regex::new(p).map_err(|source| ConfigError::Pattern {
                list,
                pattern: p.clone(),
                source,
            })
        })
        .collect()
}

impl Classifier {
    /// Compiles the patterns (timeout, unknown, failed, in that order). Error: the first pattern that is
    /// not a regular expression, naming its list (`classify.failed_patterns`, ...). The field rules'
    /// pointers are checked by the caller (`Importer::new`).
    pub(crate) fn compile(c: ClassifyConfig) -> Result<Self, ConfigError> {
        Ok(Classifier {
            timeout: compile("classify.timeout_patterns", &c.timeout_patterns)?,
            unknown: compile("classify.unknown_patterns", &c.unknown_patterns)?,
            failed: compile("classify.failed_patterns", &c.failed_patterns)?,
            failed_fields: c.failed_fields,
        })
    }

    /// What a result establishes (see the module docs); `None` is a call whose result never came.
    pub(crate) fn classify(&self, result: Option<&str>) -> Classification {
        let unknown = |reason| Classification {
            settlement: Settlement::OutcomeUnknown,
            reason,
        };
        let Some(text) = result else {
            return unknown(None);
        };
        if self.timeout.iter().any(|r| r.is_match(text)) {
            return unknown(Some(Reason::ExecutionTimeout));
        }
        if self.unknown.iter().any(|r| r.is_match(text)) {
            return unknown(None);
        }
        let failed_text = self.failed.iter().any(|r| r.is_match(text));
        let failed_field = || {
            serde_json::from_str::<Value>(text).is_ok_and(|json| {
                self.failed_fields.iter().any(|rule| {
                    match (json.pointer(&rule.pointer), &rule.equals) {
                        (None, _) => false,
                        (Some(v), Some(expected)) => v == expected,
                        (Some(v), None) => {
                            !matches!(v, Value::Null | Value::Bool(false)) && v.as_str() != Some("")
                        }
                    }
                })
            })
        };
        let settlement = if failed_text || failed_field() {
            Settlement::Failed
        } else {
            Settlement::Completed
        };
        Classification {
            settlement,
            reason: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::importer;

    #[test]
    fn an_error_result_is_failed_by_text_or_by_json_field() {
        let i = importer();
        let failed = Classification {
            settlement: Settlement::Failed,
            reason: None,
        };
        assert_eq!(i.classify(Some("Error: permission denied")), failed);
        assert_eq!(i.classify(Some("error 422: invalid label")), failed);
        assert_eq!(i.classify(Some(r#"{"error": {"code": 403}}"#)), failed);
        assert_eq!(i.classify(Some(r#"{"status": "failed", "id": 3}"#)), failed);
        assert_eq!(i.classify(Some(r#"{"isError": true}"#)), failed);
        let completed = Classification {
            settlement: Settlement::Completed,
            reason: None,
        };
        assert_eq!(i.classify(Some(r#"{"error": null, "id": 3}"#)), completed);
        assert_eq!(i.classify(Some("Created issue; no Error")), completed);
        assert_eq!(i.classify(Some("")), completed);
    }

    #[test]
    fn a_timeout_result_is_unknown_with_execution_timeout() {
        let i = importer();
        let timeout = Classification {
            settlement: Settlement::OutcomeUnknown,
            reason: Some(Reason::ExecutionTimeout),
        };
        assert_eq!(i.classify(Some("Error: request timed out")), timeout);
        assert_eq!(i.classify(Some("Timeout after 30s")), timeout);
        assert_eq!(
            i.classify(Some("MCP error -32001: Request timed out")),
            timeout
        );
        assert_eq!(i.classify(Some("504 Gateway Timeout")), timeout);
        let unknown = Classification {
            settlement: Settlement::OutcomeUnknown,
            reason: None,
        };
        assert_eq!(i.classify(Some("Error: connection reset by peer")), unknown);
        assert_eq!(i.classify(Some("HTTP 502 Bad Gateway")), unknown);
        assert_eq!(i.classify(Some("503 Service Unavailable")), unknown);
        // A normal result that only mentions a timeout is a normal result.
        assert_eq!(
            i.classify(Some("Created alert rule with timeout 30s")),
            Classification {
                settlement: Settlement::Completed,
                reason: None
            }
        );
    }
}
