//! `GET /metrics` (docs/api.md "Metrics"): the Prometheus text exposition, written by the
//! `metrics-exporter-prometheus` crate (never formatted by hand).
//!
//! Two kinds of figure:
//! - **Counted by this process** since it started, in one [`PrometheusRecorder`] per server (kept in
//!   [`crate::AppState`], never installed as the process's global recorder, so several servers in one
//!   process, as in the tests, count apart): `outcomes_transitions_total{kind,status}`,
//!   `outcomes_host_request_duration_seconds{operation}` (a histogram), `outcomes_busy_total`,
//!   `outcomes_failed_credentials_total`, `outcomes_webhook_deliveries_total{event,result}`,
//!   `outcomes_webhook_outbox_dropped_total{endpoint}`.
//! - **Read at each scrape**: the ledger's gauges from the database (`ledger::SessionManager::ledger_gauges`
//!   and the webhook outbox's backlog, `ledger::webhooks::Webhooks::outbox_gauges`, the same on every
//!   instance of one Postgres database) and this process's open live streams, set into
//!   a recorder made for that one scrape, so a tool whose last unknown was reconciled disappears from
//!   `outcomes_unknown_open{tool}` instead of keeping its last value.

use std::sync::Arc;
use std::time::Instant;

use ::metrics::{Counter, Key, KeyName, Label, Level, Metadata, Recorder, SharedString, Unit};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ledger::command::Action;
use ledger::webhooks::OutboxGauges;
use ledger::wire::LedgerStatus;
use ledger::LedgerGauges;
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use crate::access::Principal;
use crate::error::{ApiError, BusyAnswer};
use crate::AppState;

/// Open settled unknowns (`outcome_unknown`), in total and `{tool}`.
pub const UNKNOWN_OPEN: &str = "outcomes_unknown_open";
/// Whole seconds the oldest open settled unknown has been open; 0 when there is none.
pub const UNKNOWN_OLDEST_AGE: &str = "outcomes_unknown_oldest_age_seconds";
/// Entries in flight (`execution_started`).
pub const IN_FLIGHT: &str = "outcomes_in_flight";
/// Whole seconds the oldest in-flight entry has been in flight; 0 when there is none.
pub const IN_FLIGHT_OLDEST_AGE: &str = "outcomes_in_flight_oldest_age_seconds";
/// Successful writes by `kind` (the operation) and `status` (the entry's ledger status after it).
pub const TRANSITIONS: &str = "outcomes_transitions_total";
/// Seconds a host write request took, by `operation`.
pub const HOST_REQUEST_DURATION: &str = "outcomes_host_request_duration_seconds";
/// Live streams (`/api/run-events`) open on this process.
pub const LIVE_STREAMS: &str = "outcomes_live_streams";
/// Answers 503 `busy`.
pub const BUSY: &str = "outcomes_busy_total";
/// Failed credentials (docs/access.md "Failed credentials").
pub const FAILED_CREDENTIALS: &str = "outcomes_failed_credentials_total";
/// Webhook delivery attempts this process made, by `event` and `result` ([`DeliveryResult`]).
pub const WEBHOOK_DELIVERIES: &str = "outcomes_webhook_deliveries_total";
/// Webhook outbox rows this process dropped by the per-endpoint bound, by `endpoint` (its id).
pub const WEBHOOK_OUTBOX_DROPPED: &str = "outcomes_webhook_outbox_dropped_total";
/// Entries this process settled `outcome_unknown` itself at their deadline (docs/api.md "Deadlines").
pub const DEADLINE_SETTLEMENTS: &str = "outcomes_deadline_settlements_total";
/// Webhook outbox rows pending (neither delivered nor given up), read from the database.
pub const WEBHOOK_OUTBOX_PENDING: &str = "outcomes_webhook_outbox_pending";
/// Whole seconds since the event of the oldest pending webhook outbox row; 0 when none is pending.
pub const WEBHOOK_OUTBOX_OLDEST_PENDING_AGE: &str =
    "outcomes_webhook_outbox_oldest_pending_age_seconds";

/// OpenTelemetry outbox rows pending (not yet exported, not given up), read from the database.
pub const OTEL_OUTBOX_PENDING: &str = "outcomes_otel_outbox_pending";
/// Whole seconds since the change of the oldest pending OpenTelemetry outbox row; 0 when none is pending.
pub const OTEL_OUTBOX_OLDEST_PENDING_AGE: &str = "outcomes_otel_outbox_oldest_pending_age_seconds";
/// Spans this process's export worker ended, by `result` ([`SpanResult`]).
pub const OTEL_SPANS: &str = "outcomes_otel_spans_total";

