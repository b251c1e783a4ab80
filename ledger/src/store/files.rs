//! The SQLite ledger's file (docs/ledger.md "Files", "Backups"): whether an existing file is one the ledger
//! may open (never another application's), its mode (0600), and consistent copies of it.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::SqliteConnectOptions;

use super::location::{database_file, redact_url, Location};
use crate::error::LedgerError;

/// The SQLite ledger's migrations (`ledger/migrations`), embedded once: the record a file's
/// `_sqlx_migrations` must match to count as a ledger ([`check_file`]), and run when a ledger opens
/// (`open::open_sqlite`). Defined here, with the check that reads them, so the opening imports this
/// module and never the other way round.
pub(super) static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// What an existing SQLite file is to the ledger ([`check_file`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// Missing: the ledger creates it (mode 0600).
    New,
    /// An empty file or a SQLite database without tables, made by someone else: the ledger creates its
    /// tables in it and leaves its mode alone.
    Empty,
    /// A ledger (the ledger's tables and migration record, nothing else).
    Ledger,
}

impl Found {
    /// Whether the ledger sets the file's mode (0600): only on files it creates or already holds.
    pub(super) fn restrict(self) -> bool {
        matches!(self, Found::New | Found::Ledger)
    }
}

/// Checks that the SQLite ledger `database` names (a path or a `sqlite:` URL; Postgres and in-memory
/// databases pass) is a file the ledger may open, without changing it: missing or empty, a SQLite
/// database without tables, or a ledger. Refused with [`LedgerError::Invalid`] on `database`, naming the
/// file: a file holding any table that is not the ledger's (another application's), a file with
/// tables of the ledger's names but no migration record of the ledger, and a file that is not a SQLite
/// database (docs/ledger.md "Files"). `outcomes serve` calls it before it creates anything.
pub async fn check_database(database: &str) -> Result<(), LedgerError> {
    match (Location::parse(database)?, database_file(database)) {
        (Location::Sqlite(_), Some(file)) => check_file(&file).await.map(|_| ()),
        _ => Ok(()),
    }
}

/// Checks that the SQLite ledger `database` names is not damaged, without changing it: SQLite's
/// `PRAGMA quick_check` (every page of every table and index read once, about 7 ms a MB on this project's
/// test machine) through a read-only connection, as [`check_file`] opens it. A missing or empty file, a
/// database without tables and Postgres pass. A damaged file is refused with [`LedgerError::Invalid`] on
/// `database`, naming the file and the check's first findings; it is left as it was (docs/ledger.md
/// "Files"). `outcomes serve` calls it at start, after [`check_database`] and the file's lock, unless
/// `--skip-integrity-check`: a ledger with a damaged page would otherwise start and answer 500 on every
/// read of that page while `/healthz` says 200.
pub async fn check_integrity(database: &str) -> Result<(), LedgerError> {
    use sqlx::Connection;
    let Some(file) = database_file(database)
        .filter(|_| matches!(Location::parse(database), Ok(Location::Sqlite(_))))
    else {
        return Ok(());
    };
    if std::fs::metadata(&file)
        .map(|m| m.len() == 0)
        .unwrap_or(true)
    {
        return Ok(());
    }
    let shown = file.display();
    let options = read_only(&file);
    let found: Result<Vec<String>, sqlx::Error> = async {
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
        let found = sqlx::query_scalar("PRAGMA quick_check(5)")
            .fetch_all(&mut conn)
            .await;
        let _ = conn.close().await;
        found
    }
    .await;
    let findings = match found {
        Ok(rows) if rows.len() == 1 && rows[0] == "ok" => return Ok(()),
        Ok(rows) => rows.join("; ").replace('\n', "; "),
        Err(e) => e.to_string(),
    };
    Err(LedgerError::invalid(
        "database",
        format!(
            "{shown} is damaged (SQLite's quick_check: {findings}); it was left as it was: restore the \
             ledger from a backup (`outcomes backup`, docs/ledger.md \"Backups\"), or start with \
             --skip-integrity-check to serve what can still be read"
        ),
    ))
}

