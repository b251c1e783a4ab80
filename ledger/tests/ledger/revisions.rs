//! Per-turn revisions: strictly increasing, one per visible change, an entry replayed under the revision of
//! its latest change, and adapter delivery in revision order even under many concurrent writers.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use ledger::engine::Settlement;
use ledger::ids::{LogicalTurnId, SessionKey};
use ledger::wire::{MutationOutcome, PublishedStatus as P};
use ledger::{Adapter, AdapterError};

#[tokio::test]
async fn revisions_increase_by_one_per_visible_change_and_not_for_approve_or_no_ops() {
    let h = open().await;
    let mut seen = Vec::new();
    h.ok(approve("m-1")).await;
    h.ok(approve("m-2")).await;
    assert_eq!(h.latest_revision().await, 0);
    seen.push(h.ok(intent("m-1", "a-1")).await.revision);
    seen.push(h.ok(intent("m-2", "a-2")).await.revision);
    seen.push(
        h.ok(settle("m-2", "a-2", Settlement::Failed, None))
            .await
            .revision,
    );
    let m = meta("D-1", "https://app.example.com/d/D-1", "One");
    seen.push(h.ok(attach("m-2", m.clone())).await.revision);
    // No-op and refusal take no revision.
    assert_eq!(h.ok(attach("m-2", m)).await.revision, Some(4));
    assert!(h.engine.apply(intent("m-1", "a-1")).await.is_err());
    seen.push(
        h.ok(settle("m-1", "a-1", Settlement::Completed, None))
            .await
            .revision,
    );
    assert_eq!(seen, vec![Some(1), Some(2), Some(3), Some(4), Some(5)]);
    assert_eq!(h.latest_revision().await, 5);
}

#[tokio::test]
async fn each_turn_keeps_its_own_revision_counter() {
    let h = open().await;
    h.ok(approve_in(SESSION, "t-a", "m-1")).await;
    h.ok(approve_in(SESSION, "t-b", "m-2")).await;
    assert_eq!(h.ok(intent("m-1", "a-1")).await.revision, Some(1));
    assert_eq!(h.ok(intent("m-2", "a-2")).await.revision, Some(1));
    assert_eq!(
        h.ok(settle("m-2", "a-2", Settlement::Completed, None))
            .await
            .revision,
        Some(2)
    );
    let turns = h.sessions.turns(&sk(SESSION)).await.unwrap();
    let latest: Vec<_> = turns
        .turns
        .iter()
        .map(|t| (t.logical_turn_id.as_str(), t.latest_revision))
        .collect();
    assert_eq!(latest, vec![("t-a", 1), ("t-b", 2)]);
}

#[tokio::test]
async fn an_entry_replays_under_the_revision_of_its_latest_change() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await; // 1
    h.in_flight("m-2", "a-2").await; // 2
    h.ok(settle("m-2", "a-2", Settlement::Completed, None))
        .await; // 3
    h.ok(settle("m-1", "a-1", Settlement::Failed, None)).await; // 4
    h.ok(attach(
        "m-2",
        meta("D-2", "https://app.example.com/d/D-2", "Two"),
    ))
    .await; // 5
    let replay = h
        .sessions
        .replay(&sk(SESSION), &turn(TURN), None)
        .await
        .unwrap();
    let got: Vec<_> = replay
        .events
        .iter()
        .map(|e| (e.revision, e.outcome.mutation_id.as_str(), e.outcome.status))
        .collect();
    assert_eq!(
        got,
        vec![(Some(4), "m-1", P::Failed), (Some(5), "m-2", P::Completed)]
    );
    assert_eq!(replay.latest_revision, 5);
    let entries = h
        .sessions
        .turn_entries(&sk(SESSION), &turn(TURN))
        .await
        .unwrap();
    let revs: Vec<_> = entries
        .entries
        .iter()
        .map(|e| e.mutation_revision)
        .collect();
    assert_eq!(
        revs,
        vec![Some(4), Some(5)],
        "recorded order, latest revisions"
    );
}

