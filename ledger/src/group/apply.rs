//! Applying one command to the group's state in memory (docs/ledger.md "Writing"): the machine decides
//! ([`decide`], pure), then one small method per decision changes the loaded rows, takes the turn's next
//! revision where the change is visible, and queues the history row the group writes.

use super::statements::history_row;
use super::{
    announce_if, key_of, mismatch, note_change, rejected, staff_name, ClaimHeld, Done, EntrySlot,
    Group, Key, SessionSlot, TurnSlot,
};
use crate::command::{Action, Actor, Command};
use crate::error::LedgerError;
use crate::machine::{decide, Change, Decision, Given, SessionState};
use crate::rows::EntryRow;
use crate::sanitize::sanitize_metadata;
use crate::store::{format_time, WriteTx};
use crate::wire::{EstablishedBy, HistoryKind, LedgerStatus, SettledBy};

impl Group {
    /// Decides `command`, asked by `actor`, against the group's state and applies the decision in memory,
    /// with its history row (none for a rejection or a change of nothing).
    pub(crate) async fn apply(
        &mut self,
        tx: &mut WriteTx<'_>,
        command: &Command,
        actor: &Actor,
    ) -> Result<Done, LedgerError> {
        let key = key_of(&command.key);
        // Secrets at rest (docs/ledger.md "Files"): only the sanitised metadata is stored, of any raw size
        // (a withheld field stores NULL), so a credential sent by mistake never reaches the database.
        let sanitised;
        let action = match &command.action {
            Action::AttachMetadata { metadata } => {
                sanitised = Action::AttachMetadata {
                    metadata: sanitize_metadata(metadata),
                };
                &sanitised
            }
            other => other,
        };
        // Only the ledger's own sweep settles at a deadline (docs/api.md "Deadlines").
        if matches!(action, Action::Expire { .. }) && *actor != Actor::Ledger {
            return Err(LedgerError::invalid(
                "op",
                "only the ledger settles an entry at its deadline",
            ));
        }
        let (decision, session) = self.decide(tx, &key, action).await?;
        match decision {
            Decision::Approve => self.approve(key, session, action, actor),
            Decision::Unchanged => self.unchanged(&key),
            Decision::Extend { deadline_secs } => self.extend(&key, deadline_secs),
            Decision::Change(change) => {
                let reconciled = matches!(action, Action::Reconcile { .. });
                let done = self.change(key.clone(), change, action, actor)?;
                if reconciled {
                    self.end_claim(tx, &key, actor).await?;
                }
                Ok(done)
            }
            Decision::Attach { live } => self.attach(key, live, action, actor),
            Decision::Note => self.note(&key, action, actor),
            Decision::Claim => self.claim(tx, key, actor).await,
            Decision::Release => self.release(tx, key, actor).await,
            Decision::Assign => self.assign(tx, key, action, actor).await,
        }
    }

    /// What the machine decides for `action` on the entry `key` as the group holds it now, with the
    /// session's state; a rejection is answered as its error (a refusal with the entry's unchanged state).
    async fn decide(
        &self,
        tx: &mut WriteTx<'_>,
        key: &Key,
        action: &Action,
    ) -> Result<(Decision, SessionState), LedgerError> {
        let session = self
            .sessions
            .get(&key.0)
            .map_or(SessionState::Absent, |s| s.state);
        let slot = self.entries.get(key);
        let attempt_used = match (action, slot) {
            (Action::FreshAttempt { attempt_id, .. }, Some(slot)) => {
                self.attempt_used(tx, key, slot.row.seq, attempt_id.as_str())
                    .await?
            }
            _ => false,
        };
        let entry = slot.map(|s| {
            s.row
                .machine_entry(matches!(action, Action::AttachMetadata { .. }))
        });
        let commissioned_after_found = match action {
            Action::Approve {
                commissioned_after: Some(after),
                ..
            } => {
                after.as_str() != key.1
                    && self
                        .entries
                        .contains_key(&(key.0.clone(), after.as_str().to_owned()))
            }
            _ => false,
        };
        let deadline_passed = matches!(action, Action::Expire { .. })
            && slot
                .and_then(|s| s.row.deadline_at)
                .is_some_and(|at| at <= self.now);
        let given = Given {
            session,
            entry: entry.as_ref(),
            attempt_used,
            commissioned_after_found,
            deadline_passed,
        };
        let decision = decide(&given, action).map_err(|r| rejected(r, slot.map(|s| &s.row)))?;
        Ok((decision, session))
    }

