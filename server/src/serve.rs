//! `outcomes serve`: open the ledger, resolve the host token, build the router, serve until SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderName, Request};
use axum::Router;
use clap::Args;
use ledger::{Ledger, LedgerOptions};
use tokio_util::sync::CancellationToken;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::classify::ServerErrorsFailureClass;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::auth::{resolve_host_token, TokenSource};
use crate::conn::ConnLimits;
use crate::hub::{Hub, StreamLimits};
use crate::AppState;
use host::demo::DemoArgs;

/// The compression predicate that leaves out a response marked [`crate::assets::BuildTimeCompressed`].
#[derive(Debug, Clone, Copy)]
struct NotBuildTimeCompressed;

impl Predicate for NotBuildTimeCompressed {
    fn should_compress<B>(&self, response: &axum::http::Response<B>) -> bool
    where
        B: axum::body::HttpBody,
    {
        response
            .extensions()
            .get::<crate::assets::BuildTimeCompressed>()
            .is_none()
    }
}

/// `outcomes serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on. A non-loopback address requires an explicit host token.
    #[arg(long, env = "OUTCOMES_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,
    /// The ledger: a SQLite file path or `sqlite:` URL, or a `postgres://` URL for several instances on
    /// one database (docs/ledger.md "Backends"). Default: `<data dir>/ledger.sqlite`.
    #[arg(long, env = "OUTCOMES_DATABASE")]
    pub database: Option<String>,
    /// Directory for the default database and the generated host token.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Bearer token of the host write API. Default: `<data dir>/host-token`, generated on first start.
    #[arg(long, env = "OUTCOMES_HOST_TOKEN", hide_env_values = true)]
    pub host_token: Option<String>,
    /// Directory of the built browser assets (`pkg/` inside).
    #[arg(long, env = "OUTCOMES_SITE_ROOT", default_value = "target/site")]
    pub site_root: String,
    /// A conversation expires this many seconds after its last write.
    #[arg(long, env = "OUTCOMES_SESSION_TTL_SECS", default_value_t = 30 * 24 * 3600)]
    pub session_ttl_secs: u64,
    /// When an expired session's rows are deleted (docs/ledger.md "Retention").
    #[command(flatten)]
    pub purge: crate::purge::PurgeOptions,
    /// Play the demo against this server when the ledger is empty.
    #[arg(long, env = "OUTCOMES_DEMO_WHEN_EMPTY")]
    pub demo_when_empty: bool,
    /// How long a write waits for the ledger's write lock, in milliseconds; past it: 503 `busy`.
    #[arg(long, env = "OUTCOMES_WRITE_WAIT_MS", default_value_t = 10_000)]
    pub write_wait_ms: u64,
    /// The deadline of a write whose intent names none, in seconds (1 to 604800): past it, a write its
    /// host neither settled nor extended is settled `outcome_unknown` with `execution_timeout` by the
    /// ledger (docs/api.md "Deadlines").
    #[arg(long, env = "OUTCOMES_IN_FLIGHT_DEADLINE_SECS", default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub in_flight_deadline_secs: u64,
    /// Start without reading the SQLite ledger whole first (`PRAGMA quick_check`, about 7 ms a MB):
    /// by default a damaged ledger is refused at start and left as it was (docs/ledger.md "Files"); with
    /// this flag it is served, and reads of its damaged pages answer 500.
    #[arg(long, env = "OUTCOMES_SKIP_INTEGRITY_CHECK")]
    pub skip_integrity_check: bool,
    /// A client must send a whole request header within this many seconds of connecting or of its
    /// previous response; an idle keep-alive connection is closed after the same time.
    #[arg(long, env = "OUTCOMES_HEADER_TIMEOUT_SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout_secs: u64,
    /// A response its client does not read (nothing can be sent for this many seconds) closes the
    /// connection.
    #[arg(long, env = "OUTCOMES_SEND_TIMEOUT_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub send_timeout_secs: u64,
    /// A request body must arrive whole within this many seconds; past it the request is refused.
    #[arg(long, env = "OUTCOMES_BODY_TIMEOUT_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub body_timeout_secs: u64,
    /// Open connections at most (also kept below the process's file limit). At the limit, the connection
    /// idle longest (no request in progress) is closed to make room; with none idle, 503.
    #[arg(long, env = "OUTCOMES_MAX_CONNECTIONS", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(8..=1_000_000))]
    pub max_connections: u64,
    /// Live streams (`/api/run-events`) at most in total; past it: 503 `too_many_streams`.
    #[arg(long, env = "OUTCOMES_MAX_LIVE_STREAMS", default_value_t = 1024)]
    pub max_live_streams: usize,
    /// Live streams at most per session; past it: 503 `too_many_streams`.
    #[arg(
        long,
        env = "OUTCOMES_MAX_LIVE_STREAMS_PER_SESSION",
        default_value_t = 64
    )]
    pub max_live_streams_per_session: usize,
    /// Who may read (docs/access.md): `auto` opens reads on a loopback address and closes them on any
    /// other; `signed-in` closes them everywhere; `open` opens them (refused on a non-loopback address).
    #[arg(long, env = "OUTCOMES_ACCESS", value_enum, default_value_t = AccessArg::Auto)]
    pub access: AccessArg,
    /// A staff sign-in unused this many seconds is over.
    #[arg(long, env = "OUTCOMES_SIGN_IN_IDLE_SECS", default_value_t = 12 * 3600, value_parser = clap::value_parser!(u64).range(60..=31_536_000))]
    pub sign_in_idle_secs: u64,
    /// Behind an SSO proxy: the request header that names the signed-in user (e.g. `X-Forwarded-User`).
    /// Counted only from an address in --trusted-proxy.
    #[arg(long, env = "OUTCOMES_TRUSTED_USER_HEADER", requires = "trusted_proxy")]
    pub trusted_user_header: Option<axum::http::HeaderName>,
    /// Also serve `GET /metrics` on this address, a listener of its own (docs/api.md "Metrics"). Its
    /// reads are open only when it and --addr are loopback addresses under open reads; elsewhere it
    /// needs a host or staff token.
    #[arg(long, env = "OUTCOMES_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Addresses of the SSO proxy (CIDR, e.g. `10.0.0.5/32`; repeat or separate with commas).
    #[arg(
        long,
        env = "OUTCOMES_TRUSTED_PROXY",
        value_delimiter = ',',
        requires = "trusted_user_header"
    )]
    pub trusted_proxy: Vec<ipnet::IpNet>,
    /// Webhook delivery (docs/api.md "Webhooks").
    #[command(flatten)]
    pub webhooks: crate::webhooks::WorkerOptions,
    /// OpenTelemetry export (docs/operations.md "OpenTelemetry").
    #[command(flatten)]
    pub otel: crate::otel::OtelOptions,
    /// Where an end user quotes an operation id: an `https:` or `mailto:` URL, shown as a link beside
    /// every id to quote on the pages (docs/design.md "What the person sees"). Without it the pages say
    /// "the support of the service you used".
    #[arg(long, env = "OUTCOMES_SUPPORT_CONTACT", value_parser = support_contact)]
    pub support_contact: Option<url::Url>,
    /// What the support link reads (1 to 80 characters, no control characters); default: the URL's
    /// address (the host of an `https:` URL, the address of a `mailto:` one).
    #[arg(long, env = "OUTCOMES_SUPPORT_LABEL", requires = "support_contact", value_parser = support_label)]
    pub support_label: Option<String>,
}

