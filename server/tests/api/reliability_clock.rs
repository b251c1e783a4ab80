//! Reliability under a wall clock that jumps (docs/ledger.md "Retention"): the built `outcomes` binary with its
//! wall clock moved by an `LD_PRELOAD` shim over `clock_gettime`/`time` (a small C file compiled here with
//! `cc`; the monotonic clock is left alone, the system clock is never touched).
//!
//! | test | proves |
//! |---|---|
//! | [`a_restart_sixty_days_ahead_deletes_nothing_and_every_session_is_back_once_the_clock_is_right`] | 20 sessions, a restart 60 days ahead: all hidden (404 `session_expired`), the purge clock behind (logged), nothing deleted; with the clock right again every session is readable; `outcomes purge --confirm` then deletes them and prints them |
//! | [`a_restart_far_ahead_deletes_nothing_even_of_fewer_sessions_than_a_mass_purge`] | 3 sessions, a restart 60 days ahead: the purge clock moves only as fast as the server runs, nothing is deleted; all 3 read with the clock right |
//! | [`a_held_purge_is_not_released_by_new_sessions_diluting_it`] | 20 sessions due at once are held; 190 new sessions do not release the hold |
//! | [`a_session_purged_by_another_process_ends_its_live_streams`] | `outcomes purge --confirm` deletes a watched session: the server's next sweep ends the stream with `session_ended` `"deleted"` |
//! | [`a_wall_clock_that_jumps_while_serving_suspends_the_purge`] | a running server whose wall clock jumps 60 days: the purge is suspended (logged), nothing deleted; back to the right time, every session reads again |
//! | [`an_expiring_session_ends_its_live_streams_but_is_not_deleted`] | expiry ends a watching live stream with `session_ended` `"expired"`, the session stays (hidden) until the purge |
//!
//! The first two print a `figures: clock jump: ...` line for `scripts/soak.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::binary::{self as support, Server, BIN, TOKEN};

