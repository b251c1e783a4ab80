//! Reads: the history of a large session against serde_json's own serialising of the same body, an
//! incremental replay against a full one, and live subscribers (`/api/run-events`) read while writers
//! settle.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};

use crate::load::{per, prepare, settle_all, Entry, Errors, Http};
use crate::server::Server;

/// The median of some samples (the mean of the two middle ones for an even count); NaN for none.
pub fn median(mut samples: Vec<f64>) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}

/// A session of `outcomes` settled outcomes, all in one logical turn, made with untimed batches.
pub struct BigSession {
    /// Session key.
    pub session: String,
    /// Its one logical turn.
    pub turn: String,
    /// Outcomes in it.
    pub outcomes: usize,
    /// The turn's latest revision.
    pub latest_revision: u64,
}

/// Makes [`BigSession`] `session` with `outcomes` completed outcomes in turn `turn-1`.
pub async fn make_big_session(
    http: &Http,
    server: &mut Server,
    session: &str,
    outcomes: usize,
) -> Result<BigSession, String> {
    let turn = "turn-1".to_owned();
    let entries: Vec<Entry> = (0..outcomes)
        .map(|i| Entry {
            session: session.to_owned(),
            turn: turn.clone(),
            mutation: format!("m{i}"),
        })
        .collect();
    let mut errors = prepare(http, &server.base, &entries).await;
    errors.merge(settle_all(http, &server.base, &entries).await);
    server.check_alive()?;
    if errors.count > 0 {
        return Err(format!(
            "making session {session} failed: {}",
            errors.summary()
        ));
    }
    let url = format!("{}/api/sessions/{session}/turns", server.base);
    let body = http
        .get(&url)
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let turns: Value =
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))?;
    let latest_revision = turns["turns"][0]["latest_revision"]
        .as_u64()
        .ok_or_else(|| format!("GET {url}: no turns[0].latest_revision"))?;
    Ok(BigSession {
        session: session.to_owned(),
        turn,
        outcomes,
        latest_revision,
    })
}

/// One timed GET: (seconds until the whole body arrived, the body).
async fn timed_get(http: &Http, url: &str) -> Result<(f64, bytes::Bytes), String> {
    let started = Instant::now();
    let body = http.get(url).await.map_err(|e| format!("GET {url}: {e}"))?;
    Ok((started.elapsed().as_secs_f64(), body))
}

/// The history figure: `GET /api/mutation-outcomes` against serialising the same body in memory.
#[derive(Clone, Debug)]
pub struct History {
    /// Median time of the GET (request sent to whole body received), seconds.
    pub get_secs: f64,
    /// The server's CPU (utime+stime) per GET over the timed GETs, seconds.
    pub server_cpu_secs: f64,
    /// Median time of `serde_json::to_vec` of the body parsed once into a `serde_json::Value`, seconds.
    pub serialize_secs: f64,
    /// Body size, bytes.
    pub body_bytes: usize,
    /// Outcomes in the body.
    pub outcomes: usize,
}

/// Times the history of `big` (`samples` GETs after one untimed, median) and serde_json serialising the
/// same body (`samples` × 3 times, median). Checks the body holds every outcome.
pub async fn history(
    http: &Http,
    server: &Server,
    big: &BigSession,
    samples: usize,
) -> Result<History, String> {
    let url = format!(
        "{}/api/mutation-outcomes?session_id={}",
        server.base, big.session
    );
    let (_, body) = timed_get(http, &url).await?;
    let mut times = Vec::new();
    let cpu_before = server.cpu_secs()?;
    for _ in 0..samples {
        times.push(timed_get(http, &url).await?.0);
    }
    let server_cpu_secs = (server.cpu_secs()? - cpu_before) / samples.max(1) as f64;
    let value: Value =
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))?;
    let outcomes = value["mutation_outcomes"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    if outcomes != big.outcomes {
        return Err(format!(
            "GET {url}: {outcomes} outcomes, expected {}",
            big.outcomes
        ));
    }
    let mut serialize = Vec::new();
    for _ in 0..samples * 3 {
        let started = Instant::now();
        let bytes = serde_json::to_vec(&value).map_err(|e| format!("serde_json: {e}"))?;
        serialize.push(started.elapsed().as_secs_f64());
        std::hint::black_box(bytes);
    }
    Ok(History {
        get_secs: median(times),
        server_cpu_secs,
        serialize_secs: median(serialize),
        body_bytes: body.len(),
        outcomes,
    })
}

