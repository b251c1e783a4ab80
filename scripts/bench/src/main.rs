//! `outcomes-bench`: the load generator of `scripts/bench.sh`. It starts release servers (`outcomes serve`)
//! on a disk directory and on tmpfs, drives them through HTTP only, and prints each figure beside its limit
//! measured in the same run:
//!
//! 1. settles per second with 1, 8 and 64 concurrent single-operation writers and with batches of 100, on
//!    disk and on tmpfs, each ÷ SQLite's own one-commit rate on the same filesystem measured just before
//!    and after the phase (WAL, `synchronous=FULL`, one single-row `INSERT` per transaction); 64 writers
//!    on disk ÷ on tmpfs; with 1 writer, the median time of one settle (request sent to answer read) ÷
//!    the median time of one such SQLite commit in the same probes (issue 27);
//! 2. server CPU per settle (utime + stime from `/proc/<pid>/stat` around each timed phase);
//! 3. the history of a 10,000-outcome session ÷ serde_json serialising the same body in memory;
//! 4. a replay of the last 100 revisions of a 10,000-outcome turn ÷ its full replay;
//! 5. the writer rate with 1,000 live subscribers reading ÷ with none;
//! 6. with `--postgres-url`: settles per second of 64 single-operation writers spread over two servers
//!    on one Postgres database ÷ Postgres's own one-commit rate (one connection, `synchronous_commit`
//!    on, one single-row `INSERT` per transaction) measured just before and after the phase, and ÷ the
//!    same with 64 connections at once (informational); the CPU per settle of both servers together and
//!    of the Postgres cluster;
//!
//! and, to show the generator is not the bottleneck, its own CPU per request, the rate it reaches against
//! `/healthz`, and the CPU other processes took and the machine left idle during the timed phases (from
//! `/proc/stat`). Exit status: 0 when every figure was measured without a failed request (a MISS is
//! not a failure), 1 otherwise, 2 when the bench could not run.

// Defined before the modules: `phases` logs with it.
/// Progress on stderr, as the bench goes.
macro_rules! progress {
    ($($arg:tt)*) => { eprintln!("[bench {:>5.1}s] {}", crate::started().elapsed().as_secs_f64(), format!($($arg)*)) };
}

mod figures;
mod load;
mod phases;
mod postgres;
mod reads;
mod report;
mod server;
mod sqlite;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use figures::rows;
use load::{Http, Shape};
use phases::{postgres_phase, reads_alone, sqlite_phases, Measured};
use server::ServerConfig;

/// Benchmark of the outcome ledger server: settle rates, CPU per settle, history, replay and live fan-out,
/// each beside its limit measured in the same run.
#[derive(Debug, Parser)]
#[command(name = "outcomes-bench", version)]
struct Args {
    /// The `outcomes` binary to measure (a release build).
    #[arg(long)]
    server_bin: PathBuf,
    /// A directory on the disk to measure; the servers' data directories and the SQLite probe are made
    /// inside it. The caller removes it.
    #[arg(long)]
    disk_dir: PathBuf,
    /// A directory on tmpfs (RAM), used the same way.
    #[arg(long)]
    tmpfs_dir: PathBuf,
    /// Every phase tiny: a smoke test of the whole bench (under 30 s).
    #[arg(long)]
    quick: bool,
    /// Seconds of timed settling per write phase [default: 4; --quick 0.3].
    #[arg(long)]
    phase_secs: Option<f64>,
    /// Seconds of SQLite's one-commit probe around each write phase, half before and half after it, on
    /// the phase's filesystem [default: 2; --quick 0.4].
    #[arg(long)]
    sqlite_secs: Option<f64>,
    /// Outcomes in the history and replay session (one turn) [default: 10000; --quick 1000].
    #[arg(long)]
    history_outcomes: Option<usize>,
    /// Live subscribers of the fan-out phase [default: 1000; --quick 100].
    #[arg(long)]
    subscribers: Option<usize>,
    /// Timed samples behind each median of the read figures [default: 7; --quick 3].
    #[arg(long)]
    samples: Option<usize>,
    /// How often each live subscriber reads its stream, in milliseconds (0: as soon as anything arrives).
    #[arg(long, default_value_t = 50)]
    subscriber_read_ms: u64,
    /// `RUST_LOG` of the servers (the server's own default: one log line per response).
    #[arg(long, default_value = "info,sqlx=warn")]
    server_log: String,
    /// A Postgres database for the Postgres phase (`postgres://USER@HOST:PORT/DB`, without an `options`
    /// parameter; scripts/bench.sh starts a throwaway cluster). The phase's ledger goes in a fresh schema
    /// `outcomes_bench_<pid>`, the commit probe's table in `outcomes_bench_probe`; both are dropped at the
    /// end. Without it the Postgres phase is not run.
    #[arg(long)]
    postgres_url: Option<String>,
    /// Run only the Postgres phase (needs --postgres-url).
    #[arg(long, requires = "postgres_url")]
    only_postgres: bool,
    /// Run only the history and replay figures (phases 3 and 4) on SQLite: no write phases, no live
    /// fan-out, no Postgres phase.
    #[arg(long, conflicts_with = "only_postgres")]
    only_reads: bool,
    /// Seconds of each of Postgres's commit probes (1 connection, 64 connections) around the Postgres
    /// phase, half before and half after it [default: 2; --quick 0.4].
    #[arg(long)]
    postgres_secs: Option<f64>,
}