/// A read-only connection to the SQLite file `file` that writes nothing: immutable when it has no `-wal`
/// (so not even a `-shm` file is made); with a `-wal`, SQLite needs its `-shm` to read it.
fn read_only(file: &Path) -> SqliteConnectOptions {
    let mut wal = file.as_os_str().to_owned();
    wal.push("-wal");
    SqliteConnectOptions::new()
        .filename(file)
        .read_only(true)
        .immutable(!Path::new(&wal).exists())
}

/// [`check_database`] for a file. The file is read through a read-only connection (immutable when it
/// has no `-wal`, so not even a `-shm` file is made); nothing is written.
pub(super) async fn check_file(file: &Path) -> Result<Found, LedgerError> {
    use sqlx::Connection;
    let shown = file.display();
    let refuse = |message: String| LedgerError::invalid("database", message);
    let meta = match std::fs::metadata(file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::New),
        Err(e) => return Err(refuse(format!("cannot read {shown}: {e}"))),
    };
    if meta.is_dir() {
        return Err(refuse(format!(
            "{shown} is a directory; the ledger's database is a file"
        )));
    }
    if !meta.is_file() {
        // A device node, FIFO or socket: never opened, never chmod'ed (`--database /dev/null` as root
        // would otherwise make it 0600 for the whole machine).
        return Err(refuse(format!(
            "{shown} is not a regular file; the ledger's database is a regular file"
        )));
    }
    if meta.len() == 0 {
        // Made by someone else (the ledger creates its file 0600): used, its mode left alone.
        return Ok(Found::Empty);
    }
    let options = read_only(file);
    type Recorded = Vec<(i64, Vec<u8>)>;
    let read: Result<(Vec<String>, Recorded), sqlx::Error> = async {
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
        let read = async {
            let tables: Vec<String> = sqlx::query_scalar(
                "SELECT name FROM sqlite_schema WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name",
            )
            .fetch_all(&mut conn)
            .await?;
            // Another sqlx application has a migration table too: what it records must be the ledger's
            // own migrations (version and checksum).
            let recorded = if tables.iter().any(|t| t == "_sqlx_migrations") {
                sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
                    .fetch_all(&mut conn)
                    .await?
            } else {
                Vec::new()
            };
            Ok::<_, sqlx::Error>((tables, recorded))
        }
        .await;
        let _ = conn.close().await;
        read
    }
    .await;
    let (tables, recorded) = match read {
        Ok(t) => t,
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("26") => {
            return Err(refuse(format!(
                "{shown} is not a SQLite database; the ledger opens only its own SQLite file or \
                 creates a new one: give it another --database or --data-dir"
            )))
        }
        Err(e) => {
            return Err(refuse(format!(
                "cannot read {shown} as a SQLite database: {e}"
            )))
        }
    };
    if tables.is_empty() {
        return Ok(Found::Empty);
    }
    let ours = ledger_tables().await?;
    let foreign: Vec<&str> = tables
        .iter()
        .map(String::as_str)
        .filter(|t| !ours.iter().any(|o| o == t))
        .collect();
    let migrated = !recorded.is_empty()
        && recorded.iter().all(|(version, checksum)| {
            SQLITE_MIGRATIONS
                .iter()
                .any(|m| m.version == *version && m.checksum.as_ref() == checksum.as_slice())
        });
    if foreign.is_empty() && !migrated && newer_build(&recorded) {
        return Err(refuse(format!(
            "{shown} is an outcomes ledger written by a newer version (it records migrations this \
             build does not have); it was left as it was: run the newer version, or restore a backup \
             made for this one"
        )));
    }
    if !migrated && foreign.is_empty() && tables.iter().any(|t| t == "_sqlx_migrations") {
        return Err(refuse(format!(
            "{shown} holds another application's migration record, not an outcomes ledger's; it was \
             left as it was: give the ledger its own --database or --data-dir"
        )));
    }
    if !foreign.is_empty() || !migrated {
        let named = if foreign.is_empty() {
            &tables.iter().map(String::as_str).collect::<Vec<_>>()
        } else {
            &foreign
        };
        let mut list = named.iter().take(5).copied().collect::<Vec<_>>().join(", ");
        if named.len() > 5 {
            list.push_str(&format!(" and {} more", named.len() - 5));
        }
        return Err(refuse(format!(
            "{shown} is another application's database, not an outcomes ledger (it holds the \
             table{} {list}); it was left as it was: give the ledger its own --database or --data-dir",
            if named.len() == 1 { "" } else { "s" },
        )));
    }
    // A ledger: what opening it would change must succeed before anything is changed, so a refused
    // start leaves the file as it was (docs/ledger.md "Files").
    if let Some(version) = partly_applied(&options).await? {
        return Err(refuse(format!(
            "{shown} records migration {version} as partly applied (a start was stopped while it ran); \
             it was left as it was: restore the ledger from a backup (`outcomes backup`, docs/ledger.md \
             \"Backups\")"
        )));
    }
    if SQLITE_MIGRATIONS
        .iter()
        .any(|m| !recorded.iter().any(|(v, _)| *v == m.version))
    {
        if let Err((version, e)) = try_migrations(&options).await {
            return Err(refuse(format!(
                "{shown}: migration {version} cannot be applied to this ledger ({e}); it was left as it \
                 was: restore it from a backup (`outcomes backup`, docs/ledger.md \"Backups\")"
            )));
        }
    }
    Ok(Found::Ledger)
}

