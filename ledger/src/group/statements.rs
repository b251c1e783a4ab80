//! The group's write statements and their serialisers (docs/ledger.md "Writing"): each statement's SQL
//! for SQLite and its data-modifying CTE for Postgres, the rows as positional JSON arrays (a new entry, a
//! changed entry, a history row), and the assembly of the Postgres statement.

use std::sync::LazyLock;

use serde::ser::{Serialize, SerializeTuple, Serializer};

use super::Key;
use crate::command::{Actor, Evidence};
use crate::error::LedgerError;
use crate::rows::{
    Cast, EntryRow, HistoryRow, StoredColumn, ENTRY_TABLE, HISTORY_COLUMNS, HISTORY_TABLE,
};
use crate::wire::HistoryKind;

/// One parameter of the group's write: the group's time (ms) or a statement's list (JSON text).
pub(super) enum Bind {
    Now,
    List(String),
}

/// One statement of the group's write: its SQL for SQLite (anonymous parameters, `binds` says what each
/// is, in order: exactly one of them the list) and for Postgres, where it is one data-modifying CTE of
/// the group's ONE statement ([`GroupWrite::postgres`]), named `name`: there `$now` stands for the
/// group's time, `$list` for its list, and `$new_seq` for the `seq` of the entry this group inserted
/// under the row's session key and mutation id (read from the `RETURNING` of [`NEW_ENTRIES`]: sibling
/// CTEs do not see each other's rows in the table).
pub(super) struct Statement {
    pub(super) sql: &'static str,
    name: &'static str,
    pg: &'static str,
    binds: &'static [Param],
}

#[derive(Clone, Copy)]
enum Param {
    Now,
    List,
}

/// The group's write as it is assembled: the statements that have rows, in order, and their parameters.
/// The group commit's SQLite transaction runs them one after the other on the writer's thread
/// (crate::direct); sqlx's SQLite driver would get them as ONE multi-statement query (one round trip to
/// its worker thread); Postgres, which takes one statement per prepared query, gets them as the CTEs of
/// ONE statement ([`GroupWrite::postgres`]).
pub(super) struct GroupWrite {
    pub(super) statements: Vec<(&'static Statement, Vec<Bind>)>,
}

impl GroupWrite {
    pub(super) fn new() -> Self {
        GroupWrite {
            statements: Vec::new(),
        }
    }

    /// Adds `statement` with `rows` as its list, unless there are none.
    pub(super) fn push<T: Serialize>(
        &mut self,
        statement: &'static Statement,
        rows: &[T],
    ) -> Result<(), LedgerError> {
        if rows.is_empty() {
            return Ok(());
        }
        let list = serde_json::to_string(rows).map_err(|e| {
            LedgerError::internal(format!("the group's write could not be encoded: {e}"))
        })?;
        let mut list = Some(list);
        let binds = statement
            .binds
            .iter()
            .map(|param| match param {
                Param::Now => Bind::Now,
                Param::List => Bind::List(list.take().unwrap_or_default()),
            })
            .collect();
        self.statements.push((statement, binds));
        Ok(())
    }

