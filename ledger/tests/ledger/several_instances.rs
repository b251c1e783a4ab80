//! Several instances on one database (docs/ledger.md "Backends"): two ledgers opened on the same
//! database take writes for the same turn concurrently. Revisions stay unique and gapless, both read the
//! same replay, and on Postgres each instance's adapter receives every change, written through either,
//! in revision order, each once, projected as of its revision.

use std::collections::HashSet;
use std::sync::Arc;

use crate::common::*;
use ledger::command::Settlement;
use ledger::wire::MutationOutcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_turn_and_every_change_reaches_both_in_revision_order() {
    let a = open().await;
    let b_recorder = Arc::new(Recorder::default());
    let b = reopen(&a.path, b_recorder.clone(), a.clock.clone()).await;
    let (a_engine, b_engine) = (a.engine.clone(), b.engine());

    // 32 writers, half through each instance, each approving, starting and settling its own mutation
    // of one turn (the approve of a new session and turn may race between the instances too).
    let writers = 32;
    let mut tasks = Vec::new();
    for i in 0..writers {
        let engine = if i % 2 == 0 {
            a_engine.clone()
        } else {
            b_engine.clone()
        };
        tasks.push(tokio::spawn(async move {
            let m = format!("m-{i}");
            let mut revisions = Vec::new();
            engine.apply(approve(&m)).await.unwrap();
            revisions.push(
                engine
                    .apply(intent(&m, "a-1"))
                    .await
                    .unwrap()
                    .revision
                    .unwrap(),
            );
            let settlement = [Settlement::Completed, Settlement::OutcomeUnknown][i % 2];
            revisions.push(
                engine
                    .apply(settle(&m, "a-1", settlement, None))
                    .await
                    .unwrap()
                    .revision
                    .unwrap(),
            );
            revisions
        }));
    }
    let mut revisions = Vec::new();
    for t in tasks {
        let r = t.await.unwrap();
        assert!(r[0] < r[1], "a mutation's settle follows its intent: {r:?}");
        revisions.extend(r);
    }
    // Every revision 1..=64 taken exactly once.
    revisions.sort_unstable();
    assert_eq!(revisions, (1..=2 * writers as i64).collect::<Vec<_>>());

    // Read-your-writes across instances: both read the same replay and the same listing.
    let replay_a = a
        .sessions
        .replay(&sk(SESSION), &turn(TURN), None)
        .await
        .unwrap();
    let replay_b = b
        .sessions()
        .replay(&sk(SESSION), &turn(TURN), None)
        .await
        .unwrap();
    assert_eq!(replay_a.events, replay_b.events);
    assert_eq!(replay_a.latest_revision, 2 * writers as i64);
    assert_eq!(replay_a.events.len(), writers);

    if postgres().is_none() {
        // SQLite serves one process: the live part is Postgres's (LISTEN/NOTIFY).
        return;
    }
    // Every settle (the live changes) reached each instance's adapter once, in revision order, as of
    // its revision: the settled record, whichever instance wrote it.
    for (name, recorder) in [("a", &a.recorder), ("b", &b_recorder)] {
        let deliveries = recorder.deliveries();
        let got: Vec<i64> = deliveries.iter().map(|d| d.revision).collect();
        let mut sorted = got.clone();
        sorted.sort_unstable();
        assert_eq!(got, sorted, "{name}: in revision order");
        assert_eq!(
            got.iter().collect::<HashSet<_>>().len(),
            writers,
            "{name}: each settle once: {got:?}"
        );
        for d in &deliveries {
            let expected: &MutationOutcome = replay_a
                .events
                .iter()
                .find(|e| e.outcome.mutation_id == d.outcome.mutation_id)
                .map(|e| &e.outcome)
                .unwrap();
            assert_eq!(&d.outcome, expected, "{name}: revision {}", d.revision);
        }
        // The turn hints end at the latest revision.
        assert_eq!(
            recorder.hints().last().map(|t| t.2),
            Some(2 * writers as i64),
            "{name}"
        );
    }
}

/// On Postgres a change of an entry is emitted as of its revision, even when the instance reads it after
/// later changes were committed: a metadata change after a settle arrives as two records, the settled
/// one without metadata first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_behind_emits_each_revision_as_of_itself() {
    if postgres().is_none() {
        return;
    }
    let a = open().await;
    let b_recorder = Arc::new(Recorder::default());
    let b = reopen(&a.path, b_recorder.clone(), a.clock.clone()).await;
    let batch = vec![
        approve("m-1"),
        intent("m-1", "a-1"),
        settle("m-1", "a-1", Settlement::Completed, None),
        attach(
            "m-1",
            meta("D-1", "https://app.example.com/d/D-1", "Dashboard"),
        ),
    ];
    for r in a.engine.apply_batch(batch).await.unwrap() {
        r.unwrap();
    }
    // B wrote nothing; wait for its listener.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while b_recorder.count() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(b);
    let deliveries = b_recorder.deliveries();
    assert_eq!(
        deliveries.iter().map(|d| d.revision).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert_eq!(deliveries[0].outcome.title, None);
    assert_eq!(deliveries[1].outcome.title.as_deref(), Some("Dashboard"));
    assert_eq!(deliveries, a.recorder.deliveries());
}

