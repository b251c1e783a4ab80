//! The session page's row budget and the paged turns listing (docs/api.md "Turns", docs/design.md "What
//! the person sees"): before, a session of 200 turns × 100 outcomes rendered a 25 MB page, each turn
//! showed its oldest 50 rows (the newest never appeared), and `/api/sessions/{key}/turns` answered every
//! turn at once. Also the counts: in flight is counted apart from a settled unknown.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn, TestApp};

/// The three operations that publish one settled outcome.
fn settled_ops(session: &str, turn: &str, mutation: &str, status: &str) -> [Value; 3] {
    [
        json!({"op": "approve", "session_key": session, "logical_turn_id": turn, "mutation_id": mutation, "tool": "mcp__dashboards__create"}),
        json!({"op": "intent", "session_key": session, "mutation_id": mutation, "attempt_id": "a1"}),
        json!({"op": "settle", "session_key": session, "mutation_id": mutation, "attempt_id": "a1", "status": status}),
    ]
}

/// `turns` turns `t000`… of `per_turn` outcomes `tNNN-mNNN` each in session `s`.
async fn session_of(app: &TestApp, turns: usize, per_turn: usize) {
    let mut ops = Vec::new();
    for t in 0..turns {
        for m in 0..per_turn {
            ops.extend(settled_ops(
                "s",
                &format!("t{t:03}"),
                &format!("t{t:03}-m{m:03}"),
                "completed",
            ));
        }
    }
    app.batch_ok(ops).await;
}