    /// The group's write on Postgres as ONE statement (one round trip, docs/ledger.md
    /// "Postgres round trips"): `WITH <name> AS (<statement>), …` with each statement that has rows
    /// as a data-modifying CTE, in order, and as its main query, when `notify`, the turns' notifications
    /// (`SELECT pg_notify(channel, payload) … ORDER BY` their order; Postgres delivers them at commit),
    /// else `SELECT 1`. Its parameters: `$1` the group's time, `$2`, `$3`, … each statement's list in
    /// order, then when `notify` the channel and the payloads (`text[]`).
    ///
    /// The CTEs all read one snapshot and none sees another's rows in the tables; they need not: each
    /// writes rows of its own (new sessions and turns are inserted, stored ones updated), the foreign
    /// keys are checked at the end of the statement, when every CTE has written, and a row naming an
    /// entry inserted by this group takes its `seq` from [`NEW_ENTRIES`]' `RETURNING` (`$new_seq`;
    /// without new entries no row names one, and `NULL` would fail the `NOT NULL` loudly).
    pub(super) fn postgres(&self, notify: bool) -> String {
        let new_seq = if self
            .statements
            .iter()
            // By name: a `const`'s address is not one address (each use may be a copy of its own).
            .any(|(st, _)| st.name == NEW_ENTRIES.name)
        {
            "(SELECT n.seq FROM new_entries AS n \
             WHERE n.session_key = j.value ->> 1 AND n.mutation_id = j.value ->> 2)"
        } else {
            "NULL::bigint"
        };
        let ctes: Vec<String> = self
            .statements
            .iter()
            .enumerate()
            .map(|(i, (st, _))| {
                let body = st
                    .pg
                    .replace("$now", "$1")
                    .replace("$list", &format!("${}", i + 2))
                    .replace("$new_seq", new_seq);
                format!("{} AS ({body})", st.name)
            })
            .collect();
        let n = self.statements.len() + 2;
        let main = if notify {
            format!(
                "SELECT pg_notify(${n}, p) FROM unnest(${}::text[]) WITH ORDINALITY AS u(p, i) \
                 ORDER BY i",
                n + 1
            )
        } else {
            "SELECT 1".to_owned()
        };
        if ctes.is_empty() {
            main
        } else {
            format!("WITH {} {main}", ctes.join(", "))
        }
    }
}

use Param::{List as L, Now as N};

/// New sessions: `[session_key, …]`.
pub(super) const NEW_SESSIONS: Statement = Statement {
    sql: "INSERT INTO sessions (session_key, created_at, last_write_at) \
          SELECT value, ?, ? FROM json_each(?);",
    name: "new_sessions",
    pg: "INSERT INTO sessions (session_key, created_at, last_write_at) \
         SELECT value, $now, $now FROM jsonb_array_elements_text($list::jsonb)",
    binds: &[N, N, L],
};

/// Sessions written to: `[session_key, …]`.
pub(super) const TOUCHED_SESSIONS: Statement = Statement {
    sql: "UPDATE sessions SET last_write_at = ? \
          WHERE session_key IN (SELECT value FROM json_each(?));",
    name: "touched_sessions",
    pg: "UPDATE sessions SET last_write_at = $now \
         WHERE session_key IN (SELECT value FROM jsonb_array_elements_text($list::jsonb))",
    binds: &[N, L],
};

/// New turns, in the order first seen: `[session_key, logical_turn_id, latest_revision]`.
pub(super) const NEW_TURNS: Statement = Statement {
    sql: "INSERT INTO turns (session_key, logical_turn_id, latest_revision, created_at) \
          SELECT value ->> 0, value ->> 1, value ->> 2, ? FROM json_each(?) ORDER BY key;",
    name: "new_turns",
    pg: "INSERT INTO turns (session_key, logical_turn_id, latest_revision, created_at) \
         SELECT value ->> 0, value ->> 1, (value ->> 2)::bigint, $now \
         FROM jsonb_array_elements($list::jsonb) WITH ORDINALITY AS j(value, key) ORDER BY key",
    binds: &[N, L],
};

/// Turns whose latest revision changed: `[session_key, logical_turn_id, latest_revision]`.
pub(super) const CHANGED_TURNS: Statement = Statement {
    sql: "UPDATE turns SET latest_revision = j.latest \
          FROM (SELECT value ->> 0 AS s, value ->> 1 AS t, value ->> 2 AS latest FROM json_each(?)) AS j \
          WHERE turns.session_key = j.s AND turns.logical_turn_id = j.t;",
    name: "changed_turns",
    pg: "UPDATE turns SET latest_revision = (j.value ->> 2)::bigint \
         FROM jsonb_array_elements($list::jsonb) AS j(value) \
         WHERE turns.session_key = j.value ->> 0 AND turns.logical_turn_id = j.value ->> 1",
    binds: &[L],
};

/// New entries in the order they were recorded ([`NewEntry`]); on Postgres it returns their `seq` by
/// key, for the `$new_seq` of the statements after it. Generated from [`ENTRY_TABLE`]
/// ([`EntryWrites`]).
pub(super) static NEW_ENTRIES: LazyLock<Statement> = LazyLock::new(|| Statement {
    name: "new_entries",
    sql: &ENTRY_WRITES.new_sqlite,
    pg: &ENTRY_WRITES.new_pg,
    binds: &[N, N, L],
});

/// Entries stored before the group that it changed ([`ChangedEntry`]), by `seq`. Generated from
/// [`ENTRY_TABLE`] ([`EntryWrites`]).
pub(super) static CHANGED_ENTRIES: LazyLock<Statement> = LazyLock::new(|| Statement {
    name: "changed_entries",
    sql: &ENTRY_WRITES.changed_sqlite,
    pg: &ENTRY_WRITES.changed_pg,
    binds: &[N, L],
});

/// The SQL of the entries' two writes in both dialects, generated once from [`ENTRY_TABLE`] (the one
/// declaration of the `entries` row, `rows::entry_row!`): element `N` of a row's positional array is
/// `value ->> N`, cast for Postgres by its column's [`Cast`]; `recorded_at` and `updated_at` take the
/// group's time.
///
/// - insert (`NEW_ENTRIES`): the [`StoredColumn::insert`] columns, elements 0, 1, … in their order;
/// - update (`CHANGED_ENTRIES`): element 0 the entry's `seq`, then the [`StoredColumn::update`]
///   columns, elements 1, 2, … in their order (on SQLite through a subquery `j` whose columns are
///   named as the entry's).
struct EntryWrites {
    new_sqlite: String,
    new_pg: String,
    changed_sqlite: String,
    changed_pg: String,
}

static ENTRY_WRITES: LazyLock<EntryWrites> = LazyLock::new(EntryWrites::generate);

impl EntryWrites {
    fn generate() -> EntryWrites {
        let insert: Vec<&StoredColumn> = ENTRY_TABLE.iter().filter(|c| c.insert).collect();
        let update: Vec<&StoredColumn> = ENTRY_TABLE.iter().filter(|c| c.update).collect();
        let names = insert.iter().map(|c| c.name).collect::<Vec<_>>().join(", ");
        let into = format!("INSERT INTO entries ({names}, recorded_at, updated_at) SELECT ");
        let values = |pg: bool| {
            insert
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let e = format!("value ->> {i}");
                    if pg {
                        c.cast.pg(&e)
                    } else {
                        e
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let new_sqlite = format!(
            "{into}{}, ?, ? FROM json_each(?) ORDER BY key;",
            values(false)
        );
        let new_pg = format!(
            "{into}{}, $now, $now \
             FROM jsonb_array_elements($list::jsonb) WITH ORDINALITY AS j(value, key) ORDER BY key \
             RETURNING seq, session_key, mutation_id",
            values(true)
        );
        let set = |value: &dyn Fn(usize, &StoredColumn) -> String| {
            update
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{} = {}", c.name, value(i + 1, c)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let named = update
            .iter()
            .enumerate()
            .map(|(i, c)| format!(", value ->> {} AS {}", i + 1, c.name))
            .collect::<String>();
        let changed_sqlite = format!(
            "UPDATE entries SET {}, updated_at = ? \
             FROM (SELECT value ->> 0 AS seq{named} FROM json_each(?)) AS j \
             WHERE entries.seq = j.seq;",
            set(&|_, c| format!("j.{}", c.name))
        );
        let changed_pg = format!(
            "UPDATE entries SET {}, updated_at = $now \
             FROM jsonb_array_elements($list::jsonb) AS j(value) WHERE entries.seq = {}",
            set(&|i, c| c.cast.pg(&format!("j.value ->> {i}"))),
            Cast::Bigint.pg("j.value ->> 0")
        );
        EntryWrites {
            new_sqlite,
            new_pg,
            changed_sqlite,
            changed_pg,
        }
    }
}

/// The entry's `seq` from the first three elements of a row (`seq`, or `NULL` and then the session key
/// and mutation id of an entry inserted by this group); `j` is the row.
macro_rules! entry_seq {
    () => {
        "COALESCE(j.value ->> 0, (SELECT e.seq FROM entries AS e \
         WHERE e.session_key = j.value ->> 1 AND e.mutation_id = j.value ->> 2))"
    };
}

/// [`entry_seq!`] for Postgres, in the group's one statement: an entry inserted by this group is found
/// in the `RETURNING` of [`NEW_ENTRIES`] (`$new_seq`, [`GroupWrite::postgres`]).
macro_rules! pg_entry_seq {
    () => {
        "COALESCE((j.value ->> 0)::bigint, $new_seq)"
    };
}

/// New attempt ids: `[seq, session_key, mutation_id, attempt_id]` (see [`Group::entry_ref`]).
pub(super) const ATTEMPTS: Statement = Statement {
    name: "new_attempts",
    sql: concat!(
        "INSERT INTO attempts (entry_seq, attempt_id) SELECT ",
        entry_seq!(),
        ", j.value ->> 3 FROM json_each(?) AS j;"
    ),
    pg: concat!(
        "INSERT INTO attempts (entry_seq, attempt_id) SELECT ",
        pg_entry_seq!(),
        ", j.value ->> 3 FROM jsonb_array_elements($list::jsonb) AS j(value)"
    ),
    binds: &[L],
};

/// Reconciliation evidence: `[seq, session_key, mutation_id, attempt_id, completed, source, reference,
/// observed_at, provider_status]`.
pub(super) const RECONCILIATIONS: Statement = Statement {
    name: "new_reconciliations",
    sql: concat!(
        "INSERT INTO reconciliations (entry_seq, attempt_id, completed, source, reference, observed_at, \
         provider_status, recorded_at) SELECT ",
        entry_seq!(),
        ", j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, j.value ->> 8, ? \
         FROM json_each(?) AS j ORDER BY j.key;"
    ),
    pg: concat!(
        "INSERT INTO reconciliations (entry_seq, attempt_id, completed, source, reference, observed_at, \
         provider_status, recorded_at) SELECT ",
        pg_entry_seq!(),
        ", j.value ->> 3, (j.value ->> 4)::boolean, j.value ->> 5, j.value ->> 6, j.value ->> 7, \
         j.value ->> 8, $now \
         FROM jsonb_array_elements($list::jsonb) WITH ORDINALITY AS j(value, key) ORDER BY j.key"
    ),
    binds: &[N, L],
};

/// History rows in the order of the changes ([`HistoryOut`]). Generated from [`HISTORY_TABLE`]
/// ([`HistoryWrites`]).
pub(super) static HISTORY: LazyLock<Statement> = LazyLock::new(|| Statement {
    name: "new_history",
    sql: &HISTORY_WRITES.sqlite,
    pg: &HISTORY_WRITES.pg,
    binds: &[N, L],
});

/// The SQL of the history insert in both dialects, generated once from [`HISTORY_TABLE`] (the one
/// declaration of the `history` row, `rows::history_row!`): the row's `entry_seq` from elements 0 to 2
/// (`entry_seq!`), then each column in [`HISTORY_COLUMNS`]' order, a written one element 3, 4, … in
/// its order (`value ->> N`, cast for Postgres by its [`Cast`]), `at` the group's time.
struct HistoryWrites {
    sqlite: String,
    pg: String,
}

static HISTORY_WRITES: LazyLock<HistoryWrites> = LazyLock::new(HistoryWrites::generate);

impl HistoryWrites {
    fn generate() -> HistoryWrites {
        let values = |pg: bool| {
            let mut next = 3;
            HISTORY_TABLE
                .iter()
                .map(|c| {
                    if !c.insert {
                        return if pg { "$now" } else { "?" }.to_owned();
                    }
                    let e = format!("j.value ->> {next}");
                    next += 1;
                    if pg {
                        c.cast.pg(&e)
                    } else {
                        e
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let into = format!("INSERT INTO history (entry_seq, {HISTORY_COLUMNS}) SELECT ");
        HistoryWrites {
            sqlite: format!(
                "{into}{}, {} FROM json_each(?) AS j ORDER BY j.key;",
                entry_seq!(),
                values(false)
            ),
            pg: format!(
                "{into}{}, {} FROM jsonb_array_elements($list::jsonb) WITH ORDINALITY AS j(value, key) \
                 ORDER BY j.key",
                pg_entry_seq!(),
                values(true)
            ),
        }
    }
}

/// A new entry's columns as one positional array of [`NEW_ENTRIES`]: the [`StoredColumn::insert`]
/// columns of [`ENTRY_TABLE`] in their order ([`EntryRow::serialize_insert`]).
pub(super) struct NewEntry<'a>(pub(super) &'a EntryRow);

impl Serialize for NewEntry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(ENTRY_TABLE.iter().filter(|c| c.insert).count())?;
        self.0.serialize_insert(&mut t)?;
        t.end()
    }
}

/// A changed entry's columns as one positional array of [`CHANGED_ENTRIES`]: its `seq`, then the
/// [`StoredColumn::update`] columns of [`ENTRY_TABLE`] in their order ([`EntryRow::serialize_update`]).
pub(super) struct ChangedEntry<'a>(pub(super) &'a EntryRow);

impl Serialize for ChangedEntry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(1 + ENTRY_TABLE.iter().filter(|c| c.update).count())?;
        t.serialize_element(&self.0.seq)?;
        self.0.serialize_update(&mut t)?;
        t.end()
    }
}

/// One history row to write (docs/ledger.md "History"): the entry it is about (its `seq`, or its key when
/// this group inserts it) and the row itself.
pub(super) struct HistoryOut {
    seq: Option<i64>,
    key: Option<Key>,
    row: HistoryRow,
}

/// The history row of a change of `entry` (its state after the change) at the group's time `at`
/// ([`HistoryRow::of_change`]).
pub(super) fn history_row(
    at: i64,
    entry: &EntryRow,
    kind: HistoryKind,
    revision: Option<i64>,
    actor: &Actor,
    evidence: Option<&Evidence>,
    note: Option<&String>,
) -> HistoryOut {
    let (seq, key) = if entry.seq != 0 {
        (Some(entry.seq), None)
    } else {
        (
            None,
            Some((entry.session_key.clone(), entry.mutation_id.clone())),
        )
    };
    let row = HistoryRow::of_change(at, entry, kind, revision, actor.spelling(), evidence, note);
    HistoryOut { seq, key, row }
}

/// A history row as one positional array of [`HISTORY`]: seq, session key, mutation id (see
/// [`Group::entry_ref`]), then the row's written columns ([`HistoryRow::serialize_written`]).
impl Serialize for HistoryOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(3 + HISTORY_TABLE.iter().filter(|c| c.insert).count())?;
        t.serialize_element(&self.seq)?;
        t.serialize_element(&self.key.as_ref().map(|k| &k.0))?;
        t.serialize_element(&self.key.as_ref().map(|k| &k.1))?;
        self.row.serialize_written(&mut t)?;
        t.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored entry with every column set (`seq` 0: not stored yet).
    fn entry(traceparent: Option<&str>) -> EntryRow {
        use crate::wire::{EstablishedBy, LedgerStatus, Reason, SettledBy};
        EntryRow {
            seq: 0,
            session_key: "s-1".into(),
            logical_turn_id: "t-1".into(),
            mutation_id: "m-1".into(),
            tool: "refund".into(),
            status: LedgerStatus::OutcomeUnknown,
            intent_recorded: true,
            attempt_id: Some("a-1".into()),
            reason: Some(Reason::ExecutionTimeout),
            meta_attached: true,
            meta_id: Some("id".into()),
            meta_url: Some("https://example.test/1".into()),
            meta_title: None,
            revision: Some(3),
            recorded_at: 0,
            settled_at: Some(1_700_000_000_000),
            commissioned_after: Some("m-0".into()),
            deadline_at: Some(1_700_000_060_000),
            settled_by: Some(SettledBy::Ledger),
            established_by: Some(EstablishedBy::of("host", "provider")),
            traceparent: traceparent.map(str::to_owned),
        }
    }

