//! Reliability under a full disk (docs/ledger.md "Storage faults"): writes answer 503 `storage_full` with
//! `Retry-After` while the ledger's storage is full, reads go on, `/healthz` says so, writes resume by
//! themselves once space is freed, and nothing answered is lost.
//!
//! | test | proves |
//! |---|---|
//! | [`a_full_disk_answers_503_storage_full_and_writes_resume_by_themselves`] | concurrent writers over cycles of "full" and "freed" (SQLite's `max_page_count` on the write connection, the same `SQLITE_FULL` and automatic rollback a full disk gives): every write answers 2xx or 503 `storage_full` with `Retry-After: 5`, a batch during a fault is refused whole, reads answer 200, `/healthz` is 503 with the reason during each fault and 200 after, and every answered write is read back |
//! | [`a_real_full_tmpfs_answers_503_and_recovers_when_space_is_freed`] | the built binary on an 8 MiB tmpfs filled to ENOSPC: 503 `storage_full`, `/healthz` 503, then 2xx and 200 once a file is removed, without a restart (needs `mount`: root with CAP_SYS_ADMIN; skipped otherwise) |
//!
//! Short variants run in every `cargo test`; `OUTCOMES_SOAK=1` runs the long ones. Each prints a
//! `figures: disk full: ...` line.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::binary as support;
use crate::helpers::{self, TOKEN};

/// What one writer was answered: every write that answered 2xx (mutation id → its last answered
/// status), how many 503 `storage_full` it got, and anything that broke a rule.
#[derive(Default)]
struct Book {
    answered: HashMap<String, &'static str>,
    writes_ok: usize,
    full_503: usize,
    failures: Vec<String>,
}

