//! Webhooks as stored in the ledger database (docs/api.md "Webhooks"): the endpoints `outcomes webhooks`
//! manages, and the durable outbox of deliveries. The outbox rows of `outcome.unknown` and
//! `outcome.resolved` are written by a trigger on `history`, in the transaction of the change itself
//! (migration `0010_webhooks.sql`, Postgres `0004_webhooks.sql`); `outcome.unknown_stale` rows by
//! [`Webhooks::enqueue_stale`]. Delivery (signing, HTTP) is the server's; here are the rows a worker takes
//! ([`Webhooks::take_due`]: on Postgres `FOR UPDATE SKIP LOCKED` and a lease, so of several instances one
//! delivers each row) and what it records afterwards; the outbox's backlog for `GET /metrics`
//! ([`Webhooks::outbox_gauges`]); and its pruning ([`Webhooks::prune_outbox`], docs/api.md "Webhooks", "Pruning").

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::LedgerError;
use crate::store::{on_read, on_write, Dialect, Inner};

/// The event types, as `--events` names them.
pub const EVENTS: [&str; 3] = [
    "outcome.unknown",
    "outcome.unknown_stale",
    "outcome.resolved",
];

/// The most operations [`Webhooks::alerted_at`] reads at once: the support queue's largest page.
pub const ALERTED_MAX_OPERATIONS: usize = 1000;

/// How long a finished outbox row (delivered, or given up) is kept before [`Webhooks::prune_outbox`]
/// deletes it, in ms: 7 days after it was delivered or given up (docs/api.md "Webhooks", "Pruning").
pub const OUTBOX_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// Per-endpoint delivery (docs/api.md "Webhooks", "Per endpoint"): how many deliveries of one endpoint a
/// worker has in flight at once, at most.
pub const ENDPOINT_IN_FLIGHT: i64 = 4;
/// After this many consecutive failed attempts an endpoint waits as a whole (its `blocked_until`: none of
/// its rows is taken before then) and has at most one delivery in flight (a probe) until one succeeds.
pub const ENDPOINT_BACKOFF_AFTER: i64 = 5;
/// An endpoint with no delivery for this long since its first failure (ms) is disabled at its next failed
/// attempt: 24 h.
pub const DISABLE_FAILING_AFTER_MS: i64 = 24 * 3600 * 1000;
/// The most pending rows one endpoint keeps in the outbox by default; past it the oldest are dropped
/// ([`Webhooks::drop_over_bound`]).
pub const OUTBOX_MAX_PENDING_PER_ENDPOINT: i64 = 10_000;
/// The `last_error` of a row dropped by the bound.
pub const DROPPED_ERROR: &str = "dropped: the endpoint's outbox was over its bound";

/// What a failed attempt made of its endpoint ([`Webhooks::endpoint_failed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointFailure {
    /// Failing since then (ms since the epoch); its rows are tried on their own schedule.
    Failing { since: i64 },
    /// Failing since `since`; none of its rows is taken before `until` (ms since the epoch).
    Blocked { since: i64, until: i64 },
    /// Failing since `since`, for [`DISABLE_FAILING_AFTER_MS`] or more: disabled now, its pending rows
    /// given up.
    Disabled { since: i64 },
    /// The endpoint is removed or disabled already: nothing changed.
    Gone,
}

/// What [`Webhooks::prune_outbox`] deletes in one call, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxPrune {
    /// A finished row is deleted this long (ms) after it was delivered or given up.
    pub retention_ms: i64,
    /// Rows deleted per statement (the write lock is held for one statement at a time).
    pub batch: i64,
    /// Statements at most per call; what is left waits for the next call.
    pub max_batches: u32,
}

impl Default for OutboxPrune {
    /// [`OUTBOX_RETENTION_MS`], batches of 500, at most 20 of them (10,000 rows) per call.
    fn default() -> Self {
        OutboxPrune {
            retention_ms: OUTBOX_RETENTION_MS,
            batch: 500,
            max_batches: 20,
        }
    }
}

/// The outbox's backlog at one time ([`Webhooks::outbox_gauges`]; docs/api.md "Metrics").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboxGauges {
    /// Rows neither delivered nor given up (still being tried, a leased one included).
    pub pending: u64,
    /// Whole seconds since the event of the oldest pending row happened (its `at`), `None` when
    /// nothing is pending.
    pub oldest_pending_age_secs: Option<u64>,
}