    /// The entries' writes agree with the one declaration of the row ([`ENTRY_TABLE`]): every column it
    /// writes is at its position, in both dialects (cast for Postgres by its [`Cast`]), and the
    /// serialisers put as many elements in a row as the statements read.
    #[test]
    fn the_entries_writes_have_every_declared_column_at_its_position_in_both_dialects() {
        let mut names: Vec<&str> = ENTRY_TABLE.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ENTRY_TABLE.len(), "a column declared twice");
        let read: Vec<&str> = ENTRY_TABLE
            .iter()
            .filter(|c| c.read)
            .map(|c| c.name)
            .collect();
        assert_eq!(&*crate::rows::ENTRY_COLUMNS, read.join(", "));

        let insert: Vec<&StoredColumn> = ENTRY_TABLE.iter().filter(|c| c.insert).collect();
        let update: Vec<&StoredColumn> = ENTRY_TABLE.iter().filter(|c| c.update).collect();
        for (i, c) in insert.iter().enumerate() {
            let e = format!("value ->> {i}");
            assert!(NEW_ENTRIES.sql.contains(&format!("{e}, ")), "{}", c.name);
            assert!(
                NEW_ENTRIES.pg.contains(&format!("{}, ", c.cast.pg(&e))),
                "{}",
                c.name
            );
        }
        for (sql, n) in [
            (NEW_ENTRIES.sql, insert.len()),
            (NEW_ENTRIES.pg, insert.len()),
        ] {
            assert_eq!(sql.matches("value ->> ").count(), n, "{sql}");
        }
        for (i, c) in update.iter().enumerate() {
            let e = format!("value ->> {}", i + 1);
            assert!(
                CHANGED_ENTRIES.sql.contains(&format!("{e} AS {} ", c.name))
                    || CHANGED_ENTRIES.sql.contains(&format!("{e} AS {},", c.name)),
                "{}",
                c.name
            );
            assert!(
                CHANGED_ENTRIES
                    .sql
                    .contains(&format!("{0} = j.{0},", c.name)),
                "{}",
                c.name
            );
            let pg = format!("{} = {},", c.name, c.cast.pg(&format!("j.{e}")));
            assert!(CHANGED_ENTRIES.pg.contains(&pg), "{pg}");
        }
        assert_eq!(
            CHANGED_ENTRIES.sql.matches("value ->> ").count(),
            1 + update.len()
        );
        assert_eq!(
            CHANGED_ENTRIES.pg.matches("value ->> ").count(),
            1 + update.len()
        );