/// The shim: `CLOCK_REALTIME` (and its coarse variant) and `time()` read ahead by the whole seconds
/// written in the file named by `CLOCK_SHIM_OFFSET_FILE` (read at each call, so a test moves the clock
/// of a running process by rewriting the file).
const SHIM_C: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long offset_secs(void) {
    const char *path = getenv("CLOCK_SHIM_OFFSET_FILE");
    if (!path) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[32] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? strtoll(buf, NULL, 10) : 0;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = (int)syscall(SYS_clock_gettime, clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) ts->tv_sec += offset_secs();
    return r;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
"#;

const DAY: i64 = 24 * 3600;

/// A wall clock the test moves: the compiled shim and its offset file.
struct ShiftedClock {
    library: PathBuf,
    offset_file: PathBuf,
}

impl ShiftedClock {
    /// Compiles the shim into `dir` with `cc`; the offset starts at 0.
    fn new(dir: &Path) -> ShiftedClock {
        let source = dir.join("clockshim.c");
        let library = dir.join("clockshim.so");
        std::fs::write(&source, SHIM_C).unwrap();
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&library)
            .arg(&source)
            .output()
            .expect("cc (gcc) compiles the clock shim");
        assert!(
            out.status.success(),
            "cc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let clock = ShiftedClock {
            library,
            offset_file: dir.join("clock-offset"),
        };
        clock.set(0);
        clock
    }

    /// Moves the wall clock of every process started with [`ShiftedClock::env`] to `secs` ahead of the
    /// real time (at once, for running ones too).
    fn set(&self, secs: i64) {
        let tmp = self.offset_file.with_extension("tmp");
        std::fs::write(&tmp, secs.to_string()).unwrap();
        std::fs::rename(&tmp, &self.offset_file).unwrap();
    }

    fn env(&self) -> [(&'static str, &std::ffi::OsStr); 2] {
        [
            ("LD_PRELOAD", self.library.as_os_str()),
            ("CLOCK_SHIM_OFFSET_FILE", self.offset_file.as_os_str()),
        ]
    }
}

fn session(i: usize) -> String {
    format!("clock-{i:03}")
}

/// Writes one mutation into each of `n` sessions.
async fn write_sessions(client: &reqwest::Client, server: &Server, n: usize) {
    for i in 0..n {
        write_session(client, server, &session(i)).await;
    }
}

/// Writes one mutation (an approval) into the session `key`, creating it.
async fn write_session(client: &reqwest::Client, server: &Server, key: &str) {
    let r = client
        .post(format!("{}/api/host/sessions/{key}/mutations", server.base))
        .bearer_auth(TOKEN)
        .json(&json!({"logical_turn_id": "t", "mutation_id": "m", "tool": "tool"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "session {key}");
}

/// How each of the `n` sessions answers `GET /api/sessions/{key}/turns`: its status and, for a 404,
/// the error code.
async fn read_sessions(client: &reqwest::Client, server: &Server, n: usize) -> Vec<String> {
    let mut seen = Vec::new();
    for i in 0..n {
        let r = client
            .get(format!("{}/api/sessions/{}/turns", server.base, session(i)))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        seen.push(match status {
            200 => "200".to_owned(),
            s => format!("{s} {}", body["error"]["code"].as_str().unwrap_or("?")),
        });
    }
    seen
}

fn all(n: usize, what: &str) -> Vec<String> {
    vec![what.to_owned(); n]
}

/// Reads a live stream until the server closes it (at most 10 s): what arrived.
async fn read_until_closed(stream: &mut reqwest::Response) -> String {
    let mut got = String::new();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(chunk)) = stream.chunk().await {
            got.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream did not close: {got}");
    got
}

/// Waits until the server's log contains `needle` (or `within` passes).
fn wait_for_log(server: &Server, needle: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if server.log().contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// 20 sessions; the server restarts with its wall clock 60 days ahead (past the 30-day time to live and
/// the 7-day purge grace): every session is hidden (404 `session_expired`), the first sweep finds the
/// purge clock stored in the ledger 60 days behind (logged) and nothing due by it, nothing is deleted,
/// viewer links neither. Restarted with the
/// clock right, every session is readable and the viewer link opens. Then `outcomes purge` (60 days ahead) lists the 20 and deletes nothing, and
/// `outcomes purge --confirm` deletes them and prints each. (Before: "expired sessions deleted
/// sessions=20" at the restart and every session gone for good.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_sixty_days_ahead_deletes_nothing_and_every_session_is_back_once_the_clock_is_right(
) {
    if crate::helpers::skipped_on_postgres("the purge reads the database's clock (`now()`)") {
        return;
    }
    let n = if support::soak() { 200 } else { 20 };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let clock = ShiftedClock::new(dir.path());
    let client = support::client();
    let started = Instant::now();

    let mut server = Server::start_with_env(&data, &[], &clock.env());
    write_sessions(&client, &server, n).await;
    assert_eq!(read_sessions(&client, &server, n).await, all(n, "200"));
    // A viewer link (7 days): the jump must not destroy it either.
    let link: Value = client
        .post(format!(
            "{}/api/host/sessions/{}/viewer-links",
            server.base,
            session(0)
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let link = link["url"].as_str().unwrap().to_owned();
    server.terminate();

    clock.set(60 * DAY);
    let mut server = Server::start_with_env(&data, &[], &clock.env());
    assert!(
        wait_for_log(&server, "purge clock behind", Duration::from_secs(20)),
        "the first sweep finds its clock behind the wall clock\n{}",
        server.log()
    );
    assert_eq!(
        read_sessions(&client, &server, n).await,
        all(n, "404 session_expired")
    );
    let log = server.log();
    // 60 days, plus the seconds since the first server's sweep stored the purge clock.
    let behind: i64 = regex::Regex::new(r"behind_secs=(\d+)")
        .unwrap()
        .captures(&log)
        .and_then(|c| c[1].parse().ok())
        .unwrap_or_else(|| panic!("no behind_secs in {log}"));
    assert!((60 * DAY..60 * DAY + 600).contains(&behind), "{log}");
    assert!(!log.contains("purged"), "{log}");
    server.terminate();

    clock.set(0);
    let mut server = Server::start_with_env(&data, &[], &clock.env());
    assert_eq!(read_sessions(&client, &server, n).await, all(n, "200"));
    let list: Value = client
        .get(format!("{}/api/sessions", server.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["total"], n);
    assert!(
        !server.log().contains("purge clock behind"),
        "{}",
        server.log()
    );
    let no_redirects = crate::helpers::access::plain();
    let opened = no_redirects
        .get(format!("{}{link}", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status().as_u16(), 303, "the viewer link still works");

    // The operator: a dry run, then the confirmed purge (with the clock 60 days ahead, where they are due).
    clock.set(60 * DAY);
    let purge = |confirm: bool| {
        let mut cmd = Command::new(BIN);
        cmd.arg("purge").arg("--data-dir").arg(&data);
        if confirm {
            cmd.arg("--confirm");
        }
        for (k, v) in clock.env() {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let dry = purge(false);
    let due: Vec<String> = (0..n).map(|i| format!("due\t{}", session(i))).collect();
    assert!(dry.starts_with(&due.join("\n")), "{dry}");
    assert!(
        dry.ends_with(&format!(
            "{n} session(s) of {n} due for the purge; nothing deleted (give --confirm to delete them)\n"
        )),
        "{dry}"
    );
    clock.set(0);
    assert_eq!(read_sessions(&client, &server, n).await, all(n, "200"));
    clock.set(60 * DAY);
    let confirmed = purge(true);
    let deleted: Vec<String> = (0..n).map(|i| format!("deleted\t{}", session(i))).collect();
    assert_eq!(
        confirmed,
        format!("{}\n{n} session(s) deleted of {n}\n", deleted.join("\n"))
    );
    clock.set(0);
    assert_eq!(
        read_sessions(&client, &server, n).await,
        all(n, "404 session_not_found")
    );
    server.terminate();
    println!(
        "figures: clock jump: {n} sessions, a restart 60 days ahead: 0 deleted, {n} hidden, purge held; clock right again: {n} of {n} readable; `outcomes purge --confirm` deleted {n}; {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A running server (sweeping every second) whose wall clock jumps 60 days ahead: every session is hidden,
/// the sweep sees the wall clock ahead of the monotonic one and suspends the purge (logged), nothing is
/// deleted, even of fewer sessions than a mass purge; with the clock back, every session reads again and
/// the purge resumes (logged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wall_clock_that_jumps_while_serving_suspends_the_purge() {
    let n = 5;
    let dir = tempfile::tempdir().unwrap();
    let clock = ShiftedClock::new(dir.path());
    let client = support::client();
    let started = Instant::now();
    let mut server = Server::start_with_env(
        &dir.path().join("data"),
        &["--purge-interval-secs", "1"],
        &clock.env(),
    );
    write_sessions(&client, &server, n).await;
    clock.set(60 * DAY);
    assert!(
        wait_for_log(&server, "purge suspended", Duration::from_secs(10)),
        "{}",
        server.log()
    );
    assert_eq!(
        read_sessions(&client, &server, n).await,
        all(n, "404 session_expired")
    );
    // A few more sweeps while it is wrong.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    clock.set(0);
    assert!(
        wait_for_log(&server, "purge resumed", Duration::from_secs(10)),
        "{}",
        server.log()
    );
    assert_eq!(read_sessions(&client, &server, n).await, all(n, "200"));
    let log = server.log();
    assert!(!log.contains("purged"), "{log}");
    assert_eq!(log.matches("purge suspended").count(), 1, "{log}");
    server.terminate();
    println!(
        "figures: clock jump: a running server's wall clock 60 days ahead for ~3 s: purge suspended, 0 of {n} sessions deleted, {n} readable after; {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A session that expires while a live stream watches it (a 2 s time to live, a sweep every second):
/// the stream gets `session_ended` `"expired"` and closes, while the session is only hidden (404
/// `session_expired`, not deleted: `outcomes purge` lists nothing due within the 7-day grace).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiring_session_ends_its_live_streams_but_is_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let client = support::client();
    let mut server = Server::start(
        &data,
        &["--session-ttl-secs", "2", "--purge-interval-secs", "1"],
    );
    write_sessions(&client, &server, 1).await;
    let mut stream = client
        .get(format!(
            "{}/api/run-events?session_id={}",
            server.base,
            session(0)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let got = read_until_closed(&mut stream).await;
    assert!(
        got.ends_with("event: session_ended\ndata: {\"reason\":\"expired\"}\n\n"),
        "{got}"
    );
    assert_eq!(
        read_sessions(&client, &server, 1).await,
        all(1, "404 session_expired")
    );
    server.terminate();
    let mut cmd = Command::new(BIN);
    cmd.args(["purge", "--session-ttl-secs", "2", "--data-dir"])
        .arg(&data);
    if crate::helpers::postgres().is_some() {
        cmd.arg("--database")
            .arg(crate::helpers::database_for(&data));
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "0 session(s) of 1 due for the purge; nothing deleted (give --confirm to delete them)\n"
    );
}

/// A held purge stays held: 20 sessions written at once 60 days ago, the purge clock right (the sweep,
/// every second, finds all 20 due and holds the purge), then the host writes 190 new sessions, so the 20
/// due are under a tenth of all. Three more sweeps delete nothing ("purge still held"); restarted, all 20 are still there.
/// (Before: the next sweep logged "expired sessions purged sessions=20" and they were gone for good.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_purge_is_not_released_by_new_sessions_diluting_it() {
    if crate::helpers::skipped_on_postgres("the purge reads the database's clock (`now()`)") {
        return;
    }
    let n = 20;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let clock = ShiftedClock::new(dir.path());
    let client = support::client();

    // The 20 sessions were written 60 days ago, all at once, and the purge clock kept up since (as a
    // server running all along keeps it): they are due together, a mass purge.
    clock.set(-60 * DAY);
    let mut server = Server::start_with_env(&data, &[], &clock.env());
    write_sessions(&client, &server, n).await;
    server.terminate();
    set_purge_clock_to_now(&data).await;

    clock.set(0);
    let mut server = Server::start_with_env(&data, &["--purge-interval-secs", "1"], &clock.env());
    assert!(
        wait_for_log(&server, "purge held", Duration::from_secs(20)),
        "{}",
        server.log()
    );
    for i in 0..190 {
        write_session(&client, &server, &format!("fresh-{i:03}")).await;
    }
    assert!(
        wait_for_log(&server, "purge still held", Duration::from_secs(20)),
        "{}",
        server.log()
    );
    std::thread::sleep(Duration::from_secs(3));
    let log = server.log();
    assert!(!log.contains("purged"), "{log}");
    server.terminate();

    // They are still there for the operator to confirm (readable with the clock of their time).
    clock.set(-60 * DAY);
    let mut server = Server::start_with_env(&data, &[], &clock.env());
    assert_eq!(read_sessions(&client, &server, n).await, all(n, "200"));
    server.terminate();
}

/// Sets the stopped server's stored purge clock (docs/ledger.md "Retention") to the real time.
async fn set_purge_clock_to_now(data: &Path) {
    let url = format!("sqlite://{}", data.join("ledger.sqlite").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let set = sqlx::query("UPDATE purge_clock SET at_ms = ?1 WHERE id = 1")
        .bind(now)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(set.rows_affected(), 1);
    pool.close().await;
}

/// Three sessions, fewer than the 10 of a mass purge, and a restart with the wall clock 60 days ahead,
/// sweeping every second: the purge clock stored in the ledger moves only as fast as the server runs, so
/// nothing is deleted (logged "purge clock behind"), and with the clock right again all three read. (Before
/// the purge clock: "expired sessions purged sessions=3" at the first sweep, all gone for good.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_far_ahead_deletes_nothing_even_of_fewer_sessions_than_a_mass_purge() {
    if crate::helpers::skipped_on_postgres("the purge reads the database's clock (`now()`)") {
        return;
    }
    let n = 3;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let clock = ShiftedClock::new(dir.path());
    let client = support::client();
    let mut server = Server::start_with_env(&data, &[], &clock.env());
    write_sessions(&client, &server, n).await;
    server.terminate();

    clock.set(60 * DAY);
    let mut server = Server::start_with_env(&data, &["--purge-interval-secs", "1"], &clock.env());
    assert!(
        wait_for_log(&server, "purge clock behind", Duration::from_secs(20)),
        "{}",
        server.log()
    );
    // A few sweeps while it is wrong.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(
        read_sessions(&client, &server, n).await,
        all(n, "404 session_expired")
    );
    let log = server.log();
    assert!(!log.contains("purged"), "{log}");
    assert_eq!(log.matches("purge clock behind").count(), 1, "{log}");
    server.terminate();

    clock.set(0);
    let mut server = Server::start_with_env(&data, &["--purge-interval-secs", "1"], &clock.env());
    assert_eq!(read_sessions(&client, &server, n).await, all(n, "200"));
    server.terminate();
}

/// An operator's `outcomes purge --confirm` (another process, on the same SQLite file) deletes a session a
/// live stream watches: the server's next sweep ends that stream with `session_ended` `"deleted"`. (Before:
/// the stream stayed open, heartbeats only, on a session that no longer existed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_purged_by_another_process_ends_its_live_streams() {
    if crate::helpers::skipped_on_postgres("the CLI's purge reads the database's clock (`now()`)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let clock = ShiftedClock::new(dir.path());
    let client = support::client();
    let mut server = Server::start(&data, &["--purge-interval-secs", "1"]);
    write_sessions(&client, &server, 1).await;
    let mut stream = client
        .get(format!(
            "{}/api/run-events?session_id={}",
            server.base,
            session(0)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    clock.set(60 * DAY);
    let mut purge = Command::new(BIN);
    purge.args(["purge", "--confirm", "--data-dir"]).arg(&data);
    for (k, v) in clock.env() {
        purge.env(k, v);
    }
    let out = purge.output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("deleted\t{}\n1 session(s) deleted of 1\n", session(0))
    );
    let got = read_until_closed(&mut stream).await;
    assert!(
        got.ends_with("event: session_ended\ndata: {\"reason\":\"deleted\"}\n\n"),
        "{got}"
    );
    server.terminate();
}