impl OutboxGauges {
    /// From an outbox's `COUNT(*)` and `MIN(at)` of its pending rows (ms since the epoch), at `now_ms`
    /// by the ledger's clock: whole seconds, never negative.
    pub(crate) fn read(now_ms: i64, pending: i64, oldest_at: Option<i64>) -> Self {
        OutboxGauges {
            pending: u64::try_from(pending).unwrap_or(0),
            oldest_pending_age_secs: oldest_at
                .map(|at| u64::try_from(now_ms.saturating_sub(at) / 1000).unwrap_or(0)),
        }
    }
}

/// The outbox rows [`Webhooks::prune_outbox`] may delete, at most `$2` of them, finished at or before
/// `$1` (ms since the epoch): delivered or given up, found through the index `webhook_outbox_done`
/// (the condition on both columns is the index's own, so SQLite uses it), except a delivered
/// `outcome.unknown` / `outcome.unknown_stale` row about the current unknown outcome of an entry still
/// `outcome_unknown` (at or after its latest unknown settlement: the rows [`Webhooks::alerted_at`]
/// reads). Pending rows are never among them.
const PRUNABLE: &str = "\
    SELECT o.id FROM webhook_outbox o \
    WHERE (o.delivered_at IS NOT NULL OR o.failed_at IS NOT NULL) \
      AND COALESCE(o.delivered_at, o.failed_at) <= $1 \
      AND NOT (o.delivered_at IS NOT NULL \
          AND o.event IN ('outcome.unknown', 'outcome.unknown_stale') \
          AND EXISTS (SELECT 1 FROM entries e WHERE e.seq = o.entry_seq AND e.status = 'outcome_unknown' \
              AND o.at >= COALESCE((SELECT MAX(h.at) FROM history h WHERE h.entry_seq = e.seq \
                  AND h.kind = 'settlement' AND h.ledger_status = 'outcome_unknown'), 0))) \
    LIMIT $2";

/// [`Webhooks::take_due_per_endpoint`]'s statement: `$1` the lease's end, `$2` now, `$3` the limit, `$4`
/// the cap per endpoint, `$5` [`ENDPOINT_BACKOFF_AFTER`], `$6` the JSON list `[[endpoint, in flight], …]`.
/// The window function numbers each endpoint's due rows (`rn`); a row is taken when its number is within
/// its endpoint's free room; the outer level, which locks on Postgres, checks the row again (a row leased
/// by another instance meanwhile is skipped) and takes the first numbers of every endpoint first.
fn take_due_sql(d: Dialect) -> String {
    let (busy, lock) = match d {
        Dialect::Sqlite => (
            "SELECT value ->> 0 AS e, value ->> 1 AS n FROM json_each($6)",
            "",
        ),
        Dialect::Postgres => (
            "SELECT (value ->> 0)::bigint AS e, (value ->> 1)::bigint AS n \
             FROM jsonb_array_elements($6::jsonb)",
            " FOR UPDATE OF c SKIP LOCKED",
        ),
    };
    format!(
        "UPDATE webhook_outbox SET leased_until = $1 WHERE id IN (\
             SELECT c.id FROM webhook_outbox c \
             JOIN (SELECT o.id, o.endpoint_id, \
                       ROW_NUMBER() OVER (PARTITION BY o.endpoint_id ORDER BY o.next_attempt_at, o.id) AS rn, \
                       CASE WHEN w.consecutive_failures >= $5 THEN 1 ELSE $4 END AS cap \
                   FROM webhook_outbox o JOIN webhook_endpoints w ON w.id = o.endpoint_id \
                   WHERE o.delivered_at IS NULL AND o.failed_at IS NULL AND o.next_attempt_at <= $2 \
                     AND (o.leased_until IS NULL OR o.leased_until <= $2) \
                     AND w.disabled_at IS NULL AND (w.blocked_until IS NULL OR w.blocked_until <= $2)) AS r \
               ON r.id = c.id \
             LEFT JOIN ({busy}) AS b ON b.e = r.endpoint_id \
             WHERE r.rn <= r.cap - COALESCE(b.n, 0) \
               AND c.delivered_at IS NULL AND c.failed_at IS NULL \
               AND (c.leased_until IS NULL OR c.leased_until <= $2) \
             ORDER BY r.rn, c.next_attempt_at, c.id LIMIT $3{lock}) RETURNING id"
    )
}

