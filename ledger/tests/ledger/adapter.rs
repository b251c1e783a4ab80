//! Live delivery: the adapter is called only after the change is durable, only for changes a live consumer
//! sees (never intent, a fresh attempt or a refusal), and its errors or panics never change settlement.

use std::sync::{Arc, Mutex, OnceLock};

use crate::common::*;
use ledger::engine::Settlement;
use ledger::ids::{LogicalTurnId, SessionKey};
use ledger::wire::{LedgerStatus as L, MutationOutcome, PublishedStatus as P};
use ledger::{Adapter, AdapterError, Ledger, Refusal};

/// Announced revision and status, then what the other connection saw: the entry's revision and status and
/// the turn's latest revision.
type Seen = (i64, P, Option<i64>, Option<P>, i64);

/// Inside each call, reads the announced entry through a SECOND ledger opened on the same file.
#[derive(Default)]
struct DurabilityProbe {
    other: OnceLock<Ledger>,
    seen: Mutex<Vec<Seen>>,
}

impl Adapter for DurabilityProbe {
    fn on_mutation_outcome(
        &self,
        session_key: &SessionKey,
        outcome: &MutationOutcome,
        mutation_revision: i64,
    ) -> Result<(), AdapterError> {
        let other = self.other.get().expect("second ledger is set").sessions();
        let turn_id = turn(&outcome.logical_turn_id);
        let entries = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(other.turn_entries(session_key, &turn_id))
        })
        .expect("the other connection reads the turn");
        let entry = entries
            .entries
            .iter()
            .find(|e| e.outcome.mutation_id == outcome.mutation_id);
        self.seen.lock().unwrap().push((
            mutation_revision,
            outcome.status,
            entry.and_then(|e| e.mutation_revision),
            entry.map(|e| e.outcome.status),
            entries.latest_revision,
        ));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_is_called_only_after_the_change_is_durable() {
    let probe = Arc::new(DurabilityProbe::default());
    let h = open_with(probe.clone(), Arc::new(Recorder::default())).await;
    let other = reopen(
        &h.path,
        Arc::new(ledger::adapter::NoAdapter),
        h.clock.clone(),
    )
    .await;
    assert!(probe.other.set(other).is_ok());

    h.in_flight("m-1", "a-1").await; // 1
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await; // 2
    h.in_flight("m-2", "a-2").await; // 3
    h.ok(cancel("m-2", "a-2", None)).await; // 4
    h.ok(attach(
        "m-1",
        meta("D-1", "https://app.example.com/d/D-1", "One"),
    ))
    .await; // 5
    let seen = probe.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (2, P::Completed, Some(2), Some(P::Completed), 2),
            (4, P::NotExecuted, Some(4), Some(P::NotExecuted), 4),
            (5, P::Completed, Some(5), Some(P::Completed), 5),
        ]
    );
}

#[tokio::test]
async fn adapter_is_never_called_for_approve_intent_fresh_attempt_or_refusals() {
    let h = open().await;
    h.ok(approve("m-1")).await;
    h.ok(intent("m-1", "a-1")).await;
    assert_eq!(h.recorder.count(), 0);
    h.ok(cancel("m-1", "a-1", None)).await;
    assert_eq!(h.recorder.count(), 1);
    let s = h.ok(fresh("m-1", "a-2")).await;
    assert_eq!(h.recorder.count(), 1, "a fresh attempt is not emitted");
    // Refusals (checked by `refused` to leave the delivery count unchanged).
    h.refused(intent("m-1", "a-3"), Refusal::AlreadyRecorded, &s)
        .await;
    h.refused(fresh("m-1", "a-3"), Refusal::UnknownNeedsReconciliation, &s)
        .await;
    h.refused(
        settle("m-1", "a-1", Settlement::Failed, None),
        Refusal::AttemptMismatch,
        &s,
    )
    .await;
    let d = h.recorder.deliveries();
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].session_key.as_str(), d[0].revision), (SESSION, 2));
}

