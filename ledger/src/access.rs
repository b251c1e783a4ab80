//! Who may see what, as stored in the ledger database (docs/access.md): staff accounts, staff API tokens,
//! server-kept sign-in sessions and viewer links.
//!
//! Secrets never reach the database in clear. Passwords arrive already hashed (an Argon2id PHC string made
//! by the caller); random tokens and sign-in ids are given in clear and stored as their SHA-256 (lower-case
//! hex), so a copy of the database grants nothing. Nothing here is cached: what `outcomes staff …` adds to
//! the file works on a running server at once.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::error::LedgerError;
use crate::ids::SessionKey;
use crate::store::{on_read, on_tx, on_write, Inner};

/// Longest staff name, in bytes.
pub const STAFF_NAME_MAX: usize = 64;

/// A sign-in's `last_seen_at` is written at most this often (ms), so reading pages does not write the
/// database on every request; with a short idle expiry, at most every quarter of it ([`touch_every_ms`]).
pub const TOUCH_EVERY_MS: i64 = 60_000;

/// How stale a sign-in's `last_seen_at` may get before a request moves it to now: [`TOUCH_EVERY_MS`], or a
/// quarter of `idle_ms` when that is shorter. So a request at least every three quarters of the idle time
/// keeps a sign-in alive at any idle setting (docs/access.md "Signing in"): at the shortest, 60 s, a page
/// that refreshes every 15 s keeps its person signed in.
pub fn touch_every_ms(idle_ms: i64) -> i64 {
    TOUCH_EVERY_MS.min(idle_ms / 4).max(1)
}

/// The SHA-256 of a random secret, lower-case hex: what is stored instead of the secret.
pub fn secret_hash(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    out
}