/// How the export worker ended one span's row: the `result` label of [`OTEL_SPANS`] (docs/api.md
/// "Metrics").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanResult {
    /// The backend answered success: the span is there.
    Exported,
    /// The backend refused the span itself (400, 413 or 422 for a request of this span alone): dropped.
    Refused,
    /// Not exported within 24 h of its change: dropped.
    GaveUp,
    /// Beyond `--otlp-outbox-max-pending`: dropped, the oldest first.
    Dropped,
}

impl SpanResult {
    /// The label value: `exported`, `refused`, `gave_up`, `dropped`.
    pub fn as_str(self) -> &'static str {
        match self {
            SpanResult::Exported => "exported",
            SpanResult::Refused => "refused",
            SpanResult::GaveUp => "gave_up",
            SpanResult::Dropped => "dropped",
        }
    }
}

/// What one webhook delivery attempt came to: the `result` label of [`WEBHOOK_DELIVERIES`]
/// (docs/api.md "Metrics").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryResult {
    /// Answered 2xx within the timeout.
    Delivered,
    /// Not delivered (another status, no answer, a refused connection or destination): tried again.
    Failed,
    /// Not delivered, and no attempt is left (24 h after the event): given up.
    GaveUp,
    /// Answered `410 Gone`: the endpoint is disabled, its pending deliveries dropped.
    Gone,
}

impl DeliveryResult {
    /// The label value: `delivered`, `failed`, `gave_up`, `gone`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryResult::Delivered => "delivered",
            DeliveryResult::Failed => "failed",
            DeliveryResult::GaveUp => "gave_up",
            DeliveryResult::Gone => "gone",
        }
    }
}