/// `--support-contact`: an absolute `https:` URL with a host, or a `mailto:` URL with an address; no
/// user name or password (the pages show the URL).
fn support_contact(s: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(s).map_err(|e| format!("not a URL ({e})"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("a URL with a user name or password would show it on every page".into());
    }
    match url.scheme() {
        "https" if url.host_str().is_some() => Ok(url),
        "mailto" if !url.path().is_empty() => Ok(url),
        "https" | "mailto" => Err("names no address".into()),
        other => Err(format!("an https: or mailto: URL is needed, not {other}:")),
    }
}

/// `--support-label`: 1 to 80 characters, none of them a control character.
fn support_label(s: &str) -> Result<String, String> {
    let n = s.chars().count();
    if s.trim().is_empty() || n > 80 {
        return Err("1 to 80 characters are needed".into());
    }
    if s.chars().any(char::is_control) {
        return Err("a control character is not allowed".into());
    }
    Ok(s.to_owned())
}

/// `--access`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AccessArg {
    Auto,
    SignedIn,
    Open,
}

impl ServeArgs {
    /// The access mode this server runs in, or why it refuses to start.
    pub fn access_mode(&self) -> Result<crate::access::AccessMode, String> {
        use crate::access::AccessMode;
        let loopback = self.addr.ip().is_loopback();
        match self.access {
            AccessArg::SignedIn => Ok(AccessMode::SignedIn),
            AccessArg::Auto if loopback => Ok(AccessMode::Open),
            AccessArg::Auto => Ok(AccessMode::SignedIn),
            AccessArg::Open if loopback => Ok(AccessMode::Open),
            AccessArg::Open => Err(format!(
                "refusing --access open on non-loopback address {}: anyone who reaches it would read \
                 every session; use --access signed-in (the default there)",
                self.addr
            )),
        }
    }

