//! The host token that guards the host write API (docs/api.md "Host write API"). Taken from `--host-token` /
//! `OUTCOMES_HOST_TOKEN`, else read from `<data dir>/host-token`, else generated there on first start with
//! mode 0600. A token file its group or others may read is refused. The token itself is never logged.

use std::io::Write;
use std::path::Path;

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use rand::RngCore;

// Where the token came from, and its one reading (given, else `<data dir>/host-token`): shared with the
// clients of a running server in the `host` crate, which read it the same way.
pub use host::token::{read_host_token, TokenSource};

/// Resolves the host token: the configured one, else the file's (refused when its mode lets group or others
/// in), else a new random one written to the file (64 hex characters, mode 0600). Reading is
/// [`read_host_token`]; a file that cannot be read or is blank is replaced by a generated token.
pub fn resolve_host_token(
    configured: Option<&str>,
    data_dir: &Path,
) -> std::io::Result<(String, TokenSource)> {
    let path = data_dir.join("host-token");
    match read_host_token(configured, data_dir) {
        Ok((t, TokenSource::File)) => {
            refuse_if_shared(&path)?;
            return Ok((t, TokenSource::File));
        }
        Ok(found) => return Ok(found),
        Err(_) => {}
    }
    std::fs::create_dir_all(data_dir)?;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path)?;
    // `mode` applies only to a file it creates: an empty file left with other bits is narrowed too.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    Ok((token, TokenSource::Generated))
}

/// Refuses a token file that its group or others may read, write or execute (mode & 0o077 != 0): the token
/// grants every host write, so it is the owner's alone. The error names the path and the fix.
fn refuse_if_shared(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the host token file {p} has mode {mode:04o}: group or others have access to it; \
                     make it the owner's alone with `chmod 600 {p}` (or pass --host-token / \
                     OUTCOMES_HOST_TOKEN), then start again",
                    p = path.display()
                ),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Failed credentials per client address: at most [`Failures::BURST`] (10) in a row, then one more each
/// [`Failures::PERIOD`] (60 s); past that a failure answers 429 with `Retry-After` instead of 401
/// (docs/api.md, "Limits"). Loopback is not exempt. A valid credential is never refused here.
pub struct Failures {
    limiter: governor::DefaultKeyedRateLimiter<IpAddr>,
    /// Clients past the limit, until when: a costly check (a password) is not even tried for them.
    blocked: std::sync::Mutex<std::collections::HashMap<IpAddr, std::time::Instant>>,
    /// Every failure counted, for `GET /metrics` (`outcomes_failed_credentials_total`).
    counted: metrics::Counter,
}

impl Failures {
    /// Failures allowed in a row.
    pub const BURST: NonZeroU32 = NonZeroU32::MIN.saturating_add(9);
    /// Then one more failure each period.
    pub const PERIOD: Duration = Duration::from_secs(60);

    pub fn new() -> Self {
        Self::counting(metrics::Counter::noop())
    }

    /// [`Failures::new`] that also adds each failure to `counter` (within the limit or past it).
    pub fn counting(counter: metrics::Counter) -> Self {
        // One cell each minute (PERIOD), up to BURST at once.
        let quota = governor::Quota::per_minute(NonZeroU32::MIN).allow_burst(Self::BURST);
        Failures {
            limiter: governor::RateLimiter::keyed(quota),
            blocked: std::sync::Mutex::new(std::collections::HashMap::new()),
            counted: counter,
        }
    }

    /// Counts one failure of `client`: `Ok` while within the limit, else how long until the next failure
    /// is allowed.
    pub fn fail(&self, client: IpAddr) -> Result<(), Duration> {
        use governor::clock::Clock;
        self.counted.increment(1);
        self.limiter.check_key(&client).map_err(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            if let Ok(mut blocked) = self.blocked.lock() {
                blocked.insert(client, std::time::Instant::now() + wait);
            }
            wait
        })
    }

    /// How long `client` must still wait when its last failure was refused for being past the limit;
    /// `None` when it may try. Counts nothing.
    pub fn blocked_for(&self, client: IpAddr) -> Option<Duration> {
        let blocked = self.blocked.lock().ok()?;
        let until = *blocked.get(&client)?;
        until
            .checked_duration_since(std::time::Instant::now())
            .filter(|d| !d.is_zero())
    }

    /// Forgets clients whose failures have all expired (called by the periodic sweep).
    pub fn forget_old(&self) {
        self.limiter.retain_recent();
        if let Ok(mut blocked) = self.blocked.lock() {
            let now = std::time::Instant::now();
            blocked.retain(|_, until| *until > now);
        }
    }
}

impl Default for Failures {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    fn set_mode(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_generated_token_file_is_0600_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let (token, source) = resolve_host_token(None, dir.path()).unwrap();
        assert_eq!(source, TokenSource::Generated);
        assert_eq!(token.len(), 64);
        let path = dir.path().join("host-token");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(
            resolve_host_token(None, dir.path()).unwrap(),
            (token, TokenSource::File)
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_others_may_read_is_refused_with_the_path_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host-token");
        std::fs::write(&path, "secret-token\n").unwrap();
        for m in [0o644, 0o640, 0o604, 0o620, 0o601, 0o660] {
            set_mode(&path, m);
            let err = resolve_host_token(None, dir.path()).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
            let p = path.display();
            assert_eq!(
                err.to_string(),
                format!(
                    "the host token file {p} has mode {m:04o}: group or others have access to it; \
                     make it the owner's alone with `chmod 600 {p}` (or pass --host-token / \
                     OUTCOMES_HOST_TOKEN), then start again"
                ),
            );
            assert!(!err.to_string().contains("secret-token"));
            // Nothing was rewritten.
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "secret-token\n");
        }
        for m in [0o600, 0o400] {
            set_mode(&path, m);
            assert_eq!(
                resolve_host_token(None, dir.path()).unwrap(),
                ("secret-token".to_owned(), TokenSource::File)
            );
        }
        // A configured token does not look at the file.
        set_mode(&path, 0o644);
        assert_eq!(
            resolve_host_token(Some("given"), dir.path()).unwrap(),
            ("given".to_owned(), TokenSource::Configured)
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_empty_token_file_is_replaced_by_a_0600_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host-token");
        std::fs::write(&path, "").unwrap();
        set_mode(&path, 0o644);
        let (_, source) = resolve_host_token(None, dir.path()).unwrap();
        assert_eq!(source, TokenSource::Generated);
        assert_eq!(mode(&path), 0o600);
    }
}
