//! Search (docs/ledger.md "Search", docs/api.md "Search"): the sessions whose key, and the published
//! operations whose `mutation_id`, title or resource id, contain a text, case-insensitively, newest first,
//! in pages.
//!
//! A text of [`SEARCH_SUBSTRING_MIN_CHARS`] characters or more finds its candidates through a trigram
//! index (SQLite: the FTS5 tables `sessions_search` and `entries_search`; Postgres: `pg_trgm` GIN
//! indexes on `sessions_search_text` and `entries_search_text`, copies of the searched text that a
//! settle does not rewrite, docs/ledger.md "Search") by at most [`SEARCH_TRIGRAMS_MAX`] of its
//! trigrams, and each candidate is then checked exactly; a page examines at most [`SEARCH_CANDIDATES_MAX`] candidates of each group, so its cost is
//! bounded whatever the text and the ledger hold. A group that reaches the bound before its page is full
//! answers the matches found so far and goes on from there on the next page (docs/api.md "Search": a
//! page may be short, even empty, while `next` is not null). A shorter text (one or two characters, a
//! word of Chinese or Japanese, say) is looked for inside the same values, exactly, by a walk of the
//! newest rows within a window of the newest [`SEARCH_SHORT_NEWEST`] sessions and operations
//! (`short`; docs/ledger.md "A short text"), and the page that reaches the window's end says so.

mod fold;
mod short;
mod terms;

pub use fold::{fts5_fold, fts5_folded};
pub use short::{SearchFloors, SEARCH_SHORT_NEWEST};
pub use terms::{chosen_trigrams, fts_candidates, like_candidates, SEARCH_TRIGRAMS_MAX};

use crate::error::LedgerError;
use crate::projection::project;
use crate::rows::prefixed;
use crate::rows::EntryRow;
use crate::sessions::{counts_by_session, sessions_counts_sql, CountRow, SessionManager};
use crate::store::{format_time, on_read, Dialect};
use crate::wire::{OperationHit, SearchResults, SessionHit};

/// Items of each group one page holds by default, and at most.
pub const SEARCH_DEFAULT_LIMIT: u32 = 20;
pub const SEARCH_MAX_LIMIT: u32 = 100;
/// The longest search text, in bytes ([`crate::ids::is_search_text`]).
pub use crate::ids::SEARCH_TEXT_MAX_BYTES as SEARCH_MAX_BYTES;
/// The fewest characters a text needs to be looked up through the trigram index; a shorter one is looked
/// for by a walk of the newest rows ([`SEARCH_SHORT_NEWEST`]).
pub const SEARCH_SUBSTRING_MIN_CHARS: usize = 3;
/// The most candidates one page examines in each group (sessions, operations): rows the index gives
/// for the chosen trigrams (SQLite), or, on Postgres, rows of its walk of the newest ones and, after
/// it, rows the index gives (each at most this many). Reached before the page is full, the group's
/// `next` goes on after the last candidate examined.
pub const SEARCH_CANDIDATES_MAX: u32 = 1000;

/// What one page of a search asks for ([`SessionManager::search`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The text, as given (not empty, at most [`SEARCH_MAX_BYTES`]; the caller checks).
    pub text: String,
    /// At most this many sessions, and this many operations (at least 1).
    pub limit: u32,
    /// Go on after the previous page (`None`: the first page).
    pub after: Option<SearchAfter>,
}

/// Where the next page of each group goes on: after its position, or `None` when the group ended on an
/// earlier page; and, for a text shorter than [`SEARCH_SUBSTRING_MIN_CHARS`], the window its first page
/// fixed (`None`: found again from the positions, as on a first page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchAfter {
    pub sessions: Option<SessionPosition>,
    /// The `sequence` of the last operation given.
    pub operations: Option<i64>,
    pub floors: Option<SearchFloors>,
}

/// A session's place in the search order, newest first: on SQLite its search id (`at`; `key` empty), on
/// Postgres its creation time (`at`, ms) and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPosition {
    pub at: i64,
    pub key: String,
}

#[derive(sqlx::FromRow)]
struct SessionFound {
    position: i64,
    session_key: String,
    last_write_at: i64,
}

