//! The OpenTelemetry export's outbox as stored in the ledger database (docs/operations.md
//! "OpenTelemetry"). Its rows are written by a trigger on `history`, in the transaction of the change
//! itself (migration `0020_otel_outbox.sql`, Postgres `0014_otel_outbox.sql`), while the export is on
//! ([`Otel::set_enabled`]). Encoding and sending (OTLP over HTTP) are the server's; here are the rows a
//! worker takes ([`Otel::take_due`]: on Postgres `FOR UPDATE SKIP LOCKED` and a lease, so of several
//! instances one exports each row), what it records afterwards, and the bound
//! ([`Otel::drop_over_bound`]).

use std::sync::Arc;

use crate::error::LedgerError;
use crate::store::{on_read, on_write, Dialect, Inner};

/// The host's trace context, stored with an entry (kept in [`crate::traceparent`], which the wire
/// types' crate features without the store also compile).
pub use crate::traceparent::Traceparent;

/// The most pending rows the outbox keeps by default (docs/operations.md "OpenTelemetry", "The bound"):
/// past it the oldest are dropped, so a backend down for a day does not fill the disk. About 1 KB per
/// row: 100,000 rows is about 100 MB at most.
pub const OUTBOX_MAX_PENDING: i64 = 100_000;

/// The span a row stands for (the column `span`): `write` is `mutation_outcome {tool}`, `reconcile` is
/// `reconcile {tool}`.
pub const SPAN_WRITE: &str = "write";
/// See [`SPAN_WRITE`].
pub const SPAN_RECONCILE: &str = "reconcile";

/// One span to export: an outbox row, the operation and the change copied from the ledger when it was
/// written. Times are ms since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OtelItem {
    pub id: i64,
    /// [`SPAN_WRITE`] or [`SPAN_RECONCILE`].
    pub span: String,
    pub entry_seq: i64,
    pub session_key: String,
    pub logical_turn_id: String,
    pub mutation_id: String,
    pub tool: String,
    /// The attempt the change belongs to (`None` only for legacy rows).
    pub attempt_id: Option<String>,
    /// The entry's ledger status after the change (`completed`, `failed`, `outcome_unknown`, …).
    pub ledger_status: String,
    /// 1 when an intent was recorded (`approved` with intent is published `not_executed`).
    pub intent_recorded: i64,
    /// `pre_dispatch_deadline` or `execution_timeout`, else `None`.
    pub reason: Option<String>,
    /// The revision the change took.
    pub revision: Option<i64>,
    /// `host`, `ledger` or `staff:<name>`.
    pub actor: String,
    /// Reconciliation evidence: where it was observed, its free text, when (RFC 3339), and the
    /// provider's own status (`completed` / `not_accepted`); `None` otherwise.
    pub source: Option<String>,
    pub reference: Option<String>,
    pub observed_at: Option<String>,
    pub provider_status: Option<String>,
    /// When the attempt's intent was recorded (the span's start).
    pub started_at: i64,
    /// When the change happened (the span's end).
    pub at: i64,
    /// Export attempts made before this one.
    pub attempts: i64,
    /// The W3C `traceparent` the host passed at approve ([`Traceparent`]'s text), else `None`: the
    /// span `mutation_outcome {tool}` is then a child of the host's span.
    pub traceparent: Option<String>,
}

const ITEM_COLUMNS: &str = "id, span, entry_seq, session_key, logical_turn_id, mutation_id, tool, \
    attempt_id, ledger_status, intent_recorded, reason, revision, actor, source, reference, observed_at, \
    provider_status, started_at, at, attempts, traceparent";

/// [`Otel::take_due`]'s statement: `$1` the lease's end, `$2` now, `$3` the limit. Through the index
/// `otel_outbox_due`; on Postgres the rows are locked `FOR UPDATE SKIP LOCKED` while they are leased.
fn take_due_sql(d: Dialect) -> String {
    let lock = match d {
        Dialect::Sqlite => "",
        Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
    };
    format!(
        "UPDATE otel_outbox SET leased_until = $1 WHERE id IN (\
             SELECT id FROM otel_outbox WHERE next_attempt_at <= $2 \
               AND (leased_until IS NULL OR leased_until <= $2) \
             ORDER BY next_attempt_at, id LIMIT $3{lock}) RETURNING id"
    )
}

/// The export's switch and outbox. Cheap to clone; from [`crate::Ledger::otel`].
#[derive(Clone)]
pub struct Otel {
    inner: Arc<Inner>,
}

impl Otel {
    pub(crate) fn new(inner: Arc<Inner>) -> Self {
        Otel { inner }
    }

