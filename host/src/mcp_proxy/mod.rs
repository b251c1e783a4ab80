//! `outcomes mcp-proxy [options] -- <MCP server command> [args…]` (docs/mcp-proxy.md): an MCP stdio
//! proxy between any MCP client and any MCP server that records each protected `tools/call` in the
//! ledger through the host API. The client starts the proxy instead of the server; the proxy starts the
//! server as its child and forwards every JSON-RPC line unchanged and in order both ways. With `--url`
//! instead of a command, the server is a remote one spoken to over MCP Streamable HTTP
//! (docs/mcp-proxy.md "Remote servers (Streamable HTTP)"; [`remote`]). With `--listen ADDR` the client
//! side is MCP Streamable HTTP too: the proxy serves `http://ADDR/mcp`, one upstream session (and one
//! ledger session, unless `--session-key`) per client session
//! (docs/mcp-proxy.md "Clients by URL (--listen)").
//!
//! One concern per module: [`message`] reads messages, [`tools`] says which calls are protected,
//! [`turns`] assigns logical turns, [`outcome`] decides what an answer means, [`ledger`] writes the
//! entries, and `proxy` runs the two pipelines and the child.

pub mod ledger;
pub mod lines;
pub mod message;
pub mod outcome;
mod proxy;
mod read;
pub mod remote;
pub mod tools;
pub mod turns;

use std::time::Duration;

use crate::host_client::{HostArgs, HostClient};
use outcome::{IsErrorAs, MetadataMap};

/// What the proxy does with a protected call the ledger cannot record (down or refusing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnLedgerDown {
    /// Do not forward it: the client gets a JSON-RPC error saying the tool was NOT called (fail closed).
    Refuse,
    /// Forward it anyway; nothing is recorded for that call.
    Forward,
}

