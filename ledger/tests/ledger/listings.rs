//! The paged listings (docs/api.md "Sessions" and "Support queue"): keyset order, filters, `total`, and
//! positions that go on after the previous page without losing or repeating an item.

use std::time::Duration;

use crate::common::*;
use ledger::command::{Action, Command, Settlement};
use ledger::ids::ToolName;
use ledger::{SessionsAfter, SessionsQuery, UnknownsAfter, UnknownsQuery};

fn tooled(session: &str, m: &str, tool: &str) -> Command {
    Command::new(
        sk(session),
        mid(m),
        Action::Approve {
            logical_turn_id: turn(TURN),
            tool: ToolName::parse(tool).unwrap(),
            commissioned_after: None,
            traceparent: None,
        },
    )
}

/// Sessions, newest activity last: `a%1` (completed, tool `x`), `a_2` (in flight), `ab` (settled unknown,
/// tool `y`) and `b` (tool `y` approved only, nothing published) at the same time, then `c` (failed).
async fn sessions_fixture() -> Harness {
    let h = open().await;
    let run = |s: &'static str, m: &'static str, tool: &'static str, end: Option<Settlement>| {
        let h = &h;
        async move {
            h.ok(tooled(s, m, tool)).await;
            h.ok(in_session(
                s,
                m,
                Action::RecordIntent {
                    attempt_id: att("a"),
                    deadline_secs: None,
                },
            ))
            .await;
            if let Some(settlement) = end {
                h.ok(in_session(
                    s,
                    m,
                    Action::Settle {
                        attempt_id: att("a"),
                        settlement,
                        reason: None,
                    },
                ))
                .await;
            }
        }
    };
    run("a%1", "m", "x", Some(Settlement::Completed)).await;
    h.clock.advance(Duration::from_secs(1));
    run("a_2", "m", "x", None).await;
    run("ab", "m", "y", Some(Settlement::OutcomeUnknown)).await;
    h.ok(tooled("b", "m", "y")).await;
    h.clock.advance(Duration::from_secs(1));
    run("c", "m", "x", Some(Settlement::Failed)).await;
    h
}

async fn keys(h: &Harness, q: SessionsQuery) -> (Vec<String>, u64, Option<SessionsAfter>) {
    let (list, next) = h.sessions.sessions(&q).await.unwrap();
    (
        list.sessions.into_iter().map(|s| s.session_key).collect(),
        list.total,
        next,
    )
}

fn q() -> SessionsQuery {
    SessionsQuery::default()
}

