//! The OpenTelemetry export (docs/operations.md "OpenTelemetry"; README "OpenTelemetry"): every protected
//! write as a span, sent over OTLP/HTTP (protobuf, encoded by the `opentelemetry-otlp` crate) to
//! `--otlp-endpoint` (a base: spans go to `<endpoint>/v1/traces`) or the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as given) / `OTEL_EXPORTER_OTLP_ENDPOINT` (a base), with
//! `OTEL_EXPORTER_OTLP_HEADERS` and `service.name` `outcomes` (or `OTEL_SERVICE_NAME`). Off unless one
//! of those is set.
//!
//! The spans come from the ledger's durable outbox (`ledger::otel`: written by a trigger in the
//! transaction of the change, so the write path only inserts one row). The worker here takes due rows in
//! batches of up to [`BATCH`], turns each into a span ([`span_data`]) and exports the batch; a batch the
//! backend refused or did not answer is tried again with exponential backoff (from
//! `--otlp-retry-base-ms`, doubled per failure up to [`MAX_BACKOFF_MS`], with jitter) until 24 h after
//! its change ([`GIVE_UP_AFTER_MS`]); rows past `--otlp-outbox-max-pending` are dropped, the oldest
//! first. An exported row is deleted at once, so a span is sent once (a worker killed between the answer
//! and the delete sends its batch again after the lease: the span ids are derived, the same each time).

use std::borrow::Cow;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use ledger::otel::{Otel, OtelItem, SPAN_RECONCILE};
use ledger::wire::{published_status, LedgerStatus, PublishedStatus};
use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter, SpanLinks};
use opentelemetry_sdk::Resource;
use rand::Rng;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::metrics::{Metrics, SpanResult};

/// Rows exported in one OTLP request, at most.
pub const BATCH: i64 = 512;
/// How long a worker holds rows it is exporting (ms): longer than [`EXPORT_TIMEOUT`].
const LEASE_MS: i64 = 60_000;
/// One export request's time limit.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(30);
/// A row not exported this long after its change (ms) is given up: 24 h.
pub const GIVE_UP_AFTER_MS: i64 = 24 * 3600 * 1000;
/// The longest wait between two attempts while the backend fails: 60 s (a span is late by at most
/// about that once the backend is back).
pub const MAX_BACKOFF_MS: i64 = 60_000;
/// How often the worker looks for due rows.
const POLL: Duration = Duration::from_millis(500);

/// `serve`'s OpenTelemetry flags (docs/operations.md "OpenTelemetry").
#[derive(Debug, Clone, Args)]
pub struct OtelOptions {
    /// The OTLP/HTTP base endpoint, e.g. `http://collector:4318`: spans go to `<endpoint>/v1/traces`.
    /// Without it, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as given) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a
    /// base); without any, nothing is exported.
    #[arg(long, value_parser = otlp_endpoint)]
    pub otlp_endpoint: Option<url::Url>,
    /// Put the reconciliation evidence's free text (its `reference`) on `reconcile {tool}` spans as
    /// `outcomes.reference`; without it no span carries it.
    #[arg(long, env = "OUTCOMES_OTLP_INCLUDE_REFERENCES")]
    pub otlp_include_references: bool,
    /// The dashboard's address as people open it, for `outcomes.operation_url` (default: `http://` and
    /// `--addr`).
    #[arg(long, env = "OUTCOMES_OTLP_DASHBOARD_URL", value_parser = otlp_endpoint)]
    pub otlp_dashboard_url: Option<url::Url>,
    /// The first retry's wait (ms), doubled per failed attempt up to a minute, with jitter.
    #[arg(long, env = "OUTCOMES_OTLP_RETRY_BASE_MS", default_value_t = 1_000, hide = true, value_parser = clap::value_parser!(i64).range(1..=60_000))]
    pub otlp_retry_base_ms: i64,
    /// The longest wait between two attempts (ms), at most [`MAX_BACKOFF_MS`] (tests shorten it).
    #[arg(long, env = "OUTCOMES_OTLP_RETRY_MAX_MS", default_value_t = MAX_BACKOFF_MS, hide = true, value_parser = clap::value_parser!(i64).range(1..=MAX_BACKOFF_MS))]
    pub otlp_retry_max_ms: i64,
    /// The most spans the outbox keeps pending; past it the oldest are dropped (docs/operations.md
    /// "OpenTelemetry", "The bound").
    #[arg(long, env = "OUTCOMES_OTLP_OUTBOX_MAX_PENDING", default_value_t = ledger::otel::OUTBOX_MAX_PENDING, value_parser = clap::value_parser!(i64).range(1..=10_000_000))]
    pub otlp_outbox_max_pending: i64,
}