/// The sizes of a run, from the arguments.
#[derive(Clone, Copy, Debug)]
struct Settings {
    /// Timed seconds of each write phase.
    phase_secs: f64,
    /// Timed seconds of each SQLite probe.
    sqlite_secs: f64,
    /// Timed seconds of each Postgres probe.
    postgres_secs: f64,
    /// Outcomes of the history/replay session.
    history_outcomes: usize,
    /// Live subscribers.
    subscribers: usize,
    /// Samples per median.
    samples: usize,
    /// How often a live subscriber reads.
    subscriber_read: Duration,
    /// Settles at most per single-operation phase.
    max_single: u64,
    /// Settles at most per batch phase.
    max_batch: u64,
}

/// Writers of the batch phases and of the live phase.
const BATCH_WRITERS: usize = 8;
/// Settles per batch.
const BATCH_SIZE: usize = 100;
/// Writers of the live fan-out phase (all on the one session the subscribers read).
const LIVE_WRITERS: usize = 8;
/// Concurrent clients of the `/healthz` ceiling.
const CEILING_CONNECTIONS: usize = 64;
/// Single-operation writers of the Postgres phase, and connections of the concurrent commit probe.
const PG_WRITERS: usize = 64;
/// Servers of the Postgres phase, all on the same database.
const PG_INSTANCES: usize = 2;

/// The write phases, in the order they run (each on disk, then on tmpfs).
const SHAPES: [Shape; 4] = [
    Shape::Single { writers: 1 },
    Shape::Single { writers: 8 },
    Shape::Single { writers: 64 },
    Shape::Batch {
        writers: BATCH_WRITERS,
        size: BATCH_SIZE,
    },
];

impl Settings {
    fn from(args: &Args) -> Settings {
        let q = args.quick;
        Settings {
            phase_secs: args.phase_secs.unwrap_or(if q { 0.3 } else { 4.0 }),
            sqlite_secs: args.sqlite_secs.unwrap_or(if q { 0.4 } else { 2.0 }),
            postgres_secs: args.postgres_secs.unwrap_or(if q { 0.4 } else { 2.0 }),
            history_outcomes: args
                .history_outcomes
                .unwrap_or(if q { 1000 } else { 10_000 })
                .max(101),
            subscribers: args.subscribers.unwrap_or(if q { 100 } else { 1000 }),
            samples: args.samples.unwrap_or(if q { 3 } else { 7 }).max(1),
            subscriber_read: Duration::from_millis(args.subscriber_read_ms),
            max_single: if q { 3_000 } else { 40_000 },
            max_batch: if q { 10_000 } else { 100_000 },
        }
    }
}

/// The two filesystems measured.
const FILESYSTEMS: [&str; 2] = ["disk", "tmpfs"];

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::from(2)
        }
    }
}

fn started() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

async fn run(args: &Args) -> Result<bool, String> {
    started();
    let settings = Settings::from(args);
    let files = server::raise_file_limit();
    let need = settings.subscribers as u64 + 256;
    if files < need {
        return Err(format!(
            "the open-file limit is {files}; {} subscribers need about {need} (ulimit -n)",
            settings.subscribers
        ));
    }
    let config = ServerConfig {
        bin: args.server_bin.clone(),
        token: random_token()?,
        log_filter: args.server_log.clone(),
    };
    let http = Http::new(config.token.clone())?;
    let dirs = [args.disk_dir.clone(), args.tmpfs_dir.clone()];
    progress!(
        "{} mode: {} s per write phase, {} outcomes for history/replay, {} subscribers, open files \
         {files}, load average {}; {}",
        if args.quick { "quick" } else { "full" },
        settings.phase_secs,
        settings.history_outcomes,
        settings.subscribers,
        server::load_average(),
        match (&args.postgres_url, args.only_postgres) {
            (None, _) => "no Postgres phase".to_owned(),
            (Some(url), only) => format!(
                "{}Postgres phase on {}",
                if only { "only the " } else { "" },
                redact(url)
            ),
        }
    );
    let mut m = Measured::default();
    if args.only_reads {
        reads_alone(args, &settings, &config, &http, &mut m).await;
    } else if !args.only_postgres {
        sqlite_phases(args, &settings, &config, &http, &mut m).await;
    }
    if let (Some(url), false) = (&args.postgres_url, args.only_reads) {
        let r = postgres_phase(&http, &config, url, &dirs[0], &settings).await;
        if let Err(e) = &r {
            progress!("postgres: {e}");
        }
        m.postgres = Some(r);
    }

    let mut rows = rows(&m, &settings, args);
    if args.only_reads {
        // The figures of phases 3 and 4 only: the others were not run.
        rows.retain(|r| r.name.starts_with("history") || r.name.starts_with("replay"));
    }
    println!();
    report::print(&rows);
    let ok = rows.iter().all(|r| r.result() != "ERR");
    if !ok {
        println!("\nERR: a figure is missing or requests failed; see the [bench] lines above.");
    }
    progress!("done");
    Ok(ok)
}

/// A URL without the password of its user part, for the log.
fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = &url[scheme + 3..at];
            match user.split_once(':') {
                Some((name, _)) => format!("{}{name}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// 32 random bytes from the kernel, hex.
fn random_token() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
