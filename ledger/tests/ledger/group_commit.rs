//! Group commit (docs/ledger.md "Writing"): concurrent writers share commits, yet each is answered only
//! after the commit that holds its change, with its own result; revisions stay gapless and in order; the
//! live announcements leave in revision order; contention is answered `Busy` and changes nothing.

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use ledger::command::{Command, Settlement};
use ledger::wire::LedgerStatus as L;
use ledger::{LedgerError, Refusal};

/// Settles 64 in-flight entries from 64 concurrent tasks, plus 16 refused settles among them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_are_each_answered_with_their_own_result_and_every_revision_is_taken_once(
) {
    let h = Arc::new(open().await);
    let n = 64;
    let mut prepare = Vec::new();
    for i in 0..n {
        prepare.push(approve(&format!("m-{i}")));
        prepare.push(intent(&format!("m-{i}"), "a-1"));
    }
    for r in h.engine.apply_batch(prepare).await.unwrap() {
        r.unwrap();
    }
    assert_eq!(h.latest_revision().await, n);

    let mut tasks = Vec::new();
    for i in 0..n {
        let h1 = h.clone();
        tasks.push(tokio::spawn(async move {
            let h = h1;
            let m = format!("m-{i}");
            let settlement = [Settlement::Completed, Settlement::Failed][i as usize % 2];
            h.engine.apply(settle(&m, "a-1", settlement, None)).await
        }));
        if i % 4 == 0 {
            // A wrong attempt: refused with the entry's state, and nothing else in its group is harmed.
            let h = h.clone();
            tasks.push(tokio::spawn(async move {
                h.engine
                    .apply(settle(
                        &format!("m-{i}"),
                        "a-9",
                        Settlement::Completed,
                        None,
                    ))
                    .await
            }));
        }
    }
    let mut revisions = Vec::new();
    let mut refused = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(state) => {
                assert!(matches!(state.ledger_status, L::Completed | L::Failed));
                revisions.push(state.revision.unwrap());
            }
            // Before the right settle it names the wrong attempt; after it, the entry is no longer in flight.
            Err(LedgerError::Refused {
                refusal: Refusal::AttemptMismatch | Refusal::NotInFlight,
                current,
            }) => {
                assert_eq!(current.attempt_id.as_deref(), Some("a-1"));
                refused += 1;
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(refused, 16);
    revisions.sort();
    assert_eq!(revisions, ((n + 1)..=(2 * n)).collect::<Vec<_>>());
    assert_eq!(h.latest_revision().await, 2 * n);

    // Announced once each, in revision order.
    let announced: Vec<i64> = h.recorder.deliveries().iter().map(|d| d.revision).collect();
    assert_eq!(announced, ((n + 1)..=(2 * n)).collect::<Vec<_>>());

    // Every answered change is in the history, also after reopening the file.
    let history = h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap();
    assert_eq!(history.len(), n as usize);
    h.ledger.close().await;
    let again = reopen(&h.path, h.recorder.clone(), h.clock.clone()).await;
    let entries = again
        .sessions()
        .turn_entries(&sk(SESSION), &turn(TURN))
        .await
        .unwrap();
    assert_eq!(entries.latest_revision, 2 * n);
    assert!(entries
        .entries
        .iter()
        .all(|e| e.ledger_status.as_str() == "completed" || e.ledger_status.as_str() == "failed"));
}

/// A batch keeps its order inside a group: an approve, its intent and its settlement in one batch take
/// consecutive revisions, and a refused operation between them changes nothing.
#[tokio::test]
async fn a_batch_applies_in_order_and_a_refusal_inside_it_changes_nothing() {
    let h = open().await;
    let results = h
        .engine
        .apply_batch(vec![
            approve("m-1"),
            intent("m-1", "a-1"),
            intent("m-1", "a-2"),
            settle("m-1", "a-1", Settlement::OutcomeUnknown, None),
            settle("m-1", "a-1", Settlement::Completed, None),
        ])
        .await
        .unwrap();
    assert_eq!(results[0].as_ref().unwrap().revision, None);
    assert_eq!(results[1].as_ref().unwrap().revision, Some(1));
    assert!(matches!(
        results[2],
        Err(LedgerError::Refused {
            refusal: Refusal::AlreadyRecorded,
            ..
        })
    ));
    assert_eq!(results[3].as_ref().unwrap().revision, Some(2));
    assert!(matches!(
        results[4],
        Err(LedgerError::Refused {
            refusal: Refusal::UnknownNeedsReconciliation,
            ..
        })
    ));
    assert_eq!(h.latest_revision().await, 2);
    assert_eq!(h.recorder.count(), 1);
}

/// Another process holds SQLite's write lock longer than the write wait: every queued writer is answered
/// `Busy`, nothing changes, and once the lock is free the same writes succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_behind_another_process_lock_are_answered_busy_and_change_nothing() {
    use sqlx::Connection;
    if skipped_on_postgres("another process holding SQLite's write lock") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db").to_string_lossy().into_owned();
    let ledger = ledger::Ledger::open(
        &path,
        ledger::LedgerOptions {
            write_wait: Duration::from_millis(300),
            ..ledger::LedgerOptions::default()
        },
    )
    .await
    .unwrap();
    let engine = ledger.engine();
    engine.apply(approve("m-1")).await.unwrap();

    let mut other = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut other)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            engine.apply(approve(&format!("m-busy-{i}"))).await
        }));
    }
    for t in tasks {
        assert!(matches!(t.await.unwrap(), Err(LedgerError::Busy)));
    }
    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();
    // None of them was stored: approving them now is not a redelivery.
    for i in 0..8 {
        engine.apply(approve(&format!("m-busy-{i}"))).await.unwrap();
    }
}

