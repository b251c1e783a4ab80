//! The read side of the ledger: history, replay snapshots and the dashboard's reads. Every record is
//! projected on read (seed 000: "Records are derived on read from the session's mutation ledger").
//! Expired sessions are hidden from every read.

use std::collections::HashMap;
use std::sync::Arc;

pub use crate::chunks::{HistoryChunks, OperationHistoryChunks, ReplayChunks, ReplayEvent};
use crate::error::LedgerError;
use crate::ids::{Cursor, LogicalTurnId, MutationId, SessionKey};
use crate::projection::project;
use crate::rows::{change, prefixed, EntryRow, HistoryRow, ENTRY_COLUMNS, HISTORY_COLUMNS};
use crate::store::{format_time, on_read, Dialect, Inner};
use crate::wire::{
    Claim, LedgerStatus, MutationOutcome, OperationHistory, OperationMatch, SessionList,
    SessionSummary, SessionTurns, StatusCounts, TurnEntries, TurnEntry, TurnSummary, UnknownsPage,
};

/// A replay snapshot of one logical turn (seed 000, `GET /api/mutation-events`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// Legacy entries first (full replay only), then oldest revision first.
    pub events: Vec<ReplayEvent>,
    /// The cursor the request came with, if any.
    pub cursor: Option<i64>,
    /// The turn's latest revision when the snapshot was taken.
    pub latest_revision: i64,
}

impl Replay {
    /// The id a client should hold after this snapshot: max(cursor, highest revision sent), or `None` when
    /// that is 0 (no `id:` block is written then).
    pub fn final_id(&self) -> Option<i64> {
        let sent = self
            .events
            .iter()
            .filter_map(|e| e.revision)
            .max()
            .unwrap_or(0);
        let id = sent.max(self.cursor.unwrap_or(0));
        (id > 0).then_some(id)
    }
}

/// What one page of a turn's entries asks for ([`SessionManager::turn_entries_page`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntriesPage {
    /// Only entries whose revision is above this one (legacy entries, without a revision, never then).
    pub after_revision: Option<i64>,
    /// Only entries recorded after this `sequence` (the keyset position of the previous page).
    pub after_sequence: Option<i64>,
    /// At most this many entries (at least 1).
    pub limit: u32,
    /// Newest first (`sequence` descending; `after_sequence` then goes on with older entries).
    pub newest_first: bool,
}

/// What one page of a session's turns asks for ([`SessionManager::turns_page`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnsPage {
    /// Go on after the turn at this position (`turn_seq` of the previous page's last turn).
    pub after: Option<i64>,
    /// At most this many turns (at least 1).
    pub limit: u32,
    /// Newest turn first (`after` then goes on with older turns).
    pub newest_first: bool,
}

/// The read side. Cheap to clone.
#[derive(Clone)]
pub struct SessionManager {
    inner: Arc<Inner>,
}

/// An entry with what the support reads add to it: the time of its latest history row that set its
/// status (`None` without history) and its count of notes.
#[derive(sqlx::FromRow)]
struct MatchRow {
    #[sqlx(flatten)]
    entry: EntryRow,
    status_since: Option<i64>,
    notes: i64,
    last_note: Option<String>,
    claim_actor: Option<String>,
    claim_at: Option<i64>,
}

/// The extra columns of a [`MatchRow`], after the entry's (`e`) columns.
/// `status_since` skips the rows that leave the status as it was (metadata, notes, claims); `last_note`
/// and the claim (`claim_actor`, `claim_at`: its latest `claim` or `release` row, when a `claim`) read the
/// partial index `history_staff_by_entry`.
const MATCH_COLUMNS: &str = "\
    (SELECT h.at FROM history h WHERE h.entry_seq = e.seq \
     AND h.kind NOT IN ('metadata', 'note', 'claim', 'release') \
     ORDER BY h.id DESC LIMIT 1) AS status_since, \
    (SELECT COUNT(*) FROM history h WHERE h.entry_seq = e.seq AND h.kind = 'note') AS notes, \
    (SELECT h.note FROM history h WHERE h.entry_seq = e.seq AND h.kind = 'note' \
     ORDER BY h.id DESC LIMIT 1) AS last_note, \
    (SELECT CASE WHEN h.kind = 'claim' THEN h.actor END FROM history h WHERE h.entry_seq = e.seq \
     AND h.kind IN ('claim', 'release') ORDER BY h.id DESC LIMIT 1) AS claim_actor, \
    (SELECT CASE WHEN h.kind = 'claim' THEN h.at END FROM history h WHERE h.entry_seq = e.seq \
     AND h.kind IN ('claim', 'release') ORDER BY h.id DESC LIMIT 1) AS claim_at";

