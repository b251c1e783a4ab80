//! Claims' rate limit and the history's pages (docs/api.md "Claims", "Operation history"): the 11th
//! claim or release of a minute is refused and changes nothing, as JSON and as a form; the history API
//! pages with `limit`, `after` and `order`, a viewer's pages holding only what it sees; the operation
//! page shows the newest 100 changes and links to older ones.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ledger::command::{Action, Actor, Command};
use ledger::ids::{MutationId, SessionKey};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::access::plain;
use crate::helpers::operator::{
    as_viewer_reads, error, get, get_text, history_path, notes, post, signed_in, snapshot, Who,
};
use crate::helpers::{form, spawn, TestApp, TOKEN};

fn claim_path(session: &str, mutation: &str) -> String {
    format!("/api/sessions/{session}/mutations/{mutation}/claim")
}

/// `count` claim and release rows on `session`/`mutation` (an even number: it ends released), written
/// straight through the ledger by as many staff members as it takes to stay under the rate limit (10
/// rows each, in one transaction each).
async fn storm(app: &TestApp, session: &str, mutation: &str, count: usize) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let mut left = count;
    while left > 0 {
        let who = NEXT.fetch_add(1, Ordering::Relaxed);
        let n = left.min(10);
        let ops = (0..n)
            .map(|i| {
                Command::new(
                    SessionKey::parse(session.to_owned()).unwrap(),
                    MutationId::parse(mutation.to_owned()).unwrap(),
                    if i % 2 == 0 {
                        Action::Claim
                    } else {
                        Action::Release
                    },
                )
            })
            .collect();
        let results = app
            .state
            .engine
            .apply_batch_as(Actor::Staff(format!("storm-{who}")), ops)
            .await
            .unwrap();
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        left -= n;
    }
}

