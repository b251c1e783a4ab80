//! A text shorter than [`super::SEARCH_SUBSTRING_MIN_CHARS`] characters (docs/ledger.md "Search", "A
//! short text"): no trigram index serves it, so its pages walk the newest rows, newest first, and check
//! each one exactly, within a window of the newest [`SEARCH_SHORT_NEWEST`] sessions and as many
//! operations ([`crate::LedgerOptions::search_short_newest`]). The window is fixed by the search's first
//! page ([`SearchFloors`], carried by the cursor), so every page searches the same rows: no match within
//! it is lost or given twice while new rows arrive.
//!
//! SQLite walks the rows through a read connection's handle ([`crate::direct::read`]: no hand-off per
//! row) and checks each value folded as FTS5's trigram tokenizer folds it ([`super::fts5_fold`]), the
//! same test as a longer text's; the page's read transaction then reads the matches by their position
//! and checks them again. Postgres walks them in SQL (`strpos(lower(value), lower(text))`, the same test
//! as a longer text's) inside the page's read transaction.

use std::collections::HashMap;

use super::fold::fts5_fold;
use super::SessionPosition;
use crate::error::LedgerError;

/// The default window of a short text's search; declared with the options it is the default of.
pub use crate::store::SEARCH_SHORT_NEWEST;

/// The window of a short text's search: the oldest session and the oldest operation its pages search,
/// found by its first page (the [`SEARCH_SHORT_NEWEST`]-th newest of each) and carried by the cursor.
/// [`SearchFloors::NONE`]'s values (and any below them) mean "no bound": the group had no more rows
/// than the window holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchFloors {
    /// The oldest session searched, in the search order (SQLite: its search id in `at`; Postgres: its
    /// creation time in `at` and its key); `at` = `i64::MIN`: none.
    pub sessions: SessionPosition,
    /// The lowest `sequence` searched; 0: none.
    pub operations: i64,
}

impl SearchFloors {
    /// No bound in either group.
    pub const NONE: SearchFloors = SearchFloors {
        sessions: SessionPosition {
            at: i64::MIN,
            key: String::new(),
        },
        operations: 0,
    };

    /// Whether the sessions' window stops above older sessions.
    pub fn sessions_bounded(&self) -> bool {
        self.sessions.at > i64::MIN
    }

    /// Whether the operations' window stops above older operations.
    pub fn operations_bounded(&self) -> bool {
        self.operations > 0
    }
}

/// Whether `value` (up to its first NUL, as the trigram tokenizer reads it), each character folded by
/// [`fts5_fold`], holds `needle` (characters already folded, not empty). `buf` is scratch space, reused
/// from row to row.
pub(crate) fn holds_folded(value: &str, needle: &[char], buf: &mut Vec<char>) -> bool {
    // Most values are ASCII, which folds to ASCII: checked byte by byte, without folding into `buf`.
    if value.is_ascii() {
        let bytes = value
            .as_bytes()
            .split(|&b| b == 0)
            .next()
            .unwrap_or_default();
        return needle.iter().all(char::is_ascii)
            && bytes.windows(needle.len()).any(|w| {
                w.iter()
                    .zip(needle)
                    .all(|(b, &c)| char::from(b.to_ascii_lowercase()) == c)
            });
    }
    buf.clear();
    buf.extend(value.chars().take_while(|&c| c != '\0').map(fts5_fold));
    buf.windows(needle.len()).any(|w| w == needle)
}

/// What the SQLite walk found: the search ids of the matching live sessions and the sequences of the
/// matching published operations of live sessions, newest first, at most `wanted` of each, and the
/// window they were found in.
pub(crate) struct SqliteWalk {
    pub sessions: Vec<i64>,
    pub operations: Vec<i64>,
    pub floors: SearchFloors,
}

