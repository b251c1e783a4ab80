//! The client side of the host write API (docs/api.md "Host write API (`/api/host`, `Authorization:
//! Bearer <host token>`)"), shared by `outcomes demo`, `outcomes import` and `outcomes mcp-proxy`: the server's base URL, the host
//! token read as `outcomes serve` reads it ([`crate::token::read_host_token`]), bearer auth on every request,
//! and URLs built segment by segment with [`url::Url::path_segments_mut`] (each segment percent-encoded by
//! `url`, never by hand).

use std::path::{Path, PathBuf};

use url::Url;

/// How `demo`, `import` and `mcp-proxy` reach the server as the host: its URL and the host token (given, or read from
/// `<data dir>/host-token` like `serve` does: [`crate::token::read_host_token`]).
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// The running server.
    #[arg(long, env = "OUTCOMES_SERVER", default_value = "http://127.0.0.1:3000")]
    pub server: url::Url,
    /// Host token. Default: read from `<data dir>/host-token`.
    #[arg(long, env = "OUTCOMES_HOST_TOKEN", hide_env_values = true)]
    pub host_token: Option<String>,
    /// The server's data directory, where the host token is read when none is given.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
}

/// A client of one running server's host API. Cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct HostClient {
    http: reqwest::Client,
    base: Url,
    token: String,
}

impl HostClient {
    /// A client of the server at `base`, with the host token `given` when it is not blank, else the one in
    /// `<data dir>/host-token` (both trimmed, as `outcomes serve` reads them). Error, as a sentence: no
    /// token given and the file unreadable or blank, `no host token given and none readable in <data
    /// dir>: <why>`.
    pub fn new(base: Url, given: Option<&str>, data_dir: &Path) -> Result<Self, String> {
        let (token, _) = crate::token::read_host_token(given, data_dir).map_err(|e| {
            format!(
                "no host token given and none readable in {}: {e}",
                data_dir.display()
            )
        })?;
        Ok(HostClient {
            http: reqwest::Client::new(),
            base,
            token,
        })
    }

    /// The URL of the path `segments` on the server, resolved as the relative path `a/b/c` is against the
    /// base by [`Url::join`] (the base's last segment replaced, so `http://h/` and `http://h/x` give
    /// `http://h/a/b/c` and `http://h/x/` gives `http://h/x/a/b/c`; the base's query and fragment dropped).
    /// Each segment is percent-encoded as a path segment (a `/` in it included); `url` skips a segment
    /// that is exactly `.` or `..`. Error: a base that cannot be a base (e.g. `mailto:`), as `Url::join`
    /// reports it.
    pub fn url(&self, segments: &[&str]) -> Result<Url, url::ParseError> {
        let mut url = self.base.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.path_segments_mut()
            .map_err(|()| url::ParseError::RelativeUrlWithCannotBeABaseBase)?
            .pop()
            .extend(segments);
        Ok(url)
    }

    /// A request of `method` to `url` carrying `Authorization: Bearer <host token>`.
    pub fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        self.http.request(method, url).bearer_auth(&self.token)
    }
}

/// A host API write's retry budget (docs/mcp-proxy.md "Failure behaviour"): a write that answers 503,
/// 502, 504 or 429, or that cannot reach the server (connection refused or reset, no answer within
/// `request_timeout`), is sent again after `first_delay`, doubling up to `max_delay` (or the server's
/// `Retry-After` in seconds, when it sends one, within the same cap), until `budget` has passed since the
/// first try. Safe because the ledger refuses a redelivery (docs/api.md "Host write API"): see
/// [`counts_as_done`].
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub budget: std::time::Duration,
    pub first_delay: std::time::Duration,
    pub max_delay: std::time::Duration,
    pub request_timeout: std::time::Duration,
}

impl Retry {
    /// For settle, cancellation, reconciliation and metadata: about 30 s in all, each try given 10 s.
    pub const BACKGROUND: Retry = Retry {
        budget: std::time::Duration::from_secs(30),
        first_delay: std::time::Duration::from_millis(100),
        max_delay: std::time::Duration::from_secs(5),
        request_timeout: std::time::Duration::from_secs(10),
    };
}

/// What a write is meant to leave the entry as, to tell a 409 that only says "already done" from a real
/// refusal: the ledger status, whether intent is recorded (when it matters), the attempt id, and the
/// settlement reason (`None`: no reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub ledger_status: &'static str,
    pub intent_recorded: Option<bool>,
    pub attempt_id: String,
    pub reason: Option<&'static str>,
}