    /// [`Decision::Approve`]: records the entry `approved` without intent (no revision, not published),
    /// creating its session and turn when new.
    fn approve(
        &mut self,
        key: Key,
        session: SessionState,
        action: &Action,
        actor: &Actor,
    ) -> Result<Done, LedgerError> {
        let Action::Approve {
            logical_turn_id,
            tool,
            commissioned_after,
            traceparent,
        } = action
        else {
            return Err(mismatch("approve"));
        };
        let now = self.now;
        if session == SessionState::Absent {
            self.sessions.insert(
                key.0.clone(),
                SessionSlot {
                    state: SessionState::Live,
                    new: true,
                    touched: true,
                },
            );
        }
        let turn_key = (key.0.clone(), logical_turn_id.as_str().to_owned());
        if !self.turns.contains_key(&turn_key) {
            self.next_order += 1;
            self.turns.insert(
                turn_key,
                TurnSlot {
                    latest: 0,
                    before: 0,
                    new: true,
                    changed: false,
                    order: self.next_order,
                },
            );
        }
        let row = EntryRow {
            seq: 0,
            session_key: key.0.clone(),
            logical_turn_id: logical_turn_id.as_str().to_owned(),
            mutation_id: key.1.clone(),
            tool: tool.as_str().to_owned(),
            status: LedgerStatus::Approved,
            intent_recorded: false,
            attempt_id: None,
            reason: None,
            meta_attached: false,
            meta_id: None,
            meta_url: None,
            meta_title: None,
            revision: None,
            recorded_at: now,
            settled_at: None,
            commissioned_after: commissioned_after.as_ref().map(|m| m.as_str().to_owned()),
            deadline_at: None,
            settled_by: None,
            established_by: None,
            traceparent: traceparent.as_ref().map(|t| t.as_str().to_owned()),
        };
        let state = row.state();
        self.history.push(history_row(
            self.now,
            &row,
            HistoryKind::Approval,
            None,
            actor,
            None,
            None,
        ));
        self.next_order += 1;
        self.entries.insert(
            key.clone(),
            EntrySlot {
                row,
                new: true,
                changed: true,
                order: self.next_order,
            },
        );
        self.touch(&key.0);
        Ok(Done {
            state,
            announcement: None,
            note: None,
            added: false,
        })
    }

    /// [`Decision::Unchanged`]: the entry's state as it is; nothing written.
    fn unchanged(&self, key: &Key) -> Result<Done, LedgerError> {
        Ok(Done {
            state: self
                .entries
                .get(key)
                .map(|s| s.row.state())
                .ok_or(LedgerError::MutationNotFound)?,
            announcement: None,
            note: None,
            added: false,
        })
    }

    /// [`Decision::Extend`]: the entry's deadline becomes now + `deadline_secs` unless it is later already;
    /// no revision, no event, no history row; session activity (docs/api.md "Deadlines").
    fn extend(&mut self, key: &Key, deadline_secs: u32) -> Result<Done, LedgerError> {
        let at = self
            .now
            .saturating_add(i64::from(deadline_secs).saturating_mul(1000));
        let slot = self
            .entries
            .get_mut(key)
            .ok_or(LedgerError::MutationNotFound)?;
        if slot.row.deadline_at.is_none_or(|d| d < at) {
            slot.row.deadline_at = Some(at);
            slot.changed = true;
        }
        let state = slot.row.state();
        // A host still working in the session is activity: its time to live counts from here, so a write
        // kept alive past `--session-ttl-secs` does not end in an expired session nobody can settle.
        self.touch(&key.0);
        Ok(Done {
            state,
            announcement: None,
            note: None,
            added: false,
        })
    }

