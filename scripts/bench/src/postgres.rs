//! Postgres's own commit rate, the limit of the Postgres phase: one connection committing one small
//! single-row `INSERT` per transaction (`synchronous_commit` on, as the ledger's connections), and the same
//! with many connections at once (Postgres flushes the WAL of concurrent commits together). Also the
//! schemas of a run and the postmaster whose CPU the bench watches.

use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection, Executor};

use crate::sqlite::CommitRate;

/// The schema of the commit probe's table (dropped when the run ends).
const PROBE_SCHEMA: &str = "outcomes_bench_probe";

/// Untimed commits of each connection before the clock starts (connection and statement warm).
const WARM_COMMITS: usize = 20;

/// `url` with its tables in `schema`: `options=-c search_path=<schema>` added to the query string. The
/// URL given to the bench must not carry an `options` parameter of its own.
pub fn with_search_path(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}

async fn connect(url: &str) -> Result<PgConnection, sqlx::Error> {
    let mut conn = PgConnectOptions::from_str(url)?.connect().await?;
    // What the ledger sets on each of its connections, whatever the cluster's default.
    conn.execute("SET synchronous_commit = on").await?;
    Ok(conn)
}

/// Commits per second of `connections` connections at once, each committing one single-row `INSERT`
/// (a 100-byte text) per transaction (autocommit), one after another, for `secs` seconds after
/// [`WARM_COMMITS`] untimed ones each. The table is made fresh in [`PROBE_SCHEMA`] and dropped afterwards.
pub async fn commit_rate(url: &str, connections: usize, secs: f64) -> Result<CommitRate, String> {
    measure(url, connections.max(1), secs)
        .await
        .map_err(|e| format!("Postgres probe ({connections} connections): {e}"))
}

async fn measure(url: &str, connections: usize, secs: f64) -> Result<CommitRate, sqlx::Error> {
    let mut setup = connect(url).await?;
    setup
        .execute(
            format!(
                "CREATE SCHEMA IF NOT EXISTS {PROBE_SCHEMA}; \
                 DROP TABLE IF EXISTS {PROBE_SCHEMA}.probe; \
                 CREATE TABLE {PROBE_SCHEMA}.probe (id bigserial PRIMARY KEY, body text NOT NULL)"
            )
            .as_str(),
        )
        .await?;
    let insert = format!("INSERT INTO {PROBE_SCHEMA}.probe (body) VALUES ($1)");
    let body = "x".repeat(100);
    // Every connection connects and warms up, then all start together.
    let ready = Arc::new(tokio::sync::Barrier::new(connections + 1));
    let (start_tx, start_rx) = tokio::sync::watch::channel(None::<Instant>);
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let (url, insert, body) = (url.to_owned(), insert.clone(), body.clone());
            let ready = ready.clone();
            let mut start_rx = start_rx.clone();
            tokio::spawn(async move {
                let warmed = async {
                    let mut conn = connect(&url).await?;
                    for _ in 0..WARM_COMMITS {
                        sqlx::query(&insert).bind(&body).execute(&mut conn).await?;
                    }
                    Ok::<_, sqlx::Error>(conn)
                }
                .await;
                ready.wait().await;
                let mut conn = warmed?;
                let deadline = loop {
                    if let Some(started) = *start_rx.borrow_and_update() {
                        break started + Duration::from_secs_f64(secs);
                    }
                    if start_rx.changed().await.is_err() {
                        return Ok(0);
                    }
                };
                let mut commits = 0u64;
                while Instant::now() < deadline {
                    sqlx::query(&insert).bind(&body).execute(&mut conn).await?;
                    commits += 1;
                }
                conn.close().await?;
                Ok::<u64, sqlx::Error>(commits)
            })
        })
        .collect();
    ready.wait().await;
    let started = Instant::now();
    let _ = start_tx.send(Some(started));
    let mut commits = 0;
    let mut failure = None;
    for task in tasks {
        match task.await {
            Ok(Ok(n)) => commits += n,
            Ok(Err(e)) => failure = Some(e),
            Err(e) => failure = Some(sqlx::Error::Protocol(format!("probe task failed: {e}"))),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    setup
        .execute(format!("DROP TABLE IF EXISTS {PROBE_SCHEMA}.probe").as_str())
        .await?;
    setup.close().await?;
    match failure {
        Some(e) => Err(e),
        None => Ok(CommitRate {
            commits,
            secs,
            latencies: Vec::new(),
            // Postgres commits in its own processes (the phase watches those).
            cpu_secs: f64::NAN,
        }),
    }
}

/// Drops the run's schemas (the ledger's and the probe's), when the bench ends.
pub async fn drop_schemas(url: &str, ledger_schema: &str) -> Result<(), String> {
    async {
        let mut conn = connect(url).await?;
        conn.execute(
            format!(
                "DROP SCHEMA IF EXISTS {ledger_schema} CASCADE; \
                 DROP SCHEMA IF EXISTS {PROBE_SCHEMA} CASCADE"
            )
            .as_str(),
        )
        .await?;
        conn.close().await
    }
    .await
    .map_err(|e| format!("cannot drop the bench's schemas: {e}"))
}

/// The process id of the postmaster serving `url`, when it runs on this machine (the parent of this
/// connection's backend, named `postgres`): its process tree's CPU is what Postgres spends. `Err` when
/// the backend is not a local process (a remote server): then Postgres's CPU is not measured.
pub async fn local_postmaster(url: &str) -> Result<u32, String> {
    let mut conn = connect(url)
        .await
        .map_err(|e| format!("cannot connect to Postgres: {e}"))?;
    // The connection stays open while /proc is read: its backend is alive.
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut conn)
        .await
        .map_err(|e| format!("cannot ask Postgres for its backend's pid: {e}"))?;
    let found = u32::try_from(pid)
        .map_err(|_| format!("unexpected backend pid {pid}"))
        .and_then(|pid| {
            crate::server::parent_pid(pid)
                .map(|parent| (pid, parent))
                .map_err(|e| format!("Postgres's backend {pid} is not a local process ({e})"))
        });
    let _ = conn.close().await;
    let (pid, parent) = found?;
    let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
    if comm.trim() != "postgres" {
        return Err(format!(
            "the parent of Postgres's backend {pid} is not a local postmaster (process {parent} is {:?})",
            comm.trim()
        ));
    }
    Ok(parent)
}
