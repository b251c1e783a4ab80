//! `outcomes project`: ledger entries in, published records out (the projection of `ledger::projection`).

use std::io::{BufRead, Write};

/// `outcomes project`: a line that is not a ledger entry is reported on stderr with its line number and
/// skipped (stdout holds only records); the exit code is non-zero when any line was bad.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
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
