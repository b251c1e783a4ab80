//! The webhook delivery worker `serve` runs (docs/api.md "Webhooks", "Delivery", "Per endpoint", "The
//! bound", "Pruning"). The outbox is the ledger's (`ledger::webhooks`): the worker only reads and updates
//! its rows, never on the write path. A delivery is one POST with a 10 s timeout; a 2xx is delivered, a
//! 410 disables the endpoint, anything else is tried again with exponential backoff and jitter until 24 h
//! after the event. Delivery is per endpoint: at most 4 in flight per endpoint, taken fairly across
//! endpoints; after 5 failures in a row an endpoint waits as a whole and is probed one delivery at a
//! time; failing 24 h it is disabled; its pending rows past `--webhook-outbox-max-pending` are dropped,
//! the oldest first. Each attempt is counted into `outcomes_webhook_deliveries_total{event,result}`
//! (docs/api.md "Metrics"). A destination refused at delivery (a private or loopback address without
//! `--webhook-allow-private`; [`super::destination`]) is tried again like any other failure (its name
//! may resolve elsewhere later), but logged once per endpoint, not per attempt. The worker also prunes
//! the outbox (finished rows after 7 days).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Args;
use ledger::webhooks::{
    EndpointFailure, OutboxItem, OutboxPrune, Webhooks, ENDPOINT_IN_FLIGHT,
    OUTBOX_MAX_PENDING_PER_ENDPOINT,
};
use rand::Rng;
use tokio_util::sync::CancellationToken;

use super::destination::{
    check_url_form, private_address, refused_destination, resolve_destination,
};
use super::signing::sign;
use crate::metrics::{DeliveryResult, Metrics};

/// How long a receiver has to answer (a 2xx within it counts as delivered).
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after the event a delivery is still tried.
pub const GIVE_UP_AFTER_MS: i64 = 24 * 3600 * 1000;
/// The longest wait between two attempts.
pub const MAX_BACKOFF_MS: i64 = 3600 * 1000;
/// How long a worker holds a row it is delivering (longer than [`DELIVERY_TIMEOUT`]).
const LEASE_MS: i64 = 60_000;
/// Deliveries in flight at once per process, all endpoints together. Each endpoint has at most
/// [`ENDPOINT_IN_FLIGHT`] of them (1 while it waits as a whole), so a slow or dead endpoint holds at
/// most that many and the others keep the rest.
const CONCURRENT_DELIVERIES: usize = 64;
/// How often the worker looks for due deliveries and stale unknowns.
const POLL: Duration = Duration::from_millis(250);
/// How often the worker prunes the outbox (the first time when it starts): finished rows older than
/// `ledger::webhooks::OUTBOX_RETENTION_MS`, in bounded batches ([`OutboxPrune::default`]).
pub const PRUNE_EVERY: Duration = Duration::from_secs(60);

#[derive(serde::Serialize)]
struct Payload<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    timestamp: String,
    data: PayloadData<'a>,
}

#[derive(serde::Serialize)]
struct PayloadData<'a> {
    session_key: &'a str,
    logical_turn_id: &'a str,
    mutation_id: &'a str,
    tool: &'a str,
    status: &'a str,
    age_secs: i64,
    /// The operation's page, a path on the dashboard.
    dashboard_path: String,
}

/// The thin JSON body of a delivery (the same bytes on every attempt).
pub fn payload(item: &OutboxItem) -> Vec<u8> {
    serde_json::to_vec(&Payload {
        kind: &item.event,
        timestamp: ledger::store::format_time(item.at),
        data: PayloadData {
            session_key: &item.session_key,
            logical_turn_id: &item.logical_turn_id,
            mutation_id: &item.mutation_id,
            tool: &item.tool,
            status: &item.status,
            age_secs: item.age_secs,
            dashboard_path: app::routes::history_href(&item.session_key, &item.mutation_id),
        },
    })
    .unwrap_or_default()
}

