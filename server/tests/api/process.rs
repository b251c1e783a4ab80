//! The `outcomes` binary as an operator runs it: refusal to bind a non-loopback address without a token,
//! graceful shutdown on SIGTERM with a live stream open, `outcomes project` on stdin.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_outcomes");

#[test]
fn serve_refuses_a_non_loopback_address_without_an_explicit_host_token() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--addr", "0.0.0.0:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("OUTCOMES_HOST_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to listen on non-loopback address 0.0.0.0:0"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("host-token").exists(),
        "nothing is created when refusing"
    );
}

#[cfg(unix)]
#[test]
fn serve_refuses_a_host_token_file_others_may_read_naming_the_file_and_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let token_path = dir.path().join("host-token");
    std::fs::write(&token_path, "a-secret-host-token\n").unwrap();
    std::fs::set_permissions(&token_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("OUTCOMES_HOST_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("serving on"), "{stdout}");
    let p = token_path.display();
    assert!(
        stderr.contains(&format!(
            "the host token file {p} has mode 0644: group or others have access to it; make it the owner's alone with `chmod 600 {p}`"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("a-secret-host-token"), "{stderr}");
    assert!(!stdout.contains("a-secret-host-token"), "{stdout}");
    // Nothing was changed: the operator's file is as it was.
    assert_eq!(
        std::fs::metadata(&token_path).unwrap().permissions().mode() & 0o777,
        0o644
    );
    assert_eq!(
        std::fs::read_to_string(&token_path).unwrap(),
        "a-secret-host-token\n"
    );
}

#[test]
fn the_generated_host_token_is_mode_0600_and_never_logged() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("OUTCOMES_HOST_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("outcomes: serving on http://127.0.0.1:"),
        "{line}"
    );
    let token_path = dir.path().join("host-token");
    let token = std::fs::read_to_string(&token_path).unwrap();
    assert_eq!(token.trim().len(), 64);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&token_path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    send_signal(child.id(), "TERM");
    let out = child.wait_with_output().unwrap();
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(logs.contains("host token: generated"), "{logs}");
    assert!(
        !logs.contains(token.trim()),
        "the token must never be logged"
    );
}

fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sigterm_ends_live_streams_and_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--host-token",
            "t",
            "--data-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let base = line
        .trim()
        .trim_start_matches("outcomes: serving on ")
        .trim_end_matches('/')
        .to_owned();
    let addr = base.trim_start_matches("http://").to_owned();

    // Create a session, then hold its live stream open over a raw socket.
    let approve = r#"{"logical_turn_id":"t","mutation_id":"m","tool":"x"}"#;
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /api/host/sessions/s/mutations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{approve}",
        approve.len()
    )
    .unwrap();
    let mut reply = String::new();
    std::io::Read::read_to_string(&mut s, &mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 201"), "{reply}");

    let mut live = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        live,
        "GET /api/run-events?session_id=s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .unwrap();
    live.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(live);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");

    let started = Instant::now();
    send_signal(child.id(), "TERM");
    // The stream ends (chunked terminator, then EOF) instead of hanging.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    assert!(
        rest.ends_with("0\r\n\r\n"),
        "stream ended cleanly: {rest:?}"
    );
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn project_prints_one_record_or_null_per_ledger_entry() {
    let mut child = Command::new(BIN)
        .arg("project")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = concat!(
        r#"{"logical_turn_id":"t","mutation_id":"m1","tool":"x","status":"approved","intent_recorded":false}"#,
        "\n",
        r#"{"logical_turn_id":"t","mutation_id":"m2","tool":"x","status":"outcome_unknown","intent_recorded":true,"reason":"execution_timeout","metadata":{"id":"419","url":"https://user:pw@h.example/i/419?x=1#f","title":"Issue"}}"#,
        "\n",
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        concat!(
            "null\n",
            r#"{"schema":"mutation_outcome/v1","logical_turn_id":"t","mutation_id":"m2","tool":"x","status":"outcome_unknown","resource_id":"419","url":"https://h.example/i/419","title":"Issue","reason":"execution_timeout"}"#,
            "\n"
        )
    );
}

#[test]
fn project_reports_a_bad_line_with_its_number_and_fails() {
    let mut child = Command::new(BIN)
        .arg("project")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"nope\":1}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1: not a ledger entry"));
}

/// `outcomes serve --addr 127.0.0.1:0 --data-dir d <args>` in the empty directory `cwd`, without
/// `OUTCOMES_HOST_TOKEN`: whether it succeeded, and its stderr.
fn serve_in(cwd: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .current_dir(cwd)
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir", "d"])
        .args(args)
        .env_remove("OUTCOMES_HOST_TOKEN")
        .env_remove("OUTCOMES_DATABASE")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `--database` names SQLite or Postgres and nothing else: another URL scheme is refused at start with a
/// clear message, and (unlike before) nothing is created under a name like `postgres:` or `mysql:`.
#[test]
fn serve_refuses_a_database_url_it_cannot_serve_and_creates_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    let (ok, stderr) = serve_in(cwd.path(), &["--database", "mysql://app:pw@db/outcomes"]);
    assert!(!ok);
    assert!(
        stderr.contains("database: unsupported database URL scheme `mysql:`: give a SQLite file path, a `sqlite:` URL or a `postgres://` URL"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "nothing created"
    );
}

/// With Postgres every instance must take the same host token, so `serve` refuses to generate one; the
/// message names the URL without its password.
#[test]
fn serve_on_postgres_requires_the_host_token_and_never_prints_the_password() {
    let cwd = tempfile::tempdir().unwrap();
    let (ok, stderr) = serve_in(
        cwd.path(),
        &[
            "--database",
            "postgres://ada:s3cret-pw@127.0.0.1:1/outcomes",
        ],
    );
    assert!(!ok);
    assert!(
        stderr.contains("with Postgres (postgres://ada:***@127.0.0.1:1/outcomes) every instance must take the same host token: give it with --host-token / OUTCOMES_HOST_TOKEN"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret-pw"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "nothing created"
    );
}

/// An unreachable Postgres at start: a clear error at once, naming the URL without its password and
/// the reason, and no `postgres:` folder (a `postgres://` URL used to be taken for a SQLite path).
#[test]
fn serve_on_an_unreachable_postgres_says_so_without_the_password() {
    let cwd = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (ok, stderr) = serve_in(
        cwd.path(),
        &[
            "--host-token",
            "t",
            "--database",
            "postgres://ada:s3cret-pw@127.0.0.1:1/outcomes",
        ],
    );
    assert!(!ok);
    assert!(
        stderr.contains(
            "cannot connect to the ledger database postgres://ada:***@127.0.0.1:1/outcomes: "
        ),
        "{stderr}"
    );
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(!stderr.contains("s3cret-pw"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10), "at once");
    assert!(!cwd.path().join("postgres:").exists());
    assert!(!cwd.path().join("d").join("ledger.sqlite").exists());
}
