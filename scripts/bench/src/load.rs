//! Write load: settles through the host write API, one operation per request or in batches, by a number of
//! concurrent writers; and the generator's ceiling against `/healthz`. Entries are prepared (approved, intent
//! recorded) with untimed batches first; only the settles are timed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};

use crate::server::{cores, machine_cpu_secs, self_cpu_secs, tree_cpu_secs, Server};

/// Operations per preparation batch (the server takes at most 1,000).
const PREPARE_BATCH: usize = 1000;

/// Attempt id of every prepared entry.
const ATTEMPT: &str = "a1";

/// Body of a single settle: constant, so the generator spends nothing building it.
const SETTLE_BODY: &str = r#"{"attempt_id":"a1","status":"completed"}"#;

/// Failed requests or operations of a phase, counted by kind (`<status> <error code>` or `transport: …`).
#[derive(Clone, Debug, Default)]
pub struct Errors {
    /// Failures in all.
    pub count: u64,
    /// Failures per kind.
    pub kinds: BTreeMap<String, u64>,
}

impl Errors {
    /// Counts one failure of this kind.
    pub fn add(&mut self, kind: String) {
        self.count += 1;
        *self.kinds.entry(kind).or_default() += 1;
    }

    /// Adds another phase's failures.
    pub fn merge(&mut self, other: Errors) {
        self.count += other.count;
        for (kind, n) in other.kinds {
            *self.kinds.entry(kind).or_default() += n;
        }
    }

    /// `3 × 503 busy; 1 × transport: …`, or `none`.
    pub fn summary(&self) -> String {
        if self.count == 0 {
            return "none".to_owned();
        }
        self.kinds
            .iter()
            .map(|(k, n)| format!("{n} × {k}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The kind of a failed answer: its status and the `error.code` of its JSON body (else the body's start).
pub fn error_kind(status: u16, body: &[u8]) -> String {
    let code = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(80)]).into_owned());
    format!("{status} {code}")
}

/// The kind of a transport failure (no answer).
pub fn transport_kind(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = format!("transport: {e}");
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// The HTTP side of the generator: one client (connections pooled per writer), the host token.
#[derive(Clone)]
pub struct Http {
    /// Pooled HTTP/1.1 client; idle connections are dropped after 3 s, before the server's 10 s idle
    /// timeout can close one under a request.
    pub client: reqwest::Client,
    /// Host token.
    pub token: String,
}

impl Http {
    /// A client for the benchmark.
    pub fn new(token: String) -> Result<Http, String> {
        let client = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(3))
            .timeout(Duration::from_secs(120))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Http { client, token })
    }

    /// POSTs a body with the host token; the answer's body on 2xx, else the failure's kind.
    pub async fn post(&self, url: &str, body: Bytes) -> Result<Bytes, String> {
        let response = self
            .client
            .post(url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(transport_kind)?;
        let status = response.status();
        let body = response.bytes().await.map_err(transport_kind)?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(error_kind(status.as_u16(), &body))
        }
    }

