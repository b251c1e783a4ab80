//! The ledger's gauges (docs/api.md "Metrics"): how many outcomes are open (settled `outcome_unknown`, and
//! in flight `execution_started`) across sessions that have not expired, per tool, and how long the oldest
//! of each has been open. Read from the database when asked (the server's `GET /metrics` at each scrape,
//! and the support queue's "oldest unknown"), so every instance on one Postgres database reports the same
//! figures; nothing is cached in a process.

use std::collections::BTreeMap;

use crate::error::LedgerError;
use crate::sessions::SessionManager;
use crate::store::on_read;

/// The open outcomes of the ledger at one time ([`SessionManager::ledger_gauges`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerGauges {
    /// Entries settled `outcome_unknown` (in flight ones are not counted here), per tool, by tool name;
    /// a tool with none is absent.
    pub unknown_by_tool: BTreeMap<String, u64>,
    /// Whole seconds the oldest settled unknown has been open, `None` when there is none (or none
    /// recorded since history was kept: docs/ledger.md "History").
    pub unknown_oldest_age_secs: Option<u64>,
    /// Entries in flight (`execution_started`).
    pub in_flight: u64,
    /// Whole seconds the oldest in-flight entry has been in flight, `None` when there is none.
    pub in_flight_oldest_age_secs: Option<u64>,
}

impl LedgerGauges {
    /// Entries settled `outcome_unknown`, every tool.
    pub fn unknown_open(&self) -> u64 {
        self.unknown_by_tool.values().sum()
    }
}

/// One group of open entries: a status and a tool, how many, and the earliest `status_since`.
#[derive(sqlx::FromRow)]
struct OpenGroup {
    status: String,
    tool: String,
    n: i64,
    since: Option<i64>,
}

/// Open entries by status and tool. "Open" is the status test of the support queue (and of the
/// partial index `entries_open_unknown_by_turn`); the rows are found by the index `entries_by_status`
/// (`status`, `recorded_at`), never by a scan of every entry. `since` is the earliest time an entry of
/// the group entered its status: per entry its latest history row that set the status (the time the
/// queue's `age_secs` counts from), read from `history_by_entry`.
const OPEN_GROUPS: &str = "\
    SELECT e.status AS status, e.tool AS tool, COUNT(*) AS n, \
    MIN((SELECT h.at FROM history h WHERE h.entry_seq = e.seq \
         AND h.kind NOT IN ('metadata', 'note', 'claim', 'release') \
         ORDER BY h.id DESC LIMIT 1)) AS since \
    FROM entries e JOIN sessions s USING (session_key) \
    WHERE e.status IN ('outcome_unknown', 'execution_started') AND s.last_write_at >= $1 \
    GROUP BY e.status, e.tool";

impl SessionManager {
    /// The ledger's gauges now (by the ledger's clock): open unknowns per tool and in flight, across
    /// sessions that have not expired, and the age of the oldest of each in whole seconds, counted from
    /// the same time as the support queue's `age_secs` (so the queue's "oldest unknown" and the
    /// `outcomes_unknown_oldest_age_seconds` metric are this one figure; docs/api.md "Metrics"). One
    /// statement over the open entries only. Errors: the store's (`Busy`, `Unavailable`, …).
    pub async fn ledger_gauges(&self) -> Result<LedgerGauges, LedgerError> {
        let inner = self.inner();
        let now = inner.clock.now_ms();
        let live_since = inner.live_since(now);
        let groups: Vec<OpenGroup> = on_read!(inner, |pool, d| sqlx::query_as(OPEN_GROUPS)
            .bind(live_since)
            .fetch_all(pool)
            .await?);
        let age = |since: i64| u64::try_from(now.saturating_sub(since) / 1000).unwrap_or(0);
        let mut gauges = LedgerGauges::default();
        let (mut unknown_since, mut flight_since) = (None::<i64>, None::<i64>);
        for g in groups {
            let n = u64::try_from(g.n).unwrap_or(0);
            let earliest = match g.status.as_str() {
                "outcome_unknown" => {
                    *gauges.unknown_by_tool.entry(g.tool).or_insert(0) += n;
                    &mut unknown_since
                }
                _ => {
                    gauges.in_flight += n;
                    &mut flight_since
                }
            };
            if let Some(since) = g.since {
                *earliest = Some(earliest.map_or(since, |e| e.min(since)));
            }
        }
        gauges.unknown_oldest_age_secs = unknown_since.map(age);
        gauges.in_flight_oldest_age_secs = flight_since.map(age);
        Ok(gauges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::query_plan::{fresh_sqlite, plan};

    /// On SQLite the open entries are found through an index on their status (never `SCAN e`, a walk
    /// of every entry), each session by its key and each entry's status time through `history_by_entry`.
    #[tokio::test]
    async fn the_gauges_read_only_the_open_entries_through_indexes() {
        let (_dir, inner) = fresh_sqlite().await;
        let plan = plan(&inner, OPEN_GROUPS, 1).await;
        assert!(!plan.contains("SCAN e"), "{plan}");
        assert!(!plan.contains("SCAN s"), "{plan}");
        assert!(
            plan.contains("SEARCH e USING INDEX entries_by_status (status=?)"),
            "{plan}"
        );
        assert!(plan.contains("USING INDEX history_by_entry"), "{plan}");
    }
}