/// The filter of [`SessionManager::sessions`] over `sessions s`, numbered parameters: `?1` live since
/// (ms; or the `active_after` bound when later), `?2` has_unknown (1, 0 or NULL), `?3` tool, `?4` prefix,
/// `?5` active before (ms, exclusive; `i64::MAX` when unbounded). Both activity bounds are plain
/// comparisons on `last_write_at`, a range of the index `sessions_by_activity`. The prefix is compared as bytes (`substr`
/// of BLOBs), so `%` and `_` are literal. "Open unknown" is the status test of the partial index
/// `entries_open_unknown_by_turn`, word for word, so the test reads that index.
fn session_filter(d: Dialect) -> String {
    let prefix = match d {
        Dialect::Sqlite => {
            "substr(CAST(s.session_key AS BLOB), 1, length(CAST($4 AS BLOB))) = CAST($4 AS BLOB)"
        }
        // Key columns compare bytewise (`COLLATE "C"`, migrations_pg); a prefix of characters is a
        // prefix of bytes.
        Dialect::Postgres => "starts_with(s.session_key, $4)",
    };
    format!(
        "s.last_write_at >= $1 AND s.last_write_at < $5 \
    AND ($2 IS NULL OR $2 = CASE WHEN EXISTS (SELECT 1 FROM entries e \
         WHERE e.session_key = s.session_key \
         AND e.status IN ('outcome_unknown', 'execution_started')) THEN 1 ELSE 0 END) \
    AND ($3 IS NULL OR EXISTS (SELECT 1 FROM entries e WHERE e.session_key = s.session_key \
         AND e.tool = $3 AND (e.status <> 'approved' OR e.intent_recorded))) \
    AND ($4 IS NULL OR {prefix})"
    )
}
/// The filter of [`SessionManager::open_unknowns`] over `entries e JOIN sessions s`, numbered
/// parameters: `?1` live since (ms), `?2` tool, `?3` session key, `?4` opened by (ms: now less the
/// minimum age), `?5` tool substring, `?6` session key substring (both already lower-cased: compared with
/// the lower-cased column, ASCII letters only on SQLite), `?7` / `?8` settled at or after / before (ms).
/// The entry's open time is `status_since` of [`MATCH_COLUMNS`], the time `age_secs` counts from.
fn unknown_filter(d: Dialect) -> String {
    let contains = |column: &str, param: &str| match d {
        Dialect::Sqlite => format!("instr(lower({column}), {param}) > 0"),
        Dialect::Postgres => format!("strpos(lower({column}), {param}) > 0"),
    };
    format!(
        "e.status IN ('outcome_unknown', 'execution_started') AND s.last_write_at >= $1 \
    AND ($2 IS NULL OR e.tool = $2) AND ($3 IS NULL OR e.session_key = $3) \
    AND ($4 IS NULL OR (SELECT h.at FROM history h WHERE h.entry_seq = e.seq \
         AND h.kind NOT IN ('metadata', 'note', 'claim', 'release') ORDER BY h.id DESC LIMIT 1) <= $4) \
    AND ($5 IS NULL OR {}) AND ($6 IS NULL OR {}) \
    AND ($7 IS NULL OR e.settled_at >= $7) AND ($8 IS NULL OR e.settled_at < $8)",
        contains("e.tool", "$5"),
        contains("e.session_key", "$6"),
    )
}

