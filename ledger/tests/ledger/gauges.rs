//! The ledger's gauges (docs/api.md "Metrics", `SessionManager::ledger_gauges`): open unknowns per tool,
//! in flight, and the age of the oldest of each, exact after a known sequence of writes on a manual
//! clock; the oldest unknown is the support queue's oldest `age_secs`; metadata does not move an age;
//! reconciliation and expiry take entries out.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::*;
use ledger::command::{Action, Command, Settlement};
use ledger::ids::ToolName;
use ledger::wire::LedgerStatus;
use ledger::{LedgerGauges, UnknownsQuery};

fn approve_tool(m: &str, tool: &str) -> Command {
    Command::new(
        sk(SESSION),
        mid(m),
        Action::Approve {
            logical_turn_id: turn(TURN),
            tool: ToolName::parse(tool).unwrap(),
            commissioned_after: None,
            traceparent: None,
        },
    )
}

/// The oldest `age_secs` of the settled unknowns in the first page of the support queue.
async fn queue_oldest_unknown(h: &Harness) -> Option<u64> {
    let (page, _) = h
        .sessions
        .open_unknowns(&UnknownsQuery::default())
        .await
        .unwrap();
    page.matches
        .iter()
        .filter(|m| m.entry.ledger_status == LedgerStatus::OutcomeUnknown)
        .filter_map(|m| m.age_secs)
        .max()
}

#[tokio::test]
async fn gauges_are_exact_after_a_known_sequence_and_the_oldest_unknown_is_the_queue_s() {
    let h = open().await;
    assert_eq!(
        h.sessions.ledger_gauges().await.unwrap(),
        LedgerGauges::default()
    );

    // T0: m1 (tool x) settles unknown.
    h.ok(approve_tool("m1", "x")).await;
    h.ok(intent("m1", "a")).await;
    h.ok(settle("m1", "a", Settlement::OutcomeUnknown, None))
        .await;
    // T0 + 10 s: m2 (tool y) goes in flight and stays there.
    h.clock.advance(Duration::from_secs(10));
    h.ok(approve_tool("m2", "y")).await;
    h.ok(intent("m2", "a")).await;
    // T0 + 15 s: m3 (tool x) settles unknown, m4 (x) completes, m5 (y) goes in flight and settles unknown,
    // m6 is only approved (nothing published).
    h.clock.advance(Duration::from_secs(5));
    for m in ["m3", "m4"] {
        h.ok(approve_tool(m, "x")).await;
        h.ok(intent(m, "a")).await;
    }
    h.ok(settle("m3", "a", Settlement::OutcomeUnknown, None))
        .await;
    h.ok(settle("m4", "a", Settlement::Completed, None)).await;
    h.ok(approve_tool("m5", "y")).await;
    h.ok(intent("m5", "a")).await;
    h.ok(settle("m5", "a", Settlement::OutcomeUnknown, None))
        .await;
    h.ok(approve_tool("m6", "x")).await;
    // T0 + 20 s: metadata on m1 does not move its age.
    h.clock.advance(Duration::from_secs(5));
    h.ok(attach("m1", meta("r-1", "https://example.com/1", "One")))
        .await;
    // T0 + 100.5 s.
    h.clock.advance(Duration::from_millis(80_500));
    let g = h.sessions.ledger_gauges().await.unwrap();
    assert_eq!(
        g,
        LedgerGauges {
            unknown_by_tool: BTreeMap::from([("x".to_owned(), 2), ("y".to_owned(), 1)]),
            unknown_oldest_age_secs: Some(100),
            in_flight: 1,
            in_flight_oldest_age_secs: Some(90),
        }
    );
    assert_eq!(g.unknown_open(), 3);
    assert_eq!(queue_oldest_unknown(&h).await, Some(100));

    // Reconciling m1 leaves m3 and m5 (T0 + 15 s) the oldest; settling m2 leaves nothing in flight.
    h.ok(reconcile("m1", "a", true)).await;
    h.ok(settle("m2", "a", Settlement::Failed, None)).await;
    let g = h.sessions.ledger_gauges().await.unwrap();
    assert_eq!(
        g,
        LedgerGauges {
            unknown_by_tool: BTreeMap::from([("x".to_owned(), 1), ("y".to_owned(), 1)]),
            unknown_oldest_age_secs: Some(85),
            in_flight: 0,
            in_flight_oldest_age_secs: None,
        }
    );
    assert_eq!(queue_oldest_unknown(&h).await, Some(85));

    // Past the time to live (from the last write) the session is hidden: nothing is open.
    h.clock.advance(TTL + Duration::from_secs(1));
    assert_eq!(
        h.sessions.ledger_gauges().await.unwrap(),
        LedgerGauges::default()
    );
    assert_eq!(queue_oldest_unknown(&h).await, None);
}
