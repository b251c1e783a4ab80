//! Streamed reads (docs/ledger.md "Reading"): history and replay snapshots are read [`READ_CHUNK`] entries
//! per statement, each chunk an index range that starts where the previous one ended (keyset), so a read
//! costs what it returns and holds at most one chunk, whatever the session's size.
//!
//! SQLite: a chunk is read through a read connection's handle on a blocking thread (crate::direct's
//! `read`), its rows stepped, projected (the one projection, [`crate::projection`]) and, for a history,
//! serialised there, so the chunk crosses threads once, not once per row (sqlx's SQLite driver copies
//! every column of every row and hands each row across a channel to the caller, and that, not SQLite, was
//! most of a large read's cost). Postgres: a chunk comes back as ONE text value, a JSON array with one
//! small array per entry (`json_agg`), and each entry is projected with its strings moved, not copied.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;

use crate::error::LedgerError;
use crate::projection::{project_owned, LedgerEntry};
use crate::rows::{change, prefixed, EntryRow, HistoryRow, HISTORY_COLUMNS};
use crate::store::{on_read, Dialect, Inner};
use crate::wire::HostMetadata;
use crate::wire::{LedgerStatus, MutationOutcome, OperationHistory, Reason};

/// Entries read per statement.
pub const READ_CHUNK: i64 = 1_000;

/// One entry as a chunk's JSON holds it: the two keys of the read's order, then the entry's revision and
/// the fields the projection reads.
#[derive(Deserialize)]
struct ChunkEntry(
    i64,
    i64,
    Option<i64>,
    String,
    String,
    String,
    LedgerStatus,
    u8,
    Option<Reason>,
    u8,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// The select list of one entry of alias `e`, its two read keys `k1`, `k2` first. SQLite (read through
/// the connection's handle, crate::direct): the keys, the entry's revision and the fields the projection
/// reads, as columns ([`sqlite_projected`] reads them in this order). Postgres: the keys and `j`, the same
/// fields as ONE JSON array (flags as 0 or 1), aggregated into one value per chunk by [`fetch_json`].
fn entry_select(d: Dialect, k1: &str, k2: &str) -> String {
    match d {
        Dialect::Sqlite => format!(
            "{k1} AS k1, {k2} AS k2, e.revision, e.logical_turn_id, e.mutation_id, e.tool, e.status, \
             e.intent_recorded, e.reason, e.meta_attached, e.meta_id, e.meta_url, e.meta_title"
        ),
        Dialect::Postgres => format!(
            "{k1} AS k1, {k2} AS k2, json_build_array({k1}, {k2}, e.revision, e.logical_turn_id, \
             e.mutation_id, e.tool, e.status, e.intent_recorded::int, e.reason, e.meta_attached::int, \
             e.meta_id, e.meta_url, e.meta_title) AS j"
        ),
    }
}

/// A projected entry with its place in the read's order.
pub(crate) struct Projected {
    /// The read's keys of this entry (history: turn, entry; replay: revision, entry).
    pub keys: (i64, i64),
    /// The revision of the entry's latest change; `None` for a legacy entry or one never published.
    pub revision: Option<i64>,
    /// `None` where nothing is published (approved, never started).
    pub outcome: Option<MutationOutcome>,
}

/// A chunk as Postgres returned it: how many entries, and their JSON.
struct Raw {
    count: i64,
    json: String,
}

/// Reads one chunk: runs `select` (a statement whose select list is [`entry_select`]'s, in the read's
/// order, at most [`READ_CHUNK`] rows) with `binds` in order, projects each entry, and answers what
/// `then` makes of them. SQLite: on a read connection's handle on a blocking thread, `then` included
/// (crate::direct's `read`: one hand-off for the chunk, none per row); Postgres: as ONE value
/// (`json_agg`), parsed and projected here.
async fn read_chunk<T: Send + 'static>(
    inner: &Inner,
    select: String,
    binds: Vec<Bind>,
    then: impl FnOnce(Vec<Projected>) -> Result<T, LedgerError> + Send + 'static,
) -> Result<T, LedgerError> {
    match &inner.db {
        crate::store::Db::Sqlite { read, .. } => {
            crate::direct::read(read, move |db| {
                let params: Vec<&dyn rusqlite::types::ToSql> = binds
                    .iter()
                    .map(|b| match b {
                        Bind::Text(t) => t as &dyn rusqlite::types::ToSql,
                        Bind::Int(i) => i,
                    })
                    .collect();
                then(crate::direct::query(
                    db,
                    &select,
                    &params,
                    sqlite_projected,
                )?)
            })
            .await
        }
        crate::store::Db::Postgres { pool, .. } => {
            then(project_chunk(fetch_json(pool, &select, binds).await?)?)
        }
    }
}

