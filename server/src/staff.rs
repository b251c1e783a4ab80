//! Staff accounts (docs/access.md "Staff accounts"): password hashing with Argon2id, random secrets, and
//! the `outcomes staff add|remove|list|token` commands, which open the ledger database directly (a running
//! server sees what they change at once: nothing is cached).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use base64::Engine as _;
use clap::{Args, Subcommand};
use ledger::{Ledger, LedgerOptions};
use rand::RngCore;

/// `outcomes staff`.
#[derive(Debug, Clone, Args)]
pub struct StaffArgs {
    #[command(subcommand)]
    pub command: StaffCommand,
    /// The ledger: a SQLite file path or `sqlite:` URL, or a `postgres://` URL (docs/ledger.md
    /// "Backends"). Default: `<data dir>/ledger.sqlite`.
    #[arg(long, env = "OUTCOMES_DATABASE", global = true)]
    pub database: Option<String>,
    /// Directory of the default database.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data", global = true)]
    pub data_dir: PathBuf,
}

impl StaffArgs {
    /// The database to open (as `serve` would).
    pub fn database(&self) -> String {
        crate::database::database_or_default(self.database.as_deref(), &self.data_dir)
    }
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

/// The Argon2id PHC string of `password` (argon2 crate defaults: m = 19 MiB, t = 2, p = 1; random salt).
pub fn hash_password(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Ok(Argon2::default()
        .hash_password(password.as_bytes(), &salt)?
        .to_string())
}

/// Argon2 working memories kept for reuse, and the most password checks that run at once (sign-in waits for
/// one: `http::sign_in::password_checks`). Each holds `m` KiB (19 MiB for the defaults), allocated once
/// and reused, so failed sign-ins cannot grow the process (docs/access.md "Staff accounts").
pub const HASHING_MEMORIES: usize = 2;

/// The most Argon2 memory a stored hash may ask for, in 1 KiB blocks (64 MiB); a hash asking for more is
/// not checked (it never matches).
const MAX_BLOCKS: usize = 64 * 1024;

/// Working memories not in use (at most [`HASHING_MEMORIES`]).
static MEMORIES: Mutex<Vec<Vec<Block>>> = Mutex::new(Vec::new());

/// Whether `password` matches the stored PHC string `hash`. With `hash` `None` (no such account) a dummy
/// hash is checked, so an unknown name costs the same time as a wrong password. CPU-heavy (tens of ms):
/// call it from a blocking task, at most [`HASHING_MEMORIES`] at once (more run, each with memory of its
/// own that is then given back).
pub fn verify_password(password: &str, hash: Option<&str>) -> bool {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let dummy = DUMMY.get_or_init(|| hash_password("not a password").unwrap_or_default());
    let stored = hash.unwrap_or(dummy);
    let Ok(parsed) = PasswordHash::new(stored) else {
        return false;
    };
    let mut memory = MEMORIES
        .lock()
        .ok()
        .and_then(|mut m| m.pop())
        .unwrap_or_default();
    let ok = verify_with_memory(password.as_bytes(), &parsed, &mut memory);
    if let Ok(mut kept) = MEMORIES.lock() {
        if kept.len() < HASHING_MEMORIES {
            kept.push(memory);
        }
    }
    ok && hash.is_some()
}

/// Argon2 of `password` with the algorithm, version, parameters and salt of `parsed`, in `memory` (grown
/// to the parameters' size when smaller), compared in constant time with its hash.
fn verify_with_memory(password: &[u8], parsed: &PasswordHash<'_>, memory: &mut Vec<Block>) -> bool {
    let (Some(expected), Some(salt)) = (parsed.hash, parsed.salt) else {
        return false;
    };
    let Ok(params) = Params::try_from(parsed) else {
        return false;
    };
    let Ok(algorithm) = Algorithm::try_from(parsed.algorithm) else {
        return false;
    };
    let Ok(version) = parsed
        .version
        .map_or(Ok(Version::default()), Version::try_from)
    else {
        return false;
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let blocks = params.block_count();
    if blocks > MAX_BLOCKS {
        return false;
    }
    if memory.len() < blocks {
        memory.resize(blocks, Block::default());
    }
    let mut out = vec![0u8; expected.len()];
    Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(password, salt, &mut out, &mut memory[..blocks])
        .is_ok()
        && argon2::password_hash::Output::new(&out).is_ok_and(|o| o == expected)
}

/// `n` random bytes, base64url without padding.
fn random_b64(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A generated password: 18 random bytes as 24 base64url characters.
pub fn new_password() -> String {
    random_b64(18)
}

/// A staff API token: `ost_` then 32 random bytes as 43 base64url characters.
pub fn new_staff_token() -> String {
    format!("ost_{}", random_b64(32))
}

/// A sign-in id (the sign-in cookie's value): 32 random bytes, base64url.
pub fn new_sign_in_id() -> String {
    random_b64(32)
}

/// Writes `text` to stdout and flushes it; an error (stdout closed: `… | head -0`) is answered as a
/// sentence instead of the panic of `println!`.
fn show(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to stdout ({e})"))
}

/// Runs `outcomes staff …`. The secret a command makes is printed alone on the last line of stdout;
/// errors go to stderr (by the caller) with nothing on stdout.
pub async fn run(args: StaffArgs) -> Result<(), Box<dyn std::error::Error>> {
    let ledger = Ledger::open(&args.database(), LedgerOptions::default()).await?;
    let access = ledger.access();
    let result = match &args.command {
        StaffCommand::Add { name } => {
            ledger::access::check_staff_name(name)?;
            let password = new_password();
            let hash = hash_password(&password).map_err(|e| format!("cannot hash: {e}"))?;
            if !access.add_staff(name, &hash).await? {
                Err(format!("a staff account named {name} already exists").into())
            } else if let Err(e) = show(&format!(
                "staff account {name} added; its password (shown this once):\n{password}\n"
            )) {
                // Nobody saw the password: the account would be one nobody can use.
                access.remove_staff(name).await?;
                Err(format!(
                    "{e}: the password could not be shown, so the account {name} was not kept"
                )
                .into())
            } else {
                Ok(())
            }
        }
        StaffCommand::Remove { name } => {
            if access.remove_staff(name).await? {
                show(&format!(
                    "staff account {name} removed, with its API tokens and sign-ins\n"
                ))
                .map_err(Into::into)
            } else {
                Err(format!("no staff account named {name}").into())
            }
        }
        StaffCommand::List => {
            let accounts = access.list_staff().await?;
            if accounts.is_empty() {
                show("no staff accounts; add one with `outcomes staff add NAME`\n")?;
            }
            for a in accounts {
                show(&format!(
                    "{}\tadded {}\t{} API token(s)\t{} sign-in(s)\n",
                    a.name,
                    ledger::store::format_time(a.created_at),
                    a.tokens,
                    a.sign_ins
                ))?;
            }
            Ok(())
        }
        StaffCommand::Token { name } => {
            let token = new_staff_token();
            if access.add_staff_token(name, &token).await? {
                match show(&format!(
                    "API token for {name} (shown this once; use it as Authorization: Bearer):\n{token}\n"
                )) {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        access.remove_staff_token(&token).await?;
                        Err(format!("{e}: the token could not be shown, so it was not kept").into())
                    }
                }
            } else {
                Err(format!("no staff account named {name}").into())
            }
        }
    };
    ledger.close().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_stored_as_argon2id_and_verified() {
        let hash = hash_password("correct horse").unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(verify_password("correct horse", Some(&hash)));
        assert!(!verify_password("Correct horse", Some(&hash)));
        assert!(!verify_password("correct horse", None));
        assert!(!verify_password("x", Some("not a phc string")));
    }

    #[test]
    fn secrets_have_their_documented_shapes() {
        let p = new_password();
        assert_eq!(p.len(), 24);
        let t = new_staff_token();
        assert!(t.starts_with("ost_") && t.len() == 47, "{t}");
        assert_ne!(new_sign_in_id(), new_sign_in_id());
    }
}