/// [`Webhooks::drop_over_bound`]'s statement for one endpoint: `$1` now, `$2` the error, `$3` the
/// endpoint, `$4` the bound less one (the offset of the newest row kept last). Through the index
/// `webhook_outbox_pending_by_endpoint`.
fn drop_over_bound_sql(d: Dialect) -> String {
    let lock = match d {
        Dialect::Sqlite => "",
        Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
    };
    format!(
        "UPDATE webhook_outbox SET failed_at = $1, last_error = $2, leased_until = NULL WHERE id IN (\
             SELECT id FROM webhook_outbox WHERE endpoint_id = $3 \
               AND delivered_at IS NULL AND failed_at IS NULL \
               AND (leased_until IS NULL OR leased_until <= $1) \
               AND id < (SELECT k.id FROM webhook_outbox k WHERE k.endpoint_id = $3 \
                   AND k.delivered_at IS NULL AND k.failed_at IS NULL ORDER BY k.id DESC LIMIT 1 OFFSET $4){lock})"
    )
}

/// A webhook endpoint as stored. Its `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WebhookEndpoint {
    pub id: i64,
    pub url: String,
    /// Comma-separated event types.
    pub events: String,
    /// `whsec_<base64>`.
    pub secret: String,
    pub created_at: i64,
    pub disabled_at: Option<i64>,
    /// Why it is disabled: `gone` (410), `failing` (no delivery for 24 h); `None` for an endpoint
    /// disabled by a 410 before this was recorded, or not disabled.
    pub disabled_reason: Option<String>,
    /// Failed attempts since its last delivery.
    pub consecutive_failures: i64,
    /// When the first of those failures was recorded; `None` while it delivers.
    pub failing_since: Option<i64>,
    /// None of its rows is taken before then (the endpoint's backoff).
    pub blocked_until: Option<i64>,
}

/// One delivery to make: an outbox row with its endpoint. Its `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OutboxItem {
    pub id: i64,
    pub endpoint_id: i64,
    pub url: String,
    pub secret: String,
    pub event: String,
    /// The `webhook-id`, the same on every attempt.
    pub msg_id: String,
    pub session_key: String,
    pub logical_turn_id: String,
    pub mutation_id: String,
    pub tool: String,
    pub status: String,
    pub age_secs: i64,
    /// When the event happened (ms since the epoch).
    pub at: i64,
    /// Attempts made before this one.
    pub attempts: i64,
}

impl std::fmt::Debug for WebhookEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpoint")
            .field("id", &self.id)
            .field("url", &self.url)
            .field("events", &self.events)
            .field("secret", &"<redacted>")
            .field("created_at", &self.created_at)
            .field("disabled_at", &self.disabled_at)
            .field("disabled_reason", &self.disabled_reason)
            .field("consecutive_failures", &self.consecutive_failures)
            .field("failing_since", &self.failing_since)
            .field("blocked_until", &self.blocked_until)
            .finish()
    }
}

impl std::fmt::Debug for OutboxItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxItem")
            .field("id", &self.id)
            .field("endpoint_id", &self.endpoint_id)
            .field("url", &self.url)
            .field("secret", &"<redacted>")
            .field("event", &self.event)
            .field("msg_id", &self.msg_id)
            .field("mutation_id", &self.mutation_id)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// An outbox row as tests and tools read it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OutboxRow {
    pub id: i64,
    pub endpoint_id: i64,
    pub event: String,
    pub msg_id: String,
    pub mutation_id: String,
    pub status: String,
    pub attempts: i64,
    pub delivered_at: Option<i64>,
    pub failed_at: Option<i64>,
    pub last_error: Option<String>,
}

/// Checks an `--events` list: one or more of [`EVENTS`], comma-separated, each once. Answers the list as
/// stored (in the order of [`EVENTS`]). The error names the first unknown event.
pub fn check_events(list: &str) -> Result<String, LedgerError> {
    let mut chosen = [false; 3];
    for e in list.split(',').map(str::trim) {
        match EVENTS.iter().position(|k| *k == e) {
            Some(i) => chosen[i] = true,
            None => {
                return Err(LedgerError::invalid(
                    "events",
                    format!("unknown event {e:?}; the events are {}", EVENTS.join(", ")),
                ))
            }
        }
    }
    Ok(EVENTS
        .iter()
        .zip(chosen)
        .filter(|(_, c)| *c)
        .map(|(e, _)| *e)
        .collect::<Vec<_>>()
        .join(","))
}

const ITEM_COLUMNS: &str =
    "o.id, o.endpoint_id, w.url, w.secret, o.event, o.msg_id, o.session_key, \
    o.logical_turn_id, o.mutation_id, o.tool, o.status, o.age_secs, o.at, o.attempts";

/// Webhook endpoints and the outbox. Cheap to clone; from [`crate::Ledger::webhooks`].
#[derive(Clone)]
pub struct Webhooks {
    inner: Arc<Inner>,
}

