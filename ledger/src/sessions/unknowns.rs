//! Finding operations (docs/api.md): one operation by its keys, the open unknown outcomes across
//! sessions, and one operation's history.

use super::*;

impl SessionManager {
    /// Support look-up: every published outcome with this `mutation_id`, across sessions that have not
    /// expired (one id may be used in several sessions).
    pub async fn find_operation(
        &self,
        mutation_id: &MutationId,
    ) -> Result<Vec<OperationMatch>, LedgerError> {
        self.find_operation_as(mutation_id, false).await
    }

    /// [`Self::find_operation`] with each match's current `attempt_id` (for staff: a bulk reconciliation's
    /// confirmation names the attempt each operation is reconciled about, docs/api.md "Bulk actions").
    pub async fn find_operation_with_attempt(
        &self,
        mutation_id: &MutationId,
    ) -> Result<Vec<OperationMatch>, LedgerError> {
        self.find_operation_as(mutation_id, true).await
    }

    async fn find_operation_as(
        &self,
        mutation_id: &MutationId,
        with_attempt: bool,
    ) -> Result<Vec<OperationMatch>, LedgerError> {
        let now = self.inner.clock.now_ms();
        let rows: Vec<MatchRow> = on_read!(self.inner, |pool, d| sqlx::query_as(&format!(
            "SELECT {}, {MATCH_COLUMNS} FROM entries e JOIN sessions s USING (session_key) \
             WHERE e.mutation_id = $1 AND s.last_write_at >= $2 ORDER BY e.seq",
            prefixed("e")
        ))
        .bind(mutation_id.as_str())
        .bind(self.inner.live_since(now))
        .fetch_all(pool)
        .await?);
        Ok(matches(&rows, now, with_attempt))
    }