/// A claim or release as `who`: status, `Retry-After` (when sent) and the JSON body.
async fn claim_call(
    app: &TestApp,
    who: Who<'_>,
    take: bool,
    path: &str,
) -> (StatusCode, Option<u64>, Value) {
    let url = format!("{}{path}", app.base);
    let req = if take {
        plain()
            .post(url)
            .header("content-type", "application/json")
            .body("{}")
    } else {
        plain().delete(url)
    };
    let r = who.apply(app, req).send().await.unwrap();
    let status = r.status();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
    (status, retry, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_eleventh_claim_or_release_of_a_minute_is_refused_with_retry_after_and_changes_nothing()
{
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    app.settled("s", "t", "other", "outcome_unknown").await;
    let ada = app.staff_token().await;
    app.add_staff("bob", "bob's long password").await;
    let bob = app.staff_token_of("bob").await;
    let path = claim_path("s", "m");

    let started = Instant::now();
    for _ in 0..5 {
        let (s, retry, body) = claim_call(&app, Who::Bearer(&ada), true, &path).await;
        assert_eq!((s, retry), (StatusCode::CREATED, None), "{body}");
        let (s, retry, _) = claim_call(&app, Who::Bearer(&ada), false, &path).await;
        assert_eq!((s, retry), (StatusCode::NO_CONTENT, None));
    }
    let before = snapshot(&app, "s", "t", "m").await;
    // The 11th and 12th: 429 with Retry-After (until the first of the ten is 60 s old), nothing changed.
    for take in [true, false] {
        let (s, retry, body) = claim_call(&app, Who::Bearer(&ada), take, &path).await;
        let elapsed = started.elapsed().as_secs();
        assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert_eq!(
            body,
            json!({"error": {"code": "too_many_claims", "message": "you claimed or released this operation 10 times in the last minute; nothing was changed, try again after Retry-After seconds"}})
        );
        let retry = retry.expect("Retry-After");
        assert!(
            (60 - elapsed.min(59) - 1..=60).contains(&retry),
            "Retry-After {retry} after {elapsed} s"
        );
    }
    assert_eq!(snapshot(&app, "s", "t", "m").await, before);
    // A signed-in browser's form: the same 429 and Retry-After, as a page saying so.
    let cookie = app.sign_in().await;
    let r = plain()
        .post(format!("{}/sessions/s/operations/m/claim", app.base))
        .header("cookie", &cookie)
        .header("origin", &app.base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("next", "/unknowns")]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let page = r.text().await.unwrap();
    assert!(
        page.contains("The operation was not claimed.")
            && page.contains(&format!(
                "You claimed or released this operation 10 times in the last minute. Nothing was changed: wait {retry} seconds, then try again."
            )),
        "{page}"
    );
    assert_eq!(snapshot(&app, "s", "t", "m").await, before);
    // Another staff member on this operation, and ada on another one, are not limited by ada's rows.
    let (s, _, _) = claim_call(&app, Who::Bearer(&bob), true, &path).await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _, _) = claim_call(&app, Who::Bearer(&ada), true, &claim_path("s", "other")).await;
    assert_eq!(s, StatusCode::CREATED);
    // The 404 comes first; a note is no claim.
    let (s, _, body) = claim_call(&app, Who::Bearer(&ada), true, &claim_path("s", "nope")).await;
    assert_eq!(
        error(s, &body),
        (StatusCode::NOT_FOUND, Some("mutation_not_found"), None)
    );
    let (s, _) = post(
        &app,
        Who::Bearer(&ada),
        &notes("s", "m"),
        json!({"text": "still on it"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
}

/// The changes of every page of `path` (with `query`, then `after` each `next`), as `who` reads them.
async fn pages(app: &TestApp, who: Who<'_>, path: &str, query: &str) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let url = match &after {
            None => format!("{path}?{query}"),
            Some(a) => format!("{path}?{query}&after={a}"),
        };
        let (s, body) = get(app, who, &url).await;
        assert_eq!(s, StatusCode::OK, "{url}: {body}");
        out.push(body["changes"].as_array().unwrap().clone());
        match &body["next"] {
            Value::Null => return out,
            Value::String(n) => after = Some(n.clone()),
            other => panic!("next {other}"),
        }
    }
}

#[tokio::test]
async fn the_history_api_pages_with_limit_after_and_order_and_a_viewer_pages_only_what_it_sees() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    storm(&app, "s", "m", 6).await;
    let (s, body) = app.step(
        "s",
        "m",
        "reconciliation",
        json!({"attempt_id": "a1", "completed": true, "evidence": {"source": "payments-api", "reference": "re_1", "observed_at": "2026-11-29T10:00:00Z"}}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    storm(&app, "s", "m", 4).await;
    let host = Who::Bearer(TOKEN);
    let path = history_path("s", "m");

    // Without limit: every change (here 14, under the default of 500), and `next` null.
    let (s, whole) = get(&app, host, &path).await;
    assert_eq!(s, StatusCode::OK);
    let all = whole["changes"].as_array().unwrap().clone();
    let kinds: Vec<&str> = all.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "approval",
            "intent",
            "settlement",
            "claim",
            "release",
            "claim",
            "release",
            "claim",
            "release",
            "reconciliation",
            "claim",
            "release",
            "claim",
            "release"
        ]
    );
    assert_eq!(whole["next"], Value::Null);

    // Pages of 4, oldest first: the same rows, in order; each page keeps the operation's fields.
    let (_, first) = get(&app, host, &format!("{path}?limit=4")).await;
    assert_eq!(first["changes"].as_array().unwrap().as_slice(), &all[..4]);
    assert_eq!(
        (
            &first["session_key"],
            &first["mutation_id"],
            &first["commissioned"]
        ),
        (&json!("s"), &json!("m"), &json!([]))
    );
    let next = first["next"].as_str().unwrap().to_owned();
    let (_, second) = get(&app, host, &format!("{path}?limit=4&after={next}")).await;
    assert_eq!(second["changes"].as_array().unwrap().as_slice(), &all[4..8]);
    let paged = pages(&app, host, &path, "limit=4").await;
    assert_eq!(paged.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4, 4, 2]);
    assert_eq!(paged.concat(), all);
    // Exactly a page's worth: one page, no next.
    assert_eq!(pages(&app, host, &path, "limit=14").await.len(), 1);
    // Newest first: the same rows reversed.
    let newest = pages(&app, host, &path, "order=newest&limit=5").await;
    assert_eq!(newest.iter().map(Vec::len).collect::<Vec<_>>(), [5, 5, 4]);
    let mut reversed = newest.concat();
    reversed.reverse();
    assert_eq!(reversed, all);

    // A viewer: pages made of the rows it sees only, and no next once none of those follow (claims
    // follow the reconciliation).
    let cookie = app.viewer("s").await;
    let viewer = Who::CookieNoOrigin(&cookie);
    let seen = as_viewer_reads(&whole)["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] != "claim" && c["kind"] != "release")
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(seen.len(), 4);
    let viewed = pages(&app, viewer, &path, "limit=2").await;
    assert_eq!(viewed.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2]);
    assert_eq!(viewed.concat(), seen);
    let viewed = pages(&app, viewer, &path, "limit=3&order=newest").await;
    assert_eq!(viewed.iter().map(Vec::len).collect::<Vec<_>>(), [3, 1]);

    // Refusals: 400 naming the parameter, before the session's 404.
    // A cursor of the turns listing (`{"l":"turns","seq":1}`), as that listing writes it.
    let turns_cursor = "eyJsIjoidHVybnMiLCJzZXEiOjF9";
    let newest_cursor = {
        let (_, page) = get(&app, host, &format!("{path}?order=newest&limit=1")).await;
        page["next"].as_str().unwrap().to_owned()
    };
    for (query, code, field) in [
        ("limit=0", "invalid_parameter", "limit"),
        ("limit=1001", "invalid_parameter", "limit"),
        ("limit=-1", "invalid_parameter", "limit"),
        ("limit=ten", "invalid_parameter", "limit"),
        ("order=sideways", "invalid_parameter", "order"),
        ("after=garbage", "invalid_cursor", "after"),
        ("after=", "invalid_cursor", "after"),
        (&format!("after={turns_cursor}"), "invalid_cursor", "after"),
        (&format!("after={newest_cursor}"), "invalid_cursor", "after"),
    ] {
        for p in [path.clone(), history_path("nobody", "m")] {
            let (s, body) = get(&app, host, &format!("{p}?{query}")).await;
            assert_eq!(
                error(s, &body),
                (StatusCode::BAD_REQUEST, Some(code), Some(field)),
                "{p}?{query}: {body}"
            );
        }
    }
    let (s, body) = get(&app, host, &format!("{path}?limit=1000")).await;
    assert_eq!(
        (s, body["changes"].as_array().unwrap().len()),
        (StatusCode::OK, 14)
    );
    // A cursor belongs to its operation: one of `m` is no position in `m2`'s history (nor in `m` of
    // another session), however its row id compares.
    app.settled("s", "t", "m2", "completed").await;
    let (_, page) = get(&app, host, &format!("{path}?limit=1")).await;
    let of_m = page["next"].as_str().unwrap().to_owned();
    for p in [history_path("s", "m2"), history_path("nobody", "m")] {
        let (s, body) = get(&app, host, &format!("{p}?limit=1&after={of_m}")).await;
        assert_eq!(
            error(s, &body),
            (
                StatusCode::BAD_REQUEST,
                Some("invalid_cursor"),
                Some("after")
            ),
            "{p}: {body}"
        );
    }
    let (s, body) = get(&app, host, &format!("{path}?limit=1&after={of_m}")).await;
    assert_eq!(
        (s, body["changes"][0]["kind"].as_str()),
        (StatusCode::OK, Some("intent"))
    );
}

