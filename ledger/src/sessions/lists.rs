//! The dashboard's lists (docs/api.md): sessions with their counts, a session's turns, and a turn's
//! entries, each paged by a keyset cursor.

use super::*;

impl SessionManager {
    /// One page of the sessions that have not expired (docs/api.md "Sessions"), most recently active first
    /// (`last_write_at DESC, session_key`), after `query.after` (the previous page's last session), at
    /// most `query.limit`, filtered: `has_unknown` (with / without an open unknown: an entry
    /// `outcome_unknown` or in flight `execution_started`, what `counts.outcome_unknown` counts), `tool`
    /// (at least one published entry of that exact tool), `prefix` (the key starts with these bytes),
    /// `active_after` / `active_before` (last write in `[after, before)`, ms).
    /// `total` counts every matching session. Counts and turn counts are read for the page's sessions
    /// only; everything is read in one read transaction. Answers the page (its `next` left `None`) and
    /// the position to go on after, when more sessions match.
    pub async fn sessions(
        &self,
        query: &SessionsQuery,
    ) -> Result<(SessionList, Option<SessionsAfter>), LedgerError> {
        let live_since = self.live_since();
        let limit = query.limit.max(1);
        // The first page starts after a position before every session (an index range either way).
        let (after_at, after_key) = match &query.after {
            Some(a) => (a.last_write_at, a.session_key.as_str()),
            None => (i64::MAX, ""),
        };
        let has_unknown = query.has_unknown.map(i64::from);
        // The activity range: the later of "not expired" and `active_after`, up to `active_before`.
        let from = query.active_after.map_or(live_since, |a| a.max(live_since));
        let before = query.active_before.unwrap_or(i64::MAX);
        let (total, rows, next, counts, turns) = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let filter = session_filter(d);
            let total: i64 =
                sqlx::query_scalar(&format!("SELECT COUNT(*) FROM sessions s WHERE {filter}"))
                    .bind(from)
                    .bind(has_unknown)
                    .bind(query.tool.as_deref())
                    .bind(query.prefix.as_deref())
                    .bind(before)
                    .fetch_one(&mut *tx)
                    .await?;
            let mut rows: Vec<SessionRow> = sqlx::query_as(&format!(
                "SELECT s.session_key, s.created_at, s.last_write_at FROM sessions s \
             WHERE {filter} \
             AND s.last_write_at <= $6 AND (s.last_write_at < $6 OR s.session_key > $7) \
             ORDER BY s.last_write_at DESC, s.session_key LIMIT $8"
            ))
            .bind(from)
            .bind(has_unknown)
            .bind(query.tool.as_deref())
            .bind(query.prefix.as_deref())
            .bind(before)
            .bind(after_at)
            .bind(after_key)
            .bind(i64::from(limit) + 1)
            .fetch_all(&mut *tx)
            .await?;
            let next = if rows.len() > limit as usize {
                rows.truncate(limit as usize);
                rows.last().map(|r| SessionsAfter {
                    last_write_at: r.last_write_at,
                    session_key: r.session_key.clone(),
                })
            } else {
                None
            };
            let keys =
                serde_json::to_string(&rows.iter().map(|r| &r.session_key).collect::<Vec<_>>())
                    .map_err(|e| {
                        LedgerError::internal(format!("a list of keys could not be encoded: {e}"))
                    })?;
            let counts: Vec<CountRow> = sqlx::query_as(&sessions_counts_sql(d))
                .bind(&keys)
                .fetch_all(&mut *tx)
                .await?;
            let turns: Vec<(String, i64)> = sqlx::query_as(&format!(
                "SELECT session_key, COUNT(*) FROM turns WHERE {} GROUP BY session_key",
                d.text_in("session_key", 1)
            ))
            .bind(&keys)
            .fetch_all(&mut *tx)
            .await?;
            tx.commit().await?;
            (total, rows, next, counts, turns)
        });
        let mut by_key = counts_by_session(&counts);
        let turns: HashMap<&str, i64> = turns.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        let sessions = rows
            .iter()
            .map(|s| SessionSummary {
                session_key: s.session_key.clone(),
                created_at: format_time(s.created_at),
                last_activity: format_time(s.last_write_at),
                turn_count: turns
                    .get(s.session_key.as_str())
                    .map_or(0, |n| u64::try_from(*n).unwrap_or(0)),
                counts: by_key.remove(s.session_key.as_str()).unwrap_or_default(),
            })
            .collect();
        Ok((
            SessionList {
                sessions,
                next: None,
                total: u64::try_from(total).unwrap_or(0),
            },
            next,
        ))
    }

    /// The session's logical turns, oldest first, each with its latest revision and counts. 404 for an
    /// unknown or expired session.
    pub async fn turns(&self, session_key: &SessionKey) -> Result<SessionTurns, LedgerError> {
        let session = self.session(session_key).await?;
        let turns: Vec<(String, i64, i64)> = on_read!(self.inner, |pool, d| {
            sqlx::query_as(
            "SELECT logical_turn_id, latest_revision, created_at FROM turns WHERE session_key = $1 \
             ORDER BY turn_seq",
        )
        .bind(session_key.as_str())
        .fetch_all(pool)
        .await?
        });
        let counts: Vec<(String, String, bool, i64)> =
            on_read!(self.inner, |pool, d| sqlx::query_as(
                "SELECT logical_turn_id, status, intent_recorded, COUNT(*) FROM entries \
             WHERE session_key = $1 GROUP BY logical_turn_id, status, intent_recorded",
            )
            .bind(session_key.as_str())
            .fetch_all(pool)
            .await?);
        let mut all = StatusCounts::default();
        for (_, status, intent, n) in &counts {
            add_counts(&mut all, status, *intent, *n);
        }
        Ok(SessionTurns {
            session_key: session.session_key,
            last_activity: format_time(session.last_write_at),
            counts: all,
            total: turns.len() as u64,
            turns: turns
                .into_iter()
                .zip(1..)
                .map(|((id, latest_revision, created_at), number)| {
                    let mut c = StatusCounts::default();
                    for (_, status, intent, n) in counts.iter().filter(|r| r.0 == id) {
                        add_counts(&mut c, status, *intent, *n);
                    }
                    TurnSummary {
                        logical_turn_id: id,
                        number,
                        first_recorded_at: format_time(created_at),
                        latest_revision,
                        counts: c,
                    }
                })
                .collect(),
            next: None,
        })
    }

    /// One page of the session's logical turns (docs/api.md "Turns"): oldest first (`turn_seq`), or
    /// newest first with `page.newest_first`, after the turn at `page.after` when given, at most
    /// `page.limit`, each with its latest revision and counts; with the whole session's counts and its
    /// number of turns (`total`), all read in one read transaction, counts for the page's turns only.
    /// Answers the page (its `next` left `None`) and the `turn_seq` to go on after, when more turns
    /// follow. 404 for an unknown or expired session.
    pub async fn turns_page(
        &self,
        session_key: &SessionKey,
        page: &TurnsPage,
    ) -> Result<(SessionTurns, Option<i64>), LedgerError> {
        let session = self.session(session_key).await?;
        let limit = page.limit.max(1);
        let (total, mut rows, all, counts, below) = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let total: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM turns WHERE session_key = $1")
                    .bind(session_key.as_str())
                    .fetch_one(&mut *tx)
                    .await?;
            let sql = if page.newest_first {
                "SELECT turn_seq, logical_turn_id, latest_revision, created_at FROM turns \
                 WHERE session_key = $1 AND turn_seq < $2 ORDER BY turn_seq DESC LIMIT $3"
            } else {
                "SELECT turn_seq, logical_turn_id, latest_revision, created_at FROM turns \
                 WHERE session_key = $1 AND turn_seq > $2 ORDER BY turn_seq LIMIT $3"
            };
            let from = page.after.unwrap_or(if page.newest_first {
                i64::MAX
            } else {
                i64::MIN
            });
            let rows: Vec<(i64, String, i64, i64)> = sqlx::query_as(sql)
                .bind(session_key.as_str())
                .bind(from)
                .bind(i64::from(limit) + 1)
                .fetch_all(&mut *tx)
                .await?;
            let all: Vec<(String, bool, i64)> = sqlx::query_as(
                "SELECT status, intent_recorded, COUNT(*) FROM entries WHERE session_key = $1 \
                 GROUP BY status, intent_recorded",
            )
            .bind(session_key.as_str())
            .fetch_all(&mut *tx)
            .await?;
            let ids = serde_json::to_string(
                &rows
                    .iter()
                    .take(limit as usize)
                    .map(|r| &r.1)
                    .collect::<Vec<_>>(),
            )
            .map_err(|e| {
                LedgerError::internal(format!("a list of keys could not be encoded: {e}"))
            })?;
            let counts: Vec<(String, String, bool, i64)> = sqlx::query_as(&format!(
                "SELECT logical_turn_id, status, intent_recorded, COUNT(*) FROM entries \
                 WHERE session_key = $1 AND {} GROUP BY logical_turn_id, status, intent_recorded",
                d.text_in("logical_turn_id", 2)
            ))
            .bind(session_key.as_str())
            .bind(&ids)
            .fetch_all(&mut *tx)
            .await?;
            // The page's turns are consecutive in `turn_seq`: the turns below its oldest number them.
            let below: i64 = match rows.iter().take(limit as usize).map(|r| r.0).min() {
                None => 0,
                Some(oldest) => {
                    sqlx::query_scalar(
                        "SELECT COUNT(*) FROM turns WHERE session_key = $1 AND turn_seq < $2",
                    )
                    .bind(session_key.as_str())
                    .bind(oldest)
                    .fetch_one(&mut *tx)
                    .await?
                }
            };
            tx.commit().await?;
            (total, rows, all, counts, below)
        });
        let next = if rows.len() > limit as usize {
            rows.truncate(limit as usize);
            rows.last().map(|r| r.0)
        } else {
            None
        };
        let mut session_counts = StatusCounts::default();
        for (status, intent, n) in &all {
            add_counts(&mut session_counts, status, *intent, *n);
        }
        let mut by_turn: HashMap<&str, StatusCounts> = HashMap::with_capacity(rows.len());
        for (turn, status, intent, n) in &counts {
            add_counts(
                by_turn.entry(turn.as_str()).or_default(),
                status,
                *intent,
                *n,
            );
        }
        let below = u64::try_from(below).unwrap_or(0);
        let shown = rows.len() as u64;
        let turns = rows
            .iter()
            .zip(0u64..)
            .map(|((_, id, latest_revision, created_at), i)| TurnSummary {
                logical_turn_id: id.clone(),
                number: if page.newest_first {
                    below + shown - i
                } else {
                    below + 1 + i
                },
                first_recorded_at: format_time(*created_at),
                latest_revision: *latest_revision,
                counts: by_turn.remove(id.as_str()).unwrap_or_default(),
            })
            .collect();
        Ok((
            SessionTurns {
                session_key: session.session_key,
                last_activity: format_time(session.last_write_at),
                counts: session_counts,
                turns,
                next: None,
                total: u64::try_from(total).unwrap_or(0),
            },
            next,
        ))
    }

    /// The turn's place in its session (docs/api.md "A turn's place"): its number (1 for the oldest, in
    /// `turn_seq` order, as the turns API numbers it), when it was first recorded, the session's number
    /// of turns and its neighbours (`None` at either end), read in one read transaction. 404 for an
    /// unknown or expired session, then for an unknown turn.
    pub async fn turn_place(
        &self,
        session_key: &SessionKey,
        turn: &LogicalTurnId,
    ) -> Result<TurnPlace, LedgerError> {
        let session = self.session(session_key).await?;
        let read = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let own: Option<(i64, i64)> = sqlx::query_as(
                "SELECT turn_seq, created_at FROM turns WHERE session_key = $1 AND logical_turn_id = $2",
            )
            .bind(session_key.as_str())
            .bind(turn.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            match own {
                None => None,
                Some((seq, created_at)) => {
                    let below: i64 = sqlx::query_scalar(
                        "SELECT COUNT(*) FROM turns WHERE session_key = $1 AND turn_seq < $2",
                    )
                    .bind(session_key.as_str())
                    .bind(seq)
                    .fetch_one(&mut *tx)
                    .await?;
                    let total: i64 =
                        sqlx::query_scalar("SELECT COUNT(*) FROM turns WHERE session_key = $1")
                            .bind(session_key.as_str())
                            .fetch_one(&mut *tx)
                            .await?;
                    let previous: Option<String> = sqlx::query_scalar(
                        "SELECT logical_turn_id FROM turns WHERE session_key = $1 AND turn_seq < $2 \
                         ORDER BY turn_seq DESC LIMIT 1",
                    )
                    .bind(session_key.as_str())
                    .bind(seq)
                    .fetch_optional(&mut *tx)
                    .await?;
                    let next: Option<String> = sqlx::query_scalar(
                        "SELECT logical_turn_id FROM turns WHERE session_key = $1 AND turn_seq > $2 \
                         ORDER BY turn_seq LIMIT 1",
                    )
                    .bind(session_key.as_str())
                    .bind(seq)
                    .fetch_optional(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    Some((created_at, below, total, previous, next))
                }
            }
        });
        let (created_at, below, total, previous, next) = read.ok_or(LedgerError::TurnNotFound)?;
        let number = u64::try_from(below).unwrap_or(0) + 1;
        Ok(TurnPlace {
            session_key: session.session_key,
            logical_turn_id: turn.to_string(),
            number,
            first_recorded_at: format_time(created_at),
            total: u64::try_from(total).unwrap_or(0),
            previous: previous.map(|logical_turn_id| TurnLink {
                logical_turn_id,
                number: number - 1,
            }),
            next: next.map(|logical_turn_id| TurnLink {
                logical_turn_id,
                number: number + 1,
            }),
        })
    }

    /// The turn's published entries in recorded order, all of them, with the latest revision as the cursor
    /// to resume from. 404 for an unknown/expired session or an unknown turn. The HTTP API pages
    /// ([`Self::turn_entries_page`]).
    pub async fn turn_entries(
        &self,
        session_key: &SessionKey,
        turn: &LogicalTurnId,
    ) -> Result<TurnEntries, LedgerError> {
        let latest_revision = self.turn_revision(session_key, turn).await?;
        let rows = self.turn_rows(session_key, turn).await?;
        Ok(TurnEntries {
            session_key: session_key.to_string(),
            logical_turn_id: turn.to_string(),
            latest_revision,
            entries: rows.iter().filter_map(turn_entry).collect(),
            next: None,
            counts: None,
        })
    }

    /// One page of the turn's published entries (docs/api.md "Dashboard reads", the entries API): in
    /// recorded order (`sequence`; newest first with `newest_first`), only those whose
    /// `mutation_revision` is above `after_revision` when it is given (legacy entries, without a
    /// revision, only without it), after the entry `after_sequence` when given (before it, newest first),
    /// at most `limit`. A first read (neither `after_revision` nor `after_sequence`) carries the turn's
    /// counts (`counts`), read in the same transaction. `latest_revision` is the turn's latest, read in the
    /// same read transaction before the entries, so an entry changed meanwhile is sent again on the next
    /// catch-up rather than missed. Answers the page (its `next` left `None`) and the `sequence` to go on
    /// after, when more entries match. Errors in order: 404 (session, expired, turn), then 409
    /// `CursorAhead` when `after_revision` is above the turn's latest revision.
    pub async fn turn_entries_page(
        &self,
        session_key: &SessionKey,
        turn: &LogicalTurnId,
        page: &EntriesPage,
    ) -> Result<(TurnEntries, Option<i64>), LedgerError> {
        self.session(session_key).await?;
        let limit = page.limit.max(1);
        let (latest_revision, mut rows, counts) = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let latest_revision: i64 = sqlx::query_scalar(
                "SELECT latest_revision FROM turns WHERE session_key = $1 AND logical_turn_id = $2",
            )
            .bind(session_key.as_str())
            .bind(turn.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(LedgerError::TurnNotFound)?;
            if let Some(after) = page.after_revision {
                if after > latest_revision {
                    return Err(LedgerError::CursorAhead {
                        cursor: after,
                        latest: latest_revision,
                    });
                }
            }
            let (from, order) = if page.newest_first {
                ("seq < $3", "seq DESC")
            } else {
                ("seq > $3", "seq")
            };
            let rows: Vec<EntryRow> = sqlx::query_as(&format!(
            "SELECT {ENTRY_COLUMNS} FROM entries WHERE session_key = $1 AND logical_turn_id = $2 \
             AND {from} AND (status <> 'approved' OR intent_recorded) \
             AND ($4 IS NULL OR revision > $5) ORDER BY {order} LIMIT $6"
        ))
            .bind(session_key.as_str())
            .bind(turn.as_str())
            .bind(page.after_sequence.unwrap_or(if page.newest_first {
                i64::MAX
            } else {
                i64::MIN
            }))
            .bind(page.after_revision)
            .bind(page.after_revision)
            .bind(i64::from(limit) + 1)
            .fetch_all(&mut *tx)
            .await?;
            // A first read (no cursor of either kind) carries the turn's counts, read in this transaction.
            let counts: Option<Vec<(String, bool, i64)>> =
                if page.after_sequence.is_none() && page.after_revision.is_none() {
                    Some(
                        sqlx::query_as(
                            "SELECT status, intent_recorded, COUNT(*) FROM entries \
                             WHERE session_key = $1 AND logical_turn_id = $2 \
                             GROUP BY status, intent_recorded",
                        )
                        .bind(session_key.as_str())
                        .bind(turn.as_str())
                        .fetch_all(&mut *tx)
                        .await?,
                    )
                } else {
                    None
                };
            tx.commit().await?;
            (latest_revision, rows, counts)
        });
        let counts = counts.map(|rows| {
            let mut c = StatusCounts::default();
            for (status, intent, n) in &rows {
                add_counts(&mut c, status, *intent, *n);
            }
            c
        });
        let next = if rows.len() > limit as usize {
            rows.truncate(limit as usize);
            rows.last().map(|r| r.seq)
        } else {
            None
        };
        Ok((
            TurnEntries {
                session_key: session_key.to_string(),
                logical_turn_id: turn.to_string(),
                latest_revision,
                entries: rows.iter().filter_map(turn_entry).collect(),
                next: None,
                counts,
            },
            next,
        ))
    }
}