    /// [`Decision::Change`]: the entry's new state under its turn's next revision, with the attempt and
    /// the evidence it records, announced when live. A new attempt takes its deadline (the action's, else
    /// the ledger's default); who settled or established the new state is kept with it (docs/api.md
    /// "Deadlines").
    fn change(
        &mut self,
        key: Key,
        change: Change,
        action: &Action,
        actor: &Actor,
    ) -> Result<Done, LedgerError> {
        let now = self.now;
        let revision = self.next_revision(&key)?;
        if change.new_attempt {
            self.attempts_seen
                .insert((key.clone(), change.attempt_id.clone()));
            self.attempts.push((key.clone(), change.attempt_id.clone()));
        }
        if let (true, Action::Reconcile { evidence, .. }) = (change.evidence, action) {
            self.reconciliations.push((
                key.clone(),
                change.attempt_id.clone(),
                change.status == LedgerStatus::Completed,
                evidence.clone(),
            ));
        }
        let slot = self
            .entries
            .get_mut(&key)
            .ok_or(LedgerError::MutationNotFound)?;
        let row = &mut slot.row;
        row.status = change.status;
        row.intent_recorded = true;
        row.attempt_id = Some(change.attempt_id);
        row.reason = change.reason;
        row.revision = Some(revision);
        row.settled_at = change.settled.then_some(now);
        if change.new_attempt {
            let secs = match action {
                Action::RecordIntent { deadline_secs, .. }
                | Action::FreshAttempt { deadline_secs, .. } => *deadline_secs,
                _ => None,
            };
            row.deadline_at = Some(now.saturating_add(
                secs.map_or(self.deadline_ms, |s| i64::from(s).saturating_mul(1000)),
            ));
        }
        row.settled_by = match action {
            Action::Settle { .. } | Action::Cancel { .. } => Some(SettledBy::Host),
            Action::Expire { .. } => Some(SettledBy::Ledger),
            _ => None,
        };
        row.established_by = match action {
            Action::Reconcile { evidence, .. } => {
                Some(EstablishedBy::of(&actor.spelling(), &evidence.source))
            }
            _ => None,
        };
        slot.changed = true;
        let (kind, evidence) = match action {
            Action::RecordIntent { .. } => (HistoryKind::Intent, None),
            Action::Settle { .. } | Action::Expire { .. } => (HistoryKind::Settlement, None),
            Action::Cancel { .. } => (HistoryKind::Cancellation, None),
            Action::Reconcile { evidence, .. } => (HistoryKind::Reconciliation, Some(evidence)),
            _ => (HistoryKind::Attempt, None),
        };
        self.history.push(history_row(
            self.now,
            &slot.row,
            kind,
            Some(revision),
            actor,
            evidence,
            None,
        ));
        let done = announce_if(&slot.row, revision, change.live);
        self.remember(&done);
        self.touch(&key.0);
        Ok(done)
    }

    /// [`Decision::Attach`]: the (sanitised) metadata stored under the turn's next revision, announced
    /// when `live`.
    fn attach(
        &mut self,
        key: Key,
        live: bool,
        action: &Action,
        actor: &Actor,
    ) -> Result<Done, LedgerError> {
        let Action::AttachMetadata { metadata } = action else {
            return Err(mismatch("attach"));
        };
        let revision = self.next_revision(&key)?;
        let slot = self
            .entries
            .get_mut(&key)
            .ok_or(LedgerError::MutationNotFound)?;
        let row = &mut slot.row;
        row.meta_attached = true;
        row.meta_id = metadata.id.clone();
        row.meta_url = metadata.url.clone();
        row.meta_title = metadata.title.clone();
        row.revision = Some(revision);
        slot.changed = true;
        self.history.push(history_row(
            self.now,
            &slot.row,
            HistoryKind::Metadata,
            Some(revision),
            actor,
            None,
            None,
        ));
        let done = announce_if(&slot.row, revision, live);
        self.remember(&done);
        self.touch(&key.0);
        Ok(done)
    }

    /// [`Decision::Note`]: the note's history row; no revision, no event, the entry unchanged.
    fn note(&mut self, key: &Key, action: &Action, actor: &Actor) -> Result<Done, LedgerError> {
        let Action::Note { text } = action else {
            return Err(mismatch("note"));
        };
        let slot = self.entries.get(key).ok_or(LedgerError::MutationNotFound)?;
        // Not session activity: the time to live counts from the last change (docs/ledger.md
        // "History").
        self.history.push(history_row(
            self.now,
            &slot.row,
            HistoryKind::Note,
            None,
            actor,
            None,
            Some(text),
        ));
        let note = note_change(&slot.row, HistoryKind::Note, actor, Some(text), self.now);
        Ok(Done {
            state: slot.row.state(),
            announcement: None,
            note: Some(note),
            added: true,
        })
    }

    /// [`Decision::Claim`]: takes the entry's claim for `actor` (a `claim` history row), answers the row
    /// that took it when `actor` holds it already, and refuses while another staff member holds it
    /// ([`LedgerError::AlreadyClaimed`]); first of all, refuses an actor over its rate
    /// ([`Group::claim_budget`], [`LedgerError::TooManyClaims`]).
    async fn claim(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: Key,
        actor: &Actor,
    ) -> Result<Done, LedgerError> {
        let now = self.now;
        let spelling = actor.spelling();
        self.claim_budget(tx, &key, &spelling).await?;
        let held = self.entry_claim(tx, &key).await?;
        let slot = self
            .entries
            .get(&key)
            .ok_or(LedgerError::MutationNotFound)?;
        if let Some(held) = held {
            if held.actor != spelling {
                return Err(LedgerError::AlreadyClaimed {
                    claim: crate::wire::Claim {
                        by: staff_name(&held.actor).to_owned(),
                        at: format_time(held.at),
                    },
                });
            }
            // Its holder asks again: answered with the row that took it, nothing written.
            return Ok(Done {
                state: slot.row.state(),
                announcement: None,
                note: Some(note_change(
                    &slot.row,
                    HistoryKind::Claim,
                    actor,
                    None,
                    held.at,
                )),
                added: false,
            });
        }
        self.history.push(history_row(
            self.now,
            &slot.row,
            HistoryKind::Claim,
            None,
            actor,
            None,
            None,
        ));
        let change = note_change(&slot.row, HistoryKind::Claim, actor, None, now);
        let state = slot.row.state();
        self.count_claim(&key, &spelling);
        self.claims.insert(
            key,
            Some(ClaimHeld {
                actor: spelling,
                at: now,
            }),
        );
        Ok(Done {
            state,
            announcement: None,
            note: Some(change),
            added: true,
        })
    }

