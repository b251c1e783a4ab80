//! Reliability suite: the built `outcomes` binary run as an operator runs it, under faults and load.
//!
//! Each test has a short variant that runs in every `cargo test` (CI) and a long variant that runs when
//! `OUTCOMES_SOAK=1` (`scripts/soak.sh` runs the long variants in release mode and prints their figures).
//!
//! | test | proves |
//! |---|---|
//! | [`crash_durability_under_kill_9_during_concurrent_writers`] | every settlement answered 2xx survives `kill -9`; per-turn revisions are unique and never go backwards; the full SSE replay equals the history |
//! | [`reliability_lock::a_second_serve_on_the_same_sqlite_file_is_refused_at_start_and_the_first_keeps_serving`](crate::reliability_lock::a_second_serve_on_the_same_sqlite_file_is_refused_at_start_and_the_first_keeps_serving) | two `serve` started at once on one SQLite file: one serves and takes writes, the other exits naming the lock |
//! | [`reliability_connections::dead_live_subscriptions_on_a_quiet_session_give_their_memory_back`](crate::reliability_connections::dead_live_subscriptions_on_a_quiet_session_give_their_memory_back) | thousands of live streams reset by their clients on a quiet session: RSS returns to its baseline; a new stream still gets events |
//! | [`reliability_connections::slow_header_connections_past_the_file_limit_never_starve_healthz`](crate::reliability_connections::slow_header_connections_past_the_file_limit_never_starve_healthz) | 1,100 half-sent request heads against a 1,024-file server: `/healthz` answers every time within 1 s |
//! | [`reliability_lock::a_second_serve_through_a_symlink_or_a_hard_link_is_refused`](crate::reliability_lock::a_second_serve_through_a_symlink_or_a_hard_link_is_refused) | the same file under another name is the same ledger: refused too |
//! | [`reliability_render::every_page_kind_renders_for_8_concurrent_clients_without_a_failure`](crate::reliability_render::every_page_kind_renders_for_8_concurrent_clients_without_a_failure) | 2,000 page requests over every page kind from 8 concurrent clients: every one answered, complete, no panic logged |
//!
//! The lock-contention, stream-cap, reset-stream and `session_ended` tests run in process, in
//! `server/tests/api/hardening.rs`.
//!
//! The tests are in `reliability` (crash durability), `reliability_lock`, `reliability_connections` and
//! `reliability_render`; [`crate::helpers::binary`] is shared by every one of them: start the binary on a
//! loopback port with its own data directory, wait for `/healthz`, kill it (SIGKILL) or stop it (SIGTERM),
//! read its log, parse an SSE body. Each test prints one line starting with `figures: ` (what it did, failures,
//! seconds); `scripts/soak.sh` collects those lines.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::helpers::binary::{self as support, sse_events, Server, TOKEN};

// ---------------------------------------------------------------------------------------------------------
// Crash durability
// ---------------------------------------------------------------------------------------------------------

/// The one session every writer of the crash test writes into.
const CRASH_SESSION: &str = "crash-session";
/// Its logical turns: writers interleave in each, so revisions of one turn are contended.
const CRASH_TURNS: [&str; 4] = ["turn-a", "turn-b", "turn-c", "turn-d"];
/// How writers settle, in rotation.
const SETTLE_STATUSES: [&str; 3] = ["completed", "failed", "outcome_unknown"];

/// A write the server answered 2xx before it was killed.
#[derive(Debug, Clone)]
struct Answered {
    round: usize,
    turn: &'static str,
    mutation_id: String,
    /// `execution_started` for an intent, the settled status for a settlement.
    ledger_status: String,
    revision: i64,
    settle: bool,
}

/// What the crash test has learned so far, across rounds.
#[derive(Default)]
struct CrashBook {
    answered: Vec<Answered>,
    failures: Vec<String>,
    /// Per turn: the highest revision answered or read so far. Every later answer must be above the answered
    /// ones, and every later read at or above.
    floor: HashMap<&'static str, i64>,
    settlements_checked: usize,
    /// Records compared between a turn's full replay and its history.
    replay_records_compared: usize,
}

