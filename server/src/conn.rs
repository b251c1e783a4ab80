//! Accepting and serving HTTP/1.1 connections with bounds (docs/api.md, "Limits"):
//!
//! - A client must send a whole request header within `header_timeout` of connecting or of its previous
//!   response; otherwise its connection is closed (hyper's header read timeout, which also bounds how long
//!   an idle keep-alive connection stays open).
//! - At most `max_connections` connections are open (kept below the process's file limit). When a new
//!   connection arrives at the cap, the open connection that has been idle longest — no request in
//!   progress, so nothing served is cut — is closed to make room: a flood of slow or idle connections can
//!   never starve `/healthz` or other clients. When every open connection is serving a request, the new one
//!   is answered `503` JSON `too_many_connections` with `Retry-After` and closed.
//! - A response the client does not read (nothing can be sent for `send_timeout`) closes its connection,
//!   so clients that never read cannot hold connections or buffered responses for ever.
//! - Every request carries its client's address as `axum::extract::ConnectInfo<SocketAddr>`.
//! - A panic in a handler cannot leave a connection counted: its entry is removed however the task ends.
//! - On shutdown the listener stops, idle connections close, and requests in progress finish (bounded).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::Router;
use http_body::Frame;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::http::live::SentBytes;

/// Bounds on connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Time allowed for a whole request header, counted from the connection's start or its previous
    /// response.
    pub header_timeout: Duration,
    /// Open connections at most.
    pub max_connections: usize,
    /// How long a response may stay unable to send anything (the client does not read) before its
    /// connection is closed.
    pub send_timeout: Duration,
    /// How long requests in progress may take to finish after shutdown starts.
    pub drain: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            header_timeout: Duration::from_secs(10),
            max_connections: 4096,
            send_timeout: Duration::from_secs(30),
            drain: Duration::from_secs(10),
        }
    }
}

/// File descriptors kept free for the database and its WAL, logs, the connection being accepted and the
/// 503 answers ([`REFUSALS_AT_ONCE`]).
const FD_RESERVE: u64 = 128;

/// Raises this process's open-file limit to its hard limit and returns the connection cap that fits in it:
/// `min(wanted, limit - 128)`, at least 8.
pub fn fit_to_file_limit(wanted: usize) -> usize {
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap_or(1024);
    let fits = limit.saturating_sub(FD_RESERVE).max(8);
    wanted.min(usize::try_from(fits).unwrap_or(usize::MAX))
}

/// One open connection, as the accept loop sees it.
struct Conn {
    /// Requests whose response has not been sent completely (a live stream counts until it ends).
    in_flight: AtomicUsize,
    /// When the connection last became idle, in ms since the tracker's start.
    idle_since: AtomicU64,
    /// Requests started on it so far.
    requests: AtomicU64,
    /// Closes the connection at once (eviction).
    evict: Notify,
}

/// Open connections.
struct Registry {
    start: Instant,
    next_id: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
}

