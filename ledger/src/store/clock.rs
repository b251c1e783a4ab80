//! The ledger's clock: milliseconds since the Unix epoch from a source the tests can drive, and their
//! RFC 3339 spelling.

/// Milliseconds since the Unix epoch, from a clock the tests can drive.
pub trait Clock: Send + Sync {
    /// Now, in milliseconds since the Unix epoch (UTC).
    fn now_ms(&self) -> i64;

    /// True for the real clock: on Postgres the purge then reads the database's clock (`now()`)
    /// instead (docs/ledger.md "Retention"). A clock a test drives says false.
    fn is_system(&self) -> bool {
        false
    }
}

/// The system clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }

    fn is_system(&self) -> bool {
        true
    }
}

/// Formats milliseconds since the epoch as RFC 3339 UTC (`2026-11-29T19:18:38.123Z`).
pub fn format_time(ms: i64) -> String {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}
