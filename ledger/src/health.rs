//! Storage faults (docs/ledger.md "Storage faults"): whether the ledger's last write failed because its
//! storage is full or refuses writes, since when, and when to look again.
//!
//! The group-commit writer records a fault when a commit fails with [`LedgerError::StorageFull`] or
//! [`LedgerError::StorageUnavailable`] and clears it when a commit succeeds. While a fault is recorded,
//! [`crate::Engine::storage_fault`] (the server's `/healthz`) tries a small probe write at most once per
//! [`PROBE_INTERVAL`], so the fault clears by itself once space is freed even when no client writes.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::LedgerError;

/// How often, at most, a probe write checks whether a storage fault has cleared.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// A storage fault the ledger is in: writes are refused with 503 until it clears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageFault {
    /// `storage_full` or `storage_unavailable` (the error code of the refused writes).
    pub code: &'static str,
    /// A plain sentence saying what is wrong and what clears it.
    pub message: &'static str,
    /// When the fault began (the first failed write), milliseconds since the Unix epoch.
    pub since_ms: i64,
}

impl StorageFault {
    fn of(e: &LedgerError, since_ms: i64) -> Option<StorageFault> {
        match e {
            LedgerError::StorageFull => Some(StorageFault {
                code: "storage_full",
                message: "the ledger's storage is full: writes are refused until space is freed",
                since_ms,
            }),
            LedgerError::StorageUnavailable => Some(StorageFault {
                code: "storage_unavailable",
                message: "the ledger's storage refuses writes (read-only or failing): writes are \
                          refused until it is writable again",
                since_ms,
            }),
            _ => None,
        }
    }
}

/// The storage fault state of one open ledger.
#[derive(Default)]
pub(crate) struct StorageHealth {
    faulted: AtomicBool,
    fault: Mutex<Option<StorageFault>>,
    last_probe: Mutex<Option<Instant>>,
    /// SQLite, for tests: the `max_page_count` every write connection gets (0: none), so a test can make
    /// the database "full" without filling a disk ([`crate::Engine::limit_storage_for_tests`]).
    pub(crate) page_limit: Arc<AtomicU32>,
}

impl StorageHealth {
    /// Records `e` when it is a storage fault (keeping the time of the first one); other errors change
    /// nothing.
    pub(crate) fn record(&self, e: &LedgerError, now_ms: i64) {
        let Some(new) = StorageFault::of(e, now_ms) else {
            return;
        };
        if let Ok(mut fault) = self.fault.lock() {
            match fault.as_mut() {
                Some(f) if f.code == new.code => {}
                Some(f) => {
                    f.code = new.code;
                    f.message = new.message;
                }
                None => {
                    tracing::error!(code = new.code, "{}", new.message);
                    *fault = Some(new);
                }
            }
            self.faulted.store(true, Ordering::Release);
        }
    }

    /// A write succeeded: any fault is over.
    pub(crate) fn clear(&self) {
        if !self.faulted.load(Ordering::Acquire) {
            return;
        }
        if let Ok(mut fault) = self.fault.lock() {
            if let Some(f) = fault.take() {
                tracing::info!(code = f.code, "ledger storage writable again");
            }
            self.faulted.store(false, Ordering::Release);
        }
    }

    /// The fault the ledger is in, if any.
    pub(crate) fn current(&self) -> Option<StorageFault> {
        if !self.faulted.load(Ordering::Acquire) {
            return None;
        }
        self.fault.lock().ok().and_then(|f| f.clone())
    }

    /// Whether a probe write is due (none in the last [`PROBE_INTERVAL`]); when it is, the next one is
    /// due a whole interval later.
    pub(crate) fn probe_due(&self) -> bool {
        let Ok(mut last) = self.last_probe.lock() else {
            return false;
        };
        let now = Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < PROBE_INTERVAL) {
            return false;
        }
        *last = Some(now);
        true
    }
}
