//! The mutation ledger behind `mutation_outcome/v1` (seed 000 "Durable mutation outcomes", seed 002
//! "Unknown outcomes").
//!
//! - [`wire`]: the published record and the dashboard's read shapes (always compiled; the browser uses them).
//! - With the `store` feature (default): [`projection`] with its [`sanitize`]rs and the shared
//!   [`credential`] detector, the [`Engine`] (writes), the [`SessionManager`] (reads), the [`Adapter`] for
//!   live delivery, the SQLite store behind sqlx, and [`import`] of agent transcripts (OpenAI chat format).

pub mod error;
pub mod ids;
pub mod limits;
pub mod wire;

#[cfg(feature = "store")]
pub mod access;
#[cfg(feature = "store")]
pub mod adapter;
#[cfg(feature = "store")]
pub mod credential;
#[cfg(feature = "store")]
pub mod engine;
#[cfg(feature = "store")]
pub mod import;
#[cfg(feature = "store")]
pub mod projection;
#[cfg(feature = "store")]
pub mod sanitize;
#[cfg(feature = "store")]
pub mod sessions;
#[cfg(feature = "store")]
pub mod store;

#[cfg(feature = "store")]
pub use adapter::{Adapter, AdapterError, SessionEnd};
#[cfg(feature = "store")]
pub use engine::{Engine, Evidence, Operation, Settlement};
pub use error::{LedgerError, Refusal};
#[cfg(feature = "store")]
pub use sessions::{Replay, ReplayEvent, SessionManager};
#[cfg(feature = "store")]
pub use store::{Clock, Ledger, LedgerOptions, SystemClock};