/// Where the SQLite walk starts and stops, and what it looks for.
pub(crate) struct SqliteWalkPlan {
    /// The folded text.
    pub needle: Vec<char>,
    /// The search id to go on below (`None`: the sessions group ended).
    pub sessions_from: Option<i64>,
    /// The sequence to go on below (`None`: the operations group ended).
    pub operations_from: Option<i64>,
    /// The window, or `None` on a first page: then found here.
    pub floors: Option<SearchFloors>,
    /// The window's size in rows ([`crate::LedgerOptions::search_short_newest`]).
    pub newest: i64,
    pub live_since: i64,
    /// Matches wanted per group (the page's limit + 1).
    pub wanted: usize,
}

/// SQLite: the window's floor below `from` in `table`'s `column`: the `newest`-th row below it when an
/// older one exists, else `none`.
fn sqlite_floor(
    db: &rusqlite::Connection,
    table: &str,
    column: &str,
    from: i64,
    newest: i64,
    none: i64,
) -> Result<i64, LedgerError> {
    let sql = format!(
        "SELECT {column} FROM {table} WHERE {column} < ?1 ORDER BY {column} DESC LIMIT 2 OFFSET ?2"
    );
    let rows = crate::direct::query(db, &sql, &[&from, &(newest - 1)], |row| {
        row.get::<_, i64>(0).map_err(crate::direct::failure)
    })?;
    Ok(if rows.len() == 2 { rows[0] } else { none })
}

/// The SQLite walk of a short text's page (docs/ledger.md "A short text"), in one read transaction of a
/// read connection: the newest sessions below `sessions_from` down to the window's floor (at most
/// `newest` of them), each checked by its key, and likewise the newest operations by their
/// `mutation_id`, title and resource id; an operation must be published and its session live. Each
/// group stops at `wanted` matches.
pub(crate) fn sqlite_walk(
    db: &rusqlite::Connection,
    plan: &SqliteWalkPlan,
) -> Result<SqliteWalk, LedgerError> {
    let tx = db.unchecked_transaction().map_err(crate::direct::failure)?;
    let floors = match &plan.floors {
        Some(f) => f.clone(),
        None => SearchFloors {
            sessions: SessionPosition {
                at: match plan.sessions_from {
                    Some(from) => {
                        sqlite_floor(&tx, "session_search_ids", "id", from, plan.newest, i64::MIN)?
                    }
                    None => i64::MIN,
                },
                key: String::new(),
            },
            operations: match plan.operations_from {
                Some(from) => sqlite_floor(&tx, "entries", "seq", from, plan.newest, 0)?,
                None => 0,
            },
        },
    };
    let mut buf = Vec::new();
    let mut sessions = Vec::new();
    if let Some(from) = plan.sessions_from {
        let mut statement = tx
            .prepare(
                "SELECT i.id, s.session_key, s.last_write_at FROM session_search_ids i \
                 JOIN sessions s ON s.session_key = i.session_key \
                 WHERE i.id < ?1 AND i.id >= ?2 ORDER BY i.id DESC LIMIT ?3",
            )
            .map_err(crate::direct::failure)?;
        let mut rows = statement
            .query(rusqlite::params![from, floors.sessions.at, plan.newest])
            .map_err(crate::direct::failure)?;
        while let Some(row) = rows.next().map_err(crate::direct::failure)? {
            let text = |i: usize| {
                row.get_ref(i)
                    .and_then(|v| Ok(v.as_str()?))
                    .map_err(crate::direct::failure)
            };
            let live = row.get::<_, i64>(2).map_err(crate::direct::failure)? >= plan.live_since;
            if live && holds_folded(text(1)?, &plan.needle, &mut buf) {
                sessions.push(row.get::<_, i64>(0).map_err(crate::direct::failure)?);
                if sessions.len() == plan.wanted {
                    break;
                }
            }
        }
    }
    let mut operations = Vec::new();
    if let Some(from) = plan.operations_from {
        let mut statement = tx
            .prepare(
                "SELECT seq, session_key, mutation_id, meta_title, meta_id, status, intent_recorded \
                 FROM entries WHERE seq < ?1 AND seq >= ?2 ORDER BY seq DESC LIMIT ?3",
            )
            .map_err(crate::direct::failure)?;
        let mut live_of = tx
            .prepare("SELECT last_write_at >= ?2 FROM sessions WHERE session_key = ?1")
            .map_err(crate::direct::failure)?;
        // Each session's liveness, read once per walk.
        let mut live: HashMap<String, bool> = HashMap::new();
        let mut rows = statement
            .query(rusqlite::params![from, floors.operations, plan.newest])
            .map_err(crate::direct::failure)?;
        while let Some(row) = rows.next().map_err(crate::direct::failure)? {
            let text = |i: usize| {
                row.get_ref(i)
                    .and_then(|v| Ok(v.as_str_or_null()?))
                    .map_err(crate::direct::failure)
            };
            let published = text(5)? != Some("approved")
                || row.get::<_, i64>(6).map_err(crate::direct::failure)? != 0;
            let hit = published
                && [2, 3, 4].into_iter().try_fold(false, |hit, i| {
                    Ok::<bool, LedgerError>(
                        hit || text(i)?.is_some_and(|v| holds_folded(v, &plan.needle, &mut buf)),
                    )
                })?;
            if !hit {
                continue;
            }
            let key = text(1)?.unwrap_or_default();
            let is_live = match live.get(key) {
                Some(&l) => l,
                None => {
                    let l = live_of
                        .query_row(rusqlite::params![key, plan.live_since], |r| {
                            r.get::<_, bool>(0)
                        })
                        .or_else(|e| match e {
                            rusqlite::Error::QueryReturnedNoRows => Ok(false),
                            e => Err(e),
                        })
                        .map_err(crate::direct::failure)?;
                    live.insert(key.to_owned(), l);
                    l
                }
            };
            if is_live {
                operations.push(row.get::<_, i64>(0).map_err(crate::direct::failure)?);
                if operations.len() == plan.wanted {
                    break;
                }
            }
        }
    }
    drop(tx);
    Ok(SqliteWalk {
        sessions,
        operations,
        floors,
    })
}