/// Sessions one page of the list holds by default, and at most (docs/api.md "Sessions").
pub const SESSIONS_DEFAULT_LIMIT: u32 = 50;
pub const SESSIONS_MAX_LIMIT: u32 = 200;
/// Items one page of the support queue holds by default, and at most (docs/api.md "Support queue").
pub const UNKNOWNS_DEFAULT_LIMIT: u32 = 200;
pub const UNKNOWNS_MAX_LIMIT: u32 = 1000;
/// Entries one page of a turn's entries holds by default and at most (docs/api.md "Turn entries").
pub const ENTRIES_MAX_LIMIT: u32 = 1000;
/// Turns one page of a session's turns holds by default, and at most (docs/api.md "Turns").
pub const TURNS_DEFAULT_LIMIT: u32 = 200;
pub const TURNS_MAX_LIMIT: u32 = 1000;

/// What one page of the sessions list asks for ([`SessionManager::sessions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionsQuery {
    /// At most this many sessions (at least 1).
    pub limit: u32,
    /// Go on after this session (the previous page's last).
    pub after: Option<SessionsAfter>,
    /// Only sessions with (`true`) or without (`false`) an open unknown.
    pub has_unknown: Option<bool>,
    /// Only sessions with a published entry of this exact tool.
    pub tool: Option<String>,
    /// Only sessions whose key starts with these bytes.
    pub prefix: Option<String>,
    /// Only sessions last active at or after this time (ms since the epoch).
    pub active_after: Option<i64>,
    /// Only sessions last active before this time (ms since the epoch).
    pub active_before: Option<i64>,
}

impl Default for SessionsQuery {
    /// The first page of every session, [`SESSIONS_DEFAULT_LIMIT`] long.
    fn default() -> Self {
        SessionsQuery {
            limit: SESSIONS_DEFAULT_LIMIT,
            after: None,
            has_unknown: None,
            tool: None,
            prefix: None,
            active_after: None,
            active_before: None,
        }
    }
}

/// A position in the sessions list: its last session's last write (ms) and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionsAfter {
    pub last_write_at: i64,
    pub session_key: String,
}

/// What one page of the support queue asks for ([`SessionManager::open_unknowns`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownsQuery {
    /// At most this many items (at least 1).
    pub limit: u32,
    /// Go on after this item (the previous page's last).
    pub after: Option<UnknownsAfter>,
    /// Only items of this exact tool.
    pub tool: Option<String>,
    /// Only items of this exact session.
    pub session_key: Option<String>,
    /// Only items open at least this many whole seconds (their `age_secs` known and at least this).
    pub min_age_secs: Option<u64>,
    /// Only items whose tool contains this text, case-insensitively (ASCII letters on SQLite).
    pub tool_like: Option<String>,
    /// Only items whose session key contains this text, case-insensitively (ASCII letters on SQLite).
    pub session_like: Option<String>,
    /// Only items settled at or after this time (ms since the Unix epoch); in-flight items have no settle.
    pub settled_after: Option<i64>,
    /// Only items settled before this time (ms since the Unix epoch).
    pub settled_before: Option<i64>,
    /// The order of the items.
    pub sort: UnknownsSort,
}

/// The order of the support queue (docs/api.md "Support queue"): by age (`recorded_at`, then `sequence`),
/// by tool or by session key (each then by age, oldest first), either way round. `descending` by age is
/// the oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnknownsSort {
    pub by: UnknownsSortBy,
    pub descending: bool,
}

/// What the support queue is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownsSortBy {
    #[default]
    Age,
    Tool,
    Session,
}

impl UnknownsSort {
    /// The queue's first order: oldest first.
    pub const OLDEST_FIRST: UnknownsSort = UnknownsSort {
        by: UnknownsSortBy::Age,
        descending: true,
    };

    /// Whether the items run in ascending `recorded_at` order within equal keys: by age, descending
    /// (oldest first) is ascending time.
    fn time_ascending(self) -> bool {
        match self.by {
            UnknownsSortBy::Age => self.descending,
            UnknownsSortBy::Tool | UnknownsSortBy::Session => !self.descending,
        }
    }
}