/// One row of [`entry_select`]'s SQLite columns, projected.
fn sqlite_projected(row: &rusqlite::Row<'_>) -> Result<Projected, LedgerError> {
    let get = |i: usize| row.get_ref(i).map_err(crate::direct::failure);
    let text = |i: usize| -> Result<String, LedgerError> {
        Ok(get(i)?.as_str().map_err(|e| column(i, e))?.to_owned())
    };
    let optional = |i: usize| -> Result<Option<String>, LedgerError> {
        Ok(get(i)?
            .as_str_or_null()
            .map_err(|e| column(i, e))?
            .map(str::to_owned))
    };
    let status = get(6)?.as_str().map_err(|e| column(6, e))?;
    let status = LedgerStatus::parse(status).ok_or_else(|| {
        LedgerError::Store(sqlx::Error::Decode(
            format!("a stored status {status:?}").into(),
        ))
    })?;
    let reason = match get(8)?.as_str_or_null().map_err(|e| column(8, e))? {
        None => None,
        Some(r) => Some(Reason::parse(r).ok_or_else(|| {
            LedgerError::Store(sqlx::Error::Decode(format!("a stored reason {r:?}").into()))
        })?),
    };
    let int = |i: usize| get(i)?.as_i64().map_err(|e| column(i, e));
    let metadata = if int(9)? != 0 {
        Some(HostMetadata {
            id: optional(10)?,
            url: optional(11)?,
            title: optional(12)?,
        })
    } else {
        None
    };
    Ok(Projected {
        keys: (int(0)?, int(1)?),
        revision: get(2)?.as_i64_or_null().map_err(|e| column(2, e))?,
        outcome: project_owned(LedgerEntry {
            logical_turn_id: text(3)?,
            mutation_id: text(4)?,
            tool: text(5)?,
            status,
            intent_recorded: int(7)? != 0,
            reason,
            metadata,
        }),
    })
}

/// A column of an unexpected type (a store failure naming it).
fn column(i: usize, e: rusqlite::types::FromSqlError) -> LedgerError {
    LedgerError::Store(sqlx::Error::ColumnDecode {
        index: i.to_string(),
        source: Box::new(e),
    })
}

/// Postgres: runs `select` with `binds` in order as one value (`json_agg` of the `j` column).
async fn fetch_json(
    pool: &sqlx::PgPool,
    select: &str,
    binds: Vec<Bind>,
) -> Result<Raw, LedgerError> {
    let sql = format!("SELECT count(*), coalesce(json_agg(c.j)::text, '[]') FROM ({select}) AS c");
    let mut query = sqlx::query_as(&sql);
    for b in binds {
        query = match b {
            Bind::Text(t) => query.bind(t),
            Bind::Int(i) => query.bind(i),
        };
    }
    let (count, json): (i64, String) = query.fetch_one(pool).await?;
    Ok(Raw { count, json })
}

