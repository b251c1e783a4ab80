//! `outcomes`: serve the ledger and its dashboard, play the demo, project ledger entries.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    server::cli::run(server::cli::Cli::parse()).await
}