impl Webhooks {
    pub(crate) fn new(inner: Arc<Inner>) -> Self {
        Webhooks { inner }
    }

    /// Now, by the ledger's clock (ms since the epoch).
    pub fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// Stores an endpoint (the caller has checked the URL and made the secret); answers its id.
    pub async fn add_endpoint(
        &self,
        url: &str,
        events: &str,
        secret: &str,
    ) -> Result<i64, LedgerError> {
        let events = check_events(events)?;
        let _writer = self.inner.writer().await?;
        Ok(on_write!(self.inner, |pool, d| {
            sqlx::query_scalar(
            "INSERT INTO webhook_endpoints (url, events, secret, created_at) VALUES ($1, $2, $3, $4) \
             RETURNING id",
        )
        .bind(url)
        .bind(&events)
        .bind(secret)
        .bind(self.now_ms())
        .fetch_one(pool)
        .await?
        }))
    }

    /// Removes an endpoint with its outbox rows. `Ok(false)` when there was no such endpoint.
    pub async fn remove_endpoint(&self, id: i64) -> Result<bool, LedgerError> {
        let _writer = self.inner.writer().await?;
        let done = on_write!(self.inner, |pool, d| sqlx::query(
            "DELETE FROM webhook_endpoints WHERE id = $1"
        )
        .bind(id)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(done == 1)
    }

    /// Every endpoint, by id.
    pub async fn list_endpoints(&self) -> Result<Vec<WebhookEndpoint>, LedgerError> {
        Ok(on_read!(self.inner, |pool, d| {
            sqlx::query_as(
            "SELECT id, url, events, secret, created_at, disabled_at, disabled_reason, consecutive_failures, \
             failing_since, blocked_until FROM webhook_endpoints ORDER BY id"
        )
        .fetch_all(pool)
        .await?
        }))
    }

    /// Marks an endpoint disabled because it answered 410 (`disabled_reason` `gone`): its pending rows
    /// fail, nothing more is queued for it.
    pub async fn disable_endpoint(&self, id: i64) -> Result<(), LedgerError> {
        self.disable(id, "gone", "endpoint disabled (410)").await
    }

    /// Marks an endpoint disabled (unless it is already) for `reason`, and gives up its pending rows
    /// with `error`.
    async fn disable(&self, id: i64, reason: &str, error: &str) -> Result<(), LedgerError> {
        let _writer = self.inner.writer().await?;
        let now = self.now_ms();
        on_write!(self.inner, |pool, d| {
            sqlx::query(
                "UPDATE webhook_endpoints SET disabled_at = $1, disabled_reason = $2 \
                 WHERE id = $3 AND disabled_at IS NULL",
            )
            .bind(now)
            .bind(reason)
            .bind(id)
            .execute(pool)
            .await?;
            sqlx::query(
                "UPDATE webhook_outbox SET failed_at = $1, last_error = $2 \
                 WHERE endpoint_id = $3 AND delivered_at IS NULL AND failed_at IS NULL",
            )
            .bind(now)
            .bind(error)
            .bind(id)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Records a failed attempt of endpoint `id` (docs/api.md "Webhooks", "Per endpoint"): one more
    /// consecutive failure, failing since the first of them. Failing for [`DISABLE_FAILING_AFTER_MS`] or
    /// more (by the ledger's clock), it is disabled (`disabled_reason` `failing`, its pending rows given
    /// up); with [`ENDPOINT_BACKOFF_AFTER`] consecutive failures or more and not waiting already, it
    /// waits `wait_ms(n)` ms as a whole, `n` counting the failures from that threshold (1, 2, …).
    /// Errors: the store's.
    pub async fn endpoint_failed(
        &self,
        id: i64,
        wait_ms: impl FnOnce(i64) -> i64,
    ) -> Result<EndpointFailure, LedgerError> {
        let now = self.now_ms();
        let state: Option<(i64, i64, Option<i64>)> = {
            let _writer = self.inner.writer().await?;
            on_write!(self.inner, |pool, d| {
                sqlx::query_as(
                    "UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1, \
                     failing_since = COALESCE(failing_since, $1) WHERE id = $2 AND disabled_at IS NULL \
                     RETURNING consecutive_failures, failing_since, blocked_until",
                )
                .bind(now)
                .bind(id)
                .fetch_optional(pool)
                .await?
            })
        };
        let Some((failures, since, blocked_until)) = state else {
            return Ok(EndpointFailure::Gone);
        };
        if now.saturating_sub(since) >= DISABLE_FAILING_AFTER_MS {
            self.disable(
                id,
                "failing",
                "endpoint disabled (no delivery for 24 h since its first failure)",
            )
            .await?;
            return Ok(EndpointFailure::Disabled { since });
        }
        if failures < ENDPOINT_BACKOFF_AFTER {
            return Ok(EndpointFailure::Failing { since });
        }
        if let Some(until) = blocked_until.filter(|u| *u > now) {
            return Ok(EndpointFailure::Blocked { since, until });
        }
        let until = now.saturating_add(wait_ms(failures - ENDPOINT_BACKOFF_AFTER + 1));
        let _writer = self.inner.writer().await?;
        on_write!(self.inner, |pool, d| {
            sqlx::query("UPDATE webhook_endpoints SET blocked_until = $1 WHERE id = $2")
                .bind(until)
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(EndpointFailure::Blocked { since, until })
    }

    /// Queues `outcome.unknown_stale` for every operation settled `outcome_unknown` at least
    /// `threshold_secs` ago (by its latest unknown settlement) and still unknown, for every enabled endpoint
    /// that takes the event; once per operation, endpoint and threshold (a unique index, so instances on
    /// one Postgres database do not queue it twice). Answers how many rows were queued.
    pub async fn enqueue_stale(&self, threshold_secs: i64) -> Result<u64, LedgerError> {
        let now = self.now_ms();
        let before = now.saturating_sub(threshold_secs.saturating_mul(1000));
        let _writer = self.inner.writer().await?;
        let done = on_write!(self.inner, |pool, d| {
            let (msg_id, find) = match d {
                Dialect::Sqlite => ("'msg_' || lower(hex(randomblob(16)))", "instr"),
                Dialect::Postgres => (
                    "'msg_' || md5(random()::text || clock_timestamp()::text || w.id::text || u.seq::text)",
                    "strpos",
                ),
            };
            let sql = format!(
                "INSERT INTO webhook_outbox (endpoint_id, event, msg_id, entry_seq, session_key, \
                     logical_turn_id, mutation_id, tool, status, age_secs, at, threshold_secs, next_attempt_at) \
                 SELECT w.id, 'outcome.unknown_stale', {msg_id}, u.seq, u.session_key, u.logical_turn_id, \
                     u.mutation_id, u.tool, 'outcome_unknown', ($1 - u.since) / 1000, $1, $2, $1 \
                 FROM (SELECT e.seq, e.session_key, e.logical_turn_id, e.mutation_id, e.tool, \
                         (SELECT MAX(h.at) FROM history h WHERE h.entry_seq = e.seq AND h.kind = 'settlement' \
                          AND h.ledger_status = 'outcome_unknown') AS since \
                       FROM entries e WHERE e.status = 'outcome_unknown') AS u \
                 JOIN webhook_endpoints w ON w.disabled_at IS NULL \
                     AND {find}(',' || w.events || ',', ',outcome.unknown_stale,') > 0 \
                 WHERE u.since IS NOT NULL AND u.since <= $3 \
                 ON CONFLICT DO NOTHING"
            );
            sqlx::query(&sql)
                .bind(now)
                .bind(threshold_secs)
                .bind(before)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done)
    }

    /// Takes up to `limit` due deliveries (next attempt due, not delivered or given up, not leased by
    /// another worker, their endpoint not waiting), leasing them for `lease_ms`; fairly across endpoints,
    /// as [`Webhooks::take_due_per_endpoint`] without a cap per endpoint.
    pub async fn take_due(
        &self,
        limit: i64,
        lease_ms: i64,
    ) -> Result<Vec<OutboxItem>, LedgerError> {
        self.take_due_per_endpoint(limit, lease_ms, limit, &HashMap::new())
            .await
    }

    /// Takes up to `limit` due deliveries, leasing them for `lease_ms` (docs/api.md "Webhooks", "Per
    /// endpoint"): rows whose next attempt is due, neither delivered nor given up, not leased by another
    /// worker, of an enabled endpoint that is not waiting (`blocked_until`). Of each endpoint at most
    /// `per_endpoint` (1 when it has failed [`ENDPOINT_BACKOFF_AFTER`] times in a row: a probe) less what
    /// `in_flight` says this worker has in flight for it (endpoint id → deliveries), its earliest due
    /// first; across endpoints in turns (every endpoint's first row, then every second, …), so one
    /// endpoint's backlog never fills `limit`. One statement (a window function over the due rows,
    /// through the index `webhook_outbox_due`); on Postgres the rows are locked with `FOR UPDATE SKIP
    /// LOCKED` while they are leased, so two instances never take the same row. Errors: the store's.
    pub async fn take_due_per_endpoint(
        &self,
        limit: i64,
        lease_ms: i64,
        per_endpoint: i64,
        in_flight: &HashMap<i64, i64>,
    ) -> Result<Vec<OutboxItem>, LedgerError> {
        let now = self.now_ms();
        let busy: Vec<(i64, i64)> = in_flight
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(e, n)| (*e, *n))
            .collect();
        let busy = serde_json::to_string(&busy).unwrap_or_else(|_| "[]".into());
        let _writer = self.inner.writer().await?;
        let ids: Vec<i64> = on_write!(self.inner, |pool, d| sqlx::query_scalar(&take_due_sql(d))
            .bind(now.saturating_add(lease_ms))
            .bind(now)
            .bind(limit)
            .bind(per_endpoint)
            .bind(ENDPOINT_BACKOFF_AFTER)
            .bind(&busy)
            .fetch_all(pool)
            .await?);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
        Ok(on_write!(self.inner, |pool, d| {
            sqlx::query_as(&format!(
            "SELECT {ITEM_COLUMNS} FROM webhook_outbox o JOIN webhook_endpoints w ON w.id = o.endpoint_id \
             WHERE {} ORDER BY o.id",
            d.int_in("o.id", 1)
        ))
        .bind(list)
        .fetch_all(pool)
        .await?
        }))
    }

    /// Keeps each endpoint's pending rows within `max_pending` (docs/api.md "Webhooks", "The bound"): of
    /// an endpoint with more, the oldest (by id, the order they were queued) are given up
    /// (`failed_at` now, `last_error` [`DROPPED_ERROR`]): every row older than its `max_pending` newest
    /// pending rows, except those being delivered (leased), so it may hold `max_pending` plus those. Never touches a write:
    /// the worker calls it. Answers the rows dropped per endpoint (endpoints with none absent). The cut
    /// is "older than the `max_pending`-th newest pending row", the same for instances running it at
    /// once, so they never drop more than the excess; on Postgres rows are taken `FOR UPDATE SKIP
    /// LOCKED`. Errors: the store's.
    pub async fn drop_over_bound(&self, max_pending: i64) -> Result<Vec<(i64, u64)>, LedgerError> {
        let max_pending = max_pending.max(1);
        let over: Vec<(i64, i64)> = on_read!(self.inner, |pool, d| {
            sqlx::query_as(
                "SELECT endpoint_id, COUNT(*) FROM webhook_outbox \
                 WHERE delivered_at IS NULL AND failed_at IS NULL \
                 GROUP BY endpoint_id HAVING COUNT(*) > $1 ORDER BY endpoint_id",
            )
            .bind(max_pending)
            .fetch_all(pool)
            .await?
        });
        let mut dropped = Vec::new();
        for (endpoint, _) in over {
            let now = self.now_ms();
            let _writer = self.inner.writer().await?;
            let n = on_write!(self.inner, |pool, d| {
                sqlx::query(&drop_over_bound_sql(d))
                    .bind(now)
                    .bind(DROPPED_ERROR)
                    .bind(endpoint)
                    .bind(max_pending - 1)
                    .execute(pool)
                    .await?
                    .rows_affected()
            });
            if n > 0 {
                dropped.push((endpoint, n));
            }
        }
        Ok(dropped)
    }

    /// Records a delivery (a 2xx answer); its endpoint is healthy again (no failure counted, not
    /// failing, not waiting).
    pub async fn delivered(&self, id: i64) -> Result<(), LedgerError> {
        let now = self.now_ms();
        let _writer = self.inner.writer().await?;
        on_write!(self.inner, |pool, d| {
            sqlx::query(
            "UPDATE webhook_outbox SET delivered_at = $1, attempts = attempts + 1, leased_until = NULL, \
             last_error = NULL WHERE id = $2"
        )
        .bind(now)
        .bind(id)
        .execute(pool)
        .await?;
            sqlx::query(
                "UPDATE webhook_endpoints SET consecutive_failures = 0, failing_since = NULL, \
                 blocked_until = NULL \
                 WHERE id = (SELECT endpoint_id FROM webhook_outbox WHERE id = $1) \
                 AND (consecutive_failures <> 0 OR failing_since IS NOT NULL OR blocked_until IS NOT NULL)",
            )
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(())
    }

    /// Records a failed attempt: tried again at `next_attempt_at`, or given up when that is `None`. A row
    /// given up meanwhile (its endpoint disabled, or dropped by the bound) stays given up.
    pub async fn attempt_failed(
        &self,
        id: i64,
        next_attempt_at: Option<i64>,
        error: &str,
    ) -> Result<(), LedgerError> {
        let now = self.now_ms();
        let _writer = self.inner.writer().await?;
        on_write!(self.inner, |pool, d| {
            sqlx::query(
            "UPDATE webhook_outbox SET attempts = attempts + 1, leased_until = NULL, last_error = $1, \
             next_attempt_at = COALESCE($2, next_attempt_at), \
             failed_at = CASE WHEN $3 THEN $4 ELSE failed_at END WHERE id = $5"
        )
        .bind(error)
        .bind(next_attempt_at)
        .bind(next_attempt_at.is_none())
        .bind(now)
        .bind(id)
        .execute(pool)
        .await?
        .rows_affected()
        });
        Ok(())
    }

    /// When staff were first alerted about each operation's current unknown outcome (docs/api.md
    /// "Alerted"): for each `(session_key, mutation_id)` of `operations` that has one, the earliest
    /// `delivered_at` (ms since the epoch) of an `outcome.unknown` or `outcome.unknown_stale` delivery to
    /// any endpoint, counting only deliveries about the entry's latest unknown settlement (an alert about
    /// an earlier unknown of the same entry, before a reconciliation and a fresh attempt, is not this
    /// one's). Operations without a delivered alert are absent; at most [`ALERTED_MAX_OPERATIONS`] at
    /// once, else `Err(Invalid)`. One statement for the whole list.
    pub async fn alerted_at(
        &self,
        operations: &[(&str, &str)],
    ) -> Result<HashMap<(String, String), i64>, LedgerError> {
        if operations.is_empty() {
            return Ok(HashMap::new());
        }
        if operations.len() > ALERTED_MAX_OPERATIONS {
            return Err(LedgerError::Invalid {
                field: "operations".into(),
                message: format!("at most {ALERTED_MAX_OPERATIONS} operations at once"),
            });
        }
        let list = serde_json::to_string(operations)
            .map_err(|e| LedgerError::Store(sqlx::Error::Encode(Box::new(e))))?;
        let rows: Vec<(String, String, i64)> = on_read!(self.inner, |pool, d| {
            let list_rows = match d {
                Dialect::Sqlite => "SELECT value ->> 0 AS k, value ->> 1 AS m FROM json_each($1)",
                Dialect::Postgres => {
                    "SELECT value ->> 0 AS k, value ->> 1 AS m FROM jsonb_array_elements($1::jsonb)"
                }
            };
            sqlx::query_as(&format!(
                "SELECT e.session_key, e.mutation_id, MIN(o.delivered_at) \
                 FROM ({list_rows}) AS j \
                 JOIN entries e ON e.session_key = j.k AND e.mutation_id = j.m \
                 JOIN webhook_outbox o ON o.entry_seq = e.seq \
                 WHERE o.delivered_at IS NOT NULL \
                   AND o.event IN ('outcome.unknown', 'outcome.unknown_stale') \
                   AND o.at >= COALESCE((SELECT MAX(h.at) FROM history h WHERE h.entry_seq = e.seq \
                       AND h.kind = 'settlement' AND h.ledger_status = 'outcome_unknown'), 0) \
                 GROUP BY e.session_key, e.mutation_id"
            ))
            .bind(&list)
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(|(k, m, at)| ((k, m), at)).collect())
    }

    /// Deletes finished outbox rows older than `rules.retention_ms` (docs/api.md "Webhooks", "Pruning"): rows
    /// delivered, or given up (after 24 h of retries, or when their endpoint answered 410), at least that
    /// long ago by the ledger's clock; never a pending row (one still being tried), and never a delivered
    /// `outcome.unknown` / `outcome.unknown_stale` row about the current unknown outcome of an entry that
    /// is still `outcome_unknown`, so [`Webhooks::alerted_at`] answers the same for it (those go once the
    /// entry is reconciled, or with its session). Rows of a removed endpoint went with it already.
    /// Deletes in statements of at most `rules.batch` rows, each holding the write lock alone and
    /// yielding between them, at most `rules.max_batches` statements; answers how many rows went. On
    /// Postgres the rows are taken `FOR UPDATE SKIP LOCKED`, so instances pruning at once do not wait for
    /// each other. Errors: the store's (`Busy`, `Unavailable`, …); rows deleted before one stay deleted.
    pub async fn prune_outbox(&self, rules: OutboxPrune) -> Result<u64, LedgerError> {
        let mut total = 0u64;
        for _ in 0..rules.max_batches {
            let before = self.now_ms().saturating_sub(rules.retention_ms);
            let done = {
                let _writer = self.inner.writer().await?;
                on_write!(self.inner, |pool, d| {
                    let lock = match d {
                        Dialect::Sqlite => "",
                        Dialect::Postgres => " FOR UPDATE OF o SKIP LOCKED",
                    };
                    sqlx::query(&format!(
                        "DELETE FROM webhook_outbox WHERE id IN ({PRUNABLE}{lock})"
                    ))
                    .bind(before)
                    .bind(rules.batch)
                    .execute(pool)
                    .await?
                    .rows_affected()
                })
            };
            total = total.saturating_add(done);
            if done < u64::try_from(rules.batch).unwrap_or(0) {
                break;
            }
            tokio::task::yield_now().await;
        }
        Ok(total)
    }

    /// The outbox's backlog now (docs/api.md "Metrics"): how many rows are pending (neither delivered
    /// nor given up) and the age of the oldest of them by its event time, in whole seconds by the
    /// ledger's clock. Read from the database (the same on every instance of one Postgres database), one
    /// statement over the pending rows (the partial index `webhook_outbox_due`). Errors: the store's.
    pub async fn outbox_gauges(&self) -> Result<OutboxGauges, LedgerError> {
        let now = self.now_ms();
        let (pending, oldest): (i64, Option<i64>) = on_read!(self.inner, |pool, d| {
            sqlx::query_as(
                "SELECT COUNT(*), MIN(at) FROM webhook_outbox \
                 WHERE delivered_at IS NULL AND failed_at IS NULL",
            )
            .fetch_one(pool)
            .await?
        });
        Ok(OutboxGauges::read(now, pending, oldest))
    }

    /// Every outbox row, oldest first (tests and diagnostics).
    pub async fn outbox(&self) -> Result<Vec<OutboxRow>, LedgerError> {
        Ok(on_read!(self.inner, |pool, d| {
            sqlx::query_as(
            "SELECT id, endpoint_id, event, msg_id, mutation_id, status, attempts, delivered_at, failed_at, \
             last_error FROM webhook_outbox ORDER BY id"
        )
        .fetch_all(pool)
        .await?
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::query_plan::{fresh_sqlite, plan};

    /// On SQLite the due rows are found through the outbox's indexes (never `SCAN o`, a walk of the
    /// whole outbox, finished rows included), and the bound's rows of one endpoint through the index of
    /// pending rows by endpoint.
    #[tokio::test]
    async fn taking_due_rows_and_the_bound_use_the_pending_indexes() {
        let (_dir, inner) = fresh_sqlite().await;
        let take = plan(&inner, &take_due_sql(Dialect::Sqlite), 6).await;
        eprintln!("take_due:\n{take}");
        assert!(
            !take.contains("SCAN o\n") && !take.ends_with("SCAN o"),
            "{take}"
        );
        assert!(!take.contains("SCAN c"), "{take}");
        assert!(take.contains("USING INDEX webhook_outbox_due"), "{take}");
        let bound = plan(&inner, &drop_over_bound_sql(Dialect::Sqlite), 4).await;
        eprintln!("drop_over_bound:\n{bound}");
        assert!(!bound.contains("SCAN webhook_outbox"), "{bound}");
        assert!(!bound.contains("SCAN k"), "{bound}");
        assert!(
            bound.contains("USING COVERING INDEX webhook_outbox_pending_by_endpoint")
                || bound.contains("USING INDEX webhook_outbox_pending_by_endpoint"),
            "{bound}"
        );
    }

    /// On SQLite the rows to prune are found through the index of finished rows (never `SCAN o`, a walk
    /// of the whole outbox, pending rows included), each entry by its key and its settlements through
    /// `history_by_entry`.
    #[tokio::test]
    async fn pruning_finds_finished_rows_through_their_index() {
        let (_dir, inner) = fresh_sqlite().await;
        let plan = plan(
            &inner,
            &format!("DELETE FROM webhook_outbox WHERE id IN ({PRUNABLE})"),
            2,
        )
        .await;
        assert!(!plan.contains("SCAN o"), "{plan}");
        assert!(
            plan.contains("SEARCH o USING INDEX webhook_outbox_done"),
            "{plan}"
        );
        assert!(!plan.contains("SCAN e"), "{plan}");
        assert!(!plan.contains("SCAN h"), "{plan}");
    }
}