/// Parses a chunk and projects each entry, in the order of (k1, k2).
fn project_chunk(raw: Raw) -> Result<Vec<Projected>, LedgerError> {
    let mut entries: Vec<ChunkEntry> = serde_json::from_str(&raw.json)
        .map_err(|e| LedgerError::Store(sqlx::Error::Decode(Box::new(e))))?;
    if entries.len() as i64 != raw.count {
        return Err(LedgerError::internal(format!(
            "a chunk of {} entries held {}",
            raw.count,
            entries.len()
        )));
    }
    // The databases aggregate the ordered subquery in its order; sorting an aggregate (ORDER BY inside
    // group_concat) costs a third of the statement, so the order is checked here instead.
    if !entries.is_sorted_by_key(|e| (e.0, e.1)) {
        entries.sort_by_key(|e| (e.0, e.1));
    }
    Ok(entries
        .into_iter()
        .map(|c| {
            let metadata = (c.9 != 0).then_some(HostMetadata {
                id: c.10,
                url: c.11,
                title: c.12,
            });
            Projected {
                keys: (c.0, c.1),
                revision: c.2,
                outcome: project_owned(LedgerEntry {
                    logical_turn_id: c.3,
                    mutation_id: c.4,
                    tool: c.5,
                    status: c.6,
                    intent_recorded: c.7 != 0,
                    reason: c.8,
                    metadata,
                }),
            }
        })
        .collect())
}

enum Bind {
    Text(String),
    Int(i64),
}

/// The statement of a history chunk: turns in recorded order (`turns_by_session`), each turn's entries in
/// recorded order (`entries_by_turn_seq`), starting after entry `?3` of turn `?2`: an index range, no
/// sort. Binds: session key, turn_seq, seq, limit.
fn history_select(d: Dialect) -> String {
    format!(
        "SELECT {} \
         FROM turns t JOIN entries e ON e.session_key = t.session_key \
         AND e.logical_turn_id = t.logical_turn_id \
         AND e.seq > CASE WHEN t.turn_seq = $2 THEN $3 ELSE 0 END \
         WHERE t.session_key = $1 AND t.turn_seq >= $2 ORDER BY t.turn_seq, e.seq LIMIT $4",
        entry_select(d, "t.turn_seq", "e.seq")
    )
}

/// The statement of a replay chunk in `phase`. Binds: session key, turn, the last key read (seq for
/// legacy entries, revision otherwise), limit, and for [`Phase::UnknownAtOrBelowCursor`] the cursor.
fn replay_select(d: Dialect, phase: Phase) -> Option<String> {
    Some(match phase {
        Phase::Done => return None,
        Phase::Legacy => format!(
            "SELECT {} FROM entries e \
             WHERE e.session_key = $1 AND e.logical_turn_id = $2 AND e.revision IS NULL \
             AND e.seq > $3 ORDER BY e.seq LIMIT $4",
            entry_select(d, "0", "e.seq")
        ),
        Phase::UnknownAtOrBelowCursor => format!(
            "SELECT {} \
             FROM entries e WHERE e.session_key = $1 AND e.logical_turn_id = $2 \
             AND e.status IN ('outcome_unknown', 'execution_started') \
             AND e.revision > $3 AND e.revision <= $5 ORDER BY e.revision LIMIT $4",
            entry_select(d, "e.revision", "e.seq")
        ),
        Phase::AfterCursor => format!(
            "SELECT {} \
             FROM entries e WHERE e.session_key = $1 AND e.logical_turn_id = $2 \
             AND e.revision > $3 ORDER BY e.revision LIMIT $4",
            entry_select(d, "e.revision", "e.seq")
        ),
    })
}

/// A session's history (seed 000 "Session history"): oldest logical turn first, then in recorded order,
/// a chunk at a time. Each chunk is one statement, so a change committed while a long history is read
/// shows in a later chunk or not at all; an entry is never sent twice.
pub struct HistoryChunks {
    inner: Arc<Inner>,
    session_key: String,
    /// When the session read was created (ms): the read is of that session, not of one recreated under
    /// the same key.
    created_at: i64,
    /// (turn_seq, seq) of the last entry read.
    after: (i64, i64),
    done: bool,
    /// Whether [`HistoryChunks::next_json`] answered a record yet (the next one is preceded by `,`).
    sent_any: bool,
}