/// The buckets of [`HOST_REQUEST_DURATION`], in seconds: 1 ms to 10 s (the default write wait).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// `Content-Type` of the exposition (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The metadata every registration carries (the Prometheus recorder ignores it).
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// This server's counters and its recorder. One per server (`serve::build`).
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    busy: Counter,
    failed_credentials: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A recorder of its own (not installed globally), with the counters described and at 0.
    pub fn new() -> Self {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(HOST_REQUEST_DURATION.to_owned()),
                &DURATION_BUCKETS,
            )
            .map_or_else(
                |_| PrometheusBuilder::new().build_recorder(),
                |b| b.build_recorder(),
            );
        describe_counter(
            &recorder,
            TRANSITIONS,
            "Successful writes by kind (the operation) and the entry's ledger status after it.",
        );
        describe_counter(&recorder, BUSY, "Answers 503 busy (the ledger's write lock or connections not free within the write wait).");
        describe_counter(&recorder, FAILED_CREDENTIALS, "Failed credentials: bearer tokens, sign-ins, viewer links, a missing host token on the host API.");
        describe_counter(&recorder, WEBHOOK_DELIVERIES, "Webhook delivery attempts this instance made, by event and result (delivered, failed: tried again, gave_up: the last attempt failed, gone: 410 disabled the endpoint).");
        describe_counter(&recorder, DEADLINE_SETTLEMENTS, "Writes this instance settled outcome_unknown (execution_timeout) itself because their host neither settled nor extended them by their deadline.");
        describe_counter(&recorder, OTEL_SPANS, "OpenTelemetry spans this instance's export worker ended, by result (exported; refused: the backend refused the span alone; gave_up: not exported within 24 h; dropped: beyond the outbox bound).");
        describe_counter(&recorder, WEBHOOK_OUTBOX_DROPPED, "Webhook outbox rows this instance dropped undelivered because their endpoint had more pending than the bound (the oldest first), by endpoint id.");
        recorder.describe_histogram(
            KeyName::from_const_str(HOST_REQUEST_DURATION),
            Some(Unit::Seconds),
            SharedString::const_str("Seconds a host write request took, by operation."),
        );
        let busy = recorder.register_counter(&Key::from_static_name(BUSY), &METADATA);
        let failed_credentials =
            recorder.register_counter(&Key::from_static_name(FAILED_CREDENTIALS), &METADATA);
        busy.increment(0);
        failed_credentials.increment(0);
        recorder
            .register_counter(&Key::from_static_name(DEADLINE_SETTLEMENTS), &METADATA)
            .increment(0);
        let handle = recorder.handle();
        Metrics {
            recorder,
            handle,
            busy,
            failed_credentials,
        }
    }

    /// Counts one answer 503 `busy`.
    pub fn busy(&self) {
        self.busy.increment(1);
    }

    /// The counter of failed credentials ([`crate::auth::Failures`] counts each failure into it).
    pub fn failed_credentials(&self) -> Counter {
        self.failed_credentials.clone()
    }

    /// Counts one successful write: `kind` is the operation ([`kind_of`]), `status` the entry's ledger
    /// status after it.
    pub fn transition(&self, kind: &'static str, status: LedgerStatus) {
        let key = Key::from_parts(
            TRANSITIONS,
            vec![
                Label::new("kind", kind),
                Label::new("status", status.as_str()),
            ],
        );
        self.recorder.register_counter(&key, &METADATA).increment(1);
    }

    /// Counts one webhook delivery attempt: `event` its event type (`outcome.unknown`, …), `result` what
    /// it came to.
    pub fn webhook_delivery(&self, event: &str, result: DeliveryResult) {
        let key = Key::from_parts(
            WEBHOOK_DELIVERIES,
            vec![
                Label::new("event", label_value(event)),
                Label::new("result", result.as_str()),
            ],
        );
        self.recorder.register_counter(&key, &METADATA).increment(1);
    }

    /// Counts `rows` webhook outbox rows of endpoint `endpoint` dropped by the per-endpoint bound
    /// (docs/api.md "Webhooks", "The bound").
    pub fn webhook_outbox_dropped(&self, endpoint: i64, rows: u64) {
        let key = Key::from_parts(
            WEBHOOK_OUTBOX_DROPPED,
            vec![Label::new("endpoint", endpoint.to_string())],
        );
        self.recorder
            .register_counter(&key, &METADATA)
            .increment(rows);
    }

    /// Counts `n` spans the OpenTelemetry export worker ended with `result`.
    pub fn otel_spans(&self, result: SpanResult, n: u64) {
        let key = Key::from_parts(OTEL_SPANS, vec![Label::new("result", result.as_str())]);
        self.recorder.register_counter(&key, &METADATA).increment(n);
    }

    /// Counts `n` entries this process settled at their deadline (docs/api.md "Deadlines").
    pub fn deadline_settlements(&self, n: u64) {
        self.recorder
            .register_counter(&Key::from_static_name(DEADLINE_SETTLEMENTS), &METADATA)
            .increment(n);
    }

    /// Records how long one host write request took.
    pub fn host_request(&self, operation: &'static str, seconds: f64) {
        let key = Key::from_parts(
            HOST_REQUEST_DURATION,
            vec![Label::new("operation", operation)],
        );
        self.recorder
            .register_histogram(&key, &METADATA)
            .record(seconds);
    }

    /// Drains recorded histogram samples into their buckets; called periodically by `outcomes serve`,
    /// so samples between scrapes do not pile up.
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// The whole exposition: the scrape-time gauges (`ledger`, the webhook `outbox`, the OpenTelemetry
    /// `otel_outbox`, `live_streams`), then what this process counted. An age without an open entry (or
    /// a pending row) is 0.
    pub fn render(
        &self,
        ledger: &LedgerGauges,
        outbox: &OutboxGauges,
        otel_outbox: &OutboxGauges,
        live_streams: usize,
    ) -> String {
        let scrape = PrometheusBuilder::new().build_recorder();
        let gauge = |name: &'static str, labels: Vec<Label>, value: f64| {
            scrape
                .register_gauge(&Key::from_parts(name, labels), &METADATA)
                .set(value);
        };
        describe_gauge(&scrape, UNKNOWN_OPEN, None, "Open settled unknown outcomes (outcome_unknown), in sessions that have not expired; the series without a tool label is every tool.");
        describe_gauge(&scrape, UNKNOWN_OLDEST_AGE, Some(Unit::Seconds), "Whole seconds the oldest open unknown outcome has been unknown (the support queue's oldest age); 0 when there is none.");
        describe_gauge(
            &scrape,
            IN_FLIGHT,
            None,
            "Entries in flight (execution_started), in sessions that have not expired.",
        );
        describe_gauge(
            &scrape,
            IN_FLIGHT_OLDEST_AGE,
            Some(Unit::Seconds),
            "Whole seconds the oldest in-flight entry has been in flight; 0 when there is none.",
        );
        describe_gauge(
            &scrape,
            LIVE_STREAMS,
            None,
            "Live streams (/api/run-events) open on this instance.",
        );
        describe_gauge(
            &scrape,
            WEBHOOK_OUTBOX_PENDING,
            None,
            "Webhook deliveries pending in the outbox (neither delivered nor given up).",
        );
        describe_gauge(
            &scrape,
            WEBHOOK_OUTBOX_OLDEST_PENDING_AGE,
            Some(Unit::Seconds),
            "Whole seconds since the event of the oldest pending webhook delivery happened; 0 when none is pending.",
        );
        describe_gauge(
            &scrape,
            OTEL_OUTBOX_PENDING,
            None,
            "OpenTelemetry spans pending in the outbox (not yet exported, not given up).",
        );
        describe_gauge(
            &scrape,
            OTEL_OUTBOX_OLDEST_PENDING_AGE,
            Some(Unit::Seconds),
            "Whole seconds since the change of the oldest pending OpenTelemetry span; 0 when none is pending.",
        );
        gauge(UNKNOWN_OPEN, vec![], ledger.unknown_open() as f64);
        for (tool, n) in &ledger.unknown_by_tool {
            gauge(
                UNKNOWN_OPEN,
                vec![Label::new("tool", label_value(tool))],
                *n as f64,
            );
        }
        gauge(
            UNKNOWN_OLDEST_AGE,
            vec![],
            ledger.unknown_oldest_age_secs.unwrap_or(0) as f64,
        );
        gauge(IN_FLIGHT, vec![], ledger.in_flight as f64);
        gauge(
            IN_FLIGHT_OLDEST_AGE,
            vec![],
            ledger.in_flight_oldest_age_secs.unwrap_or(0) as f64,
        );
        gauge(LIVE_STREAMS, vec![], live_streams as f64);
        gauge(WEBHOOK_OUTBOX_PENDING, vec![], outbox.pending as f64);
        gauge(
            WEBHOOK_OUTBOX_OLDEST_PENDING_AGE,
            vec![],
            outbox.oldest_pending_age_secs.unwrap_or(0) as f64,
        );
        gauge(OTEL_OUTBOX_PENDING, vec![], otel_outbox.pending as f64);
        gauge(
            OTEL_OUTBOX_OLDEST_PENDING_AGE,
            vec![],
            otel_outbox.oldest_pending_age_secs.unwrap_or(0) as f64,
        );
        let mut out = scrape.handle().render();
        out.push_str(&self.handle.render());
        out
    }
}

