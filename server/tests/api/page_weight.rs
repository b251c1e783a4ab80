//! What a phone downloads first (issue 30, "First load on a phone"; docs/performance.md "Page weight"): the HTML of a
//! turn page of 200 rows and of a session page at its row budget. A size, not a timing: the bytes the
//! server sends for the same data are the same on any machine.
//!
//! The rows are a realistic mix: every fourth outcome unknown (with its explanation and copy button),
//! every fourth failed, half of them with a title, a link and a resource id from their host, staff's view
//! (revisions shown).

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::spawn;

/// The turn page's first 200 rows: at most this many bytes of HTML, hydration data included. Measured
/// 269,116 on 2026-12-03 (477,658 before: 1,906 bytes of markup a row, 86,275 of hydration data); 258,052
/// on 2026-12-06, the cards written as HTML without marker comments (272,586 before). Issue 30 asked for
/// 150 KB, which is not reached (docs/performance.md "Page weight" says what a row still carries); lower this as rows
/// shrink.
const TURN_PAGE_BUDGET: usize = 262_000;

/// The session page at its row budget (500 rows: ten turns of 50): at most this many bytes of HTML,
/// hydration data included. Measured 720,273 on 2026-12-03 (1,264,417 before); 696,208 on 2026-12-06
/// (732,652 before the cards were written as HTML).
const SESSION_PAGE_BUDGET: usize = 705_000;

const STATUSES: [&str; 4] = ["completed", "failed", "outcome_unknown", "completed"];

/// `n` outcomes `{prefix}-0000`… in `turn` of `session`, as the module says.
fn turn_ops(session: &str, turn: &str, prefix: &str, n: usize) -> Vec<Value> {
    let mut ops = Vec::new();
    for i in 0..n {
        let m = format!("{prefix}-{i:04}");
        ops.push(json!({"op": "approve", "session_key": session, "logical_turn_id": turn, "mutation_id": m, "tool": "mcp__dashboards__create"}));
        ops.push(
            json!({"op": "intent", "session_key": session, "mutation_id": m, "attempt_id": "a1"}),
        );
        if i % 2 == 0 {
            ops.push(json!({"op": "metadata", "session_key": session, "mutation_id": m, "id": (4000 + i).to_string(),
                "url": format!("https://dashboards.example.com/d/{}", 4000 + i), "title": format!("Revenue dashboard {i}")}));
        }
        ops.push(json!({"op": "settle", "session_key": session, "mutation_id": m, "attempt_id": "a1", "status": STATUSES[i % 4]}));
    }
    ops
}

/// A page's weight: its bytes, its rows, the bytes of its rows' markup and of its hydration data (the
/// resources serialized in `<script>`).
struct Weight {
    total: usize,
    rows: usize,
    rows_markup: usize,
    hydration: usize,
}

fn weigh(html: &str) -> Weight {
    let rows = html.matches("class=\"timeline-row").count();
    // Each row's markup, from its `<li` to the next row's or the end of its list.
    let starts: Vec<usize> = html
        .match_indices("class=\"timeline-row")
        .map(|(i, _)| html[..i].rfind("<li").expect("a row is an li"))
        .collect();
    let rows_markup = starts
        .iter()
        .enumerate()
        .map(|(k, &start)| {
            let end_list = html[start..]
                .find("</ol>")
                .map_or(html.len(), |e| start + e);
            starts.get(k + 1).map_or(end_list, |&n| n.min(end_list)) - start
        })
        .sum();
    let hydration = html
        .split("<script")
        .skip(1)
        .filter_map(|s| s.split_once("</script>").map(|(body, _)| body))
        .filter(|body| body.contains("__RESOLVED_RESOURCES"))
        .map(str::len)
        .sum();
    Weight {
        total: html.len(),
        rows,
        rows_markup,
        hydration,
    }
}

fn figures(what: &str, w: &Weight) {
    println!(
        "figures: {what}: {} bytes of HTML, {} rows, {} bytes of rows' markup ({} a row), {} bytes of hydration data",
        w.total,
        w.rows,
        w.rows_markup,
        w.rows_markup / w.rows.max(1),
        w.hydration
    );
}

#[tokio::test]
async fn a_turn_page_of_200_rows_stays_within_its_byte_budget() {
    let app = spawn().await;
    app.batch_ok(turn_ops("phone", "t", "dash-create", 200))
        .await;
    let r = app.get("/sessions/phone/turns/t").await;
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.unwrap();
    let w = weigh(&html);
    figures("turn page of 200 rows", &w);
    assert_eq!(w.rows, 200);
    // Everything a row shows is there: the unknown's explanation and copy button, the title's link, the
    // resource, the revision, the times, the history link.
    assert_eq!(html.matches("class=\"unknown-explanation").count(), 50);
    assert!(html.contains("aria-label=\"Copy operation id dash-create-0002\""));
    assert!(html.contains("href=\"https://dashboards.example.com/d/4002\""));
    assert!(html.contains("resource 4002"));
    assert!(html.contains("data-mutation-id=\"dash-create-0199\""));
    assert!(html.contains("href=\"/sessions/phone/operations/dash-create-0199\""));
    assert!(w.hydration > 0, "the page hydrates from its data");
    assert!(
        w.total <= TURN_PAGE_BUDGET,
        "{} bytes > {TURN_PAGE_BUDGET}",
        w.total
    );
}

#[tokio::test]
async fn a_session_page_at_its_row_budget_stays_within_its_byte_budget() {
    let app = spawn().await;
    let mut ops = Vec::new();
    for t in 0..10 {
        ops.extend(turn_ops(
            "phone",
            &format!("turn-{t:02}"),
            &format!("dash-t{t:02}"),
            50,
        ));
    }
    app.batch_ok(ops).await;
    let r = app.get("/sessions/phone").await;
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.unwrap();
    let w = weigh(&html);
    figures("session page of 10 turns of 50 rows", &w);
    assert_eq!(w.rows, 500);
    assert_eq!(html.matches("class=\"unknown-explanation").count(), 120);
    assert!(html.contains("data-mutation-id=\"dash-t09-0049\""));
    assert!(w.hydration > 0, "the page hydrates from its data");
    assert!(
        w.total <= SESSION_PAGE_BUDGET,
        "{} bytes > {SESSION_PAGE_BUDGET}",
        w.total
    );
}
