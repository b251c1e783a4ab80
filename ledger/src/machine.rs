//! The entry state machine of docs/ledger.md "Entries and their states", as one pure function: given what
//! the ledger holds about an entry and its session ([`Given`]) and what a host asks ([`Action`]),
//! [`decide`] answers what to write ([`Decision`]) or why nothing may change ([`Rejection`]). No I/O, no
//! clock, no store: the engine loads, decides, writes and announces (docs/ledger.md "Writing").
//!
//! Checks, in this order (the host API's order, docs/api.md "Errors"): a field that breaks a rule
//! ([`Rejection::Invalid`], 422) → the session and the entry exist and the session is live (404) → the
//! transition is allowed from the entry's state ([`Rejection::Refused`], 409).

pub use crate::command::{
    Action, Evidence, Settlement, DEADLINE_MAX_SECS, NOTE_MAX_BYTES, NUL_REFUSED,
};
use crate::error::Refusal;
use crate::ids::AttemptId;
use crate::wire::{
    published_status, HostMetadata, LedgerStatus, PublishedStatus, Reason, SettledBy,
};

/// The session an action names, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// No such session.
    Absent,
    /// Stored and written to within its time to live.
    Live,
    /// Stored, but its time to live ran out (docs/ledger.md "Retention").
    Expired,
}

/// What the machine needs to know of a stored entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub status: LedgerStatus,
    /// Whether an intent was ever recorded (`approved` with intent is `not_executed`).
    pub intent_recorded: bool,
    /// The current attempt, `None` before the first intent.
    pub attempt_id: Option<String>,
    pub reason: Option<Reason>,
    /// The stored host metadata, `None` when none was attached.
    pub metadata: Option<HostMetadata>,
    /// Who settled the entry's current state by a settle or cancellation (`None` otherwise): an unknown
    /// outcome the ledger settled at its deadline still takes the original report once.
    pub settled_by: Option<SettledBy>,
}

impl Entry {
    fn published(&self) -> Option<PublishedStatus> {
        published_status(self.status, self.intent_recorded)
    }
}

/// Everything [`decide`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given<'a> {
    pub session: SessionState,
    /// The entry the action names, `None` when it is not recorded.
    pub entry: Option<&'a Entry>,
    /// Whether the action's attempt id was ever an attempt of the entry (read for
    /// [`Action::FreshAttempt`] only; `false` otherwise).
    pub attempt_used: bool,
    /// For an [`Action::Approve`] naming `commissioned_after`: whether that names ANOTHER mutation the
    /// session holds (`false` for the approved mutation itself or one the session does not hold). Read
    /// for such an approve only; `false` otherwise.
    pub commissioned_after_found: bool,
    /// For an [`Action::Expire`]: whether the entry's deadline has passed by the ledger's clock (read for
    /// that action only; `false` otherwise).
    pub deadline_passed: bool,
}

/// A visible change: the entry's new state, written under the turn's next revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub status: LedgerStatus,
    /// The attempt after the change (a new one for intent and fresh attempts, else the current one).
    pub attempt_id: String,
    /// The reason after the change: set by settle and cancel, cleared by everything else.
    pub reason: Option<Reason>,
    /// Whether the change settles the entry (its `settled_at` is set; cleared when a new attempt starts).
    pub settled: bool,
    /// Whether the change is emitted live (not in-flight intent, docs/ledger.md "Entries and their states").
    pub live: bool,
    /// Whether `attempt_id` is a new attempt to remember (so it is never reused).
    pub new_attempt: bool,
    /// Whether the action's evidence is recorded with the change (reconcile).
    pub evidence: bool,
}

/// What to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Record the entry, `approved` without intent; the session and turn are created when new. No
    /// revision, not published.
    Approve,
    /// A state change under the turn's next revision.
    Change(Change),
    /// Store the action's metadata under the turn's next revision; emitted live when `live` (the entry is
    /// settled, not in flight).
    Attach {
        live: bool,
    },
    /// Nothing changes: no revision, no event (an attach identical to the stored metadata).
    Unchanged,
    /// The deadline becomes now + `deadline_secs` unless it is later already: no revision, no event, no
    /// history row.
    Extend {
        deadline_secs: u32,
    },
    /// Keep the action's note as a history row: no revision, no event, the entry's state unchanged.
    Note,
    /// Take or end the entry's claim (the group checks who holds it): at most one history row, no
    /// revision, no event, the entry's state unchanged.
    Claim,
    Release,
    /// Hand the entry's claim to another staff member (the group checks who holds it).
    Assign,
}

/// Why nothing changes. The engine maps each to a [`crate::LedgerError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// A field breaks a rule (422).
    Invalid {
        field: &'static str,
        message: &'static str,
    },
    SessionNotFound,
    SessionExpired,
    MutationNotFound,
    /// An approve's `commissioned_after` names no other mutation recorded in its session (404, naming the
    /// field): the ledger alone knows what is recorded, so this is not a rule a request's shape can break.
    CommissionedAfterNotFound,
    /// A transition the entry's state does not allow (409).
    Refused(Refusal),
}