    /// [`Decision::Assign`]: hands the entry's claim to the staff member the action names (a `claim`
    /// history row by `actor` whose `note` is that name); answers the row that took it when the assignee
    /// holds it already; refuses while a third staff member holds it ([`LedgerError::AlreadyClaimed`]),
    /// and first of all an actor over its rate, as [`Self::claim`] does.
    async fn assign(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: Key,
        action: &Action,
        actor: &Actor,
    ) -> Result<Done, LedgerError> {
        let Action::Assign { to } = action else {
            return Err(mismatch("assign"));
        };
        let now = self.now;
        let spelling = actor.spelling();
        let target = format!("staff:{to}");
        self.claim_budget(tx, &key, &spelling).await?;
        let held = self.entry_claim(tx, &key).await?;
        let slot = self
            .entries
            .get(&key)
            .ok_or(LedgerError::MutationNotFound)?;
        if let Some(held) = held {
            if held.actor == target {
                return Ok(Done {
                    state: slot.row.state(),
                    announcement: None,
                    note: Some(note_change(
                        &slot.row,
                        HistoryKind::Claim,
                        actor,
                        Some(to.as_str()),
                        held.at,
                    )),
                    added: false,
                });
            }
            if held.actor != spelling {
                return Err(LedgerError::AlreadyClaimed {
                    claim: crate::wire::Claim {
                        by: staff_name(&held.actor).to_owned(),
                        at: format_time(held.at),
                    },
                });
            }
        }
        self.history.push(history_row(
            self.now,
            &slot.row,
            HistoryKind::Claim,
            None,
            actor,
            None,
            Some(to),
        ));
        let change = note_change(&slot.row, HistoryKind::Claim, actor, Some(to.as_str()), now);
        let state = slot.row.state();
        self.count_claim(&key, &spelling);
        self.claims.insert(
            key,
            Some(ClaimHeld {
                actor: target,
                at: now,
            }),
        );
        Ok(Done {
            state,
            announcement: None,
            note: Some(change),
            added: true,
        })
    }

    /// A reconciliation settled the entry `key`: its claim, if anyone holds it, ends with it (docs/api.md
    /// "Claims"), a `release` history row by `actor` right after the reconciliation's, in the same
    /// commit. Not counted against the actor's claim rate.
    async fn end_claim(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: &Key,
        actor: &Actor,
    ) -> Result<(), LedgerError> {
        if self.entry_claim(tx, key).await?.is_none() {
            return Ok(());
        }
        let slot = self.entries.get(key).ok_or(LedgerError::MutationNotFound)?;
        self.history.push(history_row(
            self.now,
            &slot.row,
            HistoryKind::Release,
            None,
            actor,
            None,
            None,
        ));
        self.claims.insert(key.clone(), None);
        Ok(())
    }

    /// [`Decision::Release`]: ends the entry's claim, whoever holds it (a `release` history row); nothing
    /// when nobody holds it. An actor over its rate is refused first, as by [`Self::claim`].
    async fn release(
        &mut self,
        tx: &mut WriteTx<'_>,
        key: Key,
        actor: &Actor,
    ) -> Result<Done, LedgerError> {
        let now = self.now;
        let spelling = actor.spelling();
        self.claim_budget(tx, &key, &spelling).await?;
        let held = self.entry_claim(tx, &key).await?;
        let slot = self
            .entries
            .get(&key)
            .ok_or(LedgerError::MutationNotFound)?;
        let state = slot.row.state();
        if held.is_none() {
            return Ok(Done {
                state,
                announcement: None,
                note: None,
                added: false,
            });
        }
        self.history.push(history_row(
            self.now,
            &slot.row,
            HistoryKind::Release,
            None,
            actor,
            None,
            None,
        ));
        let change = note_change(&slot.row, HistoryKind::Release, actor, None, now);
        self.count_claim(&key, &spelling);
        self.claims.insert(key, None);
        Ok(Done {
            state,
            announcement: None,
            note: Some(change),
            added: true,
        })
    }
}
