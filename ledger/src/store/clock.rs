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

/// Formats milliseconds since the epoch as RFC 3339 UTC with exactly three fractional digits
/// (`2026-11-29T19:18:38.120Z`, never `…38.12Z`): one width for every time the ledger writes, so
/// clients that read only millisecond fractions parse each one and equal instants read the same.
/// Milliseconds outside what `time` can represent give an empty string.
pub fn format_time(ms: i64) -> String {
    const RFC3339_MILLIS: &[time::format_description::BorrowedFormatItem<'static>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(RFC3339_MILLIS).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::format_time;

    #[test]
    fn every_time_has_three_fractional_digits() {
        assert_eq!(format_time(1_796_673_488_800), "2026-12-07T19:58:08.800Z");
        assert_eq!(format_time(1_796_673_488_000), "2026-12-07T19:58:08.000Z");
        assert_eq!(format_time(1_796_673_488_123), "2026-12-07T19:58:08.123Z");
        assert_eq!(format_time(0), "1970-01-01T00:00:00.000Z");
    }
}
