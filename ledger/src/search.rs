//! Search (docs/ledger.md "Search", docs/api.md "Search"): the sessions whose key, and the published
//! operations whose `mutation_id`, title or resource id, contain a text, case-insensitively, newest first,
//! in pages.
//!
//! A text of [`SEARCH_SUBSTRING_MIN_CHARS`] characters or more is looked up in a trigram index (SQLite:
//! the FTS5 tables `sessions_search` and `entries_search`; Postgres: `pg_trgm` GIN indexes), so a request
//! costs what it returns, not what the ledger holds. A shorter text matches whole ids only (exact, by
//! their indexes): two characters say too little to search inside ids.

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
/// The fewest characters a text needs to match inside ids; a shorter one matches whole ids.
pub const SEARCH_SUBSTRING_MIN_CHARS: usize = 3;

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
/// earlier page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchAfter {
    pub sessions: Option<SessionPosition>,
    /// The `sequence` of the last operation given.
    pub operations: Option<i64>,
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

/// The published-entry test of the projection (`projection::published_status`), in SQL.
const PUBLISHED: &str = "(e.status <> 'approved' OR e.intent_recorded = TRUE)";

/// The newest operations a Postgres search tests in order before it asks the trigram index: a text
/// most titles hold fills a page from them (0.3 ms on 100,000 operations), and a text that does not is
/// rare enough that the index's matches are few (at most about `fetch` × total ÷ this).
const POSTGRES_PROBE_ROWS: u32 = 2048;

/// The reads of one page of matching sessions, in order, like [`operations_sql`]: each binds the text
/// (`$1`), the position to go on after (`$2`, and on Postgres `$3`, the key that breaks a tie; SQLite
/// reads `$3` only as `$3 = $3`), the earliest live write (`$4`) and how many to fetch (`$5`).
fn sessions_sql(d: Dialect, substring: bool) -> Vec<String> {
    const LIVE: &str = "s.last_write_at >= $4 AND $3 = $3";
    const AFTER: &str = "(s.created_at < $2 OR (s.created_at = $2 AND s.session_key > $3))";
    const NEWEST: &str = "ORDER BY s.created_at DESC, s.session_key LIMIT $5";
    let columns = "s.created_at AS position, s.session_key, s.last_write_at";
    match (d, substring) {
        (Dialect::Sqlite, true) => vec![format!(
            "SELECT i.id AS position, s.session_key, s.last_write_at \
             FROM sessions_search JOIN session_search_ids i ON i.id = sessions_search.rowid \
             JOIN sessions s ON s.session_key = i.session_key \
             WHERE sessions_search MATCH $1 AND sessions_search.rowid < $2 AND {LIVE} \
             ORDER BY sessions_search.rowid DESC LIMIT $5"
        )],
        (Dialect::Sqlite, false) => vec![format!(
            "SELECT i.id AS position, s.session_key, s.last_write_at \
             FROM sessions s JOIN session_search_ids i ON i.session_key = s.session_key \
             WHERE s.session_key = $1 AND i.id < $2 AND {LIVE} ORDER BY i.id DESC LIMIT $5"
        )],
        (Dialect::Postgres, true) => vec![
            format!(
                "SELECT {columns} FROM (SELECT * FROM sessions s WHERE {AFTER} \
                 ORDER BY s.created_at DESC, s.session_key LIMIT {POSTGRES_PROBE_ROWS}) s \
                 WHERE s.session_key ILIKE $1 AND {LIVE} {NEWEST}"
            ),
            format!("SELECT {columns} FROM sessions s WHERE s.session_key ILIKE $1 AND {AFTER} AND {LIVE} {NEWEST}"),
        ],
        (Dialect::Postgres, false) => vec![format!(
            "SELECT {columns} FROM sessions s WHERE s.session_key = $1 AND {AFTER} AND {LIVE} {NEWEST}"
        )],
    }
}

/// The reads of one page of matching operations, in order: each binds the text (`$1`), the sequence
/// to go on below (`$2`), the earliest live write (`$3`) and how many to fetch (`$4`); the first that
/// returns a full page answers. SQLite and whole ids: one indexed read. Postgres substrings: the
/// newest [`POSTGRES_PROBE_ROWS`] operations tested in order, then the matches read from the trigram
/// index first (a materialised CTE; left to itself the planner either walks the primary key backwards
/// and tests every row, the whole table for a rare text, or fetches and sorts every match of a common
/// one: 110 ms and 140 ms on 100,000 operations).
fn operations_sql(d: Dialect, substring: bool) -> Vec<String> {
    let columns = prefixed("e");
    let live = format!("s.last_write_at >= $3 AND {PUBLISHED} ORDER BY e.seq DESC LIMIT $4");
    match (d, substring) {
        (Dialect::Sqlite, true) => vec![format!(
            "SELECT {columns} FROM entries_search \
             JOIN entries e ON e.seq = entries_search.rowid \
             JOIN sessions s ON s.session_key = e.session_key \
             WHERE entries_search MATCH $1 AND entries_search.rowid < $2 AND {live}"
        )],
        (_, false) => vec![format!(
            "SELECT {columns} FROM entries e JOIN sessions s ON s.session_key = e.session_key \
             WHERE e.mutation_id = $1 AND e.seq < $2 AND {live}"
        )],
        (Dialect::Postgres, true) => vec![
            format!(
                "SELECT {columns} FROM (SELECT * FROM entries WHERE seq < $2 \
                 ORDER BY seq DESC LIMIT {POSTGRES_PROBE_ROWS}) e \
                 JOIN sessions s ON s.session_key = e.session_key \
                 WHERE (e.mutation_id ILIKE $1 OR e.meta_title ILIKE $1 OR e.meta_id ILIKE $1) AND {live}"
            ),
            format!(
                "WITH hits AS MATERIALIZED (SELECT seq FROM entries \
                 WHERE mutation_id ILIKE $1 OR meta_title ILIKE $1 OR meta_id ILIKE $1) \
                 SELECT {columns} FROM hits JOIN entries e ON e.seq = hits.seq \
                 JOIN sessions s ON s.session_key = e.session_key \
                 WHERE e.seq < $2 AND {live}"
            ),
        ],
    }
}