impl Default for OtelOptions {
    /// Export off; the other flags at their defaults.
    fn default() -> Self {
        OtelOptions {
            otlp_endpoint: None,
            otlp_include_references: false,
            otlp_dashboard_url: None,
            otlp_retry_base_ms: 1_000,
            otlp_retry_max_ms: MAX_BACKOFF_MS,
            otlp_outbox_max_pending: ledger::otel::OUTBOX_MAX_PENDING,
        }
    }
}

/// `--otlp-endpoint`, `--otlp-dashboard-url`: an absolute `http:` or `https:` URL with a host and no
/// user name or password (credentials go in `OTEL_EXPORTER_OTLP_HEADERS`).
fn otlp_endpoint(s: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(s).map_err(|e| format!("{s:?} is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{s:?}: the scheme must be http or https"));
    }
    if url.host().is_none() {
        return Err(format!("{s:?} has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{s:?} holds a user name or password: pass credentials in OTEL_EXPORTER_OTLP_HEADERS"
        ));
    }
    Ok(url)
}

/// Where spans go: `--otlp-endpoint` + `/v1/traces`, else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given,
/// else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; `None`: export off. `env` reads a variable (the
/// process environment in `serve`). An empty variable counts as unset. Errors name the bad value.
pub fn traces_endpoint(
    options: &OtelOptions,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, String> {
    let base = |u: &str| format!("{}/v1/traces", u.trim_end_matches('/'));
    if let Some(u) = &options.otlp_endpoint {
        return Ok(Some(base(u.as_str())));
    }
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if let Some(v) = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        otlp_endpoint(&v).map_err(|e| format!("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {e}"))?;
        return Ok(Some(v));
    }
    if let Some(v) = get("OTEL_EXPORTER_OTLP_ENDPOINT") {
        otlp_endpoint(&v).map_err(|e| format!("OTEL_EXPORTER_OTLP_ENDPOINT: {e}"))?;
        return Ok(Some(base(&v)));
    }
    Ok(None)
}

/// What every span of this process shares.
#[derive(Debug, Clone)]
pub struct SpanContextInputs {
    /// The ledger's id (32 hex digits): traces and span ids are derived from it.
    pub ledger_id: String,
    /// The dashboard's base URL, without a trailing `/`.
    pub dashboard_url: String,
    /// `--otlp-include-references`.
    pub include_references: bool,
}

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    h.finalize().into()
}

/// The trace of a session without a host `traceparent`: the first 16 bytes of SHA-256 over the ledger's
/// id and the session key (never all zero: a zero id is replaced by 1).
pub fn session_trace_id(ledger_id: &str, session_key: &str) -> TraceId {
    let d = digest(&["outcomes trace", ledger_id, session_key]);
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    if b == [0u8; 16] {
        b[15] = 1;
    }
    TraceId::from_bytes(b)
}

fn span_id(parts: &[&str]) -> SpanId {
    let d = digest(parts);
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    if b == [0u8; 8] {
        b[7] = 1;
    }
    SpanId::from_bytes(b)
}

/// The span id of an attempt's `mutation_outcome {tool}` span, derived from the ledger's id, the session,
/// the mutation and the attempt (the link of a later `reconcile {tool}` points at it).
pub fn write_span_id(ledger_id: &str, item: &OtelItem) -> SpanId {
    span_id(&[
        "outcomes write",
        ledger_id,
        &item.session_key,
        &item.mutation_id,
        item.attempt_id.as_deref().unwrap_or(""),
    ])
}