/// A session a Postgres search examined, and whether it matches (`hit`).
#[derive(sqlx::FromRow)]
struct SessionTested {
    position: i64,
    session_key: String,
    last_write_at: i64,
    hit: bool,
}

/// The published-entry test of the projection (`projection::published_status`), in SQL.
const PUBLISHED: &str = "(e.status <> 'approved' OR e.intent_recorded = TRUE)";

/// The newest rows (below the page's position) a Postgres search tests in order before it asks the
/// trigram index: a text most rows hold fills a page from them, and one that does not is rare enough
/// that the index's candidates are few.
const POSTGRES_PROBE_ROWS: u32 = SEARCH_CANDIDATES_MAX;

/// Postgres: a session comes after the position `($2, $3)` in the newest-first order.
const SESSIONS_AFTER: &str = "(s.created_at < $2 OR (s.created_at = $2 AND s.session_key > $3))";

/// The turn number of each operation of the sequences bound as a JSON array (`$1`): its turn's place in
/// its session, 1 for the oldest (docs/api.md "Turns"), counted on `turns_by_session`.
fn turn_numbers_sql(d: Dialect) -> String {
    format!(
        "SELECT e.seq, (SELECT COUNT(*) FROM turns u WHERE u.session_key = t.session_key \
         AND u.turn_seq <= t.turn_seq) AS number FROM entries e JOIN turns t \
         ON t.session_key = e.session_key AND t.logical_turn_id = e.logical_turn_id WHERE {}",
        d.int_in("e.seq", 1)
    )
}

/// SQLite: the candidates of a group, newest first: the row ids of its FTS5 table (`table`) holding
/// every chosen trigram ([`fts_candidates`], `$1`) below `$2`, at most [`SEARCH_CANDIDATES_MAX`].
fn fts_candidates_sql(table: &str) -> String {
    format!(
        "SELECT rowid FROM {table} WHERE {table} MATCH $1 AND rowid < $2 \
         ORDER BY rowid DESC LIMIT {SEARCH_CANDIDATES_MAX}"
    )
}

/// Postgres: whether an operation (`e`, of session `s`) matches: one of its fields, lowercased, holds the
/// text (`$1`) lowercased (what `ILIKE '%text%'` means, but found by `strpos`, whose cost is linear in
/// the field: `ILIKE` tries the whole text at every position, and a field of 512 `a` against a text of
/// 255 `a` and a `b` took 12 times as long, docs/ledger.md "Search"), its session is live (`$3`) and it
/// is published. (`NULL` title or resource id: no match, never `NULL`).
const POSTGRES_OPERATION_HIT: &str = "COALESCE((strpos(lower(e.mutation_id), lower($1)) > 0 \
     OR strpos(lower(e.meta_title), lower($1)) > 0 OR strpos(lower(e.meta_id), lower($1)) > 0) \
     AND s.last_write_at >= $3 AND (e.status <> 'approved' OR e.intent_recorded = TRUE), FALSE)";

/// Postgres, first step: the newest [`POSTGRES_PROBE_ROWS`] operations below `$2`, newest first, each
/// with whether it matches ([`POSTGRES_OPERATION_HIT`]).
fn postgres_operations_probe_sql() -> String {
    format!(
        "SELECT e.seq, {POSTGRES_OPERATION_HIT} AS hit FROM (SELECT * FROM entries WHERE seq < $2 \
         ORDER BY seq DESC LIMIT {POSTGRES_PROBE_ROWS}) e \
         JOIN sessions s ON s.session_key = e.session_key ORDER BY e.seq DESC"
    )
}

/// Postgres, second step: the sequences of up to [`SEARCH_CANDIDATES_MAX`] + 1 operations below `$1`
/// whose fields match the candidate pattern ([`like_candidates`], `$2`), in no order, read through the
/// trigram index alone (after [`POSTGRES_CANDIDATES_BEGIN`]). More than the bound: too many to examine
/// on this page. The searched fields are read from `entries_search_text`, their copy that a settle
/// does not rewrite (migration `0013`, docs/ledger.md "Search").
fn postgres_operations_candidates_sql() -> String {
    format!(
        "SELECT seq FROM entries_search_text \
         WHERE (mutation_id ILIKE $2 OR meta_title ILIKE $2 OR meta_id ILIKE $2) AND seq + 0 < $1 \
         LIMIT {}",
        SEARCH_CANDIDATES_MAX + 1
    )
}