/// Whether a 409's `current` entry state (docs/api.md: `{"ledger_status", "intent_recorded",
/// "attempt_id", "reason"?, …}`) already shows the change `expected` describes: same `ledger_status`,
/// `attempt_id` and `reason` (and `intent_recorded`, when expected says), whatever the 409's code. A
/// retried settle whose first try landed answers `not_in_flight` with such a `current`; a retried
/// reconcile, `already_settled`.
pub fn counts_as_done(current: &serde_json::Value, expected: &Expected) -> bool {
    let s = |k: &str| current.get(k).and_then(serde_json::Value::as_str);
    s("ledger_status") == Some(expected.ledger_status)
        && s("attempt_id") == Some(expected.attempt_id.as_str())
        && s("reason") == expected.reason
        && expected.intent_recorded.is_none_or(|want| {
            current
                .get("intent_recorded")
                .and_then(serde_json::Value::as_bool)
                == Some(want)
        })
}

/// Why a host API write did not land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// The server answered and refused it (any status but 2xx, or 503/429 once the budget is spent:
    /// the server changed nothing): the HTTP status, the error body's `code` and `message` (empty when
    /// it had none).
    Refused {
        status: u16,
        code: String,
        message: String,
    },
    /// The server could not be reached, or did not answer, within the budget. `maybe_landed`: some try
    /// may have reached it (no answer in time, a connection lost after sending, a gateway's 502/504);
    /// false when every try failed to connect at all, so nothing was written.
    Unreachable { why: String, maybe_landed: bool },
}

impl WriteError {
    /// Whether the write may have been applied although no success came back.
    pub fn maybe_landed(&self) -> bool {
        matches!(
            self,
            WriteError::Unreachable {
                maybe_landed: true,
                ..
            }
        )
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Refused {
                status,
                code,
                message,
            } => {
                write!(f, "the ledger answered {status} {code}: {message}")
            }
            WriteError::Unreachable { why, .. } => {
                write!(f, "the ledger could not be reached: {why}")
            }
        }
    }
}

