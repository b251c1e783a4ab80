//! The command line (clap). Every flag can also come from an `OUTCOMES_*` environment variable.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// The outcome ledger dashboard: what happened to each protected write of an agent (mutation_outcome/v1).
#[derive(Debug, Parser)]
#[command(name = "outcomes", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the ledger's APIs and the dashboard.
    Serve(ServeArgs),
    /// Play demo agent sessions through the host write API of a running server.
    Demo(DemoArgs),
    /// Import agent transcripts (OpenAI chat format) into a running server through the host API's batch.
    Import(ImportArgs),
    /// Manage staff accounts (investigators, support) in the ledger database: add, remove, list, token.
    Staff(StaffArgs),
    /// Read ledger entries (contract example format), one JSON object per line on stdin, and print each
    /// published record (or `null`) as one line of JSON.
    Project,
}

/// `outcomes serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on. A non-loopback address requires an explicit host token.
    #[arg(long, env = "OUTCOMES_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,
    /// The ledger: a SQLite file path or `sqlite:` URL. Default: `<data dir>/ledger.sqlite`.
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
    /// Play the demo against this server when the ledger is empty.
    #[arg(long, env = "OUTCOMES_DEMO_WHEN_EMPTY")]
    pub demo_when_empty: bool,
    /// How long a write waits for the ledger's write lock, in milliseconds; past it: 503 `busy`.
    #[arg(long, env = "OUTCOMES_WRITE_WAIT_MS", default_value_t = 10_000)]
    pub write_wait_ms: u64,
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
    /// Addresses of the SSO proxy (CIDR, e.g. `10.0.0.5/32`; repeat or separate with commas).
    #[arg(
        long,
        env = "OUTCOMES_TRUSTED_PROXY",
        value_delimiter = ',',
        requires = "trusted_user_header"
    )]
    pub trusted_proxy: Vec<ipnet::IpNet>,
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
        database_or_default(self.database.as_deref(), &self.data_dir)
    }

    pub fn session_ttl(&self) -> Duration {
        Duration::from_secs(self.session_ttl_secs)
    }

    pub fn write_wait(&self) -> Duration {
        Duration::from_millis(self.write_wait_ms)
    }
}

/// `outcomes staff`.
#[derive(Debug, Clone, Args)]
pub struct StaffArgs {
    #[command(subcommand)]
    pub command: StaffCommand,
    /// The ledger: a SQLite file path or `sqlite:` URL. Default: `<data dir>/ledger.sqlite`.
    #[arg(long, env = "OUTCOMES_DATABASE", global = true)]
    pub database: Option<String>,
    /// Directory of the default database.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data", global = true)]
    pub data_dir: PathBuf,
}

impl StaffArgs {
    /// The database to open (as `serve` would).
    pub fn database(&self) -> String {
        database_or_default(self.database.as_deref(), &self.data_dir)
    }
}

/// `database` when given, else `<data_dir>/ledger.sqlite`.
fn database_or_default(database: Option<&str>, data_dir: &std::path::Path) -> String {
    database.map_or_else(
        || {
            data_dir
                .join("ledger.sqlite")
                .to_string_lossy()
                .into_owned()
        },
        str::to_owned,
    )
}

/// `outcomes staff …`.
#[derive(Debug, Clone, Subcommand)]
pub enum StaffCommand {
    /// Add a staff account; prints its generated password alone on the last line.
    Add { name: String },
    /// Remove a staff account with its API tokens and sign-ins.
    Remove { name: String },
    /// List staff accounts.
    List,
    /// Make an API token for a staff account (any number may exist); prints it alone on the last line.
    Token { name: String },
}

/// `outcomes demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// The running server.
    #[arg(long, env = "OUTCOMES_SERVER", default_value = "http://127.0.0.1:3000")]
    pub server: url::Url,
    /// Host token. Default: read from `<data dir>/host-token`.
    #[arg(long, env = "OUTCOMES_HOST_TOKEN", hide_env_values = true)]
    pub host_token: Option<String>,
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Multiplies every pause between steps (0 plays at once).
    #[arg(long, env = "OUTCOMES_DEMO_PACE", default_value_t = 1.0)]
    pub pace: f64,
}

/// `outcomes import`. See the README section "Import agent transcripts" and `ledger::import` for the
/// mapping, the config file and the classification of results.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The running server.
    #[arg(long, env = "OUTCOMES_SERVER", default_value = "http://127.0.0.1:3000")]
    pub server: url::Url,
    /// Host token. Default: read from `<data dir>/host-token`.
    #[arg(long, env = "OUTCOMES_HOST_TOKEN", hide_env_values = true)]
    pub host_token: Option<String>,
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Put before each conversation's id to make its session key.
    #[arg(long, default_value = "import-")]
    pub session_prefix: String,
    /// Names of the write tools, comma-separated (added to `write_tools` of the config).
    #[arg(long, value_delimiter = ',')]
    pub write_tools: Vec<String>,
    /// Config file (TOML): write tools, classification patterns, metadata rules.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Transcript files: a JSON array or JSON Lines of conversations.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> ExitCode {
    crate::serve::init_tracing();
    let result = match cli.command {
        Command::Serve(args) => crate::serve::serve(args).await,
        Command::Demo(args) => crate::demo::run(args).await,
        Command::Import(args) => crate::import::run(args).await,
        Command::Staff(args) => crate::staff::run(args).await,
        Command::Project => project_stdin(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outcomes: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `outcomes project`: a line that is not a ledger entry is reported on stderr with its line number and
/// skipped (stdout holds only records); the exit code is non-zero when any line was bad.
fn project_stdin() -> Result<(), Box<dyn std::error::Error>> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut bad = 0usize;
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<ledger::projection::LedgerEntry>(&line) {
            Ok(entry) => {
                let record = ledger::projection::project(&entry);
                writeln!(out, "{}", serde_json::to_string(&record)?)?;
            }
            Err(e) => {
                bad += 1;
                eprintln!("line {}: not a ledger entry: {e}", n + 1);
            }
        }
    }
    if bad > 0 {
        return Err(format!("{bad} line(s) were not ledger entries").into());
    }
    Ok(())
}
