//! `outcomes staff …` as an operator runs it (docs/access.md "Staff accounts"), and what it adds working on
//! a running `serve --access signed-in` at once, across a restart of the server.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_outcomes");

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn staff(dir: &std::path::Path, args: &[&str]) -> Out {
    let mut command = Command::new(BIN);
    command
        .arg("staff")
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env_remove("OUTCOMES_DATABASE");
    on_the_suites_backend(&mut command, dir);
    let out = command.output().unwrap();
    Out {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

/// A running `serve`; killed when dropped, so a failing test leaves no server behind.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `outcomes serve` on a free loopback port with the host token `cli-test-token`, `--data-dir dir` and
/// `extra`; stderr discarded.
fn serve(dir: &std::path::Path, extra: &[&str]) -> (Served, String) {
    start(serve_command(dir, extra).stderr(Stdio::null()))
}

/// Like [`serve`], with `RUST_LOG=info` (plain text logs) and its stderr written to `log`.
fn serve_logging_to(
    dir: &std::path::Path,
    extra: &[&str],
    log: &std::path::Path,
) -> (Served, String) {
    start(
        serve_command(dir, extra)
            .env("RUST_LOG", "info")
            .env_remove("OUTCOMES_LOG_JSON")
            .stderr(std::fs::File::create(log).unwrap()),
    )
}

fn serve_command(dir: &std::path::Path, extra: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--host-token",
            "cli-test-token",
            "--data-dir",
        ])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped());
    on_the_suites_backend(&mut command, dir);
    command
}

/// On Postgres (`OUTCOMES_TEST_POSTGRES`), `--database` names the schema of `dir`; else the SQLite file
/// in `dir` is the default.
fn on_the_suites_backend(command: &mut Command, dir: &std::path::Path) {
    if crate::helpers::postgres().is_some() {
        command
            .arg("--database")
            .arg(crate::helpers::database_for(dir));
    }
}

/// Spawns `command` and waits for its `serving on` line; the server and its base URL.
fn start(command: &mut Command) -> (Served, String) {
    let mut served = Served(command.spawn().unwrap());
    let mut lines = BufReader::new(served.0.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "serve did not start");
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(rest) = line.strip_prefix("outcomes: serving on ") {
            return (served, rest.trim_end_matches('/').to_owned());
        }
    }
}

fn stop(server: Served) {
    drop(server);
}