/// A new entry's whole life in one batch: the attempts it had in the batch count as used, its evidence is
/// kept, and what is read back after the commit is exactly what the answers said.
#[tokio::test]
async fn a_new_entry_decided_several_times_in_one_group_is_stored_as_its_last_answer() {
    let h = open().await;
    let results = h
        .engine
        .apply_batch(vec![
            approve("m-1"),
            intent("m-1", "a-1"),
            cancel(
                "m-1",
                "a-1",
                Some(ledger::wire::Reason::PreDispatchDeadline),
            ),
            fresh("m-1", "a-1"),
            fresh("m-1", "a-2"),
            settle("m-1", "a-2", Settlement::OutcomeUnknown, None),
            reconcile("m-1", "a-2", true),
            attach("m-1", meta("419", "https://example.com/i/419", "Issue")),
            approve("m-1"),
        ])
        .await
        .unwrap();
    assert!(matches!(
        results[3],
        Err(LedgerError::Refused {
            refusal: Refusal::AttemptReused,
            ..
        })
    ));
    assert!(matches!(
        results[8],
        Err(LedgerError::Refused {
            refusal: Refusal::AlreadyRecorded,
            ..
        })
    ));
    let last = results[7].as_ref().unwrap().clone();
    assert_eq!(last.ledger_status, L::Completed);
    assert_eq!(last.revision, Some(6));
    assert_eq!(last.attempt_id.as_deref(), Some("a-2"));
    // Read back through another connection: the same state, and the attempts of the batch stay used.
    let entries = h
        .sessions
        .turn_entries(&sk(SESSION), &turn(TURN))
        .await
        .unwrap();
    assert_eq!(entries.latest_revision, 6);
    assert_eq!(entries.entries.len(), 1);
    assert_eq!(entries.entries[0].mutation_revision, Some(6));
    assert_eq!(entries.entries[0].outcome.title.as_deref(), Some("Issue"));
    let announced: Vec<i64> = h.recorder.deliveries().iter().map(|d| d.revision).collect();
    assert_eq!(announced, vec![2, 4, 5, 6]);
    // The attempts and the evidence are stored with the entry's sequence number.
    let raw = raw(&h.path).await;
    let attempts: Vec<(i64, String)> =
        sqlx::query_as("SELECT entry_seq, attempt_id FROM attempts ORDER BY attempt_id")
            .fetch_all(&raw)
            .await
            .unwrap();
    assert_eq!(attempts, vec![(1, "a-1".to_owned()), (1, "a-2".to_owned())]);
    let evidence: Vec<(i64, String, i64, String, String, i64)> = sqlx::query_as(
        "SELECT entry_seq, attempt_id, CASE WHEN completed THEN 1 ELSE 0 END, source, observed_at, \
         recorded_at FROM reconciliations",
    )
    .fetch_all(&raw)
    .await
    .unwrap();
    assert_eq!(
        evidence,
        vec![(
            1,
            "a-2".to_owned(),
            1,
            "github.issues".to_owned(),
            "2027-01-15T08:05:00Z".to_owned(),
            T0
        )]
    );
}