/// A label value as the exporter must be given it to write it exactly once escaped: its sanitiser takes
/// a backslash pair as an escape already made (a tool named `a\\b` would be written `a\\b` and read back
/// with one backslash; the backslash of `\"` would be dropped), so every backslash is doubled first. A
/// tool name holds no line feed (docs/ledger.md "Commands": no control character).
fn label_value(value: &str) -> String {
    value.replace('\\', "\\\\")
}

fn describe_counter(recorder: &PrometheusRecorder, name: &'static str, help: &'static str) {
    recorder.describe_counter(
        KeyName::from_const_str(name),
        None,
        SharedString::const_str(help),
    );
}

fn describe_gauge(
    recorder: &PrometheusRecorder,
    name: &'static str,
    unit: Option<Unit>,
    help: &'static str,
) {
    recorder.describe_gauge(
        KeyName::from_const_str(name),
        unit,
        SharedString::const_str(help),
    );
}

/// The `kind` label of a write: the command's `op` as the host API's batch names it (`approve`,
/// `intent`, `settle`, `cancel`, `reconcile`, `metadata`, `attempt`; `note`, `claim`, `release` for the
/// staff actions).
pub fn kind_of(action: &Action) -> &'static str {
    match action {
        Action::Approve { .. } => "approve",
        Action::RecordIntent { .. } => "intent",
        Action::Settle { .. } => "settle",
        Action::Cancel { .. } => "cancel",
        Action::Reconcile { .. } => "reconcile",
        Action::AttachMetadata { .. } => "metadata",
        Action::FreshAttempt { .. } => "attempt",
        Action::ExtendDeadline { .. } => "deadline",
        Action::Expire { .. } => "expire",
        Action::Note { .. } => "note",
        Action::Claim => "claim",
        Action::Release => "release",
        Action::Assign { .. } => "assign",
    }
}