/// Sends one host write, retrying after each 503 `storage_full` (checking its body and `Retry-After`)
/// until it is answered otherwise or `stop` is set. Returns the final status and body, or `None` when
/// stopped.
async fn write_until_answered(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    book: &mut Book,
    stop: &AtomicBool,
    pause: &AtomicBool,
) -> Option<(u16, Value)> {
    loop {
        while pause.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let r = match client.post(url).bearer_auth(TOKEN).json(body).send().await {
            Ok(r) => r,
            Err(e) => {
                book.failures.push(format!("POST {url}: {e}"));
                return None;
            }
        };
        let code = r.status().as_u16();
        let retry_after = r
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if code != 503 {
            return Some((code, v));
        }
        book.full_503 += 1;
        if v["error"]["code"] != "storage_full" || retry_after.as_deref() != Some("5") {
            book.failures.push(format!(
                "POST {url}: 503 without storage_full and Retry-After 5: {v} (Retry-After {retry_after:?})"
            ));
        }
        if stop.load(Ordering::SeqCst) {
            return None;
        }
        // A client that honours Retry-After would wait 5 s; the test retries sooner to see the recovery.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One writer: mutation after mutation in its own session (approve, intent, settle, each retried
/// through 503s), until `stop`. Any answer other than the expected 2xx, or a 503 that is not
/// `storage_full`, is a failure; a 409 on a retry would mean a write answered 503 had been committed.
async fn writer(
    base: String,
    w: usize,
    stop: Arc<AtomicBool>,
    pause: Arc<AtomicBool>,
    total: Arc<AtomicUsize>,
) -> Book {
    let client = support::client();
    let mut book = Book::default();
    let session = format!("disk-w{w}");
    let mutations = format!("{base}/api/host/sessions/{session}/mutations");
    // Ids of some size, so the database grows quickly.
    let pad = "p".repeat(120);
    'outer: for i in 0usize.. {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let m = format!("m{i}-{pad}");
        let steps: [(String, Value, u16, &'static str); 3] = [
            (
                mutations.clone(),
                json!({"logical_turn_id": format!("t{}-{pad}", i / 4), "mutation_id": m, "tool": "mcp__disk__write"}),
                201,
                "approved",
            ),
            (
                format!("{mutations}/{m}/intent"),
                json!({"attempt_id": "a1"}),
                200,
                "execution_started",
            ),
            (
                format!("{mutations}/{m}/settlement"),
                json!({"attempt_id": "a1", "status": "completed"}),
                200,
                "completed",
            ),
        ];
        for (url, body, want, status) in steps {
            let Some((code, v)) =
                write_until_answered(&client, &url, &body, &mut book, &stop, &pause).await
            else {
                break 'outer;
            };
            if code != want || v["ledger_status"] != status {
                book.failures.push(format!(
                    "POST {url}: answered {code} (expected {want}): {v}"
                ));
                break 'outer;
            }
            book.writes_ok += 1;
            total.fetch_add(1, Ordering::SeqCst);
            book.answered.insert(m.clone(), status);
        }
    }
    book
}

/// `GET /healthz`: status, `Retry-After`, body.
async fn health(client: &reqwest::Client, base: &str) -> (u16, Option<String>, Value) {
    let r = client
        .get(format!("{base}/healthz"))
        .send()
        .await
        .expect("healthz");
    let code = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (code, retry, r.json().await.unwrap_or(Value::Null))
}

/// Every mutation a writer was answered for is read back with its answered status (or a later one).
async fn lost(client: &reqwest::Client, base: &str, books: &[Book]) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut lost = Vec::new();
    for (w, book) in books.iter().enumerate() {
        let v: Value = client
            .get(format!("{base}/api/mutation-outcomes?session_id=disk-w{w}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("history")
            .json()
            .await
            .unwrap_or(Value::Null);
        let mut published: HashMap<String, String> = HashMap::new();
        for o in v["mutation_outcomes"].as_array().into_iter().flatten() {
            published.insert(
                o["mutation_id"].as_str().unwrap_or_default().to_owned(),
                o["status"].as_str().unwrap_or_default().to_owned(),
            );
        }
        for (m, status) in &book.answered {
            checked += 1;
            let found = published.get(m).map(String::as_str);
            let ok = match *status {
                // An approved entry is not published yet; a later step may have been answered 503.
                "approved" => true,
                "execution_started" => {
                    matches!(found, Some("execution_started") | Some("completed"))
                }
                s => found == Some(s),
            };
            if !ok {
                lost.push(format!("writer {w} {m}: answered {status}, read {found:?}"));
            }
        }
    }
    (checked, lost)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_answers_503_storage_full_and_writes_resume_by_themselves() {
    if helpers::skipped_on_postgres("a full SQLite database (max_page_count)") {
        return;
    }
    let soak = support::soak();
    let (writers, cycles, phase) = if soak {
        (16, 5, Duration::from_secs(4))
    } else {
        (4, 2, Duration::from_millis(700))
    };
    let app = helpers::spawn().await;
    let client = support::client();
    let stop = Arc::new(AtomicBool::new(false));
    let pause = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            tokio::spawn(writer(
                app.base.clone(),
                w,
                stop.clone(),
                pause.clone(),
                total.clone(),
            ))
        })
        .collect();
    let engine = app.state.engine.clone();
    let mut failures = Vec::new();
    let mut recoveries = Vec::new();
    let mut answered_before_first_fault = 0;
    let mut health_503 = 0;
    let started = Instant::now();
    for cycle in 0..cycles {
        tokio::time::sleep(phase).await;
        if cycle == 0 {
            answered_before_first_fault = total.load(Ordering::SeqCst);
        }
        // The disk fills: a few pages more and no more.
        engine
            .limit_storage_for_tests(Some(4))
            .await
            .expect("limit");
        // A batch during the fault is refused whole, nothing of it committed.
        let ops: Vec<Value> = (0..50)
            .map(|i| json!({"op": "approve", "session_key": format!("disk-batch-{cycle}"), "logical_turn_id": "t", "mutation_id": format!("b{i}-{}", "q".repeat(200)), "tool": "x"}))
            .collect();
        let r = client
            .post(format!("{}/api/host/batch", app.base))
            .bearer_auth(TOKEN)
            .json(&json!({ "operations": ops }))
            .send()
            .await
            .expect("batch");
        let code = r.status().as_u16();
        let retry = r
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(
            (code, v["error"]["code"].as_str(), retry.as_deref()),
            (503, Some("storage_full"), Some("5")),
            "cycle {cycle}: the batch during the fault: {v}"
        );
        tokio::time::sleep(phase).await;
        // /healthz names the fault while it lasts. With the writers paused, its probe write (at most
        // one a second) takes the write lock and fails too: a one-row insert, which SQLite answers
        // with SQLITE_FULL by rolling the whole transaction back itself, as a full disk does at COMMIT
        // (the write connection this used to leave unusable for good).
        pause.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let polled = Instant::now();
        let mut all_503 = true;
        while polled.elapsed() < Duration::from_millis(1300) {
            let (code, retry, v) = health(&client, &app.base).await;
            if code == 503 && v["reason"] == "storage_full" && retry.as_deref() == Some("5") {
                assert_eq!(v["status"], "unavailable");
                assert!(v["since"].as_str().is_some_and(|s| s.ends_with('Z')), "{v}");
            } else {
                all_503 = false;
                failures.push(format!(
                    "cycle {cycle}: /healthz during the fault answered {code} {v} (Retry-After {retry:?})"
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        health_503 += usize::from(all_503);
        // Reads go on.
        let (code, v) = app
            .get_json("/api/mutation-outcomes?session_id=disk-w0")
            .await;
        if code != reqwest::StatusCode::OK || v["mutation_outcomes"].as_array().is_none() {
            failures.push(format!(
                "cycle {cycle}: a read during the fault answered {code} {v}"
            ));
        }
        pause.store(false, Ordering::SeqCst);
        // Space is freed: writes and /healthz recover by themselves.
        engine.limit_storage_for_tests(None).await.expect("unlimit");
        let freed = Instant::now();
        let mut healthy = false;
        while freed.elapsed() < Duration::from_secs(10) {
            if health(&client, &app.base).await.0 == 200 {
                healthy = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (code, v) = app.approve(&format!("disk-probe-{cycle}"), "t", "m").await;
        recoveries.push(freed.elapsed());
        if !healthy || code != reqwest::StatusCode::CREATED {
            failures.push(format!(
                "cycle {cycle}: after space was freed: /healthz healthy {healthy}, a write answered {code} {v}"
            ));
        }
        // Nothing of the refused batch was committed.
        let (code, v) = app
            .get_json(&format!(
                "/api/mutation-outcomes?session_id=disk-batch-{cycle}"
            ))
            .await;
        if code != reqwest::StatusCode::NOT_FOUND {
            failures.push(format!("cycle {cycle}: the refused batch left {code} {v}"));
        }
    }
    tokio::time::sleep(phase).await;
    stop.store(true, Ordering::SeqCst);
    let mut books = Vec::new();
    for t in tasks {
        books.push(t.await.expect("writer"));
    }
    let (checked, lost) = lost(&client, &app.base, &books).await;
    let writes_ok: usize = books.iter().map(|b| b.writes_ok).sum();
    let full_503: usize = books.iter().map(|b| b.full_503).sum();
    for b in &books {
        failures.extend(b.failures.iter().cloned());
    }
    let worst = recoveries.iter().max().copied().unwrap_or_default();
    println!(
        "figures: disk full: {writers} writers, {cycles} full/freed cycles (SQLite max_page_count) in {:.1} s: \
         {answered_before_first_fault} writes answered 2xx before the first fault, {writes_ok} in all, \
         {full_503} answered 503 storage_full, /healthz 503 in {health_503}/{cycles} faults, recovery after \
         freeing at most {:.2} s, {checked} answered mutations read back, {} lost, {} failures",
        started.elapsed().as_secs_f64(),
        worst.as_secs_f64(),
        lost.len(),
        failures.len()
    );
    assert!(lost.is_empty(), "answered writes lost: {lost:#?}");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        full_503 > 0,
        "no write was ever refused: the fault was not seen"
    );
    assert!(writes_ok > 0);
    assert!(answered_before_first_fault > 0);
}

/// An 8 MiB tmpfs mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (and why on stderr) when `mount` is not permitted here.
    fn mount() -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
            .arg(dir.path())
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "skipped: cannot mount a tmpfs here ({}); the max_page_count test covers the same path",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Tmpfs { dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// The tmpfs nearly filled (a 6.5 MB `filler` file in it) and the ledger's data directory in it.
fn nearly_full(fs: &Tmpfs) -> (std::path::PathBuf, std::path::PathBuf) {
    let filler = fs.dir.path().join("filler");
    std::fs::write(&filler, vec![0u8; 6_500_000]).expect("filler");
    (filler, fs.dir.path().join("data"))
}

/// Approves mutations (`m<i>-<200 bytes>`, each in a turn of its own) in `session` until one is not
/// answered 201: the mutation ids answered, and the refusal's status, `Retry-After` and body.
async fn write_until_refused(
    client: &reqwest::Client,
    base: &str,
    session: &str,
) -> (Vec<String>, (u16, Option<String>, Value)) {
    let pad = "p".repeat(200);
    let mut answered = Vec::new();
    for i in 0..20_000 {
        let m = format!("m{i}-{pad}");
        let r = client
            .post(format!("{base}/api/host/sessions/{session}/mutations"))
            .bearer_auth(support::TOKEN)
            .json(&json!({"logical_turn_id": format!("t{i}-{pad}"), "mutation_id": m, "tool": "x"}))
            .send()
            .await
            .expect("write");
        let code = r.status().as_u16();
        let retry = r
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if code != 201 {
            return (answered, (code, retry, v));
        }
        answered.push(m);
    }
    panic!("the disk never filled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_full_tmpfs_answers_503_and_recovers_when_space_is_freed() {
    if helpers::skipped_on_postgres("a SQLite file on a full tmpfs") {
        return;
    }
    let Some(fs) = Tmpfs::mount() else {
        return;
    };
    let (filler, data) = nearly_full(&fs);
    let mut server = support::Server::start(&data, &[]);
    let client = support::client();
    let base = server.base.clone();
    let (answered, (code, retry, v)) = write_until_refused(&client, &base, "tmpfs").await;
    assert_eq!(
        (code, v["error"]["code"].as_str(), retry.as_deref()),
        (503, Some("storage_full"), Some("5")),
        "{v}\n{}",
        server.log()
    );
    let (code, _, v) = health(&client, &base).await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (503, Some("storage_full")),
        "{v}"
    );
    // Space is freed: no restart, writes and /healthz come back.
    std::fs::remove_file(&filler).expect("free space");
    let freed = Instant::now();
    let mut code = 0;
    while freed.elapsed() < Duration::from_secs(10) {
        code = client
            .post(format!("{base}/api/host/sessions/tmpfs/mutations"))
            .bearer_auth(support::TOKEN)
            .json(&json!({"logical_turn_id": "after", "mutation_id": "after", "tool": "x"}))
            .send()
            .await
            .expect("write")
            .status()
            .as_u16();
        if code == 201 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let recovery = freed.elapsed();
    assert_eq!(code, 201, "{}", server.log());
    assert_eq!(health(&client, &base).await.0, 200);
    // Every answered write is there.
    let mut lost = Vec::new();
    for m in &answered {
        let r = client
            .get(format!(
                "{base}/api/sessions/tmpfs/mutations/{}/history",
                helpers::enc(m)
            ))
            .bearer_auth(support::TOKEN)
            .send()
            .await
            .expect("history");
        if r.status() != reqwest::StatusCode::OK {
            lost.push(m.clone());
        }
    }
    println!(
        "figures: disk full: 8 MiB tmpfs: {} writes answered before ENOSPC, then 503 storage_full, \
         recovery {:.2} s after freeing space (no restart), {} answered lost",
        answered.len(),
        recovery.as_secs_f64(),
        lost.len()
    );
    assert!(lost.is_empty(), "{lost:?}");
    server.terminate();
}

/// A clean stop on a full disk cannot checkpoint the WAL into the database file: `outcomes serve` then
/// exits non-zero and says the `-wal` must be kept (it used to exit 0 with a warning, and a copy of the
/// `.sqlite` alone was malformed). Restarted once space is freed, with the `-wal` kept, every answered
/// write is there. Needs `mount` like the test above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_on_a_full_disk_exits_non_zero_and_says_to_keep_the_wal() {
    if helpers::skipped_on_postgres("a SQLite file on a full tmpfs") {
        return;
    }
    let Some(fs) = Tmpfs::mount() else {
        return;
    };
    let (filler, data) = nearly_full(&fs);
    let mut server = support::Server::start(&data, &[]);
    let client = support::client();
    let (answered, (code, _, _)) = write_until_refused(&client, &server.base, "stop").await;
    assert_eq!(code, 503, "{}", server.log());
    assert!(!answered.is_empty());
    let status = server.terminate().expect("the server stopped");
    let log = server.log();
    assert!(
        !status.success(),
        "a stop that left the WAL unmerged exited 0\n{log}"
    );
    assert!(
        log.contains("keep the -wal file beside the database"),
        "{log}"
    );
    std::fs::remove_file(&filler).expect("free space");
    let mut server = support::Server::start(&data, &[]);
    // Approvals only (no intent) are not published: each one's history says it is there.
    let mut lost = 0;
    for m in &answered {
        let ok = client
            .get(format!(
                "{}/api/sessions/stop/mutations/{}/history",
                server.base,
                helpers::enc(m)
            ))
            .bearer_auth(support::TOKEN)
            .send()
            .await
            .expect("history")
            .status()
            == reqwest::StatusCode::OK;
        if !ok {
            lost += 1;
        }
    }
    assert_eq!(lost, 0, "of {} answered", answered.len());
    server.terminate();
}