/// Decides what `action` does to the entry described by `given`. Pure: the same input always gives the
/// same answer, and a [`Rejection`] means nothing may be written.
pub fn decide(given: &Given<'_>, action: &Action) -> Result<Decision, Rejection> {
    check_fields(action)?;
    if let Action::Approve {
        commissioned_after, ..
    } = action
    {
        if given.session == SessionState::Expired {
            return Err(Rejection::SessionExpired);
        }
        if commissioned_after.is_some() && !given.commissioned_after_found {
            return Err(Rejection::CommissionedAfterNotFound);
        }
        return match given.entry {
            Some(_) => Err(Rejection::Refused(Refusal::AlreadyRecorded)),
            None => Ok(Decision::Approve),
        };
    }
    let entry = match (given.session, given.entry) {
        (SessionState::Absent, _) => return Err(Rejection::SessionNotFound),
        (SessionState::Expired, _) => return Err(Rejection::SessionExpired),
        (SessionState::Live, None) => return Err(Rejection::MutationNotFound),
        (SessionState::Live, Some(entry)) => entry,
    };
    let refuse = |r| Err(Rejection::Refused(r));
    match action {
        Action::Approve { .. } => unreachable!("answered above"),
        Action::RecordIntent { attempt_id, .. } => {
            if entry.status != LedgerStatus::Approved || entry.intent_recorded {
                return refuse(Refusal::AlreadyRecorded);
            }
            Ok(start(attempt_id))
        }
        Action::Settle {
            attempt_id,
            settlement,
            reason,
        } => {
            in_flight(entry, attempt_id)?;
            Ok(settle(entry, settlement.status(), *reason, false))
        }
        Action::Cancel { attempt_id, reason } => {
            in_flight(entry, attempt_id)?;
            Ok(settle(entry, LedgerStatus::Approved, *reason, false))
        }
        Action::Reconcile {
            attempt_id,
            completed,
            ..
        } => {
            match entry.status {
                LedgerStatus::ExecutionStarted | LedgerStatus::OutcomeUnknown => {
                    same_attempt(entry, attempt_id)?
                }
                _ => return refuse(Refusal::AlreadySettled),
            }
            let status = if *completed {
                LedgerStatus::Completed
            } else {
                LedgerStatus::Approved
            };
            Ok(settle(entry, status, None, true))
        }
        Action::AttachMetadata { metadata } => {
            if entry.published().is_none() {
                return refuse(Refusal::NotPublished);
            }
            if entry.metadata.as_ref() == Some(metadata) {
                return Ok(Decision::Unchanged);
            }
            Ok(Decision::Attach {
                live: emitted_live(entry.status),
            })
        }
        Action::FreshAttempt { attempt_id, .. } => {
            match entry.published() {
                Some(PublishedStatus::NotExecuted) => {}
                Some(PublishedStatus::OutcomeUnknown) => {
                    return refuse(Refusal::UnknownNeedsReconciliation)
                }
                _ => return refuse(Refusal::NotNotExecuted),
            }
            if given.attempt_used || entry.attempt_id.as_deref() == Some(attempt_id.as_str()) {
                return refuse(Refusal::AttemptReused);
            }
            Ok(start(attempt_id))
        }
        Action::ExtendDeadline {
            attempt_id,
            deadline_secs,
        } => {
            running(entry, attempt_id)?;
            Ok(Decision::Extend {
                deadline_secs: *deadline_secs,
            })
        }
        Action::Expire { attempt_id } => {
            running(entry, attempt_id)?;
            if !given.deadline_passed {
                return refuse(Refusal::DeadlineNotPassed);
            }
            Ok(settle(
                entry,
                LedgerStatus::OutcomeUnknown,
                Some(Reason::ExecutionTimeout),
                false,
            ))
        }
        Action::Note { .. } => Ok(Decision::Note),
        Action::Claim => Ok(Decision::Claim),
        Action::Release => Ok(Decision::Release),
        Action::Assign { .. } => Ok(Decision::Assign),
    }
}

