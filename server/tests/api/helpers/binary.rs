//! The built `outcomes` binary as an operator runs it (the reliability suites, `process`, `instances`):
//! start it on a loopback port with its own data directory, wait for `/healthz`, kill it (SIGKILL) or stop
//! it (SIGTERM), read its log, parse an SSE body.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The server binary Cargo built for this test run (debug under `cargo test`, release with `--release`).
pub const BIN: &str = env!("CARGO_BIN_EXE_outcomes");

/// The host token every server of this suite is started with.
pub const TOKEN: &str = "reliability-host-token";

/// Resident memory of a process, in KiB (`VmRSS` of `/proc/<pid>/status`; 0 when unreadable).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// True when the long (soak) variants are asked for: `OUTCOMES_SOAK=1`.
pub fn soak() -> bool {
    std::env::var("OUTCOMES_SOAK").is_ok_and(|v| v == "1")
}

/// A running `outcomes serve` process on `127.0.0.1:<ephemeral port>`. Dropping it kills the process.
pub struct Server {
    child: Option<Child>,
    /// `http://127.0.0.1:<port>` (no trailing slash).
    pub base: String,
    pub addr: SocketAddr,
    log: tempfile::NamedTempFile,
}

impl Server {
    /// Starts `outcomes serve --addr 127.0.0.1:0 --data-dir <data_dir> --host-token TOKEN <extra>`,
    /// reads the address it announces on stdout and waits until `/healthz` answers 200. Panics (with the
    /// server's log) if it does not come up within 30 s. No `OUTCOMES_*` variable of the caller's
    /// environment reaches the process.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Server {
        Server::start_limited(data_dir, extra, None, &[])
    }

    /// Like [`Server::start`], with `env` added to the process's environment (e.g. `LD_PRELOAD`).
    pub fn start_with_env(
        data_dir: &Path,
        extra: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Server {
        Server::start_limited(data_dir, extra, None, env)
    }

    /// Like [`Server::start`], with the process's open-file limit (soft and hard) set to `files`, as
    /// `ulimit -n <files>` would.
    pub fn start_with_file_limit(data_dir: &Path, extra: &[&str], files: u64) -> Server {
        Server::start_limited(data_dir, extra, Some(files), &[])
    }

    fn start_limited(
        data_dir: &Path,
        extra: &[&str],
        files: Option<u64>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Server {
        let log = tempfile::NamedTempFile::new().expect("log file");
        let mut cmd = Command::new(BIN);
        if let Some(files) = files {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                cmd.pre_exec(move || rlimit::setrlimit(rlimit::Resource::NOFILE, files, files));
            }
        }
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--host-token", TOKEN])
            .arg("--data-dir")
            .arg(data_dir)
            .args(extra)
            .stdin(Stdio::null());
        if super::postgres().is_some() && !extra.contains(&"--database") {
            cmd.arg("--database").arg(super::database_for(data_dir));
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log.reopen().expect("log file"));
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("OUTCOMES_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd.spawn().expect("spawn outcomes");
        // The first stdout line announces the address; read it on a thread so a server that hangs
        // before announcing fails the test after 30 s instead of stalling it. The thread then keeps
        // draining stdout, so a later print can never fail on a closed pipe.
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            let _ = tx.send(line);
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let mut server = Server {
            child: Some(child),
            base: String::new(),
            addr: "127.0.0.1:0".parse().expect("addr"),
            log,
        };
        let Some(url) = line.trim().strip_prefix("outcomes: serving on ") else {
            let _ = server.kill();
            panic!(
                "the server did not announce its address: {line:?}\n{}",
                server.log()
            );
        };
        server.base = url.trim_end_matches('/').to_owned();
        server.addr = server
            .base
            .trim_start_matches("http://")
            .parse()
            .expect("announced address");
        if !wait_healthy(server.addr, Duration::from_secs(30)) {
            let _ = server.kill();
            panic!("/healthz never answered 200\n{}", server.log());
        }
        server
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// SIGKILL (`kill -9`), then reaps the process. Nothing of the server runs after this returns.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = child.kill();
        child.wait().ok()
    }

    /// SIGTERM (graceful shutdown), then waits for the exit.
    pub fn terminate(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        child.wait().ok()
    }

    /// What the server logged on stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// One raw `GET <path>` over a fresh connection (no client library), with `timeout` for connect, write
/// and read. Returns the status code and the whole response text, or `None` on any I/O failure.
pub fn raw_get(addr: SocketAddr, path: &str, timeout: Duration) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split(' ').nth(1)?.parse().ok()?;
    Some((status, text))
}

/// Polls `GET /healthz` until it answers 200 or `within` passes.
pub fn wait_healthy(addr: SocketAddr, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some((200, _)) = raw_get(addr, "/healthz", Duration::from_secs(2)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// One event of a `text/event-stream` body.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub id: Option<String>,
    pub data: Option<String>,
    pub retry: Option<String>,
}

/// Splits an SSE body into its events (blocks ended by a blank line), field by field. Comment lines
/// (`: ...`) are skipped; several `data:` lines are joined with `\n` as the SSE spec says.
pub fn sse_events(body: &str) -> Vec<SseEvent> {
    let mut out = Vec::new();
    let mut cur = SseEvent::default();
    let mut any = false;
    for line in body.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if any {
                out.push(std::mem::take(&mut cur));
                any = false;
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
        any = true;
        match field {
            "event" => cur.event = Some(value),
            "id" => cur.id = Some(value),
            "retry" => cur.retry = Some(value),
            "data" => {
                cur.data = Some(match cur.data.take() {
                    Some(d) => format!("{d}\n{value}"),
                    None => value,
                })
            }
            _ => {}
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// A reqwest client for one server life: bounded request time, so a hung server fails a test instead
/// of stalling it.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}
