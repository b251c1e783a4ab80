//! Streamed reads (docs/ledger.md "Reading"): history and replay read in chunks of `READ_CHUNK` entries
//! give exactly what the turn's entries say, across chunk boundaries, turns recorded out of order,
//! unpublished and legacy entries, and open unknowns at or below a cursor.

use crate::common::*;
use ledger::command::Settlement;
use ledger::ids::Cursor;
use ledger::projection::LedgerEntry;
use ledger::wire::{LedgerStatus, MutationOutcome, PublishedStatus};

/// Three turns whose entries are recorded interleaved (so recorded order across the session is not turn
/// order), 2,600 entries in all: `t-a` holds more than two chunks. Most settle; every 11th stays in
/// flight, every 13th settles unknown, every 17th is approved only (not published). Two legacy entries in
/// `t-a`.
async fn big_session(h: &Harness) {
    let turn_of = |i: usize| match (i % 7, i % 3) {
        (0, _) => "t-b",
        (_, 0) => "t-c",
        _ => "t-a",
    };
    let ids: Vec<usize> = (0..2600).collect();
    for chunk in ids.chunks(500) {
        let mut ops = Vec::new();
        for &i in chunk {
            let m = format!("m{i}");
            ops.push(approve_in(SESSION, turn_of(i), &m));
            if i % 17 == 0 {
                continue;
            }
            ops.push(intent(&m, "a1"));
            if i % 11 == 0 {
                continue;
            }
            let settlement = if i % 13 == 0 {
                Settlement::OutcomeUnknown
            } else {
                Settlement::Completed
            };
            ops.push(settle(&m, "a1", settlement, None));
        }
        for r in h.engine.apply_batch(ops).await.unwrap() {
            r.unwrap();
        }
    }
    for i in 0..2 {
        h.engine
            .import_legacy(
                &sk(SESSION),
                &LedgerEntry {
                    logical_turn_id: "t-a".into(),
                    mutation_id: format!("legacy-{i}"),
                    tool: TOOL.into(),
                    status: LedgerStatus::Completed,
                    intent_recorded: true,
                    reason: None,
                    metadata: None,
                },
            )
            .await
            .unwrap();
    }
    // Later changes move early entries to the newest revisions.
    h.ok(attach(
        "m1",
        meta("r-1", "https://example.com/r/1", "first"),
    ))
    .await;
    h.ok(reconcile("m13", "a1", true)).await;
}

#[tokio::test]
async fn history_in_chunks_is_every_published_entry_turn_by_turn_in_recorded_order() {
    let h = open().await;
    big_session(&h).await;
    let mut expected: Vec<MutationOutcome> = Vec::new();
    for t in h.sessions.turns(&sk(SESSION)).await.unwrap().turns {
        let entries = h
            .sessions
            .turn_entries(&sk(SESSION), &turn(&t.logical_turn_id))
            .await
            .unwrap();
        expected.extend(entries.entries.into_iter().map(|e| e.outcome));
    }
    let history = h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap();
    // 2,600 entries, 153 approved only, plus 2 legacy.
    assert_eq!(history.len(), 2600 - 153 + 2);
    assert_eq!(history, expected);
    let turns: Vec<&str> = history.iter().map(|o| o.logical_turn_id.as_str()).collect();
    let first_b = turns.iter().position(|t| *t == "t-b").unwrap();
    let first_c = turns.iter().position(|t| *t == "t-c").unwrap();
    // m0 is in t-b, m1 in t-a, m3 in t-c: turns in the order they were first recorded.
    assert!(turns[..first_b].iter().all(|t| *t == "t-b"));
    assert!(first_b < first_c);

    let mut chunks = h.sessions.history(&sk(SESSION)).await.unwrap();
    let mut sizes = Vec::new();
    while let Some(c) = chunks.next_chunk().await.unwrap() {
        sizes.push(c.len());
    }
    assert!(sizes.len() >= 3, "{sizes:?}");
}

/// The replay computed the slow way from the turn's entries: legacy first (full replay only), then oldest
/// revision first, with a cursor only entries after it or still unknown.
async fn naive_replay(h: &Harness, t: &str, cursor: Option<i64>) -> Vec<(Option<i64>, String)> {
    let entries = h
        .sessions
        .turn_entries(&sk(SESSION), &turn(t))
        .await
        .unwrap()
        .entries;
    let mut legacy: Vec<_> = entries
        .iter()
        .filter(|e| e.mutation_revision.is_none() && cursor.is_none())
        .map(|e| (None, e.outcome.mutation_id.clone()))
        .collect();
    let mut revisioned: Vec<_> = entries
        .iter()
        .filter_map(|e| Some((e.mutation_revision?, e)))
        .filter(|(rev, e)| {
            cursor.is_none_or(|c| *rev > c || e.outcome.status == PublishedStatus::OutcomeUnknown)
        })
        .map(|(rev, e)| (Some(rev), e.outcome.mutation_id.clone()))
        .collect();
    revisioned.sort();
    legacy.extend(revisioned);
    legacy
}

#[tokio::test]
async fn replay_in_chunks_equals_the_rule_for_every_cursor() {
    let h = open().await;
    big_session(&h).await;
    for t in ["t-a", "t-b", "t-c"] {
        let latest = h
            .sessions
            .turn_entries(&sk(SESSION), &turn(t))
            .await
            .unwrap()
            .latest_revision;
        let cursors = [
            None,
            Some(0),
            Some(1),
            Some(999),
            Some(1000),
            Some(1001),
            Some(latest - 100),
            Some(latest - 1),
            Some(latest),
        ];
        for c in cursors
            .into_iter()
            .filter(|c| c.is_none_or(|c| (0..=latest).contains(&c)))
        {
            let replay = h
                .sessions
                .replay(
                    &sk(SESSION),
                    &turn(t),
                    c.map(|c| Cursor::parse(&c.to_string()).unwrap()),
                )
                .await
                .unwrap();
            let got: Vec<_> = replay
                .events
                .iter()
                .map(|e| (e.revision, e.outcome.mutation_id.clone()))
                .collect();
            assert_eq!(got, naive_replay(&h, t, c).await, "turn {t}, cursor {c:?}");
            let top = got.iter().filter_map(|g| g.0).max().unwrap_or(0);
            assert_eq!(
                replay.final_id(),
                Some(top.max(c.unwrap_or(0))).filter(|i| *i > 0)
            );
        }
    }
}
