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

/// A SQLite file at `path` made by "another application": `sql` run on a new database (rollback journal,
/// as most applications leave it), then mode `mode`.
async fn foreign_sqlite(path: &std::path::Path, sql: &str, mode: u32) {
    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// The file's bytes and mode.
fn snapshot(path: &std::path::Path) -> (Vec<u8>, u32) {
    use std::os::unix::fs::PermissionsExt;
    (
        std::fs::read(path).unwrap(),
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777,
    )
}

/// `serve --database <file>` on a file that is not the ledger's: another application's SQLite database
/// (an unrelated `users` table; a `sessions` table named like the ledger's) or a file that is not SQLite
/// at all. Each is refused at start with a non-zero exit and a message naming the file, and left exactly
/// as it was: same bytes, same mode (no chmod), no `_sqlx_migrations` table, no WAL switch, no `-wal` or
/// `-shm` file, no lock file, no data directory. (It used to add 12 tables to the first and serve, and
/// chmod every file 0600 before any check.)
#[tokio::test]
async fn serve_refuses_another_applications_file_and_leaves_it_as_it_was() {
    const SQLX_TABLE: &str = "CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL, checksum BLOB NOT NULL, execution_time BIGINT NOT NULL);";
    let sqlx_app = format!("{SQLX_TABLE} INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (20240101000000, 'init', 1, x'00', 1); CREATE TABLE sessions (id INTEGER PRIMARY KEY);");
    let sqlx_empty = format!("{SQLX_TABLE} CREATE TABLE staff (name TEXT, pw TEXT);");
    let cases: [(&str, Option<&str>, &str); 5] = [
        // Another sqlx application: a migration table, but not the ledger's migrations (it used to be
        // taken for a ledger: switched to WAL, chmod'ed, migrated).
        (
            "sqlxapp.sqlite",
            Some(&sqlx_app),
            "holds another application's migration record, not an outcomes ledger's; it was left as it was",
        ),
        (
            "sqlx-empty.sqlite",
            Some(&sqlx_empty),
            "holds another application's migration record, not an outcomes ledger's; it was left as it was",
        ),
        (
            "app.sqlite",
            Some("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');"),
            "is another application's database, not an outcomes ledger (it holds the table users); it was left as it was: give the ledger its own --database or --data-dir",
        ),
        (
            "clash.sqlite",
            Some("CREATE TABLE sessions (id INTEGER PRIMARY KEY, token TEXT); INSERT INTO sessions (token) VALUES ('x');"),
            "is another application's database, not an outcomes ledger (it holds the table sessions); it was left as it was",
        ),
        (
            "garbage.bin",
            None,
            "is not a SQLite database; the ledger opens only its own SQLite file or creates a new one",
        ),
    ];
    for (name, sql, says) in cases {
        let cwd = tempfile::tempdir().unwrap();
        let file = cwd.path().join(name);
        match sql {
            Some(sql) => foreign_sqlite(&file, sql, 0o644).await,
            None => {
                let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
                std::fs::write(&file, bytes).unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
        let before = snapshot(&file);
        // Not `serve_in`: a server that wrongly serves must fail the test, not hang it.
        let (refused, stderr) = serve_is_refused(cwd.path(), &file);
        assert!(refused, "{name}: not refused: {stderr}");
        assert!(
            stderr.contains(&format!("{} {says}", file.display())),
            "{name}: {stderr}"
        );
        assert!(snapshot(&file) == before, "{name}: the file was changed");
        assert_eq!(snapshot(&file).1, 0o644, "{name}");
        let left: Vec<String> = std::fs::read_dir(cwd.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec![name.to_owned()], "{name}: nothing else created");
        // The staff command opens the ledger the same way: refused too, the file unchanged.
        let out = Command::new(BIN)
            .current_dir(cwd.path())
            .args(["staff", "list", "--database", file.to_str().unwrap()])
            .env_remove("OUTCOMES_DATABASE")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&file.display().to_string()), "{stderr}");
        assert!(
            snapshot(&file) == before,
            "{name}: staff list changed the file"
        );
    }
}

/// A SQLite file with no tables (made by `sqlite3 x.db 'VACUUM'`, say) is used, its mode left alone;
/// a new ledger file is created mode 0600.
#[tokio::test]
async fn an_empty_sqlite_file_is_used_without_a_chmod_and_a_new_one_is_0600() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sqlite");
    foreign_sqlite(&empty, "PRAGMA user_version = 0; VACUUM;", 0o640).await;
    let ledger = ledger::Ledger::open(empty.to_str().unwrap(), ledger::LedgerOptions::default())
        .await
        .unwrap();
    ledger.close().await;
    assert_eq!(
        std::fs::metadata(&empty).unwrap().permissions().mode() & 0o777,
        0o640
    );
    // A 0-byte file someone else made: used, its mode left alone too.
    let zero = dir.path().join("zero.sqlite");
    std::fs::write(&zero, b"").unwrap();
    std::fs::set_permissions(&zero, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ledger = ledger::Ledger::open(zero.to_str().unwrap(), ledger::LedgerOptions::default())
        .await
        .unwrap();
    ledger.close().await;
    assert_eq!(
        std::fs::metadata(&zero).unwrap().permissions().mode() & 0o777,
        0o644
    );
    // A FIFO (or a device node) is refused, naming it, and never chmod'ed.
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = ledger::Ledger::open(fifo.to_str().unwrap(), ledger::LedgerOptions::default())
        .await
        .err()
        .expect("a FIFO is refused");
    assert!(
        refused
            .to_string()
            .contains(&format!("{} is not a regular file", fifo.display())),
        "{refused}"
    );
    assert_eq!(
        std::fs::metadata(&fifo).unwrap().permissions().mode() & 0o777,
        0o644
    );
    let new = dir.path().join("new.sqlite");
    let ledger = ledger::Ledger::open(new.to_str().unwrap(), ledger::LedgerOptions::default())
        .await
        .unwrap();
    ledger.close().await;
    assert_eq!(
        std::fs::metadata(&new).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// The rows of `table` in the SQLite file `path` opened alone (read-only, no `-wal` beside it).
async fn count_rows(path: &std::path::Path, table: &str) -> i64 {
    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    let n = sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    n
}

/// `n` mutations approved, started and settled in session `session` of the server at `base`.
async fn write_settled(base: &str, session: &str, from: usize, n: usize) {
    let client = crate::helpers::binary::client();
    let token = crate::helpers::binary::TOKEN;
    let url = format!("{base}/api/host/sessions/{session}/mutations");
    for i in from..from + n {
        let m = format!("m{i}");
        for (u, body, want) in [
            (
                url.clone(),
                serde_json::json!({"logical_turn_id": "t1", "mutation_id": m, "tool": "x"}),
                201,
            ),
            (
                format!("{url}/{m}/intent"),
                serde_json::json!({"attempt_id": "a"}),
                200,
            ),
            (
                format!("{url}/{m}/settlement"),
                serde_json::json!({"attempt_id": "a", "status": "completed"}),
                200,
            ),
        ] {
            let r = client
                .post(&u)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), want, "{u}");
        }
    }
}

/// After SIGTERM the `.sqlite` file alone is the whole ledger: the WAL was checkpointed into it and
/// removed, so a copy of that one file (as `cp` takes a backup) opens with every entry. (It used to hold
/// no tables at all: everything sat in the `-wal` file.)
#[tokio::test]
async fn a_stopped_server_leaves_the_whole_ledger_in_its_sqlite_file() {
    if crate::helpers::skipped_on_postgres("the SQLite file after a stop") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = crate::helpers::binary::Server::start(dir.path(), &[]);
    write_settled(&server.base, "stop", 0, 20).await;
    let status = server.terminate().unwrap();
    assert!(status.success(), "{}", server.log());
    let db = dir.path().join("ledger.sqlite");
    let wal = dir.path().join("ledger.sqlite-wal");
    assert!(
        std::fs::metadata(&wal).map_or(true, |m| m.len() == 0),
        "the WAL still holds data after a clean stop"
    );
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_dir.path().join("copy.sqlite");
    std::fs::copy(&db, &copy).unwrap();
    assert_eq!(count_rows(&copy, "entries").await, 20);
    assert_eq!(count_rows(&copy, "sessions").await, 1);
}

/// `outcomes backup --to FILE` while the server runs and writes: the copy is one whole database file,
/// mode 0600, with everything answered before the backup started; an existing target is refused and
/// left alone; a Postgres ledger is pointed to `pg_dump`; a missing ledger is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_copies_a_running_ledger_to_a_new_file_and_never_overwrites() {
    use std::os::unix::fs::PermissionsExt;
    if crate::helpers::skipped_on_postgres("outcomes backup of a SQLite file") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = crate::helpers::binary::Server::start(dir.path(), &[]);
    write_settled(&server.base, "b", 0, 30).await;
    // Writes go on while the backup runs.
    let base = server.base.clone();
    let more = tokio::spawn(async move { write_settled(&base, "b2", 0, 30).await });
    let out_dir = tempfile::tempdir().unwrap();
    let target = out_dir.path().join("backup.sqlite");
    let backup = |to: &std::path::Path, db: Option<&str>| {
        let mut c = Command::new(BIN);
        c.arg("backup").arg("--to").arg(to);
        match db {
            Some(db) => c.args(["--database", db]),
            None => c.arg("--data-dir").arg(dir.path()),
        };
        c.env_remove("OUTCOMES_DATABASE")
            .env_remove("OUTCOMES_DATA_DIR")
            .output()
            .unwrap()
    };
    let out = backup(&target, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(&format!(
            "outcomes: backed up {} to {} (",
            dir.path().join("ledger.sqlite").display(),
            target.display()
        )),
        "{stdout}"
    );
    more.await.unwrap();
    assert_eq!(
        std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let names: Vec<String> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["backup.sqlite".to_owned()], "one file, no -wal");
    // Everything answered before the backup; of the writes during it, whole mutations only.
    let entries = count_rows(&target, "entries").await;
    assert!((30..=60).contains(&entries), "{entries}");
    let settled = count_rows(&target, "history").await;
    assert!(settled >= 90, "{settled}");

    // An existing target: refused, left alone.
    let before = std::fs::read(&target).unwrap();
    let out = backup(&target, None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} exists already; a backup is written to a new file only",
            target.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), before);

    // Postgres: pg_dump, and the password never shown.
    let out = backup(
        &out_dir.path().join("pg.sqlite"),
        Some("postgres://ada:s3cret@127.0.0.1:1/outcomes"),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pg_dump"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
    assert!(!out_dir.path().join("pg.sqlite").exists());

    // No ledger there: named, nothing created.
    let missing = out_dir.path().join("none.sqlite");
    let out = backup(
        &out_dir.path().join("x.sqlite"),
        Some(missing.to_str().unwrap()),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("there is no ledger at {}", missing.display())),
        "{stderr}"
    );
    assert!(!out_dir.path().join("x.sqlite").exists());
    assert!(!missing.exists());
}

