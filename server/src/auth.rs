//! The host token that guards the host write API (DESIGN "Host write API"). Taken from `--host-token` /
//! `OUTCOMES_HOST_TOKEN`, else read from `<data dir>/host-token`, else generated there on first start with
//! mode 0600. The token itself is never logged.

use std::io::Write;
use std::path::Path;

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::RngCore;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::AppState;

/// Where the host token came from (logged instead of the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    Configured,
    File,
    Generated,
}

/// Resolves the host token: the configured one, else the file's, else a new random one written to the file
/// (64 hex characters, mode 0600).
pub fn resolve_host_token(
    configured: Option<&str>,
    data_dir: &Path,
) -> std::io::Result<(String, TokenSource)> {
    if let Some(t) = configured.filter(|t| !t.trim().is_empty()) {
        return Ok((t.trim().to_owned(), TokenSource::Configured));
    }
    let path = data_dir.join("host-token");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let t = existing.trim();
        if !t.is_empty() {
            return Ok((t.to_owned(), TokenSource::File));
        }
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
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    Ok((token, TokenSource::Generated))
}

/// Middleware: 401 unless `Authorization: Bearer <host token>` matches (compared in constant time).
pub async fn require_host_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match presented {
        Some(t) if bool::from(t.as_bytes().ct_eq(state.host_token.as_bytes())) => {
            next.run(request).await
        }
        _ => ApiError::unauthorized().into_response(),
    }
}