/// The replay figure: the tail of a turn against all of it.
#[derive(Clone, Debug)]
pub struct Replay {
    /// Median time of the replay after `latest - 100`, seconds.
    pub tail_secs: f64,
    /// Median time of the full replay (no cursor), seconds.
    pub full_secs: f64,
    /// Events in the tail replay.
    pub tail_events: usize,
    /// Events in the full replay.
    pub full_events: usize,
}

/// Times `GET /api/mutation-events` of `big`'s turn after `latest_revision - 100` and without a cursor,
/// `samples` each (after one untimed), medians.
pub async fn replay(
    http: &Http,
    server: &Server,
    big: &BigSession,
    samples: usize,
) -> Result<Replay, String> {
    let full_url = format!(
        "{}/api/mutation-events?session_id={}&logical_turn_id={}",
        server.base, big.session, big.turn
    );
    let tail_url = format!(
        "{full_url}&after={}",
        big.latest_revision.saturating_sub(100)
    );
    let events = |body: &[u8]| memchr::memmem::find_iter(body, b"event: mutation_outcome").count();
    let mut full_events = 0;
    let mut tail_events = 0;
    let (mut full, mut tail) = (Vec::new(), Vec::new());
    for i in 0..=samples {
        // Alternated, so drift on a shared machine touches both alike; the first pair is untimed.
        let (t, body) = timed_get(http, &full_url).await?;
        full_events = events(&body);
        let (u, body) = timed_get(http, &tail_url).await?;
        tail_events = events(&body);
        if i > 0 {
            full.push(t);
            tail.push(u);
        }
    }
    Ok(Replay {
        tail_secs: median(tail),
        full_secs: median(full),
        tail_events,
        full_events,
    })
}

