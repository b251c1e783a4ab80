//! The server under test (`outcomes serve`, started and stopped here) and CPU clocks: the server's from
//! `/proc/<pid>/stat`, the generator's own from `getrusage`.

use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to answer `/healthz` after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How the benchmark starts each server: limits raised so that the bench measures the ledger, not the
/// protections against hostile clients.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The `outcomes` binary (a release build).
    pub bin: PathBuf,
    /// Bearer token of the host write API, passed as `OUTCOMES_HOST_TOKEN`.
    pub token: String,
    /// `RUST_LOG` of the server (its default is `info,sqlx=warn`: one line per response).
    pub log_filter: String,
}

/// A running `outcomes serve` on a loopback port, killed when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`, no trailing slash.
    pub base: String,
    /// The listening address.
    pub addr: SocketAddr,
    /// Where the server's stdout and stderr go.
    pub log: PathBuf,
    /// Name in the report (`disk`, `tmpfs`, ...).
    pub name: String,
}

impl Server {
    /// Starts a server on a fresh loopback port with its ledger in `data_dir` (created if missing) and
    /// waits until `/healthz` answers. Flags: `--access open` (reads on loopback without a credential),
    /// live-stream caps of 1,000,000 in total and per session, 60,000 connections (the server keeps it
    /// below its file limit), writes waiting up to 60 s for the write lock. The log goes to
    /// `<data_dir>.log`.
    pub async fn start(
        config: &ServerConfig,
        name: &str,
        data_dir: &Path,
        client: &reqwest::Client,
    ) -> Result<Server, String> {
        Server::start_with(config, name, data_dir, &[], client).await
    }

