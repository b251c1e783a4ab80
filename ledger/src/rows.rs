//! The store's rows: the `entries` row as read ([`EntryRow`]), its column list, and what the read and
//! write sides derive from it (its published record, its answer shape, its state for the machine); the
//! `history` row as read ([`HistoryRow`], its column list) and the change it is served as. Both
//! sides import this layer; it imports neither (docs/ledger.md "Layers"). The column type of the states the
//! machine reads ([`LedgerStatus`], [`Reason`]) is defined here too, so the machine and the wire types stay
//! free of sqlx.

use std::sync::LazyLock;

use serde::ser::SerializeTuple;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueRef};
use sqlx::sqlite::{SqliteArgumentValue, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Decode, Encode, Postgres, Sqlite, Type};

use crate::command::Evidence;
use crate::error::LedgerError;
use crate::ids::SessionKey;
use crate::machine::{Entry, SessionState};
use crate::projection::{project_owned, LedgerEntry};
use crate::store::format_time;
use crate::store::{on_tx, WriteTx};
use crate::wire::HostMetadata;
use crate::wire::{
    EntryState, EstablishedBy, HistoryChange, HistoryEvidence, HistoryKind, LedgerStatus, Reason,
    SettledBy,
};

/// A TEXT column holding a state by its stored spelling (`as_str`): encoded as that text, decoded by
/// `parse`, and any other text is a decode error, never a silent fallback.
macro_rules! stored_as_spelling {
    ($($ty:ident),*) => {$(
        impl Type<Sqlite> for $ty {
            fn type_info() -> SqliteTypeInfo {
                <str as Type<Sqlite>>::type_info()
            }

            fn compatible(ty: &SqliteTypeInfo) -> bool {
                <&str as Type<Sqlite>>::compatible(ty)
            }
        }

        impl<'q> Encode<'q, Sqlite> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut Vec<SqliteArgumentValue<'q>>,
            ) -> Result<IsNull, BoxDynError> {
                <&str as Encode<'q, Sqlite>>::encode(self.as_str(), buf)
            }
        }

        impl<'r> Decode<'r, Sqlite> for $ty {
            fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
                let s = <&str as Decode<'r, Sqlite>>::decode(value)?;
                $ty::parse(s).ok_or_else(|| {
                    format!("invalid value {s:?} for enum {}", stringify!($ty)).into()
                })
            }
        }

        impl Type<Postgres> for $ty {
            fn type_info() -> PgTypeInfo {
                <str as Type<Postgres>>::type_info()
            }

            fn compatible(ty: &PgTypeInfo) -> bool {
                <&str as Type<Postgres>>::compatible(ty)
            }
        }

        impl Encode<'_, Postgres> for $ty {
            fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <&str as Encode<'_, Postgres>>::encode(self.as_str(), buf)
            }
        }

        impl<'r> Decode<'r, Postgres> for $ty {
            fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
                let s = <&str as Decode<'r, Postgres>>::decode(value)?;
                $ty::parse(s).ok_or_else(|| {
                    format!("invalid value {s:?} for enum {}", stringify!($ty)).into()
                })
            }
        }
    )*};
}

stored_as_spelling!(LedgerStatus, Reason, HistoryKind, SettledBy, EstablishedBy);

/// How a stored column's value travels in the JSON array of a group write (docs/ledger.md "Writing") and
/// what Postgres casts it to: `value ->> N` is text there (SQLite's `->>` answers the JSON value's own
/// type, so its expressions take no cast).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cast {
    Text,
    Boolean,
    Bigint,
}

impl Cast {
    /// `expr` (a `value ->> N`) cast for Postgres: as it is for text, else `(expr)::boolean` or
    /// `(expr)::bigint`.
    pub(crate) fn pg(self, expr: &str) -> String {
        match self {
            Cast::Text => expr.to_owned(),
            Cast::Boolean => format!("({expr})::boolean"),
            Cast::Bigint => format!("({expr})::bigint"),
        }
    }
}