    /// The trusted SSO proxy, when both flags are given.
    pub fn trusted_proxy(&self) -> Option<crate::access::TrustedProxy> {
        let header = self.trusted_user_header.clone()?;
        (!self.trusted_proxy.is_empty()).then(|| crate::access::TrustedProxy {
            header,
            proxies: self.trusted_proxy.clone(),
        })
    }

    /// The database to open.
    pub fn database(&self) -> String {
        crate::database::database_or_default(self.database.as_deref(), &self.data_dir)
    }

    pub fn session_ttl(&self) -> Duration {
        Duration::from_secs(self.session_ttl_secs)
    }

    pub fn write_wait(&self) -> Duration {
        Duration::from_millis(self.write_wait_ms)
    }

    /// The support contact the pages show (`--support-contact`, `--support-label`), with its label:
    /// the one given, else the URL's address (an `https:` URL's host, a `mailto:` URL's address, its
    /// query left out).
    pub fn support(&self) -> Option<app::support::SupportContact> {
        let url = self.support_contact.as_ref()?;
        let label = self
            .support_label
            .clone()
            .unwrap_or_else(|| match url.scheme() {
                "mailto" => percent_encoding::percent_decode_str(url.path())
                    .decode_utf8_lossy()
                    .into_owned(),
                _ => url.host_str().unwrap_or_default().to_owned(),
            });
        Some(app::support::SupportContact {
            url: url.to_string(),
            label,
        })
    }
}

/// Everything a running server is made of; `router` is what tests drive in process.
pub struct Built {
    pub state: AppState,
    pub ledger: Ledger,
    pub router: Router,
}

/// Opens the ledger and builds the full router (API + pages) for `args`.
pub async fn build(
    args: &ServeArgs,
    host_token: String,
) -> Result<Built, Box<dyn std::error::Error>> {
    build_with_clock(args, host_token, Arc::new(ledger::SystemClock)).await
}