/// The `operation` label of a host write request, from its method and its route (as declared): the
/// transitions by their `op` name, `delete_session`, `batch`, `viewer_link`, `revoke_viewer_links`;
/// `other` for anything else.
pub fn host_operation(method: &Method, route: &str) -> &'static str {
    let last = route.rsplit('/').next().unwrap_or("");
    match (method.as_str(), last) {
        ("POST", "mutations") => "approve",
        ("POST", "intent") => "intent",
        ("POST", "settlement") => "settle",
        ("POST", "cancellation") => "cancel",
        ("POST", "reconciliation") => "reconcile",
        ("PUT", "metadata") => "metadata",
        ("POST", "attempts") => "attempt",
        ("POST", "deadline") => "deadline",
        ("POST", "batch") => "batch",
        ("POST", "viewer-links") => "viewer_link",
        ("DELETE", "viewer-links") => "revoke_viewer_links",
        ("DELETE", "{session_key}") => "delete_session",
        _ => "other",
    }
}

/// Route layer of the host write API: times each request by its operation ([`host_operation`]) into
/// [`HOST_REQUEST_DURATION`], whatever its answer. The recorder is the request's `Arc<Metrics>`
/// extension (`serve::build` adds it); without one nothing is recorded.
pub async fn time_host_request(request: Request, next: Next) -> Response {
    let metrics = request.extensions().get::<Arc<Metrics>>().cloned();
    let operation = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("other", |p| host_operation(request.method(), p.as_str()));
    let started = Instant::now();
    let response = next.run(request).await;
    if let Some(m) = metrics {
        m.host_request(operation, started.elapsed().as_secs_f64());
    }
    response
}

/// Middleware on every request: counts the answers marked [`BusyAnswer`] into [`BUSY`].
pub async fn count_answers(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let response = next.run(request).await;
    if response.extensions().get::<BusyAnswer>().is_some() {
        state.metrics.busy();
    }
    response
}

/// `GET /metrics` (docs/api.md "Metrics"): the Prometheus text exposition, `text/plain; version=0.0.4`.
/// Who may read it: any caller of the read APIs but a viewer (404, as the other cross-session reads);
/// without a credential 401 where reads are closed (docs/access.md). Errors: the ledger's gauges could
/// not be read (503 `busy` / `unavailable`, 500), as every read.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "the Prometheus text exposition (format 0.0.4): the ledger's gauges read at this scrape, this instance's live streams and counters (docs/api.md \"Metrics\")", content_type = "text/plain", body = String),
        (status = 404, description = "a viewer (the metrics are not one session's)", body = ledger::wire::ErrorBody),
        (status = 503, description = "the ledger is busy or cannot be reached; retry after `Retry-After` seconds", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn metrics(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Response, ApiError> {
    principal.may_read_all()?;
    let gauges = state.sessions.ledger_gauges().await?;
    let outbox = state.webhooks.outbox_gauges().await?;
    let otel_outbox = state.otel.outbox_gauges().await?;
    let body = state.metrics.render(
        &gauges,
        &outbox,
        &otel_outbox,
        state.hub.total_subscribers(),
    );
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))],
        body,
    )
        .into_response())
}