#[tokio::test]
async fn sessions_page_by_keyset_most_recent_first_then_by_key() {
    let h = sessions_fixture().await;
    let (all, total, next) = keys(&h, q()).await;
    assert_eq!(all, ["c", "a_2", "ab", "b", "a%1"]);
    assert_eq!((total, next), (5, None));
    let mut seen = Vec::new();
    let mut after = None;
    let mut pages = Vec::new();
    loop {
        let (page, total, next) = keys(
            &h,
            SessionsQuery {
                limit: 2,
                after: after.clone(),
                ..q()
            },
        )
        .await;
        assert_eq!(total, 5);
        pages.push(page.len());
        seen.extend(page);
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!(pages, [2, 2, 1]);
    assert_eq!(seen, all);
    // The position is the page's last session: its last write and key.
    let (_, _, next) = keys(&h, SessionsQuery { limit: 3, ..q() }).await;
    assert_eq!(
        next,
        Some(SessionsAfter {
            last_write_at: T0 + 1000,
            session_key: "ab".into()
        })
    );
}

#[tokio::test]
async fn sessions_filter_by_open_unknown_tool_and_byte_prefix_and_total_counts_all_matches() {
    let h = sessions_fixture().await;
    let has = |b| SessionsQuery {
        has_unknown: Some(b),
        ..q()
    };
    assert_eq!(keys(&h, has(true)).await.0, ["a_2", "ab"]);
    assert_eq!(keys(&h, has(false)).await.0, ["c", "b", "a%1"]);
    let tool = |t: &str| SessionsQuery {
        tool: Some(t.into()),
        ..q()
    };
    // `b` holds a `y` entry that was never published.
    assert_eq!(keys(&h, tool("y")).await.0, ["ab"]);
    assert_eq!(keys(&h, tool("x")).await.0, ["c", "a_2", "a%1"]);
    assert_eq!(keys(&h, tool("nope")).await.0, Vec::<String>::new());
    let prefix = |p: &str| SessionsQuery {
        prefix: Some(p.into()),
        ..q()
    };
    assert_eq!(keys(&h, prefix("a")).await.0, ["a_2", "ab", "a%1"]);
    // LIKE wildcards are literal bytes.
    assert_eq!(keys(&h, prefix("a%")).await.0, ["a%1"]);
    assert_eq!(keys(&h, prefix("a_")).await.0, ["a_2"]);
    assert_eq!(keys(&h, prefix("")).await.1, 5);
    assert_eq!(keys(&h, prefix("a%10")).await.1, 0);
    // Combined, paged: total counts every match, not the page.
    let (page, total, next) = keys(
        &h,
        SessionsQuery {
            limit: 1,
            has_unknown: Some(false),
            tool: Some("x".into()),
            ..q()
        },
    )
    .await;
    assert_eq!((page, total), (vec!["c".to_string()], 2));
    let (page, total, next) = keys(
        &h,
        SessionsQuery {
            limit: 1,
            after: next,
            has_unknown: Some(false),
            tool: Some("x".into()),
            ..q()
        },
    )
    .await;
    assert_eq!((page, total, next), (vec!["a%1".to_string()], 2, None));
    // Counts and turn counts are the page's sessions' own.
    let (list, _) = h
        .sessions
        .sessions(&SessionsQuery {
            prefix: Some("ab".into()),
            ..q()
        })
        .await
        .unwrap();
    assert_eq!(list.sessions[0].turn_count, 1);
    assert_eq!(list.sessions[0].counts.outcome_unknown, 1);
    assert_eq!(list.sessions[0].counts.in_flight, 0);
    // Expired sessions are never listed nor counted.
    h.clock.advance(TTL - Duration::from_millis(500));
    assert_eq!(keys(&h, q()).await.0, ["c"]);
    assert_eq!(keys(&h, q()).await.1, 1);
}

/// Issue 26: `active_after` / `active_before` keep the sessions whose last activity is in `[after, before)`
/// (docs/api.md "Sessions"), with the other filters, paged, `total` counting every match.
#[tokio::test]
async fn sessions_filter_by_last_activity_in_a_half_open_range() {
    let h = sessions_fixture().await;
    let range = |after: Option<i64>, before: Option<i64>| SessionsQuery {
        active_after: after,
        active_before: before,
        ..q()
    };
    // `a%1` at T0, `a_2`, `ab`, `b` at T0 + 1 s, `c` at T0 + 2 s.
    assert_eq!(
        keys(&h, range(Some(T0 + 1000), None)).await.0,
        ["c", "a_2", "ab", "b"]
    );
    assert_eq!(keys(&h, range(None, Some(T0 + 1000))).await.0, ["a%1"]);
    assert_eq!(keys(&h, range(None, Some(T0 + 1001))).await.1, 4);
    let (page, total, _) = keys(&h, range(Some(T0 + 1000), Some(T0 + 2000))).await;
    assert_eq!(
        (page, total),
        (vec!["a_2".to_string(), "ab".into(), "b".into()], 3)
    );
    // Empty ranges match nothing.
    assert_eq!(keys(&h, range(Some(T0 + 1000), Some(T0 + 1000))).await.1, 0);
    assert_eq!(keys(&h, range(Some(T0 + 2000), Some(T0))).await.1, 0);
    assert_eq!(keys(&h, range(Some(T0 + 2001), None)).await.1, 0);
    // With another filter, a page at a time.
    let (page, total, next) = keys(
        &h,
        SessionsQuery {
            limit: 1,
            has_unknown: Some(true),
            ..range(Some(T0 + 1000), Some(T0 + 2000))
        },
    )
    .await;
    assert_eq!((page, total), (vec!["a_2".to_string()], 2));
    let (page, total, next) = keys(
        &h,
        SessionsQuery {
            limit: 1,
            after: next,
            has_unknown: Some(true),
            ..range(Some(T0 + 1000), Some(T0 + 2000))
        },
    )
    .await;
    assert_eq!((page, total, next), (vec!["ab".to_string()], 2, None));
    // A lower bound before the retention window lists only what has not expired.
    h.clock.advance(TTL - Duration::from_millis(500));
    assert_eq!(keys(&h, range(Some(0), Some(i64::MAX))).await.0, ["c"]);
}

fn uq() -> UnknownsQuery {
    UnknownsQuery::default()
}

async fn queue_ids(h: &Harness, q: UnknownsQuery) -> (Vec<String>, u64, Option<UnknownsAfter>) {
    let (page, next) = h.sessions.open_unknowns(&q).await.unwrap();
    (
        page.matches
            .into_iter()
            .map(|m| format!("{}/{}", m.session_key, m.entry.outcome.mutation_id))
            .collect(),
        page.total,
        next,
    )
}

#[tokio::test]
async fn the_queue_pages_oldest_first_and_filters_by_tool_session_and_age() {
    let h = open().await;
    // s-1/u1 (tool x) unknown at T0; s-2/u2 (tool y) in flight at T0+10s; s-1/u3 (x) in flight at
    // T0+20s; s-1/done completed (not open).
    h.ok(tooled("s-1", "u1", "x")).await;
    h.ok(intent("u1", "a")).await;
    h.ok(settle("u1", "a", Settlement::OutcomeUnknown, None))
        .await;
    h.clock.advance(Duration::from_secs(10));
    h.ok(tooled("s-2", "u2", "y")).await;
    h.ok(in_session(
        "s-2",
        "u2",
        Action::RecordIntent {
            attempt_id: att("a"),
            deadline_secs: None,
        },
    ))
    .await;
    h.clock.advance(Duration::from_secs(10));
    h.ok(tooled("s-1", "u3", "x")).await;
    h.ok(intent("u3", "a")).await;
    h.ok(tooled("s-1", "done", "x")).await;
    h.ok(intent("done", "a")).await;
    h.ok(settle("done", "a", Settlement::Completed, None)).await;
    h.clock.advance(Duration::from_millis(5_500));
    let (all, total, next) = queue_ids(&h, uq()).await;
    assert_eq!(all, ["s-1/u1", "s-2/u2", "s-1/u3"]);
    assert_eq!((total, next), (3, None));
    // Pages of one: every item once, in order, total 3 each time.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let (page, total, next) = queue_ids(
            &h,
            UnknownsQuery {
                limit: 1,
                after,
                ..uq()
            },
        )
        .await;
        assert_eq!((page.len(), total), (1, 3));
        seen.extend(page);
        after = next;
        if after.is_none() {
            break;
        }
    }
    assert_eq!(seen, all);
    let tool = |t: &str| UnknownsQuery {
        tool: Some(t.into()),
        ..uq()
    };
    assert_eq!(queue_ids(&h, tool("x")).await.0, ["s-1/u1", "s-1/u3"]);
    assert_eq!(queue_ids(&h, tool("y")).await.1, 1);
    let session = |s: &str| UnknownsQuery {
        session_key: Some(s.into()),
        ..uq()
    };
    assert_eq!(queue_ids(&h, session("s-2")).await.0, ["s-2/u2"]);
    assert_eq!(queue_ids(&h, session("s-3")).await.1, 0);
    // Ages now: u1 25 s, u2 15 s, u3 5 s (whole seconds, as age_secs).
    let age = |secs: u64| UnknownsQuery {
        min_age_secs: Some(secs),
        ..uq()
    };
    assert_eq!(queue_ids(&h, age(0)).await.1, 3);
    assert_eq!(
        queue_ids(&h, age(5)).await.0,
        ["s-1/u1", "s-2/u2", "s-1/u3"]
    );
    assert_eq!(queue_ids(&h, age(6)).await.0, ["s-1/u1", "s-2/u2"]);
    assert_eq!(queue_ids(&h, age(15)).await.0, ["s-1/u1", "s-2/u2"]);
    assert_eq!(queue_ids(&h, age(16)).await.0, ["s-1/u1"]);
    assert_eq!(queue_ids(&h, age(26)).await.1, 0);
    assert_eq!(queue_ids(&h, age(u64::MAX)).await.1, 0);
    // A note or metadata does not move an entry's age; a reconciliation takes it out.
    h.ok(reconcile("u1", "a", true)).await;
    assert_eq!(queue_ids(&h, age(16)).await.1, 0);
    assert_eq!(queue_ids(&h, uq()).await.1, 2);
}