/// `Ok` when the session `session_key` created at `created_at` is still stored and not expired: checked
/// when a chunked read ends, so a read cut short by the session's deletion or expiry fails (the HTTP
/// body then ends early) instead of ending like a complete one. `SessionNotFound` when it was deleted
/// (or deleted and created again), `SessionExpired` when it expired.
async fn still_there(inner: &Inner, session_key: &str, created_at: i64) -> Result<(), LedgerError> {
    let row: Option<(i64, i64)> = on_read!(inner, |pool, d| sqlx::query_as(
        "SELECT created_at, last_write_at FROM sessions WHERE session_key = $1"
    )
    .bind(session_key)
    .fetch_optional(pool)
    .await?);
    match row {
        Some((c, _)) if c != created_at => Err(LedgerError::SessionNotFound),
        None => Err(LedgerError::SessionNotFound),
        Some((_, last)) if last < inner.live_since(inner.clock.now_ms()) => {
            Err(LedgerError::SessionExpired)
        }
        Some(_) => Ok(()),
    }
}

impl HistoryChunks {
    pub(crate) fn new(inner: Arc<Inner>, session_key: String, created_at: i64) -> Self {
        HistoryChunks {
            inner,
            session_key,
            created_at,
            after: (0, 0),
            done: false,
            sent_any: false,
        }
    }

    /// The next chunk's published outcomes (possibly empty when a chunk held only unpublished entries);
    /// `None` once the history is complete. The last chunk is answered only once the session is known to
    /// be still there ([`LedgerError::SessionNotFound`] / [`LedgerError::SessionExpired`] else).
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<MutationOutcome>>, LedgerError> {
        self.next_with(|outcomes| Ok(outcomes.collect())).await
    }

    /// [`Self::next_chunk`] as the body of `{"mutation_outcomes":[…]}` takes it (seed 000 "Session
    /// history"): the chunk's records as compact JSON, each but the very first of the whole read preceded
    /// by `,`, serialised where the chunk was read (SQLite: on the read's own thread) straight into the
    /// buffer answered. Empty when the chunk held only unpublished entries; `None` once the history is
    /// complete. Errors as [`Self::next_chunk`]; a record that cannot be serialised is a store failure.
    pub async fn next_json(&mut self) -> Result<Option<Vec<u8>>, LedgerError> {
        let mut first = !self.sent_any;
        let buf = self
            .next_with(move |outcomes| {
                let mut buf = Vec::with_capacity(READ_CHUNK as usize * 192);
                for outcome in outcomes {
                    if !first {
                        buf.push(b',');
                    }
                    first = false;
                    serde_json::to_writer(&mut buf, &outcome)
                        .map_err(|e| LedgerError::Store(sqlx::Error::Encode(Box::new(e))))?;
                }
                Ok(buf)
            })
            .await?;
        if let Some(buf) = &buf {
            self.sent_any |= !buf.is_empty();
        }
        Ok(buf)
    }

    /// Reads the next chunk and answers what `then` makes of its published outcomes, in order (run where
    /// the chunk is read: [`read_chunk`]).
    async fn next_with<T: Send + 'static>(
        &mut self,
        then: impl FnOnce(&mut dyn Iterator<Item = MutationOutcome>) -> Result<T, LedgerError>
            + Send
            + 'static,
    ) -> Result<Option<T>, LedgerError> {
        if self.done {
            return Ok(None);
        }
        let binds = vec![
            Bind::Text(self.session_key.clone()),
            Bind::Int(self.after.0),
            Bind::Int(self.after.1),
            Bind::Int(READ_CHUNK),
        ];
        let (count, last, answer) = read_chunk(
            &self.inner,
            history_select(self.inner.dialect()),
            binds,
            move |rows| {
                let count = rows.len() as i64;
                let last = rows.last().map(|r| r.keys);
                let answer = then(&mut rows.into_iter().filter_map(|r| r.outcome))?;
                Ok((count, last, answer))
            },
        )
        .await?;
        let done = count < READ_CHUNK;
        if done {
            still_there(&self.inner, &self.session_key, self.created_at).await?;
        }
        self.done = done;
        if let Some(last) = last {
            self.after = last;
        }
        Ok(Some(answer))
    }
}

/// Entries per chunk of [`OperationHistoryChunks`]: each brings all its history rows, so fewer than
/// [`READ_CHUNK`].
pub const OPERATIONS_CHUNK: i64 = 100;