        let row = entry(Some(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ));
        let json = |v: serde_json::Value| v.as_array().map(Vec::len);
        let new = serde_json::to_value(NewEntry(&row)).unwrap();
        assert_eq!(json(new), Some(insert.len()));
        let changed = serde_json::to_value(ChangedEntry(&row)).unwrap();
        assert_eq!(json(changed), Some(1 + update.len()));
    }

    /// On SQLite, an entry written by the generated insert and update and read back by
    /// [`crate::rows::ENTRY_COLUMNS`] and [`EntryRow::from_direct`] is the entry written: every position
    /// of the serialisers, the statements and the read agrees (the table here has the declared columns;
    /// the real one is the migrations').
    #[test]
    fn an_entry_written_by_the_generated_statements_reads_back_as_written() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        let columns: Vec<&str> = ENTRY_TABLE.iter().skip(1).map(|c| c.name).collect();
        db.execute_batch(&format!(
            "CREATE TABLE entries (seq INTEGER PRIMARY KEY, {}, updated_at INTEGER)",
            columns.join(", ")
        ))
        .unwrap();
        let read = |db: &rusqlite::Connection| {
            db.query_row(
                &format!("SELECT {} FROM entries", crate::rows::ENTRY_COLUMNS),
                [],
                EntryRow::from_direct,
            )
            .unwrap()
        };
        let mut row = entry(Some(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ));
        let list = serde_json::to_string(&[NewEntry(&row)]).unwrap();
        db.execute(NEW_ENTRIES.sql, rusqlite::params![7_i64, 7_i64, list])
            .unwrap();
        let traceparent: Option<String> = db
            .query_row("SELECT traceparent FROM entries", [], |r| r.get(0))
            .unwrap();
        assert_eq!(traceparent, row.traceparent);
        (row.seq, row.recorded_at, row.traceparent) = (1, 7, None);
        assert_eq!(format!("{:?}", read(&db)), format!("{row:?}"));