    /// One page of the support queue (docs/api.md "Support queue"): open unknown outcomes (settled
    /// `outcome_unknown` and in flight `execution_started`) across sessions that have not expired, in
    /// `query.sort` order (by default the oldest recorded first: `recorded_at, sequence`), after
    /// `query.after` (the previous page's last item, in the same order), at most `query.limit`, filtered:
    /// `tool` and `session_key` exact, `tool_like` and `session_like` substrings (case-insensitive),
    /// `min_age_secs` (only items whose `age_secs` is known and at least this: open since at least that
    /// many whole seconds, by the same history time as `age_secs`), `settled_after` / `settled_before`
    /// (ms). Each carries `age_secs`, its count of `notes`, its `last_note`, its `claim` and the entry's
    /// current `attempt_id` (what a host reconciles, docs/api.md "Host write API"). `total`
    /// counts every matching item. Read in one read transaction. Answers the page (its `next` left
    /// `None`) and the position to go on after, when more items match.
    pub async fn open_unknowns(
        &self,
        query: &UnknownsQuery,
    ) -> Result<(UnknownsPage, Option<UnknownsAfter>), LedgerError> {
        let now = self.inner.clock.now_ms();
        let live_since = self.inner.live_since(now);
        let limit = query.limit.max(1);
        // Open since at or before this time (ms); a minimum age past any time matches nothing.
        let opened_by: Option<i64> = query.min_age_secs.map(|secs| {
            i64::try_from(secs)
                .ok()
                .and_then(|s| s.checked_mul(1000))
                .map_or(i64::MIN, |ms| now.saturating_sub(ms))
        });
        let tool_like = query.tool_like.as_deref().map(str::to_lowercase);
        let session_like = query.session_like.as_deref().map(str::to_lowercase);
        let sort = query.sort;
        let key_column = match sort.by {
            UnknownsSortBy::Age => None,
            UnknownsSortBy::Tool => Some("e.tool"),
            UnknownsSortBy::Session => Some("e.session_key"),
            UnknownsSortBy::Deadline => Some("COALESCE(e.deadline_at, 0)"),
        };
        // The previous page's key as the column's type (a deadline's ms as digits).
        let key_param = match sort.by {
            UnknownsSortBy::Deadline => "CAST(NULLIF($9, '') AS BIGINT)",
            _ => "$9",
        };
        let key_dir = if sort.descending { "DESC" } else { "ASC" };
        let (time_dir, time_cmp) = if sort.time_ascending() {
            ("ASC", ">")
        } else {
            ("DESC", "<")
        };
        let key_cmp = if sort.descending { "<" } else { ">" };
        // The keyset: after the previous page's last item in this order. The first page has none.
        let (after_key, after_at, after_seq) = match &query.after {
            Some(a) => (a.key.clone(), Some(a.recorded_at), a.seq),
            None => (None, None, 0),
        };
        let time_after = format!(
            "(e.recorded_at {time_cmp} $10 OR (e.recorded_at = $10 AND e.seq {time_cmp} $11))"
        );
        let keyset = match key_column {
            // `$9` is "" by age (bound all the same: every query binds the same parameters).
            None => format!("($10 IS NULL OR ($9 = '' AND {time_after}))"),
            Some(col) => {
                format!(
                    "($10 IS NULL OR {col} {key_cmp} {key_param} OR ({col} = {key_param} AND {time_after}))"
                )
            }
        };
        let order = match key_column {
            None => format!("e.recorded_at {time_dir}, e.seq {time_dir}"),
            Some(col) => format!("{col} {key_dir}, e.recorded_at {time_dir}, e.seq {time_dir}"),
        };
        let (total, rows) = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let filter = unknown_filter(d, query.state, query.claim.as_ref());
            let total: i64 = sqlx::query_scalar(&format!(
                "SELECT COUNT(*) FROM entries e JOIN sessions s USING (session_key) WHERE {filter}"
            ))
            .bind(live_since)
            .bind(query.tool.as_deref())
            .bind(query.session_key.as_deref())
            .bind(opened_by)
            .bind(tool_like.as_deref())
            .bind(session_like.as_deref())
            .bind(query.settled_after)
            .bind(query.settled_before)
            .fetch_one(&mut *tx)
            .await?;
            let rows: Vec<MatchRow> = sqlx::query_as(&format!(
                "SELECT {}, {MATCH_COLUMNS} FROM entries e JOIN sessions s USING (session_key) \
                 WHERE {filter} AND {keyset} ORDER BY {order} LIMIT $12",
                prefixed("e")
            ))
            .bind(live_since)
            .bind(query.tool.as_deref())
            .bind(query.session_key.as_deref())
            .bind(opened_by)
            .bind(tool_like.as_deref())
            .bind(session_like.as_deref())
            .bind(query.settled_after)
            .bind(query.settled_before)
            .bind(after_key.as_deref().unwrap_or(""))
            .bind(after_at)
            .bind(after_seq)
            .bind(i64::from(limit) + 1)
            .fetch_all(&mut *tx)
            .await?;
            tx.commit().await?;
            (total, rows)
        });
        let mut rows = rows;
        let next = if rows.len() > limit as usize {
            rows.truncate(limit as usize);
            rows.last().map(|r| UnknownsAfter {
                key: match sort.by {
                    UnknownsSortBy::Age => None,
                    UnknownsSortBy::Tool => Some(r.entry.tool.clone()),
                    UnknownsSortBy::Session => Some(r.entry.session_key.clone()),
                    UnknownsSortBy::Deadline => Some(r.entry.deadline_at.unwrap_or(0).to_string()),
                },
                recorded_at: r.entry.recorded_at,
                seq: r.entry.seq,
            })
        } else {
            None
        };
        Ok((
            UnknownsPage {
                matches: matches(&rows, now, true),
                next: None,
                total: u64::try_from(total).unwrap_or(0),
                // The whole queue's, read by `ledger_gauges` (the server fills it in).
                oldest_unknown_age_secs: None,
                in_flight_total: 0,
            },
            next,
        ))
    }

    /// One operation's history (docs/ledger.md "History"): the entry `(session_key, mutation_id)`, the
    /// mutation it was commissioned after, the mutations of the session commissioned after it (approval
    /// order), and every change it went through, oldest first, each with the `mutation_outcome/v1` record
    /// as of that change projected on read (`null` while nothing is published). Errors:
    /// `SessionNotFound` / `SessionExpired` (404, the session is checked first), then `MutationNotFound`.
    /// Read in one read transaction (one snapshot); the whole history of the entry is returned.
    pub async fn operation_history(
        &self,
        session_key: &SessionKey,
        mutation_id: &MutationId,
    ) -> Result<OperationHistory, LedgerError> {
        self.session(session_key).await?;
        let (entry, commissioned, rows) = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let entry: EntryRow = sqlx::query_as(&format!(
                "SELECT {ENTRY_COLUMNS} FROM entries WHERE session_key = $1 AND mutation_id = $2"
            ))
            .bind(session_key.as_str())
            .bind(mutation_id.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(LedgerError::MutationNotFound)?;
            let commissioned: Vec<String> = sqlx::query_scalar(
            "SELECT mutation_id FROM entries WHERE session_key = $1 AND commissioned_after = $2 \
             ORDER BY seq",
        )
        .bind(session_key.as_str())
        .bind(mutation_id.as_str())
        .fetch_all(&mut *tx)
        .await?;
            let rows: Vec<HistoryRow> = sqlx::query_as(&format!(
                "SELECT {HISTORY_COLUMNS} FROM history WHERE entry_seq = $1 ORDER BY id"
            ))
            .bind(entry.seq)
            .fetch_all(&mut *tx)
            .await?;
            tx.commit().await?;
            (entry, commissioned, rows)
        });
        let changes = rows.into_iter().map(|r| change(&entry, r)).collect();
        Ok(OperationHistory {
            session_key: entry.session_key,
            logical_turn_id: entry.logical_turn_id,
            mutation_id: entry.mutation_id,
            commissioned_after: entry.commissioned_after,
            commissioned,
            changes,
            next: None,
            alerted_at: None,
            claim: None,
        })
    }

    /// One page of an operation's history (docs/api.md "Operation history"): as
    /// [`Self::operation_history`], with at most `page.limit` changes after the row `page.after`, oldest
    /// first or newest first, and the id of the page's last row when more follow (the keyset of the next
    /// page; `None` on the last page). Without `page.internal` the rows of kind `note`, `claim` and
    /// `release` are not read at all: a viewer's page is full of the rows it may see, and its `next` is
    /// `None` when none of those follow, whatever internal rows do. One read transaction; one index
    /// range (`history_by_entry`, or `history_public_by_entry` without internal rows) of `limit + 1` rows.
    pub async fn operation_history_page(
        &self,
        session_key: &SessionKey,
        mutation_id: &MutationId,
        page: &HistoryPage,
    ) -> Result<(OperationHistory, Option<i64>), LedgerError> {
        self.session(session_key).await?;
        let (op, order) = if page.newest_first {
            ("<", "DESC")
        } else {
            (">", "ASC")
        };
        let after = page.after.unwrap_or(if page.newest_first {
            i64::MAX
        } else {
            i64::MIN
        });
        let public = if page.internal {
            ""
        } else {
            " AND kind NOT IN ('note', 'claim', 'release')"
        };
        let (entry, commissioned, rows, claim) = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let entry: EntryRow = sqlx::query_as(&format!(
                "SELECT {ENTRY_COLUMNS} FROM entries WHERE session_key = $1 AND mutation_id = $2"
            ))
            .bind(session_key.as_str())
            .bind(mutation_id.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(LedgerError::MutationNotFound)?;
            let commissioned: Vec<String> = sqlx::query_scalar(
                "SELECT mutation_id FROM entries WHERE session_key = $1 AND commissioned_after = $2 \
                 ORDER BY seq",
            )
            .bind(session_key.as_str())
            .bind(mutation_id.as_str())
            .fetch_all(&mut *tx)
            .await?;
            // Who holds the claim now, whatever the page holds (internal: read for staff only).
            let claim: Option<(Option<String>, Option<i64>)> = if page.internal {
                sqlx::query_as(
                    "SELECT CASE WHEN kind = 'claim' THEN COALESCE('staff:' || note, actor) END, \
                     CASE WHEN kind = 'claim' THEN at END \
                     FROM history WHERE entry_seq = $1 AND kind IN ('claim', 'release') \
                     ORDER BY id DESC LIMIT 1",
                )
                .bind(entry.seq)
                .fetch_optional(&mut *tx)
                .await?
            } else {
                None
            };
            let rows: Vec<PagedHistoryRow> = sqlx::query_as(&format!(
                "SELECT id, {HISTORY_COLUMNS} FROM history WHERE entry_seq = $1 AND id {op} $2{public} \
                 ORDER BY id {order} LIMIT $3"
            ))
            .bind(entry.seq)
            .bind(after)
            .bind(i64::from(page.limit) + 1)
            .fetch_all(&mut *tx)
            .await?;
            tx.commit().await?;
            (entry, commissioned, rows, claim)
        });
        let mut rows = rows;
        let next = if rows.len() > page.limit as usize {
            rows.truncate(page.limit as usize);
            rows.last().map(|r| r.id)
        } else {
            None
        };
        let changes = rows.into_iter().map(|r| change(&entry, r.row)).collect();
        Ok((
            OperationHistory {
                session_key: entry.session_key,
                logical_turn_id: entry.logical_turn_id,
                mutation_id: entry.mutation_id,
                commissioned_after: entry.commissioned_after,
                commissioned,
                changes,
                next: None,
                alerted_at: None,
                claim: match claim {
                    Some((Some(actor), Some(at))) => Some(Claim {
                        by: actor.strip_prefix("staff:").unwrap_or(&actor).to_owned(),
                        at: format_time(at),
                    }),
                    _ => None,
                },
            },
            next,
        ))
    }
}

/// A history row with its id (the keyset of [`SessionManager::operation_history_page`]).
#[derive(sqlx::FromRow)]
struct PagedHistoryRow {
    id: i64,
    #[sqlx(flatten)]
    row: HistoryRow,
}