/// One column of a stored row as [`entry_row!`] declares it: its name (the field's and the column's),
/// its [`Cast`], and which statements carry it: `read` in [`ENTRY_COLUMNS`] (a `SELECT` or `RETURNING`,
/// and [`EntryRow::from_direct`] at the same position), `insert` in a new entry's positional array
/// (`group::statements`, `NewEntry`), `update` in a changed entry's (`ChangedEntry`, after its `seq`).
#[derive(Debug)]
pub(crate) struct StoredColumn {
    pub name: &'static str,
    pub cast: Cast,
    pub read: bool,
    pub insert: bool,
    pub update: bool,
}

/// A field's value as a column of a stored row: appended to a group write's positional array (a state
/// by its stored spelling, `as_str`) and read from the group commit's direct path (crate::direct) at
/// position `i` (a state decoded from its spelling by `parse`, as sqlx decodes it: any other text is an
/// error naming the column, never a silent fallback).
pub(crate) trait Stored: Sized {
    fn serialize_into<T: SerializeTuple>(&self, t: &mut T) -> Result<(), T::Error>;
    fn from_direct(r: &rusqlite::Row<'_>, i: usize, column: &str) -> rusqlite::Result<Self>;
}

/// [`Stored`] for a type `rusqlite` reads and serde writes as it is.
macro_rules! stored_as_is {
    ($($ty:ty),*) => {$(
        impl Stored for $ty {
            fn serialize_into<T: SerializeTuple>(&self, t: &mut T) -> Result<(), T::Error> {
                t.serialize_element(self)
            }

            fn from_direct(r: &rusqlite::Row<'_>, i: usize, _: &str) -> rusqlite::Result<Self> {
                r.get(i)
            }
        }
    )*};
}

stored_as_is!(i64, bool, String, Option<i64>, Option<String>);

/// The state spelled in column `i` (`column`) of a direct read, `None` for `NULL`; any text `parse`
/// does not take is an error.
fn spelled<T>(
    r: &rusqlite::Row<'_>,
    i: usize,
    column: &str,
    parse: fn(&str) -> Option<T>,
) -> rusqlite::Result<Option<T>> {
    let Some(text) = r.get::<_, Option<String>>(i)? else {
        return Ok(None);
    };
    parse(&text).map(Some).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("invalid value {text:?} in column {i} ({column}) of entries").into(),
        )
    })
}

/// [`Stored`] for a state stored by its spelling in a `NOT NULL` column.
macro_rules! stored_as_required_spelling {
    ($($ty:ident),*) => {$(
        impl Stored for $ty {
            fn serialize_into<T: SerializeTuple>(&self, t: &mut T) -> Result<(), T::Error> {
                t.serialize_element(self.as_str())
            }

            fn from_direct(r: &rusqlite::Row<'_>, i: usize, column: &str) -> rusqlite::Result<Self> {
                spelled(r, i, column, $ty::parse)?.ok_or(rusqlite::Error::InvalidColumnType(
                    i,
                    column.into(),
                    rusqlite::types::Type::Null,
                ))
            }
        }
    )*};
}

stored_as_required_spelling!(LedgerStatus, HistoryKind);

/// [`Stored`] for an optional state stored by its spelling.
macro_rules! stored_as_optional_spelling {
    ($($ty:ident),*) => {$(
        impl Stored for Option<$ty> {
            fn serialize_into<T: SerializeTuple>(&self, t: &mut T) -> Result<(), T::Error> {
                t.serialize_element(&self.map($ty::as_str))
            }

            fn from_direct(r: &rusqlite::Row<'_>, i: usize, column: &str) -> rusqlite::Result<Self> {
                spelled(r, i, column, $ty::parse)
            }
        }
    )*};
}

stored_as_optional_spelling!(Reason, SettledBy, EstablishedBy);