        use crate::wire::{LedgerStatus, SettledBy};
        (row.status, row.reason, row.revision) = (LedgerStatus::Completed, None, Some(4));
        (row.meta_attached, row.meta_id, row.settled_by) = (false, None, Some(SettledBy::Host));
        let list = serde_json::to_string(&[ChangedEntry(&row)]).unwrap();
        let changed = db
            .execute(CHANGED_ENTRIES.sql, rusqlite::params![9_i64, list])
            .unwrap();
        assert_eq!(changed, 1);
        assert_eq!(format!("{:?}", read(&db)), format!("{row:?}"));
    }

    /// The history insert agrees with the one declaration of the row ([`HISTORY_TABLE`]): every written
    /// column at its position after the entry's three, in both dialects, `at` the group's time, and a
    /// row serialised with as many elements as the statement reads.
    #[test]
    fn the_history_insert_has_every_declared_column_at_its_position_in_both_dialects() {
        let names: Vec<&str> = HISTORY_TABLE.iter().map(|c| c.name).collect();
        assert_eq!(&*HISTORY_COLUMNS, names.join(", "));
        let written: Vec<&StoredColumn> = HISTORY_TABLE.iter().filter(|c| c.insert).collect();
        assert_eq!(
            HISTORY_TABLE.len() - written.len(),
            1,
            "only `at` is the group's time"
        );
        for (i, c) in written.iter().enumerate() {
            let e = format!("j.value ->> {}", i + 3);
            assert!(
                HISTORY.sql.contains(&format!("{e}, "))
                    || HISTORY.sql.contains(&format!("{e} FROM")),
                "{}",
                c.name
            );
            let pg = c.cast.pg(&e);
            assert!(
                HISTORY.pg.contains(&format!("{pg}, "))
                    || HISTORY.pg.contains(&format!("{pg} FROM")),
                "{}",
                c.name
            );
        }
        // The entry's three elements (twice on SQLite, once on Postgres) and the written ones.
        assert_eq!(HISTORY.sql.matches("value ->> ").count(), 3 + written.len());
        assert_eq!(HISTORY.pg.matches("value ->> ").count(), 1 + written.len());
        assert_eq!(HISTORY.sql.matches('?').count(), HISTORY.binds.len());

        use crate::command::Actor;
        let out = history_row(
            5,
            &entry(None),
            HistoryKind::Note,
            None,
            &Actor::Host,
            None,
            None,
        );
        let array = serde_json::to_value(&out).unwrap();
        assert_eq!(array.as_array().map(Vec::len), Some(3 + written.len()));
    }

    /// The Postgres write's text ([`GroupWrite::postgres`]): parameters numbered `$1` (the time), then
    /// the lists in order, then the channel and the payloads; an entry the group inserts is found in the
    /// entries' insert's `RETURNING` (never by reading `entries`, which a sibling CTE does not see), and
    /// without new entries no statement names that CTE.
    #[test]
    fn the_postgres_write_is_one_statement_that_finds_new_entries_in_their_returning() {
        let mut w = GroupWrite::new();
        w.push(&TOUCHED_SESSIONS, &["s-1"]).unwrap();
        w.push(&NEW_ENTRIES, &["x"]).unwrap();
        w.push(&HISTORY, &["y"]).unwrap();
        let sql = w.postgres(true);
        assert!(
            sql.starts_with("WITH touched_sessions AS (UPDATE sessions SET last_write_at = $1 ")
        );
        assert!(sql.contains("jsonb_array_elements_text($2::jsonb)"));
        assert!(sql.contains(", new_entries AS (INSERT INTO entries "));
        assert!(sql.contains("jsonb_array_elements($3::jsonb)"));
        assert!(sql.contains("RETURNING seq, session_key, mutation_id), new_history AS ("));
        assert!(
            sql.contains("COALESCE((j.value ->> 0)::bigint, (SELECT n.seq FROM new_entries AS n")
        );
        assert!(sql.contains("jsonb_array_elements($4::jsonb)"));
        assert!(sql.ends_with(
            "SELECT pg_notify($5, p) FROM unnest($6::text[]) WITH ORDINALITY AS u(p, i) ORDER BY i"
        ));
        assert!(!sql.contains("$now") && !sql.contains("$list") && !sql.contains("$new_seq"));

        let mut w = GroupWrite::new();
        w.push(&HISTORY, &["y"]).unwrap();
        let sql = w.postgres(false);
        assert!(!sql.contains("new_entries"));
        assert!(sql.contains("COALESCE((j.value ->> 0)::bigint, NULL::bigint)"));
        assert!(sql.ends_with(") SELECT 1"));
    }
}
