//! `outcomes backup --to FILE`: a consistent copy of a SQLite ledger, taken while a server may be running
//! (docs/ledger.md "Backups"). A Postgres ledger is backed up with `pg_dump`; the command says so.

use std::path::PathBuf;

use clap::Args;

/// `outcomes backup`.
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// The new file to write the copy to; an existing file is never overwritten.
    #[arg(long)]
    pub to: PathBuf,
    /// The ledger, as `serve` takes it: a SQLite file path or `sqlite:` URL. Default:
    /// `<data dir>/ledger.sqlite`.
    #[arg(long, env = "OUTCOMES_DATABASE")]
    pub database: Option<String>,
    /// Directory of the default database.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
}

/// Writes the copy (SQLite's `VACUUM INTO`, one read transaction: a running server keeps serving and
/// writing) and prints `outcomes: backed up <database> to <file> (<bytes> bytes)`. The copy is one whole
/// database file, mode 0600, that opens alone.
pub async fn run(args: BackupArgs) -> Result<(), Box<dyn std::error::Error>> {
    let database = crate::database::database_or_default(args.database.as_deref(), &args.data_dir);
    let bytes = ledger::store::backup(&database, &args.to)
        .await
        .map_err(|e| match e {
            ledger::LedgerError::Invalid { message, .. } => message,
            other => other.to_string(),
        })?;
    println!(
        "outcomes: backed up {database} to {} ({bytes} bytes)",
        args.to.display()
    );
    Ok(())
}
