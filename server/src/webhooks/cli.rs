//! `outcomes webhooks add|list|remove` (docs/api.md "Webhooks"): endpoints in the ledger's database
//! (`--database`, `--data-dir`, as `serve`'s). `add` checks the URL against the destination rule
//! ([`super::destination`]) before the database is opened and prints the endpoint's signing secret
//! ([`super::signing::new_secret`]) alone on the last line; `list` never shows secrets. Exit codes: 0
//! done, 2 refused input (nothing changed), 1 any other failure.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use ledger::{Ledger, LedgerOptions};

use super::destination::{check_destination, check_url_form};
use super::signing::new_secret;

/// `outcomes webhooks`.
#[derive(Debug, Clone, Args)]
pub struct WebhooksArgs {
    #[command(subcommand)]
    pub command: WebhooksCommand,
    /// The ledger: a SQLite file path or `sqlite:` URL, or a `postgres://` URL (docs/ledger.md
    /// "Backends"). Default: `<data dir>/ledger.sqlite`.
    #[arg(long, env = "OUTCOMES_DATABASE", global = true)]
    pub database: Option<String>,
    /// Directory of the default database.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data", global = true)]
    pub data_dir: PathBuf,
}

/// `outcomes webhooks …`.
#[derive(Debug, Clone, Subcommand)]
pub enum WebhooksCommand {
    /// Add an endpoint; prints its signing secret (`whsec_…`) alone on the last line.
    Add {
        /// Where deliveries are POSTed: an `http://` or `https://` URL without credentials.
        url: String,
        /// The events it takes, comma-separated.
        #[arg(
            long,
            default_value = "outcome.unknown,outcome.unknown_stale,outcome.resolved"
        )]
        events: String,
        /// Allow a private, loopback or link-local destination (`serve` needs the flag too).
        #[arg(long, env = "OUTCOMES_WEBHOOK_ALLOW_PRIVATE")]
        webhook_allow_private: bool,
    },
    /// Remove an endpoint with its pending deliveries.
    Remove { id: i64 },
    /// List endpoints (never their secrets).
    List,
}

/// Runs `outcomes webhooks …`: 0 done, 2 refused input (nothing changed), 1 any other failure.
pub async fn main(args: WebhooksArgs) -> ExitCode {
    // Input is checked before the database is opened.
    let checked = match &args.command {
        WebhooksCommand::Add {
            url,
            events,
            webhook_allow_private,
        } => {
            let checked = async {
                let parsed = check_url_form(url)?;
                check_destination(&parsed, *webhook_allow_private).await?;
                ledger::webhooks::check_events(events).map_err(|e| e.to_string())
            };
            match checked.await {
                Ok(events) => Some(events),
                Err(e) => {
                    eprintln!("outcomes: webhooks add refused: {e}");
                    return ExitCode::from(2);
                }
            }
        }
        _ => None,
    };
    match run(args, checked).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outcomes: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What `webhooks list` says of an endpoint after its creation time: nothing while it delivers;
/// `\tfailing since <time> (<n> failed attempts)`; `\tdisabled <time> (410)`, or
/// `\tdisabled <time> (failing since <time>)` when 24 h of failures disabled it (docs/api.md
/// "Webhooks").
pub fn endpoint_state(e: &ledger::webhooks::WebhookEndpoint) -> String {
    let t = ledger::store::format_time;
    match (e.disabled_at, e.disabled_reason.as_deref(), e.failing_since) {
        (Some(at), Some("failing"), Some(since)) => {
            format!("\tdisabled {} (failing since {})", t(at), t(since))
        }
        (Some(at), _, _) => format!("\tdisabled {} (410)", t(at)),
        (None, _, Some(since)) => format!(
            "\tfailing since {} ({} failed attempts)",
            t(since),
            e.consecutive_failures
        ),
        (None, _, None) => String::new(),
    }
}

async fn run(args: WebhooksArgs, events: Option<String>) -> Result<(), Box<dyn std::error::Error>> {
    let database = crate::database::database_or_default(args.database.as_deref(), &args.data_dir);
    let ledger = Ledger::open(&database, LedgerOptions::default()).await?;
    let webhooks = ledger.webhooks();
    let result: Result<(), Box<dyn std::error::Error>> = match &args.command {
        WebhooksCommand::Add { url, .. } => {
            let secret = new_secret();
            let events = events.unwrap_or_default();
            let id = webhooks.add_endpoint(url, &events, &secret).await?;
            println!(
                "webhook endpoint {id} added ({events}); its signing secret (shown this once):"
            );
            println!("{secret}");
            Ok(())
        }
        WebhooksCommand::Remove { id } => {
            if webhooks.remove_endpoint(*id).await? {
                println!("webhook endpoint {id} removed, with its pending deliveries");
                Ok(())
            } else {
                Err(format!("no webhook endpoint {id}").into())
            }
        }
        WebhooksCommand::List => {
            let endpoints = webhooks.list_endpoints().await?;
            if endpoints.is_empty() {
                println!("no webhook endpoints; add one with `outcomes webhooks add URL`");
            }
            for e in endpoints {
                println!(
                    "{}\t{}\t{}\tadded {}{}",
                    e.id,
                    e.url,
                    e.events,
                    ledger::store::format_time(e.created_at),
                    endpoint_state(&e)
                );
            }
            Ok(())
        }
    };
    ledger.close().await;
    result
}
