//! Importing entries recorded before revisions existed (legacy ledger rows, docs/ledger.md "History").

use super::Engine;
use crate::command::Actor;
use crate::error::LedgerError;
use crate::group::refused;
use crate::ids::{LogicalTurnId, MutationId, SessionKey, ToolName};
use crate::machine::SessionState;
use crate::projection::LedgerEntry;
use crate::rows::{load_for_write, EntryRow, ENTRY_COLUMNS, HISTORY_COLUMNS};
use crate::sanitize::sanitize_metadata;
use crate::store::{on_tx, WriteTx};
use crate::wire::{HistoryKind, LedgerStatus, Reason};

impl Engine {
    /// Imports an entry recorded before revisions existed (legacy ledger rows): stored with no revision, so
    /// it appears only in a full replay, with one `imported` history row (actor `host`, no revision) in the
    /// same transaction. Refused like an approve when the mutation is already recorded.
    pub async fn import_legacy(
        &self,
        session_key: &SessionKey,
        entry: &LedgerEntry,
    ) -> Result<(), LedgerError> {
        let turn = LogicalTurnId::parse(entry.logical_turn_id.clone())
            .map_err(|e| LedgerError::invalid("logical_turn_id", e.to_string()))?;
        let mutation = MutationId::parse(entry.mutation_id.clone())
            .map_err(|e| LedgerError::invalid("mutation_id", e.to_string()))?;
        let tool = ToolName::parse(entry.tool.clone())
            .map_err(|e| LedgerError::invalid("tool", e.to_string()))?;
        let _writer = self.inner.writer().await?;
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.begin_write().await?;
        tx.lock_sessions([session_key.as_str()]).await?;
        let loaded = load_for_write(
            &mut tx,
            session_key.as_str(),
            mutation.as_str(),
            self.inner.live_since(now),
        )
        .await?;
        match (loaded.session, loaded.entry) {
            (SessionState::Expired, _) => return Err(LedgerError::SessionExpired),
            (_, Some(existing)) => {
                return Err(refused(crate::error::Refusal::AlreadyRecorded, &existing))
            }
            (session, None) => {
                insert_entry(&mut tx, session, session_key, &turn, &mutation, &tool, now).await?;
            }
        }
        // Stored sanitised, like an attach (secrets at rest).
        let meta = entry.metadata.as_ref().map(sanitize_metadata);
        let settled = !matches!(
            entry.status,
            LedgerStatus::Approved | LedgerStatus::ExecutionStarted
        );
        on_tx!(&mut tx, |c, d| {
            sqlx::query(
                "UPDATE entries SET status = $1, intent_recorded = $2, reason = $3, meta_attached = $4, \
                 meta_id = $5, meta_url = $6, meta_title = $7, settled_at = $8, deadline_at = $11, \
                 settled_by = $12 WHERE session_key = $9 AND mutation_id = $10",
            )
            .bind(entry.status.as_str())
            .bind(entry.intent_recorded)
            .bind(entry.reason.map(Reason::as_str))
            .bind(meta.is_some())
            .bind(meta.as_ref().and_then(|m| m.id.clone()))
            .bind(meta.as_ref().and_then(|m| m.url.clone()))
            .bind(meta.as_ref().and_then(|m| m.title.clone()))
            .bind(settled.then_some(now))
            .bind(session_key.as_str())
            .bind(mutation.as_str())
            // An entry imported in flight gets the default deadline, as a new intent does
            // (docs/api.md "Deadlines"); a settled one was settled by its host.
            .bind((entry.status == LedgerStatus::ExecutionStarted)
                .then(|| now.saturating_add(self.inner.deadline_ms)))
            .bind(settled.then_some(crate::wire::SettledBy::Host.as_str()))
            .execute(&mut *c)
            .await?;
            // The entry's state as imported: no revision, no evidence, no note.
            sqlx::query(&format!(
                "INSERT INTO history (entry_seq, {HISTORY_COLUMNS}) SELECT seq, $1, $2, NULL, $3, \
                 attempt_id, status, intent_recorded, reason, meta_attached, meta_id, meta_url, \
                 meta_title, NULL, NULL, NULL, NULL, deadline_at, NULL \
                 FROM entries WHERE session_key = $4 AND mutation_id = $5"
            ))
            .bind(HistoryKind::Imported.as_str())
            .bind(now)
            .bind(Actor::Host.spelling())
            .bind(session_key.as_str())
            .bind(mutation.as_str())
            .execute(&mut *c)
            .await?;
        });
        tx.commit().await?;
        Ok(())
    }
}

/// Records an approved entry (no intent, no revision), creating the session and the turn when new.
async fn insert_entry(
    tx: &mut WriteTx<'_>,
    session: SessionState,
    session_key: &SessionKey,
    turn: &LogicalTurnId,
    mutation: &MutationId,
    tool: &ToolName,
    now: i64,
) -> Result<EntryRow, LedgerError> {
    on_tx!(tx, |c, d| {
        if session == SessionState::Absent {
            sqlx::query(
                "INSERT INTO sessions (session_key, created_at, last_write_at) VALUES ($1, $2, $3)",
            )
            .bind(session_key.as_str())
            .bind(now)
            .bind(now)
            .execute(&mut *c)
            .await?;
        }
        sqlx::query(
            "INSERT INTO turns (session_key, logical_turn_id, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (session_key, logical_turn_id) DO NOTHING",
        )
        .bind(session_key.as_str())
        .bind(turn.as_str())
        .bind(now)
        .execute(&mut *c)
        .await?;
        Ok(sqlx::query_as(&format!(
            "INSERT INTO entries (session_key, logical_turn_id, mutation_id, tool, status, recorded_at, \
             updated_at) VALUES ($1, $2, $3, $4, 'approved', $5, $6) RETURNING {ENTRY_COLUMNS}"
        ))
        .bind(session_key.as_str())
        .bind(turn.as_str())
        .bind(mutation.as_str())
        .bind(tool.as_str())
        .bind(now)
        .bind(now)
        .fetch_one(&mut *c)
        .await?)
    })
}
