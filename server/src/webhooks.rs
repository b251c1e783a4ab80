//! Webhooks (docs/api.md "Webhooks"): the `outcomes webhooks add|list|remove` commands, the destination
//! rule (no credentials in the URL; no private, loopback or link-local address unless
//! `--webhook-allow-private`), Standard Webhooks signing, and the delivery worker `serve` runs.
//!
//! The outbox is the ledger's (`ledger::webhooks`): its rows are written in the transaction of the change,
//! so the worker here only reads and updates them, never on the write path. A delivery is one POST with a
//! 10 s timeout; a 2xx is delivered, a 410 disables the endpoint, anything else is tried again with
//! exponential backoff and jitter until 24 h after the event. Delivery is per endpoint (docs/api.md
//! "Webhooks", "Per endpoint"): at most 4 in flight per endpoint, taken fairly across endpoints; after 5
//! failures in a row an endpoint waits as a whole and is probed one delivery at a time; failing 24 h it
//! is disabled; its pending rows past `--webhook-outbox-max-pending` are dropped, the oldest first. Each attempt is counted into
//! `outcomes_webhook_deliveries_total{event,result}` (docs/api.md "Metrics"). A destination refused at
//! delivery (a private or loopback address without `--webhook-allow-private`) is tried again like any
//! other failure (its name may resolve elsewhere later), but logged once per endpoint, not per attempt.
//! The worker also prunes the outbox (finished rows after 7 days; docs/api.md "Webhooks", "Pruning").

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use clap::{Args, Subcommand};
use hmac::{Hmac, Mac};
use ledger::webhooks::{
    EndpointFailure, OutboxItem, OutboxPrune, Webhooks, ENDPOINT_IN_FLIGHT,
    OUTBOX_MAX_PENDING_PER_ENDPOINT,
};
use ledger::{Ledger, LedgerOptions};
use rand::{Rng, RngCore};
use sha2::Sha256;
use tokio_util::sync::CancellationToken;

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

/// `outcomes webhooks`.
#[derive(Debug, Clone, Args)]
pub struct WebhooksArgs {
    #[command(subcommand)]
    pub command: WebhooksCommand,
    /// The ledger: a SQLite file path or `sqlite:` URL, or a `postgres://` URL (docs/ledger.md
    /// "Backends"). Default: `<data dir>/ledger.sqlite`.
    #[arg(long, env = "OUTCOMES_DATABASE", global = true)]
    pub database: Option<String>,
    /// Directory of the default database.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data", global = true)]
    pub data_dir: PathBuf,
}

/// `outcomes webhooks …`.
#[derive(Debug, Clone, Subcommand)]
pub enum WebhooksCommand {
    /// Add an endpoint; prints its signing secret (`whsec_…`) alone on the last line.
    Add {
        /// Where deliveries are POSTed: an `http://` or `https://` URL without credentials.
        url: String,
        /// The events it takes, comma-separated.
        #[arg(
            long,
            default_value = "outcome.unknown,outcome.unknown_stale,outcome.resolved"
        )]
        events: String,
        /// Allow a private, loopback or link-local destination (`serve` needs the flag too).
        #[arg(long, env = "OUTCOMES_WEBHOOK_ALLOW_PRIVATE")]
        webhook_allow_private: bool,
    },
    /// Remove an endpoint with its pending deliveries.
    Remove { id: i64 },
    /// List endpoints (never their secrets).
    List,
}

/// A new signing secret: `whsec_` then 24 random bytes, base64.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// Whether `ip` may receive deliveries without `--webhook-allow-private`: not loopback, private (RFC 1918,
/// unique local), link-local, shared (100.64/10), unspecified, broadcast, multicast, reserved,
/// benchmarking, documentation, or another special-purpose range that is not global (discard, ORCHID,
/// SRv6, the 6to4 relay anycast). An IPv6 address that embeds an IPv4 address is judged by the IPv4 address it embeds
/// ([`embedded_v4`]: IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64, 6to4, Teredo), every one of them
/// public, so `::1` (IPv4-compatible 0.0.0.1) and `::` stay refused; docs/api.md "Webhooks",
/// "Destinations".
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(embedded) = embedded_v4(v6) {
                return embedded.iter().all(|v4| is_public_v4(*v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation 2001:db8::/32
                || (s[0] == 0x3fff && (s[1] & 0xf000) == 0) // documentation 3fff::/20
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
                || (s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0) // benchmarking 2001:2::/48
                || (s[0] == 0x2001 && matches!(s[1] & 0xfff0, 0x0010 | 0x0020)) // ORCHID(v2)
                || s[0] == 0x5f00) // SRv6 segment identifiers 5f00::/16
        }
    }
}