fn time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// The published status of a row, as `mutation_outcome/v1` spells it (`completed`, `failed`,
/// `outcome_unknown`, `not_executed`).
pub fn published(item: &OtelItem) -> Option<PublishedStatus> {
    LedgerStatus::parse(&item.ledger_status)
        .and_then(|s| published_status(s, item.intent_recorded != 0))
}

/// `<dashboard>/sessions/{key}/operations/{mutation_id}`, each segment percent-encoded.
pub fn operation_url(dashboard_url: &str, session_key: &str, mutation_id: &str) -> String {
    let seg = |s: &str| {
        url::form_urlencoded::byte_serialize(s.as_bytes())
            .collect::<String>()
            .replace('+', "%20")
    };
    format!(
        "{dashboard_url}/sessions/{}/operations/{}",
        seg(session_key),
        seg(mutation_id)
    )
}

/// One outbox row as a span (docs/operations.md "OpenTelemetry", "Spans"):
///
/// - `write`: `mutation_outcome {tool}`, kind INTERNAL, from the attempt's intent to the settlement, in the
///   session's trace ([`session_trace_id`]), no parent, with `gen_ai.operation.name` = `execute_tool`; or,
///   when the host passed a W3C `traceparent` at approve, in that trace as a child of the host's span
///   (remote parent) and without `gen_ai.operation.name` (the host's own span is the tool execution: a
///   GenAI-aware backend counts the call once); with `gen_ai.tool.name`, `gen_ai.tool.call.id` (the mutation id), `gen_ai.conversation.id` (the session
///   key), `outcomes.status` (the published status), `outcomes.reason` (when there is one),
///   `outcomes.logical_turn_id`, `outcomes.revision`, `outcomes.operation_url`.
/// - `reconcile`: `reconcile {tool}`, kind INTERNAL, at the reconciliation (start = end), in the same
///   trace as the write's span (the host's when it passed a `traceparent`), no parent, linked to the attempt's `write` span, with `gen_ai.tool.name`, `gen_ai.tool.call.id`,
///   `gen_ai.conversation.id`, `outcomes.status`, `outcomes.established_by` (`staff:<name>`, `host`),
///   `outcomes.logical_turn_id`, `outcomes.revision`, `outcomes.operation_url`,
///   `outcomes.provider_status` (when given) and, only with `--otlp-include-references`,
///   `outcomes.reference` (the evidence's free text).
///
/// Status ERROR (description `failed`) only when the published status is `failed`; UNSET otherwise
/// (`outcome_unknown` too: it may later be established completed).
pub fn span_data(item: &OtelItem, ctx: &SpanContextInputs) -> SpanData {
    // A stored traceparent was checked at approve; one that no longer parses is ignored.
    let host = item
        .traceparent
        .as_deref()
        .and_then(|t| ledger::traceparent::Traceparent::parse(t).ok());
    let trace_id = match &host {
        Some(t) => TraceId::from_bytes(t.trace_id()),
        None => session_trace_id(&ctx.ledger_id, &item.session_key),
    };
    let write_id = write_span_id(&ctx.ledger_id, item);
    let reconcile = item.span == SPAN_RECONCILE;
    let status = published(item);
    let status_str = status.map(|s| s.as_str()).unwrap_or("");
    let mut attrs = Vec::with_capacity(10);
    if !reconcile && host.is_none() {
        attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
    }
    attrs.push(KeyValue::new("gen_ai.tool.name", item.tool.clone()));
    attrs.push(KeyValue::new(
        "gen_ai.tool.call.id",
        item.mutation_id.clone(),
    ));
    attrs.push(KeyValue::new(
        "gen_ai.conversation.id",
        item.session_key.clone(),
    ));
    attrs.push(KeyValue::new("outcomes.status", status_str));
    if let Some(r) = &item.reason {
        attrs.push(KeyValue::new("outcomes.reason", r.clone()));
    }
    attrs.push(KeyValue::new(
        "outcomes.logical_turn_id",
        item.logical_turn_id.clone(),
    ));
    if let Some(rev) = item.revision {
        attrs.push(KeyValue::new("outcomes.revision", rev));
    }
    attrs.push(KeyValue::new(
        "outcomes.operation_url",
        operation_url(&ctx.dashboard_url, &item.session_key, &item.mutation_id),
    ));
    let (span_id, name, start, links) = if reconcile {
        attrs.push(KeyValue::new("outcomes.established_by", item.actor.clone()));
        if let Some(p) = &item.provider_status {
            attrs.push(KeyValue::new("outcomes.provider_status", p.clone()));
        }
        if ctx.include_references {
            if let Some(r) = &item.reference {
                attrs.push(KeyValue::new("outcomes.reference", r.clone()));
            }
        }
        let id = span_id(&[
            "outcomes reconcile",
            &ctx.ledger_id,
            &item.session_key,
            &item.mutation_id,
            &item.entry_seq.to_string(),
            &item.revision.unwrap_or(0).to_string(),
            &item.at.to_string(),
        ]);
        let link = Link::with_context(SpanContext::new(
            trace_id,
            write_id,
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        ));
        (id, format!("reconcile {}", item.tool), item.at, vec![link])
    } else {
        (
            write_id,
            format!("mutation_outcome {}", item.tool),
            item.started_at.min(item.at),
            Vec::new(),
        )
    };
    let (parent_span_id, parent_span_is_remote) = match &host {
        Some(t) if !reconcile => (SpanId::from_bytes(t.parent_id()), true),
        _ => (SpanId::INVALID, false),
    };
    let mut span_links = SpanLinks::default();
    span_links.links = links;
    SpanData {
        span_context: SpanContext::new(
            trace_id,
            span_id,
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        ),
        parent_span_id,
        parent_span_is_remote,
        span_kind: SpanKind::Internal,
        name: Cow::Owned(name),
        start_time: time(start),
        end_time: time(item.at),
        attributes: attrs,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: span_links,
        status: if status == Some(PublishedStatus::Failed) {
            Status::error("failed")
        } else {
            Status::Unset
        },
        instrumentation_scope: InstrumentationScope::builder("outcomes")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
    }
}