/// An entry of a session with its turn's place, in the order of [`history_select`].
#[derive(sqlx::FromRow)]
struct TurnEntryRow {
    turn_seq: i64,
    #[sqlx(flatten)]
    entry: EntryRow,
}

/// A history row with the entry it belongs to.
#[derive(sqlx::FromRow)]
struct EntryHistoryRow {
    entry_seq: i64,
    #[sqlx(flatten)]
    row: HistoryRow,
}

/// The entries of a chunk of [`OperationHistoryChunks`]: the keyset of [`history_select`] (an index
/// range, no sort), whole rows. Binds: session key, turn_seq, seq, limit.
fn operations_select() -> String {
    format!(
        "SELECT t.turn_seq, {} FROM turns t JOIN entries e ON e.session_key = t.session_key \
         AND e.logical_turn_id = t.logical_turn_id \
         AND e.seq > CASE WHEN t.turn_seq = $2 THEN $3 ELSE 0 END \
         WHERE t.session_key = $1 AND t.turn_seq >= $2 ORDER BY t.turn_seq, e.seq LIMIT $4",
        prefixed("e")
    )
}

/// Every operation's history of a session (`SessionManager::operation_histories`): one
/// [`OperationHistory`] per entry, published or not, in the order of [`HistoryChunks`] (oldest logical
/// turn first, then in recorded order), [`OPERATIONS_CHUNK`] entries at a time. A chunk is three
/// statements in one read transaction (its entries by keyset on `turns_by_session` and
/// `entries_by_turn_seq`, what was commissioned after them from `entries_by_commissioner`, their history
/// rows from `history_by_entry`), so each answer is one snapshot, and a change committed while a long
/// export is read shows in a later chunk or not at all.
pub struct OperationHistoryChunks {
    inner: Arc<Inner>,
    session_key: String,
    /// As [`HistoryChunks`]'s.
    created_at: i64,
    /// (turn_seq, seq) of the last entry read.
    after: (i64, i64),
    done: bool,
}

impl OperationHistoryChunks {
    pub(crate) fn new(inner: Arc<Inner>, session_key: String, created_at: i64) -> Self {
        OperationHistoryChunks {
            inner,
            session_key,
            created_at,
            after: (0, 0),
            done: false,
        }
    }

    /// The next chunk's operation histories (at most [`OPERATIONS_CHUNK`]); `None` once every entry was
    /// read. The last chunk is answered only once the session is known to be still there, as
    /// [`HistoryChunks::next_chunk`].
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<OperationHistory>>, LedgerError> {
        if self.done {
            return Ok(None);
        }
        let (entries, commissioned, rows) = on_read!(self.inner, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read()).await?;
            let entries: Vec<TurnEntryRow> = sqlx::query_as(&operations_select())
                .bind(&self.session_key)
                .bind(self.after.0)
                .bind(self.after.1)
                .bind(OPERATIONS_CHUNK)
                .fetch_all(&mut *tx)
                .await?;
            if entries.is_empty() {
                tx.commit().await?;
                (entries, Vec::new(), Vec::new())
            } else {
                let seqs =
                    serde_json::to_string(&entries.iter().map(|e| e.entry.seq).collect::<Vec<_>>())
                        .map_err(|e| LedgerError::Store(sqlx::Error::Encode(Box::new(e))))?;
                let ids = serde_json::to_string(
                    &entries
                        .iter()
                        .map(|e| e.entry.mutation_id.as_str())
                        .collect::<Vec<_>>(),
                )
                .map_err(|e| LedgerError::Store(sqlx::Error::Encode(Box::new(e))))?;
                let commissioned: Vec<(String, String)> = sqlx::query_as(&format!(
                    "SELECT commissioned_after, mutation_id FROM entries WHERE session_key = $1 \
                     AND {} ORDER BY seq",
                    d.text_in("commissioned_after", 2)
                ))
                .bind(&self.session_key)
                .bind(ids)
                .fetch_all(&mut *tx)
                .await?;
                let rows: Vec<EntryHistoryRow> = sqlx::query_as(&format!(
                    "SELECT entry_seq, {HISTORY_COLUMNS} FROM history \
                     WHERE {} ORDER BY entry_seq, id",
                    d.int_in("entry_seq", 1)
                ))
                .bind(seqs)
                .fetch_all(&mut *tx)
                .await?;
                tx.commit().await?;
                (entries, commissioned, rows)
            }
        });
        let done = (entries.len() as i64) < OPERATIONS_CHUNK;
        if done {
            still_there(&self.inner, &self.session_key, self.created_at).await?;
        }
        self.done = done;
        let Some(last) = entries.last() else {
            return Ok(None);
        };
        self.after = (last.turn_seq, last.entry.seq);
        let mut by_after: HashMap<String, Vec<String>> = HashMap::new();
        for (after, mutation) in commissioned {
            by_after.entry(after).or_default().push(mutation);
        }
        let mut by_entry: HashMap<i64, Vec<HistoryRow>> = HashMap::new();
        for r in rows {
            by_entry.entry(r.entry_seq).or_default().push(r.row);
        }
        Ok(Some(
            entries
                .into_iter()
                .map(|e| {
                    let entry = e.entry;
                    let changes = by_entry
                        .remove(&entry.seq)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|r| change(&entry, r))
                        .collect();
                    OperationHistory {
                        commissioned: by_after.remove(&entry.mutation_id).unwrap_or_default(),
                        session_key: entry.session_key,
                        logical_turn_id: entry.logical_turn_id,
                        mutation_id: entry.mutation_id,
                        commissioned_after: entry.commissioned_after,
                        changes,
                        next: None,
                        alerted_at: None,
                        claim: None,
                    }
                })
                .collect(),
        ))
    }
}