/// `outcomes mcp-proxy` arguments (docs/mcp-proxy.md "Options").
#[derive(Debug, Clone, clap::Args)]
pub struct McpProxyArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// The ledger session the calls are recorded in. Default: a new key per run, `mcp-<12 hex digits>`.
    #[arg(long, env = "OUTCOMES_MCP_SESSION_KEY")]
    pub session_key: Option<String>,
    /// The server name in recorded tool names (`mcp__<name>__<tool>`). Default: the `serverInfo.name`
    /// of the server's `initialize` answer (before it: the command's file name).
    #[arg(long, env = "OUTCOMES_MCP_NAME")]
    pub name: Option<String>,
    /// Tools always recorded, by the server's tool name (comma-separated), even when annotated read-only.
    #[arg(long, env = "OUTCOMES_MCP_PROTECT", value_delimiter = ',')]
    pub protect: Vec<String>,
    /// Tools never recorded, by the server's tool name (comma-separated).
    #[arg(long, env = "OUTCOMES_MCP_SKIP", value_delimiter = ',')]
    pub skip: Vec<String>,
    /// A call more than this many seconds after the previous call starts a new logical turn (unless the
    /// client names the turn in `params._meta["outcomes/logical_turn_id"]`).
    #[arg(long, env = "OUTCOMES_MCP_TURN_GAP_SECS", default_value_t = 30)]
    pub turn_gap_secs: u64,
    /// Seconds a protected call may go unanswered before the proxy records `outcome_unknown` (reason
    /// `execution_timeout`) and answers the client itself. 0: no proxy timeout.
    #[arg(long, env = "OUTCOMES_MCP_CALL_TIMEOUT_SECS", default_value_t = 0)]
    pub call_timeout_secs: u64,
    /// The deadline of each protected call's intent, in seconds (3 to 604800): the proxy extends it every
    /// third of it while the call waits for its answer, so a proxy that dies (kill -9, a closed laptop)
    /// leaves writes the ledger settles `outcome_unknown` itself within about this long (docs/api.md
    /// "Deadlines").
    #[arg(long, env = "OUTCOMES_MCP_DEADLINE_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(3..=604_800))]
    pub deadline_secs: u64,
    /// When the ledger cannot record a protected call: `refuse` (the call is not forwarded) or
    /// `forward` (it is, unrecorded).
    #[arg(
        long,
        env = "OUTCOMES_MCP_ON_LEDGER_DOWN",
        value_enum,
        default_value = "refuse"
    )]
    pub on_ledger_down: OnLedgerDown,
    /// How a result with `isError: true` is recorded: `failed` or `unknown` (`outcome_unknown`).
    #[arg(
        long,
        env = "OUTCOMES_MCP_IS_ERROR_AS",
        value_enum,
        default_value = "failed"
    )]
    pub is_error_as: IsErrorAs,
    /// Host metadata from a completed call's `structuredContent`: `id=/ptr,url=/ptr,title=/ptr` (JSON
    /// pointers; each key optional). Nothing from tool output is published otherwise.
    #[arg(long, env = "OUTCOMES_MCP_METADATA")]
    pub metadata: Option<String>,
    /// Mint a viewer link of the session for the end user and print it to stderr.
    #[arg(long, env = "OUTCOMES_MCP_VIEWER_LINK")]
    pub viewer_link: bool,
    /// The longest line (bytes, its newline not counted) the proxy reads whole, 1024 to 1 GiB. A longer
    /// line from the server is forwarded as a stream, unread; a longer line from the client is not
    /// forwarded (docs/mcp-proxy.md "Long lines").
    #[arg(
        long,
        env = "OUTCOMES_MCP_MAX_LINE_BYTES",
        default_value_t = DEFAULT_MAX_LINE_BYTES,
        value_parser = clap::value_parser!(u32).range(1024..=MAX_MAX_LINE_BYTES)
    )]
    pub max_line_bytes: u32,
    /// The MCP server to start, after `--`: its command and arguments (or `--url`).
    #[arg(
        last = true,
        required_unless_present = "url",
        conflicts_with = "url",
        num_args = 1..,
        value_name = "SERVER COMMAND"
    )]
    pub command: Vec<String>,
    /// A remote MCP server's Streamable HTTP endpoint (`https://…/mcp`), instead of a command
    /// (docs/mcp-proxy.md "Remote servers (Streamable HTTP)").
    #[arg(long, env = "OUTCOMES_MCP_URL", value_parser = remote::parse_url)]
    pub url: Option<url::Url>,
    /// A header sent on every request to `--url`, `'Name: value'` (static credentials such as
    /// `Authorization: Bearer …`); repeatable.
    #[arg(long = "header", requires = "url", value_parser = remote::parse_header, value_name = "NAME: VALUE")]
    pub headers: Vec<remote::StaticHeader>,
    /// Serve MCP Streamable HTTP to clients at `http://ADDR/mcp` instead of stdio, one upstream session
    /// per client session (docs/mcp-proxy.md "Clients by URL (--listen)"). A loopback address unless
    /// `--listen-token` is given. Port 0: any free port (printed to stderr).
    #[arg(long, env = "OUTCOMES_MCP_LISTEN", value_name = "ADDR:PORT")]
    pub listen: Option<std::net::SocketAddr>,
    /// The token every `--listen` request must carry in `X-Outcomes-Proxy-Token` (401 otherwise); needed
    /// to listen on an address that is not loopback. Never sent upstream.
    #[arg(
        long,
        env = "OUTCOMES_MCP_LISTEN_TOKEN",
        requires = "listen",
        hide_env_values = true
    )]
    pub listen_token: Option<String>,
}

/// `--max-line-bytes` by default: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: u32 = 16 * 1024 * 1024;
/// `--max-line-bytes` at most: 1 GiB.
const MAX_MAX_LINE_BYTES: i64 = 1 << 30;

/// The proxy's own settings, checked.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// This run's random id (12 hex digits): in default session keys, turn and operation ids.
    pub run: String,
    pub fixed_name: Option<String>,
    /// The server name until `initialize` names it: the command's file name (`--url`: its host).
    pub fallback_name: String,
    pub call_timeout: Option<Duration>,
    pub turn_gap: Duration,
    pub on_ledger_down: OnLedgerDown,
    pub is_error_as: IsErrorAs,
    pub metadata: MetadataMap,
    pub viewer_link: bool,
    /// `--max-line-bytes`.
    pub max_line_bytes: usize,
}