/// [`build`] with the ledger on `clock` (tests drive a manual clock: exact ages in `GET /metrics`).
pub async fn build_with_clock(
    args: &ServeArgs,
    host_token: String,
    clock: Arc<dyn ledger::Clock>,
) -> Result<Built, Box<dyn std::error::Error>> {
    let hub = Hub::with_limits(StreamLimits {
        total: args.max_live_streams,
        per_session: args.max_live_streams_per_session,
    });
    let ledger = Ledger::open(
        &args.database(),
        LedgerOptions {
            session_ttl: args.session_ttl(),
            adapter: hub.clone(),
            write_wait: args.write_wait(),
            in_flight_deadline: Duration::from_secs(args.in_flight_deadline_secs),
            clock,
            ..LedgerOptions::default()
        },
    )
    .await?;
    let access = crate::access::AccessConfig {
        mode: args.access_mode()?,
        store: ledger.access(),
        sign_in_idle: Duration::from_secs(args.sign_in_idle_secs),
        trusted: args.trusted_proxy(),
    };
    let metrics = Arc::new(crate::metrics::Metrics::new());
    let state = AppState {
        engine: ledger.engine(),
        sessions: ledger.sessions(),
        webhooks: ledger.webhooks(),
        otel: ledger.otel(),
        hub,
        host_token: Arc::from(host_token),
        shutdown: CancellationToken::new(),
        failures: Arc::new(crate::auth::Failures::counting(
            metrics.failed_credentials(),
        )),
        access: Arc::new(access),
        password_checks: crate::http::sign_in::password_checks(),
        metrics,
    };
    let api = crate::http::api_router().with_state(state.clone());
    // The bundle's names, read once (crate::assets); the standalone pages link the same stylesheet.
    let bundle = crate::assets::find(&args.site_root);
    app::standalone::set_stylesheet(&bundle.css);
    let pages = crate::ssr::pages(
        crate::ssr::leptos_options(&args.site_root, args.addr),
        bundle,
        api.clone(),
        app::support::Support(args.support()),
    );
    let request_id = HeaderName::from_static("x-request-id");
    let router = api
        .merge(pages)
        // A handler that panics answers 500 JSON (and is logged); its connection stays usable.
        .layer(CatchPanicLayer::custom(crate::http::guards::panic_response))
        // Who is calling, and may they (docs/access.md); before any handler or page rendering.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::http::gate::authenticate,
        ))
        // Counts the answers 503 `busy` (refusals of `authenticate` included) for `GET /metrics`; gives
        // the host routes' timing layer its recorder.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::metrics::count_answers,
        ))
        .layer(axum::Extension(state.metrics.clone()))

        .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(
            args.body_timeout_secs,
        )))
        .layer(axum::middleware::from_fn(crate::http::guards::refuse_unroutable))
        .layer(
            // SSE must not be compressed: a compressed stream is buffered until it ends. The bundle under
            // /pkg/ was compressed when it was built (crate::assets): not again here.
            CompressionLayer::new().compress_when(
                SizeAbove::default()
                    .and(NotForContentType::new("text/event-stream"))
                    .and(NotBuildTimeCompressed),
            ),
        )
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<_>| {
                    let id = req
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-");
                    tracing::info_span!("request", method = %req.method(), path = %crate::http::guards::logged_path(req.uri().path()), request_id = %id)
                })
                .on_response(|res: &axum::http::Response<_>, latency: Duration, _span: &Span| {
                    tracing::info!(status = res.status().as_u16(), latency_ms = latency.as_millis() as u64, "response");
                })
                // A 5xx status is already in the `response` line (and a real fault was logged where it
                // happened); only a failure without a response is logged here.
                .on_failure(|class: ServerErrorsFailureClass, latency: Duration, _span: &Span| {
                    if let ServerErrorsFailureClass::Error(error) = class {
                        tracing::error!(%error, latency_ms = latency.as_millis() as u64, "response failed");
                    }
                }),
        )
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        // A client's request id is kept only when it is a plain token (it goes into every log line).
        .layer(axum::middleware::from_fn(crate::http::guards::plain_request_id))
        // Outermost: every answer of the router, refusals included, carries the security headers.
        .layer(axum::middleware::from_fn(
            crate::http::security::security_headers,
        ));
    Ok(Built {
        state,
        ledger,
        router,
    })
}

/// Serves until SIGTERM or SIGINT: stops accepting, ends live streams, lets requests finish, closes the
/// ledger. Refuses a non-loopback address unless the host token was given explicitly (docs/operations.md
/// "The binary"). In order: [`refuse_to_start`] (nothing opened yet), [`lock_checked_database`],
/// [`host_token`], [`build`], the listener, the demo when asked and the ledger is empty,
/// [`start_background_tasks`], the `--metrics-addr` listener ([`serve_metrics_listener`]), then the
/// main listener until the signal, and the ledger closed (its WAL checkpointed).
pub async fn serve(args: ServeArgs) -> Result<(), Box<dyn std::error::Error>> {
    let start = refuse_to_start(&args)?;
    let _database_lock = lock_checked_database(&args).await?;
    let token = host_token(&args)?;
    let built = build(&args, token.clone()).await?;
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let local = listener.local_addr()?;
    say_listening(&start, local);

    if args.demo_when_empty
        && built
            .state
            .sessions
            .sessions(&ledger::SessionsQuery::default())
            .await?
            .0
            .sessions
            .is_empty()
    {
        let demo = DemoArgs {
            host: host::host_client::HostArgs {
                server: url::Url::parse(&format!("http://{local}/"))?,
                host_token: Some(token),
                data_dir: args.data_dir.clone(),
            },
            pace: 1.0,
        };
        tokio::spawn(async move {
            if let Err(e) = host::demo::run(demo).await {
                tracing::warn!(error = %e, "demo failed");
            }
        });
    }

    let shutdown = built.state.shutdown.clone();
    start_background_tasks(&args, &built, start.otlp, local, &shutdown).await?;
    let limits = conn_limits(&args);
    serve_metrics_listener(&args, &built.state, limits, &shutdown).await?;
    crate::conn::serve(listener, built.router, limits, async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        shutdown.cancel();
    })
    .await;
    built
        .ledger
        .close_whole()
        .await
        .map_err(|e| format!("the ledger closed without checkpointing its WAL ({e}): keep the -wal file beside the database"))?;
    tracing::info!("ledger closed");
    Ok(())
}