/// The IPv4 addresses an IPv6 address embeds, by its form (`None` for any other IPv6 address); a
/// connection to it reaches (or is relayed to) one of them:
/// - IPv4-mapped `::ffff:0:0/96` and IPv4-translated `::ffff:0:0:0/96` (RFC 2765): the last 32 bits;
/// - IPv4-compatible `::/96` (deprecated, RFC 4291): the last 32 bits (`::1` is 0.0.0.1, `::` 0.0.0.0);
/// - NAT64 `64:ff9b::/96` (RFC 6052; the rest of `64:ff9b::/32` alike): the last 32 bits; the local-use
///   `64:ff9b:1::/48` (RFC 8215): the last 32 bits when bits 48..96 are zero (a /96 translator prefix),
///   else the address of each RFC 6052 layout a translator's prefix inside it may use (/48, /56, /64,
///   /96), so such an address passes only when every reading of it is public;
/// - 6to4 `2002::/16` (RFC 3056): bits 16..48;
/// - Teredo `2001:0::/32` (RFC 4380): the server in bits 32..64, and the client, the last 32 bits
///   inverted.
pub fn embedded_v4(v6: Ipv6Addr) -> Option<Vec<Ipv4Addr>> {
    let s = v6.segments();
    let o = v6.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match (s[0], s[1]) {
        (0, 0) if s[2..5] == [0, 0, 0] && (s[5] == 0 || s[5] == 0xffff) => Some(vec![last]),
        (0, 0) if s[2..4] == [0, 0] && s[4] == 0xffff && s[5] == 0 => Some(vec![last]),
        (0x64, 0xff9b) if s[2] == 1 && o[6..12] == [0; 6] => Some(vec![last]),
        (0x64, 0xff9b) if s[2] == 1 => Some(vec![
            Ipv4Addr::new(o[6], o[7], o[9], o[10]),
            Ipv4Addr::new(o[7], o[9], o[10], o[11]),
            Ipv4Addr::new(o[9], o[10], o[11], o[12]),
            last,
        ]),
        (0x64, 0xff9b) => Some(vec![last]),
        (0x2002, _) => Some(vec![Ipv4Addr::new(o[2], o[3], o[4], o[5])]),
        (0x2001, 0) => Some(vec![
            Ipv4Addr::new(o[4], o[5], o[6], o[7]),
            Ipv4Addr::from(!u32::from(last)),
        ]),
        _ => None,
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0
        || o[0] >= 240
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared 100.64/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0/24
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking 198.18/15
        || (o[0] == 192 && o[1] == 88 && o[2] == 99)) // deprecated 6to4 relay anycast 192.88.99/24
}

/// Checks a destination URL's form (no host resolution): `http` or `https`, a host, no user or password.
/// The error names the reason.
pub fn check_url_form(raw: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(raw).map_err(|e| format!("{raw:?} is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{raw:?}: the scheme must be http or https, not {}",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "the URL carries credentials (a user or password before the host): they are refused; \
             the receiver verifies the signature instead"
                .into(),
        );
    }
    if url.host().is_none() {
        return Err(format!("{raw:?} has no host"));
    }
    Ok(url)
}

/// Resolves the URL's host and checks every address: all must be public unless `allow_private`. Answers
/// the addresses (a delivery connects only to them, so a name cannot resolve elsewhere in between).
pub async fn check_destination(
    url: &url::Url,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, String> {
    let addrs = resolve_destination(url).await?;
    match private_address(&addrs, allow_private) {
        Some(bad) => Err(refused_destination(bad)),
        None => Ok(addrs),
    }
}

/// The reason a destination at `ip` (not public) is refused, naming the flag that allows it.
fn refused_destination(ip: IpAddr) -> String {
    format!(
        "the destination is a private, loopback or link-local address ({ip}); pass \
         --webhook-allow-private to allow it"
    )
}

/// The first address of `addrs` that is not public ([`is_public`]), unless `allow_private`.
fn private_address(addrs: &[SocketAddr], allow_private: bool) -> Option<IpAddr> {
    if allow_private {
        return None;
    }
    addrs.iter().map(SocketAddr::ip).find(|ip| !is_public(*ip))
}

/// The URL's addresses: its IP literal, or its host name resolved (at least one address, else the
/// error names why).
async fn resolve_destination(url: &url::Url) -> Result<Vec<SocketAddr>, String> {
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(url::Host::Domain(name)) => tokio::net::lookup_host((name, port))
            .await
            .map_err(|e| format!("the host {name} does not resolve ({e})"))?
            .collect(),
        None => return Err("the URL has no host".into()),
    };
    if addrs.is_empty() {
        return Err("the host resolves to no address".into());
    }
    Ok(addrs)
}