#[tokio::test]
async fn without_limit_the_history_answers_500_changes_and_the_export_every_one() {
    let app = spawn().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    storm(&app, "s", "m", 600).await;
    let (s, first) = get(&app, Who::Nobody, &history_path("s", "m")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(first["changes"].as_array().unwrap().len(), 500);
    let next = first["next"].as_str().unwrap();
    let (_, rest) = get(
        &app,
        Who::Nobody,
        &format!("{}?after={next}", history_path("s", "m")),
    )
    .await;
    assert_eq!(
        (rest["changes"].as_array().unwrap().len(), &rest["next"]),
        (103, &Value::Null)
    );
    // The export's line holds every change of the operation.
    let r = app.get("/api/sessions/s/export?history=true").await;
    assert_eq!(r.status(), StatusCode::OK);
    let body = r.text().await.unwrap();
    let line: Value = serde_json::from_str(body.lines().last().unwrap()).unwrap();
    assert_eq!(line["changes"].as_array().unwrap().len(), 603);
    assert_eq!(line["next"], Value::Null);
    let mut both = first["changes"].as_array().unwrap().clone();
    both.extend(rest["changes"].as_array().unwrap().iter().cloned());
    assert_eq!(&both, line["changes"].as_array().unwrap());
}

/// The `(kind, actor)` of every change row of an operation page, in page order, and the href of its
/// "Older changes →" link, if any.
fn page_rows(html: &str) -> (Vec<(String, String)>, Option<String>) {
    let attr = |tag: &str, name: &str| {
        let tag = format!(" {tag}");
        let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[start..start + tag[start..].find('"').unwrap()].to_owned()
    };
    let rows = html
        .split("<li ")
        .skip(1)
        .map(|part| &part[..part.find('>').unwrap()])
        .filter(|tag| tag.contains("class=\"change relative\""))
        .map(|tag| (attr(tag, "data-kind"), attr(tag, "data-actor")))
        .collect();
    let older = html.find(">Older changes →").map(|end| {
        let tag = &html[html[..end].rfind("<a ").unwrap()..end];
        attr(tag, "href").replace("&amp;", "&")
    });
    (rows, older)
}

#[tokio::test]
async fn the_operation_page_shows_the_newest_100_changes_and_links_to_older_ones() {
    let app = spawn().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    storm(&app, "s", "m", 300).await;
    let (_, whole) = get(
        &app,
        Who::Nobody,
        &format!("{}?limit=1000", history_path("s", "m")),
    )
    .await;
    let all: Vec<(String, String)> = whole["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["actor"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(all.len(), 303);

    let r = app.get("/sessions/s/operations/m").await;
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.unwrap();
    let (rows, older) = page_rows(&html);
    // The newest 100, oldest first, and where the operation stands (the storm's rows carry it).
    assert_eq!(rows.as_slice(), &all[203..]);
    assert!(html.contains("The newest 100 changes of this operation, oldest first"));
    assert!(
        html.contains("The result of this write is not established"),
        "the card"
    );
    assert!(html.len() < 400_000, "{} bytes", html.len());
    let mut older = older.expect("a link to older changes");
    assert!(
        older.starts_with("/sessions/s/operations/m?history_after="),
        "{older}"
    );
    // Older windows, each linking on, until the first change.
    let mut shown = rows;
    for expected in [103..203, 3..103, 0..3] {
        let r = app.get(&older).await;
        assert_eq!(r.status(), StatusCode::OK, "{older}");
        let html = r.text().await.unwrap();
        let (rows, next) = page_rows(&html);
        assert_eq!(rows.as_slice(), &all[expected.clone()], "{older}");
        assert!(html.contains("Older changes</h2>"));
        assert!(html.contains("href=\"/sessions/s/operations/m\""));
        shown.splice(0..0, rows);
        match next {
            Some(n) => older = n,
            None => {
                assert_eq!(expected, 0..3);
                break;
            }
        }
    }
    assert_eq!(shown, all);
    // A cursor that is none: the page says the read was refused.
    let r = app
        .get("/sessions/s/operations/m?history_after=nonsense")
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}

/// Who holds the claim is the history's `claim`, whatever page of changes is read: a claim followed by
/// 101 notes is outside the operation page's newest 100 changes, and the page still says who is on it
/// (it said "Nobody is on it", found by the fresh tester). A viewer gets no `claim`.
#[tokio::test]
async fn the_claim_holder_is_known_whatever_page_of_the_history_is_read() {
    let app = signed_in().await;
    app.settled("s", "t", "m", "outcome_unknown").await;
    let key = || SessionKey::parse("s".to_owned()).unwrap();
    let m = || MutationId::parse("m".to_owned()).unwrap();
    app.state
        .engine
        .apply_as(
            Actor::Staff("ada".into()),
            Command::new(key(), m(), Action::Claim),
        )
        .await
        .unwrap();
    let notes: Vec<Command> = (0..101)
        .map(|i| {
            Command::new(
                key(),
                m(),
                Action::Note {
                    text: format!("note {i}"),
                },
            )
        })
        .collect();
    let results = app
        .state
        .engine
        .apply_batch_as(Actor::Staff("grace".into()), notes)
        .await
        .unwrap();
    assert!(results.iter().all(Result::is_ok));
    let host = Who::Bearer(TOKEN);
    let path = history_path("s", "m");
    let (s, page) = get(&app, host, &format!("{path}?order=newest&limit=100")).await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert!(page["changes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["kind"] == "note"));
    assert_eq!(page["claim"]["by"], "ada", "{}", page["claim"]);
    let cookie = app.viewer("s").await;
    let (s, viewed) = get(&app, Who::CookieNoOrigin(&cookie), &path).await;
    assert_eq!(s, StatusCode::OK);
    assert!(viewed.get("claim").is_none(), "{viewed}");
    // The page: who is on it, though the claim's row is not among the newest 100 shown.
    let ada = app.staff_token().await;
    let (s, _, html) = get_text(&app, Who::Bearer(&ada), "/sessions/s/operations/m").await;
    assert_eq!(s, StatusCode::OK);
    assert!(html.contains("data-by=\"ada\""), "the claim box names ada");
    assert!(!html.contains("Nobody is on it."));
}
