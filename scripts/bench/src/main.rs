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

mod load;
mod postgres;
mod reads;
mod report;
mod server;
mod sqlite;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use load::{fmt_int, per, Ceiling, Http, PhaseLimits, Sessions, Shape, WriteFigures};
use reads::{BigSession, History, Replay};
use report::{section, Row, Target};
use server::{Server, ServerConfig};
use sqlite::CommitRate;

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

/// Everything measured; a part that could not be measured holds the reason.
#[derive(Default)]
struct Measured {
    /// SQLite's one-commit rate around each write phase, `[filesystem][shape]`: the limit of that phase,
    /// measured on the same filesystem just before and just after it (a disk shared with other work
    /// changes its fsync rate from minute to minute).
    sqlite: [[Option<Result<CommitRate, String>>; 4]; 2],
    ceiling: Option<Result<Ceiling, String>>,
    /// `[filesystem][shape]`.
    writes: [[Option<Result<WriteFigures, String>>; 4]; 2],
    history: Option<Result<History, String>>,
    replay: Option<Result<Replay, String>>,
    big: Option<BigSession>,
    live: Option<Result<Live, String>>,
    /// The Postgres phase, when a database was given.
    postgres: Option<Result<PgPhase, String>>,
}

/// The Postgres phase: its commit probes, before and after, and the writes over the instances.
struct PgPhase {
    /// One connection: `[before, after]`.
    one: [CommitRate; 2],
    /// [`PG_WRITERS`] connections at once: `[before, after]`.
    many: [CommitRate; 2],
    writes: WriteFigures,
    /// Whether the Postgres cluster's CPU was measured (a local cluster), else why not.
    watched: Result<(), String>,
}

/// The live fan-out phase.
struct Live {
    without: WriteFigures,
    with: WriteFigures,
    subscribers: usize,
    connected: usize,
    subscribe_errors: load::Errors,
    received: u64,
    resyncs: u64,
}

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