/// Checks a staff name: 1 to [`STAFF_NAME_MAX`] bytes of ASCII letters, digits, `.`, `_`, `-` and `@`
/// (an e-mail address fits). The error is a sentence naming the rule.
pub fn check_staff_name(name: &str) -> Result<(), LedgerError> {
    if name.is_empty() || name.len() > STAFF_NAME_MAX {
        return Err(LedgerError::invalid(
            "name",
            format!("a staff name has 1 to {STAFF_NAME_MAX} characters"),
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@'))
    {
        return Err(LedgerError::invalid(
            "name",
            "a staff name has only ASCII letters, digits, '.', '_', '-' and '@'",
        ));
    }
    // Shown as `staff:<name>` and in page paths and headers: `.`, `..`, `@`, `-x` read as something else.
    if !name.as_bytes()[0].is_ascii_alphanumeric() {
        return Err(LedgerError::invalid(
            "name",
            "a staff name starts with an ASCII letter or digit",
        ));
    }
    Ok(())
}

/// A staff account as `outcomes staff list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StaffAccount {
    pub name: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Staff API tokens of the account.
    pub tokens: i64,
    /// Sign-in sessions of the account that have not been ended or swept yet.
    pub sign_ins: i64,
}

/// A viewer link as it is stored: the session it opens and when it stops working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewerLink {
    pub session_key: SessionKey,
    /// Milliseconds since the Unix epoch.
    pub expires_at: i64,
}

/// Staff accounts, tokens, sign-ins and viewer links. Cheap to clone; from [`crate::Ledger::access`].
#[derive(Clone)]
pub struct Access {
    inner: Arc<Inner>,
}

impl Access {
    pub(crate) fn new(inner: Arc<Inner>) -> Self {
        Access { inner }
    }

    /// Now, by the ledger's clock (ms since the epoch).
    pub fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// Adds a staff account with an Argon2id `password_hash` (PHC string). `Ok(false)` when the name is
    /// taken (nothing changes).
    pub async fn add_staff(&self, name: &str, password_hash: &str) -> Result<bool, LedgerError> {
        check_staff_name(name)?;
        let _writer = self.inner.writer().await?;
        let done = on_write!(self.inner, |pool, d| sqlx::query(
            "INSERT INTO staff (name, password_hash, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(password_hash)
        .bind(self.now_ms())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(done == 1)
    }

    /// Removes a staff account with its tokens and sign-ins. `Ok(false)` when there was no such account.
    pub async fn remove_staff(&self, name: &str) -> Result<bool, LedgerError> {
        let _writer = self.inner.writer().await?;
        let done = on_write!(self.inner, |pool, d| sqlx::query(
            "DELETE FROM staff WHERE name = $1"
        )
        .bind(name)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(done == 1)
    }

    /// Every staff account, by name.
    pub async fn list_staff(&self) -> Result<Vec<StaffAccount>, LedgerError> {
        Ok(on_read!(self.inner, |pool, d| sqlx::query_as::<
            _,
            StaffAccount,
        >(
            "SELECT s.name, s.created_at, \
                    (SELECT COUNT(*) FROM staff_tokens t WHERE t.staff_name = s.name) AS tokens, \
                    (SELECT COUNT(*) FROM sign_ins i WHERE i.staff_name = s.name) AS sign_ins \
             FROM staff s ORDER BY s.name",
        )
        .fetch_all(pool)
        .await?))
    }

    /// The stored Argon2id hash of a staff account's password, `None` for no such account. A name
    /// holding U+0000 names none (no staff name can hold it, [`check_staff_name`]) and is not looked up:
    /// Postgres `text` cannot hold it, so both backends answer it as an unknown name (docs/api.md "Text a
    /// client sends").
    pub async fn password_hash(&self, name: &str) -> Result<Option<String>, LedgerError> {
        if name.contains('\0') {
            return Ok(None);
        }
        Ok(on_read!(self.inner, |pool, d| sqlx::query_scalar(
            "SELECT password_hash FROM staff WHERE name = $1"
        )
        .bind(name)
        .fetch_optional(pool)
        .await?))
    }

    /// Stores a new staff API token (its hash) for `name`. `Ok(false)` when there is no such account.
    pub async fn add_staff_token(&self, name: &str, token: &str) -> Result<bool, LedgerError> {
        let _writer = self.inner.writer().await?;
        let done = on_write!(self.inner, |pool, d| sqlx::query(
            "INSERT INTO staff_tokens (token_hash, staff_name, created_at) \
             SELECT $1, name, $2 FROM staff WHERE name = $3",
        )
        .bind(secret_hash(token))
        .bind(self.now_ms())
        .bind(name)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(done == 1)
    }

    /// Removes one staff API token (by the token itself): `outcomes staff token` takes back a token it
    /// could not show. `Ok(false)` when there was none.
    pub async fn remove_staff_token(&self, token: &str) -> Result<bool, LedgerError> {
        let _writer = self.inner.writer().await?;
        let done = on_write!(self.inner, |pool, d| sqlx::query(
            "DELETE FROM staff_tokens WHERE token_hash = $1"
        )
        .bind(secret_hash(token))
        .execute(pool)
        .await?
        .rows_affected());
        Ok(done == 1)
    }

    /// The staff name a presented API token belongs to.
    pub async fn staff_by_token(&self, token: &str) -> Result<Option<String>, LedgerError> {
        Ok(on_read!(self.inner, |pool, d| sqlx::query_scalar(
            "SELECT staff_name FROM staff_tokens WHERE token_hash = $1"
        )
        .bind(secret_hash(token))
        .fetch_optional(pool)
        .await?))
    }

    /// Starts a sign-in session with the random `id` (kept by the browser; its hash is stored).
    pub async fn start_sign_in(&self, name: &str, id: &str) -> Result<bool, LedgerError> {
        let _writer = self.inner.writer().await?;
        let now = self.now_ms();
        let done = on_write!(self.inner, |pool, d| sqlx::query(
            "INSERT INTO sign_ins (id_hash, staff_name, created_at, last_seen_at) \
             SELECT $1, name, $2, $3 FROM staff WHERE name = $4",
        )
        .bind(secret_hash(id))
        .bind(now)
        .bind(now)
        .bind(name)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(done == 1)
    }

    /// The staff name of a live sign-in session: one seen within `idle_ms` (a sliding expiry). Its
    /// `last_seen_at` is moved to now when it is older than [`touch_every_ms`] and no ledger write is
    /// under way (a read never waits for writers). `None` for an unknown, ended or idle one.
    pub async fn sign_in(&self, id: &str, idle_ms: i64) -> Result<Option<String>, LedgerError> {
        let hash = secret_hash(id);
        let now = self.now_ms();
        let row: Option<(String, i64)> = on_read!(self.inner, |pool, d| sqlx::query_as(
            "SELECT staff_name, last_seen_at FROM sign_ins WHERE id_hash = $1"
        )
        .bind(&hash)
        .fetch_optional(pool)
        .await?);
        let Some((name, last_seen)) = row else {
            return Ok(None);
        };
        if last_seen < now.saturating_sub(idle_ms) {
            return Ok(None);
        }
        // Best effort: a read never waits for the ledger's writers; a touch skipped now is made by the
        // next request.
        if last_seen < now.saturating_sub(touch_every_ms(idle_ms)) {
            if let Ok(_writer) = self.inner.write_lock.try_lock() {
                on_write!(self.inner, |pool, d| sqlx::query(
                    "UPDATE sign_ins SET last_seen_at = $1 WHERE id_hash = $2"
                )
                .bind(now)
                .bind(&hash)
                .execute(pool)
                .await?
                .rows_affected());
            }
        }
        Ok(Some(name))
    }

    /// Ends a sign-in session (sign-out). Ending an unknown one is not an error.
    pub async fn end_sign_in(&self, id: &str) -> Result<(), LedgerError> {
        let _writer = self.inner.writer().await?;
        on_write!(self.inner, |pool, d| sqlx::query(
            "DELETE FROM sign_ins WHERE id_hash = $1"
        )
        .bind(secret_hash(id))
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Stores a viewer link (its token's hash) to `session_key`, working until `expires_at` (ms). The
    /// session must exist and not have expired: [`LedgerError::SessionNotFound`] /
    /// [`LedgerError::SessionExpired`] otherwise.
    pub async fn add_viewer_link(
        &self,
        session_key: &SessionKey,
        token: &str,
        expires_at: i64,
    ) -> Result<(), LedgerError> {
        let _writer = self.inner.writer().await?;
        let mut tx = self.inner.begin_write().await?;
        let now = self.now_ms();
        tx.lock_sessions([session_key.as_str()]).await?;
        crate::rows::check_session_live(&mut tx, session_key, self.inner.live_since(now)).await?;
        on_tx!(&mut tx, |c, d| sqlx::query(
            "INSERT INTO viewer_links (token_hash, session_key, created_at, expires_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(secret_hash(token))
        .bind(session_key.as_str())
        .bind(now)
        .bind(expires_at)
        .execute(c)
        .await?
        .rows_affected());
        tx.commit().await?;
        Ok(())
    }

    /// The link a presented viewer token names, if it exists and has not expired.
    pub async fn viewer_link(&self, token: &str) -> Result<Option<ViewerLink>, LedgerError> {
        let row: Option<(String, i64)> = on_read!(self.inner, |pool, d| {
            sqlx::query_as(
            "SELECT session_key, expires_at FROM viewer_links WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(secret_hash(token))
        .bind(self.now_ms())
        .fetch_optional(pool)
        .await?
        });
        Ok(row.and_then(|(key, expires_at)| {
            SessionKey::parse(key).ok().map(|session_key| ViewerLink {
                session_key,
                expires_at,
            })
        }))
    }

    /// Revokes every viewer link of a session; returns how many there were (0 for a session without
    /// links). [`LedgerError::SessionNotFound`] for a session that is not stored; an expired one that is
    /// not swept yet is revoked like any other.
    pub async fn revoke_viewer_links(&self, session_key: &SessionKey) -> Result<u64, LedgerError> {
        let _writer = self.inner.writer().await?;
        let mut tx = self.inner.begin_write().await?;
        tx.lock_sessions([session_key.as_str()]).await?;
        let done = on_tx!(&mut tx, |c, d| {
            let exists: Option<i32> =
                sqlx::query_scalar("SELECT 1 FROM sessions WHERE session_key = $1")
                    .bind(session_key.as_str())
                    .fetch_optional(&mut *c)
                    .await?;
            if exists.is_none() {
                return Err(LedgerError::SessionNotFound);
            }
            sqlx::query("DELETE FROM viewer_links WHERE session_key = $1")
                .bind(session_key.as_str())
                .execute(&mut *c)
                .await?
                .rows_affected()
        });
        if done > 0 {
            let note = crate::store::live::Note::Revoked {
                s: session_key.to_string(),
                by: self.inner.instance(),
            };
            tx.notify(self.inner.notify_channel(), vec![note.payload()])
                .await?;
        }
        tx.commit().await?;
        Ok(done)
    }

    /// Deletes expired viewer links and sign-ins idle longer than `idle_ms`; returns how many rows went.
    pub async fn purge_expired(&self, idle_ms: i64) -> Result<u64, LedgerError> {
        let _writer = self.inner.writer().await?;
        let now = self.now_ms();
        let links = on_write!(self.inner, |pool, d| sqlx::query(
            "DELETE FROM viewer_links WHERE expires_at <= $1"
        )
        .bind(now)
        .execute(pool)
        .await?
        .rows_affected());
        let sign_ins = on_write!(self.inner, |pool, d| sqlx::query(
            "DELETE FROM sign_ins WHERE last_seen_at < $1"
        )
        .bind(now.saturating_sub(idle_ms))
        .execute(pool)
        .await?
        .rows_affected());
        Ok(links + sign_ins)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_stored_as_its_sha256_hex() {
        // FIPS 180-2 example: SHA-256("abc").
        assert_eq!(
            secret_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn staff_names_are_short_and_plain() {
        for ok in ["ada", "ada.lovelace@example.org", "A_b-9", &"x".repeat(64)] {
            assert!(check_staff_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            &"x".repeat(65),
            "a b",
            "ädä",
            "a/b",
            "a\nb",
            ".",
            "..",
            "@",
            "-ada",
            "_x",
            ".ada",
        ] {
            assert!(check_staff_name(bad).is_err(), "{bad:?}");
        }
    }
}