    /// [`Server::start`] with `extra` arguments after the others (e.g. `--database postgres://…`: the
    /// ledger is then there, and `data_dir` holds only the log's neighbour).
    pub async fn start_with(
        config: &ServerConfig,
        name: &str,
        data_dir: &Path,
        extra: &[String],
        client: &reqwest::Client,
    ) -> Result<Server, String> {
        std::fs::create_dir_all(data_dir)
            .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
        let log = data_dir.with_extension("log");
        let mut last_error = String::new();
        // A port picked free may be taken before the server binds it: try a few.
        for _ in 0..3 {
            let addr = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
            let out = std::fs::File::create(&log)
                .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
            let err = out
                .try_clone()
                .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
            let mut command = Command::new(&config.bin);
            // No OUTCOMES_* setting of the caller's environment may change what is measured.
            for (key, _) in std::env::vars_os() {
                if key.to_string_lossy().starts_with("OUTCOMES_") {
                    command.env_remove(key);
                }
            }
            command
                .arg("serve")
                .arg("--addr")
                .arg(addr.to_string())
                .arg("--data-dir")
                .arg(data_dir)
                .args(["--access", "open"])
                .args(["--max-live-streams", "1000000"])
                .args(["--max-live-streams-per-session", "1000000"])
                .args(["--max-connections", "60000"])
                .args(["--write-wait-ms", "60000"])
                .args(extra)
                .env("OUTCOMES_HOST_TOKEN", &config.token)
                .env("RUST_LOG", &config.log_filter)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            // SAFETY: prctl is async-signal-safe; it only asks the kernel to end the server with
            // SIGTERM when this process dies, so no server outlives an interrupted bench.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                    Ok(())
                });
            }
            let child = command
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", config.bin.display()))?;
            let mut server = Server {
                child,
                base: format!("http://{addr}"),
                addr,
                log: log.clone(),
                name: name.to_owned(),
            };
            match server.wait_ready(client).await {
                Ok(()) => return Ok(server),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    async fn wait_ready(&mut self, client: &reqwest::Client) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "server {} exited at start ({status}); its log ends:\n{}",
                    self.name,
                    self.log_tail()
                ));
            }
            let url = format!("{}/healthz", self.base);
            if let Ok(r) = client.get(&url).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "server {} did not answer /healthz within {} s; its log ends:\n{}",
                    self.name,
                    START_TIMEOUT.as_secs(),
                    self.log_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Err` naming the exit status and the end of the log when the server has exited.
    pub fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "server {} exited ({status}); its log ends:\n{}",
                self.name,
                self.log_tail()
            )),
            Err(e) => Err(format!("cannot check server {}: {e}", self.name)),
        }
    }

    /// The server's CPU time so far (user + system, every thread), in seconds; resolution one clock tick
    /// (`getconf CLK_TCK`, usually 10 ms).
    pub fn cpu_secs(&self) -> Result<f64, String> {
        proc_cpu_secs(self.pid())
    }

    /// The last 20 lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Stops the server: SIGTERM, then SIGKILL after 10 s.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: signals our own child, which has not been reaped yet (try_wait said so).
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// A loopback address with a port free at the time of the call.
fn free_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}

/// Clock ticks per second (`getconf CLK_TCK`).
pub fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf reads a constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// utime + stime of a process (all its threads) from `/proc/<pid>/stat`, in seconds.
fn proc_cpu_secs(pid: u32) -> Result<f64, String> {
    let stat = ProcStat::read(pid)?;
    Ok((stat.utime + stat.stime) as f64 / clock_ticks_per_sec())
}

/// CPU time of a process tree (a Postgres postmaster and its backends) so far, in seconds: the process's
/// utime + stime, the cutime + cstime of its children it has reaped (a backend that exited), and the
/// utime + stime of its live children (`/proc/*/stat` with this parent). Grandchildren are not counted.
pub fn tree_cpu_secs(pid: u32) -> Result<f64, String> {
    let root = ProcStat::read(pid)?;
    let mut ticks = root.utime + root.stime + root.cutime + root.cstime;
    let dir = std::fs::read_dir("/proc").map_err(|e| format!("cannot read /proc: {e}"))?;
    for entry in dir.flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // A process may exit between the listing and the read: skipped (its CPU moves to cutime).
        if let Ok(stat) = ProcStat::read(child) {
            if stat.ppid == pid {
                ticks += stat.utime + stat.stime;
            }
        }
    }
    Ok(ticks as f64 / clock_ticks_per_sec())
}

/// The parent process id of a process (`/proc/<pid>/stat`).
pub fn parent_pid(pid: u32) -> Result<u32, String> {
    ProcStat::read(pid).map(|s| s.ppid)
}

/// The fields of `/proc/<pid>/stat` the bench reads, in clock ticks.
struct ProcStat {
    ppid: u32,
    utime: u64,
    stime: u64,
    /// CPU of the children the process has waited for.
    cutime: u64,
    cstime: u64,
}

impl ProcStat {
    fn read(pid: u32) -> Result<ProcStat, String> {
        let path = format!("/proc/{pid}/stat");
        let stat =
            std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
        // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis,
        // where field 3 (state) comes first, so ppid (4) is the 2nd, utime (14) and stime (15) the 12th
        // and 13th, cutime (16) and cstime (17) the 14th and 15th.
        let rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r)
            .ok_or_else(|| format!("{path}: unexpected format"))?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |i: usize| -> Result<u64, String> {
            fields
                .get(i)
                .and_then(|f| f.parse().ok())
                .ok_or_else(|| format!("{path}: unexpected format"))
        };
        Ok(ProcStat {
            ppid: u32::try_from(field(1)?).map_err(|_| format!("{path}: unexpected format"))?,
            utime: field(11)?,
            stime: field(12)?,
            cutime: field(13)?,
            cstime: field(14)?,
        })
    }
}

/// CPU time of the whole machine so far (every process, every core: user, nice, system, irq, softirq,
/// steal from the first line of `/proc/stat`), in seconds. Minus the server's and the generator's own, it
/// is what other processes took during a phase: a measure of interference on a shared machine.
pub fn machine_cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let busy: u64 = [0, 1, 2, 5, 6, 7]
        .iter()
        .map(|&i| fields.get(i).copied().unwrap_or(0))
        .sum();
    busy as f64 / clock_ticks_per_sec()
}

/// Cores online (`getconf _NPROCESSORS_ONLN`).
pub fn cores() -> f64 {
    // SAFETY: sysconf reads a constant.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as f64
    } else {
        1.0
    }
}

/// The 1-minute load average (`/proc/loadavg`).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// This process's CPU time so far (user + system, every thread, `getrusage(RUSAGE_SELF)`), in seconds,
/// microsecond resolution.
pub fn self_cpu_secs() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Raises this process's open-file limit to its hard limit (1,000 live subscribers need more than the
/// usual 1,024 descriptors); answers the soft limit in force afterwards.
pub fn raise_file_limit() -> u64 {
    // SAFETY: getrlimit/setrlimit on a zeroed struct of the right type.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        if limit.rlim_cur < limit.rlim_max {
            let wanted = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) == 0 {
                return limit.rlim_max;
            }
        }
        limit.rlim_cur
    }
}