/// Runs one writer until its first transport error (the kill). Each iteration is one mutation of its own:
/// approve (201), intent (200, `execution_started`, a revision), settle (200, the settled status, a higher
/// revision). Any non-2xx answer, or a transport error before the kill, is a failure.
async fn crash_writer(
    base: String,
    round: usize,
    writer: usize,
    killed: Arc<AtomicBool>,
    settled_this_round: Arc<AtomicUsize>,
    floor: HashMap<&'static str, i64>,
) -> (Vec<Answered>, Vec<String>) {
    let client = support::client();
    let mut answered = Vec::new();
    let mut failures = Vec::new();
    // The highest revision this writer was answered per turn: its own sequential writes must climb.
    let mut last: HashMap<&'static str, i64> = floor;
    let mutations = format!("{base}/api/host/sessions/{CRASH_SESSION}/mutations");
    for i in 0usize.. {
        let turn = CRASH_TURNS[(writer + i) % CRASH_TURNS.len()];
        let m = format!("r{round}-w{writer}-m{i}");
        let attempt = format!("att-{m}");
        let status = SETTLE_STATUSES[(writer + i) % SETTLE_STATUSES.len()];
        let steps: [(String, Value, u16, &str, bool); 3] = [
            (
                mutations.clone(),
                json!({"logical_turn_id": turn, "mutation_id": m, "tool": "mcp__crash__write"}),
                201,
                "approved",
                false,
            ),
            (
                format!("{mutations}/{m}/intent"),
                json!({"attempt_id": attempt}),
                200,
                "execution_started",
                false,
            ),
            (
                format!("{mutations}/{m}/settlement"),
                json!({"attempt_id": attempt, "status": status}),
                200,
                status,
                true,
            ),
        ];
        for (url, body, want, want_status, settle) in steps {
            let sent = client
                .post(&url)
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await;
            let reply = match sent {
                Ok(r) => {
                    let code = r.status().as_u16();
                    r.text().await.map(|t| (code, t))
                }
                Err(e) => Err(e),
            };
            let (code, text) = match reply {
                Ok(x) => x,
                Err(e) => {
                    if !killed.load(Ordering::SeqCst) {
                        failures.push(format!(
                            "round {round} writer {writer}: {url} failed before the kill: {e}"
                        ));
                    }
                    return (answered, failures);
                }
            };
            if code != want {
                failures.push(format!(
                    "round {round} writer {writer}: POST {url} {body} answered {code} (expected {want}): {text}"
                ));
                return (answered, failures);
            }
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            if v["mutation_id"] != m.as_str() || v["ledger_status"] != want_status {
                failures.push(format!(
                    "round {round} writer {writer}: POST {url} answered an unexpected entry: {text}"
                ));
                return (answered, failures);
            }
            if want_status == "approved" {
                continue;
            }
            let Some(revision) = v["revision"].as_i64() else {
                failures.push(format!(
                    "round {round} writer {writer}: POST {url} answered no revision: {text}"
                ));
                return (answered, failures);
            };
            let prev = last.get(turn).copied().unwrap_or(0);
            if revision <= prev {
                failures.push(format!(
                    "round {round} writer {writer}: {turn} revision went backwards or repeated: answered {revision} after {prev} ({url})"
                ));
            }
            last.insert(turn, revision.max(prev));
            answered.push(Answered {
                round,
                turn,
                mutation_id: m.clone(),
                ledger_status: want_status.to_owned(),
                revision,
                settle,
            });
            if settle {
                settled_this_round.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    (answered, failures)
}

/// GET a JSON document; any transport error or non-200 is a failure (returned as `Err`).
async fn get_json(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    let r = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let code = r.status().as_u16();
    let text = r.text().await.map_err(|e| format!("GET {url}: {e}"))?;
    if code != 200 {
        return Err(format!("GET {url} answered {code}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("GET {url}: not JSON ({e}): {text}"))
}

/// After a restart: checks what the server reads back against everything answered so far (all rounds).
/// Adds to `book.failures`; raises `book.floor` to what was read.
async fn verify_after_restart(server: &Server, book: &mut CrashBook, after_round: usize) {
    let client = support::client();
    let base = &server.base;
    let tag = format!("after the kill of round {after_round}");
    let history = match get_json(
        &client,
        &format!("{base}/api/mutation-outcomes?session_id={CRASH_SESSION}"),
    )
    .await
    {
        Ok(v) => v,
        // Reported; then everything answered is reported missing below.
        Err(e) => {
            book.failures.push(format!("{tag}: {e}"));
            Value::Null
        }
    };
    let history = history["mutation_outcomes"]
        .as_array()
        .cloned()
        .unwrap_or_default();

    for turn in CRASH_TURNS {
        let answered: Vec<&Answered> = book.answered.iter().filter(|a| a.turn == turn).collect();
        if answered.is_empty() {
            continue;
        }
        // The turn's entries: status and revision of every published entry.
        let entries = match get_json(
            &client,
            &format!("{base}/api/sessions/{CRASH_SESSION}/turns/{turn}/entries"),
        )
        .await
        {
            Ok(v) => v,
            Err(e) => {
                book.failures.push(format!("{tag}: {e}"));
                Value::Null
            }
        };
        let latest = entries["latest_revision"].as_i64().unwrap_or(-1);
        let list = entries["entries"].as_array().cloned().unwrap_or_default();
        let mut by_id: HashMap<String, (String, Option<i64>, Value)> = HashMap::new();
        let mut revisions = HashSet::new();
        let mut order = Vec::new();
        for e in &list {
            let id = e["outcome"]["mutation_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let rev = e["mutation_revision"].as_i64();
            if let Some(r) = rev {
                if !revisions.insert(r) {
                    book.failures.push(format!(
                        "{tag}: {turn}: revision {r} is held by two entries"
                    ));
                }
                if r > latest {
                    book.failures.push(format!(
                        "{tag}: {turn}: entry {id} has revision {r} above latest_revision {latest}"
                    ));
                }
            }
            let status = e["ledger_status"].as_str().unwrap_or_default().to_owned();
            if by_id
                .insert(id.clone(), (status, rev, e["outcome"].clone()))
                .is_some()
            {
                book.failures
                    .push(format!("{tag}: {turn}: mutation {id} listed twice"));
            }
            order.push(id);
        }

        // Every answered write is there, at least as far as it was answered; settlements exactly.
        let mut max_answered = 0;
        for a in &answered {
            max_answered = max_answered.max(a.revision);
            match by_id.get(&a.mutation_id) {
                None => book.failures.push(format!(
                    "{tag}: {turn}: {} (answered {} at revision {} in round {}) is missing",
                    a.mutation_id, a.ledger_status, a.revision, a.round
                )),
                Some((status, rev, outcome)) => {
                    if a.settle {
                        book.settlements_checked += 1;
                        if status != &a.ledger_status || *rev != Some(a.revision) {
                            book.failures.push(format!(
                                "{tag}: {turn}: {} was answered {} at revision {} in round {}; now {status} at {rev:?}",
                                a.mutation_id, a.ledger_status, a.revision, a.round
                            ));
                        }
                        if outcome["status"] != a.ledger_status.as_str() {
                            book.failures.push(format!(
                                "{tag}: {turn}: {} settled {} publishes {}",
                                a.mutation_id, a.ledger_status, outcome["status"]
                            ));
                        }
                    } else if rev.is_none_or(|r| r < a.revision) {
                        book.failures.push(format!(
                            "{tag}: {turn}: {} went back: intent answered at revision {}, now {rev:?}",
                            a.mutation_id, a.revision
                        ));
                    }
                }
            }
        }
        let floor = book.floor.get(turn).copied().unwrap_or(0);
        if latest < max_answered || latest < floor {
            book.failures.push(format!(
                "{tag}: {turn}: latest_revision {latest} is below what was answered ({max_answered}) or read before ({floor})"
            ));
        }
        book.floor.insert(turn, latest.max(floor));

        // The full replay equals the history of this turn: same records, each once; ids are the entries'
        // revisions; the final id is the highest sent.
        let url =
            format!("{base}/api/mutation-events?session_id={CRASH_SESSION}&logical_turn_id={turn}");
        let body = match client.get(&url).send().await {
            Ok(r) if r.status().as_u16() == 200 => r.text().await.unwrap_or_default(),
            Ok(r) => {
                book.failures
                    .push(format!("{tag}: GET {url} answered {}", r.status()));
                continue;
            }
            Err(e) => {
                book.failures.push(format!("{tag}: GET {url}: {e}"));
                continue;
            }
        };
        let events = sse_events(&body);
        let mut replayed: BTreeMap<String, Value> = BTreeMap::new();
        let mut max_sent = 0;
        let mut final_id = None;
        for ev in &events {
            match (&ev.event, &ev.data) {
                (Some(name), Some(data)) if name == "mutation_outcome" => {
                    let outcome: Value = serde_json::from_str(data).unwrap_or(Value::Null);
                    let id = outcome["mutation_id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    let rev = ev.id.as_deref().and_then(|s| s.parse::<i64>().ok());
                    max_sent = max_sent.max(rev.unwrap_or(0));
                    if by_id.get(&id).map(|(_, r, _)| *r) != Some(rev) {
                        book.failures.push(format!(
                            "{tag}: {turn}: replay sends {id} with id {rev:?}; entries say {:?}",
                            by_id.get(&id).map(|(_, r, _)| *r)
                        ));
                    }
                    if replayed.insert(id.clone(), outcome).is_some() {
                        book.failures
                            .push(format!("{tag}: {turn}: replay sends {id} twice"));
                    }
                }
                (None, None) if ev.id.is_some() => final_id = ev.id.clone(),
                _ => {}
            }
        }
        if max_sent > 0 && final_id.as_deref() != Some(max_sent.to_string().as_str()) {
            book.failures.push(format!(
                "{tag}: {turn}: replay ends with id {final_id:?}, highest sent {max_sent}"
            ));
        }
        let in_history: Vec<&Value> = history
            .iter()
            .filter(|o| o["logical_turn_id"] == turn)
            .collect();
        let hist_map: BTreeMap<String, Value> = in_history
            .iter()
            .map(|o| {
                (
                    o["mutation_id"].as_str().unwrap_or_default().to_owned(),
                    (*o).clone(),
                )
            })
            .collect();
        if hist_map.len() != in_history.len() {
            book.failures
                .push(format!("{tag}: {turn}: the history lists a mutation twice"));
        }
        if replayed.is_empty() || replayed.len() != by_id.len() {
            book.failures.push(format!(
                "{tag}: {turn}: the replay sends {} records for {} published entries",
                replayed.len(),
                by_id.len()
            ));
        }
        book.replay_records_compared += replayed.len();
        if replayed != hist_map {
            let only_replay: Vec<_> = replayed
                .keys()
                .filter(|k| !hist_map.contains_key(*k))
                .collect();
            let only_hist: Vec<_> = hist_map
                .keys()
                .filter(|k| !replayed.contains_key(*k))
                .collect();
            let differ: Vec<_> = replayed
                .iter()
                .filter(|(k, v)| hist_map.get(*k).is_some_and(|h| h != *v))
                .map(|(k, _)| k)
                .collect();
            book.failures.push(format!(
                "{tag}: {turn}: replay != history: only in replay {only_replay:?}, only in history {only_hist:?}, different {differ:?}"
            ));
        }
        // The history lists the turn in recorded order, like the entries.
        let hist_order: Vec<String> = in_history
            .iter()
            .map(|o| o["mutation_id"].as_str().unwrap_or_default().to_owned())
            .collect();
        if hist_order != order {
            book.failures.push(format!(
                "{tag}: {turn}: history order differs from the entries' recorded order"
            ));
        }
        for (id, (_, _, outcome)) in &by_id {
            if hist_map.get(id) != Some(outcome) {
                book.failures.push(format!(
                    "{tag}: {turn}: entry {id} publishes {outcome}; history has {:?}",
                    hist_map.get(id)
                ));
            }
        }
    }
}

/// Crash durability (issue 9, reliability suite). N writers run approve → intent → settle for their own
/// mutations in four turns of one session; at a random moment during the writes the server gets SIGKILL; it
/// is restarted on the same data directory, and this repeats. After every restart, for everything answered
/// 2xx in any earlier round:
/// - every answered settlement is present with the answered status and exactly the answered revision, and
///   publishes that status;
/// - every answered intent is present at a revision at or above the answered one;
/// - revisions within a turn are unique, no entry is above the turn's `latest_revision`, and that is never
///   below any revision answered or read before; revisions answered after a restart are above everything
///   answered before it (checked by the writers);
/// - the full SSE replay of each turn equals its history (`/api/mutation-outcomes`): the same records, each
///   once, with the entries' revisions as ids and the highest as the final id; the history keeps recorded order.
///
/// Short: 5 rounds, 8 writers (a few seconds). `OUTCOMES_SOAK=1`: 50 rounds, 32 writers.
/// `OUTCOMES_CRASH_SEED=<n>` fixes the kill delays (the scheduling of the writers stays free).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crash_durability_under_kill_9_during_concurrent_writers() {
    let (rounds, writers, max_delay_ms) = if support::soak() {
        (50, 32, 1500)
    } else {
        (5, 8, 800)
    };
    let seed: u64 = std::env::var("OUTCOMES_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let started = Instant::now();
    let data = tempfile::tempdir().expect("data dir");
    let mut book = CrashBook::default();
    let mut server = Server::start(data.path(), &[]);
    let mut writes_answered = 0usize;

    for round in 0..rounds {
        let killed = Arc::new(AtomicBool::new(false));
        let settled = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..writers)
            .map(|w| {
                tokio::spawn(crash_writer(
                    server.base.clone(),
                    round,
                    w,
                    killed.clone(),
                    settled.clone(),
                    book.floor.clone(),
                ))
            })
            .collect();
        // The kill lands mid-writes: once every writer could have settled something, after a random delay.
        let wait_until = Instant::now() + Duration::from_secs(20);
        while settled.load(Ordering::SeqCst) < writers && Instant::now() < wait_until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let delay = rng.random_range(0..=max_delay_ms);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        killed.store(true, Ordering::SeqCst);
        let pid = server.pid();
        server.kill();
        let mut answered_now = 0;
        for t in tasks {
            let (answered, failures) = t.await.expect("writer task");
            answered_now += answered.len();
            book.answered.extend(answered);
            book.failures.extend(failures);
        }
        writes_answered += answered_now;
        println!(
            "crash round {round}: killed pid {pid} {delay} ms after the first settlements; {answered_now} intents and settlements answered"
        );

        // Restart on the same data directory (a start that fails panics with the server's log).
        server = Server::start(data.path(), &[]);
        verify_after_restart(&server, &mut book, round).await;
        if !book.failures.is_empty() && !support::soak() {
            break;
        }
    }
    let exit = server.terminate();
    let settlements = book.answered.iter().filter(|a| a.settle).count();
    println!(
        "figures: crash durability: seed {seed}, {rounds} rounds x {writers} writers, {writes_answered} writes answered ({settlements} settlements), {} settlement checks after restarts, {} replayed records compared with the history, {} failures, {:.1} s",
        book.settlements_checked,
        book.replay_records_compared,
        book.failures.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        book.failures.is_empty(),
        "{} failures (seed {seed}):\n{}",
        book.failures.len(),
        book.failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        settlements >= rounds,
        "too few settlements answered to prove anything: {settlements}"
    );
    assert!(
        book.settlements_checked >= settlements,
        "every answered settlement was checked at least once"
    );
    assert!(exit.is_some_and(|s| s.success()), "clean exit: {exit:?}");
}