#[tokio::test]
async fn every_change_that_takes_a_revision_hints_its_turn_after_the_outcomes_once_per_commit() {
    let h = open().await;
    let hint = |t: &str, n: i64| (SESSION.to_string(), t.to_string(), n);
    h.ok(approve("m-1")).await;
    assert_eq!(h.recorder.hints(), vec![], "an approve takes no revision");
    let s = h.ok(intent("m-1", "a-1")).await;
    assert_eq!(h.recorder.hints(), vec![hint(TURN, 1)]);
    assert_eq!(h.recorder.count(), 0, "the intent itself is not emitted");
    h.refused(intent("m-1", "a-1"), Refusal::AlreadyRecorded, &s)
        .await;
    h.ok(cancel("m-1", "a-1", None)).await; // 2
    h.ok(fresh("m-1", "a-2")).await; // 3
    h.ok(settle("m-1", "a-2", Settlement::OutcomeUnknown, None))
        .await; // 4
    h.ok(reconcile("m-1", "a-2", true)).await; // 5
    let m = meta("D-1", "https://app.example.com/d/D-1", "One");
    h.ok(attach("m-1", m.clone())).await; // 6
    h.ok(attach("m-1", m)).await; // identical: no revision, no hint
    assert_eq!(
        h.recorder.hints(),
        (1..=6).map(|n| hint(TURN, n)).collect::<Vec<_>>()
    );
    // A batch is one commit: one hint per turn it changed, with the latest revision after all of it, in
    // the order it first changed them, after its outcomes.
    let results = h
        .engine
        .apply_batch(vec![
            approve_in(SESSION, "t-2", "m-2"),
            intent("m-2", "a-1"),
            approve("m-3"),
            intent("m-3", "a-1"),
            settle("m-2", "a-1", Settlement::Failed, None),
            settle("m-3", "a-1", Settlement::Completed, None),
            intent("m-3", "a-1"),
        ])
        .await
        .unwrap();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 6);
    assert_eq!(h.recorder.hints()[6..], [hint("t-2", 2), hint(TURN, 8)]);
    let d = h.recorder.deliveries();
    assert_eq!(
        d.iter().map(|d| d.revision).collect::<Vec<_>>(),
        [2, 4, 5, 6, 2, 8]
    );
}

struct Failing;

impl Adapter for Failing {
    fn on_mutation_outcome(
        &self,
        _: &SessionKey,
        _: &MutationOutcome,
        _: i64,
    ) -> Result<(), AdapterError> {
        Err(AdapterError("stream closed".into()))
    }

    fn on_turn_changed(
        &self,
        _: &SessionKey,
        _: &LogicalTurnId,
        _: i64,
    ) -> Result<(), AdapterError> {
        Err(AdapterError("stream closed".into()))
    }
}

struct Panicking;

impl Adapter for Panicking {
    fn on_mutation_outcome(
        &self,
        _: &SessionKey,
        _: &MutationOutcome,
        _: i64,
    ) -> Result<(), AdapterError> {
        panic!("adapter bug")
    }

    fn on_turn_changed(
        &self,
        _: &SessionKey,
        _: &LogicalTurnId,
        _: i64,
    ) -> Result<(), AdapterError> {
        panic!("adapter bug in the hint")
    }
}

/// Settles through a misbehaving adapter and checks settlement stands, now and after a restart.
async fn settlement_survives(adapter: Arc<dyn Adapter>) {
    let h = open_with(adapter, Arc::new(Recorder::default())).await;
    h.in_flight("m-1", "a-1").await;
    let settled = h
        .ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    assert_eq!(
        settled,
        state("m-1", L::Completed, true, Some("a-1"), Some(2), None)
    );
    // The writer is still usable, and the settlement is not undone.
    h.in_flight("m-2", "a-2").await;
    let u = h
        .ok(settle("m-2", "a-2", Settlement::OutcomeUnknown, None))
        .await;
    assert_eq!(u.revision, Some(4));
    let statuses = |outcomes: Vec<MutationOutcome>| {
        outcomes
            .into_iter()
            .map(|o| (o.mutation_id, o.status))
            .collect::<Vec<_>>()
    };
    let expected = vec![
        ("m-1".to_string(), P::Completed),
        ("m-2".to_string(), P::OutcomeUnknown),
    ];
    assert_eq!(
        statuses(h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap()),
        expected
    );
    h.ledger.close().await;
    let again = reopen(&h.path, Arc::new(Recorder::default()), h.clock.clone()).await;
    assert_eq!(
        statuses(
            again
                .sessions()
                .mutation_outcomes(&sk(SESSION))
                .await
                .unwrap()
        ),
        expected
    );
    assert_eq!(
        again
            .sessions()
            .turn_entries(&sk(SESSION), &turn(TURN))
            .await
            .unwrap()
            .latest_revision,
        4
    );
}

#[tokio::test]
async fn adapter_error_never_changes_settlement() {
    settlement_survives(Arc::new(Failing)).await;
}

#[tokio::test]
async fn adapter_panic_never_changes_or_undoes_settlement() {
    settlement_survives(Arc::new(Panicking)).await;
}
