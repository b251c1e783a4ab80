//! Loading a group's state (docs/ledger.md "Writing"): the sessions, entries and turns its commands name,
//! in three statements or on Postgres one, and what a decision reads on demand (an entry's claim, whether
//! an attempt id was used).

use std::collections::{HashMap, HashSet};

use serde_json::json;

use super::{ClaimHeld, EntrySlot, Group, Key, SessionSlot, TurnSlot};
use crate::command::{Action, Command};
use crate::error::{LedgerError, CLAIMS_PER_MINUTE, CLAIM_WINDOW_MS};
use crate::machine::SessionState;
use crate::rows::{EntryRow, ENTRY_COLUMNS};
use crate::store::{on_tx, Dialect, WriteTx};

impl Group {
    /// Loads the sessions, entries and turns `commands` name: three statements ([`load_each`]), or on
    /// Postgres one ([`load_postgres`]).
    pub(crate) async fn load(
        tx: &mut WriteTx<'_>,
        commands: &[&Command],
        now: i64,
        live_since: i64,
        deadline_ms: i64,
    ) -> Result<Group, LedgerError> {
        let mut session_keys: Vec<&str> = commands
            .iter()
            .map(|c| c.key.session_key.as_str())
            .collect();
        session_keys.sort_unstable();
        session_keys.dedup();
        // An approve's `commissioned_after` names an entry to look up too.
        let mut entry_keys: Vec<[&str; 2]> = commands
            .iter()
            .map(|c| [c.key.session_key.as_str(), c.key.mutation_id.as_str()])
            .chain(commands.iter().filter_map(|c| match &c.action {
                Action::Approve {
                    commissioned_after: Some(after),
                    ..
                } => Some([c.key.session_key.as_str(), after.as_str()]),
                _ => None,
            }))
            .collect();
        entry_keys.sort_unstable();
        entry_keys.dedup();

        // The turns an approve names; the turns of the entries found are added to them.
        let approved_turns: Vec<[&str; 2]> = commands
            .iter()
            .filter_map(|c| match &c.action {
                Action::Approve {
                    logical_turn_id, ..
                } => Some([c.key.session_key.as_str(), logical_turn_id.as_str()]),
                _ => None,
            })
            .collect();
        let (rows, found, turn_rows) = match &mut *tx {
            WriteTx::Postgres(t) => {
                load_postgres(t, &session_keys, &entry_keys, &approved_turns).await?
            }
            tx => load_each(tx, &session_keys, &entry_keys, approved_turns).await?,
        };
        let mut sessions = HashMap::with_capacity(session_keys.len());
        for (session_key, last_write) in rows {
            let state = if last_write < live_since {
                SessionState::Expired
            } else {
                SessionState::Live
            };
            sessions.insert(
                session_key,
                SessionSlot {
                    state,
                    new: false,
                    touched: false,
                },
            );
        }

        let mut turns = HashMap::with_capacity(turn_rows.len());
        for (session_key, turn, latest) in turn_rows {
            turns.insert(
                (session_key, turn),
                TurnSlot {
                    latest,
                    before: latest,
                    new: false,
                    changed: false,
                    order: 0,
                },
            );
        }
        let mut entries = HashMap::with_capacity(found.len());
        for row in found {
            entries.insert(
                (row.session_key.clone(), row.mutation_id.clone()),
                EntrySlot {
                    row,
                    new: false,
                    changed: false,
                    order: 0,
                },
            );
        }
        Ok(Group {
            now,
            deadline_ms,
            sessions,
            turns,
            entries,
            attempts: Vec::new(),
            attempts_seen: HashSet::new(),
            claims: HashMap::new(),
            claim_times: HashMap::new(),
            reconciliations: Vec::new(),
            history: Vec::new(),
            changed_turns: Vec::new(),
            announced: Vec::new(),
            notifies: tx.dialect() == Dialect::Postgres,
            next_order: 0,
        })
    }