/// Runs `serve --database <file>` in `cwd` and waits (at most 20 s) for it to exit: answers whether it
/// exited non-zero, and its stderr. A server that wrongly serves fails the test instead of hanging it.
fn serve_is_refused(cwd: &std::path::Path, file: &std::path::Path) -> (bool, String) {
    let mut child = Command::new(BIN)
        .current_dir(cwd)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--data-dir",
            "d",
            "--host-token",
            "t",
        ])
        .arg("--database")
        .arg(file)
        .env_remove("OUTCOMES_DATABASE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    (status.is_some_and(|s| !s.success()), stderr)
}

/// The file names in `dir`, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A refused start leaves an existing ledger exactly as it was (issue 38, item 7): a ledger whose
/// migration 12 is recorded as partly applied (`success` false), one whose migration 12's record is
/// gone while its index is there (applying it again fails), and one that a newer build migrated. `serve` exits non-zero naming the file and the reason, and the file keeps its bytes
/// (SHA-256 of the whole file) and its mode (0644, never chmod'ed to 0600); no `-wal`, `-shm`, lock file
/// or data directory appears. It used to switch the file, rewrite it and chmod it 0600 before sqlx
/// refused the migration. A ledger that is only older (migration 12 not yet applied) still opens, is
/// migrated, and is then made 0600.
#[tokio::test]
async fn a_refused_start_leaves_the_ledger_file_byte_identical_with_its_mode() {
    use sha2::Digest;
    use sqlx::Connection;
    use std::os::unix::fs::PermissionsExt;
    // ledger/migrations/0012_webhook_prune.sql: it makes one index, `webhook_outbox_done`.
    let last: i64 = 12;
    let cases: [(&str, String, &str); 3] = [
        (
            "dirty.sqlite",
            format!("UPDATE _sqlx_migrations SET success = 0 WHERE version = {last}"),
            "records migration 12 as partly applied (a start was stopped while it ran); it was left as it was",
        ),
        (
            "half.sqlite",
            format!("DELETE FROM _sqlx_migrations WHERE version = {last}"),
            "migration 12 cannot be applied to this ledger (",
        ),
        (
            "newer.sqlite",
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (9999, 'from the future', 1, x'00', 1)"
                .to_owned(),
            "is an outcomes ledger written by a newer version (it records migrations this build does not have); it was left as it was",
        ),
    ];
    let digest = |p: &std::path::Path| -> (String, u32) {
        let bytes = std::fs::read(p).unwrap();
        let hex: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        (
            hex,
            std::fs::metadata(p).unwrap().permissions().mode() & 0o777,
        )
    };
    // A real ledger, with an entry, closed cleanly (WAL checkpointed, no `-wal` left), then spoiled.
    let make = |file: std::path::PathBuf, spoil: String| async move {
        let ledger = ledger::Ledger::open(file.to_str().unwrap(), ledger::LedgerOptions::default())
            .await
            .unwrap();
        ledger.close().await;
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&file);
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        sqlx::raw_sql(&spoil).execute(&mut conn).await.unwrap();
        sqlx::raw_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    };
    for (name, spoil, says) in cases {
        let cwd = tempfile::tempdir().unwrap();
        let file = cwd.path().join(name);
        make(file.clone(), spoil).await;
        assert_eq!(names_in(cwd.path()), vec![name.to_owned()], "{name}");
        let before = digest(&file);
        assert_eq!(before.1, 0o644);
        let (refused, stderr) = serve_is_refused(cwd.path(), &file);
        assert!(refused, "{name}: not refused: {stderr}");
        assert!(
            stderr.contains(&format!("{} {says}", file.display()))
                || stderr.contains(&format!("{}: {says}", file.display())),
            "{name}: {stderr}"
        );
        assert_eq!(digest(&file), before, "{name}: the file was changed");
        assert_eq!(
            names_in(cwd.path()),
            vec![name.to_owned()],
            "{name}: nothing else"
        );
        // The staff command opens the ledger the same way: refused too, the file unchanged.
        let out = Command::new(BIN)
            .current_dir(cwd.path())
            .args(["staff", "list", "--database", file.to_str().unwrap()])
            .env_remove("OUTCOMES_DATABASE")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{name}");
        assert_eq!(digest(&file), before, "{name}: staff list changed the file");
        assert_eq!(names_in(cwd.path()), vec![name.to_owned()], "{name}");
    }
    // Only older: migration 12's record and its index are both gone. It opens and is migrated.
    let cwd = tempfile::tempdir().unwrap();
    let file = cwd.path().join("older.sqlite");
    make(
        file.clone(),
        format!(
            "DELETE FROM _sqlx_migrations WHERE version = {last}; DROP INDEX webhook_outbox_done;"
        ),
    )
    .await;
    let ledger = ledger::Ledger::open(file.to_str().unwrap(), ledger::LedgerOptions::default())
        .await
        .expect("an older ledger opens");
    ledger.close().await;
    assert_eq!(digest(&file).1, 0o600, "an opened ledger is made 0600");
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&file);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    let applied: bool =
        sqlx::query_scalar("SELECT success FROM _sqlx_migrations WHERE version = ?")
            .bind(last)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    conn.close().await.unwrap();
    assert!(applied, "migration {last} applied whole");
}