/// One group that writes every kind of row at once (docs/ledger.md "Writing"; on Postgres ONE statement
/// of data-modifying CTEs, "Postgres specifics"): a new session with a new turn and entry, a new turn and
/// entry in a stored session, stored entries changed in a stored turn, attempts, evidence and history
/// rows both of entries stored before the group (named by `seq`) and of entries the group inserts (found
/// by key). Every row lands on its own entry, in the order decided, with the foreign keys satisfied.
#[tokio::test]
async fn a_group_writing_every_kind_of_row_at_once_puts_each_row_on_its_own_entry() {
    let h = open().await;
    // Stored before the group: m-old in flight then outcome unknown, m-old2 cancelled before dispatch.
    for r in h
        .engine
        .apply_batch(vec![
            approve("m-old"),
            intent("m-old", "a-1"),
            settle("m-old", "a-1", Settlement::OutcomeUnknown, None),
            approve("m-old2"),
            intent("m-old2", "a-1"),
            cancel(
                "m-old2",
                "a-1",
                Some(ledger::wire::Reason::PreDispatchDeadline),
            ),
        ])
        .await
        .unwrap()
    {
        r.unwrap();
    }
    assert_eq!(h.latest_revision().await, 4);
    h.clock.advance(Duration::from_secs(1));
    let in_s2 = |c: Command| Command::new(sk("s-2"), c.key.mutation_id, c.action);
    let results = h
        .engine
        .apply_batch(vec![
            // A new session, its new turn and entry, taken to outcome unknown and reconciled.
            in_s2(approve_in("s-2", "t-2", "m-new")),
            in_s2(intent("m-new", "a-1")),
            in_s2(settle("m-new", "a-1", Settlement::OutcomeUnknown, None)),
            in_s2(reconcile("m-new", "a-1", false)),
            // A new turn and entry in the stored session.
            approve_in(SESSION, "t-3", "m-new3"),
            intent("m-new3", "a-7"),
            // Stored entries of the stored turn: evidence, a fresh attempt.
            reconcile("m-old", "a-1", true),
            fresh("m-old2", "a-2"),
        ])
        .await
        .unwrap();
    for r in &results {
        assert!(r.is_ok(), "{r:?}");
    }
    let raw = raw(&h.path).await;
    let sessions: Vec<(String, i64)> =
        sqlx::query_as("SELECT session_key, last_write_at FROM sessions ORDER BY session_key")
            .fetch_all(&raw)
            .await
            .unwrap();
    assert_eq!(
        sessions,
        vec![("s-1".to_owned(), T0 + 1000), ("s-2".to_owned(), T0 + 1000)]
    );
    let turns: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT session_key, logical_turn_id, latest_revision FROM turns \
         ORDER BY session_key, logical_turn_id",
    )
    .fetch_all(&raw)
    .await
    .unwrap();
    assert_eq!(
        turns,
        vec![
            ("s-1".to_owned(), "t-1".to_owned(), 6),
            ("s-1".to_owned(), "t-3".to_owned(), 1),
            ("s-2".to_owned(), "t-2".to_owned(), 3),
        ]
    );
    let attempts: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT e.session_key, e.mutation_id, a.attempt_id FROM attempts AS a \
         JOIN entries AS e ON e.seq = a.entry_seq ORDER BY 1, 2, 3",
    )
    .fetch_all(&raw)
    .await
    .unwrap();
    let row = |s: &str, m: &str, a: &str| (s.to_owned(), m.to_owned(), a.to_owned());
    assert_eq!(
        attempts,
        vec![
            row("s-1", "m-new3", "a-7"),
            row("s-1", "m-old", "a-1"),
            row("s-1", "m-old2", "a-1"),
            row("s-1", "m-old2", "a-2"),
            row("s-2", "m-new", "a-1"),
        ]
    );
    let evidence: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT e.session_key, e.mutation_id, r.attempt_id FROM reconciliations AS r \
         JOIN entries AS e ON e.seq = r.entry_seq ORDER BY r.id",
    )
    .fetch_all(&raw)
    .await
    .unwrap();
    assert_eq!(
        evidence,
        vec![row("s-2", "m-new", "a-1"), row("s-1", "m-old", "a-1")]
    );
    // The group's history rows, in the order decided, each on its entry, at the group's time.
    let history: Vec<(String, String, String)> = sqlx::query_as(&format!(
        "SELECT e.mutation_id, h.kind, COALESCE(CAST(h.revision AS TEXT), '-') FROM history AS h \
         JOIN entries AS e ON e.seq = h.entry_seq WHERE h.at = {} ORDER BY h.id",
        T0 + 1000
    ))
    .fetch_all(&raw)
    .await
    .unwrap();
    assert_eq!(
        history,
        vec![
            row("m-new", "approval", "-"),
            row("m-new", "intent", "1"),
            row("m-new", "settlement", "2"),
            row("m-new", "reconciliation", "3"),
            row("m-new3", "approval", "-"),
            row("m-new3", "intent", "1"),
            row("m-old", "reconciliation", "5"),
            row("m-old2", "attempt", "6"),
        ]
    );
}