/// The turn ids of a turns answer, in its order.
fn ids(v: &Value) -> Vec<String> {
    v["turns"]
        .as_array()
        .unwrap_or_else(|| panic!("turns in {v}"))
        .iter()
        .map(|t| t["logical_turn_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The `number` of each turn of a turns page, in its order.
fn numbers(page: &Value) -> Vec<u64> {
    page["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["number"].as_u64().unwrap())
        .collect()
}

fn counts(completed: u64, failed: u64, unknown: u64, in_flight: u64) -> Value {
    json!({"completed": completed, "failed": failed, "not_executed": 0, "outcome_unknown": unknown, "in_flight": in_flight})
}

#[tokio::test]
async fn the_turns_listing_is_paged_oldest_or_newest_first_with_next_and_total() {
    let app = spawn().await;
    // t0: a completed; t1: b failed; t2: c in flight; t3: d unknown; t4: e completed, f completed.
    app.settled("s", "t0", "a", "completed").await;
    app.settled("s", "t1", "b", "failed").await;
    // Another session's turn in between: numbers count this session's turns only.
    app.settled("other", "t1", "z", "completed").await;
    app.start("s", "t2", "c").await;
    app.settled("s", "t3", "d", "outcome_unknown").await;
    app.settled("s", "t4", "e", "completed").await;
    app.settled("s", "t4", "f", "completed").await;
    let whole = counts(3, 1, 2, 1);

    let (s, p1) = app.get_json("/api/sessions/s/turns?limit=2").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(ids(&p1), ["t0", "t1"]);
    assert_eq!(numbers(&p1), [1, 2]);
    assert_eq!(p1["total"], 5);
    assert_eq!(p1["counts"], whole);
    assert_eq!(p1["session_key"], "s");
    assert_eq!(p1["turns"][1]["counts"], counts(0, 1, 0, 0));
    let next = p1["next"].as_str().unwrap().to_owned();
    let (s, p2) = app
        .get_json(&format!("/api/sessions/s/turns?limit=2&after={next}"))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(ids(&p2), ["t2", "t3"]);
    assert_eq!(numbers(&p2), [3, 4]);
    assert_eq!(p2["turns"][0]["counts"], counts(0, 0, 1, 1));
    assert_eq!(p2["turns"][1]["counts"], counts(0, 0, 1, 0));
    let next = p2["next"].as_str().unwrap().to_owned();
    let (_, p3) = app
        .get_json(&format!("/api/sessions/s/turns?limit=2&after={next}"))
        .await;
    assert_eq!(ids(&p3), ["t4"]);
    assert_eq!(numbers(&p3), [5]);
    assert_eq!(p3["turns"][0]["counts"], counts(2, 0, 0, 0));
    assert_eq!(p3["next"], Value::Null);
    assert_eq!(p3["total"], 5);

    // Newest first: the page the session page reads.
    let (_, n1) = app
        .get_json("/api/sessions/s/turns?order=newest&limit=3")
        .await;
    assert_eq!(ids(&n1), ["t4", "t3", "t2"]);
    assert_eq!(numbers(&n1), [5, 4, 3]);
    assert_eq!(n1["total"], 5);
    assert_eq!(n1["counts"], whole);
    let newest_next = n1["next"].as_str().unwrap().to_owned();
    let (_, n2) = app
        .get_json(&format!(
            "/api/sessions/s/turns?order=newest&limit=3&after={newest_next}"
        ))
        .await;
    assert_eq!(ids(&n2), ["t1", "t0"]);
    assert_eq!(numbers(&n2), [2, 1]);
    assert_eq!(n2["next"], Value::Null);

    // Without parameters: the first 200 turns (here all five), oldest first.
    let (_, all) = app.get_json("/api/sessions/s/turns").await;
    assert_eq!(ids(&all), ["t0", "t1", "t2", "t3", "t4"]);
    assert_eq!(numbers(&all), [1, 2, 3, 4, 5]);
    assert_eq!(all["next"], Value::Null);
    assert_eq!(all["last_activity"], p1["last_activity"]);

    // Errors, 400 before 404; a cursor of the other order or of another listing is not a cursor here.
    let entries_cursor = app
        .get_json("/api/sessions/s/turns/t4/entries?limit=1")
        .await
        .1["next"]
        .as_str()
        .unwrap()
        .to_owned();
    for (query, code, field) in [
        ("limit=0", "invalid_parameter", "limit"),
        ("limit=1001", "invalid_parameter", "limit"),
        ("limit=x", "invalid_parameter", "limit"),
        ("order=sideways", "invalid_parameter", "order"),
        ("after=bm90IGEgY3Vyc29y", "invalid_cursor", "after"),
        (
            &format!("order=newest&after={next}") as &str,
            "invalid_cursor",
            "after",
        ),
        (&format!("after={newest_next}"), "invalid_cursor", "after"),
        (
            &format!("after={entries_cursor}"),
            "invalid_cursor",
            "after",
        ),
    ] {
        for session in ["s", "nobody"] {
            let (s, v) = app
                .get_json(&format!("/api/sessions/{session}/turns?{query}"))
                .await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{query}: {v}");
            assert_eq!(v["error"]["code"], code, "{query}");
            assert_eq!(v["error"]["field"], field, "{query}");
        }
    }
    let (s, v) = app.get_json("/api/sessions/nobody/turns?limit=2").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], "session_not_found");
}

#[tokio::test]
async fn the_turns_listing_answers_at_most_200_turns_by_default() {
    let app = spawn().await;
    session_of(&app, 201, 1).await;
    let (s, v) = app.get_json("/api/sessions/s/turns").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["turns"].as_array().unwrap().len(), 200);
    assert_eq!(v["total"], 201);
    assert_eq!(v["counts"], counts(201, 0, 0, 0));
    let next = v["next"].as_str().unwrap().to_owned();
    let (_, rest) = app
        .get_json(&format!("/api/sessions/s/turns?after={next}"))
        .await;
    assert_eq!(ids(&rest), ["t200"]);
    assert_eq!(rest["next"], Value::Null);
}

#[tokio::test]
async fn a_turns_entries_read_newest_first_with_the_turns_counts_on_a_first_read() {
    let app = spawn().await;
    app.settled("s", "t", "a", "completed").await;
    app.settled("s", "t", "b", "failed").await;
    app.start("s", "t", "c").await;
    app.settled("s", "t", "d", "outcome_unknown").await;
    let mutations = |v: &Value| -> Vec<String> {
        v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["outcome"]["mutation_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (s, v) = app
        .get_json("/api/sessions/s/turns/t/entries?order=newest&limit=2")
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(mutations(&v), ["d", "c"]);
    assert_eq!(v["counts"], counts(1, 1, 2, 1));
    let next = v["next"].as_str().unwrap().to_owned();
    let (_, v2) = app
        .get_json(&format!(
            "/api/sessions/s/turns/t/entries?order=newest&limit=2&after={next}"
        ))
        .await;
    assert_eq!(mutations(&v2), ["b", "a"]);
    assert_eq!(v2["next"], Value::Null);
    // Only a first read carries the counts.
    assert!(v2.get("counts").is_none(), "{v2}");
    let (_, first) = app.get_json("/api/sessions/s/turns/t/entries").await;
    assert_eq!(mutations(&first), ["a", "b", "c", "d"]);
    assert_eq!(first["counts"], counts(1, 1, 2, 1));
    let (_, since) = app
        .get_json("/api/sessions/s/turns/t/entries?after_revision=1")
        .await;
    assert!(since.get("counts").is_none(), "{since}");
    // A cursor of one order is not a cursor of the other.
    let (s, e) = app
        .get_json(&format!("/api/sessions/s/turns/t/entries?after={next}"))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["code"], "invalid_cursor");
    let (s, e) = app
        .get_json("/api/sessions/s/turns/t/entries?order=oldest-first")
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["field"], "order");
}

/// The issue's case: 200 turns of 100 outcomes. The page keeps to its row budget (500 rows): the
/// newest turns with their newest rows, and says how many earlier turns it leaves out.
#[tokio::test]
async fn the_session_page_of_200_turns_of_100_outcomes_stays_within_its_row_budget() {
    let app = spawn().await;
    session_of(&app, 200, 100).await;
    let r = app.get("/sessions/s").await;
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.unwrap();
    let rows = html.matches("class=\"timeline-row").count();
    println!(
        "figures: session page of 200 turns x 100 outcomes: {} bytes, {rows} rows",
        html.len()
    );
    assert!(rows <= 500, "{rows} rows");
    assert_eq!(rows, 500);
    // Before: 25 MB. The bound is generous; the page is about 1 MB.
    assert!(html.len() < 2_500_000, "{} bytes", html.len());
    // The newest turn with its newest row; ten turns of 50 rows; 190 earlier turns left out, linked.
    assert!(html.contains("data-turn-id=\"t199\""));
    assert!(html.contains("data-mutation-id=\"t199-m099\""));
    assert!(!html.contains("data-mutation-id=\"t199-m049\""));
    assert!(html.contains("data-turn-id=\"t190\""));
    assert!(!html.contains("data-turn-id=\"t189\""));
    assert!(html.contains("190 earlier turns are not shown here"));
    assert!(html.contains("href=\"/sessions/s/turns\""));
    assert!(html.contains("Turn 191 · "));
    assert!(html.contains(
        "50 earlier outcomes of this turn are not shown here (the newest 50 of 100 are)."
    ));
    // The summary still counts the whole session.
    assert!(html.contains("20000 completed"), "summary");

    // The session's turns, a page at a time, without JavaScript.
    let r = app.get("/sessions/s/turns").await;
    assert_eq!(r.status(), StatusCode::OK);
    let list = r.text().await.unwrap();
    assert!(list.contains("Showing 200 of 200 turns, oldest first"));
    assert!(list.contains("href=\"/sessions/s/turns/t000\""));
    assert!(list.len() < 1_000_000, "{} bytes", list.len());
}

/// 61 outcomes in one turn: the page shows the newest 50, so the 61st is there and the first 11 are
/// one click away.
#[tokio::test]
async fn a_turn_of_61_outcomes_shows_its_newest_rows_on_the_session_page() {
    let app = spawn().await;
    let mut ops = Vec::new();
    for m in 0..61 {
        ops.extend(settled_ops("s", "t", &format!("m{m:02}"), "completed"));
    }
    app.batch_ok(ops).await;
    let html = app.get("/sessions/s").await.text().await.unwrap();
    assert!(html.contains("data-mutation-id=\"m60\""));
    assert!(html.contains("data-mutation-id=\"m11\""));
    assert!(!html.contains("data-mutation-id=\"m10\""));
    assert!(html.contains(
        "11 earlier outcomes of this turn are not shown here (the newest 50 of 61 are)."
    ));
    assert!(html.contains("href=\"/sessions/s/turns/t\""));
}

/// In flight and unknown are different words on screen (issue 23, item 10): a turn with one in-flight
/// row and no settled unknown shows "In flight 1" and no unknown count.
#[tokio::test]
async fn an_in_flight_row_is_counted_in_flight_not_unknown() {
    let app = spawn().await;
    app.settled("s", "t", "a", "completed").await;
    app.start("s", "t", "b").await;
    let html = app.get("/sessions/s").await.text().await.unwrap();
    assert!(html.contains("data-count=\"in_flight\""), "{html}");
    assert!(!html.contains("data-count=\"outcome_unknown\""));
    assert!(!html.contains("in flight)"));
    assert!(html.contains("1 completed, 1 in flight"));
    let turn = app.get("/sessions/s/turns/t").await.text().await.unwrap();
    assert!(turn.contains("data-filter=\"in_flight\""));
    // A settled unknown next to it is counted once, as unknown.
    app.settled("s", "t", "c", "outcome_unknown").await;
    let html = app.get("/sessions/s").await.text().await.unwrap();
    assert!(html.contains("data-count=\"outcome_unknown\""));
    assert!(html.contains("1 completed, 1 in flight, 1 unknown"));
}

/// The end user's first screen (docs/design.md "What the person sees"): through a viewer link, the
/// session page opens on the counts and each unknown outcome by its title (else its tool in words, the
/// raw name in `title`), its turn and its id, with the server's `--support-contact` as the link beside
/// it and the explanation behind "What does unknown mean?"; without a contact the page names "the
/// support of the service you used".
#[tokio::test]
async fn a_viewers_first_screen_names_each_unknown_its_turn_and_where_to_quote_it() {
    use crate::helpers::access::{cookie, get};
    use server::serve::AccessArg;
    let url: url::Url = "https://help.example.com/agents".parse().unwrap();
    let with = crate::helpers::with_staff(|a| {
        a.access = AccessArg::SignedIn;
        a.support_contact = Some(url);
    })
    .await;
    let without = crate::helpers::server(AccessArg::SignedIn).await;
    for app in [&with, &without] {
        app.settled("chat", "turn-1", "op-done", "completed").await;
        app.settled("chat", "turn-2", "op-refund", "outcome_unknown")
            .await;
        let (s, _) = app
            .step(
                "chat",
                "op-refund",
                "metadata",
                json!({"title": "退款已处理"}),
            )
            .await;
        assert_eq!(s, StatusCode::OK);
        // In flight (approved and started): counted, not listed as unknown.
        app.start("chat", "turn-2", "op-jira").await;
    }
    // The helpers' tool is `mcp__dashboards__create`: a second unknown without a title reads in words.
    for app in [&with, &without] {
        app.settled("chat", "turn-3", "op-untitled", "outcome_unknown")
            .await;
    }
    async fn page(app: &TestApp) -> String {
        let v = cookie("outcomes_viewer", &app.viewer_token("chat").await);
        let got = get(app, "/sessions/chat", &[v]).await;
        assert_eq!(got.status, StatusCode::OK);
        // Without the hydration markers between a text and what follows it.
        got.body.replace("<!>", "")
    }
    let html = page(&with).await;
    assert!(
        html.contains(
            r#"<meta name="support-contact" content="https://help.example.com/agents"/>"#
        ) || html
            .contains(r#"<meta name="support-contact" content="https://help.example.com/agents">"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<meta name="support-label" content="help.example.com""#),
        "{html}"
    );
    // The summary: counts, then each unknown by what it was, its turn and its id, in recorded order.
    let summary = &html[html.find("session-summary").expect("summary")..];
    let summary = &summary[..summary.find("</section>").expect("summary's end")];
    assert!(
        summary.contains("1 completed, 1 in flight, 2 unknown"),
        "{summary}"
    );
    let refund = summary
        .find("<bdi>退款已处理</bdi>")
        .unwrap_or_else(|| panic!("the title in {summary}"));
    let untitled = summary
        .find("<bdi>dashboards · create</bdi>")
        .expect("the tool in words");
    assert!(refund < untitled, "{summary}");
    assert!(
        summary.contains(r#"title="mcp__dashboards__create""#),
        "{summary}"
    );
    assert!(
        summary.contains(r##"href="#turn-2" class="summary-turn">Turn 2</a>"##),
        "{summary}"
    );
    assert!(
        summary.contains(r##"href="#turn-3" class="summary-turn">Turn 3</a>"##),
        "{summary}"
    );
    assert!(summary.contains(">op-refund</code>"), "{summary}");
    assert!(
        summary.contains(r#"href="/sessions/chat/operations/op-refund""#),
        "{summary}"
    );
    assert!(
        summary.contains(r#"<a href="https://help.example.com/agents" rel="external noopener noreferrer" target="_blank" class="support-contact underline underline-offset-2">help.example.com</a>"#),
        "{summary}"
    );
    // The notice is one sentence, the rest behind a disclosure.
    assert!(html.contains("<summary class=\"cursor-pointer underline underline-offset-2\">What does unknown mean?</summary>"), "{html}");
    // Each unknown card names the contact too.
    assert!(html.contains(r#"Quote the operation id below to <a class="support-contact" href="https://help.example.com/agents""#), "{html}");
    // Without a contact: words, no link, no meta.
    let html = page(&without).await;
    assert!(!html.contains("support-contact\" content"), "{html}");
    assert!(
        html.contains("the support of the service you used"),
        "{html}"
    );
    assert!(!html.contains("help.example.com"), "{html}");
}