/// `text` quoted as one FTS5 phrase (a trigram phrase matches where the text occurs).
fn fts_phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// `text` as a `LIKE` pattern that matches it anywhere, its wildcards and escape character taken
/// literally (Postgres' default escape is `\`).
fn like_anywhere(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

impl SessionManager {
    /// One page of a search (docs/api.md "Search"): up to `query.limit` sessions that have not expired
    /// whose key contains `query.text`, newest first, and up to `query.limit` published operations of such
    /// sessions whose `mutation_id`, published-or-not title or resource id contains it, newest first
    /// (highest `sequence`); case-insensitive (Unicode case folding). A text shorter than
    /// [`SEARCH_SUBSTRING_MIN_CHARS`] characters matches whole session keys and mutation ids only. Read
    /// in one read transaction. Answers the page (its `next` left `None`) and where the next one goes on,
    /// when either group has more.
    pub async fn search(
        &self,
        query: &SearchQuery,
    ) -> Result<(SearchResults, Option<SearchAfter>), LedgerError> {
        let now = self.inner().clock.now_ms();
        let live_since = self.inner().live_since(now);
        let limit = query.limit.clamp(1, SEARCH_MAX_LIMIT);
        let text = query.text.as_str();
        let substring = text.chars().count() >= SEARCH_SUBSTRING_MIN_CHARS;
        // Each group from the top on a first page; a group that ended is not read again.
        let (sessions_from, operations_from) = match &query.after {
            None => (
                Some(SessionPosition {
                    at: i64::MAX,
                    key: String::new(),
                }),
                Some(i64::MAX),
            ),
            Some(a) => (a.sessions.clone(), a.operations),
        };
        let fetch = i64::from(limit) + 1;
        let (sessions, entries, counts) = on_read!(self.inner(), |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            // Operations match on their own fields only (their index holds no session key).
            let pattern = match (d, substring) {
                (_, false) => text.to_owned(),
                (Dialect::Sqlite, true) => fts_phrase(text),
                (Dialect::Postgres, true) => like_anywhere(text),
            };
            let sessions: Vec<SessionFound> = match &sessions_from {
                None => Vec::new(),
                Some(from) => {
                    let mut found = Vec::new();
                    for sql in sessions_sql(d, substring) {
                        found = sqlx::query_as(&sql)
                            .bind(pattern.as_str())
                            .bind(from.at)
                            .bind(from.key.as_str())
                            .bind(live_since)
                            .bind(fetch)
                            .fetch_all(&mut *tx)
                            .await?;
                        if found.len() as i64 >= fetch {
                            break;
                        }
                    }
                    found
                }
            };
            let entries: Vec<EntryRow> = match operations_from {
                None => Vec::new(),
                Some(from) => {
                    let mut found = Vec::new();
                    for sql in operations_sql(d, substring) {
                        found = sqlx::query_as(&sql)
                            .bind(pattern.as_str())
                            .bind(from)
                            .bind(live_since)
                            .bind(fetch)
                            .fetch_all(&mut *tx)
                            .await?;
                        // A read that filled the page is the page: the probe of the newest operations
                        // read them in order, so its first `fetch` matches are the first of all.
                        if found.len() as i64 >= fetch {
                            break;
                        }
                    }
                    found
                }
            };
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
            tx.commit().await?;
            (sessions, entries, counts)
        });
        let mut by_key = counts_by_session(&counts);
        let sessions_more = sessions.len() > limit as usize;
        let operations_more = entries.len() > limit as usize;
        let sessions: Vec<&SessionFound> = sessions.iter().take(limit as usize).collect();
        let entries: Vec<&EntryRow> = entries.iter().take(limit as usize).collect();
        let next = (sessions_more || operations_more).then(|| SearchAfter {
            sessions: sessions
                .last()
                .filter(|_| sessions_more)
                .map(|s| SessionPosition {
                    at: s.position,
                    key: match self.inner().dialect() {
                        Dialect::Sqlite => String::new(),
                        Dialect::Postgres => s.session_key.clone(),
                    },
                }),
            operations: entries.last().filter(|_| operations_more).map(|e| e.seq),
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
                        mutation_id: outcome.mutation_id,
                        tool: outcome.tool,
                        title: outcome.title,
                        status: outcome.status,
                    })
                })
                .collect(),
            next: None,
        };
        Ok((results, next))
    }
}