/// A group whose records do not fit one notification (Postgres refuses 8,000 bytes): every listener,
/// the writer's own included, reads them from history instead, with the same result: each record once,
/// in revision order, as of its revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_too_big_for_a_notification_is_read_from_history_by_every_instance() {
    if postgres().is_none() {
        return;
    }
    let a = open().await;
    let b_recorder = Arc::new(Recorder::default());
    let b = reopen(&a.path, b_recorder.clone(), a.clock.clone()).await;
    let n = 80;
    let mut batch = Vec::new();
    for i in 0..n {
        let m = format!("m-{i}");
        batch.push(approve(&m));
        batch.push(intent(&m, "a-1"));
        batch.push(settle(&m, "a-1", Settlement::Completed, None));
    }
    for r in a.engine.apply_batch(batch).await.unwrap() {
        r.unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while b_recorder.count() < n && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(b);
    let revisions: Vec<i64> = b_recorder.deliveries().iter().map(|d| d.revision).collect();
    assert_eq!(revisions, (1..=n as i64).map(|i| 2 * i).collect::<Vec<_>>());
    assert_eq!(b_recorder.deliveries(), a.recorder.deliveries());
    assert_eq!(a.recorder.hints().last().map(|h| h.2), Some(2 * n as i64));
}

/// docs/api.md "Deadlines": every instance sweeps; the ledger's refusal of a second settlement makes all
/// but one a no-op, so each overdue write gets one settlement, one history row and one event per
/// instance's adapter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_sweeping_at_once_settle_each_overdue_write_once() {
    use ledger::command::Action;
    let a = open().await;
    let b_recorder = Arc::new(Recorder::default());
    let b = reopen(&a.path, b_recorder.clone(), a.clock.clone()).await;
    let writes = 20;
    for i in 0..writes {
        let m = format!("m-{i}");
        a.ok(approve(&m)).await;
        a.ok(on(
            &m,
            Action::RecordIntent {
                attempt_id: att("a-1"),
                deadline_secs: Some(5),
            },
        ))
        .await;
    }
    a.clock.advance(std::time::Duration::from_secs(5));
    let now = T0 + 5_000;
    let b_engine = b.engine();
    let (x, y) = tokio::join!(a.engine.settle_overdue(now), b_engine.settle_overdue(now));
    assert_eq!(x.unwrap() + y.unwrap(), writes);
    for i in 0..writes {
        let changes = a
            .sessions
            .operation_history(&sk(SESSION), &mid(&format!("m-{i}")))
            .await
            .unwrap()
            .changes;
        let by_ledger = changes.iter().filter(|c| c.actor == "ledger").count();
        assert_eq!(by_ledger, 1, "m-{i}: {changes:?}");
    }
    // Each instance's adapter saw each settlement once (on SQLite the writing instance tells its own).
    let timeouts = |d: Vec<Delivery>| {
        d.into_iter()
            .filter(|d| d.outcome.reason.is_some())
            .map(|d| d.outcome.mutation_id)
            .collect::<HashSet<_>>()
    };
    let seen_a = timeouts(a.recorder.deliveries());
    assert!(seen_a.len() <= writes as usize);
    if testkit::postgres().is_some() {
        assert_eq!(seen_a.len(), writes as usize);
        assert_eq!(timeouts(b_recorder.deliveries()).len(), writes as usize);
        assert_eq!(a.recorder.count(), writes as usize);
    }
}

/// docs/api.md "Deadlines": on Postgres an instance that starts while another sweeps moves no deadline
/// (only deadlines that passed while no server ran get the start plus 60 s; a restart during a backlog
/// held writes back a minute, found by the fresh tester); once nobody swept for 5 s it does. SQLite has
/// one server per ledger: a start always moves them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starting_instance_moves_no_deadline_while_another_sweeps() {
    use ledger::command::Action;
    let a = open().await;
    for m in ["m-1", "m-2"] {
        a.ok(approve(m)).await;
        a.ok(on(
            m,
            Action::RecordIntent {
                attempt_id: att("a-1"),
                deadline_secs: Some(5),
            },
        ))
        .await;
    }
    // `a` sweeps at T0 + 4 s (nothing due yet); `b` starts at T0 + 6 s, both writes overdue.
    assert_eq!(a.engine.settle_overdue(T0 + 4_000).await.unwrap(), 0);
    let b = reopen(&a.path, Arc::new(Recorder::default()), a.clock.clone()).await;
    let moved = b
        .engine()
        .postpone_passed_deadlines(T0 + 6_000, ledger::RESTART_GRACE)
        .await
        .unwrap();
    if testkit::postgres().is_some() {
        assert_eq!(moved, 0, "another instance swept 2 s ago");
        // Nobody swept for 5 s: a start moves them.
        let moved = b
            .engine()
            .postpone_passed_deadlines(T0 + 9_000, ledger::RESTART_GRACE)
            .await
            .unwrap();
        assert_eq!(moved, 2);
    } else {
        assert_eq!(moved, 2);
    }
}