impl Registry {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn len(&self) -> usize {
        self.conns.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Takes an idle connection (no request in progress) out of the registry and tells it to close: one
    /// that never completed a request header first (slow or silent clients), else the one idle longest.
    /// False when every connection is serving a request.
    fn evict_idlest(&self) -> bool {
        let Ok(mut conns) = self.conns.lock() else {
            return false;
        };
        let victim = conns
            .iter()
            .filter(|(_, c)| c.in_flight.load(Ordering::Acquire) == 0)
            .min_by_key(|(_, c)| {
                (
                    c.requests.load(Ordering::Acquire) > 0,
                    c.idle_since.load(Ordering::Acquire),
                )
            })
            .map(|(id, _)| *id);
        match victim.and_then(|id| conns.remove(&id)) {
            Some(conn) => {
                conn.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Counts a request as in progress until its response body is dropped (sent completely, or the client
/// went away).
struct InFlight {
    conn: Arc<Conn>,
    registry: Arc<Registry>,
}

impl InFlight {
    fn start(conn: Arc<Conn>, registry: Arc<Registry>) -> Self {
        conn.in_flight.fetch_add(1, Ordering::AcqRel);
        conn.requests.fetch_add(1, Ordering::AcqRel);
        InFlight { conn, registry }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.conn
            .idle_since
            .store(self.registry.now(), Ordering::Release);
        self.conn.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that holds its request's [`InFlight`] until it is dropped.
struct Tracked {
    inner: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// At most this many connections at once are being answered 503 at the cap; past it they are closed.
const REFUSALS_AT_ONCE: usize = 64;

/// Serves `router` on `listener` within `limits` until `shutdown` completes; then drains (see module doc).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()>,
) {
    let registry = Arc::new(Registry {
        start: Instant::now(),
        next_id: AtomicU64::new(0),
        conns: Mutex::new(HashMap::new()),
    });
    let closing = CancellationToken::new();
    let tasks = TaskTracker::new();
    let refusals = Arc::new(Semaphore::new(REFUSALS_AT_ONCE));
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors or a connection reset before it was accepted: wait a moment
                // instead of spinning; the cap normally keeps us from getting here.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        // A slot is a socket: it is given back only once the connection's socket is closed, so open
        // sockets never exceed the cap, however fast connections arrive.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => Some(slot),
            Err(_) if registry.evict_idlest() => {
                // The evicted connection closes its socket as soon as its task runs.
                tokio::time::timeout(Duration::from_secs(1), slots.clone().acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
            Err(_) => None,
        };
        let Some(slot) = slot else {
            match refusals.clone().try_acquire_owned() {
                Ok(permit) => {
                    tasks.spawn(async move {
                        refuse(stream).await;
                        drop(permit);
                    });
                }
                Err(_) => drop(stream),
            }
            continue;
        };
        let id = registry.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(registry.now()),
            requests: AtomicU64::new(0),
            evict: Notify::new(),
        });
        if let Ok(mut conns) = registry.conns.lock() {
            conns.insert(id, conn.clone());
        }
        tasks.spawn(serve_connection(
            stream,
            slot,
            Accepted {
                peer,
                router: router.clone(),
                limits,
                conn,
                id,
                registry: registry.clone(),
            },
            closing.clone(),
        ));
    }
    drop(listener);
    closing.cancel();
    tasks.close();
    if tokio::time::timeout(limits.drain, tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            open = registry.len(),
            "requests still in progress after the drain time; closing"
        );
    }
}

/// Serves one connection; `_slot` (a parameter, so dropped after the connection and its socket) is given
/// back when the function returns.
async fn serve_connection(
    stream: TcpStream,
    _slot: tokio::sync::OwnedSemaphorePermit,
    accepted: Accepted,
    closing: CancellationToken,
) {
    let Accepted {
        peer,
        router,
        limits,
        conn,
        id,
        registry,
    } = accepted;
    let sent = SentBytes::default();
    let service = {
        let conn = conn.clone();
        let registry = registry.clone();
        let sent = sent.clone();
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let in_flight = InFlight::start(conn.clone(), registry.clone());
            let router = router.clone();
            let mut request = request.map(Body::new);
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            request.extensions_mut().insert(sent.clone());
            async move {
                let response = router
                    .oneshot(request)
                    .await
                    .unwrap_or_else(|never| match never {});
                Ok::<_, std::convert::Infallible>(response.map(|inner| Tracked {
                    inner,
                    _in_flight: in_flight,
                }))
            }
        })
    };
    // Leaves the registry however this task ends (a panic included).
    // One clock for the send watch and its check.
    let start = registry.start;
    let _registered = Registered { registry, id };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    // hyper's own bodiless answers to requests it cannot parse become JSON (http::malformed).
    let send_blocked = Arc::new(AtomicU64::new(0));
    let io = TokioIo::new(crate::http::malformed::JsonParseErrors::new(SendWatch {
        inner: stream,
        blocked_since: send_blocked.clone(),
        start,
        sent,
    }));
    let mut stall_check = tokio::time::interval(Duration::from_secs(1));
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    let mut draining = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                break;
            }
            _ = conn.evict.notified(), if !draining => {
                if conn.in_flight.load(Ordering::Acquire) == 0 {
                    tracing::debug!("idle connection closed to make room for a new one");
                    break;
                }
                // A request started just as it was chosen: let it finish, then close.
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = closing.cancelled(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = stall_check.tick() => {
                let since = send_blocked.load(Ordering::Acquire);
                let now = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
                if since != 0 && now.saturating_sub(since) > limits.send_timeout.as_millis() as u64 {
                    tracing::info!(
                        send_timeout_secs = limits.send_timeout.as_secs(),
                        "connection closed: its client has read nothing of the response"
                    );
                    break;
                }
            }
        }
    }
}

/// What the accept loop hands a new connection's task.
struct Accepted {
    /// The client's address.
    peer: std::net::SocketAddr,
    router: Router,
    limits: ConnLimits,
    /// Its entry in the registry, under `id`.
    conn: Arc<Conn>,
    id: u64,
    registry: Arc<Registry>,
}

/// Removes a connection from the [`Registry`] when dropped.
struct Registered {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut conns) = self.registry.conns.lock() {
            conns.remove(&self.id);
        }
    }
}

/// The socket, noting since when a write has been waiting for the client to read (ms since `start`, plus
/// one so that 0 means "not waiting"): set when a write cannot proceed, cleared when one does; and counting
/// the bytes written ([`SentBytes`]).
struct SendWatch {
    inner: TcpStream,
    blocked_since: Arc<AtomicU64>,
    start: Instant,
    sent: SentBytes,
}

impl SendWatch {
    fn note(&self, poll: &Poll<std::io::Result<usize>>) {
        if let Poll::Ready(Ok(n)) = poll {
            self.sent.add(*n as u64);
        }
        match poll {
            Poll::Pending => {
                let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
                let _ = self.blocked_since.compare_exchange(
                    0,
                    now.saturating_add(1),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
            Poll::Ready(_) => self.blocked_since.store(0, Ordering::Release),
        }
    }
}

impl tokio::io::AsyncRead for SendWatch {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for SendWatch {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(&poll);
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note(&poll);
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // A socket's flush is always ready: it says nothing about whether the client reads.
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Answers a connection over the cap: reads what it sent of its request (briefly), writes a 503 JSON with
/// `Retry-After`, and closes.
async fn refuse(mut stream: TcpStream) {
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        let mut seen = Vec::new();
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if seen.windows(4).any(|w| w == b"\r\n\r\n") || seen.len() > 16 * 1024 {
                break;
            }
        }
    })
    .await;
    let body = r#"{"error":{"code":"too_many_connections","message":"the server has as many connections open as it allows, all of them busy; retry later"}}"#;
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {}\r\n{}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        crate::error::RETRY_AFTER_SECS,
        crate::http::security::RAW_HEADER_LINES,
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}