/// Postgres: the window's floor among operations below `$1`: the `$2`-th newest and the one after it
/// (two rows: an older one exists, the first is the floor).
pub(crate) const POSTGRES_OPERATIONS_FLOOR: &str =
    "SELECT seq FROM entries WHERE seq < $1 ORDER BY seq DESC OFFSET $2 LIMIT 2";

/// Postgres: the window's floor among sessions after `($1, $2)` in the search order (as
/// [`POSTGRES_OPERATIONS_FLOOR`], offset `$3`).
pub(crate) const POSTGRES_SESSIONS_FLOOR: &str =
    "SELECT s.created_at, s.session_key FROM sessions s \
     WHERE (s.created_at < $1 OR (s.created_at = $1 AND s.session_key > $2)) \
     ORDER BY s.created_at DESC, s.session_key OFFSET $3 LIMIT 2";

/// Postgres: a short text's page of operations: of the newest `$5` operations below `$2` and at or above
/// the floor `$4`, the sequences of the published ones whose `mutation_id`, title or resource id,
/// lowercased, holds the text (`$1`) lowercased, of live sessions (`$3`), newest first, at most `$6`.
/// The text is tested before the session is joined.
///
/// `lower()` under the database's locale is most of a walk's cost (20,000 rows: about 40 ms of 50), so
/// the test is written as cheaply as gives the same answer for `text`: a text without cased characters
/// (Chinese, digits, punctuation) is looked for as it is (no character lowercases to one of them); one
/// whose lowercase is ASCII without `i` or `k` lowercases the values in ASCII only (`COLLATE "C"`: the
/// only other characters whose lowercase is ASCII are U+0130 `İ` and U+212A, the Kelvin sign, which
/// lowercase to `i` and `k`); any other text lowercases under the locale, as a longer text does.
pub(crate) fn postgres_short_operations_sql(text: &str) -> String {
    let lowered = text.to_lowercase();
    let test = |field: &str| {
        if text.chars().all(|c| !c.is_lowercase() && !c.is_uppercase()) {
            format!("strpos(w.{field}, $1) > 0")
        } else if lowered.is_ascii() && !lowered.contains(['i', 'k']) {
            format!("strpos(lower(w.{field} COLLATE \"C\"), lower($1 COLLATE \"C\")) > 0")
        } else {
            format!("strpos(lower(w.{field}), lower($1)) > 0")
        }
    };
    format!(
        "SELECT e.seq FROM (SELECT * FROM (\
         SELECT seq, session_key, mutation_id, meta_title, meta_id, status, intent_recorded FROM entries \
         WHERE seq < $2 AND seq >= $4 ORDER BY seq DESC LIMIT $5) w \
         WHERE ({} OR {} OR {}) AND (w.status <> 'approved' OR w.intent_recorded = TRUE)) e \
         JOIN sessions s ON s.session_key = e.session_key WHERE s.last_write_at >= $3 \
         ORDER BY e.seq DESC LIMIT $6",
        test("mutation_id"),
        test("meta_title"),
        test("meta_id")
    )
}