/// The rules on a request's own fields, checked before anything stored is looked at (by [`decide`]
/// first, and by `check_action_fields` for a caller that must know before anything is written). Free
/// text (evidence, a note) holding U+0000 is refused here, for every backend and every way in
/// ([`NUL_REFUSED`]).
pub fn check_fields(action: &Action) -> Result<(), Rejection> {
    match action {
        Action::Settle {
            settlement, reason, ..
        } => match reason {
            Some(r)
                if *r != Reason::ExecutionTimeout || *settlement != Settlement::OutcomeUnknown =>
            {
                Err(Rejection::Invalid {
                    field: "reason",
                    message:
                        "a settlement reason is only execution_timeout, with status outcome_unknown",
                })
            }
            _ => Ok(()),
        },
        Action::Cancel { reason, .. } => match reason {
            Some(r) if *r != Reason::PreDispatchDeadline => Err(Rejection::Invalid {
                field: "reason",
                message: "a cancellation reason is only pre_dispatch_deadline",
            }),
            _ => Ok(()),
        },
        Action::Reconcile {
            evidence,
            completed,
            ..
        } => {
            for (field, value) in [
                ("evidence.source", &evidence.source),
                ("evidence.reference", &evidence.reference),
                ("evidence.observed_at", &evidence.observed_at),
            ] {
                if value.trim().is_empty() {
                    return Err(Rejection::Invalid {
                        field,
                        message: "empty: this is not evidence",
                    });
                }
                if value.contains('\0') {
                    return Err(Rejection::Invalid {
                        field,
                        message: NUL_REFUSED,
                    });
                }
            }
            if time::OffsetDateTime::parse(
                &evidence.observed_at,
                &time::format_description::well_known::Rfc3339,
            )
            .is_err()
            {
                return Err(Rejection::Invalid {
                    field: "evidence.observed_at",
                    message: "an RFC 3339 time, e.g. 2026-11-29T10:00:00Z",
                });
            }
            // The provider's status, when passed through, says what `completed` says (as the host API
            // checks it, docs/api.md "Host write API").
            match (evidence.provider_status.as_deref(), *completed) {
                (None, _) | (Some("completed"), true) | (Some("not_accepted"), false) => Ok(()),
                (Some("completed" | "not_accepted"), _) => Err(Rejection::Invalid {
                    field: "evidence.provider_status",
                    message: "the provider status contradicts completed",
                }),
                (Some(_), _) => Err(Rejection::Invalid {
                    field: "evidence.provider_status",
                    message:
                        "only completed or not_accepted are conclusive: the outcome stays unknown",
                }),
            }
        }
        Action::RecordIntent {
            deadline_secs: Some(secs),
            ..
        }
        | Action::FreshAttempt {
            deadline_secs: Some(secs),
            ..
        }
        | Action::ExtendDeadline {
            deadline_secs: secs,
            ..
        } if *secs == 0 || *secs > DEADLINE_MAX_SECS => Err(Rejection::Invalid {
            field: "deadline_secs",
            message: "a deadline is 1 to 604800 seconds (7 days)",
        }),
        Action::Note { text } if text.is_empty() || text.len() > NOTE_MAX_BYTES => {
            Err(Rejection::Invalid {
                field: "text",
                message: "a note is 1 to 4096 bytes of text",
            })
        }
        Action::Note { text } if text.contains('\0') => Err(Rejection::Invalid {
            field: "text",
            message: NUL_REFUSED,
        }),
        _ => Ok(()),
    }
}

/// Settle and cancel apply to an entry in flight under the named attempt; an unknown outcome changes only
/// by reconciliation (seed 002), but for one exception: an unknown the LEDGER settled at its deadline
/// still takes the original report of that attempt, once (seed 002: "can still accept the original
/// report"; docs/api.md "Deadlines"), after which it is settled by the host like any other.
fn in_flight(entry: &Entry, attempt_id: &AttemptId) -> Result<(), Rejection> {
    match entry.status {
        LedgerStatus::ExecutionStarted => same_attempt(entry, attempt_id),
        LedgerStatus::OutcomeUnknown if entry.settled_by == Some(SettledBy::Ledger) => {
            same_attempt(entry, attempt_id)
        }
        LedgerStatus::OutcomeUnknown => {
            Err(Rejection::Refused(Refusal::UnknownNeedsReconciliation))
        }
        _ => Err(Rejection::Refused(Refusal::NotInFlight)),
    }
}

/// A deadline is extended, or reached, only while the entry runs (`execution_started`) under the named
/// attempt: an unknown outcome is refused as a settle is, anything else is not in flight.
fn running(entry: &Entry, attempt_id: &AttemptId) -> Result<(), Rejection> {
    match entry.status {
        LedgerStatus::ExecutionStarted => same_attempt(entry, attempt_id),
        LedgerStatus::OutcomeUnknown => {
            Err(Rejection::Refused(Refusal::UnknownNeedsReconciliation))
        }
        _ => Err(Rejection::Refused(Refusal::NotInFlight)),
    }
}

fn same_attempt(entry: &Entry, attempt_id: &AttemptId) -> Result<(), Rejection> {
    if entry.attempt_id.as_deref() == Some(attempt_id.as_str()) {
        Ok(())
    } else {
        Err(Rejection::Refused(Refusal::AttemptMismatch))
    }
}

/// `execution_started` under a new attempt; clears any reason; not emitted live.
fn start(attempt_id: &AttemptId) -> Decision {
    Decision::Change(Change {
        status: LedgerStatus::ExecutionStarted,
        attempt_id: attempt_id.as_str().to_owned(),
        reason: None,
        settled: false,
        live: emitted_live(LedgerStatus::ExecutionStarted),
        new_attempt: true,
        evidence: false,
    })
}