/// Whether `recorded` (version and checksum of each migration a file records) holds every one of this
/// build's migrations and later versions this build does not know: a file a newer version of the ledger
/// migrated.
fn newer_build(recorded: &[(i64, Vec<u8>)]) -> bool {
    let Some(last) = SQLITE_MIGRATIONS.iter().map(|m| m.version).max() else {
        return false;
    };
    recorded.iter().any(|(v, _)| *v > last)
        && SQLITE_MIGRATIONS.iter().all(|m| {
            recorded.iter().any(|(version, checksum)| {
                m.version == *version && m.checksum.as_ref() == checksum.as_slice()
            })
        })
}

/// The first migration a ledger file records as not applied whole (`success` false: sqlx records a
/// migration before it finishes, and such a file refuses every later migration), read through the
/// read-only connection `options` describes.
async fn partly_applied(options: &SqliteConnectOptions) -> Result<Option<i64>, LedgerError> {
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect_with(options).await?;
    let found = sqlx::query_scalar(
        "SELECT version FROM _sqlx_migrations WHERE NOT success ORDER BY version LIMIT 1",
    )
    .fetch_optional(&mut conn)
    .await;
    let _ = conn.close().await;
    Ok(found?)
}

/// Applies this build's migrations to a copy of the ledger file `options` reads (SQLite's `VACUUM
/// INTO` a temporary file, removed afterwards), so that one that cannot be applied is found before
/// the file itself is touched. The error names the migration (0 when the copy itself failed) and why.
async fn try_migrations(options: &SqliteConnectOptions) -> Result<(), (i64, String)> {
    use sqlx::Connection;
    let dir = tempfile::tempdir().map_err(|e| (0, format!("no temporary directory: {e}")))?;
    let copy = dir.path().join("ledger-migration-check.sqlite");
    let Some(copy_text) = copy.to_str() else {
        return Err((0, "the temporary directory is not a UTF-8 path".into()));
    };
    let copied: Result<(), sqlx::Error> = async {
        let mut conn = sqlx::SqliteConnection::connect_with(options).await?;
        let done = sqlx::query("VACUUM INTO ?")
            .bind(copy_text)
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
        done.map(|_| ())
    }
    .await;
    copied.map_err(|e| (0, format!("it could not be copied to check: {e}")))?;
    let mut conn =
        sqlx::SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(&copy))
            .await
            .map_err(|e| (0, e.to_string()))?;
    let ran = SQLITE_MIGRATIONS.run(&mut conn).await;
    let _ = conn.close().await;
    ran.map_err(|e| {
        let version = match &e {
            sqlx::migrate::MigrateError::ExecuteMigration(_, v) => *v,
            sqlx::migrate::MigrateError::Dirty(v) => *v,
            sqlx::migrate::MigrateError::VersionMismatch(v) => *v,
            sqlx::migrate::MigrateError::VersionMissing(v) => *v,
            _ => 0,
        };
        (version, e.to_string())
    })
}