#[test]
fn staff_commands_print_the_secret_alone_on_the_last_line_and_errors_on_stderr_only() {
    let dir = tempfile::tempdir().unwrap();
    let added = staff(dir.path(), &["add", "ada@example.org"]);
    assert!(added.ok, "{}", added.stderr);
    let password = last_line(&added.stdout).to_owned();
    assert_eq!(password.len(), 24, "{:?}", added.stdout);
    assert!(password
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));

    let again = staff(dir.path(), &["add", "ada@example.org"]);
    assert!(!again.ok);
    assert_eq!(again.stdout, "");
    assert!(
        again
            .stderr
            .contains("a staff account named ada@example.org already exists"),
        "{}",
        again.stderr
    );

    let bad = staff(dir.path(), &["add", "not a name"]);
    assert!(!bad.ok);
    assert_eq!(bad.stdout, "");
    assert!(
        bad.stderr.contains("a staff name has only ASCII letters"),
        "{}",
        bad.stderr
    );

    let token = staff(dir.path(), &["token", "ada@example.org"]);
    assert!(token.ok, "{}", token.stderr);
    let token = last_line(&token.stdout).to_owned();
    assert!(token.starts_with("ost_") && token.len() == 47, "{token}");

    let nobody = staff(dir.path(), &["token", "nobody"]);
    assert!(!nobody.ok);
    assert_eq!(nobody.stdout, "");
    assert!(nobody.stderr.contains("no staff account named nobody"));

    let list = staff(dir.path(), &["list"]);
    assert!(list.ok);
    assert!(
        list.stdout.starts_with("ada@example.org\tadded 20"),
        "{}",
        list.stdout
    );
    assert!(
        list.stdout.contains("\t1 API token(s)\t0 sign-in(s)"),
        "{}",
        list.stdout
    );

    // Neither secret is anywhere in the database files.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&password));
        assert!(!text.contains(&token));
    }

    let removed = staff(dir.path(), &["remove", "ada@example.org"]);
    assert!(removed.ok, "{}", removed.stderr);
    let again = staff(dir.path(), &["remove", "ada@example.org"]);
    assert!(!again.ok);
    assert_eq!(again.stdout, "");
    assert!(again
        .stderr
        .contains("no staff account named ada@example.org"));
    let list = staff(dir.path(), &["list"]);
    assert!(list.stdout.contains("no staff accounts"), "{}", list.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_added_while_serving_signs_in_at_once_and_its_sign_in_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (server, base) = serve(dir.path(), &["--access", "signed-in"]);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // Closed reads: a page redirects to sign-in, an API answers 401.
    let r = client
        .get(format!("{base}/sessions/x?y=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(
        r.headers()["location"],
        "/sign-in?next=%2Fsessions%2Fx%3Fy%3D1"
    );
    let r = client
        .get(format!("{base}/api/sessions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // Added while the server runs: works at once (nothing is cached at start).
    let added = staff(dir.path(), &["add", "grace"]);
    assert!(added.ok, "{}", added.stderr);
    let password = last_line(&added.stdout).to_owned();
    let token = last_line(&staff(dir.path(), &["token", "grace"]).stdout).to_owned();
    let r = client
        .get(format!("{base}/api/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap(),
        serde_json::json!({"access": "staff", "name": "grace", "can_sign_out": false})
    );
    let r = client
        .post(format!("{base}/sign-in"))
        .header("origin", &base)
        .form(&[
            ("name", "grace"),
            ("password", &password),
            ("next", "/unknowns"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/unknowns");
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();

    // The server restarts: the sign-in is kept in the ledger, so the cookie still works.
    stop(server);
    let (server, base) = serve(dir.path(), &["--access", "signed-in"]);
    let r = client
        .get(format!("{base}/api/me"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["name"],
        "grace"
    );

    // Removing the account ends its sign-ins and tokens at once.
    assert!(staff(dir.path(), &["remove", "grace"]).ok);
    let r = client
        .get(format!("{base}/api/me"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = client
        .get(format!("{base}/api/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    stop(server);
}

#[test]
fn open_access_is_refused_on_a_non_loopback_address() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "0.0.0.0:0",
            "--host-token",
            "t",
            "--access",
            "open",
            "--data-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing --access open on non-loopback address 0.0.0.0:0"),
        "{stderr}"
    );
}

/// A viewer link's token is a credential: the request span logs `/v/[token]`, never the token, for a
/// valid link (303) and a wrong one (404) alike. Before, the span logged `path=/v/<token>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewer_link_tokens_never_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.stderr");
    let (server, base) = serve_logging_to(dir.path(), &["--access", "signed-in"], &log);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client
        .post(format!("{base}/api/host/sessions/chat-42/mutations"))
        .bearer_auth("cli-test-token")
        .json(&serde_json::json!({"logical_turn_id": "t1", "mutation_id": "m1", "tool": "mcp__dashboards__create"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let r = client
        .post(format!("{base}/api/host/sessions/chat-42/viewer-links"))
        .bearer_auth("cli-test-token")
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let url = r.json::<serde_json::Value>().await.unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = url.strip_prefix("/v/").unwrap().to_owned();
    assert_eq!(token.len(), 43, "{url}");

    let r = client
        .get(format!("{base}/v/{token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/sessions/chat-42");
    let other = "NotAViewerLinkTokenButLooksLikeOne_01234567";
    assert_eq!(other.len(), 43);
    let r = client
        .get(format!("{base}/v/{other}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    stop(server);

    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(
        !stderr.contains(&token),
        "the valid link's token is in the log:\n{stderr}"
    );
    assert!(
        !stderr.contains(other),
        "the wrong link's token is in the log:\n{stderr}"
    );
    assert!(
        stderr.matches("path=/v/[token]").count() >= 2,
        "both requests are logged as /v/[token]:\n{stderr}"
    );
}

/// A secret the command cannot show (its stdout a pipe nobody reads: `outcomes staff add ada | head -0`)
/// is not kept: no panic, a non-zero exit with the reason on stderr, and no account (or token) that
/// nobody could use; a name that does not start with a letter or digit is refused (found by the fresh
/// tester).
#[test]
fn a_secret_that_cannot_be_shown_is_not_kept_and_odd_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let closed = |args: &[&str]| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut command = Command::new(BIN);
        command
            .arg("staff")
            .args(args)
            .arg("--data-dir")
            .arg(dir.path())
            .env_remove("OUTCOMES_DATABASE")
            .stdout(writer);
        on_the_suites_backend(&mut command, dir.path());
        command.output().unwrap()
    };
    let out = closed(&["add", "ada"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("the password could not be shown, so the account ada was not kept"),
        "{stderr}"
    );
    let list = staff(dir.path(), &["list"]);
    assert!(list.ok, "{}", list.stderr);
    assert_eq!(
        list.stdout.trim(),
        "no staff accounts; add one with `outcomes staff add NAME`"
    );
    // A token the same way: the account stays, the token is taken back.
    let added = staff(dir.path(), &["add", "ada"]);
    assert!(added.ok, "{}", added.stderr);
    let out = closed(&["token", "ada"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the token could not be shown, so it was not kept"),
        "{stderr}"
    );
    let list = staff(dir.path(), &["list"]);
    assert!(list.stdout.contains("ada\tadded "), "{}", list.stdout);
    assert!(
        list.stdout.contains("\t0 API token(s)\t"),
        "{}",
        list.stdout
    );
    for name in [".", "..", "@", "_ada", ".ada"] {
        let out = staff(dir.path(), &["add", name]);
        assert!(!out.ok, "{name}");
        assert_eq!(out.stdout, "", "{name}");
        assert!(
            out.stderr
                .contains("a staff name starts with an ASCII letter or digit"),
            "{name}: {}",
            out.stderr
        );
    }
}