/// Postgres, third step: the operations of the candidate sequences (a JSON array, `$2`), each with
/// whether it matches ([`POSTGRES_OPERATION_HIT`]: the text `$1`, live since `$3`).
fn postgres_operations_tested_sql() -> String {
    format!(
        "SELECT e.seq, {POSTGRES_OPERATION_HIT} AS hit FROM entries e \
         JOIN sessions s ON s.session_key = e.session_key WHERE {}",
        Dialect::Postgres.int_in("e.seq", 2)
    )
}

/// The default budget of one Postgres candidate read; declared with the options it is the default of.
pub use crate::store::POSTGRES_CANDIDATES_BUDGET;

/// Postgres: the statements that run before a candidate read, inside the read transaction, in order: a
/// savepoint (a cancelled read then leaves the transaction usable), then the trigram index as the only
/// way to read the candidates (the planner prices `pg_trgm`'s GIN scans above a sequential scan that
/// stops at the `LIMIT`, and when the candidates are few or none that scan reads and rechecks the whole
/// table) and the read's time budget in ms (`$1`, [`crate::LedgerOptions::search_budget`]), both for
/// this transaction only.
const POSTGRES_CANDIDATES_BEGIN: [&str; 2] = [
    "SAVEPOINT search_candidates",
    "SELECT set_config('enable_seqscan', 'off', true), set_config('statement_timeout', $1, true)",
];

/// Postgres: the statements that run after a candidate read, whatever its end: back to the savepoint,
/// which also undoes the two settings of [`POSTGRES_CANDIDATES_BEGIN`], then its release.
const POSTGRES_CANDIDATES_END: [&str; 2] = [
    "ROLLBACK TO SAVEPOINT search_candidates",
    "RELEASE SAVEPOINT search_candidates",
];

/// Whether a Postgres candidate read was cancelled by its time budget (SQLSTATE 57014).
fn out_of_budget(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.code().as_deref() == Some("57014"))
}

/// Postgres: the sessions' first step ([`postgres_operations_probe_sql`]): the newest
/// [`POSTGRES_PROBE_ROWS`] after `($2, $3)`, each with whether its key holds the text (`$1`, lowercased
/// both, as [`POSTGRES_OPERATION_HIT`]) and it is live (`$4`).
fn postgres_sessions_probe_sql() -> String {
    format!(
        "SELECT s.created_at AS position, s.session_key, s.last_write_at, \
         (strpos(lower(s.session_key), lower($1)) > 0 AND s.last_write_at >= $4) AS hit FROM sessions s \
         WHERE {SESSIONS_AFTER} ORDER BY s.created_at DESC, s.session_key LIMIT {POSTGRES_PROBE_ROWS}"
    )
}

/// Postgres: the sessions' second step ([`postgres_operations_candidates_sql`], read through the trigram
/// index alone after [`POSTGRES_CANDIDATES_BEGIN`]), each with whether it matches; the candidate
/// pattern bound as `$5`, matched against `sessions_search_text`, the keys' copy that the sessions'
/// every write does not rewrite (migration `0013`, docs/ledger.md "Search").
fn postgres_sessions_candidates_sql() -> String {
    format!(
        "SELECT s.created_at AS position, s.session_key, s.last_write_at, \
         (strpos(lower(s.session_key), lower($1)) > 0 AND s.last_write_at >= $4) AS hit \
         FROM sessions_search_text k JOIN sessions s ON s.session_key = k.session_key \
         WHERE k.session_key ILIKE $5 AND (s.created_at + 0 < $2 OR (s.created_at = $2 AND s.session_key > $3)) \
         LIMIT {}",
        SEARCH_CANDIDATES_MAX + 1
    )
}

/// The operations of the sequences bound as a JSON array (`$1`), newest first.
fn operations_by_seq_sql(d: Dialect) -> String {
    format!(
        "SELECT {} FROM entries e WHERE {} ORDER BY e.seq DESC",
        prefixed("e"),
        d.int_in("e.seq", 1)
    )
}