/// What [`refuse_to_start`] found the server may start with.
struct StartChecks {
    /// The access mode (`--access`; docs/access.md "Access mode").
    mode: crate::access::AccessMode,
    /// The OTLP traces endpoint (`…/v1/traces`) and its exporter, when the export is on
    /// (docs/operations.md "OpenTelemetry").
    otlp: Option<(String, crate::otel::Exporter)>,
    /// Where the ledger is (for the log, its password redacted).
    location: ledger::store::Location,
}

/// The checks made before anything is opened, each refusal an error naming its cause, in this order: a
/// non-loopback `--addr` without `--host-token` / `OUTCOMES_HOST_TOKEN`; `--access open` on a
/// non-loopback address ([`ServeArgs::access_mode`]); a bad `--otlp-*` or `OTEL_EXPORTER_OTLP_*` setting
/// ([`crate::otel::traces_endpoint`], [`crate::otel::exporter`]); a database that is neither a SQLite path
/// nor a URL; Postgres without an explicit host token (every instance must take the same one;
/// docs/operations.md "Several instances on Postgres").
fn refuse_to_start(args: &ServeArgs) -> Result<StartChecks, Box<dyn std::error::Error>> {
    if !args.addr.ip().is_loopback()
        && args
            .host_token
            .as_deref()
            .is_none_or(|t| t.trim().is_empty())
    {
        return Err(format!(
            "refusing to listen on non-loopback address {} without --host-token / OUTCOMES_HOST_TOKEN",
            args.addr
        )
        .into());
    }
    let mode = args.access_mode()?;
    // The OTLP endpoint is checked before anything is opened: a bad `OTEL_EXPORTER_OTLP_*` refuses to start.
    let otlp = match crate::otel::traces_endpoint(&args.otel, |k| std::env::var(k).ok())? {
        Some(endpoint) => {
            let exporter = crate::otel::exporter(&endpoint)?;
            Some((endpoint, exporter))
        }
        None => None,
    };
    let location = ledger::store::Location::parse(&args.database())?;
    if matches!(location, ledger::store::Location::Postgres(_))
        && args
            .host_token
            .as_deref()
            .is_none_or(|t| t.trim().is_empty())
    {
        return Err(format!(
            "with Postgres ({}) every instance must take the same host token: give it with \
             --host-token / OUTCOMES_HOST_TOKEN",
            location.redacted()
        )
        .into());
    }
    Ok(StartChecks {
        mode,
        otlp,
        location,
    })
}

/// The database checked and locked before the ledger opens it (docs/operations.md "The binary"): another
/// application's file, or not a database, is refused before anything is created or changed (unless
/// another `serve` holds it: that one may be creating it, and the refusal says so); a second `serve` on
/// the same SQLite file is refused (the advisory lock `<database>.lock`, held while the answer lives;
/// `None` for Postgres); then the integrity check, unless `--skip-integrity-check`.
async fn lock_checked_database(
    args: &ServeArgs,
) -> Result<Option<crate::database::DatabaseLock>, Box<dyn std::error::Error>> {
    if let Err(e) = ledger::store::check_database(&args.database()).await {
        return Err(match crate::database::held_elsewhere(&args.database()) {
            Some(serving) => serving.into(),
            None => e.into(),
        });
    }
    let lock = crate::database::lock_database(&args.database())?;
    if !args.skip_integrity_check {
        ledger::store::check_integrity(&args.database()).await?;
    }
    Ok(lock)
}

/// The host token ([`resolve_host_token`]: `--host-token`, else `<data dir>/host-token`, else a new one
/// written there with mode 0600; docs/operations.md "The binary"), its source logged, never the token.
fn host_token(args: &ServeArgs) -> Result<String, Box<dyn std::error::Error>> {
    let (token, source) = resolve_host_token(args.host_token.as_deref(), &args.data_dir)?;
    match source {
        TokenSource::Configured => {
            tracing::info!("host token: from --host-token / OUTCOMES_HOST_TOKEN")
        }
        TokenSource::File => {
            tracing::info!(path = %args.data_dir.join("host-token").display(), "host token: read from file")
        }
        TokenSource::Generated => {
            tracing::info!(path = %args.data_dir.join("host-token").display(), "host token: generated (mode 0600)")
        }
    }
    Ok(token)
}

