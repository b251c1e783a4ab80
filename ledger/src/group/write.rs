//! Writing a group's final state (docs/ledger.md "Writing"): every statement that has rows, in order, on
//! the direct path, as one sqlx SQLite query, or on Postgres as one statement that also sends the turns'
//! notifications.

use super::statements::{
    Bind, GroupWrite, ATTEMPTS, CHANGED_ENTRIES, CHANGED_TURNS, HISTORY, NEW_ENTRIES, NEW_SESSIONS,
    NEW_TURNS, RECONCILIATIONS, TOUCHED_SESSIONS,
};
use super::statements::{ChangedEntry, NewEntry};
use super::{EntryRef, EntrySlot, Group, Key, TurnSlot};
use crate::error::LedgerError;
use crate::store::WriteTx;

impl Group {
    /// Writes the final state of everything the group changed: the statements that have rows to write,
    /// in order (parents before children: sessions, turns, entries, then attempts, evidence and history
    /// rows). Each statement reads its own list from its own JSON parameter (`json_each(?)`, rows as
    /// positional arrays), so SQLite parses each list once; the parameters are anonymous and bound in
    /// the order they appear. On the group commit's SQLite transaction ([`WriteTx::Direct`]) the
    /// statements run one after the other on the writer's thread; on a sqlx SQLite transaction as ONE
    /// multi-statement query (the driver binds the anonymous parameters of a multi-statement query in
    /// sequence across its statements); on Postgres as ONE statement of data-modifying CTEs that also
    /// sends the turns' notifications ([`Group::notes`]) on `channel` ([`GroupWrite::postgres`]), so
    /// they are delivered at the transaction's commit, in commit order.
    pub(crate) async fn write(
        self,
        tx: &mut WriteTx<'_>,
        channel: Option<&str>,
    ) -> Result<(), LedgerError> {
        // Only where there is a channel to send them on (Postgres).
        let payloads: Vec<String> = match channel {
            Some(_) => self
                .notes()
                .iter()
                .map(crate::store::live::Note::payload)
                .collect(),
            None => Vec::new(),
        };
        let mut w = GroupWrite::new();
        // Retention counts from a session's last write: once per session per group.
        let mut new_sessions: Vec<&str> = Vec::new();
        let mut touched: Vec<&str> = Vec::new();
        for (k, s) in &self.sessions {
            if s.new {
                new_sessions.push(k);
            } else if s.touched {
                touched.push(k);
            }
        }
        w.push(&NEW_SESSIONS, &new_sessions)?;
        w.push(&TOUCHED_SESSIONS, &touched)?;
        let mut new_turns: Vec<(&Key, &TurnSlot)> =
            self.turns.iter().filter(|(_, t)| t.new).collect();
        new_turns.sort_by_key(|(_, t)| t.order);
        let new_turns: Vec<(&str, &str, i64)> = new_turns
            .iter()
            .map(|(k, t)| (k.0.as_str(), k.1.as_str(), t.latest))
            .collect();
        w.push(&NEW_TURNS, &new_turns)?;
        let changed_turns: Vec<(&str, &str, i64)> = self
            .turns
            .iter()
            .filter(|(_, t)| t.changed && !t.new)
            .map(|(k, t)| (k.0.as_str(), k.1.as_str(), t.latest))
            .collect();
        w.push(&CHANGED_TURNS, &changed_turns)?;
        let mut new_entries: Vec<&EntrySlot> = self.entries.values().filter(|e| e.new).collect();
        new_entries.sort_by_key(|e| e.order);
        let new_entries: Vec<NewEntry> = new_entries.iter().map(|e| NewEntry(&e.row)).collect();
        w.push(&NEW_ENTRIES, &new_entries)?;
        let changed_entries: Vec<ChangedEntry> = self
            .entries
            .values()
            .filter(|e| e.changed && !e.new)
            .map(|e| ChangedEntry(&e.row))
            .collect();
        w.push(&CHANGED_ENTRIES, &changed_entries)?;
        let attempts: Vec<_> = self
            .attempts
            .iter()
            .map(|(k, a)| {
                let (seq, s, m) = self.entry_ref(k);
                (seq, s, m, a.as_str())
            })
            .collect();
        w.push(&ATTEMPTS, &attempts)?;
        let reconciliations: Vec<_> = self
            .reconciliations
            .iter()
            .map(|(k, a, completed, e)| {
                let (seq, s, m) = self.entry_ref(k);
                (
                    seq,
                    s,
                    m,
                    a.as_str(),
                    *completed,
                    e.source.as_str(),
                    e.reference.as_str(),
                    e.observed_at.as_str(),
                    e.provider_status.as_deref(),
                )
            })
            .collect();
        w.push(&RECONCILIATIONS, &reconciliations)?;
        w.push(&HISTORY, &self.history)?;
        let now = self.now;
        match &mut *tx {
            // On the writer's thread: each statement in turn, no hand-off between them.
            WriteTx::Direct(c) => {
                for (statement, binds) in &w.statements {
                    let params: Vec<&dyn rusqlite::types::ToSql> = binds
                        .iter()
                        .map(|b| match b {
                            Bind::Now => &now as &dyn rusqlite::types::ToSql,
                            Bind::List(list) => list,
                        })
                        .collect();
                    c.execute(statement.sql, &params)?;
                }
            }
            // sqlx's SQLite driver: ONE multi-statement query (one round trip to its worker thread).
            WriteTx::Sqlite(t) => {
                let sql: String = w.statements.iter().map(|(st, _)| st.sql).collect();
                let mut query = sqlx::query(&sql);
                for bind in w.statements.into_iter().flat_map(|(_, binds)| binds) {
                    query = match bind {
                        Bind::Now => query.bind(now),
                        Bind::List(list) => query.bind(list),
                    };
                }
                query.execute(&mut **t).await?;
            }
            // Postgres: the statements and the notifications as ONE statement, one round trip.
            WriteTx::Postgres(t) => {
                let notify = channel.filter(|_| !payloads.is_empty());
                if w.statements.is_empty() && notify.is_none() {
                    return Ok(());
                }
                let sql = w.postgres(notify.is_some());
                let mut query = sqlx::query(&sql).bind(now);
                for bind in w.statements.into_iter().flat_map(|(_, binds)| binds) {
                    if let Bind::List(list) = bind {
                        query = query.bind(list);
                    }
                }
                if let Some(channel) = notify {
                    query = query.bind(channel).bind(payloads);
                }
                query.execute(&mut **t).await?;
                return Ok(());
            }
        }
        tx.notify(channel, payloads).await
    }

    /// How a write names an entry: its `seq` when it was stored before this group, else (its `seq` is
    /// not known before its insert) its session key and mutation id, looked up by the statement.
    fn entry_ref<'a>(&self, key: &'a Key) -> EntryRef<'a> {
        match self
            .entries
            .get(key)
            .map(|e| e.row.seq)
            .filter(|&seq| seq != 0)
        {
            Some(seq) => (Some(seq), None, None),
            None => (None, Some(key.0.as_str()), Some(key.1.as_str())),
        }
    }
}
