#![recursion_limit = "256"]
//! The outcomes server: the host write API, history, replay snapshots and live run events over HTTP, and
//! the server-side rendering of the dashboard (`app`). `main.rs` only parses the command line.

pub mod access;
pub mod assets;
pub mod auth;
pub mod backup;
pub mod cli;
pub mod conn;
pub mod database;
pub mod deadlines;
pub mod error;
pub mod http;
pub mod hub;
pub mod metrics;
pub mod otel;
pub mod project;
pub mod purge;
pub mod serve;
pub mod sse;
pub mod ssr;
pub mod staff;
pub mod telemetry;
pub mod webhooks;

use std::sync::Arc;

use ledger::{Engine, SessionManager};
use tokio_util::sync::CancellationToken;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub sessions: SessionManager,
    /// Webhook endpoints and the outbox: when staff were alerted (docs/api.md "Alerted").
    pub webhooks: ledger::webhooks::Webhooks,
    /// The OpenTelemetry outbox: its backlog for `GET /metrics` (docs/operations.md "OpenTelemetry").
    pub otel: ledger::otel::Otel,
    pub hub: Arc<hub::Hub>,
    /// Bearer token of the host write API.
    pub host_token: Arc<str>,
    /// Cancelled on shutdown: live streams end cleanly.
    pub shutdown: CancellationToken,
    /// Failed credentials per client address (`auth::Failures`).
    pub failures: Arc<auth::Failures>,
    /// Who may see what: the access mode, the store of staff and viewer links, the trusted proxy.
    pub access: Arc<access::AccessConfig>,
    /// Password checks running at once (Argon2id is CPU- and memory-heavy).
    pub password_checks: Arc<tokio::sync::Semaphore>,
    /// This server's counters and its Prometheus recorder (`GET /metrics`, docs/api.md "Metrics").
    pub metrics: Arc<crate::metrics::Metrics>,
}