/// 250 mutations, each approve → intent → settle → metadata, on one turn, from 250 tasks at once: 1,000
/// transitions, 750 of them visible changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_transitions_on_one_turn_take_unique_revisions_delivered_in_order() {
    const N: usize = 250;
    let h = open().await;
    let mut tasks = Vec::with_capacity(N);
    for i in 0..N {
        let engine = h.engine.clone();
        tasks.push(tokio::spawn(async move {
            let m = format!("m-{i}");
            let a = format!("a-{i}");
            let mut revisions = Vec::new();
            let approved = engine.apply(approve(&m)).await.unwrap();
            assert_eq!(approved.revision, None);
            revisions.push(engine.apply(intent(&m, &a)).await.unwrap().revision);
            let settlement = match i % 3 {
                0 => Settlement::Completed,
                1 => Settlement::Failed,
                _ => Settlement::OutcomeUnknown,
            };
            revisions.push(
                engine
                    .apply(settle(&m, &a, settlement, None))
                    .await
                    .unwrap()
                    .revision,
            );
            let md = meta(&format!("D-{i}"), "https://app.example.com/d/x", "T");
            revisions.push(engine.apply(attach(&m, md)).await.unwrap().revision);
            revisions
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        let revs = t.await.unwrap();
        // Each task's own changes are strictly increasing.
        assert!(revs.windows(2).all(|w| w[0] < w[1]), "{revs:?}");
        all.extend(revs.into_iter().map(Option::unwrap));
    }
    let visible = 3 * N;
    assert_eq!(all.len(), visible);
    let unique: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(unique.len(), visible, "no duplicate revision");
    assert_eq!(unique, (1..=visible as i64).collect::<HashSet<_>>());
    assert_eq!(h.latest_revision().await, visible as i64);

    // Adapter: settle and metadata-after-settle of each mutation, strictly increasing per turn.
    let deliveries = h.recorder.deliveries();
    assert_eq!(deliveries.len(), 2 * N);
    let mut by_turn: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for d in &deliveries {
        by_turn
            .entry(d.outcome.logical_turn_id.as_str())
            .or_default()
            .push(d.revision);
    }
    assert_eq!(by_turn.len(), 1);
    let order = &by_turn[TURN];
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "delivery order decreased"
    );

    // History agrees: every entry settled under its metadata's revision.
    let replay = h
        .sessions
        .replay(&sk(SESSION), &turn(TURN), None)
        .await
        .unwrap();
    assert_eq!(replay.events.len(), N);
    assert_eq!(replay.latest_revision, visible as i64);
    let counts = &h.sessions.turns(&sk(SESSION)).await.unwrap().turns[0].counts;
    assert_eq!(
        (
            counts.completed,
            counts.failed,
            counts.outcome_unknown,
            counts.in_flight
        ),
        (84, 83, 83, 0)
    );
}

/// A recorder that takes its time (1 ms a call) while other writers queue up.
struct SlowRecorder(Arc<Recorder>);

impl Adapter for SlowRecorder {
    fn on_mutation_outcome(
        &self,
        session_key: &SessionKey,
        outcome: &MutationOutcome,
        mutation_revision: i64,
    ) -> Result<(), AdapterError> {
        std::thread::sleep(Duration::from_millis(1));
        self.0
            .on_mutation_outcome(session_key, outcome, mutation_revision)
    }

    fn on_turn_changed(
        &self,
        session_key: &SessionKey,
        logical_turn_id: &LogicalTurnId,
        latest_revision: i64,
    ) -> Result<(), AdapterError> {
        self.0
            .on_turn_changed(session_key, logical_turn_id, latest_revision)
    }
}

/// Batches announce several changes each; a slow adapter must still see one turn's revisions in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adapter_order_equals_revision_order_even_with_a_slow_adapter_and_batches() {
    const N: usize = 100;
    let recorder = Arc::new(Recorder::default());
    let h = open_with(Arc::new(SlowRecorder(recorder.clone())), recorder).await;
    let mut tasks = Vec::with_capacity(N);
    for i in 0..N {
        let engine = h.engine.clone();
        tasks.push(tokio::spawn(async move {
            let m = format!("m-{i}");
            let a = format!("a-{i}");
            engine.apply(approve(&m)).await.unwrap();
            engine.apply(intent(&m, &a)).await.unwrap();
            let md = meta(&format!("D-{i}"), "https://app.example.com/d/x", "T");
            let results = engine
                .apply_batch(vec![
                    settle(&m, &a, Settlement::Completed, None),
                    attach(&m, md),
                ])
                .await
                .unwrap();
            assert!(results.iter().all(Result::is_ok));
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let order: Vec<i64> = h.recorder.deliveries().iter().map(|d| d.revision).collect();
    assert_eq!(order.len(), 2 * N);
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "delivery order is not revision order: {order:?}"
    );
    assert_eq!(h.latest_revision().await, 3 * N as i64);
    // One hint per commit that changed the turn, in commit order, each with the latest revision then:
    // strictly increasing, the last one the turn's latest.
    let hints: Vec<i64> = h.recorder.hints().iter().map(|t| t.2).collect();
    assert!(
        hints.windows(2).all(|w| w[0] < w[1]),
        "hints are not in commit order: {hints:?}"
    );
    assert_eq!(hints.last(), Some(&(3 * N as i64)));
    assert!(hints.len() <= 2 * N, "at most one hint per commit");
}