/// Runs the proxy until the child exits (or the proxy is told to stop) and answers the exit code to end
/// the process with: the child's (128 + the signal when a signal ended it). Errors, as sentences, before
/// anything is forwarded: bad options, no host token, the server command not startable.
pub async fn run(args: McpProxyArgs) -> Result<i32, String> {
    let tools = tools::ToolSet::new(&args.protect, &args.skip)?;
    let metadata = match &args.metadata {
        Some(spec) => MetadataMap::parse(spec)?,
        None => MetadataMap::default(),
    };
    let run = new_run();
    if let Some(k) = &args.session_key {
        check_identifier("--session-key", k)?;
    }
    let fixed_session = args.session_key.clone();
    let session = fixed_session
        .clone()
        .unwrap_or_else(|| format!("mcp-{run}"));
    let listen = args.listen.map(|addr| proxy::Listen {
        addr,
        token: args.listen_token.clone(),
    });
    if let Some(l) = &listen {
        proxy::check_listen(l)?;
    }
    if let Some(n) = &args.name {
        check_identifier("--name", n)?;
    }
    let client = HostClient::new(
        args.host.server.clone(),
        args.host.host_token.as_deref(),
        &args.host.data_dir,
    )?;
    let page = client
        .url(&["sessions", &session])
        .map_err(|e| format!("--server {}: {e}", args.host.server))?;
    let upstream = upstream_of(args.url, args.headers, args.command)?;
    let fallback_name = match &upstream {
        proxy::Upstream::Command(command) => command.first().map(std::path::Path::new),
        proxy::Upstream::Url { .. } => None,
    }
    .and_then(|p| p.file_stem())
    .and_then(|s| s.to_str())
    .map(str::to_owned)
    .or_else(|| match &upstream {
        proxy::Upstream::Url { url, .. } => url.host_str().map(str::to_owned),
        proxy::Upstream::Command(_) => None,
    })
    .filter(|s| !s.is_empty())
    .unwrap_or_else(|| "server".to_owned());
    let config = Config {
        run,
        fixed_name: args.name,
        fallback_name,
        call_timeout: (args.call_timeout_secs > 0)
            .then(|| Duration::from_secs(args.call_timeout_secs)),
        turn_gap: Duration::from_secs(args.turn_gap_secs),
        on_ledger_down: args.on_ledger_down,
        is_error_as: args.is_error_as,
        metadata,
        viewer_link: args.viewer_link,
        max_line_bytes: args.max_line_bytes as usize,
    };
    if let Some(listen) = listen {
        // One ledger session per client session (unless --session-key), each with its own run id.
        let deadline = args.deadline_secs;
        let max_body = config.max_line_bytes;
        let new_session: proxy::NewSession = std::sync::Arc::new(move || {
            let mut cfg = config.clone();
            cfg.run = new_run();
            let key = fixed_session
                .clone()
                .unwrap_or_else(|| format!("mcp-{}", cfg.run));
            let recorder = ledger::Recorder::new(client.clone(), key.clone(), deadline);
            (cfg, tools.clone(), recorder, key)
        });
        return proxy::run_listen(listen, upstream, new_session, max_body).await;
    }
    eprintln!("outcomes mcp-proxy: session {session}: {page}");
    let recorder = ledger::Recorder::new(client, session, args.deadline_secs);
    proxy::run(config, tools, recorder, upstream).await
}

/// A run's random id: 12 hex digits.
fn new_run() -> String {
    format!("{:012x}", rand::random::<u64>() >> 16)
}

/// The server: `--url` with its `--header`s, or the command after `--`. A `--header` with a command is
/// an error (clap's `requires` does not see it: the command conflicts with `--url`).
fn upstream_of(
    url: Option<url::Url>,
    headers: Vec<remote::StaticHeader>,
    command: Vec<String>,
) -> Result<proxy::Upstream, String> {
    match url {
        Some(url) => Ok(proxy::Upstream::Url { url, headers }),
        None if !headers.is_empty() => Err(
            "--header is sent to a remote server given by --url; a server command gets no headers"
                .into(),
        ),
        None => Ok(proxy::Upstream::Command(command)),
    }
}

