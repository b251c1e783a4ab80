//! The ledger's database file as `serve` and the maintenance commands name it: its default path, and the
//! lock that keeps a second `serve` off a SQLite file.

/// `database` when given, else `<data_dir>/ledger.sqlite`.
pub fn database_or_default(database: Option<&str>, data_dir: &std::path::Path) -> String {
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

/// Held while `serve` runs: the advisory locks that keep a second `serve` off the same SQLite file.
pub struct DatabaseLock {
    _lock_file: std::fs::File,
    _database: std::fs::File,
}

/// Takes the advisory lock `<database>.lock` (created mode 0600) that keeps a second `serve` off the same
/// SQLite file, with the path resolved first (a symlink names the file it points to), and the same lock on
/// the database file itself (a hard link is the same file). Both are `flock` locks, which SQLite's own
/// `fcntl` locks do not see: other tools (`sqlite3`, backups) still open and use the database. `None` for
/// an in-memory database. Keep the returned value until the ledger is closed.
pub fn lock_database(database: &str) -> Result<Option<DatabaseLock>, Box<dyn std::error::Error>> {
    let Some(file) = ledger::store::database_file(database) else {
        return Ok(None);
    };
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let db = options
        .open(&file)
        .map_err(|e| format!("cannot open the ledger {}: {e}", file.display()))?;
    let file = std::fs::canonicalize(&file)?;
    let mut path = file.as_os_str().to_owned();
    path.push(".lock");
    let path = std::path::PathBuf::from(path);
    let lock = options
        .open(&path)
        .map_err(|e| format!("cannot open the lock file {}: {e}", path.display()))?;
    let refused = || -> Box<dyn std::error::Error> { serving_elsewhere(&file, &path).into() };
    for f in [&lock, &db] {
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(refused()),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(format!("cannot lock {}: {e}", path.display()).into())
            }
        }
    }
    Ok(Some(DatabaseLock {
        _lock_file: lock,
        _database: db,
    }))
}

/// What `serve` says when another `outcomes serve` holds the ledger `file` (its lock file `lock`).
fn serving_elsewhere(file: &std::path::Path, lock: &std::path::Path) -> String {
    format!(
        "another `outcomes serve` is already serving the ledger {} (it holds {}); stop it, or give this \
         server its own --database / --data-dir",
        file.display(),
        lock.display()
    )
}

/// The refusal of [`lock_database`] when another process holds the lock of `database` right now, found
/// without creating or changing anything (`None` when the file, its lock file or the lock is absent, or
/// for an in-memory database). `serve` asks when the file's check refused it: a ledger that another
/// `serve` is creating (its first migration under way) looks half-made to that check, and the lock says
/// why better than "another application's migration record".
pub fn held_elsewhere(database: &str) -> Option<String> {
    let file = std::fs::canonicalize(ledger::store::database_file(database)?).ok()?;
    let mut path = file.as_os_str().to_owned();
    path.push(".lock");
    let path = std::path::PathBuf::from(path);
    let lock = std::fs::File::open(&path).ok()?;
    match lock.try_lock_shared() {
        Err(std::fs::TryLockError::WouldBlock) => Some(serving_elsewhere(&file, &path)),
        // Free (released when `lock` is dropped here), or it cannot be told.
        Ok(()) | Err(std::fs::TryLockError::Error(_)) => None,
    }
}
