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
            "SELECT id, url, events, secret, created_at, disabled_at FROM webhook_endpoints ORDER BY id"
        )
        .fetch_all(pool)
        .await?
        }))
    }

    /// Marks an endpoint disabled (it answered 410): its pending rows fail, nothing more is queued for it.
    pub async fn disable_endpoint(&self, id: i64) -> Result<(), LedgerError> {
        let _writer = self.inner.writer().await?;
        let now = self.now_ms();
        on_write!(self.inner, |pool, d| {
            sqlx::query(
                "UPDATE webhook_endpoints SET disabled_at = $1 WHERE id = $2 AND disabled_at IS NULL",
            )
            .bind(now)
            .bind(id)
            .execute(pool)
            .await?;
            sqlx::query(
                "UPDATE webhook_outbox SET failed_at = $1, last_error = 'endpoint disabled (410)' \
                 WHERE endpoint_id = $2 AND delivered_at IS NULL AND failed_at IS NULL",
            )
            .bind(now)
            .bind(id)
            .execute(pool)
            .await?;
        });
        Ok(())
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
    /// another worker), leasing them for `lease_ms`. On Postgres the rows are locked with `FOR UPDATE SKIP
    /// LOCKED` while they are leased, so two instances never take the same row.
    pub async fn take_due(
        &self,
        limit: i64,
        lease_ms: i64,
    ) -> Result<Vec<OutboxItem>, LedgerError> {
        let now = self.now_ms();
        let _writer = self.inner.writer().await?;
        let lock = |d: Dialect| match d {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        };
        let ids: Vec<i64> = on_write!(self.inner, |pool, d| sqlx::query_scalar(&format!(
            "UPDATE webhook_outbox SET leased_until = $1 WHERE id IN (\
                 SELECT id FROM webhook_outbox WHERE delivered_at IS NULL AND failed_at IS NULL \
                 AND next_attempt_at <= $2 AND (leased_until IS NULL OR leased_until <= $2) \
                 ORDER BY next_attempt_at, id LIMIT $3{}) RETURNING id",
            lock(d)
        ))
        .bind(now.saturating_add(lease_ms))
        .bind(now)
        .bind(limit)
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

    /// Records a delivery (a 2xx answer).
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
        .await?
        .rows_affected()
        });
        Ok(())
    }

    /// Records a failed attempt: tried again at `next_attempt_at`, or given up when that is `None`.
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
             failed_at = CASE WHEN $3 THEN $4 ELSE NULL END WHERE id = $5"
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
        Ok(OutboxGauges {
            pending: u64::try_from(pending).unwrap_or(0),
            oldest_pending_age_secs: oldest
                .map(|at| u64::try_from(now.saturating_sub(at) / 1000).unwrap_or(0)),
        })
    }

    /// Every outbox row, oldest first (tests and diagnostics).
    pub async fn outbox(&self) -> Result<Vec<OutboxRow>, LedgerError> {
        Ok(on_read!(self.inner, |pool, d| {
            sqlx::query_as(
            "SELECT id, endpoint_id, event, msg_id, mutation_id, status, attempts, delivered_at, failed_at \
             FROM webhook_outbox ORDER BY id"
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
