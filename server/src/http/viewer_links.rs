//! Viewer links (docs/access.md "Viewer links"): the host mints a link that lets an end user read ONE
//! session, and revokes them. Under `/api/host`, host token only.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use base64::Engine as _;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::WritePath;
use super::host::{session, HostErrors};
use super::write::{body, PathAndBody};
use crate::error::ApiError;
use crate::AppState;
use utoipa_axum::{router::OpenApiRouter, routes};

/// `POST` and `DELETE /api/host/sessions/{session_key}/viewer-links`, documented (the caller puts them
/// behind the host check).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create, revoke))
}

/// A link works this long unless the request says otherwise: 7 days.
pub const DEFAULT_EXPIRES_IN_SECS: u64 = 7 * 24 * 3600;
/// Longest life of a link: 366 days.
pub const MAX_EXPIRES_IN_SECS: u64 = 366 * 24 * 3600;

/// `{"expires_in_secs"?}`; the body may also be empty.
#[derive(Deserialize, Default, ToSchema)]
pub struct ViewerLinkBody {
    /// Seconds until the link stops working: 1 to 31,622,400 (366 days); default 604,800 (7 days).
    #[schema(minimum = 1, maximum = 31_622_400)]
    expires_in_secs: Option<u64>,
}

/// A minted link: open `url` on this server (relative); it works until `expires_at`.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ViewerLinkCreated {
    /// `/v/<token>`: the token is 32 random bytes, base64url without padding (43 characters).
    pub url: String,
    /// RFC 3339 UTC.
    pub expires_at: String,
}

/// `{"revoked": n}`: how many links of the session were revoked.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ViewerLinksRevoked {
    pub revoked: u64,
}

/// A new viewer token: 32 random bytes, base64url without padding.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `POST /api/host/sessions/{session_key}/viewer-links` `{"expires_in_secs"?}` → 201
/// `{"url": "/v/<token>", "expires_at"}`. Errors: 415 (a body not sent as `application/json`; an empty
/// body needs no `Content-Type`) → 400 (malformed JSON, a key given twice) → 422 (`expires_in_secs` out
/// of range) → 404 (unknown or expired session).
#[utoipa::path(
    post,
    path = "/api/host/sessions/{session_key}/viewer-links",
    tag = "host",
    params(("session_key" = inline(super::host::Identifier), Path, description = "session key, percent-encoded")),
    request_body(content = Option<ViewerLinkBody>, description = "optional; an empty body or `null` takes the default lifetime"),
    responses(
        (status = 201, description = "the link: the token is shown this once, only its hash is stored", body = ViewerLinkCreated),
        HostErrors,
        super::write::JsonBodyErrors,
    ),
    security(("host_token" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    PathAndBody { path: key, bytes }: PathAndBody<String>,
) -> Result<(StatusCode, Json<ViewerLinkCreated>), ApiError> {
    let b: ViewerLinkBody =
        if bytes.iter().all(u8::is_ascii_whitespace) || bytes.trim_ascii() == b"null" {
            ViewerLinkBody::default()
        } else {
            body(&bytes)?
        };
    let key = session(key)?;
    let secs = b.expires_in_secs.unwrap_or(DEFAULT_EXPIRES_IN_SECS);
    if !(1..=MAX_EXPIRES_IN_SECS).contains(&secs) {
        return Err(ApiError::invalid_field(
            "expires_in_secs",
            format!("expires_in_secs is 1 to {MAX_EXPIRES_IN_SECS} (366 days)"),
        ));
    }
    let token = new_token();
    let store = &state.access.store;
    let expires_at = store
        .now_ms()
        .saturating_add(i64::try_from(Duration::from_secs(secs).as_millis()).unwrap_or(i64::MAX));
    store.add_viewer_link(&key, &token, expires_at).await?;
    Ok((
        StatusCode::CREATED,
        Json(ViewerLinkCreated {
            url: format!("/v/{token}"),
            expires_at: ledger::store::format_time(expires_at),
        }),
    ))
}

/// `DELETE /api/host/sessions/{session_key}/viewer-links` → 200 `{"revoked": n}`: every link of the
/// session stops working at once (their open live streams are closed). A session without links revokes 0;
/// an unknown session is 404.
#[utoipa::path(
    delete,
    path = "/api/host/sessions/{session_key}/viewer-links",
    tag = "host",
    params(("session_key" = inline(super::host::Identifier), Path, description = "session key, percent-encoded")),
    responses(
        (status = 200, description = "how many links were revoked", body = ViewerLinksRevoked),
        HostErrors,
    ),
    security(("host_token" = []))
)]
pub async fn revoke(
    State(state): State<AppState>,
    WritePath(key): WritePath<String>,
) -> Result<Json<ViewerLinksRevoked>, ApiError> {
    let key = session(key)?;
    let revoked = state.access.store.revoke_viewer_links(&key).await?;
    state.hub.end_viewers(&key);
    Ok(Json(ViewerLinksRevoked { revoked }))
}