impl HostClient {
    /// Sends `body` as JSON with `method` to `url`, retried as `retry` says; answers the success body
    /// (`null` when empty or not JSON). A 409 whose `error.current` [`counts_as_done`] for `expected`
    /// answers `Ok(current)`. Errors: [`WriteError`].
    pub async fn write(
        &self,
        method: reqwest::Method,
        url: Url,
        body: &serde_json::Value,
        expected: Option<&Expected>,
        retry: &Retry,
    ) -> Result<serde_json::Value, WriteError> {
        let started = std::time::Instant::now();
        let mut delay = retry.first_delay;
        let mut maybe_landed = false;
        loop {
            let sent = self
                .request(method.clone(), url.clone())
                .timeout(retry.request_timeout)
                .json(body)
                .send()
                .await;
            let (failure, wait) = match sent {
                Ok(resp) => {
                    let status = resp.status();
                    let retry_after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(std::time::Duration::from_secs);
                    let bytes = match resp.bytes().await {
                        Ok(b) => b,
                        Err(e) => {
                            // The answer was cut off: the write may have been applied.
                            maybe_landed = true;
                            let why = error_chain(&e);
                            let failure = WriteError::Unreachable { why, maybe_landed };
                            if started.elapsed() + delay > retry.budget {
                                return Err(failure);
                            }
                            tokio::time::sleep(delay).await;
                            delay = (delay * 2).min(retry.max_delay);
                            continue;
                        }
                    };
                    let json: serde_json::Value =
                        serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
                    if status.is_success() {
                        return Ok(json);
                    }
                    let error = json.get("error");
                    let text = |k: &str| {
                        error
                            .and_then(|e| e.get(k))
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    if status == reqwest::StatusCode::CONFLICT {
                        if let (Some(current), Some(expected)) =
                            (error.and_then(|e| e.get("current")), expected)
                        {
                            if counts_as_done(current, expected) {
                                return Ok(current.clone());
                            }
                        }
                    }
                    let refused = WriteError::Refused {
                        status: status.as_u16(),
                        code: text("code"),
                        message: text("message"),
                    };
                    match status.as_u16() {
                        429 | 503 => (refused, retry_after),
                        // A gateway between us and the server: the server may have applied it.
                        502 | 504 => {
                            maybe_landed = true;
                            let why = format!("a gateway answered {status}");
                            (WriteError::Unreachable { why, maybe_landed }, retry_after)
                        }
                        _ => return Err(refused),
                    }
                }
                Err(e) => {
                    // A connection that could not be made carried nothing; anything else may have.
                    maybe_landed |= !e.is_connect();
                    let why = error_chain(&e);
                    (WriteError::Unreachable { why, maybe_landed }, None)
                }
            };
            let wait = wait.unwrap_or(delay).min(retry.max_delay);
            if started.elapsed() + wait > retry.budget {
                return Err(failure);
            }
            tokio::time::sleep(wait).await;
            delay = (delay * 2).min(retry.max_delay);
        }
    }
}

/// An error and its sources, as one line (`error sending request: connection refused`).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(base: &str) -> HostClient {
        HostClient {
            http: reqwest::Client::new(),
            base: Url::parse(base).expect("url"),
            token: "t".into(),
        }
    }

    #[test]
    fn urls_resolve_as_a_relative_join_would_with_each_segment_encoded() {
        for base in [
            "http://127.0.0.1:3000",
            "http://127.0.0.1:3000/",
            "http://127.0.0.1:3000/x",
            "http://127.0.0.1:3000/x/?q=1#f",
        ] {
            let c = client(base);
            let joined = c.base.join("api/host/batch").expect("join");
            assert_eq!(
                c.url(&["api", "host", "batch"]).expect("url"),
                joined,
                "{base}"
            );
        }
        let c = client("http://h/");
        assert_eq!(
            c.url(&["sessions", "a b/c?d#e%f"]).expect("url").as_str(),
            "http://h/sessions/a%20b%2Fc%3Fd%23e%25f"
        );
        // As `Url::join` refuses it.
        let cannot = Url::parse("mailto:x@example.com").expect("url");
        assert_eq!(
            cannot.join("a"),
            Err(url::ParseError::RelativeUrlWithCannotBeABaseBase)
        );
        assert_eq!(
            client(cannot.as_str()).url(&["a"]),
            Err(url::ParseError::RelativeUrlWithCannotBeABaseBase)
        );
    }

    #[test]
    fn a_409_counts_as_done_only_when_current_shows_the_requested_change() {
        use serde_json::json;
        let settled = Expected {
            ledger_status: "completed",
            intent_recorded: None,
            attempt_id: "op-1-a1".into(),
            reason: None,
        };
        let current = json!({"session_key":"s","logical_turn_id":"t","mutation_id":"op-1",
            "ledger_status":"completed","intent_recorded":true,"attempt_id":"op-1-a1","revision":2});
        assert!(counts_as_done(&current, &settled));
        // Another status, another attempt, a reason the write did not ask for: a real refusal.
        let mut failed = current.clone();
        failed["ledger_status"] = json!("failed");
        assert!(!counts_as_done(&failed, &settled));
        let mut other = current.clone();
        other["attempt_id"] = json!("op-1-a2");
        assert!(!counts_as_done(&other, &settled));
        let timeout = Expected {
            ledger_status: "outcome_unknown",
            intent_recorded: None,
            attempt_id: "op-1-a1".into(),
            reason: Some("execution_timeout"),
        };
        let mut unknown = current.clone();
        unknown["ledger_status"] = json!("outcome_unknown");
        assert!(
            !counts_as_done(&unknown, &timeout),
            "no reason is not execution_timeout"
        );
        unknown["reason"] = json!("execution_timeout");
        assert!(counts_as_done(&unknown, &timeout));
        assert!(!counts_as_done(
            &unknown,
            &Expected {
                reason: None,
                ..timeout.clone()
            }
        ));
        // A cancellation leaves `approved` with intent recorded; `approved` without intent is not it.
        let cancelled = Expected {
            ledger_status: "approved",
            intent_recorded: Some(true),
            attempt_id: "op-1-a1".into(),
            reason: None,
        };
        let mut approved = current.clone();
        approved["ledger_status"] = json!("approved");
        assert!(counts_as_done(&approved, &cancelled));
        approved["intent_recorded"] = json!(false);
        assert!(!counts_as_done(&approved, &cancelled));
        assert!(!counts_as_done(&json!(null), &settled));
    }
}