/// A ledger with a damaged table page is refused at start (SQLite's `quick_check`), named with the
/// check's findings, and left byte-identical with its mode; `--skip-integrity-check` serves it anyway
/// (docs/ledger.md "Files"). It used to start, answer 500 on reads of that table while `/healthz`
/// said 200, and chmod the file.
#[tokio::test]
async fn a_damaged_ledger_is_refused_at_start_and_left_as_it_was() {
    use sqlx::Connection;
    use std::io::{Seek, SeekFrom, Write};
    use std::os::unix::fs::PermissionsExt;
    if crate::helpers::skipped_on_postgres("a damaged SQLite file") {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    let mut server = crate::helpers::binary::Server::start(&data, &[]);
    write_settled(&server.base, "damaged", 0, 30).await;
    assert!(server.terminate().unwrap().success(), "{}", server.log());
    let file = data.join("ledger.sqlite");
    // The `entries` table's root page: its header's cell count and content offset overwritten.
    let (root, page_size): (i64, i64) = {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&file)
            .read_only(true);
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        let root = sqlx::query_scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'entries'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        let size = sqlx::query_scalar("PRAGMA page_size")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        (root, size)
    };
    let mut f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.seek(SeekFrom::Start(((root - 1) * page_size + 3) as u64))
        .unwrap();
    f.write_all(&[0xff; 5]).unwrap();
    drop(f);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let names = names_in(&data);
    let before = snapshot(&file);

    let (refused, stderr) = serve_is_refused(&data, &file);
    assert!(refused, "not refused: {stderr}");
    assert!(
        stderr.contains(&format!(
            "{} is damaged (SQLite's quick_check: *** in database main ***; ",
            file.display()
        )) && stderr.contains(&format!(
            "page {root}: btreeInitPage() returns error code 11"
        )) && stderr.contains(
            "it was left as it was: restore the ledger from a backup (`outcomes backup`, \
             docs/ledger.md \"Backups\"), or start with --skip-integrity-check to serve what can \
             still be read"
        ),
        "{stderr}"
    );
    assert_eq!(snapshot(&file), before, "the file was changed");
    assert_eq!(names_in(&data), names, "nothing else");

    // Served anyway when asked: it starts, and says it is alive.
    let server = crate::helpers::binary::Server::start(&data, &["--skip-integrity-check"]);
    let r = crate::helpers::binary::client()
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}
