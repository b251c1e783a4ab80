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

/// A W3C Trace Context `traceparent` (<https://www.w3.org/TR/trace-context/#traceparent-header>) as a
/// host passes it at approve: `<version>-<trace id>-<parent id>-<flags>`, lowercase hex of 2, 32, 16 and
/// 2 digits. Version `ff` is invalid; a trace id or parent id of only zeros is invalid. A version other
/// than `00` may have more after the flags (`-…`), which is ignored as the specification says; the
/// stored form is then the first 55 characters, as version `00`.
///
/// Checked here rather than by `opentelemetry_sdk`'s `TraceContextPropagator`: that one reads each part
/// with `from_str_radix`, so it takes ids of any length or with a sign (`00-+1-2-01`), which the
/// specification refuses and a later reader of the stored text would not expect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traceparent(String);

impl Traceparent {
    /// Parses a `traceparent`; the error says what is wrong, in words for a 422.
    pub fn parse(s: &str) -> Result<Traceparent, &'static str> {
        const FORM: &str =
            "traceparent is a W3C trace context: 00-<32 hex digits trace id>-<16 hex digits \
                            parent id>-<2 hex digits flags>, lowercase";
        let b = s.as_bytes();
        if b.len() < 55 {
            return Err(FORM);
        }
        let hex = |r: std::ops::Range<usize>| {
            b[r].iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        };
        if !hex(0..2)
            || b[2] != b'-'
            || !hex(3..35)
            || b[35] != b'-'
            || !hex(36..52)
            || b[52] != b'-'
            || !hex(53..55)
        {
            return Err(FORM);
        }
        let version = &s[0..2];
        if version == "ff" {
            return Err("traceparent's version ff is invalid");
        }
        if b.len() > 55 && (version == "00" || b[55] != b'-') {
            return Err(FORM);
        }
        if b[3..35].iter().all(|&c| c == b'0') {
            return Err("traceparent's trace id is all zeros, which is invalid");
        }
        if b[36..52].iter().all(|&c| c == b'0') {
            return Err("traceparent's parent id is all zeros, which is invalid");
        }
        Ok(Traceparent(s[..55].to_owned()))
    }

    /// The text (55 characters).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn bytes<const N: usize>(&self, from: usize) -> [u8; N] {
        let mut out = [0u8; N];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&self.0[from + 2 * i..from + 2 * i + 2], 16).unwrap_or(0);
        }
        out
    }

    /// The trace id (16 bytes).
    pub fn trace_id(&self) -> [u8; 16] {
        self.bytes(3)
    }

    /// The parent (the host's span) id (8 bytes).
    pub fn parent_id(&self) -> [u8; 8] {
        self.bytes(36)
    }

    /// The trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.bytes::<1>(53)[0]
    }
}

impl serde::Serialize for Traceparent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Traceparent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Traceparent::parse(&s).map_err(serde::de::Error::custom)
    }
}

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
        Ok(crate::webhooks::OutboxGauges {
            pending: u64::try_from(pending).unwrap_or(0),
            oldest_pending_age_secs: oldest
                .map(|at| u64::try_from(now.saturating_sub(at) / 1000).unwrap_or(0)),
        })
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

#[cfg(test)]
mod tests {
    use super::Traceparent;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_parses_into_its_ids_and_flags() {
        let t = Traceparent::parse(GOOD).unwrap();
        assert_eq!(t.as_str(), GOOD);
        assert_eq!(t.trace_id()[0], 0x4b);
        assert_eq!(t.trace_id()[15], 0x36);
        assert_eq!(
            t.parent_id(),
            [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
        );
        assert_eq!(t.flags(), 1);
        // A later version may carry more after the flags; it is ignored.
        let later = format!("01{}-what-comes-next", &GOOD[2..]);
        assert_eq!(
            Traceparent::parse(&later).unwrap().as_str(),
            format!("01{}", &GOOD[2..])
        );
        assert_eq!(
            serde_json::from_value::<Traceparent>(serde_json::json!(GOOD)).unwrap(),
            t
        );
        assert_eq!(serde_json::to_value(&t).unwrap(), serde_json::json!(GOOD));
    }

    #[test]
    fn each_malformed_traceparent_is_refused() {
        let bad = [
            "",
            &GOOD[..54],                                                // too short
            &format!("{GOOD}0"),                                        // too long for 00
            &format!("{GOOD}-00"),                                      // 00 has nothing after
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",  // non-hex
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",  // separator
            "00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01",  // misplaced dash
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version not hex
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", // later version, no dash
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0é",  // not ASCII
        ];
        for b in bad {
            assert!(Traceparent::parse(b).is_err(), "{b:?} was accepted");
            assert!(serde_json::from_value::<Traceparent>(serde_json::json!(b)).is_err());
        }
    }
}