/// An identifier the ledger would refuse (docs/api.md "Host write API", its limits), refused at start
/// instead of on every call: empty, over 256 bytes, a control character, `.` or `..`.
fn check_identifier(flag: &str, v: &str) -> Result<(), String> {
    if v.is_empty() || v.len() > 256 || v.chars().any(char::is_control) || v == "." || v == ".." {
        return Err(format!(
            "{flag} {v:?}: an identifier is 1 to 256 bytes without control characters, not . or .."
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        c: Cmd,
    }
    #[derive(clap::Subcommand)]
    enum Cmd {
        McpProxy(McpProxyArgs),
    }

    fn parse(args: &[&str]) -> Result<McpProxyArgs, String> {
        let mut all = vec!["outcomes", "mcp-proxy"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all)
            .map(|c| match c.c {
                Cmd::McpProxy(a) => a,
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_command_line_of_the_issue_parses() {
        let a = parse(&[
            "--server",
            "http://127.0.0.1:3300",
            "--session-key",
            "s-1",
            "--name",
            "fs",
            "--protect",
            "a,b",
            "--skip",
            "c",
            "--turn-gap-secs",
            "5",
            "--call-timeout-secs",
            "2",
            "--on-ledger-down",
            "forward",
            "--is-error-as",
            "unknown",
            "--metadata",
            "id=/id,url=/html_url,title=/title",
            "--viewer-link",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "--flag",
            "/tmp/x",
        ])
        .expect("parse");
        assert_eq!(a.host.server.as_str(), "http://127.0.0.1:3300/");
        assert_eq!(a.session_key.as_deref(), Some("s-1"));
        assert_eq!(a.protect, ["a", "b"]);
        assert_eq!(a.skip, ["c"]);
        assert_eq!((a.turn_gap_secs, a.call_timeout_secs), (5, 2));
        assert_eq!(a.on_ledger_down, OnLedgerDown::Forward);
        assert_eq!(a.is_error_as, IsErrorAs::Unknown);
        assert!(a.viewer_link);
        assert_eq!(a.max_line_bytes, DEFAULT_MAX_LINE_BYTES);
        // Everything after `--` is the server's, its own flags included.
        assert_eq!(
            a.command,
            [
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "--flag",
                "/tmp/x"
            ]
        );
        let d = parse(&["--", "srv"]).expect("defaults");
        assert_eq!((d.turn_gap_secs, d.call_timeout_secs), (30, 0));
        assert_eq!(d.on_ledger_down, OnLedgerDown::Refuse);
        assert_eq!(d.is_error_as, IsErrorAs::Failed);
        assert!(!d.viewer_link && d.protect.is_empty() && d.metadata.is_none());
        // No server command is an error, as is an unknown choice.
        assert!(parse(&[]).is_err());
        assert!(parse(&["--on-ledger-down", "maybe", "--", "srv"]).is_err());
        assert_eq!(
            parse(&["--max-line-bytes", "1024", "--", "srv"])
                .expect("smallest")
                .max_line_bytes,
            1024
        );
        for bad in ["1023", "1073741825", "-1", "16MiB"] {
            assert!(
                parse(&["--max-line-bytes", bad, "--", "srv"]).is_err(),
                "{bad}"
            );
        }
    }

    /// docs/mcp-proxy.md "Remote servers (Streamable HTTP)": `--url` instead of a command, `--header`
    /// repeatable and only with `--url`, bad values clap errors naming the option.
    #[test]
    fn a_remote_server_is_given_by_url_with_headers() {
        let a = parse(&[
            "--url",
            "https://mcp.example.com/mcp",
            "--header",
            "Authorization: Bearer t0k",
            "--header",
            "X-Api-Key: k",
        ])
        .expect("parse");
        assert_eq!(
            a.url.as_ref().map(url::Url::as_str),
            Some("https://mcp.example.com/mcp")
        );
        assert!(a.command.is_empty());
        let names: Vec<&str> = a.headers.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["authorization", "x-api-key"]);
        assert_eq!(a.headers[0].value, "Bearer t0k");
        // Neither a command nor a URL, both, a header without a URL: errors.
        assert!(parse(&[]).is_err());
        assert!(parse(&["--url", "http://127.0.0.1:1/mcp", "--", "srv"]).is_err());
        let a = parse(&["--header", "X-A: 1", "--", "srv"]).expect("clap lets it through");
        assert!(upstream_of(a.url, a.headers, a.command).is_err());
        assert!(matches!(
            upstream_of(None, Vec::new(), vec!["srv".into()]),
            Ok(proxy::Upstream::Command(_))
        ));
        for (args, says) in [
            (&["--url", "ftp://x/mcp"][..], "--url"),
            (
                &["--url", "http://h/mcp", "--header", "no colon"][..],
                "--header",
            ),
            (
                &["--url", "http://h/mcp", "--header", "X-A: a\u{7f}"][..],
                "--header",
            ),
            (
                &["--url", "http://h/mcp", "--header", "Accept: */*"][..],
                "set by the proxy",
            ),
        ] {
            let e = parse(args).expect_err("refused");
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }

    #[test]
    fn identifiers_the_ledger_would_refuse_are_refused_at_start() {
        assert_eq!(check_identifier("--session-key", "chat-42"), Ok(()));
        for bad in ["", ".", "..", "a\nb", &"x".repeat(257)] {
            assert!(check_identifier("--session-key", bad).is_err(), "{bad:?}");
        }
    }
}