impl Default for UnknownsQuery {
    /// The first page of every open unknown, [`UNKNOWNS_DEFAULT_LIMIT`] long.
    fn default() -> Self {
        UnknownsQuery {
            limit: UNKNOWNS_DEFAULT_LIMIT,
            after: None,
            tool: None,
            session_key: None,
            min_age_secs: None,
            tool_like: None,
            session_like: None,
            settled_after: None,
            settled_before: None,
            sort: UnknownsSort::OLDEST_FIRST,
        }
    }
}

/// A position in the support queue: its last item's sort key (its tool or session key when sorted by
/// one; `None` by age), `recorded_at` (ms) and `sequence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownsAfter {
    pub key: Option<String>,
    pub recorded_at: i64,
    pub seq: i64,
}

#[derive(sqlx::FromRow)]
struct SessionRow {
    session_key: String,
    created_at: i64,
    last_write_at: i64,
}

impl SessionManager {
    pub(crate) fn new(inner: Arc<Inner>) -> Self {
        SessionManager { inner }
    }

    /// The open ledger (for the reads of other modules, crate::search).
    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    fn live_since(&self) -> i64 {
        self.inner.live_since(self.inner.clock.now_ms())
    }

    /// The session row, or 404 (`SessionNotFound`, `SessionExpired`).
    async fn session(&self, session_key: &SessionKey) -> Result<SessionRow, LedgerError> {
        let row: Option<SessionRow> = on_read!(self.inner, |pool, d| {
            sqlx::query_as(
            "SELECT session_key, created_at, last_write_at FROM sessions WHERE session_key = $1",
        )
        .bind(session_key.as_str())
        .fetch_optional(pool)
        .await?
        });
        match row {
            None => Err(LedgerError::SessionNotFound),
            Some(r) if r.last_write_at < self.live_since() => Err(LedgerError::SessionExpired),
            Some(r) => Ok(r),
        }
    }

    /// Every retained outcome of the session, oldest logical turn first, then in recorded order (seed 000,
    /// "Session history"). 404 for an unknown or expired session. Collects [`Self::history`].
    pub async fn mutation_outcomes(
        &self,
        session_key: &SessionKey,
    ) -> Result<Vec<MutationOutcome>, LedgerError> {
        let mut chunks = self.history(session_key).await?;
        let mut outcomes = Vec::new();
        while let Some(chunk) = chunks.next_chunk().await? {
            outcomes.extend(chunk);
        }
        Ok(outcomes)
    }

    /// The session's history, streamed: [`HistoryChunks`] reads it a chunk at a time (docs/ledger.md
    /// "Reading"). 404 for an unknown or expired session, checked before the first chunk.
    pub async fn history(&self, session_key: &SessionKey) -> Result<HistoryChunks, LedgerError> {
        let session = self.session(session_key).await?;
        Ok(HistoryChunks::new(
            self.inner.clone(),
            session_key.to_string(),
            session.created_at,
        ))
    }

    /// Every operation's history of the session (the answer of [`Self::operation_history`] for each),
    /// streamed: [`OperationHistoryChunks`] reads [`crate::chunks::OPERATIONS_CHUNK`] entries at a time
    /// in the order of [`Self::history`] (oldest logical turn first, then in recorded order), published
    /// or not (docs/ledger.md "Reading"). 404 for an unknown or expired session, checked before the
    /// first chunk.
    pub async fn operation_histories(
        &self,
        session_key: &SessionKey,
    ) -> Result<OperationHistoryChunks, LedgerError> {
        let session = self.session(session_key).await?;
        Ok(OperationHistoryChunks::new(
            self.inner.clone(),
            session_key.to_string(),
            session.created_at,
        ))
    }