/// One event of a replay snapshot: `revision` is `None` for a legacy entry (framed without `id:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayEvent {
    /// The revision of the entry's latest change; `None` for a legacy entry.
    pub revision: Option<i64>,
    /// The entry's current projection.
    pub outcome: MutationOutcome,
}

/// Where a replay stands: its phases in the order their events are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Full replay only: entries from before revisions existed, in recorded order.
    Legacy,
    /// With a cursor: entries still published `outcome_unknown` whose latest change is at or below it.
    UnknownAtOrBelowCursor,
    /// Entries whose latest change is after the cursor (every revisioned entry without one).
    AfterCursor,
    Done,
}

/// A replay snapshot of one logical turn (seed 000, `GET /api/mutation-events`), a chunk at a time:
/// legacy entries first (full replay only), then oldest revision first. With a cursor, the turn's open
/// unknowns at or below it come from their own index and the rest from the revision index, so a replay
/// after a recent cursor reads only what it sends.
pub struct ReplayChunks {
    inner: Arc<Inner>,
    session_key: String,
    logical_turn_id: String,
    cursor: Option<i64>,
    latest_revision: i64,
    phase: Phase,
    /// The last key read in the current phase (seq for legacy entries, revision otherwise).
    after: i64,
    highest_sent: i64,
}

impl ReplayChunks {
    pub(crate) fn new(
        inner: Arc<Inner>,
        session_key: String,
        logical_turn_id: String,
        cursor: Option<i64>,
        latest_revision: i64,
    ) -> Self {
        ReplayChunks {
            inner,
            session_key,
            logical_turn_id,
            cursor,
            latest_revision,
            phase: if cursor.is_some() {
                Phase::UnknownAtOrBelowCursor
            } else {
                Phase::Legacy
            },
            after: 0,
            highest_sent: 0,
        }
    }

    /// The cursor the request came with, if any.
    pub fn cursor(&self) -> Option<i64> {
        self.cursor
    }

    /// The turn's latest revision when the replay began.
    pub fn latest_revision(&self) -> i64 {
        self.latest_revision
    }

    /// The id a client should hold after the events read so far: max(cursor, highest revision sent), or
    /// `None` when that is 0 (no `id:` block is written then). Final once [`Self::next_chunk`] gave `None`.
    pub fn final_id(&self) -> Option<i64> {
        let id = self.highest_sent.max(self.cursor.unwrap_or(0));
        (id > 0).then_some(id)
    }

