//! SQLite's own one-commit rate on a filesystem: the limit a ledger that commits each settle alone cannot
//! pass, measured the way the ledger opens its database (WAL, `synchronous=FULL`).

use std::path::Path;
use std::time::{Duration, Instant};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection};

/// What the probe measured.
#[derive(Clone, Debug)]
pub struct CommitRate {
    /// Transactions committed while timed.
    pub commits: u64,
    /// Timed seconds.
    pub secs: f64,
    /// Seconds each timed commit took (`BEGIN` to `COMMIT` returned); empty where not measured.
    pub latencies: Vec<f64>,
    /// CPU seconds (utime+stime) this process spent while the commits were timed: SQLite's own work and
    /// the kernel's for its writes and fsyncs (the generator does nothing else meanwhile).
    pub cpu_secs: f64,
}

impl CommitRate {
    /// Both measurements together (commits and seconds added).
    pub fn and(&self, other: &CommitRate) -> CommitRate {
        CommitRate {
            commits: self.commits + other.commits,
            secs: self.secs + other.secs,
            latencies: [self.latencies.as_slice(), other.latencies.as_slice()].concat(),
            cpu_secs: self.cpu_secs + other.cpu_secs,
        }
    }

    /// CPU per commit, µs.
    pub fn cpu_us_per_commit(&self) -> f64 {
        crate::load::per(self.cpu_secs * 1e6, self.commits as f64)
    }

    /// The median commit latency, seconds; NaN when not measured.
    pub fn p50_secs(&self) -> f64 {
        median_secs(&self.latencies)
    }

    /// Commits per second.
    pub fn rate(&self) -> f64 {
        crate::load::per(self.commits as f64, self.secs)
    }
}

/// Creates `<dir>/sqlite-probe.sqlite` (WAL, `synchronous=FULL`), then commits one small single-row
/// `INSERT` (100 bytes) per transaction, one after another, for `secs` seconds (after 20 untimed ones).
/// Each transaction is one `BEGIN; INSERT …; COMMIT` script sent to sqlx's SQLite worker at once, so the
/// rate is SQLite's and the filesystem's, not three hand-offs between threads per commit. The database
/// is removed afterwards.
pub async fn one_commit_rate(dir: &Path, secs: f64) -> Result<CommitRate, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("sqlite-probe.sqlite");
    remove(&path);
    let result = measure(&path, secs).await;
    remove(&path);
    result.map_err(|e| format!("SQLite probe in {}: {e}", dir.display()))
}

async fn measure(path: &Path, secs: f64) -> Result<CommitRate, sqlx::Error> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .connect()
        .await?;
    sqlx::query("CREATE TABLE probe (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .execute(&mut conn)
        .await?;
    let script = format!(
        "BEGIN; INSERT INTO probe (body) VALUES ('{}'); COMMIT;",
        "x".repeat(100)
    );
    for _ in 0..20 {
        sqlx::raw_sql(&script).execute(&mut conn).await?;
    }
    let started = Instant::now();
    let cpu_before = crate::server::self_cpu_secs();
    let deadline = started + Duration::from_secs_f64(secs);
    let mut commits = 0;
    let mut latencies = Vec::new();
    while Instant::now() < deadline {
        let sent = Instant::now();
        sqlx::raw_sql(&script).execute(&mut conn).await?;
        latencies.push(sent.elapsed().as_secs_f64());
        commits += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu_secs = crate::server::self_cpu_secs() - cpu_before;
    conn.close().await?;
    Ok(CommitRate {
        commits,
        secs,
        latencies,
        cpu_secs,
    })
}

fn remove(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

/// The median of `samples` (seconds); NaN when there is none.
pub fn median_secs(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}
