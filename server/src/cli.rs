//! The command line (clap): the top-level [`Cli`] with its [`Command`]s, and [`run`], which dispatches to
//! each command's module: this crate's for the server and the ledger database (`serve::ServeArgs`,
//! `staff::StaffArgs`, `webhooks::WebhooksArgs`, …), the `host` crate's for the clients of a running
//! server (`host::demo::DemoArgs`, `host::import::ImportArgs`, `host::mcp_proxy::McpProxyArgs`). Every flag
//! can also come from an `OUTCOMES_*` environment variable.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use host::demo::DemoArgs;
use host::import::ImportArgs;

use crate::serve::ServeArgs;
use crate::staff::StaffArgs;

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
    /// Manage webhook endpoints in the ledger database (docs/api.md "Webhooks"): add, list, remove.
    Webhooks(crate::webhooks::WebhooksArgs),
    /// Delete the sessions due for the retention purge now, a mass purge the server held included (with
    /// `--confirm`; without it, list them).
    Purge(crate::purge::PurgeArgs),
    /// Write a consistent copy of a SQLite ledger to a new file, also while a server runs.
    Backup(crate::backup::BackupArgs),
    /// Proxy an MCP server over stdio and record each protected tool call in the ledger (docs/mcp-proxy.md):
    /// `outcomes mcp-proxy [options] -- <server command> [args…]`, or a remote one over Streamable HTTP:
    /// `outcomes mcp-proxy [options] --url https://…/mcp [--header 'Name: value']…`.
    McpProxy(host::mcp_proxy::McpProxyArgs),
    /// Read ledger entries (contract example format), one JSON object per line on stdin, and print each
    /// published record (or `null`) as one line of JSON.
    Project,
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> ExitCode {
    crate::telemetry::init_tracing();
    let result = match cli.command {
        Command::Serve(args) => crate::serve::serve(args).await,
        Command::Demo(args) => host::demo::run(args).await,
        Command::Import(args) => host::import::run(args).await,
        Command::Staff(args) => crate::staff::run(args).await,
        // Refused input exits 2 (docs/api.md "Webhooks").
        Command::Webhooks(args) => return crate::webhooks::main(args).await,
        Command::Purge(args) => crate::purge::run(args).await,
        Command::Project => crate::project::run(),
        Command::Backup(args) => crate::backup::run(args).await,
        Command::McpProxy(args) => match host::mcp_proxy::run(args).await {
            // The child's exit code. Exiting here: the runtime's blocking read of stdin never returns.
            Ok(code) => std::process::exit(code),
            Err(e) => Err(format!("mcp-proxy: {e}").into()),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outcomes: {e}");
            ExitCode::FAILURE
        }
    }
}