    /// GETs a URL; the body on 2xx, else the failure's kind.
    pub async fn get(&self, url: &str) -> Result<Bytes, String> {
        let response = self.client.get(url).send().await.map_err(transport_kind)?;
        let status = response.status();
        let body = response.bytes().await.map_err(transport_kind)?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(error_kind(status.as_u16(), &body))
        }
    }

    /// Opens `n` pooled connections to the server (concurrent `/healthz` requests), so a timed phase does
    /// not pay for connecting.
    pub async fn warm(&self, server: &Server, n: usize) {
        let url = format!("{}/healthz", server.base);
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let http = self.clone();
                let url = url.clone();
                tokio::spawn(async move {
                    let _ = http.get(&url).await;
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    }
}

/// Posts one batch; `Ok(operations answered 2xx)`, with the failed operations' kinds in `errors`.
pub async fn send_batch(
    http: &Http,
    base: &str,
    body: Bytes,
    n: usize,
    errors: &mut Errors,
) -> u64 {
    let url = format!("{base}/api/host/batch");
    match http.post(&url, body).await {
        Err(kind) => {
            for _ in 0..n {
                errors.add(kind.clone());
            }
            0
        }
        Ok(answer) => count_batch_ok(&answer, n, errors),
    }
}

/// Operations answered 2xx in a batch answer. Counts `"status":20` (cheap); only when that is not every
/// operation is the answer parsed to name the failures.
fn count_batch_ok(answer: &[u8], n: usize, errors: &mut Errors) -> u64 {
    let ok = memchr::memmem::find_iter(answer, br#""status":20"#).count();
    if ok == n {
        return ok as u64;
    }
    match serde_json::from_slice::<Value>(answer) {
        Err(_) => errors.add("batch answer is not JSON".to_owned()),
        Ok(v) => {
            for r in v["results"].as_array().into_iter().flatten() {
                let status = r["status"].as_u64().unwrap_or(0);
                if !(200..300).contains(&status) {
                    let code = r["error"]["code"].as_str().unwrap_or("?");
                    errors.add(format!("{status} {code} (in a batch)"));
                }
            }
        }
    }
    ok as u64
}

/// One entry to prepare and settle.
#[derive(Clone, Debug)]
pub struct Entry {
    pub session: String,
    pub turn: String,
    pub mutation: String,
}

impl Entry {
    fn settle_url(&self, base: &str) -> String {
        format!(
            "{base}/api/host/sessions/{}/mutations/{}/settlement",
            self.session, self.mutation
        )
    }

    fn settle_op(&self) -> Value {
        json!({"op": "settle", "session_key": self.session, "mutation_id": self.mutation,
               "attempt_id": ATTEMPT, "status": "completed"})
    }
}

/// Approves the entries and records their intent (attempt `a1`), in batches of 1,000 operations:
/// afterwards each is `execution_started`, ready to settle. Answers the failures.
pub async fn prepare(http: &Http, base: &str, entries: &[Entry]) -> Errors {
    let mut errors = Errors::default();
    for chunk in entries.chunks(PREPARE_BATCH) {
        let approve: Vec<Value> = chunk
            .iter()
            .map(|e| {
                json!({"op": "approve", "session_key": e.session, "logical_turn_id": e.turn,
                       "mutation_id": e.mutation, "tool": "bench_tool"})
            })
            .collect();
        let intent: Vec<Value> = chunk
            .iter()
            .map(|e| {
                json!({"op": "intent", "session_key": e.session, "mutation_id": e.mutation,
                       "attempt_id": ATTEMPT})
            })
            .collect();
        for ops in [approve, intent] {
            let n = ops.len();
            send_batch(http, base, batch_body(ops), n, &mut errors).await;
        }
    }
    errors
}

/// Settles the entries (completed) in batches of 1,000 operations, untimed. Answers the failures.
pub async fn settle_all(http: &Http, base: &str, entries: &[Entry]) -> Errors {
    let mut errors = Errors::default();
    for chunk in entries.chunks(PREPARE_BATCH) {
        let ops: Vec<Value> = chunk.iter().map(Entry::settle_op).collect();
        send_batch(http, base, batch_body(ops), chunk.len(), &mut errors).await;
    }
    errors
}

fn batch_body(ops: Vec<Value>) -> Bytes {
    Bytes::from(json!({ "operations": ops }).to_string())
}

/// How the writers of a phase send their settles.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// `writers` concurrent clients, one settle per request
    /// (`POST /api/host/sessions/{key}/mutations/{id}/settlement`).
    Single { writers: usize },
    /// `writers` concurrent clients, `size` settles per `POST /api/host/batch`.
    Batch { writers: usize, size: usize },
}

impl Shape {
    /// Concurrent writers.
    pub fn writers(self) -> usize {
        match self {
            Shape::Single { writers } | Shape::Batch { writers, .. } => writers,
        }
    }

    /// Settles per request.
    pub fn per_request(self) -> usize {
        match self {
            Shape::Single { .. } => 1,
            Shape::Batch { size, .. } => size,
        }
    }

    /// `1 writer`, `64 writers`, `batches of 100 (8 writers)`.
    pub fn label(self) -> String {
        match self {
            Shape::Single { writers: 1 } => "1 writer".to_owned(),
            Shape::Single { writers } => format!("{writers} writers"),
            Shape::Batch { writers, size } => format!("batches of {size} ({writers} writers)"),
        }
    }
}

/// Where a phase's entries live. `tag` keeps mutation ids apart between phases on the same sessions.
#[derive(Clone, Debug)]
pub enum Sessions {
    /// Writer `k` writes its own session `<prefix>-w<k>` (one agent conversation per writer).
    PerWriter { prefix: String },
    /// Every writer writes the same session (writer `k` in its own turns).
    Shared { session: String, tag: String },
}

impl Sessions {
    fn entry(&self, writer: usize, round: usize, i: usize) -> Entry {
        match self {
            Sessions::PerWriter { prefix } => Entry {
                session: format!("{prefix}-w{writer}"),
                turn: format!("r{round}"),
                mutation: format!("r{round}-{i}"),
            },
            Sessions::Shared { session, tag } => Entry {
                session: session.clone(),
                turn: format!("{tag}-w{writer}-r{round}"),
                mutation: format!("{tag}-w{writer}-r{round}-{i}"),
            },
        }
    }
}

/// What one timed write phase measured, over its timed rounds only (preparation excluded).
#[derive(Clone, Debug, Default)]
pub struct WriteFigures {
    /// Settles answered 2xx (in batches: operations answered 2xx).
    pub settles: u64,
    /// Requests sent (a batch is one request).
    pub requests: u64,
    /// Wall time of the timed rounds, seconds.
    pub secs: f64,
    /// Server CPU (user + system) in the timed rounds, seconds, summed over the phase's servers; one
    /// clock tick resolution (10 ms).
    pub server_cpu: f64,
    /// CPU of the watched process trees (the Postgres cluster of the Postgres phase) in the timed
    /// rounds, seconds; 0 when none is watched.
    pub watched_cpu: f64,
    /// Generator CPU (user + system, `getrusage`) in the timed rounds, seconds.
    pub generator_cpu: f64,
    /// CPU of the whole machine (every process) in the timed rounds, seconds.
    pub machine_cpu: f64,
    /// Failed settles in the timed rounds.
    pub errors: Errors,
    /// Failed operations while preparing (untimed).
    pub prepare_errors: Errors,
    /// Seconds from sending each timed request to its whole answer (answered 2xx only).
    pub latencies: Vec<f64>,
}

impl WriteFigures {
    /// The median of [`WriteFigures::latencies`], seconds; NaN when there is none.
    pub fn p50_secs(&self) -> f64 {
        crate::sqlite::median_secs(&self.latencies)
    }

    /// Settles per second.
    pub fn rate(&self) -> f64 {
        per(self.settles as f64, self.secs)
    }

    /// Server CPU per settle, microseconds.
    pub fn server_us_per_settle(&self) -> f64 {
        per(self.server_cpu * 1e6, self.settles as f64)
    }

    /// Generator CPU per request, microseconds.
    pub fn generator_us_per_request(&self) -> f64 {
        per(self.generator_cpu * 1e6, self.requests as f64)
    }

    /// Share of one core the server used, in percent.
    pub fn server_core_pct(&self) -> f64 {
        per(self.server_cpu * 100.0, self.secs)
    }

    /// Share of one core the generator used, in percent.
    pub fn generator_core_pct(&self) -> f64 {
        per(self.generator_cpu * 100.0, self.secs)
    }

    /// Share of one core other processes (neither the server nor the generator nor a watched process
    /// tree) used, in percent.
    pub fn others_core_pct(&self) -> f64 {
        per(
            (self.machine_cpu - self.server_cpu - self.generator_cpu - self.watched_cpu).max(0.0)
                * 100.0,
            self.secs,
        )
    }

    /// CPU of the watched process trees per settle, microseconds.
    pub fn watched_us_per_settle(&self) -> f64 {
        per(self.watched_cpu * 1e6, self.settles as f64)
    }

    /// Share of one core the watched process trees used, in percent.
    pub fn watched_core_pct(&self) -> f64 {
        per(self.watched_cpu * 100.0, self.secs)
    }

    /// CPU the machine left idle (every core), in percent of one core: when it is well above 0, neither
    /// the generator nor other processes kept the server from a core.
    pub fn idle_core_pct(&self) -> f64 {
        per(
            (cores() * self.secs - self.machine_cpu).max(0.0) * 100.0,
            self.secs,
        )
    }

    /// One line for the progress log.
    pub fn describe(&self) -> String {
        format!(
            "{} settles in {:.2} s = {}/s; server CPU {:.0}% of a core, {:.1} µs/settle; generator CPU \
             {:.0}% of a core, {:.1} µs/request; other processes {:.0}% of a core; idle {:.0}% of a core; \
             errors: {}; preparation errors: {}",
            fmt_int(self.settles),
            self.secs,
            fmt_int(self.rate().round() as u64),
            self.server_core_pct(),
            self.server_us_per_settle(),
            self.generator_core_pct(),
            self.generator_us_per_request(),
            self.others_core_pct(),
            self.idle_core_pct(),
            self.errors.summary(),
            self.prepare_errors.summary(),
        )
    }
}

/// `a / b`, NaN when `b` is 0.
pub fn per(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// `12,345`.
pub fn fmt_int(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Limits of one timed write phase.
#[derive(Clone, Copy, Debug)]
pub struct PhaseLimits {
    /// Timed seconds to reach (the phase stops earlier at `max_settles`).
    pub secs: f64,
    /// Settles at most.
    pub max_settles: u64,
}

/// Runs one timed write phase against `server`: rounds of (prepare entries untimed, then settle them
/// with `shape` until they run out or the time is up) until `limits.secs` of timed settling or
/// `limits.max_settles` settles. The first round is a short calibration (a quarter of the time, entries
/// for 1.5 × `hint` settles per second); each later round prepares what the measured rate needs for the
/// time left, plus 15%. Entries left unsettled when the time is up stay in flight.
pub async fn write_phase(
    http: &Http,
    server: &mut Server,
    shape: Shape,
    sessions: &Sessions,
    limits: PhaseLimits,
    hint: f64,
) -> Result<WriteFigures, String> {
    write_phase_over(
        http,
        std::slice::from_mut(server),
        &[],
        shape,
        sessions,
        limits,
        hint,
    )
    .await
}

/// [`write_phase`] over several servers of one database: writer `k`'s entries are prepared on server
/// `k mod n`, and its requests go to the servers in turn (request `i` to server `(k + i) mod n`), so at
/// any moment about as many writers are on each. The server CPU is summed over the servers; the CPU of
/// the process trees rooted at `watch` (e.g. the Postgres postmaster) is measured beside it.
pub async fn write_phase_over(
    http: &Http,
    servers: &mut [Server],
    watch: &[u32],
    shape: Shape,
    sessions: &Sessions,
    limits: PhaseLimits,
    hint: f64,
) -> Result<WriteFigures, String> {
    if servers.is_empty() {
        return Err("no server to write to".to_owned());
    }
    let writers = shape.writers();
    let per_request = shape.per_request();
    let mut figures = WriteFigures::default();
    for server in servers.iter() {
        http.warm(server, writers).await;
    }
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    for round in 0..12 {
        let left = limits.secs - figures.secs;
        if left <= limits.secs * 0.02 || figures.settles >= limits.max_settles {
            break;
        }
        let (wanted, round_secs) = if round == 0 {
            ((hint * left / 4.0 * 1.5).ceil() as u64, left / 4.0)
        } else {
            ((figures.rate() * left * 1.15).ceil() as u64, left)
        };
        let wanted = wanted.clamp(1, limits.max_settles - figures.settles);
        // Whole requests per writer, at least one.
        let requests_per_writer = (wanted as usize).div_ceil(writers * per_request).max(1);
        let per_writer = requests_per_writer * per_request;
        let plan: Vec<Vec<Entry>> = (0..writers)
            .map(|w| {
                (0..per_writer)
                    .map(|i| sessions.entry(w, round, i))
                    .collect()
            })
            .collect();
        for (s, base) in bases.iter().enumerate() {
            let mine: Vec<Entry> = plan
                .iter()
                .skip(s)
                .step_by(bases.len())
                .flatten()
                .cloned()
                .collect();
            figures
                .prepare_errors
                .merge(prepare(http, base, &mine).await);
        }
        check_alive(servers)?;

        // Every URL and body is made before the clock starts.
        let work: Vec<Work> = plan
            .into_iter()
            .enumerate()
            .map(|(w, entries)| Work::new(shape, &bases, w, entries))
            .collect();
        let cpu_before = servers_cpu_secs(servers)?;
        let watched_before = watched_cpu_secs(watch)?;
        let self_before = self_cpu_secs();
        let machine_before = machine_cpu_secs();
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(round_secs);
        let tasks: Vec<_> = work
            .into_iter()
            .map(|work| {
                let http = http.clone();
                tokio::spawn(async move { work.run(&http, deadline).await })
            })
            .collect();
        for task in tasks {
            match task.await {
                Ok((settles, requests, errors, latencies)) => {
                    figures.settles += settles;
                    figures.requests += requests;
                    figures.errors.merge(errors);
                    figures.latencies.extend(latencies);
                }
                Err(e) => figures.errors.add(format!("writer task failed: {e}")),
            }
        }
        figures.secs += started.elapsed().as_secs_f64();
        figures.generator_cpu += self_cpu_secs() - self_before;
        figures.server_cpu += servers_cpu_secs(servers)? - cpu_before;
        figures.watched_cpu += watched_cpu_secs(watch)? - watched_before;
        figures.machine_cpu += machine_cpu_secs() - machine_before;
        check_alive(servers)?;
    }
    Ok(figures)
}

fn check_alive(servers: &mut [Server]) -> Result<(), String> {
    servers.iter_mut().try_for_each(Server::check_alive)
}

fn servers_cpu_secs(servers: &[Server]) -> Result<f64, String> {
    servers.iter().map(Server::cpu_secs).sum()
}

fn watched_cpu_secs(watch: &[u32]) -> Result<f64, String> {
    watch.iter().map(|&pid| tree_cpu_secs(pid)).sum()
}

/// What one writer sends in a round, made before the round is timed.
enum Work {
    /// Settle URLs, one request each, with [`SETTLE_BODY`].
    Single(Vec<String>),
    /// Batch bodies with their server and operation counts.
    Batch(Vec<(String, Bytes, usize)>),
}

impl Work {
    /// Writer `writer`'s requests: the `i`-th to `bases[(writer + i) % bases.len()]`.
    fn new(shape: Shape, bases: &[String], writer: usize, entries: Vec<Entry>) -> Work {
        let base = |i: usize| &bases[(writer + i) % bases.len()];
        match shape {
            Shape::Single { .. } => Work::Single(
                entries
                    .iter()
                    .enumerate()
                    .map(|(i, e)| e.settle_url(base(i)))
                    .collect(),
            ),
            Shape::Batch { size, .. } => Work::Batch(
                entries
                    .chunks(size)
                    .enumerate()
                    .map(|(i, c)| {
                        (
                            base(i).clone(),
                            batch_body(c.iter().map(Entry::settle_op).collect()),
                            c.len(),
                        )
                    })
                    .collect(),
            ),
        }
    }

    /// Sends the requests in order until they run out or the deadline. Answers (settles answered 2xx,
    /// requests, failures, the seconds each request answered 2xx took).
    async fn run(self, http: &Http, deadline: Instant) -> (u64, u64, Errors, Vec<f64>) {
        let (mut settles, mut requests, mut errors) = (0, 0, Errors::default());
        let mut latencies = Vec::new();
        match self {
            Work::Single(urls) => {
                let body = Bytes::from_static(SETTLE_BODY.as_bytes());
                for url in urls {
                    if Instant::now() >= deadline {
                        break;
                    }
                    requests += 1;
                    let sent = Instant::now();
                    match http.post(&url, body.clone()).await {
                        Ok(_) => {
                            settles += 1;
                            latencies.push(sent.elapsed().as_secs_f64());
                        }
                        Err(kind) => errors.add(kind),
                    }
                }
            }
            Work::Batch(bodies) => {
                for (base, body, n) in bodies {
                    if Instant::now() >= deadline {
                        break;
                    }
                    requests += 1;
                    settles += send_batch(http, &base, body, n, &mut errors).await;
                }
            }
        }
        (settles, requests, errors, latencies)
    }
}

/// What the generator reaches against `GET /healthz` (the cheapest endpoint): a ceiling for its request
/// rate on this machine.
#[derive(Clone, Debug, Default)]
pub struct Ceiling {
    /// Requests answered 200.
    pub requests: u64,
    /// Wall time, seconds.
    pub secs: f64,
    /// Generator CPU, seconds.
    pub generator_cpu: f64,
    /// Server CPU, seconds.
    pub server_cpu: f64,
    /// Failed requests.
    pub errors: Errors,
}

impl Ceiling {
    /// Requests per second.
    pub fn rate(&self) -> f64 {
        per(self.requests as f64, self.secs)
    }

    /// Generator CPU per request, microseconds.
    pub fn generator_us_per_request(&self) -> f64 {
        per(self.generator_cpu * 1e6, self.requests as f64)
    }
}

/// `connections` concurrent clients GET `/healthz` for `secs` seconds.
pub async fn ceiling(
    http: &Http,
    server: &mut Server,
    connections: usize,
    secs: f64,
) -> Result<Ceiling, String> {
    http.warm(server, connections).await;
    let url = format!("{}/healthz", server.base);
    let cpu_before = server.cpu_secs()?;
    let self_before = self_cpu_secs();
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(secs);
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let http = http.clone();
            let url = url.clone();
            tokio::spawn(async move {
                let (mut ok, mut errors) = (0u64, Errors::default());
                while Instant::now() < deadline {
                    match http.get(&url).await {
                        Ok(_) => ok += 1,
                        Err(kind) => errors.add(kind),
                    }
                }
                (ok, errors)
            })
        })
        .collect();
    let mut figures = Ceiling::default();
    for task in tasks {
        match task.await {
            Ok((ok, errors)) => {
                figures.requests += ok;
                figures.errors.merge(errors);
            }
            Err(e) => figures.errors.add(format!("client task failed: {e}")),
        }
    }
    figures.secs = started.elapsed().as_secs_f64();
    figures.generator_cpu = self_cpu_secs() - self_before;
    figures.server_cpu = server.cpu_secs()? - cpu_before;
    server.check_alive()?;
    Ok(figures)
}