/// Progress on stderr, as the bench goes.
macro_rules! progress {
    ($($arg:tt)*) => { eprintln!("[bench {:>5.1}s] {}", crate::started().elapsed().as_secs_f64(), format!($($arg)*)) };
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

/// Phases 1 to 5, on SQLite.
async fn sqlite_phases(
    args: &Args,
    settings: &Settings,
    config: &ServerConfig,
    http: &Http,
    m: &mut Measured,
) {
    let dirs = [args.disk_dir.clone(), args.tmpfs_dir.clone()];
    // 1, 2: write phases, one server per filesystem, both up; phases alternate between them so that
    // drift on a shared machine touches both alike.
    let mut writers: Vec<Option<Server>> = Vec::new();
    for (i, fs) in FILESYSTEMS.iter().enumerate() {
        match Server::start(config, fs, &dirs[i].join("writes"), &http.client).await {
            Ok(s) => {
                progress!("server {fs}: pid {}, {}", s.pid(), s.base);
                writers.push(Some(s));
            }
            Err(e) => {
                progress!("server {fs}: {e}");
                writers.push(None);
            }
        }
    }
    if let Some(server) = writers[0].as_mut() {
        let r = load::ceiling(http, server, CEILING_CONNECTIONS, settings.phase_secs).await;
        match &r {
            Ok(c) => progress!(
                "ceiling, GET /healthz × {CEILING_CONNECTIONS}: {} requests in {:.2} s = {}/s; generator \
                 {:.1} µs/request; errors: {}",
                fmt_int(c.requests),
                c.secs,
                fmt_int(c.rate().round() as u64),
                c.generator_us_per_request(),
                c.errors.summary()
            ),
            Err(e) => progress!("ceiling: {e}"),
        }
        m.ceiling = Some(r);
    }
    // Expected settles per second of the next phase: sizes its first (calibration) round.
    let mut hint = 500.0;
    for (s, shape) in SHAPES.iter().enumerate() {
        for (i, fs) in FILESYSTEMS.iter().enumerate() {
            let Some(server) = writers[i].as_mut() else {
                continue;
            };
            let limits = PhaseLimits {
                secs: settings.phase_secs,
                max_settles: match shape {
                    Shape::Single { .. } => settings.max_single,
                    Shape::Batch { .. } => settings.max_batch,
                },
            };
            let sessions = Sessions::PerWriter {
                prefix: format!("{fs}-p{s}"),
            };
            let before = sqlite::one_commit_rate(&dirs[i], settings.sqlite_secs / 2.0).await;
            let r = load::write_phase(http, server, *shape, &sessions, limits, hint).await;
            let after = sqlite::one_commit_rate(&dirs[i], settings.sqlite_secs / 2.0).await;
            let probe = match (before, after) {
                (Ok(b), Ok(a)) => {
                    progress!(
                        "{fs}, {}: SQLite one-commit rate {}/s before, {}/s after",
                        shape.label(),
                        fmt_int(b.rate().round() as u64),
                        fmt_int(a.rate().round() as u64)
                    );
                    Ok(b.and(&a))
                }
                (Err(e), _) | (_, Err(e)) => {
                    progress!("{fs}: {e}");
                    Err(e)
                }
            };
            m.sqlite[i][s] = Some(probe);
            match &r {
                Ok(f) => {
                    progress!("{fs}, {}: {}", shape.label(), f.describe());
                    if f.rate() > 0.0 {
                        hint = f.rate();
                    }
                }
                Err(e) => progress!("{fs}, {}: {e}", shape.label()),
            }
            if r.is_err() {
                // The server is gone: its other phases cannot run.
                writers[i] = None;
            }
            m.writes[i][s] = Some(r);
        }
    }
    for s in writers.into_iter().flatten() {
        s.stop();
    }

    // 3, 4, 5: reads and live fan-out on a fresh server on disk.
    match Server::start(config, "disk-reads", &dirs[0].join("reads"), &http.client).await {
        Err(e) => progress!("server disk-reads: {e}"),
        Ok(mut server) => {
            progress!("server disk-reads: pid {}, {}", server.pid(), server.base);
            read_phases(http, &mut server, settings, m).await;
            server.stop();
        }
    }
}

/// Phases 3 and 4 alone (`--only-reads`), on a fresh server on disk.
async fn reads_alone(
    args: &Args,
    settings: &Settings,
    config: &ServerConfig,
    http: &Http,
    m: &mut Measured,
) {
    match Server::start(
        config,
        "disk-reads",
        &args.disk_dir.join("reads"),
        &http.client,
    )
    .await
    {
        Err(e) => progress!("server disk-reads: {e}"),
        Ok(mut server) => {
            progress!("server disk-reads: pid {}, {}", server.pid(), server.base);
            history_and_replay(http, &mut server, settings, m).await;
            server.stop();
        }
    }
}

/// 6: Postgres's commit rates with 1 and [`PG_WRITERS`] connections, then [`PG_INSTANCES`] servers on
/// one fresh schema of `url`, [`PG_WRITERS`] single-operation writers spread over them, then the commit
/// rates again. The schemas are dropped at the end.
async fn postgres_phase(
    http: &Http,
    config: &ServerConfig,
    url: &str,
    dir: &std::path::Path,
    settings: &Settings,
) -> Result<PgPhase, String> {
    let schema = format!("outcomes_bench_{}", std::process::id());
    let r = postgres_measure(http, config, url, &schema, dir, settings).await;
    if let Err(e) = postgres::drop_schemas(url, &schema).await {
        progress!("postgres: {e}");
    }
    r
}

async fn postgres_measure(
    http: &Http,
    config: &ServerConfig,
    url: &str,
    schema: &str,
    dir: &std::path::Path,
    settings: &Settings,
) -> Result<PgPhase, String> {
    let half = settings.postgres_secs / 2.0;
    let probes = || async {
        let one = postgres::commit_rate(url, 1, half).await?;
        let many = postgres::commit_rate(url, PG_WRITERS, half).await?;
        Ok::<_, String>((one, many))
    };
    let (one_before, many_before) = probes().await?;
    progress!(
        "postgres, before: one-commit rate {}/s (1 connection), {}/s ({PG_WRITERS} connections)",
        fmt_int(one_before.rate().round() as u64),
        fmt_int(many_before.rate().round() as u64)
    );
    let watched = postgres::local_postmaster(url).await;
    match &watched {
        Ok(pid) => progress!("postgres: postmaster pid {pid}, its CPU measured with its backends'"),
        Err(e) => progress!("postgres: its CPU is not measured: {e}"),
    }
    let database = postgres::with_search_path(url, schema);
    let mut servers = Vec::new();
    for i in 0..PG_INSTANCES {
        let name = format!("postgres-{}", i + 1);
        let extra = ["--database".to_owned(), database.clone()];
        let server =
            Server::start_with(config, &name, &dir.join(&name), &extra, &http.client).await?;
        progress!(
            "server {name}: pid {}, {}, schema {schema}",
            server.pid(),
            server.base
        );
        servers.push(server);
    }
    let shape = Shape::Single {
        writers: PG_WRITERS,
    };
    let limits = PhaseLimits {
        secs: settings.phase_secs,
        max_settles: settings.max_single,
    };
    let sessions = Sessions::PerWriter {
        prefix: "pg".to_owned(),
    };
    let watch: Vec<u32> = watched.iter().copied().collect();
    let r = load::write_phase_over(
        http,
        &mut servers,
        &watch,
        shape,
        &sessions,
        limits,
        one_before.rate(),
    )
    .await;
    for s in servers {
        s.stop();
    }
    let writes = r?;
    progress!(
        "postgres, {} over {PG_INSTANCES} instances: {}; Postgres CPU {}",
        shape.label(),
        writes.describe(),
        if watched.is_ok() {
            format!(
                "{:.0}% of a core, {:.1} µs/settle",
                writes.watched_core_pct(),
                writes.watched_us_per_settle()
            )
        } else {
            "not measured".to_owned()
        }
    );
    let (one_after, many_after) = probes().await?;
    progress!(
        "postgres, after: one-commit rate {}/s (1 connection), {}/s ({PG_WRITERS} connections)",
        fmt_int(one_after.rate().round() as u64),
        fmt_int(many_after.rate().round() as u64)
    );
    Ok(PgPhase {
        one: [one_before, one_after],
        many: [many_before, many_after],
        writes,
        watched: watched.map(|_| ()),
    })
}

async fn read_phases(http: &Http, server: &mut Server, settings: &Settings, m: &mut Measured) {
    history_and_replay(http, server, settings, m).await;
    let live = live_phase(http, server, settings).await;
    if let Err(e) = &live {
        progress!("live: {e}");
    }
    m.live = Some(live);
}

/// Phases 3 and 4: a session of `settings.history_outcomes` outcomes, its history and its replays.
async fn history_and_replay(
    http: &Http,
    server: &mut Server,
    settings: &Settings,
    m: &mut Measured,
) {
    let n = settings.history_outcomes;
    match reads::make_big_session(http, server, "history", n).await {
        Err(e) => {
            progress!("history session: {e}");
            m.history = Some(Err(e.clone()));
            m.replay = Some(Err(e));
        }
        Ok(big) => {
            progress!(
                "history session: {} outcomes in one turn, latest revision {}",
                fmt_int(big.outcomes as u64),
                big.latest_revision
            );
            let h = reads::history(http, server, &big, settings.samples).await;
            match &h {
                Ok(h) => progress!(
                    "history: GET {:.2} ms (median of {}; server CPU {:.2} ms per GET), serde_json::to_vec \
                     {:.2} ms; {} outcomes, {} bytes",
                    h.get_secs * 1e3,
                    settings.samples,
                    h.server_cpu_secs * 1e3,
                    h.serialize_secs * 1e3,
                    fmt_int(h.outcomes as u64),
                    fmt_int(h.body_bytes as u64)
                ),
                Err(e) => progress!("history: {e}"),
            }
            m.history = Some(h);
            let r = reads::replay(http, server, &big, settings.samples).await;
            match &r {
                Ok(r) => progress!(
                    "replay: after latest-100 {:.2} ms ({} events), full {:.2} ms ({} events)",
                    r.tail_secs * 1e3,
                    r.tail_events,
                    r.full_secs * 1e3,
                    fmt_int(r.full_events as u64)
                ),
                Err(e) => progress!("replay: {e}"),
            }
            m.replay = Some(r);
            m.big = Some(big);
        }
    }
}

/// Writer rate on one session without subscribers, then with `settings.subscribers` streams on it.
async fn live_phase(http: &Http, server: &mut Server, settings: &Settings) -> Result<Live, String> {
    let shape = Shape::Single {
        writers: LIVE_WRITERS,
    };
    let session = |tag: &str| Sessions::Shared {
        session: "live".to_owned(),
        tag: tag.to_owned(),
    };
    let limits = PhaseLimits {
        secs: settings.phase_secs,
        max_settles: settings.max_single,
    };
    let without = load::write_phase(http, server, shape, &session("quiet"), limits, 500.0).await?;
    progress!(
        "live, {} with no subscriber: {}",
        shape.label(),
        without.describe()
    );
    let subs = reads::Subscribers::open(
        server,
        "live",
        settings.subscribers,
        settings.subscriber_read,
    )
    .await;
    progress!(
        "live: {} of {} streams open; refused: {}",
        subs.connected,
        settings.subscribers,
        subs.errors.summary()
    );
    let with = load::write_phase(
        http,
        server,
        shape,
        &session("watched"),
        limits,
        without.rate(),
    )
    .await;
    subs.drain(Duration::from_secs(5)).await;
    let (received, resyncs) = (subs.outcomes(), subs.resyncs());
    let (connected, subscribe_errors) = (subs.connected, subs.errors.clone());
    subs.close().await;
    let with = with?;
    progress!(
        "live, {} with {} subscribers: {}",
        shape.label(),
        connected,
        with.describe()
    );
    progress!(
        "live: subscribers received {} mutation_outcome events of {} sent ({} settles × {} streams), {} resync",
        fmt_int(received),
        fmt_int(with.settles * connected as u64),
        fmt_int(with.settles),
        connected,
        fmt_int(resyncs)
    );
    Ok(Live {
        without,
        with,
        subscribers: settings.subscribers,
        connected,
        subscribe_errors,
        received,
        resyncs,
    })
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

fn rate_text(r: f64) -> String {
    format!("{}/s", fmt_int(r.round() as u64))
}

fn ms_text(secs: f64) -> String {
    format!("{:.2} ms", secs * 1e3)
}

/// The table's rows.
fn rows(m: &Measured, settings: &Settings, args: &Args) -> Vec<Row> {
    let mut rows = Vec::new();
    if !args.only_postgres {
        sqlite_rows(&mut rows, m, settings);
    }
    if let Some(pg) = &m.postgres {
        postgres_rows(&mut rows, pg);
    }
    rows
}

/// The rows of the Postgres phase.
fn postgres_rows(rows: &mut Vec<Row>, pg: &Result<PgPhase, String>) {
    rows.push(section(&format!(
        "6. Postgres: {PG_WRITERS} single-op writers over {PG_INSTANCES} server instances on one \
         database (÷ Postgres's own commit rate, around the same phase)"
    )));
    let label = format!("{PG_WRITERS} writers over {PG_INSTANCES} instances");
    let headline = format!("settles/s, postgres, {label}");
    let pg = match pg {
        Ok(pg) => pg,
        Err(e) => {
            rows.push(Row::missing(
                &headline,
                Target::AtLeast(1.0),
                &first_line(e),
            ));
            return;
        }
    };
    let one = pg.one[0].and(&pg.one[1]);
    let many = pg.many[0].and(&pg.many[1]);
    let around = |c: &[CommitRate; 2]| {
        format!(
            "before {}, after {}",
            rate_text(c[0].rate()),
            rate_text(c[1].rate())
        )
    };
    rows.push(Row {
        name: "Postgres one-commit rate, 1 connection".to_owned(),
        value: rate_text(one.rate()),
        limit: around(&pg.one),
        ratio: f64::NAN,
        target: Target::None,
        failed: false,
    });
    rows.push(Row {
        name: format!("Postgres commit rate, {PG_WRITERS} connections"),
        value: rate_text(many.rate()),
        limit: around(&pg.many),
        ratio: f64::NAN,
        target: Target::None,
        failed: false,
    });
    let f = &pg.writes;
    let failed = f.errors.count + f.prepare_errors.count > 0;
    rows.push(Row {
        name: headline,
        value: rate_text(f.rate()),
        limit: format!("Postgres one-commit rate {}", rate_text(one.rate())),
        ratio: per(f.rate(), one.rate()),
        target: Target::AtLeast(1.0),
        failed,
    });
    rows.push(Row {
        name: format!("settles/s, postgres, {label} (÷ {PG_WRITERS} connections)"),
        value: rate_text(f.rate()),
        limit: format!(
            "Postgres {PG_WRITERS}-connection rate {}",
            rate_text(many.rate())
        ),
        ratio: per(f.rate(), many.rate()),
        target: Target::None,
        failed,
    });
    rows.push(Row {
        name: format!("failed requests, postgres, {label}"),
        value: fmt_int(f.errors.count),
        limit: format!(
            "of {} requests; preparation: {} failed",
            fmt_int(f.requests),
            fmt_int(f.prepare_errors.count)
        ),
        ratio: f64::NAN,
        target: Target::None,
        failed,
    });
    rows.push(Row {
        name: format!("server CPU/settle, postgres, {PG_INSTANCES} instances summed"),
        value: format!("{:.1} µs", f.server_us_per_settle()),
        limit: format!("({:.0}% of a core)", f.server_core_pct()),
        ratio: f64::NAN,
        target: Target::None,
        failed: false,
    });
    rows.push(Row {
        name: "Postgres CPU/settle (postmaster and backends)".to_owned(),
        value: match pg.watched {
            Ok(()) => format!("{:.1} µs", f.watched_us_per_settle()),
            Err(_) => "n/a".to_owned(),
        },
        limit: match &pg.watched {
            Ok(()) => format!("({:.0}% of a core)", f.watched_core_pct()),
            Err(e) => first_line(e),
        },
        ratio: f64::NAN,
        target: Target::None,
        failed: false,
    });
    rows.push(Row {
        name: format!("generator CPU/request, postgres, {label}"),
        value: format!(
            "{:.1} µs ({:.0}% core)",
            f.generator_us_per_request(),
            f.generator_core_pct()
        ),
        limit: format!("server CPU/request {:.1} µs", f.server_us_per_settle()),
        ratio: per(f.generator_us_per_request(), f.server_us_per_settle()),
        target: Target::None,
        failed: false,
    });
    rows.push(Row {
        name: "other processes' CPU in the Postgres phase".to_owned(),
        value: format!("{:.0}% core", f.others_core_pct()),
        limit: format!(
            "idle {:.0}% core ({} cores)",
            f.idle_core_pct(),
            server::cores()
        ),
        ratio: f64::NAN,
        target: Target::None,
        failed: false,
    });
}

/// The rows of phases 1 to 5.
fn sqlite_rows(rows: &mut Vec<Row>, m: &Measured, settings: &Settings) {
    let write = |fs: usize, s: usize| -> Result<&WriteFigures, String> {
        match &m.writes[fs][s] {
            Some(Ok(f)) => Ok(f),
            Some(Err(e)) => Err(first_line(e)),
            None => Err("not run (no server)".to_owned()),
        }
    };
    let sqlite = |fs: usize, s: usize| -> Result<&CommitRate, String> {
        match &m.sqlite[fs][s] {
            Some(Ok(c)) => Ok(c),
            Some(Err(e)) => Err(first_line(e)),
            None => Err("not run".to_owned()),
        }
    };

    rows.push(section("generator (must not be the bottleneck)"));
    let best_single = SHAPES
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Shape::Single { .. }))
        .flat_map(|(s, _)| (0..2).filter_map(move |fs| write(fs, s).ok().map(WriteFigures::rate)))
        .fold(f64::NAN, f64::max);
    match &m.ceiling {
        Some(Ok(c)) => rows.push(Row {
            name: format!("GET /healthz rate, {CEILING_CONNECTIONS} connections (disk server)"),
            value: rate_text(c.rate()),
            limit: format!("fastest single-op settles {}", rate_text(best_single)),
            ratio: per(c.rate(), best_single),
            target: Target::AtLeast(2.0),
            failed: c.errors.count > 0,
        }),
        Some(Err(e)) => rows.push(Row::missing(
            "GET /healthz rate",
            Target::AtLeast(2.0),
            &first_line(e),
        )),
        None => rows.push(Row::missing(
            "GET /healthz rate",
            Target::AtLeast(2.0),
            "not run (no server)",
        )),
    }
    for (fs, s) in [(0usize, 2usize), (1, 2), (0, 3), (1, 3)] {
        let name = format!(
            "generator CPU/request, {}, {}",
            FILESYSTEMS[fs],
            SHAPES[s].label()
        );
        match write(fs, s) {
            Ok(f) => rows.push(Row {
                name,
                value: format!(
                    "{:.1} µs ({:.0}% core)",
                    f.generator_us_per_request(),
                    f.generator_core_pct()
                ),
                limit: format!(
                    "server CPU/request {:.1} µs",
                    f.server_us_per_settle() * SHAPES[s].per_request() as f64
                ),
                ratio: per(
                    f.generator_us_per_request(),
                    f.server_us_per_settle() * SHAPES[s].per_request() as f64,
                ),
                target: Target::None,
                failed: false,
            }),
            Err(e) => rows.push(Row::missing(&name, Target::None, &e)),
        }
    }

    let phases: Vec<&WriteFigures> = (0..2)
        .flat_map(|fs| (0..SHAPES.len()).map(move |s| (fs, s)))
        .filter_map(|(fs, s)| write(fs, s).ok())
        .collect();
    if !phases.is_empty() {
        let secs: f64 = phases.iter().map(|f| f.secs).sum();
        let others: f64 = phases.iter().map(|f| f.others_core_pct() * f.secs).sum();
        let worst = phases
            .iter()
            .map(|f| f.others_core_pct())
            .fold(0.0, f64::max);
        rows.push(Row {
            name: "other processes' CPU in the timed write phases".to_owned(),
            value: format!("{:.0}% core", per(others, secs)),
            limit: format!("worst phase {worst:.0}% core"),
            ratio: f64::NAN,
            target: Target::None,
            failed: false,
        });
        let idle: f64 = phases.iter().map(|f| f.idle_core_pct() * f.secs).sum();
        let least = phases
            .iter()
            .map(|f| f.idle_core_pct())
            .fold(f64::INFINITY, f64::min);
        rows.push(Row {
            name: format!(
                "idle CPU in the timed write phases ({} cores)",
                server::cores()
            ),
            value: format!("{:.0}% core", per(idle, secs)),
            limit: format!("least idle phase {least:.0}% core"),
            ratio: f64::NAN,
            target: Target::None,
            failed: false,
        });
    }

    rows.push(section(
        "SQLite's own one-commit rate (WAL, synchronous=FULL)",
    ));
    for (fs, fs_name) in FILESYSTEMS.iter().enumerate() {
        let name = format!("SQLite one-commit rate, {fs_name}, median of the phases");
        let rates: Vec<f64> = (0..SHAPES.len())
            .filter_map(|s| sqlite(fs, s).ok().map(CommitRate::rate))
            .collect();
        if rates.is_empty() {
            rows.push(Row::missing(&name, Target::None, "not measured"));
            continue;
        }
        let (low, high) = rates
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), r| (l.min(*r), h.max(*r)));
        rows.push(Row {
            name,
            value: rate_text(reads::median(rates)),
            limit: format!("range {}-{}", rate_text(low), rate_text(high)),
            ratio: f64::NAN,
            target: Target::None,
            failed: false,
        });
    }

    rows.push(section(
        "1. settles/s (÷ SQLite's one-commit rate on the same filesystem, around the same phase)",
    ));
    for (s, shape) in SHAPES.iter().enumerate() {
        for (fs, fs_name) in FILESYSTEMS.iter().enumerate() {
            let name = format!("settles/s, {fs_name}, {}", shape.label());
            let target = match (fs, shape) {
                (0, Shape::Single { writers: 64 }) => Target::AtLeast(1.0),
                (0, Shape::Single { writers: 1 }) => Target::AtLeast(0.5),
                _ => Target::None,
            };
            match (write(fs, s), sqlite(fs, s)) {
                (Ok(f), Ok(c)) => rows.push(Row {
                    name,
                    value: rate_text(f.rate()),
                    limit: format!("SQLite {fs_name} {}", rate_text(c.rate())),
                    ratio: per(f.rate(), c.rate()),
                    target,
                    failed: f.errors.count + f.prepare_errors.count > 0,
                }),
                (Err(e), _) | (_, Err(e)) => rows.push(Row::missing(&name, target, &e)),
            }
        }
    }
    // One writer: what a single agent waits for each settle, against what one commit of SQLite takes.
    for (fs, fs_name) in FILESYSTEMS.iter().enumerate() {
        let name = format!("p50 latency of one settle, {fs_name}, 1 writer");
        let target = if fs == 0 {
            Target::AtMost(2.0)
        } else {
            Target::None
        };
        match (write(fs, 0), sqlite(fs, 0)) {
            (Ok(f), Ok(c)) => rows.push(Row {
                name,
                value: format!("{:.3} ms", f.p50_secs() * 1e3),
                limit: format!(
                    "SQLite {fs_name} one commit p50 {:.3} ms",
                    c.p50_secs() * 1e3
                ),
                ratio: per(f.p50_secs(), c.p50_secs()),
                target,
                failed: f.errors.count + f.prepare_errors.count > 0,
            }),
            (Err(e), _) | (_, Err(e)) => rows.push(Row::missing(&name, target, &e)),
        }
    }
    let name = "settles/s, disk ÷ tmpfs, 64 writers";
    match (write(0, 2), write(1, 2)) {
        (Ok(d), Ok(t)) => rows.push(Row {
            name: name.to_owned(),
            value: rate_text(d.rate()),
            limit: format!("tmpfs {}", rate_text(t.rate())),
            ratio: per(d.rate(), t.rate()),
            target: Target::AtLeast(0.8),
            failed: d.errors.count + t.errors.count > 0,
        }),
        (Err(e), _) | (_, Err(e)) => rows.push(Row::missing(name, Target::AtLeast(0.8), &e)),
    }

    rows.push(section(
        "2. server CPU per settle (/proc/<pid>/stat utime+stime)",
    ));
    for (s, shape) in SHAPES.iter().enumerate() {
        let limit_us = match shape {
            Shape::Single { writers: 64 } => Some(100.0),
            Shape::Single { writers: 1 } => Some(150.0),
            Shape::Batch { .. } => Some(30.0),
            Shape::Single { .. } => None,
        };
        for (fs, fs_name) in FILESYSTEMS.iter().enumerate() {
            let name = format!("server CPU/settle, {fs_name}, {}", shape.label());
            let target = if limit_us.is_some() {
                Target::AtMost(1.0)
            } else {
                Target::None
            };
            match write(fs, s) {
                Ok(f) => {
                    let us = f.server_us_per_settle();
                    rows.push(Row {
                        name,
                        value: format!("{us:.1} µs"),
                        limit: match limit_us {
                            Some(l) => format!("{l:.0} µs"),
                            None => format!("({:.0}% of a core)", f.server_core_pct()),
                        },
                        ratio: limit_us.map_or(f64::NAN, |l| us / l),
                        target,
                        failed: f.errors.count > 0,
                    })
                }
                Err(e) => rows.push(Row::missing(&name, target, &e)),
            }
        }
    }

    // What a commit costs SQLite itself, in the probes around the 1-writer phase: the floor under the
    // server's CPU per settle with 1 writer.
    for (fs, fs_name) in FILESYSTEMS.iter().enumerate() {
        let name = format!("SQLite's own CPU/commit, {fs_name} (probe of the 1-writer phase)");
        match (&m.sqlite[fs][0], write(fs, 0)) {
            (Some(Ok(c)), Ok(f)) => rows.push(Row {
                name,
                value: format!("{:.1} µs", c.cpu_us_per_commit()),
                limit: format!("server CPU/settle {:.1} µs", f.server_us_per_settle()),
                ratio: per(f.server_us_per_settle(), c.cpu_us_per_commit()),
                target: Target::None,
                failed: false,
            }),
            (Some(Err(e)), _) => rows.push(Row::missing(&name, Target::None, e)),
            (_, Err(e)) => rows.push(Row::missing(&name, Target::None, &e)),
            (None, _) => rows.push(Row::missing(&name, Target::None, "not measured")),
        }
    }

    rows.push(section("3, 4. reads"));
    let outcomes = fmt_int(settings.history_outcomes as u64);
    let name = format!("history of a {outcomes}-outcome session, GET");
    match &m.history {
        Some(Ok(h)) => rows.push(Row {
            name,
            value: ms_text(h.get_secs),
            limit: format!("serde_json::to_vec {}", ms_text(h.serialize_secs)),
            ratio: per(h.get_secs, h.serialize_secs),
            target: Target::AtMost(3.0),
            failed: false,
        }),
        Some(Err(e)) => rows.push(Row::missing(&name, Target::AtMost(3.0), &first_line(e))),
        None => rows.push(Row::missing(&name, Target::AtMost(3.0), "not run")),
    }
    let name = format!("replay after latest-100 of a {outcomes}-outcome turn");
    match &m.replay {
        Some(Ok(r)) => rows.push(Row {
            name,
            value: ms_text(r.tail_secs),
            limit: format!("full replay {}", ms_text(r.full_secs)),
            ratio: per(r.tail_secs, r.full_secs),
            target: Target::AtMost(0.1),
            // The tail must hold exactly the last 100 revisions, the full replay every outcome.
            failed: r.tail_events != 100
                || m.big.as_ref().is_some_and(|b| r.full_events != b.outcomes),
        }),
        Some(Err(e)) => rows.push(Row::missing(&name, Target::AtMost(0.1), &first_line(e))),
        None => rows.push(Row::missing(&name, Target::AtMost(0.1), "not run")),
    }

    rows.push(section("5. live fan-out"));
    let name = format!(
        "settles/s, {LIVE_WRITERS} writers, {} live subscribers",
        fmt_int(settings.subscribers as u64)
    );
    match &m.live {
        Some(Ok(l)) => {
            rows.push(Row {
                name,
                value: rate_text(l.with.rate()),
                limit: format!("no subscriber {}", rate_text(l.without.rate())),
                ratio: per(l.with.rate(), l.without.rate()),
                target: Target::AtLeast(0.5),
                failed: l.connected < l.subscribers
                    || l.subscribe_errors.count > 0
                    || l.with.errors.count + l.without.errors.count > 0,
            });
            let sent = l.with.settles * l.connected as u64;
            rows.push(Row {
                name: "live events received by the subscribers".to_owned(),
                value: fmt_int(l.received),
                limit: format!("sent {} ({} resync)", fmt_int(sent), fmt_int(l.resyncs)),
                ratio: reads::delivered_share(l.received, l.with.settles, l.connected),
                target: Target::None,
                failed: false,
            });
            rows.push(Row {
                name: "server CPU/settle with the subscribers".to_owned(),
                value: format!("{:.1} µs", l.with.server_us_per_settle()),
                limit: format!("no subscriber {:.1} µs", l.without.server_us_per_settle()),
                ratio: per(
                    l.with.server_us_per_settle(),
                    l.without.server_us_per_settle(),
                ),
                target: Target::None,
                failed: false,
            });
            // What the server's own CPU allows, every core to itself: the generator cannot be what keeps
            // the rate below this.
            let bound = per(server::cores() * 1e6, l.with.server_us_per_settle());
            rows.push(Row {
                name: format!(
                    "settles/s the server's CPU/settle allows on {} cores",
                    server::cores()
                ),
                value: rate_text(bound),
                limit: format!("no subscriber {}", rate_text(l.without.rate())),
                ratio: per(bound, l.without.rate()),
                target: Target::None,
                failed: false,
            });
            rows.push(Row {
                name: "generator CPU with the subscribers".to_owned(),
                value: format!("{:.0}% core", l.with.generator_core_pct()),
                limit: format!(
                    "server {:.0}%, idle {:.0}% core",
                    l.with.server_core_pct(),
                    l.with.idle_core_pct()
                ),
                ratio: per(l.with.generator_cpu, l.with.server_cpu),
                target: Target::None,
                failed: false,
            });
        }
        Some(Err(e)) => rows.push(Row::missing(&name, Target::AtLeast(0.5), &first_line(e))),
        None => rows.push(Row::missing(&name, Target::AtLeast(0.5), "not run")),
    }
}

/// The first line of an error, without the pointer to the log (the progress lines show the log).
fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    line.trim_end_matches("; its log ends:").to_owned()
}
