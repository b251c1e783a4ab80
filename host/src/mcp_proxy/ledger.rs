//! The proxy's writes to the ledger through the host API (docs/api.md "Host write API", docs/mcp-proxy.md
//! "Failure behaviour"): approve + intent of protected calls in one `POST /api/host/batch` before they
//! are forwarded, then settle, cancellation, reconciliation and host metadata in the background, each
//! retried by [`HostClient::write`] and logged with its operation id when it still cannot be written (the
//! entry then stays in flight, which the ledger publishes as `outcome_unknown`: the truth).

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use url::Url;

use crate::host_client::{Expected, HostClient, Retry, WriteError};

/// Approve + intent: about 3 s of retries in all (the call waits for it), each try given 5 s.
const RECORD: Retry = Retry {
    budget: Duration::from_secs(3),
    first_delay: Duration::from_millis(100),
    max_delay: Duration::from_secs(1),
    request_timeout: Duration::from_secs(5),
};

/// One protected call's entry: its operation id (`mutation_id`) and attempt id, both the proxy's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub mutation_id: String,
    pub attempt_id: String,
}

/// A protected call to approve and start: its operation, logical turn and recorded tool name
/// (`mcp__<server name>__<tool>`).
#[derive(Debug, Clone)]
pub struct NewCall {
    pub op: Operation,
    pub turn: String,
    pub tool: String,
    /// The client's W3C `traceparent` of the call (`params._meta.traceparent`, well formed), passed
    /// on the approve so the call's OpenTelemetry span is a child of the client's span.
    pub traceparent: Option<String>,
}

/// Writes one session's entries.
#[derive(Debug, Clone)]
pub struct Recorder {
    client: HostClient,
    session: String,
    /// The deadline each intent carries and each extension renews, in seconds (`--deadline-secs`).
    deadline_secs: u64,
}

/// An extension of a call's deadline: tried for about 5 s (the next one follows a third of the deadline
/// later anyway).
const EXTEND: Retry = Retry {
    budget: Duration::from_secs(5),
    first_delay: Duration::from_millis(200),
    max_delay: Duration::from_secs(2),
    request_timeout: Duration::from_secs(5),
};

/// A settle's status (docs/api.md: `completed`, `failed`, `outcome_unknown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    Completed,
    Failed,
    Unknown,
    /// `outcome_unknown` with reason `execution_timeout`.
    TimedOut,
}

impl Settle {
    fn status(self) -> &'static str {
        match self {
            Settle::Completed => "completed",
            Settle::Failed => "failed",
            Settle::Unknown | Settle::TimedOut => "outcome_unknown",
        }
    }
    fn reason(self) -> Option<&'static str> {
        (self == Settle::TimedOut).then_some("execution_timeout")
    }
}

impl Recorder {
    pub fn new(client: HostClient, session: String, deadline_secs: u64) -> Self {
        Recorder {
            client,
            session,
            deadline_secs,
        }
    }

    /// How often a waiting call's deadline is extended: a third of it.
    pub fn extend_every(&self) -> Duration {
        Duration::from_secs(self.deadline_secs) / 3
    }

