//! `outcomes demo`: plays agent sessions through the host write API of a running server, with real pauses
//! between steps, so the dashboard can be watched filling in live. Sessions played:
//! - a dashboard created and completed, its server-confirmed id/url/title attached a moment later, then a
//!   write that fails;
//! - seed 002's broker exercise: issue #419 is created at the provider, the reply is lost: the outcome is
//!   unknown, with the operation id to quote; another write is cancelled by its pre-dispatch deadline;
//! - a write still in flight, and one that times out into an unknown outcome.

use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};

use crate::host_client::{HostArgs, HostClient};

/// `outcomes demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// The server and the host token.
    #[command(flatten)]
    pub host: HostArgs,
    /// Multiplies every pause between steps (0 plays at once).
    #[arg(long, env = "OUTCOMES_DEMO_PACE", default_value_t = 1.0)]
    pub pace: f64,
}

/// The operation id of seed 002's broker exercise.
pub const BROKER_OPERATION_ID: &str =
    "b4e2e169b2264541026a9e029771066a34e26a40fed7bd68f0b4f65a01c0bb2b";

struct Host {
    client: HostClient,
    pace: f64,
}

impl Host {
    /// Sends `body` to the host API path `segments`; an error names the path (`api/host/...`).
    async fn call(
        &self,
        method: reqwest::Method,
        segments: &[&str],
        body: Value,
    ) -> Result<Value, String> {
        let path = segments.join("/");
        let url = self.client.url(segments).map_err(|e| e.to_string())?;
        let response = self
            .client
            .request(method, url)
            .json(&body)
            .send()
            .await
            .map_err(|e| format!("{path}: {e}"))?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(format!("{path}: {status} {value}"));
        }
        Ok(value)
    }

    async fn approve(
        &self,
        session: &str,
        turn: &str,
        mutation: &str,
        tool: &str,
    ) -> Result<(), String> {
        self.call(
            reqwest::Method::POST,
            &["api", "host", "sessions", session, "mutations"],
            json!({"logical_turn_id": turn, "mutation_id": mutation, "tool": tool}),
        )
        .await
        .map(drop)
    }

    async fn step(
        &self,
        session: &str,
        mutation: &str,
        what: &str,
        body: Value,
    ) -> Result<(), String> {
        let method = if what == "metadata" {
            reqwest::Method::PUT
        } else {
            reqwest::Method::POST
        };
        self.call(
            method,
            &[
                "api",
                "host",
                "sessions",
                session,
                "mutations",
                mutation,
                what,
            ],
            body,
        )
        .await
        .map(drop)
    }

    async fn intent(&self, session: &str, mutation: &str, attempt: &str) -> Result<(), String> {
        self.step(session, mutation, "intent", json!({"attempt_id": attempt}))
            .await
    }

    async fn settle(
        &self,
        session: &str,
        mutation: &str,
        attempt: &str,
        status: &str,
    ) -> Result<(), String> {
        let body = json!({"attempt_id": attempt, "status": status});
        self.step(session, mutation, "settlement", body).await
    }

    /// The server-confirmed `id`, `url` and `title` of what the write made.
    async fn attach(&self, session: &str, mutation: &str, metadata: Value) -> Result<(), String> {
        self.step(session, mutation, "metadata", metadata).await
    }

    async fn pause(&self, seconds: f64) {
        if self.pace > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(seconds * self.pace)).await;
        }
    }

    /// The session's page on the dashboard (empty when the server URL cannot be a base).
    fn page(&self, session: &str) -> String {
        self.client
            .url(&["sessions", session])
            .map(|u| u.to_string())
            .unwrap_or_default()
    }
}

/// The keys of the three sessions, new on each run: the Unix time in seconds is their suffix.
struct Sessions {
    dashboards: String,
    broker: String,
    in_flight: String,
}

impl Sessions {
    fn new() -> Self {
        let suffix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Sessions {
            dashboards: format!("demo-dashboards-{suffix}"),
            broker: format!("demo-broker-419-{suffix}"),
            in_flight: format!("demo-in-flight-{suffix}"),
        }
    }