/// Postgres: another instance holds a session's lock longer than the write wait. The group is answered
/// `Busy` and changes nothing; the connection its `BEGIN` ran on goes back to the pool usable (the locks
/// are taken before `BEGIN` in one query, docs/ledger.md "Postgres round trips"), so every later read and
/// write of the ledger succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_cannot_lock_its_session_is_busy_and_leaves_every_connection_usable() {
    use sqlx::Connection;
    if postgres().is_none() {
        eprintln!("skipped: Postgres only (OUTCOMES_TEST_POSTGRES)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let ledger = ledger::Ledger::open(
        &url,
        ledger::LedgerOptions {
            write_wait: Duration::from_millis(300),
            read_connections: 1,
            ..ledger::LedgerOptions::default()
        },
    )
    .await
    .unwrap();
    let engine = ledger.engine();
    let sessions = ledger.sessions();
    // A session key of its own: advisory locks are per database, shared with the other tests' schemas.
    let session = format!("s-busy-{}", std::process::id());
    let op = |c: Command| Command::new(sk(&session), c.key.mutation_id, c.action);
    engine
        .apply(approve_in(&session, TURN, "m-1"))
        .await
        .unwrap();

    let mut other = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut other).await.unwrap();
    sqlx::query(
        "SELECT pg_advisory_xact_lock(('x' || substr(encode(sha256(convert_to($1, 'UTF8')), 'hex'), \
         1, 16))::bit(64)::bigint)",
    )
    .bind(format!("ledger-session:{session}"))
    .execute(&mut other)
    .await
    .unwrap();
    for _ in 0..3 {
        assert!(matches!(
            engine.apply(op(intent("m-1", "a-1"))).await,
            Err(LedgerError::Busy)
        ));
    }
    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();

    // Nothing was written, and every connection of the pool (3) serves reads and writes again.
    for i in 0..6 {
        let entries = sessions
            .turn_entries(&sk(&session), &turn(TURN))
            .await
            .unwrap();
        assert_eq!(entries.latest_revision, i);
        let m = format!("m-{}", i + 1);
        if i > 0 {
            engine.apply(approve_in(&session, TURN, &m)).await.unwrap();
        }
        let state = engine.apply(op(intent(&m, "a-1"))).await.unwrap();
        assert_eq!(state.revision, Some(i + 1));
    }
    let _ = other.close().await;
}

/// Postgres (issue 45): `sessions` and `entries`, whose rows every group rewrites (updates that change
/// indexed columns, never HOT, so they insert into every index of their table), carry no GIN index: the
/// trigram indexes are on `sessions_search_text` and `entries_search_text` (migration `0013`), which an
/// insert fills, a change of the title or resource id updates, and a settle leaves alone (docs/ledger.md
/// "The write path on Postgres").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_rows_every_write_rewrites_carry_no_trigram_index() {
    if postgres().is_none() {
        eprintln!("skipped: Postgres only (OUTCOMES_TEST_POSTGRES)");
        return;
    }
    let h = open().await;
    h.engine
        .apply_batch(vec![approve("m-1"), intent("m-1", "a-1"), approve("m-2")])
        .await
        .unwrap()
        .into_iter()
        .for_each(|r| {
            r.unwrap();
        });
    h.engine
        .apply(settle("m-1", "a-1", Settlement::Completed, None))
        .await
        .unwrap();
    h.engine
        .apply(attach(
            "m-1",
            meta("R-7", "https://example.com/r/7", "Refund"),
        ))
        .await
        .unwrap();
    let raw = raw(&h.path).await;
    let gin: Vec<(String, String)> = sqlx::query_as(
        "SELECT tablename::text, indexname::text FROM pg_indexes \
         WHERE schemaname = current_schema() AND indexdef LIKE '% USING gin %' ORDER BY 1, 2",
    )
    .fetch_all(&raw)
    .await
    .unwrap();
    // None at all when `pg_trgm` is not available (search then scans).
    assert!(
        gin.iter()
            .all(|(t, _)| t == "entries_search_text" || t == "sessions_search_text"),
        "{gin:?}"
    );
    let texts: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT mutation_id, meta_title, meta_id FROM entries_search_text ORDER BY seq",
    )
    .fetch_all(&raw)
    .await
    .unwrap();
    assert_eq!(
        texts,
        vec![
            (
                "m-1".to_owned(),
                Some("Refund".to_owned()),
                Some("R-7".to_owned())
            ),
            ("m-2".to_owned(), None, None),
        ]
    );
    let keys: Vec<(String,)> = sqlx::query_as("SELECT session_key FROM sessions_search_text")
        .fetch_all(&raw)
        .await
        .unwrap();
    assert_eq!(keys, vec![(SESSION.to_owned(),)]);
    raw.close().await;
}