/// The HTTP client the OTLP exporter sends with: the server's own `reqwest` (no second HTTP stack), with
/// [`EXPORT_TIMEOUT`]. It keeps the status of the last answer (0: none yet, or no answer), which the
/// exporter's error does not carry: the worker tells a refused span from a backend that is down by it.
#[derive(Debug, Clone)]
struct Client {
    http: reqwest::Client,
    last_status: Arc<AtomicU16>,
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Client {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let (parts, body) = request.into_parts();
        let mut req = self.http.request(parts.method, parts.uri.to_string());
        for (k, v) in parts.headers.iter() {
            req = req.header(k, v);
        }
        let resp = req.body(body).send().await?;
        self.last_status
            .store(resp.status().as_u16(), Ordering::Relaxed);
        let mut out = http::Response::builder().status(resp.status());
        for (k, v) in resp.headers() {
            out = out.header(k, v);
        }
        let body = resp.bytes().await?;
        Ok(out.body(body)?)
    }
}

/// The OTLP span exporter and the status of its last answer.
pub struct Exporter {
    spans: opentelemetry_otlp::SpanExporter,
    last_status: Arc<AtomicU16>,
}

/// Why an export failed, as the worker acts on it.
#[derive(Debug, PartialEq, Eq)]
pub enum ExportError {
    /// The backend answered 400, 413 or 422: it will not take this request's content, however often
    /// it is sent (OTLP/HTTP: not retryable). Split, or dropped when it is one span.
    Refused(u16, String),
    /// No answer, or any other status (429, 5xx, also 401/403/404: a backend down, overloaded or
    /// misconfigured, which an operator can fix within the 24 h): tried again.
    Failed(String),
}

impl Exporter {
    /// Exports one batch of spans.
    pub async fn export(&self, batch: Vec<SpanData>) -> Result<(), ExportError> {
        self.last_status.store(0, Ordering::Relaxed);
        match self.spans.export(batch).await {
            Ok(()) => Ok(()),
            Err(e) => Err(classify(
                self.last_status.load(Ordering::Relaxed),
                e.to_string(),
            )),
        }
    }

