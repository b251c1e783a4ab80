//! The projection from a ledger entry to a `mutation_outcome/v1` record (seed 000, "Record" and its status
//! table; docs/design.md "What is published"). Derived on read, every time: there is no second store of records.

use serde::{Deserialize, Serialize};

use crate::limits::RECORD_MAX_BYTES;
use crate::sanitize::{sanitize_resource_id, sanitize_title, sanitize_url};
pub use crate::wire::{published_status, HostMetadata};
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
    project_owned(entry.clone())
}

/// [`project`], taking the entry by value: its strings move into the record instead of being copied
/// (the streamed reads, docs/ledger.md "Reading").
pub fn project_owned(entry: LedgerEntry) -> Option<MutationOutcome> {
    let status = published_status(entry.status, entry.intent_recorded)?;
    let meta = entry.metadata.unwrap_or_default();
    let mut record = MutationOutcome {
        schema: SCHEMA.to_owned(),
        logical_turn_id: entry.logical_turn_id,
        mutation_id: entry.mutation_id,
        tool: entry.tool,
        status,
        resource_id: sanitize_resource_id(meta.id.as_deref()),
        url: sanitize_url(meta.url.as_deref()),
        title: sanitize_title(meta.title.as_deref()),
        reason: entry.reason.filter(|r| reason_fits(*r, status)),
    };
    // Serialised only when the cheap bound cannot rule the limit out (never for ordinary records).
    if serialized_len_bound(&record) > RECORD_MAX_BYTES
        && serialized_len(&record) > RECORD_MAX_BYTES
    {
        record.resource_id = None;
        record.url = None;
        record.title = None;
    }
    Some(record)
}

/// Bytes of a record's compact JSON apart from its strings' contents: every key, quote, comma and brace,
/// the schema, the longest status and reason, and `null` for each absent field (the test
/// `the_fixed_part_bounds_every_record_without_strings` measures it).
const FIXED_JSON_BYTES: usize = 256;

/// An upper bound of [`serialized_len`] computed without serialising: serde_json writes at most 6 bytes
/// (`\u00XX`) for each byte of a string.
pub fn serialized_len_bound(record: &MutationOutcome) -> usize {
    let strings = [
        Some(record.logical_turn_id.as_str()),
        Some(record.mutation_id.as_str()),
        Some(record.tool.as_str()),
        record.resource_id.as_deref(),
        record.url.as_deref(),
        record.title.as_deref(),
    ];
    FIXED_JSON_BYTES + 6 * strings.iter().flatten().map(|s| s.len()).sum::<usize>()
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
    fn the_fixed_part_bounds_every_record_without_strings() {
        let mut e = entry(LedgerStatus::OutcomeUnknown, true);
        e.logical_turn_id.clear();
        e.mutation_id.clear();
        e.tool.clear();
        for (status, reason) in [
            (LedgerStatus::OutcomeUnknown, Some(Reason::ExecutionTimeout)),
            (LedgerStatus::Approved, Some(Reason::PreDispatchDeadline)),
            (LedgerStatus::Completed, None),
        ] {
            e.status = status;
            e.reason = reason;
            let record = project(&e).unwrap();
            assert!(serialized_len(&record) <= FIXED_JSON_BYTES, "{record:?}");
        }
    }

    #[test]
    fn the_length_bound_is_never_below_the_serialised_length() {
        let nasty = "\u{1}\"\\\u{7f}\u{2028}é🏳️‍🌈</script>";
        let mut e = entry(LedgerStatus::OutcomeUnknown, true);
        e.reason = Some(Reason::ExecutionTimeout);
        e.logical_turn_id = nasty.repeat(10);
        e.mutation_id = nasty.repeat(3);
        e.tool = "\"".repeat(256);
        let mut record = project(&e).unwrap();
        record.resource_id = Some("\u{0}".repeat(256));
        record.url = Some(nasty.repeat(40));
        record.title = Some("\\".repeat(512));
        assert!(serialized_len_bound(&record) >= serialized_len(&record));
        record.title = None;
        record.url = None;
        assert!(serialized_len_bound(&record) >= serialized_len(&record));
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