    /// Extends `op`'s deadline to now + `--deadline-secs` (`POST …/deadline`, docs/api.md "Deadlines")
    /// while its call waits for an answer. `false` when it could not be written (logged at debug: the
    /// next extension follows, and a refusal means the call is settled already).
    pub async fn extend(&self, op: &Operation) -> bool {
        let body = json!({"attempt_id": op.attempt_id, "deadline_secs": self.deadline_secs});
        let result = match self.url(&self.entry_path(op, "deadline")) {
            Ok(url) => {
                self.client
                    .write(Method::POST, url, &body, None, &EXTEND)
                    .await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(_) => true,
            Err(e) => {
                tracing::debug!(session_key = %self.session, operation_id = %op.mutation_id, error = %e, "deadline not extended");
                false
            }
        }
    }

    pub fn session(&self) -> &str {
        &self.session
    }

    pub fn client(&self) -> &HostClient {
        &self.client
    }

    /// Approves and records the intent of `calls` in one batch (two operations each, in order). Answers
    /// one result per call: `Ok` when its intent is recorded (a 409 whose `current` is
    /// `execution_started` with this attempt counts: a retried batch whose first try landed), else the
    /// ledger's refusal as a sentence. Error: the batch as a whole not written (the ledger unreachable,
    /// or refusing it: 401, 503 after the retries, …).
    pub async fn record(&self, calls: &[NewCall]) -> Result<Vec<Result<(), String>>, WriteError> {
        let operations = record_operations(&self.session, self.deadline_secs, calls);
        let url = self.url(&["api", "host", "batch"])?;
        let answer = self
            .client
            .write(
                Method::POST,
                url,
                &json!({"operations": operations}),
                None,
                &RECORD,
            )
            .await?;
        let results = answer
            .get("results")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(calls
            .iter()
            .enumerate()
            .map(|(i, c)| batch_pair(results.get(2 * i), results.get(2 * i + 1), &c.op))
            .collect())
    }

    /// Settles `op` (`POST …/settlement`). Errors are logged with the operation id.
    pub async fn settle(&self, op: &Operation, settle: Settle) -> bool {
        let mut body = json!({"attempt_id": op.attempt_id, "status": settle.status()});
        if let Some(r) = settle.reason() {
            body["reason"] = json!(r);
        }
        let expected = Expected {
            ledger_status: settle.status(),
            intent_recorded: None,
            attempt_id: op.attempt_id.clone(),
            reason: settle.reason(),
        };
        self.background(op, "settlement", Method::POST, &body, Some(&expected))
            .await
    }

    /// Cancels `op` before the router (`POST …/cancellation`, published `not_executed`).
    pub async fn cancel(&self, op: &Operation) -> bool {
        let expected = Expected {
            ledger_status: "approved",
            intent_recorded: Some(true),
            attempt_id: op.attempt_id.clone(),
            reason: None,
        };
        let body = json!({"attempt_id": op.attempt_id});
        self.background(op, "cancellation", Method::POST, &body, Some(&expected))
            .await
    }

    /// Undoes a record the proxy could not confirm (the batch's answer lost): the call was not
    /// forwarded, so it is cancelled before the router. Nothing recorded (404) or no intent recorded
    /// (409 `not_in_flight`) is fine too: neither is published as in flight.
    pub async fn withdraw(&self, op: &Operation) {
        let expected = Expected {
            ledger_status: "approved",
            intent_recorded: Some(true),
            attempt_id: op.attempt_id.clone(),
            reason: None,
        };
        let Ok(url) = self.url(&self.entry_path(op, "cancellation")) else {
            return;
        };
        let body = json!({"attempt_id": op.attempt_id});
        match self
            .client
            .write(
                Method::POST,
                url,
                &body,
                Some(&expected),
                &Retry::BACKGROUND,
            )
            .await
        {
            Ok(_) => {}
            Err(WriteError::Refused { status: 404, .. }) => {}
            Err(WriteError::Refused {
                status: 409, code, ..
            }) if code == "not_in_flight" => {}
            Err(e) => tracing::error!(
                session_key = %self.session, operation_id = %op.mutation_id,
                "the call was not forwarded, but its cancellation could not be written: {e}; \
                 the ledger may show it in flight (outcome_unknown) although the tool was NOT called"
            ),
        }
    }

    /// Reconciles `op` as completed on the evidence of its late answer (`POST …/reconciliation`,
    /// `{"source": "mcp-late-answer", "reference", "observed_at"}`).
    pub async fn reconcile_completed(
        &self,
        op: &Operation,
        reference: &str,
        observed_at: &str,
    ) -> bool {
        let body = json!({"attempt_id": op.attempt_id, "completed": true,
            "evidence": {"source": "mcp-late-answer", "reference": reference, "observed_at": observed_at}});
        let expected = Expected {
            ledger_status: "completed",
            intent_recorded: None,
            attempt_id: op.attempt_id.clone(),
            reason: None,
        };
        self.background(op, "reconciliation", Method::POST, &body, Some(&expected))
            .await
    }

    /// Settles `op` completed and attaches its host metadata (`{"id", "url", "title"}`, `null` for a field
    /// not found) in one batch: one round trip, as a plain settle. Errors are logged with the operation id.
    pub async fn complete_with_metadata(
        &self,
        op: &Operation,
        fields: &[Option<String>; 3],
    ) -> bool {
        let [id, url, title] = fields;
        let body = json!({"operations": [
            {"op": "settle", "session_key": self.session, "mutation_id": op.mutation_id,
             "attempt_id": op.attempt_id, "status": "completed"},
            {"op": "metadata", "session_key": self.session, "mutation_id": op.mutation_id,
             "id": id, "url": url, "title": title},
        ]});
        let expected = Expected {
            ledger_status: "completed",
            intent_recorded: None,
            attempt_id: op.attempt_id.clone(),
            reason: None,
        };
        let answer = match self.url(&["api", "host", "batch"]) {
            Ok(url) => {
                self.client
                    .write(Method::POST, url, &body, None, &Retry::BACKGROUND)
                    .await
            }
            Err(e) => Err(e),
        };
        let results = match answer {
            Ok(v) => v
                .get("results")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            Err(e) => {
                self.log_failure(op, "settlement and metadata", &e.to_string());
                return false;
            }
        };
        let mut landed = true;
        for (what, r) in ["settlement", "metadata"]
            .into_iter()
            .zip([results.first(), results.get(1)])
        {
            let status = r.and_then(|r| r.get("status")).and_then(Value::as_u64);
            let current = r
                .and_then(|r| r.get("error"))
                .and_then(|e| e.get("current"));
            let done = status == Some(200)
                || (what == "settlement"
                    && status == Some(409)
                    && current.is_some_and(|c| crate::host_client::counts_as_done(c, &expected)));
            if !done {
                landed = false;
                let e = r.and_then(|r| r.get("error"));
                let text = |k: &str| {
                    e.and_then(|e| e.get(k))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                };
                self.log_failure(
                    op,
                    what,
                    &format!(
                        "the ledger answered {} {}: {}",
                        status.unwrap_or_default(),
                        text("code"),
                        text("message")
                    ),
                );
            }
        }
        landed
    }

    /// Mints a viewer link of the session (`POST /api/host/sessions/{key}/viewer-links`, default
    /// lifetime) and answers its absolute URL; `Ok(None)` while the session does not exist yet (404: a
    /// session begins with its first recorded call).
    pub async fn viewer_link(&self) -> Result<Option<Url>, WriteError> {
        let url = self.url(&["api", "host", "sessions", &self.session, "viewer-links"])?;
        match self
            .client
            .write(Method::POST, url, &Value::Null, None, &RECORD)
            .await
        {
            Ok(v) => {
                let path = v.get("url").and_then(Value::as_str).unwrap_or_default();
                let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
                Ok(Some(self.url(&segments)?))
            }
            Err(WriteError::Refused { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `…/sessions/{key}/mutations/{mutation_id}/{last}` as path segments.
    fn entry_path<'a>(&'a self, op: &'a Operation, last: &'a str) -> [&'a str; 7] {
        [
            "api",
            "host",
            "sessions",
            &self.session,
            "mutations",
            &op.mutation_id,
            last,
        ]
    }

    fn url(&self, segments: &[&str]) -> Result<Url, WriteError> {
        self.client
            .url(segments)
            .map_err(|e| WriteError::Unreachable {
                why: format!("the server URL cannot take a path: {e}"),
                maybe_landed: false,
            })
    }

    /// One background write with the long retry budget; logged on failure. Answers whether it landed.
    async fn background(
        &self,
        op: &Operation,
        what: &'static str,
        method: Method,
        body: &Value,
        expected: Option<&Expected>,
    ) -> bool {
        let result = match self.url(&self.entry_path(op, what)) {
            Ok(url) => {
                self.client
                    .write(method, url, body, expected, &Retry::BACKGROUND)
                    .await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(_) => {
                tracing::debug!(session_key = %self.session, operation_id = %op.mutation_id, "{what} written");
                true
            }
            Err(e) => {
                self.log_failure(op, what, &e.to_string());
                false
            }
        }
    }

    fn log_failure(&self, op: &Operation, what: &str, why: &str) {
        tracing::error!(
            session_key = %self.session, operation_id = %op.mutation_id,
            "the {what} of operation {} could not be written: {why}; the ledger keeps its earlier \
             state (an entry in flight is published outcome_unknown)",
            op.mutation_id
        );
    }
}

/// The batch operations of [`Recorder::record`]: for each call its approve (with the client's
/// `traceparent` when the call carried one) and its intent, in order.
fn record_operations(session: &str, deadline_secs: u64, calls: &[NewCall]) -> Vec<Value> {
    let mut operations = Vec::with_capacity(calls.len() * 2);
    for c in calls {
        let mut approve = json!({"op": "approve", "session_key": session,
            "logical_turn_id": c.turn, "mutation_id": c.op.mutation_id, "tool": c.tool});
        if let Some(t) = &c.traceparent {
            approve["traceparent"] = json!(t);
        }
        operations.push(approve);
        operations.push(json!({"op": "intent", "session_key": session,
            "mutation_id": c.op.mutation_id, "attempt_id": c.op.attempt_id,
            "deadline_secs": deadline_secs}));
    }
    operations
}

/// One call's approve and intent results of a batch: `Ok` when the intent is recorded with this attempt.
fn batch_pair(
    approve: Option<&Value>,
    intent: Option<&Value>,
    op: &Operation,
) -> Result<(), String> {
    let status = |r: Option<&Value>| r.and_then(|r| r.get("status")).and_then(Value::as_u64);
    if status(intent) == Some(200) {
        return Ok(());
    }
    let expected = Expected {
        ledger_status: "execution_started",
        intent_recorded: Some(true),
        attempt_id: op.attempt_id.clone(),
        reason: None,
    };
    let current = intent
        .and_then(|r| r.get("error"))
        .and_then(|e| e.get("current"));
    if status(intent) == Some(409)
        && current.is_some_and(|c| crate::host_client::counts_as_done(c, &expected))
    {
        return Ok(());
    }
    // The approve's refusal explains the intent's (e.g. a tool name the ledger refuses).
    let refusal = [approve, intent]
        .into_iter()
        .flatten()
        .find(|r| !matches!(status(Some(r)), Some(200 | 201)))
        .or(intent);
    Err(match refusal {
        Some(r) => {
            let e = r.get("error");
            let text = |k: &str| {
                e.and_then(|e| e.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            format!(
                "the ledger answered {} {}: {}",
                status(Some(r)).unwrap_or_default(),
                text("code"),
                text("message")
            )
        }
        None => "the ledger's batch answer has no result for this call".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op() -> Operation {
        Operation {
            mutation_id: "op-1".into(),
            attempt_id: "op-1-a1".into(),
        }
    }

    /// A call's `traceparent` (the client's `params._meta.traceparent`) is on its approve, and only there.
    #[test]
    fn the_approve_carries_the_calls_traceparent() {
        const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let call = |tp: Option<&str>| NewCall {
            op: op(),
            turn: "t".into(),
            tool: "mcp__s__w".into(),
            traceparent: tp.map(str::to_owned),
        };
        let ops = record_operations("s", 60, &[call(Some(TP)), call(None)]);
        assert_eq!(
            ops,
            vec![
                json!({"op": "approve", "session_key": "s", "logical_turn_id": "t",
                       "mutation_id": "op-1", "tool": "mcp__s__w", "traceparent": TP}),
                json!({"op": "intent", "session_key": "s", "mutation_id": "op-1",
                       "attempt_id": "op-1-a1", "deadline_secs": 60}),
                json!({"op": "approve", "session_key": "s", "logical_turn_id": "t",
                       "mutation_id": "op-1", "tool": "mcp__s__w"}),
                json!({"op": "intent", "session_key": "s", "mutation_id": "op-1",
                       "attempt_id": "op-1-a1", "deadline_secs": 60}),
            ]
        );
    }

    #[test]
    fn a_batch_pair_is_recorded_when_the_intent_is() {
        let ok = json!({"status": 200, "entry": {"ledger_status": "execution_started", "attempt_id": "op-1-a1"}});
        assert_eq!(
            batch_pair(Some(&json!({"status": 201})), Some(&ok), &op()),
            Ok(())
        );
        // A retried batch whose first try landed: both 409, the intent's current shows it.
        let again = json!({"status": 409, "error": {"code": "already_recorded", "message": "m",
            "current": {"ledger_status": "execution_started", "intent_recorded": true, "attempt_id": "op-1-a1"}}});
        assert_eq!(batch_pair(Some(&again), Some(&again), &op()), Ok(()));
        // Another attempt's intent is not ours.
        let other = json!({"status": 409, "error": {"code": "already_recorded", "message": "recorded",
            "current": {"ledger_status": "execution_started", "intent_recorded": true, "attempt_id": "x"}}});
        assert_eq!(
            batch_pair(Some(&json!({"status": 201})), Some(&other), &op()),
            Err("the ledger answered 409 already_recorded: recorded".into())
        );
        // The approve's refusal is the one named.
        let bad_tool = json!({"status": 422, "error": {"code": "invalid_field", "message": "tool is over 256 bytes", "field": "tool"}});
        let missing = json!({"status": 404, "error": {"code": "mutation_not_found", "message": "no such mutation"}});
        assert_eq!(
            batch_pair(Some(&bad_tool), Some(&missing), &op()),
            Err("the ledger answered 422 invalid_field: tool is over 256 bytes".into())
        );
        assert_eq!(
            batch_pair(None, None, &op()),
            Err("the ledger's batch answer has no result for this call".into())
        );
    }
}