    /// Now, by the ledger's clock (ms since the epoch).
    pub fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// Turns the outbox's trigger on or off (`outcomes serve` at start: on when an OTLP endpoint is
    /// configured). Off, nothing more is queued; rows already queued stay until exported or given up.
    pub async fn set_enabled(&self, on: bool) -> Result<(), LedgerError> {
        let _writer = self.inner.writer().await?;
        on_write!(self.inner, |pool, d| sqlx::query(
            "UPDATE otel_export SET enabled = $1 WHERE id = 1 AND enabled <> $1"
        )
        .bind(i64::from(on))
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Takes up to `limit` due rows (their next attempt due, not leased by another worker), oldest
    /// first, leasing them for `lease_ms`. One statement; on Postgres two instances never take the same
    /// row. Errors: the store's.
    pub async fn take_due(&self, limit: i64, lease_ms: i64) -> Result<Vec<OtelItem>, LedgerError> {
        let now = self.now_ms();
        let _writer = self.inner.writer().await?;
        let ids: Vec<i64> = on_write!(self.inner, |pool, d| sqlx::query_scalar(&take_due_sql(d))
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
                "SELECT {ITEM_COLUMNS} FROM otel_outbox WHERE {} ORDER BY id",
                d.int_in("id", 1)
            ))
            .bind(list)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Deletes rows exported (the backend answered success): none is exported twice.
    pub async fn exported(&self, ids: &[i64]) -> Result<(), LedgerError> {
        self.delete(ids).await
    }

    /// Deletes rows given up (logged by the caller).
    pub async fn given_up(&self, ids: &[i64]) -> Result<(), LedgerError> {
        self.delete(ids).await
    }

    async fn delete(&self, ids: &[i64]) -> Result<(), LedgerError> {
        if ids.is_empty() {
            return Ok(());
        }
        let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
        let _writer = self.inner.writer().await?;
        on_write!(self.inner, |pool, d| sqlx::query(&format!(
            "DELETE FROM otel_outbox WHERE {}",
            d.int_in("id", 1)
        ))
        .bind(list)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Records a failed attempt of rows: their lease released, tried again at `next_attempt_at` (ms since
    /// the epoch), `error` kept for operators.
    pub async fn attempt_failed(
        &self,
        ids: &[i64],
        next_attempt_at: i64,
        error: &str,
    ) -> Result<(), LedgerError> {
        if ids.is_empty() {
            return Ok(());
        }
        let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
        let _writer = self.inner.writer().await?;
        on_write!(self.inner, |pool, d| sqlx::query(&format!(
            "UPDATE otel_outbox SET attempts = attempts + 1, leased_until = NULL, last_error = $2, \
             next_attempt_at = $3 WHERE {}",
            d.int_in("id", 1)
        ))
        .bind(list)
        .bind(error)
        .bind(next_attempt_at)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Keeps the outbox within `max_pending` rows (docs/operations.md "OpenTelemetry", "The bound"): the
    /// oldest beyond it (by id, the order they were queued), except rows being exported (leased), are
    /// deleted, and so never exported. Never touches a write: the worker calls it. Answers how many were
    /// dropped. On Postgres rows are taken `FOR UPDATE SKIP LOCKED`. Errors: the store's.
    pub async fn drop_over_bound(&self, max_pending: i64) -> Result<u64, LedgerError> {
        let max_pending = max_pending.max(1);
        let pending = self.pending().await?;
        if pending <= max_pending as u64 {
            return Ok(0);
        }
        let now = self.now_ms();
        let _writer = self.inner.writer().await?;
        Ok(on_write!(self.inner, |pool, d| {
            let lock = match d {
                Dialect::Sqlite => "",
                Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
            };
            sqlx::query(&format!(
                "DELETE FROM otel_outbox WHERE id IN (\
                     SELECT id FROM otel_outbox WHERE (leased_until IS NULL OR leased_until <= $1) \
                       AND id < (SELECT k.id FROM otel_outbox k ORDER BY k.id DESC LIMIT 1 OFFSET $2)\
                     {lock})"
            ))
            .bind(now)
            .bind(max_pending - 1)
            .execute(pool)
            .await?
            .rows_affected()
        }))
    }

    /// Deletes rows whose change happened before `before` (ms since the epoch; the worker passes 24 h
    /// ago) and are not leased: the export gave up on them. Answers how many.
    pub async fn give_up_before(&self, before: i64) -> Result<u64, LedgerError> {
        let now = self.now_ms();
        let _writer = self.inner.writer().await?;
        Ok(on_write!(self.inner, |pool, d| {
            sqlx::query(
            "DELETE FROM otel_outbox WHERE at < $1 AND (leased_until IS NULL OR leased_until <= $2)"
        )
        .bind(before)
        .bind(now)
        .execute(pool)
        .await?
        .rows_affected()
        }))
    }

    /// The outbox's backlog for `GET /metrics` (docs/api.md "Metrics"): rows waiting to be exported (a
    /// leased one included) and whole seconds since the change of the oldest of them (`None`: none).
    /// One statement; the outbox is bounded (`--otlp-outbox-max-pending`). Errors: the store's.
    pub async fn outbox_gauges(&self) -> Result<crate::webhooks::OutboxGauges, LedgerError> {
        let now = self.now_ms();
        let (pending, oldest): (i64, Option<i64>) = on_read!(self.inner, |pool, d| {
            sqlx::query_as("SELECT COUNT(*), MIN(at) FROM otel_outbox")
                .fetch_one(pool)
                .await?
        });
        Ok(crate::webhooks::OutboxGauges::read(now, pending, oldest))
    }

    /// Rows waiting to be exported (a leased one included).
    pub async fn pending(&self) -> Result<u64, LedgerError> {
        let n: i64 = on_read!(self.inner, |pool, d| sqlx::query_scalar(
            "SELECT COUNT(*) FROM otel_outbox"
        )
        .fetch_one(pool)
        .await?);
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