    /// The turn's latest revision, or 404 for an unknown/expired session or an unknown turn.
    async fn turn_revision(
        &self,
        session_key: &SessionKey,
        turn: &LogicalTurnId,
    ) -> Result<i64, LedgerError> {
        self.session(session_key).await?;
        on_read!(self.inner, |pool, d| sqlx::query_scalar(
            "SELECT latest_revision FROM turns WHERE session_key = $1 AND logical_turn_id = $2",
        )
        .bind(session_key.as_str())
        .bind(turn.as_str())
        .fetch_optional(pool)
        .await?)
        .ok_or(LedgerError::TurnNotFound)
    }

    /// A replay snapshot (seed 000, `GET /api/mutation-events`). Without a cursor: a full replay, legacy
    /// entries first, then every revisioned entry, oldest revision first. With cursor `n`: entries whose
    /// latest change is after `n`, plus every revisioned entry still `outcome_unknown`, oldest revision
    /// first. Errors in order: 404 (session, expired, turn) then 409 (`CursorAhead`). Collects
    /// [`Self::replay_chunks`].
    pub async fn replay(
        &self,
        session_key: &SessionKey,
        turn: &LogicalTurnId,
        cursor: Option<Cursor>,
    ) -> Result<Replay, LedgerError> {
        let mut chunks = self.replay_chunks(session_key, turn, cursor).await?;
        let mut events = Vec::new();
        while let Some(chunk) = chunks.next_chunk().await? {
            events.extend(chunk);
        }
        Ok(Replay {
            events,
            cursor: chunks.cursor(),
            latest_revision: chunks.latest_revision(),
        })
    }

    /// The replay snapshot, streamed: [`ReplayChunks`] reads it a chunk at a time, only the entries it
    /// sends (docs/ledger.md "Reading"). The 404s and the 409 are decided before the first chunk.
    pub async fn replay_chunks(
        &self,
        session_key: &SessionKey,
        turn: &LogicalTurnId,
        cursor: Option<Cursor>,
    ) -> Result<ReplayChunks, LedgerError> {
        let latest_revision = self.turn_revision(session_key, turn).await?;
        let cursor = cursor.map(Cursor::revision);
        if let Some(c) = cursor {
            if c > latest_revision {
                return Err(LedgerError::CursorAhead {
                    cursor: c,
                    latest: latest_revision,
                });
            }
        }
        Ok(ReplayChunks::new(
            self.inner.clone(),
            session_key.to_string(),
            turn.to_string(),
            cursor,
            latest_revision,
        ))
    }

    async fn turn_rows(
        &self,
        session_key: &SessionKey,
        turn: &LogicalTurnId,
    ) -> Result<Vec<EntryRow>, LedgerError> {
        Ok(on_read!(self.inner, |pool, d| {
            sqlx::query_as(&format!(
            "SELECT {ENTRY_COLUMNS} FROM entries WHERE session_key = $1 AND logical_turn_id = $2 ORDER BY seq"
        ))
        .bind(session_key.as_str())
        .bind(turn.as_str())
        .fetch_all(pool)
        .await?
        }))
    }

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
                    .map_err(|e| LedgerError::Store(sqlx::Error::Protocol(e.to_string())))?;
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