    fn shutdown(&mut self) {
        let _ = self.spans.shutdown();
    }
}

/// The worker's reading of a failed export: the last answer's status (0: none) and the error's text.
pub fn classify(status: u16, error: String) -> ExportError {
    match status {
        400 | 413 | 422 => ExportError::Refused(status, error),
        _ => ExportError::Failed(error),
    }
}

/// Builds the exporter for `endpoint` (from [`traces_endpoint`]). Headers come from
/// `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (read by the crate).
pub fn exporter(endpoint: &str) -> Result<Exporter, String> {
    let http = reqwest::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let last_status = Arc::new(AtomicU16::new(0));
    let mut spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .with_http_client(Client {
            http,
            last_status: last_status.clone(),
        })
        .build()
        .map_err(|e| e.to_string())?;
    spans.set_resource(&resource());
    Ok(Exporter { spans, last_status })
}

/// `service.name` = `OTEL_SERVICE_NAME` or `outcomes`, `service.version` = this build's.
pub fn resource() -> Resource {
    let name = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "outcomes".into());
    Resource::builder_empty()
        .with_service_name(name)
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The wait after `failures` failed attempts in a row: `base_ms` doubled per failure up to
/// `max_ms` (at most [`MAX_BACKOFF_MS`]), with jitter (a random point in its upper half).
pub fn backoff_ms(base_ms: i64, max_ms: i64, failures: i64) -> i64 {
    let exp = u32::try_from(failures.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
    let full = base_ms
        .saturating_mul(1i64 << exp)
        .clamp(1, max_ms.clamp(1, MAX_BACKOFF_MS));
    let half = full / 2;
    half + rand::rng().random_range(0..=full - half)
}

/// The export worker (`outcomes serve` with an endpoint): until `stop`, takes due rows, exports them,
/// deletes what was exported, backs off while the backend fails, gives up rows 24 h old and keeps the
/// bound. A batch the backend refuses (400, 413, 422: [`ExportError::Refused`]) is split in halves and
/// each sent again at once, so one span the backend will not take (or a request too large for it) never
/// holds back the others; a span refused alone is dropped and logged with its operation. Counts each
/// span it ends into `outcomes_otel_spans_total{result}` ([`SpanResult`]). Never on a request's path.
pub async fn run_worker(
    otel: Otel,
    mut exporter: Exporter,
    ctx: Arc<SpanContextInputs>,
    options: OtelOptions,
    metrics: Arc<Metrics>,
    stop: CancellationToken,
) {
    let mut failures: i64 = 0;
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        match otel.drop_over_bound(options.otlp_outbox_max_pending).await {
            Ok(0) => {}
            Ok(n) => {
                metrics.otel_spans(SpanResult::Dropped, n);
                tracing::warn!(
                    dropped = n,
                    bound = options.otlp_outbox_max_pending,
                    "OpenTelemetry outbox over its bound: the oldest spans dropped"
                )
            }
            Err(e) => tracing::warn!(error = %e, "OpenTelemetry outbox bound not kept"),
        }
        match otel
            .give_up_before(otel.now_ms().saturating_sub(GIVE_UP_AFTER_MS))
            .await
        {
            Ok(0) => {}
            Ok(n) => {
                metrics.otel_spans(SpanResult::GaveUp, n);
                tracing::warn!(
                    given_up = n,
                    "OpenTelemetry spans not exported within 24 h: given up"
                )
            }
            Err(e) => tracing::warn!(error = %e, "OpenTelemetry outbox not read"),
        }
        loop {
            let items = match otel.take_due(BATCH, LEASE_MS).await {
                Ok(items) => items,
                Err(e) => {
                    tracing::warn!(error = %e, "OpenTelemetry outbox not read");
                    break;
                }
            };
            if items.is_empty() {
                break;
            }
            let full = items.len() as i64 == BATCH;
            let exported = tokio::select! {
                _ = stop.cancelled() => return,
                r = export_taken(&otel, &exporter, &ctx, &metrics, items) => r,
            };
            match exported {
                Ok(()) => {
                    failures = 0;
                    if !full {
                        break;
                    }
                }
                Err((ids, error)) => {
                    failures = failures.saturating_add(1);
                    let next = otel.now_ms().saturating_add(backoff_ms(
                        options.otlp_retry_base_ms,
                        options.otlp_retry_max_ms,
                        failures,
                    ));
                    tracing::warn!(error = %error, spans = ids.len(), failures, "OpenTelemetry export failed; retried");
                    if let Err(e) = otel.attempt_failed(&ids, next, &error).await {
                        tracing::warn!(error = %e, "OpenTelemetry outbox: failure not recorded");
                    }
                    break;
                }
            }
        }
    }
    exporter.shutdown();
}

