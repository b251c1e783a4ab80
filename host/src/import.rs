//! `outcomes import`: reads agent transcripts (OpenAI chat format, a JSON array or JSON Lines of
//! conversations), maps each with [`importer::Importer`] (the same code an embedding host uses) and
//! sends the operations to a running server through `POST /api/host/batch`, at most
//! [`MAX_BATCH_OPERATIONS`] per request, in order.
//!
//! A malformed line, conversation, message or tool call is reported on stderr with its position
//! (`file:line`, or `file: conversation i` for a JSON array, then `message m`, `tool call c`) and skipped;
//! the rest is imported. The summary (stdout) counts operations created, already present (a re-import:
//! refused redeliveries and identical metadata) and failed. The exit code is non-zero when an operation
//! failed or input was skipped.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use importer::{
    parse_transcripts, ConversationPlan, ImportConfig, ImportTally, Importer, OpResult, Position,
};
use indicatif::{ProgressBar, ProgressStyle};
use ledger::wire::{EntryState, ErrorDetail};
use serde::Deserialize;
use serde_json::json;

use crate::host_client::{HostArgs, HostClient};
use ledger::command::MAX_BATCH_OPERATIONS;

/// `outcomes import`. See docs/import.md "Import agent transcripts" and the `importer` crate for the
/// mapping, the config file and the classification of results.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The server and the host token.
    #[command(flatten)]
    pub host: HostArgs,
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

/// Reads the import config: a TOML file in the shape of [`ImportConfig`] (unknown keys refused).
pub fn read_config(path: &Path) -> Result<ImportConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[derive(Deserialize)]
struct BatchReply {
    results: Vec<BatchItem>,
}

#[derive(Deserialize)]
struct BatchItem {
    status: u16,
    entry: Option<EntryState>,
    error: Option<ErrorDetail>,
}

impl From<BatchItem> for OpResult {
    fn from(item: BatchItem) -> Self {
        match (item.entry, item.error) {
            (Some(entry), _) => OpResult::Applied(entry),
            (
                None,
                Some(ErrorDetail {
                    current: Some(current),
                    ..
                }),
            ) if item.status == 409 => OpResult::Refused(current),
            (None, Some(e)) => {
                OpResult::Failed(format!("{} {}: {}", item.status, e.code, e.message))
            }
            (None, None) => OpResult::Failed(format!("{} without an entry or error", item.status)),
        }
    }
}

fn located(file: &Path, position: Position) -> String {
    match position {
        Position::Line(n) => format!("{}:{n}", file.display()),
        Position::Index(i) => format!("{}: conversation {i}", file.display()),
    }
}

/// Reads and maps every file. Returns the plans and each skipped piece of input with its position.
fn plan(importer: &Importer, files: &[PathBuf]) -> (Vec<ConversationPlan>, Vec<String>) {
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                skipped.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        for (position, parsed) in parse_transcripts(&text) {
            let at = located(file, position);
            match parsed.and_then(|v| importer.map_conversation(&v)) {
                Ok(plan) => {
                    skipped.extend(plan.problems.iter().map(|p| format!("{at}: {p}")));
                    plans.push(plan);
                }
                Err(e) => skipped.push(format!("{at}: {e}")),
            }
        }
    }
    (plans, skipped)
}

fn progress(len: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} operations")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// Conversations mapped (those skipped whole are in `skipped`).
    pub conversations: usize,
    /// Write calls found, i.e. mutations sent.
    pub mutations: usize,
    /// Skipped input, each with its position (`file:line: message m: ...`).
    pub skipped: Vec<String>,
    /// Operations created, already present and failed.
    pub tally: ImportTally,
}

/// Maps the files and sends the operations (see the module docs). Errors: an unusable config, no host
/// token, the server unreachable or refusing a batch as a whole (e.g. 401), an unreadable reply. Skipped
/// input and failed operations are in the report, not errors.
pub async fn import(args: &ImportArgs) -> Result<ImportReport, Box<dyn std::error::Error>> {
    let config = match &args.config {
        Some(path) => read_config(path)?,
        None => ImportConfig::default(),
    };
    let importer = Importer::new(&args.session_prefix, args.write_tools.clone(), config)?;
    let client = HostClient::new(
        args.host.server.clone(),
        args.host.host_token.as_deref(),
        &args.host.data_dir,
    )?;
    let (plans, skipped) = plan(&importer, &args.files);
    let ops: Vec<ledger::Command> = plans
        .iter()
        .flat_map(ConversationPlan::operations)
        .collect();

    let endpoint = client.url(&["api", "host", "batch"])?;
    let bar = progress(ops.len());
    let mut tally = ImportTally::default();
    for chunk in ops.chunks(MAX_BATCH_OPERATIONS) {
        let body = json!({"operations": chunk});
        let response = client
            .request(reqwest::Method::POST, endpoint.clone())
            .json(&body)
            .send()
            .await
            .map_err(|e| format!("{endpoint}: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            bar.abandon();
            return Err(format!("{endpoint}: {status} {text}").into());
        }
        let reply: BatchReply = response
            .json()
            .await
            .map_err(|e| format!("{endpoint}: unreadable reply: {e}"))?;
        if reply.results.len() != chunk.len() {
            bar.abandon();
            return Err(format!(
                "{endpoint}: {} results for {} operations",
                reply.results.len(),
                chunk.len()
            )
            .into());
        }
        for (op, item) in chunk.iter().zip(reply.results) {
            tally.record(op, item.into());
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(ImportReport {
        conversations: plans.len(),
        mutations: plans.iter().map(|p| p.mutations.len()).sum(),
        skipped,
        tally,
    })
}

/// Runs `outcomes import`: prints skipped input and failed operations on stderr and the summary on
/// stdout. Fails (non-zero exit) on the errors of [`import`], and when an operation failed or input was
/// skipped (after importing everything else).
pub async fn run(args: ImportArgs) -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let report = import(&args).await?;
    for s in &report.skipped {
        eprintln!("{s}; skipped");
    }
    let tally = &report.tally;
    for f in &tally.failed {
        eprintln!("failed: {f}");
    }
    println!(
        "imported {} conversation(s), {} write call(s), in {:.2} s: {} operation(s) created, {} already present, {} failed; {} input problem(s) skipped",
        report.conversations,
        report.mutations,
        started.elapsed().as_secs_f64(),
        tally.created,
        tally.already_present,
        tally.failed.len(),
        report.skipped.len(),
    );
    if !tally.failed.is_empty() || !report.skipped.is_empty() {
        return Err(format!(
            "{} operation(s) failed, {} input problem(s) skipped (see above)",
            tally.failed.len(),
            report.skipped.len()
        )
        .into());
    }
    Ok(())
}
