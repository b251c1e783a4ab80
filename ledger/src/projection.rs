//! The projection from a ledger entry to a `mutation_outcome/v1` record (seed 000, "Record" and its status
//! table; DESIGN "Projection"). Derived on read, every time: there is no second store of records.

use serde::{Deserialize, Serialize};

use crate::limits::RECORD_MAX_BYTES;
use crate::sanitize::{sanitize_resource_id, sanitize_title, sanitize_url};
pub use crate::wire::HostMetadata;
use crate::wire::{LedgerStatus, MutationOutcome, PublishedStatus, Reason, SCHEMA};

/// The part of a ledger entry the projection reads. This is also the `ledger_entry` shape of the contract
/// examples in `docs/contracts/mutation_outcome_v1.json` and of `outcomes project` input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub logical_turn_id: String,
    pub mutation_id: String,
    pub tool: String,
    pub status: LedgerStatus,
    /// Whether dispatch recorded the intent (the router was about to be entered). Distinguishes `approved`
    /// after intent (`not_executed`) from `approved` never started (not published).
    pub intent_recorded: bool,
    #[serde(default)]
    pub reason: Option<Reason>,
    /// `null` until the host attaches metadata.
    #[serde(default)]
    pub metadata: Option<HostMetadata>,
}

/// The published status of a ledger state, or `None` where nothing is published (approved, never started).
pub fn published_status(status: LedgerStatus, intent_recorded: bool) -> Option<PublishedStatus> {
    match status {
        LedgerStatus::Completed => Some(PublishedStatus::Completed),
        LedgerStatus::Failed => Some(PublishedStatus::Failed),
        LedgerStatus::OutcomeUnknown | LedgerStatus::ExecutionStarted => {
            Some(PublishedStatus::OutcomeUnknown)
        }
        LedgerStatus::Approved if intent_recorded => Some(PublishedStatus::NotExecuted),
        LedgerStatus::Approved => None,
    }
}

/// Whether `reason` may accompany `status` (seed 000: `pre_dispatch_deadline` with `not_executed`,
/// `execution_timeout` with `outcome_unknown`).
pub fn reason_fits(reason: Reason, status: PublishedStatus) -> bool {
    matches!(
        (reason, status),
        (Reason::PreDispatchDeadline, PublishedStatus::NotExecuted)
            | (Reason::ExecutionTimeout, PublishedStatus::OutcomeUnknown)
    )
}

/// Projects one ledger entry. `None` where nothing is published. Host metadata passes the sanitisers; a
/// reason is kept only where it fits the published status. The serialised record is at most
/// [`RECORD_MAX_BYTES`]: should the sanitised metadata ever push it over, the metadata is withheld.
pub fn project(entry: &LedgerEntry) -> Option<MutationOutcome> {
    let status = published_status(entry.status, entry.intent_recorded)?;
    let meta = entry.metadata.clone().unwrap_or_default();
    let mut record = MutationOutcome {
        schema: SCHEMA.to_owned(),
        logical_turn_id: entry.logical_turn_id.clone(),
        mutation_id: entry.mutation_id.clone(),
        tool: entry.tool.clone(),
        status,
        resource_id: sanitize_resource_id(meta.id.as_deref()),
        url: sanitize_url(meta.url.as_deref()),
        title: sanitize_title(meta.title.as_deref()),
        reason: entry.reason.filter(|r| reason_fits(*r, status)),
    };
    if serialized_len(&record) > RECORD_MAX_BYTES {
        record.resource_id = None;
        record.url = None;
        record.title = None;
    }
    Some(record)
}

/// Length in bytes of the record's compact JSON.
pub fn serialized_len(record: &MutationOutcome) -> usize {
    serde_json::to_vec(record)
        .map(|v| v.len())
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(status: LedgerStatus, intent_recorded: bool) -> LedgerEntry {
        LedgerEntry {
            logical_turn_id: "turn-1".into(),
            mutation_id: "m-1".into(),
            tool: "mcp__dashboards__create".into(),
            status,
            intent_recorded,
            reason: None,
            metadata: None,
        }
    }

    #[test]
    fn status_table_of_seed_000() {
        use LedgerStatus as L;
        use PublishedStatus as P;
        let table = [
            (L::Completed, true, Some(P::Completed)),
            (L::Failed, true, Some(P::Failed)),
            (L::OutcomeUnknown, true, Some(P::OutcomeUnknown)),
            (L::ExecutionStarted, true, Some(P::OutcomeUnknown)),
            (L::Approved, true, Some(P::NotExecuted)),
            (L::Approved, false, None),
        ];
        for (ledger, intent, published) in table {
            assert_eq!(
                project(&entry(ledger, intent)).map(|r| r.status),
                published,
                "{ledger:?} intent={intent}"
            );
        }
    }

    #[test]
    fn metadata_is_null_until_attached_and_reason_key_is_absent() {
        let record = project(&entry(LedgerStatus::Completed, true)).unwrap();
        let json = serde_json::to_string(&record).unwrap();
        assert_eq!(
            json,
            r#"{"schema":"mutation_outcome/v1","logical_turn_id":"turn-1","mutation_id":"m-1","tool":"mcp__dashboards__create","status":"completed","resource_id":null,"url":null,"title":null}"#
        );
    }

    #[test]
    fn reason_is_published_only_with_its_status() {
        let mut e = entry(LedgerStatus::OutcomeUnknown, true);
        e.reason = Some(Reason::ExecutionTimeout);
        assert_eq!(project(&e).unwrap().reason, Some(Reason::ExecutionTimeout));
        e.reason = Some(Reason::PreDispatchDeadline);
        assert_eq!(project(&e).unwrap().reason, None);
        let mut n = entry(LedgerStatus::Approved, true);
        n.reason = Some(Reason::PreDispatchDeadline);
        assert_eq!(
            project(&n).unwrap().reason,
            Some(Reason::PreDispatchDeadline)
        );
    }
}