/// The one declaration of the `entries` row (docs/ledger.md "Writing"): each column once, in the order
/// of [`ENTRY_COLUMNS`], as `field: Type = Cast { read: _, insert: _, update: _ };` (see
/// [`StoredColumn`]). It defines [`EntryRow`], [`ENTRY_TABLE`] (from which [`ENTRY_COLUMNS`] and the
/// group's `NEW_ENTRIES` / `CHANGED_ENTRIES` statements of both dialects are generated, with each
/// column's `value ->> N` at its position), [`EntryRow::from_direct`] and the positional serialisers
/// [`EntryRow::serialize_insert`] / [`EntryRow::serialize_update`]. Adding a column to `entries` is one
/// line here plus its migration (`ledger/migrations`, `ledger/migrations_pg`) and the code that sets it.
macro_rules! entry_row {
    (@read true, $r:ident, $i:ident, $ty:ty, $field:ident) => {{
        let value = <$ty as Stored>::from_direct($r, $i, stringify!($field))?;
        $i += 1;
        value
    }};
    (@read false, $r:ident, $i:ident, $ty:ty, $field:ident) => {
        <$ty as Default>::default()
    };
    (@write true, $row:ident, $t:ident, $field:ident) => {
        Stored::serialize_into(&$row.$field, $t)?
    };
    (@write false, $row:ident, $t:ident, $field:ident) => {};
    ($(
        $(#[$attr:meta])*
        $field:ident: $ty:ty = $cast:ident { read: $read:tt, insert: $insert:tt, update: $update:tt };
    )*) => {
        /// One `entries` row. `status` and `reason` are decoded from their wire spellings (the CHECK
        /// constraints admit no other; anything else would be a decode error, never a silent fallback).
        #[derive(Debug, Clone, sqlx::FromRow)]
        pub(crate) struct EntryRow {
            $($(#[$attr])* pub $field: $ty,)*
        }

        /// The columns of [`EntryRow`] in declaration order ([`entry_row!`]).
        pub(crate) const ENTRY_TABLE: &[StoredColumn] = &[$(StoredColumn {
            name: stringify!($field),
            cast: Cast::$cast,
            read: $read,
            insert: $insert,
            update: $update,
        }),*];

        impl EntryRow {
            /// The row [`ENTRY_COLUMNS`] selects, in that order, read on the group commit's direct path
            /// (crate::direct); the states decoded from their spellings as sqlx decodes them (any other
            /// text is an error); a column not read ([`StoredColumn::read`]) is its type's default.
            pub(crate) fn from_direct(r: &rusqlite::Row<'_>) -> rusqlite::Result<EntryRow> {
                let mut i = 0;
                $(let $field = entry_row!(@read $read, r, i, $ty, $field);)*
                let _ = i;
                Ok(EntryRow { $($field),* })
            }

            /// Appends the columns a new entry's insert writes ([`StoredColumn::insert`]) in their
            /// order, to the row's positional array.
            pub(crate) fn serialize_insert<T: SerializeTuple>(&self, t: &mut T) -> Result<(), T::Error> {
                $(entry_row!(@write $insert, self, t, $field);)*
                Ok(())
            }

            /// Appends the columns a changed entry's update writes ([`StoredColumn::update`]) in their
            /// order, to the row's positional array (after its `seq`).
            pub(crate) fn serialize_update<T: SerializeTuple>(&self, t: &mut T) -> Result<(), T::Error> {
                $(entry_row!(@write $update, self, t, $field);)*
                Ok(())
            }
        }
    };
}

entry_row! {
    seq: i64 = Bigint { read: true, insert: false, update: false };
    session_key: String = Text { read: true, insert: true, update: false };
    logical_turn_id: String = Text { read: true, insert: true, update: false };
    mutation_id: String = Text { read: true, insert: true, update: false };
    tool: String = Text { read: true, insert: true, update: false };
    status: LedgerStatus = Text { read: true, insert: true, update: true };
    intent_recorded: bool = Boolean { read: true, insert: true, update: true };
    attempt_id: Option<String> = Text { read: true, insert: true, update: true };
    reason: Option<Reason> = Text { read: true, insert: true, update: true };
    meta_attached: bool = Boolean { read: true, insert: true, update: true };
    meta_id: Option<String> = Text { read: true, insert: true, update: true };
    meta_url: Option<String> = Text { read: true, insert: true, update: true };
    meta_title: Option<String> = Text { read: true, insert: true, update: true };
    revision: Option<i64> = Bigint { read: true, insert: true, update: true };
    /// When the entry was recorded (ms since the epoch): the group's time, written by the insert itself.
    recorded_at: i64 = Bigint { read: true, insert: false, update: false };
    settled_at: Option<i64> = Bigint { read: true, insert: true, update: true };
    /// The mutation of the session this one was commissioned after (`NULL`: none).
    commissioned_after: Option<String> = Text { read: true, insert: true, update: false };
    /// When the ledger settles the attempt in flight (ms since the epoch, docs/api.md "Deadlines");
    /// `NULL` before the first intent.
    deadline_at: Option<i64> = Bigint { read: true, insert: true, update: true };
    /// Who settled the current state by a settle or cancellation (`NULL` otherwise).
    settled_by: Option<SettledBy> = Text { read: true, insert: true, update: true };
    /// Who established the current state by a reconciliation (`NULL` otherwise).
    established_by: Option<EstablishedBy> = Text { read: true, insert: true, update: true };
    /// The host's W3C `traceparent` given at approve: written with a new entry, read only by the
    /// OpenTelemetry outbox's trigger (not in [`ENTRY_COLUMNS`]: a row read back has `None`).
    #[sqlx(default)]
    traceparent: Option<String> = Text { read: false, insert: true, update: false };
}

/// A list of column names, `, `-separated, built once from a row's declaration (usable in `format!` as
/// `{ENTRY_COLUMNS}` and as a `&str`).
pub(crate) struct ColumnList(LazyLock<String>);

impl std::ops::Deref for ColumnList {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ColumnList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

/// The columns of [`EntryRow`] that are read back ([`StoredColumn::read`]), in a `SELECT` or a
/// `RETURNING` clause, in [`ENTRY_TABLE`]'s order.
pub(crate) static ENTRY_COLUMNS: ColumnList = ColumnList(LazyLock::new(|| {
    ENTRY_TABLE
        .iter()
        .filter(|c| c.read)
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}));

impl EntryRow {
    pub(crate) fn ledger_status(&self) -> LedgerStatus {
        self.status
    }

    pub(crate) fn reason(&self) -> Option<Reason> {
        self.reason
    }

    pub(crate) fn metadata(&self) -> Option<HostMetadata> {
        self.meta_attached.then(|| HostMetadata {
            id: self.meta_id.clone(),
            url: self.meta_url.clone(),
            title: self.meta_title.clone(),
        })
    }

    pub(crate) fn ledger_entry(&self) -> LedgerEntry {
        LedgerEntry {
            logical_turn_id: self.logical_turn_id.clone(),
            mutation_id: self.mutation_id.clone(),
            tool: self.tool.clone(),
            status: self.ledger_status(),
            intent_recorded: self.intent_recorded,
            reason: self.reason(),
            metadata: self.metadata(),
        }
    }

    /// The answer shape of a write (and of a refusal's current state).
    pub(crate) fn state(&self) -> EntryState {
        EntryState {
            session_key: self.session_key.clone(),
            logical_turn_id: self.logical_turn_id.clone(),
            mutation_id: self.mutation_id.clone(),
            ledger_status: self.ledger_status(),
            intent_recorded: self.intent_recorded,
            attempt_id: self.attempt_id.clone(),
            revision: self.revision,
            reason: self.reason(),
        }
    }

    /// What the state machine reads. The stored metadata is given sanitised when `sanitise_metadata`
    /// (rows written before metadata was sanitised on write hold raw values; an attach compares with
    /// what would be published).
    pub(crate) fn machine_entry(&self, sanitise_metadata: bool) -> Entry {
        let metadata = self.metadata().map(|m| {
            if sanitise_metadata {
                crate::sanitize::sanitize_metadata(&m)
            } else {
                m
            }
        });
        Entry {
            status: self.ledger_status(),
            intent_recorded: self.intent_recorded,
            attempt_id: self.attempt_id.clone(),
            reason: self.reason(),
            metadata,
            settled_by: self.settled_by,
        }
    }
}

/// The session's state and the entry (when recorded), read in one statement.
pub(crate) struct Loaded {
    pub session: SessionState,
    pub entry: Option<EntryRow>,
}

/// Loads the session and the entry `(session_key, mutation_id)` (a legacy import's write). `live_since`
/// is the earliest last write of a live session.
pub(crate) async fn load_for_write(
    tx: &mut WriteTx<'_>,
    session_key: &str,
    mutation_id: &str,
    live_since: i64,
) -> Result<Loaded, LedgerError> {
    on_tx!(tx, |c, d| {
        let last_write: Option<i64> =
            sqlx::query_scalar("SELECT last_write_at FROM sessions WHERE session_key = $1")
                .bind(session_key)
                .fetch_optional(&mut *c)
                .await?;
        let Some(last_write) = last_write else {
            return Ok(Loaded {
                session: SessionState::Absent,
                entry: None,
            });
        };
        let session = if last_write < live_since {
            SessionState::Expired
        } else {
            SessionState::Live
        };
        let entry: Option<EntryRow> = sqlx::query_as(&format!(
            "SELECT {ENTRY_COLUMNS} FROM entries WHERE session_key = $1 AND mutation_id = $2"
        ))
        .bind(session_key)
        .bind(mutation_id)
        .fetch_optional(&mut *c)
        .await?;
        Ok(Loaded { session, entry })
    })
}

/// `Ok` when the session is stored and was written to at or after `live_since`;
/// [`LedgerError::SessionNotFound`] / [`LedgerError::SessionExpired`] otherwise.
pub(crate) async fn check_session_live(
    tx: &mut WriteTx<'_>,
    session_key: &SessionKey,
    live_since: i64,
) -> Result<(), LedgerError> {
    let last_write: Option<i64> = on_tx!(tx, |c, d| {
        sqlx::query_scalar("SELECT last_write_at FROM sessions WHERE session_key = $1")
            .bind(session_key.as_str())
            .fetch_optional(&mut *c)
            .await?
    });
    match last_write {
        None => Err(LedgerError::SessionNotFound),
        Some(t) if t < live_since => Err(LedgerError::SessionExpired),
        Some(_) => Ok(()),
    }
}

/// The one declaration of the `history` row after its `entry_seq` (docs/ledger.md "History"): each
/// column once, in the order of [`HISTORY_COLUMNS`], as `field: Type = Cast { written: _ };`. It defines
/// [`HistoryRow`], [`HISTORY_TABLE`] (from which [`HISTORY_COLUMNS`] and the group's `HISTORY` insert of
/// both dialects are generated) and [`HistoryRow::serialize_written`]. A column not `written` in the
/// row's positional array is `at`, the group's time. Adding a column to `history` is one line here plus
/// its migrations, the legacy import's insert (`engine::legacy`) and the code that sets it.
macro_rules! history_row {
    ($(
        $(#[$attr:meta])*
        $field:ident: $ty:ty = $cast:ident { written: $written:tt };
    )*) => {
        /// One `history` row as read (docs/ledger.md "History").
        #[derive(sqlx::FromRow)]
        pub(crate) struct HistoryRow {
            $($(#[$attr])* $field: $ty,)*
        }

        /// The columns of [`HistoryRow`] in declaration order ([`history_row!`]): all read, the
        /// `written` ones in the group insert's positional array (`insert`).
        pub(crate) const HISTORY_TABLE: &[StoredColumn] = &[$(StoredColumn {
            name: stringify!($field),
            cast: Cast::$cast,
            read: true,
            insert: $written,
            update: false,
        }),*];

        impl HistoryRow {
            /// Appends the row's `written` columns ([`HISTORY_TABLE`]'s `insert`: all but `at`, which
            /// the group's insert binds once for all rows) in their order, to a positional array.
            pub(crate) fn serialize_written<T: SerializeTuple>(&self, t: &mut T) -> Result<(), T::Error> {
                $(entry_row!(@write $written, self, t, $field);)*
                Ok(())
            }
        }
    };
}

history_row! {
    kind: HistoryKind = Text { written: true };
    /// When the change was written (ms since the epoch): the group's time.
    at: i64 = Bigint { written: false };
    revision: Option<i64> = Bigint { written: true };
    actor: String = Text { written: true };
    attempt_id: Option<String> = Text { written: true };
    ledger_status: LedgerStatus = Text { written: true };
    intent_recorded: bool = Boolean { written: true };
    reason: Option<Reason> = Text { written: true };
    meta_attached: bool = Boolean { written: true };
    meta_id: Option<String> = Text { written: true };
    meta_url: Option<String> = Text { written: true };
    meta_title: Option<String> = Text { written: true };
    source: Option<String> = Text { written: true };
    reference: Option<String> = Text { written: true };
    observed_at: Option<String> = Text { written: true };
    note: Option<String> = Text { written: true };
    deadline_at: Option<i64> = Bigint { written: true };
    provider_status: Option<String> = Text { written: true };
}

/// The columns of a [`HistoryRow`] after its `entry_seq`, in [`HISTORY_TABLE`]'s order: the one list
/// the reads, the group commit's insert (`group::statements`) and the legacy import's
/// (`engine::legacy`) spell.
pub(crate) static HISTORY_COLUMNS: ColumnList = ColumnList(LazyLock::new(|| {
    HISTORY_TABLE
        .iter()
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}));

impl HistoryRow {
    /// The history row of a change of `entry` (its state fields after the change) at `at` (ms since the
    /// epoch, the group's time): what the change was, the revision it took (`None` for approvals, notes,
    /// claims and releases), who asked (`Actor::spelling`), and the evidence (reconciliations) or text
    /// (notes) it carries (docs/ledger.md "History").
    pub(crate) fn of_change(
        at: i64,
        entry: &EntryRow,
        kind: HistoryKind,
        revision: Option<i64>,
        actor: String,
        evidence: Option<&Evidence>,
        note: Option<&String>,
    ) -> HistoryRow {
        HistoryRow {
            kind,
            at,
            revision,
            actor,
            attempt_id: entry.attempt_id.clone(),
            ledger_status: entry.status,
            intent_recorded: entry.intent_recorded,
            reason: entry.reason,
            meta_attached: entry.meta_attached,
            meta_id: entry.meta_id.clone(),
            meta_url: entry.meta_url.clone(),
            meta_title: entry.meta_title.clone(),
            source: evidence.map(|e| e.source.clone()),
            reference: evidence.map(|e| e.reference.clone()),
            observed_at: evidence.map(|e| e.observed_at.clone()),
            note: note.cloned(),
            deadline_at: entry.deadline_at,
            provider_status: evidence.and_then(|e| e.provider_status.clone()),
        }
    }

    /// The revision the change took (`None` for an approval, a note, a claim or release, an import).
    pub(crate) fn revision(&self) -> Option<i64> {
        self.revision
    }

    pub(crate) fn ledger_status(&self) -> LedgerStatus {
        self.ledger_status
    }

    /// The entry as of this change, for the projection: the entry's keys with the state fields this
    /// row kept.
    pub(crate) fn ledger_entry(
        self,
        logical_turn_id: String,
        mutation_id: String,
        tool: String,
    ) -> LedgerEntry {
        LedgerEntry {
            logical_turn_id,
            mutation_id,
            tool,
            status: self.ledger_status,
            intent_recorded: self.intent_recorded,
            reason: self.reason,
            metadata: self.meta_attached.then_some(HostMetadata {
                id: self.meta_id,
                url: self.meta_url,
                title: self.meta_title,
            }),
        }
    }
}

/// A history row as served: its record projected from the entry's state fields at that change.
pub(crate) fn change(entry: &EntryRow, r: HistoryRow) -> HistoryChange {
    let outcome = project_owned(LedgerEntry {
        logical_turn_id: entry.logical_turn_id.clone(),
        mutation_id: entry.mutation_id.clone(),
        tool: entry.tool.clone(),
        status: r.ledger_status,
        intent_recorded: r.intent_recorded,
        reason: r.reason,
        metadata: r.meta_attached.then_some(HostMetadata {
            id: r.meta_id,
            url: r.meta_url,
            title: r.meta_title,
        }),
    });
    let settled_by = match r.kind {
        HistoryKind::Settlement | HistoryKind::Cancellation => Some(if r.actor == "ledger" {
            SettledBy::Ledger
        } else {
            SettledBy::Host
        }),
        _ => None,
    };
    let established_by = match (r.kind, &r.source) {
        (HistoryKind::Reconciliation, Some(source)) => Some(EstablishedBy::of(&r.actor, source)),
        _ => None,
    };
    let deadline_at = r.deadline_at.map(format_time);
    let evidence = match (r.source, r.reference, r.observed_at) {
        (Some(source), Some(reference), Some(observed_at)) => Some(HistoryEvidence {
            source,
            reference,
            observed_at,
            provider_status: r.provider_status,
        }),
        _ => None,
    };
    HistoryChange {
        kind: r.kind,
        at: format_time(r.at),
        revision: r.revision,
        actor: r.actor,
        attempt_id: r.attempt_id,
        ledger_status: r.ledger_status,
        reason: r.reason,
        evidence,
        note: r.note,
        outcome,
        deadline_at,
        settled_by,
        established_by,
    }
}

/// [`ENTRY_COLUMNS`], each qualified by the table alias `alias`.
pub(crate) fn prefixed(alias: &str) -> String {
    columns_of(alias, &ENTRY_COLUMNS)
}

/// [`HISTORY_COLUMNS`], each qualified by the table alias `alias`.
pub(crate) fn history_prefixed(alias: &str) -> String {
    columns_of(alias, &HISTORY_COLUMNS)
}

/// `columns` (a `, `-separated list), each qualified by the table alias `alias`.
fn columns_of(alias: &str, columns: &str) -> String {
    columns
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection, SqliteConnection};

    use crate::wire::{LedgerStatus, Reason};

    #[tokio::test]
    async fn states_are_stored_by_their_spelling_and_any_other_spelling_is_a_decode_error() {
        let mut db = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        for status in [
            LedgerStatus::Approved,
            LedgerStatus::ExecutionStarted,
            LedgerStatus::Completed,
            LedgerStatus::Failed,
            LedgerStatus::OutcomeUnknown,
        ] {
            let (text, back): (String, LedgerStatus) = sqlx::query_as("SELECT ?1, ?1")
                .bind(status)
                .fetch_one(&mut db)
                .await
                .unwrap();
            assert_eq!((text.as_str(), back), (status.as_str(), status));
        }
        for reason in [Reason::PreDispatchDeadline, Reason::ExecutionTimeout] {
            let (text, back): (String, Reason) = sqlx::query_as("SELECT ?1, ?1")
                .bind(reason)
                .fetch_one(&mut db)
                .await
                .unwrap();
            assert_eq!((text.as_str(), back), (reason.as_str(), reason));
        }
        let none: Option<Reason> = sqlx::query_scalar("SELECT NULL")
            .fetch_one(&mut db)
            .await
            .unwrap();
        assert_eq!(none, None);
        for other in ["Completed", "outcome-unknown", "settled", ""] {
            let status = sqlx::query_scalar::<_, LedgerStatus>("SELECT ?")
                .bind(other)
                .fetch_one(&mut db)
                .await;
            assert!(
                matches!(status, Err(sqlx::Error::ColumnDecode { .. })),
                "{other:?}: {status:?}"
            );
            let reason = sqlx::query_scalar::<_, Option<Reason>>("SELECT ?")
                .bind(other)
                .fetch_one(&mut db)
                .await;
            assert!(
                matches!(reason, Err(sqlx::Error::ColumnDecode { .. })),
                "{other:?}: {reason:?}"
            );
        }
    }
}