/// `GET /metrics`, documented.
pub fn router() -> utoipa_axum::router::OpenApiRouter<AppState> {
    utoipa_axum::router::OpenApiRouter::new().routes(utoipa_axum::routes!(metrics))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_routes_are_named_by_operation() {
        let m = "/api/host/sessions/{session_key}/mutations/{mutation_id}";
        for (method, route, op) in [
            (
                Method::POST,
                "/api/host/sessions/{session_key}/mutations".to_owned(),
                "approve",
            ),
            (Method::POST, format!("{m}/intent"), "intent"),
            (Method::POST, format!("{m}/settlement"), "settle"),
            (Method::POST, format!("{m}/cancellation"), "cancel"),
            (Method::POST, format!("{m}/reconciliation"), "reconcile"),
            (Method::PUT, format!("{m}/metadata"), "metadata"),
            (Method::POST, format!("{m}/attempts"), "attempt"),
            (Method::POST, "/api/host/batch".to_owned(), "batch"),
            (
                Method::DELETE,
                "/api/host/sessions/{session_key}".to_owned(),
                "delete_session",
            ),
            (
                Method::POST,
                "/api/host/sessions/{session_key}/viewer-links".to_owned(),
                "viewer_link",
            ),
            (
                Method::DELETE,
                "/api/host/sessions/{session_key}/viewer-links".to_owned(),
                "revoke_viewer_links",
            ),
            (Method::GET, "/api/host/batch".to_owned(), "other"),
        ] {
            assert_eq!(host_operation(&method, &route), op, "{method} {route}");
        }
    }

    #[test]
    fn the_exposition_holds_the_scrape_gauges_and_the_counters() {
        let m = Metrics::new();
        let empty = m.render(
            &LedgerGauges::default(),
            &OutboxGauges::default(),
            &OutboxGauges::default(),
            0,
        );
        assert!(empty.contains("\noutcomes_unknown_open 0\n"), "{empty}");
        assert!(empty.contains("\noutcomes_busy_total 0\n"), "{empty}");
        assert!(!empty.contains("tool="), "{empty}");
        m.transition("settle", LedgerStatus::OutcomeUnknown);
        m.transition("settle", LedgerStatus::OutcomeUnknown);
        m.busy();
        let g = LedgerGauges {
            unknown_by_tool: [("x".to_owned(), 2)].into(),
            unknown_oldest_age_secs: Some(7),
            in_flight: 1,
            in_flight_oldest_age_secs: Some(3),
        };
        m.webhook_delivery("outcome.unknown", DeliveryResult::Failed);
        m.webhook_delivery("outcome.unknown", DeliveryResult::Failed);
        m.webhook_delivery("outcome.unknown", DeliveryResult::Delivered);
        m.webhook_delivery("outcome.resolved", DeliveryResult::Gone);
        m.webhook_outbox_dropped(3, 2);
        m.webhook_outbox_dropped(3, 5);
        let outbox = OutboxGauges {
            pending: 3,
            oldest_pending_age_secs: Some(12),
        };
        let otel_outbox = OutboxGauges {
            pending: 5,
            oldest_pending_age_secs: Some(90),
        };
        m.otel_spans(SpanResult::Exported, 4);
        m.otel_spans(SpanResult::Refused, 1);
        let text = m.render(&g, &outbox, &otel_outbox, 4);
        for line in [
            "outcomes_unknown_open 2",
            "outcomes_unknown_open{tool=\"x\"} 2",
            "outcomes_unknown_oldest_age_seconds 7",
            "outcomes_in_flight 1",
            "outcomes_in_flight_oldest_age_seconds 3",
            "outcomes_live_streams 4",
            "outcomes_transitions_total{kind=\"settle\",status=\"outcome_unknown\"} 2",
            "outcomes_busy_total 1",
            "outcomes_failed_credentials_total 0",
            "outcomes_otel_outbox_pending 5",
            "outcomes_otel_outbox_oldest_pending_age_seconds 90",
            "outcomes_otel_spans_total{result=\"exported\"} 4",
            "outcomes_otel_spans_total{result=\"refused\"} 1",
            "outcomes_webhook_outbox_pending 3",
            "outcomes_webhook_outbox_oldest_pending_age_seconds 12",
            "outcomes_webhook_deliveries_total{event=\"outcome.unknown\",result=\"failed\"} 2",
            "outcomes_webhook_deliveries_total{event=\"outcome.unknown\",result=\"delivered\"} 1",
            "outcomes_webhook_deliveries_total{event=\"outcome.resolved\",result=\"gone\"} 1",
            "outcomes_webhook_outbox_dropped_total{endpoint=\"3\"} 7",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        // A tool name with backslashes and a quote is written escaped exactly once (text format: `\\`
        // for a backslash, `\"` for a quote).
        let odd = LedgerGauges {
            unknown_by_tool: [(r#"a\"b\\c\n"#.to_owned(), 1)].into(),
            ..LedgerGauges::default()
        };
        let text = m.render(&odd, &OutboxGauges::default(), &OutboxGauges::default(), 0);
        let line = r#"outcomes_unknown_open{tool="a\\\"b\\\\c\\n"} 1"#;
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        // The next scrape no longer has the tool.
        let text = m.render(
            &LedgerGauges::default(),
            &OutboxGauges::default(),
            &OutboxGauges::default(),
            0,
        );
        assert!(!text.contains("tool=\"x\""), "{text}");
        assert!(
            text.lines()
                .any(|l| l == "outcomes_webhook_outbox_oldest_pending_age_seconds 0"),
            "{text}"
        );
    }
}