/// The tables a SQLite ledger has (its migration record `_sqlx_migrations` included): this build's
/// migrations run on an in-memory database.
async fn ledger_tables() -> Result<Vec<String>, LedgerError> {
    use sqlx::Connection;
    let mut conn =
        sqlx::SqliteConnection::connect_with(&SqliteConnectOptions::from_str("sqlite::memory:")?)
            .await?;
    SQLITE_MIGRATIONS.run(&mut conn).await?;
    let tables = sqlx::query_scalar(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'",
    )
        .fetch_all(&mut conn)
        .await?;
    let _ = conn.close().await;
    Ok(tables)
}

/// Writes a consistent copy of the SQLite ledger `database` names (a path or a `sqlite:` URL) to the new
/// file `to`, created mode 0600, with SQLite's `VACUUM INTO`: one read transaction, so a server may keep
/// writing meanwhile; the copy is a whole database in one file (no `-wal`). Returns the copy's size in
/// bytes (docs/ledger.md "Backups").
///
/// Errors, each [`LedgerError::Invalid`] on `database` or `to`: a Postgres URL (back it up with
/// `pg_dump`), an in-memory database, no ledger at `database` (missing, or refused by
/// [`check_database`]), `to` exists already (a backup never overwrites), or it cannot be created. A copy
/// that fails half way is removed.
pub async fn backup(database: &str, to: &Path) -> Result<u64, LedgerError> {
    use sqlx::Connection;
    if let Location::Postgres(url) = Location::parse(database)? {
        return Err(LedgerError::invalid(
            "database",
            format!(
                "{} is a Postgres ledger: back it up with Postgres's own tools, e.g. `pg_dump \
                 --schema=<its schema> <url>`; `outcomes backup` copies SQLite ledgers",
                redact_url(&url)
            ),
        ));
    }
    let Some(file) = database_file(database) else {
        return Err(LedgerError::invalid(
            "database",
            "an in-memory database has nothing to back up",
        ));
    };
    if check_file(&file).await? != Found::Ledger {
        return Err(LedgerError::invalid(
            "database",
            format!("there is no ledger at {}", file.display()),
        ));
    }
    let target = to.display();
    let created = {
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        o.open(to)
    };
    match created {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(LedgerError::invalid(
                "to",
                format!("{target} exists already; a backup is written to a new file only"),
            ))
        }
        Err(e) => {
            return Err(LedgerError::invalid(
                "to",
                format!("cannot create {target}: {e}"),
            ))
        }
    }
    let Some(to_text) = to.to_str() else {
        let _ = std::fs::remove_file(to);
        return Err(LedgerError::invalid(
            "to",
            format!("{target} is not a UTF-8 path"),
        ));
    };
    let options = if database.starts_with("sqlite:") {
        SqliteConnectOptions::from_str(database)?
    } else {
        SqliteConnectOptions::new().filename(database)
    }
    .create_if_missing(false)
    .busy_timeout(Duration::from_secs(10));
    let copied: Result<(), sqlx::Error> = async {
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
        let done = sqlx::query("VACUUM INTO ?")
            .bind(to_text)
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
        done.map(|_| ())
    }
    .await;
    if let Err(e) = copied {
        let _ = std::fs::remove_file(to);
        return Err(match LedgerError::from(e) {
            LedgerError::Store(e) => LedgerError::invalid(
                "to",
                format!("copying {} to {target} failed: {e}", file.display()),
            ),
            other => other,
        });
    }
    std::fs::metadata(to)
        .map(|m| m.len())
        .map_err(|e| LedgerError::invalid("to", format!("cannot read {target}: {e}")))
}

/// Creates the database file mode 0600 when missing, and sets it and its `-wal`/`-shm` files to 0600 when
/// present (SQLite creates the `-wal` and `-shm` files with the database file's mode).
pub(super) fn restrict_files(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        if !path.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)?;
        }
        let mut names = vec![path.to_path_buf()];
        for suffix in ["-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            names.push(p.into());
        }
        for p in names {
            match std::fs::metadata(&p) {
                Ok(m) if m.permissions().mode() & 0o077 != 0 => {
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))?
                }
                _ => {}
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}
