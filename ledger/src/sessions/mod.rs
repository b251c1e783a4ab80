//! The read side of the ledger: history, replay snapshots and the dashboard's reads. Every record is
//! projected on read (seed 000: "Records are derived on read from the session's mutation ledger").
//! Expired sessions are hidden from every read.

//!
//! By concern: replay, history and the shared read helpers here; the dashboard's lists in `lists`; finding
//! operations and open unknowns in `unknowns`.

use std::collections::HashMap;
use std::sync::Arc;

mod lists;
mod unknowns;

pub use crate::chunks::{HistoryChunks, OperationHistoryChunks, ReplayChunks, ReplayEvent};
use crate::error::LedgerError;
use crate::ids::{Cursor, LogicalTurnId, MutationId, SessionKey};
use crate::projection::project;
use crate::rows::{change, prefixed, EntryRow, HistoryRow, ENTRY_COLUMNS, HISTORY_COLUMNS};
use crate::store::{format_time, on_read, Dialect, Inner};
use crate::wire::{
    Claim, LedgerStatus, MutationOutcome, OperationHistory, OperationMatch, SessionList,
    SessionSummary, SessionTurns, StatusCounts, TurnEntries, TurnEntry, TurnLink, TurnPlace,
    TurnSummary, UnknownsPage,
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

/// What one page of an operation's history asks for ([`SessionManager::operation_history_page`],
/// docs/api.md "Operation history").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryPage {
    /// Go on after the history row with this id (the previous page's last row), in the page's order.
    pub after: Option<i64>,
    /// At most this many rows (at least 1).
    pub limit: u32,
    /// Newest row first (`after` then goes on with older rows).
    pub newest_first: bool,
    /// Whether the rows internal to staff (`note`, `claim`, `release`) are read: `false` for a viewer,
    /// whose pages are made of the other rows only, so that neither a page's length nor its `next`
    /// tells that internal rows exist.
    pub internal: bool,
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
    (SELECT CASE WHEN h.kind = 'claim' THEN COALESCE('staff:' || h.note, h.actor) END FROM history h \
     WHERE h.entry_seq = e.seq \
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
fn unknown_filter(d: Dialect, state: UnknownsState, claim: Option<&ClaimFilter>) -> String {
    let contains = |column: &str, param: &str| match d {
        Dialect::Sqlite => format!("instr(lower({column}), {param}) > 0"),
        Dialect::Postgres => format!("strpos(lower({column}), {param}) > 0"),
    };
    format!(
        "e.status IN {} AND s.last_write_at >= $1 \
    AND ($2 IS NULL OR e.tool = $2) AND ($3 IS NULL OR e.session_key = $3) \
    AND ($4 IS NULL OR (SELECT h.at FROM history h WHERE h.entry_seq = e.seq \
         AND h.kind NOT IN ('metadata', 'note', 'claim', 'release') ORDER BY h.id DESC LIMIT 1) <= $4) \
    AND ($5 IS NULL OR {}) AND ($6 IS NULL OR {}) \
    AND ($7 IS NULL OR e.settled_at >= $7) AND ($8 IS NULL OR e.settled_at < $8){}",
        state.statuses(),
        contains("e.tool", "$5"),
        contains("e.session_key", "$6"),
        claim.map(|c| format!(" AND {}", c.sql())).unwrap_or_default(),
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
/// History rows one page of an operation's history holds by default, and at most (docs/api.md
/// "Operation history").
pub const HISTORY_DEFAULT_LIMIT: u32 = 500;
pub const HISTORY_MAX_LIMIT: u32 = 1000;

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
    /// Which open entries: settled unknowns, writes in flight, or both (docs/api.md "Deadlines").
    pub state: UnknownsState,
    /// Only entries nobody holds the claim of, or only those this staff member holds (docs/api.md
    /// "Support queue": `claim=unclaimed|mine`).
    pub claim: Option<ClaimFilter>,
}

/// The queue's claim filter (`claim=unclaimed|mine`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimFilter {
    /// Nobody holds the claim.
    Unclaimed,
    /// The staff member of this name holds it (a name [`crate::access::check_staff_name`] refuses holds
    /// nothing).
    HeldBy(String),
}

impl ClaimFilter {
    /// The condition on the entry `e` as SQL: its holder (the latest `claim` or `release` row, when a
    /// `claim`; an assignment's holder is its `note`) is nobody, or `staff:<name>` (a checked staff name
    /// is letters, digits, `.`, `_`, `-`, `@`: safe inside quotes; any other matches nothing).
    fn sql(&self) -> String {
        let holder =
            "(SELECT CASE WHEN h.kind = 'claim' THEN COALESCE('staff:' || h.note, h.actor) END \
             FROM history h WHERE h.entry_seq = e.seq AND h.kind IN ('claim', 'release') \
             ORDER BY h.id DESC LIMIT 1)";
        match self {
            ClaimFilter::Unclaimed => format!("{holder} IS NULL"),
            ClaimFilter::HeldBy(name) if crate::access::check_staff_name(name).is_ok() => {
                format!("{holder} = 'staff:{name}'")
            }
            ClaimFilter::HeldBy(_) => "1 = 0".to_owned(),
        }
    }
}

/// Which open entries the support queue lists (`state=all|unknown|in_flight`, docs/api.md "Deadlines").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownsState {
    /// Settled `outcome_unknown` and in flight `execution_started`.
    #[default]
    All,
    /// Settled `outcome_unknown` only (those the ledger settled at a deadline included).
    Unknown,
    /// In flight (`execution_started`) only.
    InFlight,
}

impl UnknownsState {
    /// The ledger statuses it lists, as an SQL list.
    fn statuses(self) -> &'static str {
        match self {
            UnknownsState::All => "('outcome_unknown', 'execution_started')",
            UnknownsState::Unknown => "('outcome_unknown')",
            UnknownsState::InFlight => "('execution_started')",
        }
    }
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
    /// By deadline (`deadline_at`; the in-flight view's order, soonest first ascending), then by age.
    Deadline,
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
            UnknownsSortBy::Tool | UnknownsSortBy::Session | UnknownsSortBy::Deadline => {
                !self.descending
            }
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
            state: UnknownsState::All,
            claim: None,
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

    /// The open ledger (for the reads of other modules: `search` reads through it).
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

    /// The ledger's id (docs/api.md "The ledger's id"): 32 lowercase hex digits, random, made once when
    /// the ledger was created (migration `0017_ledger_id`, Postgres `0011`), the same for every instance.
    pub async fn ledger_id(&self) -> Result<String, LedgerError> {
        Ok(on_read!(self.inner, |pool, d| sqlx::query_scalar(
            "SELECT ledger_id FROM ledger_identity WHERE id = 1"
        )
        .fetch_one(pool)
        .await?))
    }

    /// Whether the session can be read: `Ok` for a session that has not expired, else 404
    /// (`SessionNotFound`, `SessionExpired`). Reads one row.
    pub async fn check_session(&self, session_key: &SessionKey) -> Result<(), LedgerError> {
        self.session(session_key).await.map(|_| ())
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
        deadline_at: row.deadline_at.map(format_time),
        settled_by: row.settled_by,
        established_by: row.established_by,
    })
}

/// The published matches of `rows` at `now` (ms): `age_secs` only for an open entry with history;
/// each entry's current `attempt_id` with `with_attempt` (the support queue's items).
fn matches(rows: &[MatchRow], now: i64, with_attempt: bool) -> Vec<OperationMatch> {
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
                attempt_id: r.entry.attempt_id.clone().filter(|_| with_attempt),
            })
        })
        .collect()
}