    /// Whether the session can be read: `Ok` for a session that has not expired, else 404
    /// (`SessionNotFound`, `SessionExpired`). Reads one row.
    pub async fn check_session(&self, session_key: &SessionKey) -> Result<(), LedgerError> {
        self.session(session_key).await.map(|_| ())
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
            .map_err(|e| LedgerError::Store(sqlx::Error::Protocol(e.to_string())))?;
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

    /// Support look-up: every published outcome with this `mutation_id`, across sessions that have not
    /// expired (one id may be used in several sessions).
    pub async fn find_operation(
        &self,
        mutation_id: &MutationId,
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
        Ok(matches(&rows, now))
    }

    /// One page of the support queue (docs/api.md "Support queue"): open unknown outcomes (settled
    /// `outcome_unknown` and in flight `execution_started`) across sessions that have not expired, in
    /// `query.sort` order (by default the oldest recorded first: `recorded_at, sequence`), after
    /// `query.after` (the previous page's last item, in the same order), at most `query.limit`, filtered:
    /// `tool` and `session_key` exact, `tool_like` and `session_like` substrings (case-insensitive),
    /// `min_age_secs` (only items whose `age_secs` is known and at least this: open since at least that
    /// many whole seconds, by the same history time as `age_secs`), `settled_after` / `settled_before`
    /// (ms). Each carries `age_secs`, its count of `notes`, its `last_note` and its `claim`. `total`
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
                format!("($10 IS NULL OR {col} {key_cmp} $9 OR ({col} = $9 AND {time_after}))")
            }
        };
        let order = match key_column {
            None => format!("e.recorded_at {time_dir}, e.seq {time_dir}"),
            Some(col) => format!("{col} {key_dir}, e.recorded_at {time_dir}, e.seq {time_dir}"),
        };
        let (total, rows) = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let filter = unknown_filter(d);
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
                },
                recorded_at: r.entry.recorded_at,
                seq: r.entry.seq,
            })
        } else {
            None
        };
        Ok((
            UnknownsPage {
                matches: matches(&rows, now),
                next: None,
                total: u64::try_from(total).unwrap_or(0),
                // The whole queue's, read by `ledger_gauges` (the server fills it in).
                oldest_unknown_age_secs: None,
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
            alerted_at: None,
        })
    }
}

/// A row of [`sessions_counts_sql`]: session key, status, intent flag, how many.
pub(crate) type CountRow = (String, String, bool, i64);

/// Counts by status of the sessions whose keys `$1` holds (a JSON array): one grouped read of
/// `entries`, rows as [`CountRow`], folded by [`counts_by_session`].
pub(crate) fn sessions_counts_sql(d: Dialect) -> String {
    format!(
        "SELECT session_key, status, intent_recorded, COUNT(*) FROM entries WHERE {} \
         GROUP BY session_key, status, intent_recorded",
        d.text_in("session_key", 1)
    )
}

/// The counts of [`sessions_counts_sql`] by session key.
pub(crate) fn counts_by_session(rows: &[CountRow]) -> HashMap<&str, StatusCounts> {
    let mut by_key: HashMap<&str, StatusCounts> = HashMap::new();
    for (key, status, intent, n) in rows {
        add_counts(by_key.entry(key.as_str()).or_default(), status, *intent, *n);
    }
    by_key
}

fn add_counts(counts: &mut StatusCounts, status: &str, intent: bool, n: i64) {
    let Some(ledger) = LedgerStatus::parse(status) else {
        return;
    };
    if let Some(published) = crate::projection::published_status(ledger, intent) {
        for _ in 0..n {
            counts.add(published, ledger == LedgerStatus::ExecutionStarted);
        }
    }
}

fn turn_entry(row: &EntryRow) -> Option<TurnEntry> {
    Some(TurnEntry {
        sequence: row.seq,
        mutation_revision: row.revision,
        outcome: project(&row.ledger_entry())?,
        ledger_status: row.ledger_status(),
        recorded_at: format_time(row.recorded_at),
        settled_at: row.settled_at.map(format_time),
    })
}

/// The published matches of `rows` at `now` (ms): `age_secs` only for an open entry with history.
fn matches(rows: &[MatchRow], now: i64) -> Vec<OperationMatch> {
    rows.iter()
        .filter_map(|r| {
            let open = matches!(
                r.entry.status,
                LedgerStatus::OutcomeUnknown | LedgerStatus::ExecutionStarted
            );
            Some(OperationMatch {
                session_key: r.entry.session_key.clone(),
                entry: turn_entry(&r.entry)?,
                age_secs: r
                    .status_since
                    .filter(|_| open)
                    .map(|since| u64::try_from(now.saturating_sub(since) / 1000).unwrap_or(0)),
                notes: Some(u64::try_from(r.notes).unwrap_or(0)),
                last_note: r.last_note.clone(),
                claim: match (&r.claim_actor, r.claim_at) {
                    (Some(actor), Some(at)) => Some(Claim {
                        by: actor.strip_prefix("staff:").unwrap_or(actor).to_owned(),
                        at: format_time(at),
                    }),
                    _ => None,
                },
                alerted_at: None,
            })
        })
        .collect()
}