    /// The next events (possibly none when a chunk held only unpublished entries); `None` once the
    /// snapshot is complete.
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<ReplayEvent>>, LedgerError> {
        let Some(select) = replay_select(self.inner.dialect(), self.phase) else {
            return Ok(None);
        };
        let mut binds = vec![
            Bind::Text(self.session_key.clone()),
            Bind::Text(self.logical_turn_id.clone()),
            Bind::Int(self.after),
            Bind::Int(READ_CHUNK),
        ];
        if self.phase == Phase::UnknownAtOrBelowCursor {
            binds.push(Bind::Int(self.cursor.unwrap_or(0)));
        }
        let rows = read_chunk(&self.inner, select, binds, Ok).await?;
        let phase_done = (rows.len() as i64) < READ_CHUNK;
        let legacy = self.phase == Phase::Legacy;
        if let Some(last) = rows.last() {
            self.after = if legacy { last.keys.1 } else { last.keys.0 };
        }
        if phase_done {
            self.phase = match self.phase {
                Phase::Legacy | Phase::UnknownAtOrBelowCursor => Phase::AfterCursor,
                Phase::AfterCursor | Phase::Done => Phase::Done,
            };
            self.after = if self.phase == Phase::AfterCursor {
                self.cursor.unwrap_or(0)
            } else {
                self.after
            };
        }
        let events: Vec<ReplayEvent> = rows
            .into_iter()
            .filter_map(|r| {
                Some(ReplayEvent {
                    revision: if legacy { None } else { r.revision },
                    outcome: r.outcome?,
                })
            })
            .collect();
        if let Some(top) = events.iter().filter_map(|e| e.revision).max() {
            self.highest_sent = self.highest_sent.max(top);
        }
        Ok(Some(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::query_plan::{fresh_sqlite, plan, sqlite_read};

    #[tokio::test]
    async fn every_chunk_is_an_index_range_and_never_sorts_the_session_or_the_turn() {
        let (_dir, inner) = fresh_sqlite().await;
        let history = plan(&inner, &history_select(Dialect::Sqlite), 4).await;
        assert!(
            history.contains("USING INDEX turns_by_session"),
            "{history}"
        );
        assert!(
            history.contains("USING INDEX entries_by_turn_seq"),
            "{history}"
        );
        let expected = [
            (Phase::Legacy, "entries_by_turn ", 4),
            (
                Phase::UnknownAtOrBelowCursor,
                "entries_open_unknown_by_turn",
                5,
            ),
            (Phase::AfterCursor, "entries_by_turn ", 4),
        ];
        for (phase, index, binds) in expected {
            let p = plan(
                &inner,
                &replay_select(Dialect::Sqlite, phase).unwrap(),
                binds,
            )
            .await;
            assert!(
                p.contains(&format!("USING INDEX {index}")),
                "{phase:?}: {p}"
            );
            assert_eq!(p.matches("TEMP B-TREE").count(), 0, "{phase:?}: {p}");
        }
        assert_eq!(history.matches("TEMP B-TREE").count(), 0, "{history}");
        let sql = format!("EXPLAIN QUERY PLAN {}", operations_select());
        let mut q = sqlx::query_as::<_, (i64, i64, i64, String)>(&sql);
        for _ in 0..4 {
            q = q.bind(1_i64);
        }
        let operations: Vec<String> = q
            .fetch_all(sqlite_read(&inner))
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.3)
            .collect();
        let operations = operations.join("\n");
        for index in ["turns_by_session", "entries_by_turn_seq"] {
            assert!(
                operations.contains(&format!("USING INDEX {index}")),
                "{operations}"
            );
        }
        assert_eq!(operations.matches("TEMP B-TREE").count(), 0, "{operations}");
        let replay = plan(
            &inner,
            &replay_select(Dialect::Sqlite, Phase::AfterCursor).unwrap(),
            4,
        )
        .await;
        // A sort would show as a step of its own; none may appear.
        assert!(!replay.contains("ORDER BY"), "{replay}");
    }
}