/// The Standard Webhooks signature of one attempt: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
/// keyed with the base64-decoded part of the `whsec_` secret.
pub fn sign(secret: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> Result<String, String> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .map_err(|_| "the stored secret is not base64".to_owned())?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|e| e.to_string())?;
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    ))
}

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

/// Runs `outcomes webhooks …`: 0 done, 2 refused input (nothing changed), 1 any other failure.
pub async fn main(args: WebhooksArgs) -> ExitCode {
    // Input is checked before the database is opened.
    let checked = match &args.command {
        WebhooksCommand::Add {
            url,
            events,
            webhook_allow_private,
        } => {
            let checked = async {
                let parsed = check_url_form(url)?;
                check_destination(&parsed, *webhook_allow_private).await?;
                ledger::webhooks::check_events(events).map_err(|e| e.to_string())
            };
            match checked.await {
                Ok(events) => Some(events),
                Err(e) => {
                    eprintln!("outcomes: webhooks add refused: {e}");
                    return ExitCode::from(2);
                }
            }
        }
        _ => None,
    };
    match run(args, checked).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outcomes: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What `webhooks list` says of an endpoint after its creation time: nothing while it delivers;
/// `\tfailing since <time> (<n> failed attempts)`; `\tdisabled <time> (410)`, or
/// `\tdisabled <time> (failing since <time>)` when 24 h of failures disabled it (docs/api.md
/// "Webhooks").
pub fn endpoint_state(e: &ledger::webhooks::WebhookEndpoint) -> String {
    let t = ledger::store::format_time;
    match (e.disabled_at, e.disabled_reason.as_deref(), e.failing_since) {
        (Some(at), Some("failing"), Some(since)) => {
            format!("\tdisabled {} (failing since {})", t(at), t(since))
        }
        (Some(at), _, _) => format!("\tdisabled {} (410)", t(at)),
        (None, _, Some(since)) => format!(
            "\tfailing since {} ({} failed attempts)",
            t(since),
            e.consecutive_failures
        ),
        (None, _, None) => String::new(),
    }
}

async fn run(args: WebhooksArgs, events: Option<String>) -> Result<(), Box<dyn std::error::Error>> {
    let database = crate::database::database_or_default(args.database.as_deref(), &args.data_dir);
    let ledger = Ledger::open(&database, LedgerOptions::default()).await?;
    let webhooks = ledger.webhooks();
    let result: Result<(), Box<dyn std::error::Error>> = match &args.command {
        WebhooksCommand::Add { url, .. } => {
            let secret = new_secret();
            let events = events.unwrap_or_default();
            let id = webhooks.add_endpoint(url, &events, &secret).await?;
            println!(
                "webhook endpoint {id} added ({events}); its signing secret (shown this once):"
            );
            println!("{secret}");
            Ok(())
        }
        WebhooksCommand::Remove { id } => {
            if webhooks.remove_endpoint(*id).await? {
                println!("webhook endpoint {id} removed, with its pending deliveries");
                Ok(())
            } else {
                Err(format!("no webhook endpoint {id}").into())
            }
        }
        WebhooksCommand::List => {
            let endpoints = webhooks.list_endpoints().await?;
            if endpoints.is_empty() {
                println!("no webhook endpoints; add one with `outcomes webhooks add URL`");
            }
            for e in endpoints {
                println!(
                    "{}\t{}\t{}\tadded {}{}",
                    e.id,
                    e.url,
                    e.events,
                    ledger::store::format_time(e.created_at),
                    endpoint_state(&e)
                );
            }
            Ok(())
        }
    };
    ledger.close().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn private_and_public_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            // Special-purpose ranges that are not global (IANA registry), found by a fresh tester.
            "3fff::1",
            "100::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "5f00::1",
            "192.88.99.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    /// Every IPv6 form that embeds an IPv4 address is judged by the address it embeds: wrapping
    /// 127.0.0.1 or 10.1.2.3 it is refused, wrapping 8.8.8.8 it passes (Teredo: both its server and its
    /// client, the last 32 bits inverted, must be public).
    #[test]
    fn ipv6_forms_embedding_ipv4_are_judged_by_the_embedded_address() {
        // (form, wrapping 127.0.0.1, wrapping 10.1.2.3, wrapping 8.8.8.8)
        let forms = [
            (
                "IPv4-mapped",
                "::ffff:127.0.0.1",
                "::ffff:10.1.2.3",
                "::ffff:8.8.8.8",
            ),
            (
                "IPv4-translated",
                "::ffff:0:127.0.0.1",
                "::ffff:0:10.1.2.3",
                "::ffff:0:8.8.8.8",
            ),
            ("IPv4-compatible", "::127.0.0.1", "::10.1.2.3", "::8.8.8.8"),
            (
                "NAT64",
                "64:ff9b::127.0.0.1",
                "64:ff9b::10.1.2.3",
                "64:ff9b::8.8.8.8",
            ),
            (
                "NAT64 local-use",
                "64:ff9b:1::127.0.0.1",
                "64:ff9b:1::10.1.2.3",
                "64:ff9b:1::8.8.8.8",
            ),
            // 6to4: the IPv4 address in bits 16..48 (7f00:0001 is 127.0.0.1).
            (
                "6to4",
                "2002:7f00:1::",
                "2002:a01:203::1",
                "2002:808:808::1",
            ),
            // Teredo: server in bits 32..64, client the last 32 bits inverted (80ff:fffe is
            // 127.0.0.1, f5fe:fdfc is 10.1.2.3, f7f7:f7f7 is 8.8.8.8).
            (
                "Teredo server",
                "2001:0:7f00:1::f7f7:f7f7",
                "2001:0:a01:203::f7f7:f7f7",
                "2001:0:808:808::f7f7:f7f7",
            ),
            (
                "Teredo client",
                "2001:0:808:808::80ff:fffe",
                "2001:0:808:808::f5fe:fdfc",
                "2001:0:808:808::f7f7:f7f7",
            ),
        ];
        for (form, loopback, private, public) in forms {
            for ip in [loopback, private] {
                assert!(!is_public(ip.parse().unwrap()), "{form} {ip}");
            }
            assert!(is_public(public.parse().unwrap()), "{form} {public}");
        }
        // `::1` and `::` embed 0.0.0.1 and 0.0.0.0: refused.
        assert!(!is_public("::1".parse().unwrap()));
        assert!(!is_public("::".parse().unwrap()));
        // A local-use NAT64 address in another layout than /96 passes only if every reading is public:
        // the /48 layout of 127.0.0.1 with 8.8.8.8 in the last 32 bits is refused.
        assert!(!is_public("64:ff9b:1:7f00:0:1:808:808".parse().unwrap()));
        // Not an embedding form: judged as IPv6.
        assert_eq!(embedded_v4("2606:4700::1111".parse().unwrap()), None);
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

    #[tokio::test]
    async fn destinations_are_refused_naming_the_reason() {
        let e = check_url_form("not a url").unwrap_err();
        assert!(e.contains("not a URL"), "{e}");
        let e = check_url_form("https://user:pw@example.com/h").unwrap_err();
        assert!(e.contains("credentials"), "{e}");
        let e = check_url_form("ftp://example.com/h").unwrap_err();
        assert!(e.contains("scheme"), "{e}");
        let u = check_url_form("http://10.0.0.7:8080/h").unwrap();
        let e = check_destination(&u, false).await.unwrap_err();
        assert!(e.contains("private") && e.contains("10.0.0.7"), "{e}");
        assert!(check_destination(&u, true).await.is_ok());
        let u = check_url_form("http://localhost:9/h").unwrap();
        assert!(check_destination(&u, false).await.is_err());
        let u = check_url_form("http://[::1]:9/h").unwrap();
        assert!(check_destination(&u, false).await.is_err());
        let u = check_url_form("https://93.184.215.14/h").unwrap();
        assert!(check_destination(&u, false).await.is_ok());
    }

    #[test]
    fn signatures_follow_standard_webhooks() {
        // The example of the Standard Webhooks specification (spec/standard-webhooks.md).
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).unwrap();
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
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