/// Live subscribers: raw HTTP/1.1 connections to `/api/run-events`, counting `mutation_outcome` and
/// `resync` events (the generator does not parse them: cheap per byte). Each stream is read every
/// `read_interval` (everything waiting, 64 KiB at a time): the server writes each event when it is
/// settled, whenever its client reads, and the socket buffers hold what arrives in between, so the server's
/// work is the same as with a client reading each event at once, while the generator wakes up once per
/// interval per stream instead of once per event and leaves the cores to the server. Every event is still
/// read and counted; a stream that fell behind would receive `resync`, which is counted too.
pub struct Subscribers {
    /// Streams that answered 200.
    pub connected: usize,
    /// Streams refused or failed while connecting.
    pub errors: Errors,
    outcomes: Arc<AtomicU64>,
    resyncs: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Subscribers {
    /// Opens `n` streams on `session` (100 connecting at a time) and waits (up to 60 s) until each has
    /// answered. Each is then read every `read_interval`, the streams' reads spread over the interval.
    pub async fn open(
        server: &Server,
        session: &str,
        n: usize,
        read_interval: Duration,
    ) -> Subscribers {
        let outcomes = Arc::new(AtomicU64::new(0));
        let resyncs = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = mpsc::channel::<Result<(), String>>(n.max(1));
        let gate = Arc::new(Semaphore::new(100));
        let request = format!(
            "GET /api/run-events?session_id={session} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
            server.addr
        );
        let tasks = (0..n)
            .map(|i| {
                let offset = read_interval.mul_f64(i as f64 / n as f64);
                let (tx, gate, request) = (tx.clone(), gate.clone(), request.clone());
                let (outcomes, resyncs, addr) = (outcomes.clone(), resyncs.clone(), server.addr);
                tokio::spawn(async move {
                    let permit = gate.acquire_owned().await;
                    let stream = match subscribe(addr, &request).await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = tx.send(Err(e)).await;
                            return;
                        }
                    };
                    drop(permit);
                    let _ = tx.send(Ok(())).await;
                    tokio::time::sleep(offset).await;
                    read_events(stream, &outcomes, &resyncs, read_interval).await;
                })
            })
            .collect();
        drop(tx);
        let mut subscribers = Subscribers {
            connected: 0,
            errors: Errors::default(),
            outcomes,
            resyncs,
            tasks,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        for _ in 0..n {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(Ok(()))) => subscribers.connected += 1,
                Ok(Some(Err(kind))) => subscribers.errors.add(kind),
                Ok(None) => break,
                Err(_) => {
                    subscribers
                        .errors
                        .add("stream did not answer within 60 s".to_owned());
                    break;
                }
            }
        }
        subscribers
    }

    /// `mutation_outcome` events received so far, all streams together.
    pub fn outcomes(&self) -> u64 {
        self.outcomes.load(Ordering::Relaxed)
    }

    /// `resync` events received so far (a stream whose queue filled up), all streams together.
    pub fn resyncs(&self) -> u64 {
        self.resyncs.load(Ordering::Relaxed)
    }

    /// Waits until the count of received events stops growing (100 ms without change), at most `max`.
    pub async fn drain(&self, max: Duration) {
        let deadline = Instant::now() + max;
        let mut last = self.outcomes();
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = self.outcomes();
            if now == last {
                return;
            }
            last = now;
        }
    }

    /// Closes every stream.
    pub async fn close(self) {
        for t in &self.tasks {
            t.abort();
        }
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Connects, sends the request, reads the answer's head: the stream on 200, else the failure's kind.
async fn subscribe(addr: std::net::SocketAddr, request: &str) -> Result<TcpStream, String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("send: {e}"))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // The head is small and read once per stream: byte by byte keeps the events after it in the socket.
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(0) => return Err("closed before the answer".to_owned()),
            Ok(_) => head.push(byte[0]),
            Err(e) => return Err(format!("read: {e}")),
        }
        if head.len() > 16 * 1024 {
            return Err("answer head over 16 KiB".to_owned());
        }
    }
    let status = String::from_utf8_lossy(&head)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .unwrap_or(0);
    if status == 200 {
        Ok(stream)
    } else {
        let mut body = vec![0u8; 4096];
        let n = stream.read(&mut body).await.unwrap_or(0);
        Err(crate::load::error_kind(status, &body[..n]))
    }
}

/// Reads a stream until it ends, counting events; after a read that did not fill the buffer (nothing more
/// is waiting), sleeps `interval`. Matches split across reads are found through the bytes kept from the
/// previous read; only matches ending in the new bytes are counted.
async fn read_events(
    mut stream: TcpStream,
    outcomes: &AtomicU64,
    resyncs: &AtomicU64,
    interval: Duration,
) {
    const OUTCOME: &[u8] = b"event: mutation_outcome";
    const RESYNC: &[u8] = b"event: resync";
    let keep = OUTCOME.len() - 1;
    let outcome_finder = memchr::memmem::Finder::new(OUTCOME);
    let resync_finder = memchr::memmem::Finder::new(RESYNC);
    let mut buf = vec![0u8; 64 * 1024];
    let mut kept = 0;
    loop {
        let n = match stream.read(&mut buf[kept..]).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let end = kept + n;
        let window = &buf[..end];
        let count = |finder: &memchr::memmem::Finder, len: usize| {
            finder
                .find_iter(window)
                .filter(|start| start + len > kept)
                .count() as u64
        };
        let o = count(&outcome_finder, OUTCOME.len());
        let r = count(&resync_finder, RESYNC.len());
        if o > 0 {
            outcomes.fetch_add(o, Ordering::Relaxed);
        }
        if r > 0 {
            resyncs.fetch_add(r, Ordering::Relaxed);
        }
        let full = end == buf.len();
        let tail = end.min(keep);
        buf.copy_within(end - tail..end, 0);
        kept = tail;
        if !full && !interval.is_zero() {
            tokio::time::sleep(interval).await;
        }
    }
}

/// Events the subscribers received out of those the settles should have sent them.
pub fn delivered_share(received: u64, settles: u64, subscribers: usize) -> f64 {
    per(received as f64, settles as f64 * subscribers as f64)
}