/// SQLite: the live candidates of the operations group (sequences bound as a JSON array, `$1`; live
/// since `$2`) that are published, newest first.
fn sqlite_operation_candidates_sql() -> String {
    format!(
        "SELECT {} FROM entries e JOIN sessions s ON s.session_key = e.session_key \
         WHERE {} AND s.last_write_at >= $2 AND {PUBLISHED} ORDER BY e.seq DESC",
        prefixed("e"),
        Dialect::Sqlite.int_in("e.seq", 1)
    )
}

/// SQLite: the live candidates of the sessions group (search ids bound as a JSON array, `$1`; live since
/// `$2`), newest first.
fn sqlite_session_candidates_sql() -> String {
    format!(
        "SELECT i.id AS position, s.session_key, s.last_write_at \
         FROM session_search_ids i JOIN sessions s ON s.session_key = i.session_key \
         WHERE {} AND s.last_write_at >= $2 ORDER BY i.id DESC",
        Dialect::Sqlite.int_in("i.id", 1)
    )
}

/// Whether `value`, as FTS5's trigram tokenizer folds it, holds `folded` (the text, folded alike): the
/// exact check of a SQLite candidate, the same test as the FTS5 phrase of the text.
fn holds(value: Option<&str>, folded: &str) -> bool {
    value.is_some_and(|v| fts5_folded(v).contains(folded))
}

/// Postgres: runs the candidate read `$read` (a `fetch_all` future of `&mut *$tx`) after
/// [`POSTGRES_CANDIDATES_BEGIN`] and before [`POSTGRES_CANDIDATES_END`] in the read transaction `$tx`,
/// within `$budget_ms`: `None` when it ran out of its budget or read more than
/// [`SEARCH_CANDIDATES_MAX`] rows (the group stops for this page), else the rows. Any other error is
/// the caller's (`?`). A macro because the transaction's type is that of the backend `on_read!` runs.
macro_rules! within_budget {
    ($tx:ident, $budget_ms:expr, $read:expr) => {{
        sqlx::query(POSTGRES_CANDIDATES_BEGIN[0])
            .execute(&mut *$tx)
            .await?;
        sqlx::query(POSTGRES_CANDIDATES_BEGIN[1])
            .bind($budget_ms.to_string())
            .execute(&mut *$tx)
            .await?;
        let read = $read.await;
        for end in POSTGRES_CANDIDATES_END {
            sqlx::query(end).execute(&mut *$tx).await?;
        }
        match read {
            Err(e) if out_of_budget(&e) => None,
            Err(e) => Err(e)?,
            Ok(rows) if rows.len() > SEARCH_CANDIDATES_MAX as usize => None,
            Ok(rows) => Some(rows),
        }
    }};
}