/// Whether a change that leaves an entry in `status_after` is emitted live (`on_mutation_outcome`): every
/// visible change except one that leaves it in flight (an intent, a fresh attempt, metadata while in
/// flight; docs/ledger.md "Entries and their states"). The decisions above follow it, and the Postgres
/// listener, which emits from history rows, decides by it alone.
pub fn emitted_live(status_after: LedgerStatus) -> bool {
    status_after != LedgerStatus::ExecutionStarted
}

/// A settled state of the current attempt, emitted live.
fn settle(entry: &Entry, status: LedgerStatus, reason: Option<Reason>, evidence: bool) -> Decision {
    Decision::Change(Change {
        status,
        attempt_id: entry.attempt_id.clone().unwrap_or_default(),
        reason,
        settled: true,
        live: emitted_live(status),
        new_attempt: false,
        evidence,
    })
}

#[cfg(test)]
mod tests {
    //! The transition table of docs/ledger.md "Entries and their states", given/when/then, without a
    //! database.

    use super::*;
    use crate::ids::{LogicalTurnId, ToolName};
    use LedgerStatus::*;

    fn id(s: &str) -> AttemptId {
        AttemptId::parse(s).unwrap()
    }

    /// An entry in `status` under attempt `a-1` (none while approved without intent).
    fn entry(status: LedgerStatus, intent_recorded: bool) -> Entry {
        Entry {
            status,
            intent_recorded,
            attempt_id: intent_recorded.then(|| "a-1".to_owned()),
            reason: None,
            metadata: None,
            settled_by: None,
        }
    }

