//! What a viewer (an end user with a viewer link) may see: its session's pages and operation pages, and
//! histories without what is internal to staff (docs/access.md "Viewer links").

use ledger::ids::SessionKey;
use ledger::wire::OperationHistory;

/// The actor a viewer reads for any staff member: the name is internal (pages say "by support").
pub const STAFF_ACTOR_FOR_VIEWER: &str = "staff";

/// Takes out of `history` what only staff may see (docs/access.md "Viewer links" and "Operator
/// actions"): the rows of kind `note`, `claim` and `release` are removed, an actor `staff:<name>`
/// becomes `staff` ([`STAFF_ACTOR_FOR_VIEWER`]), a reconciliation's evidence keeps only `observed_at`
/// (its `source` and `reference` are free text typed for staff, its `provider_status` the provider's own
/// word for staff; the row's `established_by` says who established it), and `alerted_at` (when staff
/// were alerted) is left out. Every other row and field is kept as it is.
pub fn without_internal(history: &mut OperationHistory) {
    history.alerted_at = None;
    history.claim = None;
    history.changes.retain(|c| !c.kind.is_internal());
    for change in &mut history.changes {
        if change.actor.starts_with("staff:") {
            change.actor = STAFF_ACTOR_FOR_VIEWER.to_owned();
        }
        if let Some(evidence) = &mut change.evidence {
            evidence.source.clear();
            evidence.reference.clear();
            evidence.provider_status = None;
        }
    }
}

/// Whether a viewer of `own` may open the page at `path`: its session's pages (`/sessions/<own>` and
/// below) and operation pages (which list only matches in its session). The sessions list, the
/// unknowns queue, find and other sessions are not there for a viewer.
pub fn viewer_may_open(path: &str, own: &SessionKey) -> bool {
    if path.starts_with("/operations/") {
        return true;
    }
    let Some(rest) = path.strip_prefix("/sessions/") else {
        return false;
    };
    let segment = rest.split('/').next().unwrap_or("");
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .is_ok_and(|key| key == own.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_viewer_s_history_has_no_alert_time_no_staff_names_and_no_evidence_text() {
        let mut h: OperationHistory = serde_json::from_value(serde_json::json!({
            "session_key": "s", "logical_turn_id": "t", "mutation_id": "m",
            "commissioned_after": null, "commissioned": [],
            "changes": [{"kind": "reconciliation", "at": "2026-12-03T14:30:05.123Z", "revision": 3,
                "actor": "staff:alice", "attempt_id": "a1", "ledger_status": "completed",
                "reason": null, "evidence": {"source": "status:payments.charge",
                "reference": "charge ch_3PqL9", "observed_at": "2026-12-07T10:00:00Z",
                "provider_status": "completed"},
                "note": null, "outcome": null}],
            "alerted_at": "2026-12-03T14:30:06.000Z"
        }))
        .unwrap();
        without_internal(&mut h);
        assert_eq!(h.alerted_at, None);
        assert_eq!(h.changes[0].actor, "staff");
        let json = serde_json::to_value(&h).unwrap();
        assert!(json.get("alerted_at").is_none());
        assert_eq!(
            json["changes"][0]["evidence"],
            serde_json::json!({"observed_at": "2026-12-07T10:00:00Z"})
        );
    }

    #[test]
    fn a_viewer_opens_only_its_session_and_operation_pages() {
        let own = SessionKey::parse("a/b c").unwrap();
        for ok in [
            "/sessions/a%2Fb%20c",
            "/sessions/a%2Fb%20c/turns/t",
            "/operations/x",
        ] {
            assert!(viewer_may_open(ok, &own), "{ok}");
        }
        for no in [
            "/",
            "/find",
            "/unknowns",
            "/sessions/other",
            "/sessions/a",
            "/sessions/",
            "/sessionsx",
        ] {
            assert!(!viewer_may_open(no, &own), "{no}");
        }
    }
}
