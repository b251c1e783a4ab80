//! The mutation ledger behind `mutation_outcome/v1` (seed 000 "Durable mutation outcomes", seed 002
//! "Unknown outcomes").
//!
//! - [`wire`]: the published record and the dashboard's read shapes (always compiled; the browser uses them).
//! - With the `rules` feature: the entry state [`machine`], the [`projection`] with its [`sanitize`]rs and
//!   the shared [`credential`] detector, without any storage.
//! - With the `store` feature (default; includes `rules`): the [`Engine`] (writes), the [`SessionManager`]
//!   (reads), the [`Adapter`] for live delivery, and the SQLite and Postgres store behind sqlx.
//!
//! Import of agent transcripts is the `importer` crate, built on [`command`] (compiled without the store).

pub mod command;
pub mod error;
pub mod ids;
pub mod limits;
pub mod traceparent;
pub mod wire;

#[cfg(feature = "store")]
pub mod access;
#[cfg(feature = "store")]
pub mod adapter;
#[cfg(feature = "store")]
mod chunks;
#[cfg(feature = "rules")]
pub mod credential;
#[cfg(feature = "store")]
mod direct;
#[cfg(feature = "store")]
pub mod engine;
#[cfg(feature = "store")]
pub mod gauges;
#[cfg(feature = "store")]
mod group;
#[cfg(feature = "store")]
pub mod health;
#[cfg(feature = "rules")]
pub mod machine;
#[cfg(feature = "store")]
mod notify;
#[cfg(feature = "store")]
pub mod otel;
#[cfg(feature = "rules")]
pub mod projection;
#[cfg(feature = "store")]
mod rows;
#[cfg(feature = "rules")]
pub mod sanitize;
#[cfg(feature = "store")]
pub mod search;
#[cfg(feature = "store")]
pub mod sessions;
#[cfg(feature = "store")]
pub mod store;
#[cfg(feature = "store")]
pub mod webhooks;

#[cfg(feature = "store")]
pub use adapter::{Adapter, AdapterError, SessionEnd};
#[cfg(feature = "store")]
pub use command::{Action, Command, EntryKey, Evidence, Settlement};
#[cfg(feature = "store")]
pub use engine::{DeadlineClock, Engine, RESTART_GRACE};
pub use error::{LedgerError, Refusal};
#[cfg(feature = "store")]
pub use gauges::LedgerGauges;
#[cfg(feature = "store")]
pub use group::check_action_fields;
#[cfg(feature = "store")]
pub use health::StorageFault;
#[cfg(feature = "store")]
pub use sessions::{
    ClaimFilter, EntriesPage, HistoryChunks, HistoryPage, OperationHistoryChunks, Replay,
    ReplayChunks, ReplayEvent, SessionManager, SessionsAfter, SessionsQuery, TurnsPage,
    UnknownsAfter, UnknownsQuery,
};
#[cfg(feature = "store")]
pub use store::{Clock, LedgerOptions, SystemClock};

#[cfg(feature = "store")]
use std::sync::Arc;

/// An open ledger: the front of the crate, handing out the write side ([`Engine`]), the read side
/// ([`SessionManager`]) and the access records. Cheap to clone. Opening it starts the group-commit writer
/// task on the current tokio runtime (docs/ledger.md "Writing"); the task ends with the last clone of the
/// ledger and of its engines.
#[cfg(feature = "store")]
#[derive(Clone)]
pub struct Ledger {
    inner: Arc<store::Inner>,
    engine: Engine,
}

#[cfg(feature = "store")]
impl Ledger {
    /// Opens (creating when missing) the SQLite ledger at `database`: a file path, or a `sqlite:` URL.
    /// Runs the numbered migrations. WAL journal with `synchronous=FULL`: a commit is on disk before the
    /// call returns, so a settlement that was answered survives a power cut (NORMAL in WAL mode can lose the
    /// last commits). Read connections get a 5 s busy timeout, the write connection `write_wait`; all get
    /// foreign keys. A database file is created mode 0600 and an existing ledger's (with its `-wal` and
    /// `-shm`) is set to 0600: it holds what hosts recorded. An existing file that is not a ledger
    /// (another application's tables, not SQLite) is refused with [`LedgerError::Invalid`] on `database`,
    /// naming it, and left as it was (docs/ledger.md "Files").
    pub async fn open(database: &str, options: LedgerOptions) -> Result<Ledger, LedgerError> {
        let inner = Arc::new(store::Inner::open(database, options).await?);
        notify::start(&inner).await?;
        Ok(Ledger {
            engine: Engine::start(inner.clone()),
            inner,
        })
    }

    /// The write side.
    pub fn engine(&self) -> Engine {
        self.engine.clone()
    }

    /// Staff accounts, tokens, sign-ins and viewer links (docs/access.md).
    pub fn access(&self) -> access::Access {
        access::Access::new(self.inner.clone())
    }

    /// Webhook endpoints and their outbox (docs/api.md "Webhooks").
    pub fn webhooks(&self) -> webhooks::Webhooks {
        webhooks::Webhooks::new(self.inner.clone())
    }

    /// The OpenTelemetry export's switch and outbox (docs/operations.md "OpenTelemetry").
    pub fn otel(&self) -> otel::Otel {
        otel::Otel::new(self.inner.clone())
    }

    /// The read side.
    pub fn sessions(&self) -> SessionManager {
        SessionManager::new(self.inner.clone())
    }

    /// Closes both pools (graceful shutdown); SQLite: the read connections first, then the write
    /// connection after checkpointing the WAL into the database file, so the file alone holds the
    /// whole ledger (docs/ledger.md "Files").
    ///
    /// A checkpoint that fails (a full disk, a read-only file) is logged as an error: the committed
    /// writes are then still in the `-wal` file beside the database, which must be kept with it. Use
    /// [`Ledger::close_whole`] to be told.
    pub async fn close(&self) {
        let _ = self.close_whole().await;
    }

    /// [`Ledger::close`], answering `Err` with the reason when the WAL could not be checkpointed into
    /// the database file (the `.sqlite` alone is then not whole: keep its `-wal`). `outcomes serve` exits
    /// non-zero then.
    pub async fn close_whole(&self) -> Result<(), String> {
        let closed = self.inner.close().await;
        if let Err(e) = &closed {
            tracing::error!(
                error = %e,
                "the WAL could not be checkpointed at close: the database file alone is not the whole \
                 ledger; keep its -wal file beside it (do not copy or delete the .sqlite alone)"
            );
        }
        closed
    }
}