/// Says the server is up: the ledger's location (redacted) and the access mode in the log,
/// `outcomes: serving on http://<addr>/` on stdout (the tests that start the binary read that line).
fn say_listening(start: &StartChecks, local: SocketAddr) {
    tracing::info!(database = %start.location.redacted(), "ledger open");
    println!("outcomes: serving on http://{local}/");
    match start.mode {
        crate::access::AccessMode::Open => tracing::info!(
            "access: open reads (loopback); pages say \"open access\"; --access signed-in closes them"
        ),
        crate::access::AccessMode::SignedIn => tracing::info!(
            "access: every read needs a credential (staff sign-in or token, viewer link, host token)"
        ),
    }
}

/// Starts what runs beside the requests until `shutdown`: the request histogram's upkeep (recorded
/// samples moved into their buckets every 5 s, scraped or not), the webhook delivery worker
/// (docs/api.md "Webhooks"), the OpenTelemetry export ([`start_otel_export`]), the retention sweep
/// ([`crate::purge::sweep_periodically`]) and the deadline sweep ([`crate::deadlines::start`]). Errors:
/// the export's.
async fn start_background_tasks(
    args: &ServeArgs,
    built: &Built,
    otlp: Option<(String, crate::otel::Exporter)>,
    local: SocketAddr,
    shutdown: &CancellationToken,
) -> Result<(), Box<dyn std::error::Error>> {
    let metrics = built.state.metrics.clone();
    let upkeep_stop = shutdown.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = upkeep_stop.cancelled() => break,
                _ = tick.tick() => metrics.upkeep(),
            }
        }
    });
    tokio::spawn(crate::webhooks::run_worker(
        built.ledger.webhooks(),
        args.webhooks.clone(),
        built.state.metrics.clone(),
        shutdown.clone(),
    ));
    start_otel_export(args, built, otlp, local, shutdown).await?;
    tokio::spawn(crate::purge::sweep_periodically(
        built.state.clone(),
        args.purge.clone(),
        shutdown.clone(),
    ));
    crate::deadlines::start(built.state.clone(), shutdown.clone()).await;
    Ok(())
}

/// The OpenTelemetry export (docs/operations.md "OpenTelemetry"): its trigger switched on or off to
/// follow this instance (`otlp`: the traces endpoint and its exporter, from [`refuse_to_start`]); when on,
/// the export worker, its spans linking to `--otlp-dashboard-url` (default `http://<local>`). Errors:
/// the ledger's, switching the trigger or reading the ledger's id.
async fn start_otel_export(
    args: &ServeArgs,
    built: &Built,
    otlp: Option<(String, crate::otel::Exporter)>,
    local: SocketAddr,
    shutdown: &CancellationToken,
) -> Result<(), Box<dyn std::error::Error>> {
    // The export's trigger follows this instance's configuration (on Postgres, give every instance the
    // same OTLP settings: the last one started decides).
    built.ledger.otel().set_enabled(otlp.is_some()).await?;
    if let Some((endpoint, exporter)) = otlp {
        let ctx = crate::otel::SpanContextInputs {
            ledger_id: built.state.sessions.ledger_id().await?,
            dashboard_url: args
                .otel
                .otlp_dashboard_url
                .as_ref()
                .map(|u| u.as_str().trim_end_matches('/').to_string())
                .unwrap_or_else(|| format!("http://{local}")),
            include_references: args.otel.otlp_include_references,
        };
        tracing::info!(endpoint = %endpoint, "OpenTelemetry export: on");
        tokio::spawn(crate::otel::run_worker(
            built.ledger.otel(),
            exporter,
            std::sync::Arc::new(ctx),
            args.otel.clone(),
            built.state.metrics.clone(),
            shutdown.clone(),
        ));
    }
    Ok(())
}

/// The connection limits of both listeners (`--max-connections`, fitted to the open-file limit;
/// `--header-timeout-secs`, `--send-timeout-secs`; the rest [`ConnLimits::default`]), logged.
fn conn_limits(args: &ServeArgs) -> ConnLimits {
    let limits = ConnLimits {
        header_timeout: Duration::from_secs(args.header_timeout_secs),
        send_timeout: Duration::from_secs(args.send_timeout_secs),
        max_connections: crate::conn::fit_to_file_limit(
            usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        ),
        ..ConnLimits::default()
    };
    tracing::info!(
        max_connections = limits.max_connections,
        header_timeout_secs = args.header_timeout_secs,
        max_live_streams = args.max_live_streams,
        "connection limits"
    );
    limits
}