    fn given(e: &Entry) -> Given<'_> {
        Given {
            session: SessionState::Live,
            entry: Some(e),
            attempt_used: false,
            commissioned_after_found: false,
            deadline_passed: false,
        }
    }

    fn approve() -> Action {
        Action::Approve {
            logical_turn_id: LogicalTurnId::parse("turn-1").unwrap(),
            tool: ToolName::parse("github.create_issue").unwrap(),
            commissioned_after: None,
            traceparent: None,
        }
    }

    fn intent(a: &str) -> Action {
        Action::RecordIntent {
            attempt_id: id(a),
            deadline_secs: None,
        }
    }

    fn settle_as(a: &str, settlement: Settlement, reason: Option<Reason>) -> Action {
        Action::Settle {
            attempt_id: id(a),
            settlement,
            reason,
        }
    }

    fn cancel(a: &str, reason: Option<Reason>) -> Action {
        Action::Cancel {
            attempt_id: id(a),
            reason,
        }
    }

    fn evidence() -> Evidence {
        Evidence {
            source: "github".into(),
            reference: "issue #419".into(),
            observed_at: "2026-11-29T10:00:00Z".into(),
            provider_status: None,
        }
    }

    fn reconcile(a: &str, completed: bool) -> Action {
        Action::Reconcile {
            attempt_id: id(a),
            completed,
            evidence: evidence(),
        }
    }

    fn attach(title: &str) -> Action {
        Action::AttachMetadata {
            metadata: HostMetadata {
                id: None,
                url: None,
                title: Some(title.into()),
            },
        }
    }

    fn note(text: &str) -> Action {
        Action::Note { text: text.into() }
    }

    fn approve_after(m: &str) -> Action {
        Action::Approve {
            logical_turn_id: LogicalTurnId::parse("turn-1").unwrap(),
            tool: ToolName::parse("github.create_issue").unwrap(),
            commissioned_after: Some(crate::ids::MutationId::parse(m).unwrap()),
            traceparent: None,
        }
    }

    fn fresh(a: &str) -> Action {
        Action::FreshAttempt {
            attempt_id: id(a),
            deadline_secs: None,
        }
    }

    fn extend(a: &str, deadline_secs: u32) -> Action {
        Action::ExtendDeadline {
            attempt_id: id(a),
            deadline_secs,
        }
    }

    fn expire(a: &str) -> Action {
        Action::Expire { attempt_id: id(a) }
    }

    /// The transitions of docs/api.md "Deadlines": extend, the ledger's settlement at the deadline, and
    /// the original report it still takes once.
    #[test]
    fn a_running_attempt_extends_its_deadline_and_nothing_else_does() {
        let running = entry(ExecutionStarted, true);
        assert_eq!(
            decide(&given(&running), &extend("a-1", 30)),
            Ok(Decision::Extend { deadline_secs: 30 })
        );
        assert_eq!(
            decide(&given(&running), &extend("a-2", 30)),
            refused(Refusal::AttemptMismatch)
        );
        assert_eq!(
            decide(&given(&entry(OutcomeUnknown, true)), &extend("a-1", 30)),
            refused(Refusal::UnknownNeedsReconciliation)
        );
        for e in [
            entry(Completed, true),
            entry(Failed, true),
            entry(Approved, true),
        ] {
            assert_eq!(
                decide(&given(&e), &extend("a-1", 30)),
                refused(Refusal::NotInFlight),
                "{e:?}"
            );
        }
        for secs in [0, DEADLINE_MAX_SECS + 1] {
            for action in [
                extend("a-1", secs),
                Action::RecordIntent {
                    attempt_id: id("a-1"),
                    deadline_secs: Some(secs),
                },
                Action::FreshAttempt {
                    attempt_id: id("a-2"),
                    deadline_secs: Some(secs),
                },
            ] {
                assert_eq!(
                    decide(&given(&running), &action),
                    Err(Rejection::Invalid {
                        field: "deadline_secs",
                        message: "a deadline is 1 to 604800 seconds (7 days)",
                    }),
                    "{action:?}"
                );
            }
        }
        assert_eq!(
            decide(&given(&running), &extend("a-1", DEADLINE_MAX_SECS)),
            Ok(Decision::Extend {
                deadline_secs: DEADLINE_MAX_SECS
            })
        );
    }

    #[test]
    fn the_ledger_settles_a_running_attempt_unknown_with_execution_timeout_only_past_its_deadline()
    {
        let running = entry(ExecutionStarted, true);
        let passed = Given {
            deadline_passed: true,
            ..given(&running)
        };
        assert_eq!(
            decide(&passed, &expire("a-1")),
            Ok(change(
                OutcomeUnknown,
                "a-1",
                Some(Reason::ExecutionTimeout),
                true,
                false
            ))
        );
        assert_eq!(
            decide(&given(&running), &expire("a-1")),
            refused(Refusal::DeadlineNotPassed)
        );
        assert_eq!(
            decide(&passed, &expire("a-2")),
            refused(Refusal::AttemptMismatch)
        );
        for e in [entry(Completed, true), entry(Approved, true)] {
            let g = Given {
                deadline_passed: true,
                ..given(&e)
            };
            assert_eq!(decide(&g, &expire("a-1")), refused(Refusal::NotInFlight));
        }
        let mut unknown = entry(OutcomeUnknown, true);
        unknown.settled_by = Some(SettledBy::Ledger);
        let g = Given {
            deadline_passed: true,
            ..given(&unknown)
        };
        assert_eq!(
            decide(&g, &expire("a-1")),
            refused(Refusal::UnknownNeedsReconciliation)
        );
    }

    #[test]
    fn an_unknown_the_ledger_settled_takes_the_original_report_of_its_attempt_and_a_hosts_does_not()
    {
        let mut by_ledger = entry(OutcomeUnknown, true);
        by_ledger.reason = Some(Reason::ExecutionTimeout);
        by_ledger.settled_by = Some(SettledBy::Ledger);
        for (settlement, status) in [
            (Settlement::Completed, Completed),
            (Settlement::Failed, Failed),
            (Settlement::OutcomeUnknown, OutcomeUnknown),
        ] {
            assert_eq!(
                decide(&given(&by_ledger), &settle_as("a-1", settlement, None)),
                Ok(change(status, "a-1", None, true, false))
            );
        }
        assert_eq!(
            decide(&given(&by_ledger), &cancel("a-1", None)),
            Ok(change(Approved, "a-1", None, true, false))
        );
        assert_eq!(
            decide(
                &given(&by_ledger),
                &settle_as("a-2", Settlement::Completed, None)
            ),
            refused(Refusal::AttemptMismatch)
        );
        // A fresh attempt stays refused: no blind resend of an unknown outcome.
        assert_eq!(
            decide(&given(&by_ledger), &fresh("a-2")),
            refused(Refusal::UnknownNeedsReconciliation)
        );
        let mut by_host = by_ledger.clone();
        by_host.settled_by = Some(SettledBy::Host);
        for action in [
            settle_as("a-1", Settlement::Completed, None),
            cancel("a-1", None),
        ] {
            assert_eq!(
                decide(&given(&by_host), &action),
                refused(Refusal::UnknownNeedsReconciliation)
            );
        }
    }

    fn change(
        status: LedgerStatus,
        attempt: &str,
        reason: Option<Reason>,
        live: bool,
        new_attempt: bool,
    ) -> Decision {
        Decision::Change(Change {
            status,
            attempt_id: attempt.into(),
            reason,
            settled: status != ExecutionStarted,
            live,
            new_attempt,
            evidence: false,
        })
    }

    fn refused(r: Refusal) -> Result<Decision, Rejection> {
        Err(Rejection::Refused(r))
    }

    #[test]
    fn approve_records_an_unpublished_entry_in_a_new_or_live_session() {
        for session in [SessionState::Absent, SessionState::Live] {
            let g = Given {
                session,
                entry: None,
                attempt_used: false,
                commissioned_after_found: false,
                deadline_passed: false,
            };
            assert_eq!(decide(&g, &approve()), Ok(Decision::Approve));
        }
    }

    #[test]
    fn approve_is_refused_in_an_expired_session_and_for_a_recorded_mutation() {
        let expired = Given {
            session: SessionState::Expired,
            entry: None,
            attempt_used: false,
            commissioned_after_found: false,
            deadline_passed: false,
        };
        assert_eq!(decide(&expired, &approve()), Err(Rejection::SessionExpired));
        for e in [entry(Approved, false), entry(Completed, true)] {
            assert_eq!(
                decide(&given(&e), &approve()),
                refused(Refusal::AlreadyRecorded)
            );
        }
    }

    #[test]
    fn intent_starts_execution_under_a_new_attempt_not_emitted_live() {
        let e = entry(Approved, false);
        assert_eq!(
            decide(&given(&e), &intent("a-1")),
            Ok(change(ExecutionStarted, "a-1", None, false, true))
        );
    }

    #[test]
    fn a_redelivered_intent_is_refused_whatever_the_state() {
        for e in [
            entry(ExecutionStarted, true),
            entry(Completed, true),
            entry(Failed, true),
            entry(OutcomeUnknown, true),
            entry(Approved, true),
        ] {
            assert_eq!(
                decide(&given(&e), &intent("a-2")),
                refused(Refusal::AlreadyRecorded),
                "{e:?}"
            );
        }
    }

    #[test]
    fn settle_of_the_attempt_in_flight_settles_live() {
        let e = entry(ExecutionStarted, true);
        for (settlement, status) in [
            (Settlement::Completed, Completed),
            (Settlement::Failed, Failed),
            (Settlement::OutcomeUnknown, OutcomeUnknown),
        ] {
            assert_eq!(
                decide(&given(&e), &settle_as("a-1", settlement, None)),
                Ok(change(status, "a-1", None, true, false))
            );
        }
        let timeout = Some(Reason::ExecutionTimeout);
        assert_eq!(
            decide(
                &given(&e),
                &settle_as("a-1", Settlement::OutcomeUnknown, timeout)
            ),
            Ok(change(OutcomeUnknown, "a-1", timeout, true, false))
        );
    }

    #[test]
    fn settle_is_refused_for_another_attempt_an_unknown_outcome_or_an_entry_not_in_flight() {
        let running = entry(ExecutionStarted, true);
        let completed = Settlement::Completed;
        assert_eq!(
            decide(&given(&running), &settle_as("a-2", completed, None)),
            refused(Refusal::AttemptMismatch)
        );
        let unknown = entry(OutcomeUnknown, true);
        assert_eq!(
            decide(&given(&unknown), &settle_as("a-1", completed, None)),
            refused(Refusal::UnknownNeedsReconciliation)
        );
        for e in [
            entry(Approved, false),
            entry(Approved, true),
            entry(Completed, true),
            entry(Failed, true),
        ] {
            assert_eq!(
                decide(&given(&e), &settle_as("a-1", completed, None)),
                refused(Refusal::NotInFlight),
                "{e:?}"
            );
        }
    }

    #[test]
    fn a_settlement_reason_is_only_execution_timeout_with_outcome_unknown() {
        let e = entry(ExecutionStarted, true);
        for (settlement, reason) in [
            (Settlement::Completed, Reason::ExecutionTimeout),
            (Settlement::Failed, Reason::ExecutionTimeout),
            (Settlement::OutcomeUnknown, Reason::PreDispatchDeadline),
        ] {
            assert!(matches!(
                decide(&given(&e), &settle_as("a-1", settlement, Some(reason))),
                Err(Rejection::Invalid {
                    field: "reason",
                    ..
                })
            ));
        }
    }

    #[test]
    fn cancel_before_the_router_is_not_executed_live_with_its_deadline_reason() {
        let e = entry(ExecutionStarted, true);
        assert_eq!(
            decide(&given(&e), &cancel("a-1", None)),
            Ok(change(Approved, "a-1", None, true, false))
        );
        let deadline = Some(Reason::PreDispatchDeadline);
        assert_eq!(
            decide(&given(&e), &cancel("a-1", deadline)),
            Ok(change(Approved, "a-1", deadline, true, false))
        );
        assert!(matches!(
            decide(&given(&e), &cancel("a-1", Some(Reason::ExecutionTimeout))),
            Err(Rejection::Invalid {
                field: "reason",
                ..
            })
        ));
        assert_eq!(
            decide(&given(&entry(OutcomeUnknown, true)), &cancel("a-1", None)),
            refused(Refusal::UnknownNeedsReconciliation)
        );
        assert_eq!(
            decide(&given(&entry(Completed, true)), &cancel("a-1", None)),
            refused(Refusal::NotInFlight)
        );
        assert_eq!(
            decide(&given(&e), &cancel("a-2", None)),
            refused(Refusal::AttemptMismatch)
        );
    }

    #[test]
    fn reconcile_of_the_original_attempt_resolves_an_in_flight_or_unknown_entry_and_clears_the_reason(
    ) {
        for status in [ExecutionStarted, OutcomeUnknown] {
            let mut e = entry(status, true);
            e.reason = (status == OutcomeUnknown).then_some(Reason::ExecutionTimeout);
            for (completed, to) in [(true, Completed), (false, Approved)] {
                let Ok(Decision::Change(c)) = decide(&given(&e), &reconcile("a-1", completed))
                else {
                    panic!("{status:?} reconciled as {completed} was refused");
                };
                assert_eq!(
                    c,
                    Change {
                        status: to,
                        attempt_id: "a-1".into(),
                        reason: None,
                        settled: true,
                        live: true,
                        new_attempt: false,
                        evidence: true,
                    }
                );
            }
            assert_eq!(
                decide(&given(&e), &reconcile("a-2", true)),
                refused(Refusal::AttemptMismatch)
            );
        }
    }

    #[test]
    fn reconcile_of_a_settled_entry_or_without_evidence_changes_nothing() {
        for e in [
            entry(Completed, true),
            entry(Failed, true),
            entry(Approved, true),
            entry(Approved, false),
        ] {
            assert_eq!(
                decide(&given(&e), &reconcile("a-1", true)),
                refused(Refusal::AlreadySettled),
                "{e:?}"
            );
        }
        let e = entry(OutcomeUnknown, true);
        for (field, blank) in [
            (
                "evidence.source",
                Evidence {
                    source: " ".into(),
                    ..evidence()
                },
            ),
            (
                "evidence.reference",
                Evidence {
                    reference: String::new(),
                    ..evidence()
                },
            ),
            (
                "evidence.observed_at",
                Evidence {
                    observed_at: "yesterday".into(),
                    ..evidence()
                },
            ),
        ] {
            let action = Action::Reconcile {
                attempt_id: id("a-1"),
                completed: true,
                evidence: blank,
            };
            assert!(
                matches!(decide(&given(&e), &action), Err(Rejection::Invalid { field: f, .. }) if f == field),
                "{field}"
            );
        }
    }

    #[test]
    fn metadata_attaches_to_a_published_entry_live_only_once_settled() {
        assert_eq!(
            decide(&given(&entry(ExecutionStarted, true)), &attach("Issue")),
            Ok(Decision::Attach { live: false })
        );
        for e in [
            entry(Completed, true),
            entry(Failed, true),
            entry(OutcomeUnknown, true),
            entry(Approved, true),
        ] {
            assert_eq!(
                decide(&given(&e), &attach("Issue")),
                Ok(Decision::Attach { live: true }),
                "{e:?}"
            );
        }
        assert_eq!(
            decide(&given(&entry(Approved, false)), &attach("Issue")),
            refused(Refusal::NotPublished)
        );
    }

    #[test]
    fn an_attach_identical_to_the_stored_metadata_changes_nothing() {
        let mut e = entry(Completed, true);
        let Action::AttachMetadata { metadata } = attach("Issue") else {
            unreachable!()
        };
        e.metadata = Some(metadata);
        assert_eq!(
            decide(&given(&e), &attach("Issue")),
            Ok(Decision::Unchanged)
        );
        assert_eq!(
            decide(&given(&e), &attach("Other")),
            Ok(Decision::Attach { live: true })
        );
    }

    #[test]
    fn a_fresh_attempt_restarts_only_a_not_executed_entry_under_a_new_attempt_id() {
        let mut e = entry(Approved, true);
        e.reason = Some(Reason::PreDispatchDeadline);
        assert_eq!(
            decide(&given(&e), &fresh("a-2")),
            Ok(change(ExecutionStarted, "a-2", None, false, true))
        );
        assert_eq!(
            decide(&given(&e), &fresh("a-1")),
            refused(Refusal::AttemptReused)
        );
        let used = Given {
            attempt_used: true,
            ..given(&e)
        };
        assert_eq!(
            decide(&used, &fresh("a-0")),
            refused(Refusal::AttemptReused)
        );
    }

    #[test]
    fn no_blind_resend_of_an_unknown_or_in_flight_outcome() {
        for e in [entry(OutcomeUnknown, true), entry(ExecutionStarted, true)] {
            assert_eq!(
                decide(&given(&e), &fresh("a-2")),
                refused(Refusal::UnknownNeedsReconciliation),
                "{e:?}"
            );
        }
        for e in [
            entry(Completed, true),
            entry(Failed, true),
            entry(Approved, false),
        ] {
            assert_eq!(
                decide(&given(&e), &fresh("a-2")),
                refused(Refusal::NotNotExecuted),
                "{e:?}"
            );
        }
    }

    #[test]
    fn a_missing_or_expired_session_or_entry_is_not_found_before_any_refusal() {
        let e = entry(Completed, true);
        for (session, found, want) in [
            (SessionState::Absent, None, Rejection::SessionNotFound),
            (SessionState::Expired, Some(&e), Rejection::SessionExpired),
            (SessionState::Live, None, Rejection::MutationNotFound),
        ] {
            let g = Given {
                session,
                entry: found,
                attempt_used: false,
                commissioned_after_found: false,
                deadline_passed: false,
            };
            for action in [
                intent("a-1"),
                settle_as("a-1", Settlement::Completed, None),
                cancel("a-1", None),
                reconcile("a-1", true),
                attach("x"),
                fresh("a-2"),
                note("x"),
            ] {
                assert_eq!(decide(&g, &action), Err(want), "{action:?}");
            }
        }
    }

    #[test]
    fn a_field_that_breaks_a_rule_is_reported_before_the_session_is_looked_at() {
        let g = Given {
            session: SessionState::Absent,
            entry: None,
            attempt_used: false,
            commissioned_after_found: false,
            deadline_passed: false,
        };
        assert!(matches!(
            decide(&g, &cancel("a-1", Some(Reason::ExecutionTimeout))),
            Err(Rejection::Invalid { .. })
        ));
    }

    #[test]
    fn a_note_of_1_to_4096_bytes_is_kept_in_any_state_without_a_change() {
        for e in [
            entry(Approved, false),
            entry(ExecutionStarted, true),
            entry(OutcomeUnknown, true),
            entry(Completed, true),
        ] {
            for text in ["x".to_owned(), "é".repeat(2048), "n".repeat(NOTE_MAX_BYTES)] {
                assert_eq!(decide(&given(&e), &note(&text)), Ok(Decision::Note));
            }
        }
    }

    /// U+0000 in free text is refused before anything stored is looked at (Postgres `text` cannot hold
    /// it; docs/api.md "Text a client sends"); other control characters are text like any other.
    #[test]
    fn nul_in_evidence_or_a_note_is_invalid_on_its_field_before_the_session_is_looked_at() {
        let g = Given {
            session: SessionState::Absent,
            entry: None,
            attempt_used: false,
            commissioned_after_found: false,
            deadline_passed: false,
        };
        let nul = |field: &'static str| {
            Err(Rejection::Invalid {
                field,
                message: NUL_REFUSED,
            })
        };
        let with = |evidence: Evidence| Action::Reconcile {
            attempt_id: id("a-1"),
            completed: true,
            evidence,
        };
        assert_eq!(
            decide(
                &g,
                &with(Evidence {
                    source: "github\0".into(),
                    ..evidence()
                })
            ),
            nul("evidence.source")
        );
        assert_eq!(
            decide(
                &g,
                &with(Evidence {
                    reference: "\0".into(),
                    ..evidence()
                })
            ),
            nul("evidence.reference")
        );
        assert_eq!(decide(&g, &note("called\0back")), nul("text"));
        let e = entry(OutcomeUnknown, true);
        assert_eq!(
            decide(&given(&e), &note("line 1\nline 2\t\u{7}")),
            Ok(Decision::Note)
        );
    }

    #[test]
    fn an_empty_or_longer_note_is_invalid_on_text_before_the_session_is_looked_at() {
        let g = Given {
            session: SessionState::Absent,
            entry: None,
            attempt_used: false,
            commissioned_after_found: false,
            deadline_passed: false,
        };
        for text in [String::new(), "n".repeat(NOTE_MAX_BYTES + 1)] {
            assert_eq!(
                decide(&g, &note(&text)),
                Err(Rejection::Invalid {
                    field: "text",
                    message: "a note is 1 to 4096 bytes of text",
                })
            );
        }
    }

    #[test]
    fn commissioned_after_must_name_another_recorded_mutation_of_the_session() {
        let invalid = Err(Rejection::CommissionedAfterNotFound);
        for session in [SessionState::Absent, SessionState::Live] {
            let g = Given {
                session,
                entry: None,
                attempt_used: false,
                commissioned_after_found: false,
                deadline_passed: false,
            };
            assert_eq!(decide(&g, &approve_after("m-0")), invalid);
        }
        let found = Given {
            session: SessionState::Live,
            entry: None,
            attempt_used: false,
            commissioned_after_found: true,
            deadline_passed: false,
        };
        assert_eq!(decide(&found, &approve_after("m-0")), Ok(Decision::Approve));
        // An expired session is 404 first; a redelivery with a valid reference is a redelivery.
        let expired = Given {
            session: SessionState::Expired,
            ..found.clone()
        };
        assert_eq!(
            decide(&expired, &approve_after("m-0")),
            Err(Rejection::SessionExpired)
        );
        let e = entry(Approved, false);
        let again = Given {
            entry: Some(&e),
            ..found
        };
        assert_eq!(
            decide(&again, &approve_after("m-0")),
            refused(Refusal::AlreadyRecorded)
        );
    }
}
