//! The phases of a run (module docs of `main.rs`: 1 to 6), each logging its figures as it goes and
//! keeping them in [`Measured`] for the report.

use std::time::Duration;

use crate::load::{self, fmt_int, Ceiling, Http, PhaseLimits, Sessions, Shape, WriteFigures};
use crate::postgres;
use crate::reads::{self, BigSession, History, Replay};
use crate::server::{Server, ServerConfig};
use crate::sqlite::{self, CommitRate};
use crate::{
    Args, Settings, CEILING_CONNECTIONS, FILESYSTEMS, LIVE_WRITERS, PG_INSTANCES, PG_WRITERS,
    SHAPES,
};

/// Everything measured; a part that could not be measured holds the reason.
#[derive(Default)]
pub struct Measured {
    /// SQLite's one-commit rate around each write phase, `[filesystem][shape]`: the limit of that phase,
    /// measured on the same filesystem just before and just after it (a disk shared with other work
    /// changes its fsync rate from minute to minute).
    pub sqlite: [[Option<Result<CommitRate, String>>; 4]; 2],
    pub ceiling: Option<Result<Ceiling, String>>,
    /// `[filesystem][shape]`.
    pub writes: [[Option<Result<WriteFigures, String>>; 4]; 2],
    pub history: Option<Result<History, String>>,
    pub replay: Option<Result<Replay, String>>,
    pub big: Option<BigSession>,
    pub live: Option<Result<Live, String>>,
    /// The Postgres phase, when a database was given.
    pub postgres: Option<Result<PgPhase, String>>,
}

/// The Postgres phase: its commit probes, before and after, and the writes over the instances.
pub struct PgPhase {
    /// One connection: `[before, after]`.
    pub one: [CommitRate; 2],
    /// [`PG_WRITERS`] connections at once: `[before, after]`.
    pub many: [CommitRate; 2],
    pub writes: WriteFigures,
    /// Whether the Postgres cluster's CPU was measured (a local cluster), else why not.
    pub watched: Result<(), String>,
}

/// The live fan-out phase.
pub struct Live {
    pub without: WriteFigures,
    pub with: WriteFigures,
    pub subscribers: usize,
    pub connected: usize,
    pub subscribe_errors: load::Errors,
    pub received: u64,
    pub resyncs: u64,
}

/// Phases 1 to 5, on SQLite.
pub async fn sqlite_phases(
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
pub async fn reads_alone(
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
pub async fn postgres_phase(
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