/// Postgres: a short text's page of sessions: of the newest `$7` sessions after `($2, $3)` and at or
/// before the floor `($5, $6)` in the search order, the live ones (`$4`) whose key, lowercased, holds
/// the text (`$1`) lowercased, in that order, at most `$8`.
pub(crate) const POSTGRES_SHORT_SESSIONS: &str =
    "SELECT w.created_at AS position, w.session_key, w.last_write_at FROM (\
     SELECT s.created_at, s.session_key, s.last_write_at FROM sessions s \
     WHERE (s.created_at < $2 OR (s.created_at = $2 AND s.session_key > $3)) \
     AND (s.created_at > $5 OR (s.created_at = $5 AND s.session_key <= $6)) \
     ORDER BY s.created_at DESC, s.session_key LIMIT $7) w \
     WHERE strpos(lower(w.session_key), lower($1)) > 0 AND w.last_write_at >= $4 \
     ORDER BY w.created_at DESC, w.session_key LIMIT $8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_lowercases_only_what_the_text_needs() {
        let sql = postgres_short_operations_sql;
        assert!(sql("退款").contains("strpos(w.meta_title, $1) > 0"));
        assert!(sql("7-").contains("strpos(w.meta_id, $1) > 0"));
        assert!(sql("Ad").contains("lower(w.meta_title COLLATE \"C\")"));
        for cased in ["ik", "K", "ü", "Ω"] {
            assert!(
                sql(cased).contains("strpos(lower(w.meta_title), lower($1)) > 0"),
                "{cased}"
            );
        }
    }

    #[test]
    fn a_value_holds_a_short_text_as_the_tokenizer_folds_it() {
        let mut buf = Vec::new();
        let needle = |t: &str| t.chars().map(fts5_fold).collect::<Vec<_>>();
        assert!(holds_folded("退款已处理", &needle("退款"), &mut buf));
        assert!(holds_folded("JÜRGEN", &needle("üR"), &mut buf));
        assert!(holds_folded("op-1", &needle("P"), &mut buf));
        assert!(!holds_folded("ab\0cd", &needle("c"), &mut buf));
        assert!(!holds_folded("a", &needle("ab"), &mut buf));
        assert!(!holds_folded("", &needle("a"), &mut buf));
        // ASCII values: a needle of other characters is never held; NUL ends the value there too.
        assert!(!holds_folded("refund 42", &needle("退"), &mut buf));
        assert!(holds_folded("Refund 42", &needle("D 4"), &mut buf));
        assert!(!holds_folded("ab\0cd", &needle("cd"), &mut buf));
        assert!(holds_folded("xAb\0cd", &needle("ab"), &mut buf));
    }
}
