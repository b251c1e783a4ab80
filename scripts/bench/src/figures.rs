//! The report's rows: each figure of [`Measured`] beside its limit measured in the same run, the ratio
//! and its target.

use crate::load::{fmt_int, per, Shape, WriteFigures};
use crate::phases::{Measured, PgPhase};
use crate::reads;
use crate::report::{section, Row, Target};
use crate::server;
use crate::sqlite::CommitRate;
use crate::{
    Args, Settings, CEILING_CONNECTIONS, FILESYSTEMS, LIVE_WRITERS, PG_INSTANCES, PG_WRITERS,
    SHAPES,
};

fn rate_text(r: f64) -> String {
    format!("{}/s", fmt_int(r.round() as u64))
}

fn ms_text(secs: f64) -> String {
    format!("{:.2} ms", secs * 1e3)
}

/// The table's rows.
pub fn rows(m: &Measured, settings: &Settings, args: &Args) -> Vec<Row> {
    let mut rows = Vec::new();
    if !args.only_postgres {
        sqlite_rows(&mut rows, m, settings);
    }
    if let Some(pg) = &m.postgres {
        postgres_rows(&mut rows, pg);
    }
    rows
}

/// The most CPU (µs) Postgres may spend per settle in the Postgres phase (issue 45; docs/performance.md).
const PG_CPU_PER_SETTLE_US: f64 = 150.0;

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
    // Postgres's own work per settle (issue 45): the CPU time of the postmaster and all its children
    // (backends, WAL writer, checkpointer, autovacuum) over the timed phase ÷ settles, against 150 µs.
    let name = "Postgres CPU/settle (postmaster and backends)";
    match &pg.watched {
        Ok(()) => {
            let us = f.watched_us_per_settle();
            rows.push(Row {
                name: name.to_owned(),
                value: format!("{us:.1} µs ({:.0}% of a core)", f.watched_core_pct()),
                limit: format!("{PG_CPU_PER_SETTLE_US:.0} µs"),
                ratio: us / PG_CPU_PER_SETTLE_US,
                target: Target::AtMost(1.0),
                failed: false,
            });
        }
        Err(e) => rows.push(Row::missing(name, Target::AtMost(1.0), &first_line(e))),
    }
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