/// Exports rows the worker took: the whole batch, or, when the backend refuses it, its halves in turn
/// (depth first, so a single refused span costs about 2·log2([`BATCH`]) requests). Deletes what was
/// exported and what was refused alone. On the first failure that is not a refusal, answers the ids not
/// yet ended (to be tried again) with the error.
async fn export_taken(
    otel: &Otel,
    exporter: &Exporter,
    ctx: &SpanContextInputs,
    metrics: &Metrics,
    items: Vec<OtelItem>,
) -> Result<(), (Vec<i64>, String)> {
    let mut todo: Vec<Vec<OtelItem>> = vec![items];
    while let Some(chunk) = todo.pop() {
        let ids: Vec<i64> = chunk.iter().map(|i| i.id).collect();
        let batch: Vec<SpanData> = chunk.iter().map(|i| span_data(i, ctx)).collect();
        match exporter.export(batch).await {
            Ok(()) => {
                metrics.otel_spans(SpanResult::Exported, ids.len() as u64);
                if let Err(e) = otel.exported(&ids).await {
                    tracing::warn!(error = %e, "OpenTelemetry outbox: exported rows not deleted");
                }
            }
            Err(ExportError::Refused(status, error)) if chunk.len() > 1 => {
                tracing::info!(status, spans = chunk.len(), error = %error, "OpenTelemetry backend refused a batch: sent again in halves");
                let mut first = chunk;
                let second = first.split_off(first.len() / 2);
                todo.push(second);
                todo.push(first);
            }
            Err(ExportError::Refused(status, error)) => {
                let item = &chunk[0];
                tracing::warn!(
                    status,
                    error = %error,
                    session_key = %item.session_key,
                    mutation_id = %item.mutation_id,
                    span = %item.span,
                    "OpenTelemetry backend refused this span: dropped"
                );
                metrics.otel_spans(SpanResult::Refused, 1);
                if let Err(e) = otel.given_up(&ids).await {
                    tracing::warn!(error = %e, "OpenTelemetry outbox: refused row not deleted");
                }
            }
            Err(ExportError::Failed(error)) => {
                let rest = ids
                    .into_iter()
                    .chain(todo.iter().flatten().map(|i| i.id))
                    .collect();
                return Err((rest, error));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::Value;

    fn item(span: &str, status: &str) -> OtelItem {
        OtelItem {
            id: 7,
            span: span.into(),
            entry_seq: 3,
            session_key: "sess 1".into(),
            logical_turn_id: "turn-1".into(),
            mutation_id: "m:1".into(),
            tool: "create_issue".into(),
            attempt_id: Some("att-1".into()),
            ledger_status: status.into(),
            intent_recorded: 1,
            reason: None,
            revision: Some(4),
            actor: "host".into(),
            source: None,
            reference: None,
            observed_at: None,
            provider_status: None,
            started_at: 1_000,
            at: 3_500,
            attempts: 0,
            traceparent: None,
        }
    }

    fn ctx(include_references: bool) -> SpanContextInputs {
        SpanContextInputs {
            ledger_id: "0123456789abcdef0123456789abcdef".into(),
            dashboard_url: "http://127.0.0.1:3000".into(),
            include_references,
        }
    }

    fn attrs(s: &SpanData) -> Vec<(String, Value)> {
        s.attributes
            .iter()
            .map(|kv| (kv.key.to_string(), kv.value.clone()))
            .collect()
    }

    fn s(v: &str) -> Value {
        Value::from(v.to_string())
    }

    #[test]
    fn a_completed_write_is_one_execute_tool_span_with_the_outcome() {
        let span = span_data(&item("write", "completed"), &ctx(false));
        assert_eq!(span.name, "mutation_outcome create_issue");
        assert_eq!(span.span_kind, SpanKind::Internal);
        assert_eq!(span.status, Status::Unset);
        assert_eq!(span.parent_span_id, SpanId::INVALID);
        assert_eq!(span.start_time, time(1_000));
        assert_eq!(span.end_time, time(3_500));
        assert!(span.links.links.is_empty());
        assert_eq!(
            attrs(&span),
            vec![
                ("gen_ai.operation.name".into(), s("execute_tool")),
                ("gen_ai.tool.name".into(), s("create_issue")),
                ("gen_ai.tool.call.id".into(), s("m:1")),
                ("gen_ai.conversation.id".into(), s("sess 1")),
                ("outcomes.status".into(), s("completed")),
                ("outcomes.logical_turn_id".into(), s("turn-1")),
                ("outcomes.revision".into(), Value::I64(4)),
                (
                    "outcomes.operation_url".into(),
                    s("http://127.0.0.1:3000/sessions/sess%201/operations/m%3A1")
                ),
            ]
        );
        assert_eq!(
            span.span_context.trace_id(),
            session_trace_id("0123456789abcdef0123456789abcdef", "sess 1")
        );
    }

    #[test]
    fn only_failed_is_an_error_and_unknown_stays_unset_with_its_reason() {
        let failed = span_data(&item("write", "failed"), &ctx(false));
        assert_eq!(failed.status, Status::error("failed"));
        let mut unknown = item("write", "outcome_unknown");
        unknown.reason = Some("execution_timeout".into());
        let span = span_data(&unknown, &ctx(false));
        assert_eq!(span.status, Status::Unset);
        let a = attrs(&span);
        assert!(a.contains(&("outcomes.status".into(), s("outcome_unknown"))));
        assert!(a.contains(&("outcomes.reason".into(), s("execution_timeout"))));
        let mut not_executed = item("write", "approved");
        not_executed.reason = Some("pre_dispatch_deadline".into());
        let span = span_data(&not_executed, &ctx(false));
        assert_eq!(span.status, Status::Unset);
        assert!(attrs(&span).contains(&("outcomes.status".into(), s("not_executed"))));
    }

    #[test]
    fn a_reconciliation_is_linked_to_the_write_in_the_same_trace() {
        let write = span_data(&item("write", "outcome_unknown"), &ctx(false));
        let mut r = item("reconcile", "completed");
        r.actor = "staff:ana".into();
        r.reference = Some("issue #419".into());
        r.provider_status = Some("completed".into());
        r.revision = Some(6);
        r.at = 9_000;
        let span = span_data(&r, &ctx(false));
        assert_eq!(span.name, "reconcile create_issue");
        assert_eq!(span.start_time, time(9_000));
        assert_eq!(span.end_time, time(9_000));
        assert_eq!(span.span_context.trace_id(), write.span_context.trace_id());
        assert_ne!(span.span_context.span_id(), write.span_context.span_id());
        assert_eq!(span.links.links.len(), 1);
        assert_eq!(
            span.links.links[0].span_context.span_id(),
            write.span_context.span_id()
        );
        let a = attrs(&span);
        assert!(!a.iter().any(|(k, _)| k == "gen_ai.operation.name"));
        assert!(a.contains(&("outcomes.established_by".into(), s("staff:ana"))));
        assert!(a.contains(&("outcomes.provider_status".into(), s("completed"))));
        assert!(!a.iter().any(|(k, _)| k == "outcomes.reference"));
        let with_refs = span_data(&r, &ctx(true));
        assert!(attrs(&with_refs).contains(&("outcomes.reference".into(), s("issue #419"))));
    }

    const HOST: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn with_a_host_traceparent_the_write_is_a_child_of_the_host_span_without_operation_name() {
        let mut w = item("write", "completed");
        w.traceparent = Some(HOST.into());
        let span = span_data(&w, &ctx(false));
        assert_eq!(
            span.span_context.trace_id(),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
        );
        assert_eq!(
            span.parent_span_id,
            SpanId::from_hex("00f067aa0ba902b7").unwrap()
        );
        assert!(span.parent_span_is_remote);
        assert_eq!(span.name, "mutation_outcome create_issue");
        let a = attrs(&span);
        assert!(!a.iter().any(|(k, _)| k == "gen_ai.operation.name"));
        assert!(a.contains(&("gen_ai.tool.name".into(), s("create_issue"))));
        assert!(a.contains(&("gen_ai.tool.call.id".into(), s("m:1"))));
        assert!(a.contains(&("outcomes.status".into(), s("completed"))));
        // The same write without one: the session's trace, no parent, execute_tool.
        let plain = span_data(&item("write", "completed"), &ctx(false));
        assert_eq!(span.span_context.span_id(), plain.span_context.span_id());
        assert_ne!(span.span_context.trace_id(), plain.span_context.trace_id());
        assert_eq!(plain.parent_span_id, SpanId::INVALID);
        assert!(attrs(&plain).contains(&("gen_ai.operation.name".into(), s("execute_tool"))));
    }

    #[test]
    fn a_reconciliation_of_a_write_with_a_traceparent_stays_in_the_host_trace() {
        let mut w = item("write", "outcome_unknown");
        w.traceparent = Some(HOST.into());
        let write = span_data(&w, &ctx(false));
        let mut r = item("reconcile", "completed");
        r.traceparent = Some(HOST.into());
        r.at = 9_000;
        let span = span_data(&r, &ctx(false));
        assert_eq!(span.span_context.trace_id(), write.span_context.trace_id());
        assert_eq!(span.parent_span_id, SpanId::INVALID);
        assert_eq!(span.links.links.len(), 1);
        assert_eq!(
            span.links.links[0].span_context.trace_id(),
            write.span_context.trace_id()
        );
        assert_eq!(
            span.links.links[0].span_context.span_id(),
            write.span_context.span_id()
        );
        assert!(!attrs(&span)
            .iter()
            .any(|(k, _)| k == "gen_ai.operation.name"));
    }

    #[test]
    fn only_a_refusal_of_the_content_is_not_tried_again() {
        for status in [400, 413, 422] {
            assert_eq!(
                classify(status, "x".into()),
                ExportError::Refused(status, "x".into())
            );
        }
        // No answer (0), a backend down or overloaded, or misconfigured: retried for 24 h.
        for status in [0, 401, 403, 404, 408, 429, 500, 502, 503, 504] {
            assert_eq!(
                classify(status, "x".into()),
                ExportError::Failed("x".into()),
                "{status}"
            );
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_its_cap() {
        for (failures, full) in [(1, 1000), (2, 2000), (3, 4000), (40, MAX_BACKOFF_MS)] {
            let b = backoff_ms(1000, MAX_BACKOFF_MS, failures);
            assert!(b >= full / 2 && b <= full, "{failures}: {b}");
        }
        assert!(backoff_ms(1000, 3000, 10) <= 3000);
    }

    #[test]
    fn the_endpoint_is_a_base_unless_signal_specific() {
        let none = |_: &str| None;
        let mut o = OtelOptions::default();
        assert_eq!(traces_endpoint(&o, none), Ok(None));
        o.otlp_endpoint = Some(otlp_endpoint("http://collector:4318/").unwrap());
        assert_eq!(
            traces_endpoint(&o, none),
            Ok(Some("http://collector:4318/v1/traces".into()))
        );
        let o = OtelOptions::default();
        let env =
            |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://c:4318".to_string());
        assert_eq!(
            traces_endpoint(&o, env),
            Ok(Some("http://c:4318/v1/traces".into()))
        );
        let env = |k: &str| match k {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" => Some("http://t:1/custom".to_string()),
            _ => Some("http://c:4318".to_string()),
        };
        assert_eq!(
            traces_endpoint(&o, env),
            Ok(Some("http://t:1/custom".into()))
        );
        let bad = |_: &str| Some("ftp://x".to_string());
        assert!(traces_endpoint(&o, bad).is_err());
        assert!(otlp_endpoint("http://u:p@x").is_err());
    }
}