    /// Prints each session's page, to open before it fills in.
    fn announce(&self, host: &Host) {
        println!("demo: dashboards session  {}", host.page(&self.dashboards));
        println!("demo: broker exercise     {}", host.page(&self.broker));
        println!("demo: in-flight writes    {}", host.page(&self.in_flight));
    }
}

/// Plays the demo sessions, one after the other, after printing the page URL of each.
pub async fn run(args: DemoArgs) -> Result<(), Box<dyn std::error::Error>> {
    let host = Host {
        client: HostClient::new(
            args.host.server.clone(),
            args.host.host_token.as_deref(),
            &args.host.data_dir,
        )?,
        pace: args.pace,
    };
    let sessions = Sessions::new();
    sessions.announce(&host);
    play_dashboards(&host, &sessions.dashboards).await?;
    play_broker_exercise(&host, &sessions.broker).await?;
    play_in_flight(&host, &sessions.in_flight).await?;
    println!("demo: done (deploy-1 stays in flight)");
    Ok(())
}

/// Session 1: a dashboard created and completed, its metadata attached a moment later; then a write that
/// fails.
async fn play_dashboards(host: &Host, session: &str) -> Result<(), String> {
    let dashboard = "dash-create-1";
    host.approve(session, "turn-1", dashboard, "mcp__dashboards__create")
        .await?;
    host.intent(session, dashboard, "att-1").await?;
    host.pause(1.5).await;
    host.settle(session, dashboard, "att-1", "completed")
        .await?;
    host.pause(1.0).await;
    host.attach(
        session,
        dashboard,
        json!({"id": "dash-7f3a", "url": "https://app.example.com/d/dash-7f3a?tab=1", "title": "Service overview"}),
    )
    .await?;

    let alert = "alert-create-1";
    host.approve(session, "turn-2", alert, "mcp__alerts__create")
        .await?;
    host.intent(session, alert, "att-1").await?;
    host.pause(1.0).await;
    host.settle(session, alert, "att-1", "failed").await
}

/// Session 2: seed 002's broker exercise. Issue #419 is created at the provider but the reply is lost:
/// the outcome is unknown, its metadata attached later; the label write after it is cancelled by its
/// pre-dispatch deadline.
async fn play_broker_exercise(host: &Host, session: &str) -> Result<(), String> {
    let issue = BROKER_OPERATION_ID;
    host.approve(session, "triage-1", issue, "mcp__codehost__create_issue")
        .await?;
    host.intent(session, issue, "publication-1").await?;
    host.pause(1.5).await;
    host.settle(session, issue, "publication-1", "outcome_unknown")
        .await?;
    host.pause(1.0).await;
    host.attach(
        session,
        issue,
        json!({"id": "419", "url": "https://codehost.example.com/acme/shop/issues/419", "title": "Refund rounds a half cent down on order-77"}),
    )
    .await?;

    let label = "label-419";
    host.approve(session, "triage-1", label, "mcp__codehost__add_label")
        .await?;
    host.intent(session, label, "label-1").await?;
    host.pause(1.0).await;
    host.step(
        session,
        label,
        "cancellation",
        json!({"attempt_id": "label-1", "reason": "pre_dispatch_deadline"}),
    )
    .await
}

/// Session 3: a write left in flight, and one that times out into an unknown outcome.
async fn play_in_flight(host: &Host, session: &str) -> Result<(), String> {
    host.approve(session, "turn-1", "deploy-1", "mcp__deploy__create")
        .await?;
    host.step(
        session,
        "deploy-1",
        "intent",
        // Seven days (the longest a host may ask for): it stays in flight while the demo is looked at.
        json!({"attempt_id": "deploy-att-1", "deadline_secs": 604_800}),
    )
    .await?;

    host.approve(session, "turn-1", "notify-1", "mcp__chat__post_message")
        .await?;
    host.intent(session, "notify-1", "notify-att-1").await?;
    host.pause(3.0).await;
    host.step(
        session,
        "notify-1",
        "settlement",
        json!({"attempt_id": "notify-att-1", "status": "outcome_unknown", "reason": "execution_timeout"}),
    )
    .await
}