impl SessionManager {
    /// One page of a search (docs/api.md "Search"): up to `query.limit` sessions that have not expired
    /// whose key contains `query.text`, newest first, and up to `query.limit` published operations of such
    /// sessions whose `mutation_id`, published-or-not title or resource id contains it, newest first
    /// (highest `sequence`); case-insensitive (Unicode case folding). Read in one read transaction. Each
    /// group examines at most [`SEARCH_CANDIDATES_MAX`] candidates, found by at most
    /// [`SEARCH_TRIGRAMS_MAX`] trigrams of the text; one that reaches the bound before its page is full
    /// answers the matches it found, fewer than `limit` (maybe none), and goes on after its last
    /// candidate. A text shorter than [`SEARCH_SUBSTRING_MIN_CHARS`] characters is looked for in the same
    /// values within the newest [`crate::LedgerOptions::search_short_newest`] sessions and operations
    /// (the window its first page fixes, [`SearchFloors`]); the page on which a group reaches the
    /// window's end while older rows exist answers `searched_newest` (the window's size). Answers the
    /// page (its `next` left `None`) and where the next one goes on, when either group has more or
    /// stopped at its bound: every page together are every match (of the window, for a short text),
    /// each once, newest first.
    pub async fn search(
        &self,
        query: &SearchQuery,
    ) -> Result<(SearchResults, Option<SearchAfter>), LedgerError> {
        let now = self.inner().clock.now_ms();
        let live_since = self.inner().live_since(now);
        let limit = query.limit.clamp(1, SEARCH_MAX_LIMIT);
        let text = query.text.as_str();
        let substring = text.chars().count() >= SEARCH_SUBSTRING_MIN_CHARS;
        let newest = i64::from(self.inner().search_short_newest);
        // SQLite checks candidates against the text folded as its index folds; Postgres finds the text
        // lowercased in each field lowercased, among candidates that match the chosen trigrams' pieces
        // (an `ILIKE` pattern its index serves).
        let folded = fts5_folded(text);
        let candidate_pattern = if substring {
            like_candidates(text)
        } else {
            String::new()
        };
        // Each group from the top on a first page; a group that ended is not read again.
        let (sessions_from, operations_from, floors) = match &query.after {
            None => (
                Some(SessionPosition {
                    at: i64::MAX,
                    key: String::new(),
                }),
                Some(i64::MAX),
                None,
            ),
            Some(a) => (a.sessions.clone(), a.operations, a.floors.clone()),
        };
        let fetch = i64::from(limit) + 1;
        let wanted = fetch as usize;
        let budget_ms = self.inner().search_budget_ms;
        // SQLite, a short text: the walk of the newest rows, on a read connection's handle, before the
        // page's read transaction (which then reads and checks what it found).
        let walk = match (&self.inner().db, substring) {
            (crate::store::Db::Sqlite { read, .. }, false) => {
                let plan = short::SqliteWalkPlan {
                    needle: folded.chars().collect(),
                    sessions_from: sessions_from.as_ref().map(|p| p.at),
                    operations_from,
                    floors: floors.clone(),
                    newest,
                    live_since,
                    wanted,
                };
                Some(crate::direct::read(read, move |db| short::sqlite_walk(db, &plan)).await?)
            }
            _ => None,
        };
        // Each group: its matches (at most `fetch`, newest first) and, when it reached its bound of
        // candidates first, the position it stopped at; a short text's window; each operation's turn
        // number.
        let (sessions, sessions_stop, entries, entries_stop, counts, floors, numbers) =
            on_read!(self.inner(), |pool, d| {
                let mut tx = pool.begin_with(d.begin_read()).await?;
                // A short text's window: the walk's (SQLite), the cursor's, or found now (Postgres).
                let floors: Option<SearchFloors> = match (d, substring, &walk) {
                    (_, true, _) => None,
                    (_, false, Some(w)) => Some(w.floors.clone()),
                    (_, false, None) => match floors.clone() {
                        Some(f) => Some(f),
                        None => {
                            let mut f = SearchFloors::NONE;
                            if let Some(from) = &sessions_from {
                                let rows: Vec<(i64, String)> =
                                    sqlx::query_as(short::POSTGRES_SESSIONS_FLOOR)
                                        .bind(from.at)
                                        .bind(from.key.as_str())
                                        .bind(newest - 1)
                                        .fetch_all(&mut *tx)
                                        .await?;
                                if let [(at, key), _] = rows.as_slice() {
                                    f.sessions = SessionPosition {
                                        at: *at,
                                        key: key.clone(),
                                    };
                                }
                            }
                            if let Some(from) = operations_from {
                                let rows: Vec<i64> =
                                    sqlx::query_scalar(short::POSTGRES_OPERATIONS_FLOOR)
                                        .bind(from)
                                        .bind(newest - 1)
                                        .fetch_all(&mut *tx)
                                        .await?;
                                if let [floor, _] = rows.as_slice() {
                                    f.operations = *floor;
                                }
                            }
                            Some(f)
                        }
                    },
                };
                let mut sessions: Vec<SessionFound> = Vec::new();
                let mut sessions_stop: Option<SessionPosition> = None;
                if let Some(from) = &sessions_from {
                    match (d, substring, &walk, &floors) {
                        (_, false, Some(w), _) => {
                            if !w.sessions.is_empty() {
                                let rows: Vec<SessionFound> =
                                    sqlx::query_as(&sqlite_session_candidates_sql())
                                        .bind(serde_json::json!(w.sessions).to_string())
                                        .bind(live_since)
                                        .fetch_all(&mut *tx)
                                        .await?;
                                sessions = rows
                                    .into_iter()
                                    .filter(|r| holds(Some(&r.session_key), &folded))
                                    .collect();
                            }
                            // The walk found more than the page: it goes on after the page's last.
                            if w.sessions.len() == wanted {
                                let cut = w.sessions[limit as usize - 1];
                                sessions.retain(|r| r.position >= cut);
                                sessions_stop = Some(SessionPosition {
                                    at: cut,
                                    key: String::new(),
                                });
                            }
                        }
                        (_, false, None, f) => {
                            let f = f.clone().unwrap_or(SearchFloors::NONE);
                            sessions = sqlx::query_as(short::POSTGRES_SHORT_SESSIONS)
                                .bind(text)
                                .bind(from.at)
                                .bind(from.key.as_str())
                                .bind(live_since)
                                .bind(f.sessions.at)
                                .bind(f.sessions.key.as_str())
                                .bind(newest)
                                .bind(fetch)
                                .fetch_all(&mut *tx)
                                .await?;
                        }
                        (Dialect::Sqlite, true, _, _) => {
                            let candidates: Vec<i64> =
                                sqlx::query_scalar(&fts_candidates_sql("sessions_search"))
                                    .bind(fts_candidates(text))
                                    .bind(from.at)
                                    .fetch_all(&mut *tx)
                                    .await?;
                            if !candidates.is_empty() {
                                let rows: Vec<SessionFound> =
                                    sqlx::query_as(&sqlite_session_candidates_sql())
                                        .bind(serde_json::json!(candidates).to_string())
                                        .bind(live_since)
                                        .fetch_all(&mut *tx)
                                        .await?;
                                sessions = rows
                                    .into_iter()
                                    .filter(|r| holds(Some(&r.session_key), &folded))
                                    .take(wanted)
                                    .collect();
                            }
                            if sessions.len() < wanted
                                && candidates.len() == SEARCH_CANDIDATES_MAX as usize
                            {
                                sessions_stop = candidates.last().map(|&at| SessionPosition {
                                    at,
                                    key: String::new(),
                                });
                            }
                        }
                        (Dialect::Postgres, true, _, _) => {
                            let probed: Vec<SessionTested> =
                                sqlx::query_as(&postgres_sessions_probe_sql())
                                    .bind(text)
                                    .bind(from.at)
                                    .bind(from.key.as_str())
                                    .bind(live_since)
                                    .fetch_all(&mut *tx)
                                    .await?;
                            let walked_to = (probed.len() == POSTGRES_PROBE_ROWS as usize)
                                .then(|| probed.last())
                                .flatten()
                                .map(|r| SessionPosition {
                                    at: r.position,
                                    key: r.session_key.clone(),
                                });
                            let mut hits: Vec<SessionTested> =
                                probed.into_iter().filter(|r| r.hit).collect();
                            if let Some(w) = walked_to.filter(|_| hits.len() < wanted) {
                                let more: Option<Vec<SessionTested>> = within_budget!(
                                    tx,
                                    budget_ms,
                                    sqlx::query_as(&postgres_sessions_candidates_sql())
                                        .bind(text)
                                        .bind(w.at)
                                        .bind(w.key.as_str())
                                        .bind(live_since)
                                        .bind(candidate_pattern.as_str())
                                        .fetch_all(&mut *tx)
                                );
                                if let Some(more) = more {
                                    let mut more: Vec<SessionTested> =
                                        more.into_iter().filter(|r| r.hit).collect();
                                    more.sort_by(|a, b| {
                                        b.position
                                            .cmp(&a.position)
                                            .then_with(|| a.session_key.cmp(&b.session_key))
                                    });
                                    hits.extend(more);
                                } else {
                                    sessions_stop = Some(w);
                                }
                            }
                            sessions = hits
                                .into_iter()
                                .take(wanted)
                                .map(|r| SessionFound {
                                    position: r.position,
                                    session_key: r.session_key,
                                    last_write_at: r.last_write_at,
                                })
                                .collect();
                        }
                    }
                }
                let mut entries: Vec<EntryRow> = Vec::new();
                let mut entries_stop: Option<i64> = None;
                if let Some(from) = operations_from {
                    match (d, substring, &walk, &floors) {
                        (_, false, Some(w), _) => {
                            if !w.operations.is_empty() {
                                let rows: Vec<EntryRow> =
                                    sqlx::query_as(&sqlite_operation_candidates_sql())
                                        .bind(serde_json::json!(w.operations).to_string())
                                        .bind(live_since)
                                        .fetch_all(&mut *tx)
                                        .await?;
                                entries = rows
                                    .into_iter()
                                    .filter(|e| {
                                        holds(Some(&e.mutation_id), &folded)
                                            || holds(e.meta_title.as_deref(), &folded)
                                            || holds(e.meta_id.as_deref(), &folded)
                                    })
                                    .collect();
                            }
                            // The walk found more than the page: it goes on after the page's last.
                            if w.operations.len() == wanted {
                                let cut = w.operations[limit as usize - 1];
                                entries.retain(|e| e.seq >= cut);
                                entries_stop = Some(cut);
                            }
                        }
                        (_, false, None, f) => {
                            let f = f.clone().unwrap_or(SearchFloors::NONE);
                            let seqs: Vec<i64> =
                                sqlx::query_scalar(&short::postgres_short_operations_sql(text))
                                    .bind(text)
                                    .bind(from)
                                    .bind(live_since)
                                    .bind(f.operations)
                                    .bind(newest)
                                    .bind(fetch)
                                    .fetch_all(&mut *tx)
                                    .await?;
                            if !seqs.is_empty() {
                                entries = sqlx::query_as(&operations_by_seq_sql(d))
                                    .bind(serde_json::json!(seqs).to_string())
                                    .fetch_all(&mut *tx)
                                    .await?;
                            }
                        }
                        (Dialect::Sqlite, true, _, _) => {
                            let candidates: Vec<i64> =
                                sqlx::query_scalar(&fts_candidates_sql("entries_search"))
                                    .bind(fts_candidates(text))
                                    .bind(from)
                                    .fetch_all(&mut *tx)
                                    .await?;
                            if !candidates.is_empty() {
                                let rows: Vec<EntryRow> =
                                    sqlx::query_as(&sqlite_operation_candidates_sql())
                                        .bind(serde_json::json!(candidates).to_string())
                                        .bind(live_since)
                                        .fetch_all(&mut *tx)
                                        .await?;
                                entries = rows
                                    .into_iter()
                                    .filter(|e| {
                                        holds(Some(&e.mutation_id), &folded)
                                            || holds(e.meta_title.as_deref(), &folded)
                                            || holds(e.meta_id.as_deref(), &folded)
                                    })
                                    .take(wanted)
                                    .collect();
                            }
                            if entries.len() < wanted
                                && candidates.len() == SEARCH_CANDIDATES_MAX as usize
                            {
                                entries_stop = candidates.last().copied();
                            }
                        }
                        (Dialect::Postgres, true, _, _) => {
                            let probed: Vec<(i64, bool)> =
                                sqlx::query_as(&postgres_operations_probe_sql())
                                    .bind(text)
                                    .bind(from)
                                    .bind(live_since)
                                    .fetch_all(&mut *tx)
                                    .await?;
                            let walked_to = (probed.len() == POSTGRES_PROBE_ROWS as usize)
                                .then(|| probed.last().map(|&(seq, _)| seq))
                                .flatten();
                            let mut hits: Vec<i64> = probed
                                .into_iter()
                                .filter(|&(_, hit)| hit)
                                .map(|(seq, _)| seq)
                                .collect();
                            if let Some(w) = walked_to.filter(|_| hits.len() < wanted) {
                                let candidates: Option<Vec<i64>> = within_budget!(
                                    tx,
                                    budget_ms,
                                    sqlx::query_scalar(&postgres_operations_candidates_sql())
                                        .bind(w)
                                        .bind(candidate_pattern.as_str())
                                        .fetch_all(&mut *tx)
                                );
                                if let Some(candidates) = candidates {
                                    let more: Vec<(i64, bool)> = if candidates.is_empty() {
                                        Vec::new()
                                    } else {
                                        sqlx::query_as(&postgres_operations_tested_sql())
                                            .bind(text)
                                            .bind(serde_json::json!(candidates).to_string())
                                            .bind(live_since)
                                            .fetch_all(&mut *tx)
                                            .await?
                                    };
                                    let mut more: Vec<i64> = more
                                        .into_iter()
                                        .filter(|&(_, hit)| hit)
                                        .map(|(seq, _)| seq)
                                        .collect();
                                    more.sort_unstable_by(|a, b| b.cmp(a));
                                    hits.extend(more);
                                } else {
                                    entries_stop = Some(w);
                                }
                            }
                            hits.truncate(wanted);
                            if !hits.is_empty() {
                                entries = sqlx::query_as(&operations_by_seq_sql(d))
                                    .bind(serde_json::json!(hits).to_string())
                                    .fetch_all(&mut *tx)
                                    .await?;
                            }
                        }
                    }
                }
                let keys: Vec<&str> = sessions
                    .iter()
                    .take(limit as usize)
                    .map(|s| s.session_key.as_str())
                    .collect();
                let counts: Vec<CountRow> = if keys.is_empty() {
                    Vec::new()
                } else {
                    sqlx::query_as(&sessions_counts_sql(d))
                        .bind(serde_json::json!(keys).to_string())
                        .fetch_all(&mut *tx)
                        .await?
                };
                let numbers: Vec<(i64, i64)> = if entries.is_empty() {
                    Vec::new()
                } else {
                    let seqs: Vec<i64> = entries.iter().map(|e| e.seq).collect();
                    sqlx::query_as(&turn_numbers_sql(d))
                        .bind(serde_json::json!(seqs).to_string())
                        .fetch_all(&mut *tx)
                        .await?
                };
                tx.commit().await?;
                (
                    sessions,
                    sessions_stop,
                    entries,
                    entries_stop,
                    counts,
                    floors,
                    numbers,
                )
            });
        let numbers: std::collections::HashMap<i64, i64> = numbers.into_iter().collect();
        let mut by_key = counts_by_session(&counts);
        let sessions_more = sessions.len() > limit as usize;
        let operations_more = entries.len() > limit as usize;
        let sessions: Vec<&SessionFound> = sessions.iter().take(limit as usize).collect();
        let entries: Vec<&EntryRow> = entries.iter().take(limit as usize).collect();
        let dialect = self.inner().dialect();
        // A full page goes on after its last item; a group that reached its bound of candidates first,
        // after the last candidate it examined.
        let sessions_next = if sessions_more {
            sessions.last().map(|s| SessionPosition {
                at: s.position,
                key: match dialect {
                    Dialect::Sqlite => String::new(),
                    Dialect::Postgres => s.session_key.clone(),
                },
            })
        } else {
            sessions_stop
        };
        let operations_next = if operations_more {
            entries.last().map(|e| e.seq)
        } else {
            entries_stop
        };
        // A short text's group that ended this page, short of a full page, at a window that stops above
        // older rows: the page says it searched the newest rows only.
        let bound_reached = floors.as_ref().is_some_and(|f| {
            (sessions_from.is_some() && sessions_next.is_none() && f.sessions_bounded())
                || (operations_from.is_some()
                    && operations_next.is_none()
                    && f.operations_bounded())
        });
        let next = (sessions_next.is_some() || operations_next.is_some()).then_some(SearchAfter {
            sessions: sessions_next,
            operations: operations_next,
            floors,
        });
        let results = SearchResults {
            sessions: sessions
                .iter()
                .map(|s| SessionHit {
                    session_key: s.session_key.clone(),
                    last_activity: format_time(s.last_write_at),
                    counts: by_key.remove(s.session_key.as_str()).unwrap_or_default(),
                })
                .collect(),
            operations: entries
                .iter()
                .filter_map(|e| {
                    let outcome = project(&e.ledger_entry())?;
                    Some(OperationHit {
                        session_key: e.session_key.clone(),
                        logical_turn_id: outcome.logical_turn_id,
                        turn_number: numbers
                            .get(&e.seq)
                            .map_or(0, |&n| u64::try_from(n).unwrap_or(0)),
                        mutation_id: outcome.mutation_id,
                        tool: outcome.tool,
                        title: outcome.title,
                        status: outcome.status,
                        recorded_at: format_time(e.recorded_at),
                        settled_at: e.settled_at.map(format_time),
                    })
                })
                .collect(),
            next: None,
            searched_newest: bound_reached.then_some(self.inner().search_short_newest),
        };
        Ok((results, next))
    }
}