/// With `--metrics-addr`, serves [`listener_router`] there until `shutdown` (docs/operations.md "Metrics
/// and alerts"), saying `outcomes: metrics on http://<addr>/metrics` on stdout; an address it cannot
/// listen on is an error naming it. Without the flag, nothing.
async fn serve_metrics_listener(
    args: &ServeArgs,
    state: &AppState,
    limits: ConnLimits,
    shutdown: &CancellationToken,
) -> Result<(), Box<dyn std::error::Error>> {
    let Some(metrics_addr) = args.metrics_addr else {
        return Ok(());
    };
    let metrics_listener = tokio::net::TcpListener::bind(metrics_addr)
        .await
        .map_err(|e| format!("cannot listen on --metrics-addr {metrics_addr}: {e}"))?;
    let local = metrics_listener.local_addr()?;
    println!("outcomes: metrics on http://{local}/metrics");
    let router = listener_router(state, local);
    let stop = shutdown.clone();
    tokio::spawn(crate::conn::serve(
        metrics_listener,
        router,
        limits,
        async move { stop.cancelled().await },
    ));
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// The router of the separate metrics listener (`outcomes serve --metrics-addr`): `GET /metrics` alone
/// (any other path a JSON 404), under the same access rules and security headers as the main listener,
/// except that reads are open there only when both listeners are on loopback addresses: a metrics
/// listener on any other address needs a host or staff credential whatever `--access` says.
pub fn listener_router(state: &AppState, addr: std::net::SocketAddr) -> axum::Router {
    let mut access = (*state.access).clone();
    if !addr.ip().is_loopback() {
        access.mode = crate::access::AccessMode::SignedIn;
    }
    let state = AppState {
        access: Arc::new(access),
        ..state.clone()
    };
    axum::Router::new()
        .route(
            crate::access::METRICS_PATH,
            axum::routing::get(crate::metrics::metrics),
        )
        .fallback(|| async { crate::error::ApiError::no_route() })
        .with_state(state.clone())
        // As on the main listener: a handler that panics answers 500 JSON, logged.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            crate::http::guards::panic_response,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::http::gate::authenticate,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state,
            crate::metrics::count_answers,
        ))
        .layer(axum::middleware::from_fn(
            crate::http::security::security_headers,
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(extra: &[&str]) -> Result<ServeArgs, String> {
        Args::try_parse_from(["outcomes"].iter().chain(extra))
            .map(|a| a.serve)
            .map_err(|e| e.to_string())
    }

    /// `--support-contact` takes an `https:` URL with a host or a `mailto:` URL; its label defaults to
    /// the address; `--support-label` is 1 to 80 characters without controls (docs/design.md "What the
    /// person sees").
    #[test]
    fn a_support_contact_is_an_https_or_mailto_url_with_a_label() {
        let https = parse(&["--support-contact", "https://help.example.com/agents?x=1"]).unwrap();
        let c = https.support().unwrap();
        assert_eq!(c.url, "https://help.example.com/agents?x=1");
        assert_eq!(c.label, "help.example.com");
        let mail = parse(&[
            "--support-contact",
            "mailto:help@example.com?subject=Operation",
        ])
        .unwrap();
        assert_eq!(mail.support().unwrap().label, "help@example.com");
        let named = parse(&[
            "--support-contact",
            "mailto:help@example.com",
            "--support-label",
            "Example support",
        ])
        .unwrap();
        assert_eq!(named.support().unwrap().label, "Example support");
        assert_eq!(parse(&[]).unwrap().support(), None);
        for bad in [
            "http://help.example.com/",
            "javascript:alert(1)",
            "help.example.com",
            "https://a:b@help.example.com/",
            "mailto:",
            "data:text/html,x",
        ] {
            let e = parse(&["--support-contact", bad]).unwrap_err();
            assert!(e.contains("--support-contact"), "{bad}: {e}");
        }
        for bad in ["", "   ", "a\u{7}b", &"x".repeat(81)] {
            let e = parse(&[
                "--support-contact",
                "https://h.example/",
                "--support-label",
                bad,
            ])
            .unwrap_err();
            assert!(e.contains("--support-label"), "{bad:?}: {e}");
        }
        // A label needs a contact.
        assert!(parse(&["--support-label", "Help"]).is_err());
    }
}