/// The wait before attempt `attempts + 1` after `attempts` failures: `base` doubled per failure, at most
/// [`MAX_BACKOFF_MS`], with jitter (a random point in its upper half).
pub fn backoff_ms(base_ms: i64, attempts: i64) -> i64 {
    let exp = u32::try_from(attempts.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
    let full = base_ms.saturating_mul(1i64 << exp).clamp(1, MAX_BACKOFF_MS);
    let half = full / 2;
    half + rand::rng().random_range(0..=full - half)
}

/// `serve`'s webhook flags.
#[derive(Debug, Clone, Args)]
pub struct WorkerOptions {
    /// Send `outcome.unknown_stale` for an operation still unknown this long after it settled unknown.
    #[arg(long, env = "OUTCOMES_STALE_AFTER_SECS", default_value_t = 900, value_parser = clap::value_parser!(i64).range(1..=31_536_000))]
    pub stale_after_secs: i64,
    /// Deliver to private, loopback and link-local destinations too (`webhooks add` needs it as well).
    #[arg(long, env = "OUTCOMES_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: bool,
    /// The first retry's wait (ms), doubled per failed attempt up to an hour, with jitter.
    #[arg(long, env = "OUTCOMES_WEBHOOK_RETRY_BASE_MS", default_value_t = 5_000, hide = true, value_parser = clap::value_parser!(i64).range(1..=3_600_000))]
    pub webhook_retry_base_ms: i64,
    /// The most deliveries one endpoint keeps pending in the outbox; past it the oldest are dropped
    /// (docs/api.md "Webhooks", "The bound").
    #[arg(long, env = "OUTCOMES_WEBHOOK_OUTBOX_MAX_PENDING", default_value_t = OUTBOX_MAX_PENDING_PER_ENDPOINT, value_parser = clap::value_parser!(i64).range(1..=10_000_000))]
    pub webhook_outbox_max_pending: i64,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            stale_after_secs: 900,
            webhook_allow_private: false,
            webhook_retry_base_ms: 5_000,
            webhook_outbox_max_pending: OUTBOX_MAX_PENDING_PER_ENDPOINT,
        }
    }
}

/// What one attempt came to.
enum Attempt {
    Delivered,
    Gone,
    Failed(String),
    /// The destination resolved to a private, loopback or link-local address without
    /// `--webhook-allow-private`: nothing was sent (tried again like a failure, logged once).
    Refused(String),
}

/// The endpoints whose refused destination ([`Attempt::Refused`]) this process has logged, so that it
/// is logged once per endpoint, not once per attempt: again only after an attempt of that endpoint
/// that was not refused (its name resolved to a public address in between).
#[derive(Debug, Default)]
struct RefusalLog(Mutex<HashSet<i64>>);

impl RefusalLog {
    /// Whether this refusal of `endpoint` is to be logged (the first since the last attempt that was
    /// not refused); it is remembered.
    fn first(&self, endpoint: i64) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(endpoint)
    }

    /// An attempt of `endpoint` that was not refused: its next refusal is logged again.
    fn clear(&self, endpoint: i64) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&endpoint);
    }
}

/// What the delivery tasks of one worker share.
struct Worker {
    options: WorkerOptions,
    metrics: Arc<Metrics>,
    refused: RefusalLog,
    /// Deliveries in flight per endpoint id (the cap [`ENDPOINT_IN_FLIGHT`] is applied by
    /// [`Webhooks::take_due_per_endpoint`] with these counts).
    in_flight: Mutex<HashMap<i64, i64>>,
}

impl Worker {
    /// The deliveries in flight per endpoint now.
    fn in_flight(&self) -> HashMap<i64, i64> {
        self.in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// One more (`+1`) or one less (`-1`) delivery of `endpoint` in flight.
    fn count_in_flight(&self, endpoint: i64, by: i64) {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(endpoint).or_insert(0);
        *n += by;
        if *n <= 0 {
            map.remove(&endpoint);
        }
    }
}

async fn attempt(item: &OutboxItem, allow_private: bool) -> Attempt {
    let url = match check_url_form(&item.url) {
        Ok(u) => u,
        Err(e) => return Attempt::Failed(e),
    };
    let addrs = match resolve_destination(&url).await {
        Ok(a) => a,
        Err(e) => return Attempt::Failed(e),
    };
    if let Some(bad) = private_address(&addrs, allow_private) {
        return Attempt::Refused(refused_destination(bad));
    }
    let mut client = reqwest::Client::builder()
        .timeout(DELIVERY_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("outcomes-webhooks/", env!("CARGO_PKG_VERSION")));
    if let Some(url::Host::Domain(name)) = url.host() {
        client = client.resolve_to_addrs(name, &addrs);
    }
    let client = match client.build() {
        Ok(c) => c,
        Err(e) => return Attempt::Failed(format!("client: {e}")),
    };
    let body = payload(item);
    let ts = time::OffsetDateTime::now_utc().unix_timestamp();
    let signature = match sign(&item.secret, &item.msg_id, ts, &body) {
        Ok(s) => s,
        Err(e) => return Attempt::Failed(e),
    };
    let sent = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &item.msg_id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(r) if r.status().is_success() => Attempt::Delivered,
        Ok(r) if r.status() == reqwest::StatusCode::GONE => Attempt::Gone,
        Ok(r) => Attempt::Failed(format!("HTTP {}", r.status().as_u16())),
        Err(e) if e.is_timeout() => Attempt::Failed("no answer within 10 s".into()),
        Err(e) => Attempt::Failed(format!("not sent: {}", e.without_url())),
    }
}