    /// Whether `attempt_id` was ever an attempt of the entry: in this group, or stored.
    /// [`Self::claim_of`] the entry `key` of this group (`MutationNotFound` when it holds none).
    pub(super) async fn entry_claim(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: &Key,
    ) -> Result<Option<ClaimHeld>, LedgerError> {
        let seq = self
            .entries
            .get(key)
            .ok_or(LedgerError::MutationNotFound)?
            .row
            .seq;
        self.claim_of(tx, key, seq).await
    }

    /// Who holds the claim of the entry `key` (stored as `seq`; 0 for an entry this group records): its
    /// latest `claim` or `release` history row, read once per group (one index range of
    /// `history_by_entry`), then what this group's claims and releases made of it.
    async fn claim_of(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: &Key,
        seq: i64,
    ) -> Result<Option<ClaimHeld>, LedgerError> {
        if let Some(held) = self.claims.get(key) {
            return Ok(held.clone());
        }
        let held = if seq == 0 {
            None
        } else {
            // An assignment's `claim` row names its holder in `note` (docs/api.md "Claims").
            const SQL: &str = "SELECT kind, COALESCE('staff:' || note, actor), at FROM history \
                 WHERE entry_seq = $1 AND kind IN ('claim', 'release') ORDER BY id DESC LIMIT 1";
            let last: Option<(String, String, i64)> = match tx {
                WriteTx::Direct(c) => c
                    .rows(SQL, &[&seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .pop(),
                tx => on_tx!(tx, |c, d| sqlx::query_as(SQL)
                    .bind(seq)
                    .fetch_optional(c)
                    .await?),
            };
            last.filter(|(kind, _, _)| kind == "claim")
                .map(|(_, actor, at)| ClaimHeld { actor, at })
        };
        self.claims.insert(key.clone(), held.clone());
        Ok(held)
    }

    /// `Ok` when `actor` may claim or release the entry `key` now (docs/api.md "Claims"): fewer than
    /// [`CLAIMS_PER_MINUTE`] of its `claim` and `release` rows of the entry in the last
    /// [`CLAIM_WINDOW_MS`] (`at` after `now - CLAIM_WINDOW_MS`, the ledger's clock), stored or added by
    /// this group; else [`LedgerError::TooManyClaims`] with the wait until the oldest of them leaves the
    /// window. The stored ones are read once per group and actor: at most [`CLAIMS_PER_MINUTE`] rows of
    /// one range of `history_claims_by_actor` (on Postgres the entry is locked `FOR UPDATE` by the group,
    /// so instances sharing the database count the same rows).
    pub(super) async fn claim_budget(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: &Key,
        actor: &str,
    ) -> Result<(), LedgerError> {
        let since = self.now - CLAIM_WINDOW_MS;
        let id = (key.clone(), actor.to_owned());
        if !self.claim_times.contains_key(&id) {
            let seq = self
                .entries
                .get(key)
                .ok_or(LedgerError::MutationNotFound)?
                .row
                .seq;
            let times: Vec<i64> = if seq == 0 {
                Vec::new()
            } else {
                const SQL: &str = "SELECT at FROM history WHERE entry_seq = $1 AND actor = $2 \
                     AND kind IN ('claim', 'release') AND at > $3 ORDER BY at DESC LIMIT $4";
                let limit = CLAIMS_PER_MINUTE as i64;
                match tx {
                    WriteTx::Direct(c) => {
                        c.rows(SQL, &[&seq, &actor, &since, &limit], |r| r.get(0))?
                    }
                    tx => on_tx!(tx, |c, d| sqlx::query_scalar(SQL)
                        .bind(seq)
                        .bind(actor)
                        .bind(since)
                        .bind(limit)
                        .fetch_all(c)
                        .await?),
                }
            };
            self.claim_times.insert(id.clone(), times);
        }
        let times = self.claim_times.get_mut(&id).map(|t| {
            t.retain(|&at| at > since);
            &*t
        });
        match times {
            Some(times) if times.len() >= CLAIMS_PER_MINUTE => {
                // Newest first: the oldest that counts is the last of the newest CLAIMS_PER_MINUTE.
                let oldest = times[CLAIMS_PER_MINUTE - 1];
                Err(LedgerError::TooManyClaims {
                    retry_after_ms: (oldest + CLAIM_WINDOW_MS - self.now).max(1),
                })
            }
            _ => Ok(()),
        }
    }

    /// Counts a `claim` or `release` row `actor` added to the entry `key` in this group (after
    /// [`Self::claim_budget`] read its stored ones).
    pub(super) fn count_claim(&mut self, key: &Key, actor: &str) {
        if let Some(times) = self.claim_times.get_mut(&(key.clone(), actor.to_owned())) {
            times.insert(0, self.now);
            times.truncate(CLAIMS_PER_MINUTE);
        }
    }

    pub(super) async fn attempt_used(
        &self,
        tx: &mut WriteTx<'_>,
        key: &Key,
        seq: i64,
        attempt_id: &str,
    ) -> Result<bool, LedgerError> {
        if self
            .attempts_seen
            .contains(&(key.clone(), attempt_id.to_owned()))
        {
            return Ok(true);
        }
        if seq == 0 {
            return Ok(false);
        }
        const SQL: &str = "SELECT 1 FROM attempts WHERE entry_seq = $1 AND attempt_id = $2";
        let used: Option<i32> = match tx {
            WriteTx::Direct(c) => c.rows(SQL, &[&seq, &attempt_id], |r| r.get(0))?.pop(),
            tx => on_tx!(tx, |c, d| sqlx::query_scalar(SQL)
                .bind(seq)
                .bind(attempt_id)
                .fetch_optional(c)
                .await?),
        };
        Ok(used.is_some())
    }
}

/// What a group loads: `(session_key, last_write_at)` of the sessions found, the entries found, and
/// `(session_key, logical_turn_id, latest_revision)` of the turns found (Postgres: locked `FOR UPDATE`).
type Loaded = (
    Vec<(String, i64)>,
    Vec<EntryRow>,
    Vec<(String, String, i64)>,
);

/// [`Group::load`] in three statements, one after the other: the sessions of `session_keys`, the entries
/// of `entry_keys` (`[session_key, mutation_id]`), then the turns of `approved_turns` and of the entries
/// found (`[session_key, logical_turn_id]`). Each list is one JSON text parameter.
async fn load_each(
    tx: &mut WriteTx<'_>,
    session_keys: &[&str],
    entry_keys: &[[&str; 2]],
    mut turn_keys: Vec<[&str; 2]>,
) -> Result<Loaded, LedgerError> {
    let dialect = tx.dialect();
    let sql = format!(
        "SELECT session_key, last_write_at FROM sessions WHERE {}",
        dialect.text_in("session_key", 1)
    );
    let list = json!(session_keys).to_string();
    let rows: Vec<(String, i64)> = match &mut *tx {
        WriteTx::Direct(c) => c.rows(&sql, &[&list], |r| Ok((r.get(0)?, r.get(1)?)))?,
        tx => on_tx!(tx, |c, d| sqlx::query_as(&sql)
            .bind(&list)
            .fetch_all(c)
            .await?),
    };
    let sql = format!(
        "SELECT {ENTRY_COLUMNS} FROM entries WHERE (session_key, mutation_id) IN ({})",
        dialect.pair_list(1)
    );
    let list = json!(entry_keys).to_string();
    let found: Vec<EntryRow> = match &mut *tx {
        WriteTx::Direct(c) => c.rows(&sql, &[&list], EntryRow::from_direct)?,
        tx => on_tx!(tx, |c, d| sqlx::query_as(&sql)
            .bind(&list)
            .fetch_all(c)
            .await?),
    };
    for row in &found {
        turn_keys.push([row.session_key.as_str(), row.logical_turn_id.as_str()]);
    }
    turn_keys.sort_unstable();
    turn_keys.dedup();
    let mut turns = Vec::new();
    if !turn_keys.is_empty() {
        // Postgres: the turns' row locks are held until the group commits; the revisions it takes
        // are read under them (docs/ledger.md "Backends").
        let sql = format!(
            "SELECT session_key, logical_turn_id, latest_revision FROM turns \
             WHERE (session_key, logical_turn_id) IN ({}){}",
            dialect.pair_list(1),
            if dialect == Dialect::Postgres {
                " FOR UPDATE"
            } else {
                ""
            }
        );
        let list = json!(turn_keys).to_string();
        turns = match &mut *tx {
            WriteTx::Direct(c) => {
                c.rows(&sql, &[&list], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            }
            tx => on_tx!(tx, |c, d| sqlx::query_as(&sql)
                .bind(&list)
                .fetch_all(c)
                .await?),
        };
    }
    Ok((rows, found, turns))
}

/// [`Group::load`] on Postgres in ONE statement (one round trip, docs/ledger.md
/// "Postgres round trips"): the three reads of [`load_each`] as CTEs, the turns' read taking the turns
/// of the entries found from the entries' CTE and locking them `FOR UPDATE` (held until the group
/// commits; the revisions it takes are read under them). The rows come back as one `UNION ALL`:
/// `kind` says which read a row is from (`e` an entry, in [`ENTRY_COLUMNS`]; `s` a session, its key in
/// `session_key` and `last_write_at` in `n`; `t` a turn, `session_key`, `logical_turn_id` and
/// `latest_revision` in `n`), the other columns NULL. The session locks were taken by an earlier
/// statement of the transaction ([`crate::store::Inner::begin_group`]), so this statement's snapshot
/// is taken under them.
async fn load_postgres(
    t: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    session_keys: &[&str],
    entry_keys: &[[&str; 2]],
    approved_turns: &[[&str; 2]],
) -> Result<Loaded, LedgerError> {
    use sqlx::Row;
    let d = Dialect::Postgres;
    // NULL for each entry column after `seq, session_key, logical_turn_id`.
    let rest = vec!["NULL"; ENTRY_COLUMNS.split(", ").count() - 3].join(", ");
    let sql = format!(
        "WITH s AS (SELECT session_key, last_write_at FROM sessions WHERE {sessions}), \
         e AS (SELECT {ENTRY_COLUMNS} FROM entries WHERE (session_key, mutation_id) IN ({entries})), \
         t AS (SELECT session_key, logical_turn_id, latest_revision FROM turns \
               WHERE (session_key, logical_turn_id) IN \
               ({turns} UNION ALL SELECT session_key, logical_turn_id FROM e) FOR UPDATE) \
         SELECT 'e' AS kind, e.*, NULL::bigint AS n FROM e \
         UNION ALL SELECT 's', NULL, s.session_key, NULL, {rest}, s.last_write_at FROM s \
         UNION ALL SELECT 't', NULL, t.session_key, t.logical_turn_id, {rest}, t.latest_revision FROM t",
        sessions = d.text_in("session_key", 1),
        entries = d.pair_list(2),
        turns = d.pair_list(3),
    );
    let rows = sqlx::query(&sql)
        .bind(json!(session_keys).to_string())
        .bind(json!(entry_keys).to_string())
        .bind(json!(approved_turns).to_string())
        .fetch_all(&mut **t)
        .await?;
    let (mut sessions, mut entries, mut turns) = (Vec::new(), Vec::new(), Vec::new());
    for row in rows {
        match row.try_get::<&str, _>("kind")? {
            "e" => entries.push(<EntryRow as sqlx::FromRow<_>>::from_row(&row)?),
            "s" => sessions.push((row.try_get("session_key")?, row.try_get("n")?)),
            _ => turns.push((
                row.try_get("session_key")?,
                row.try_get("logical_turn_id")?,
                row.try_get("n")?,
            )),
        }
    }
    Ok((sessions, entries, turns))
}
