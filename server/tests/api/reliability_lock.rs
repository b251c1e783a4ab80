//! Reliability suite (see `reliability`): one `serve` per SQLite file, whatever name the file is reached
//! by.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::binary::{self as support, Server, TOKEN};

// ---------------------------------------------------------------------------------------------------------
// One server per SQLite file
// ---------------------------------------------------------------------------------------------------------

/// Starts `outcomes serve` on `data_dir` without waiting for it; its stderr is captured.
fn spawn_serve(data_dir: &std::path::Path) -> std::process::Child {
    let mut cmd = std::process::Command::new(support::BIN);
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--host-token", TOKEN])
        .arg("--data-dir")
        .arg(data_dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("OUTCOMES_") {
            cmd.env_remove(k);
        }
    }
    cmd.spawn().expect("spawn outcomes")
}

/// Two `outcomes serve` started at the same moment on one data directory (so one SQLite file), repeated:
/// every time exactly one serves, the other exits non-zero at start naming the lock, and the one serving
/// answers writes. (Before: in 7 of 10 starts one died on "table sessions already exists", and with both
/// running half the writes answered 500.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_serve_on_the_same_sqlite_file_is_refused_at_start_and_the_first_keeps_serving() {
    use std::io::{BufRead, Read};
    if crate::helpers::skipped_on_postgres("one serve per SQLite file") {
        return;
    }
    let rounds = if support::soak() { 50 } else { 5 };
    let started = Instant::now();
    let mut refused = 0;
    for round in 0..rounds {
        let dir = tempfile::tempdir().unwrap();
        let mut a = spawn_serve(dir.path());
        let mut b = spawn_serve(dir.path());
        // The one refused exits on its own; the other announces its address.
        let deadline = Instant::now() + Duration::from_secs(30);
        let (mut serving, mut loser) = loop {
            if let Some(status) = a.try_wait().unwrap() {
                break (b, (a, status));
            }
            if let Some(status) = b.try_wait().unwrap() {
                break (a, (b, status));
            }
            assert!(Instant::now() < deadline, "round {round}: neither exited");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            !loser.1.success(),
            "round {round}: the refused one exits non-zero"
        );
        let mut stderr = String::new();
        loser
            .0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(
            stderr.contains("another `outcomes serve` is already serving the ledger"),
            "round {round}: {stderr}"
        );
        assert!(
            stderr.contains("ledger.sqlite.lock"),
            "round {round}: {stderr}"
        );
        let mut line = String::new();
        std::io::BufReader::new(serving.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .trim()
            .strip_prefix("outcomes: serving on ")
            .unwrap_or_else(|| panic!("round {round}: {line:?}"))
            .trim_end_matches('/')
            .to_owned();
        let client = support::client();
        let r = client
            .post(format!("{base}/api/host/sessions/s/mutations"))
            .bearer_auth(TOKEN)
            .json(&json!({"logical_turn_id": "t", "mutation_id": format!("m{round}"), "tool": "tool"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201, "round {round}");
        let _ = serving.kill();
        let _ = serving.wait();
        refused += 1;
    }
    println!(
        "figures: one-serve-per-file: {rounds} simultaneous double starts, {refused} refused cleanly, 0 failures, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The same SQLite file reached through a symlink or a hard link is the same ledger: a second `serve`
/// on it is refused too (both locks follow the file, not the name). Before, a symlinked path started a
/// second server whose writes never reached the first one's live streams.
#[test]
fn a_second_serve_through_a_symlink_or_a_hard_link_is_refused() {
    use std::io::Read;
    if crate::helpers::skipped_on_postgres("one serve per SQLite file, through links") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _first = Server::start(dir.path(), &[]);
    let db = dir.path().join("ledger.sqlite");
    let other = tempfile::tempdir().unwrap();
    let symlink = other.path().join("via-symlink.sqlite");
    std::os::unix::fs::symlink(&db, &symlink).unwrap();
    let hard = dir.path().join("via-hard-link.sqlite");
    std::fs::hard_link(&db, &hard).unwrap();
    for path in [&symlink, &hard] {
        let mut cmd = std::process::Command::new(support::BIN);
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--host-token", TOKEN])
            .arg("--database")
            .arg(path)
            .arg("--data-dir")
            .arg(other.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(!status.success(), "{}: {stderr}", path.display());
        assert!(
            stderr.contains("another `outcomes serve` is already serving the ledger"),
            "{}: {stderr}",
            path.display()
        );
    }
}