/// When a failed attempt of `item` is tried again: after [`backoff_ms`] from now, or `None` (given up)
/// when that would be more than [`GIVE_UP_AFTER_MS`] after the event.
fn next_attempt(webhooks: &Webhooks, item: &OutboxItem, options: &WorkerOptions) -> Option<i64> {
    let next = webhooks.now_ms().saturating_add(backoff_ms(
        options.webhook_retry_base_ms,
        item.attempts.saturating_add(1),
    ));
    (next <= item.at.saturating_add(GIVE_UP_AFTER_MS)).then_some(next)
}

/// Records a failed attempt (tried again at `next`, or given up) and its endpoint's failure
/// ([`Webhooks::endpoint_failed`]: after [`ledger::webhooks::ENDPOINT_BACKOFF_AFTER`] failures in a row
/// the endpoint waits as a whole, [`backoff_ms`] from the retry base; failing 24 h, it is disabled):
/// what the attempt counts as (`gave_up` when no attempt is left for the row, its endpoint disabled
/// included), and the record.
async fn failed(
    webhooks: &Webhooks,
    item: &OutboxItem,
    next: Option<i64>,
    why: &str,
    options: &WorkerOptions,
) -> (DeliveryResult, Result<(), ledger::LedgerError>) {
    let recorded = webhooks.attempt_failed(item.id, next, why).await;
    let base = options.webhook_retry_base_ms;
    let endpoint = match webhooks
        .endpoint_failed(item.endpoint_id, |n| backoff_ms(base, n))
        .await
    {
        Ok(e) => e,
        Err(e) => return (DeliveryResult::Failed, recorded.and(Err(e))),
    };
    match endpoint {
        EndpointFailure::Disabled { since } => tracing::warn!(
            endpoint = item.endpoint_id,
            failing_since = %ledger::store::format_time(since),
            "webhook endpoint failing for 24 h: disabled, its pending deliveries given up"
        ),
        EndpointFailure::Blocked { until, .. } => tracing::debug!(
            endpoint = item.endpoint_id,
            until = %ledger::store::format_time(until),
            "webhook endpoint failing: its deliveries wait"
        ),
        EndpointFailure::Failing { .. } | EndpointFailure::Gone => {}
    }
    let counted = match (next, endpoint) {
        (None, _) | (_, EndpointFailure::Disabled { .. }) => DeliveryResult::GaveUp,
        _ => DeliveryResult::Failed,
    };
    (counted, recorded)
}

/// Makes one attempt of `item`, records what it came to in the outbox and counts it
/// ([`DeliveryResult`]).
async fn deliver(webhooks: Webhooks, item: OutboxItem, worker: Arc<Worker>) {
    let result = attempt(&item, worker.options.webhook_allow_private).await;
    let endpoint = item.endpoint_id;
    if !matches!(result, Attempt::Refused(_)) {
        worker.refused.clear(endpoint);
    }
    let (counted, recorded) = match result {
        Attempt::Delivered => {
            tracing::info!(endpoint, webhook_id = %item.msg_id, event = %item.event, "webhook delivered");
            (DeliveryResult::Delivered, webhooks.delivered(item.id).await)
        }
        Attempt::Gone => {
            tracing::warn!(endpoint, "webhook endpoint answered 410 Gone: disabled");
            let recorded = webhooks
                .attempt_failed(item.id, None, "HTTP 410")
                .await
                .and(webhooks.disable_endpoint(endpoint).await);
            (DeliveryResult::Gone, recorded)
        }
        Attempt::Failed(why) => {
            let next = next_attempt(&webhooks, &item, &worker.options);
            tracing::warn!(endpoint, webhook_id = %item.msg_id, error = %why, given_up = next.is_none(), "webhook not delivered");
            failed(&webhooks, &item, next, &why, &worker.options).await
        }
        Attempt::Refused(why) => {
            let next = next_attempt(&webhooks, &item, &worker.options);
            if worker.refused.first(endpoint) {
                tracing::warn!(
                    endpoint,
                    error = %why,
                    "webhook destination refused: nothing is sent to it; its deliveries are tried again \
                     (the name may resolve elsewhere) until 24 h after each event, then given up; logged \
                     once for this endpoint until an attempt is not refused"
                );
            } else {
                tracing::debug!(endpoint, webhook_id = %item.msg_id, error = %why, given_up = next.is_none(), "webhook destination refused again");
            }
            failed(&webhooks, &item, next, &why, &worker.options).await
        }
    };
    worker.metrics.webhook_delivery(&item.event, counted);
    if let Err(e) = recorded {
        // The lease runs out and the row is taken again.
        tracing::warn!(error = %e, "webhook outcome not recorded");
    }
}

/// The worker's pass on each [`POLL`] tick: prunes the outbox every [`PRUNE_EVERY`] (the first time at
/// once), queues stale alerts, and drops each endpoint's oldest pending rows past the bound, counting
/// them. Failures are logged; the next tick tries again.
async fn upkeep(webhooks: &Webhooks, worker: &Worker, pruned_at: &mut Option<Instant>) {
    if pruned_at.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
        *pruned_at = Some(Instant::now());
        match webhooks.prune_outbox(OutboxPrune::default()).await {
            Ok(0) => {}
            Ok(rows) => tracing::debug!(rows, "webhook outbox pruned"),
            Err(e) => tracing::warn!(error = %e, "webhook outbox not pruned"),
        }
    }
    if let Err(e) = webhooks
        .enqueue_stale(worker.options.stale_after_secs)
        .await
    {
        tracing::warn!(error = %e, "stale webhook alerts not queued");
    }
    match webhooks
        .drop_over_bound(worker.options.webhook_outbox_max_pending)
        .await
    {
        Ok(dropped) => {
            for (endpoint, rows) in dropped {
                tracing::warn!(
                    endpoint,
                    rows,
                    bound = worker.options.webhook_outbox_max_pending,
                    "webhook outbox over its bound: the endpoint's oldest pending deliveries dropped"
                );
                worker.metrics.webhook_outbox_dropped(endpoint, rows);
            }
        }
        Err(e) => tracing::warn!(error = %e, "webhook outbox bound not applied"),
    }
}

/// The delivery worker of `serve`: every [`POLL`] queues stale alerts, drops each endpoint's oldest
/// pending rows past `--webhook-outbox-max-pending` ([`Webhooks::drop_over_bound`], counted into
/// `outcomes_webhook_outbox_dropped_total{endpoint}`) and takes due deliveries fairly across endpoints
/// (a lease each; on Postgres `FOR UPDATE SKIP LOCKED`; [`Webhooks::take_due_per_endpoint`]), each
/// delivered on its own task: at most [`ENDPOINT_IN_FLIGHT`] per endpoint (1 while a failing endpoint
/// waits) and [`CONCURRENT_DELIVERIES`] in all, so a slow or dead receiver delays only its own
/// deliveries and never a write; each attempt is counted into `metrics`
/// (`outcomes_webhook_deliveries_total`). docs/api.md "Webhooks", "Per endpoint". Every [`PRUNE_EVERY`], the
/// first time at once, it prunes the outbox ([`Webhooks::prune_outbox`]: finished rows 7 days old, in
/// batches of 500, at most 10,000 a time; docs/api.md "Webhooks", "Pruning").
pub async fn run_worker(
    webhooks: Webhooks,
    options: WorkerOptions,
    metrics: Arc<Metrics>,
    stop: CancellationToken,
) {
    let worker = Arc::new(Worker {
        options,
        metrics,
        refused: RefusalLog::default(),
        in_flight: Mutex::new(HashMap::new()),
    });
    let permits = Arc::new(tokio::sync::Semaphore::new(CONCURRENT_DELIVERIES));
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pruned_at: Option<Instant> = None;
    // A delivery that ends wakes the loop to take the next due rows at once (only that: no stale or
    // bound pass), so an endpoint's throughput is not one poll's worth of rows per [`POLL`].
    let done = Arc::new(tokio::sync::Notify::new());
    loop {
        let ticked = tokio::select! {
            _ = stop.cancelled() => break,
            _ = tick.tick() => true,
            _ = done.notified() => false,
        };
        if ticked {
            upkeep(&webhooks, &worker, &mut pruned_at).await;
        }
        let free = i64::try_from(permits.available_permits()).unwrap_or(0);
        if free == 0 {
            continue;
        }
        let items = match webhooks
            .take_due_per_endpoint(free, LEASE_MS, ENDPOINT_IN_FLIGHT, &worker.in_flight())
            .await
        {
            Ok(items) => items,
            Err(e) => {
                tracing::warn!(error = %e, "webhook outbox not read");
                continue;
            }
        };
        for item in items {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            let (w, o) = (webhooks.clone(), worker.clone());
            let endpoint = item.endpoint_id;
            o.count_in_flight(endpoint, 1);
            let done = done.clone();
            tokio::spawn(async move {
                deliver(w, item, o.clone()).await;
                o.count_in_flight(endpoint, -1);
                drop(permit);
                done.notify_one();
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::signing::new_secret;

    /// A first attempt at an `outcome.unknown` for `url`, with a fresh secret.
    fn unknown_to(url: String) -> OutboxItem {
        OutboxItem {
            id: 1,
            endpoint_id: 1,
            url,
            secret: new_secret(),
            event: "outcome.unknown".into(),
            msg_id: "msg_1".into(),
            session_key: "s".into(),
            logical_turn_id: "t".into(),
            mutation_id: "m".into(),
            tool: "x".into(),
            status: "outcome_unknown".into(),
            age_secs: 0,
            at: 0,
            attempts: 0,
        }
    }

    /// The 6to4 address of 127.0.0.1 is refused at delivery too, and nothing is sent.
    #[tokio::test]
    async fn a_6to4_loopback_destination_is_refused_at_delivery() {
        let item = unknown_to("http://[2002:7f00:1::]:9/hook".into());
        match attempt(&item, false).await {
            Attempt::Refused(why) => assert_eq!(
                why,
                "the destination is a private, loopback or link-local address (2002:7f00:1::); pass \
                 --webhook-allow-private to allow it"
            ),
            _ => panic!("refused"),
        }
    }

    /// An `https://` destination is spoken to in TLS (the client has rustls): the receiver's first byte
    /// is a TLS handshake record's.
    #[tokio::test]
    async fn https_destinations_get_tls() {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let first = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut b = [0u8; 1];
            sock.read_exact(&mut b).await.unwrap();
            b[0]
        });
        let item = unknown_to(format!("https://127.0.0.1:{port}/hook"));
        let sent = tokio::spawn(async move { attempt(&item, true).await });
        assert_eq!(first.await.unwrap(), 0x16, "a TLS handshake record");
        assert!(matches!(sent.await.unwrap(), Attempt::Failed(_)));
    }

    /// A refused destination is logged once per endpoint, and again only after an attempt of that
    /// endpoint that was not refused.
    #[test]
    fn a_refused_destination_is_logged_once_per_endpoint() {
        let log = RefusalLog::default();
        assert!(log.first(1));
        assert!(!log.first(1));
        assert!(!log.first(1));
        assert!(log.first(2));
        log.clear(1);
        assert!(log.first(1));
        assert!(!log.first(1));
        assert!(!log.first(2));
    }

    /// Without `--webhook-allow-private` a loopback destination is refused at delivery, naming the
    /// address, and nothing connects to it.
    #[tokio::test]
    async fn a_private_destination_is_refused_at_delivery_without_connecting() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let item = unknown_to(format!("http://127.0.0.1:{port}/hook"));
        match attempt(&item, false).await {
            Attempt::Refused(why) => assert_eq!(
                why,
                "the destination is a private, loopback or link-local address (127.0.0.1); pass \
                 --webhook-allow-private to allow it"
            ),
            _ => panic!("refused"),
        }
        let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        assert!(accepted.is_err(), "nothing connected");
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_an_hour() {
        for (attempts, full) in [(1, 1000), (2, 2000), (3, 4000), (40, MAX_BACKOFF_MS)] {
            let b = backoff_ms(1000, attempts);
            assert!(b >= full / 2 && b <= full, "{attempts}: {b}");
        }
        let secret = new_secret();
        assert!(
            secret.starts_with("whsec_") && secret.len() == 6 + 32,
            "{secret}"
        );
    }
}
