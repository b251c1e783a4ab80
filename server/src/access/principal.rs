//! Who is calling ([`Principal`]), as handlers take it, and the route layer that keeps the host API to the
//! host ([`require_host`]).

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ledger::ids::SessionKey;
use ledger::wire::OperationHistory;

use super::scope::without_internal;
use crate::error::ApiError;

/// How a staff caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaffVia {
    /// A sign-in cookie.
    SignIn,
    /// A staff API token as a bearer.
    Token,
    /// The trusted proxy's user header.
    Proxy,
}

/// Who is calling. Put into every request's extensions by `http::gate::authenticate` (absent when the caller has
/// no credential and reads are closed); handlers take it as an extractor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The host program (host token).
    Host,
    /// Staff: investigators and support.
    Staff { name: String, via: StaffVia },
    /// An end user with a viewer link: one session only, until `expires_at` (ms since the epoch).
    Viewer {
        session_key: SessionKey,
        expires_at: i64,
    },
    /// No credential, in open access mode: reads everything, changes nothing.
    Open,
}

impl Principal {
    /// The one session a viewer may read; `None` for every other caller.
    pub fn viewer_session(&self) -> Option<&SessionKey> {
        match self {
            Principal::Viewer { session_key, .. } => Some(session_key),
            _ => None,
        }
    }

    /// `Ok` when the caller may read `session_key`; a viewer of another session gets exactly the 404 of
    /// an unknown session (existence is not revealed).
    pub fn may_read(&self, session_key: &SessionKey) -> Result<(), ApiError> {
        match self.viewer_session() {
            Some(own) if own != session_key => {
                Err(ApiError::from(ledger::LedgerError::SessionNotFound))
            }
            _ => Ok(()),
        }
    }

    /// Whether the caller may see what is internal to staff: notes, their count, staff members' names.
    /// Everyone but a viewer (docs/access.md "Viewer links": the end user never sees them).
    pub fn sees_internal(&self) -> bool {
        !matches!(self, Principal::Viewer { .. })
    }

    /// An operation's history as this caller may read it: unchanged, or for a viewer without what is
    /// internal to staff ([`without_internal`]).
    pub fn history(&self, mut history: OperationHistory) -> OperationHistory {
        if !self.sees_internal() {
            without_internal(&mut history);
        }
        history
    }

    /// `Ok` when the caller may read across sessions (the sessions list, the unknowns queue); a viewer
    /// gets the 404 of a path that names no endpoint.
    pub fn may_read_all(&self) -> Result<(), ApiError> {
        match self {
            Principal::Viewer { .. } => Err(ApiError::no_route()),
            _ => Ok(()),
        }
    }

    /// Whether the browser sends the credential by itself: a cookie, or the SSO proxy's user header (the
    /// proxy adds it to whatever the browser sends, a page of another site's form post included). A
    /// change then needs a matching `Origin`.
    pub fn by_browser(&self) -> bool {
        matches!(
            self,
            Principal::Viewer { .. }
                | Principal::Staff {
                    via: StaffVia::SignIn | StaffVia::Proxy,
                    ..
                }
        )
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    /// The caller `http::gate::authenticate` resolved; 401 when there is none (the middleware refuses such requests
    /// before they reach a handler that reads data, so this only guards a route wired without it).
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(ApiError::credential_required)
    }
}

/// A caller who may read across sessions (an extractor, before the query is read): 401 when there is no
/// caller ([`Principal`]'s rejection); a viewer gets the 404 of a path that names no endpoint
/// ([`Principal::may_read_all`]), whatever the query holds.
pub struct AcrossSessions(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for AcrossSessions {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let principal = Principal::from_request_parts(parts, state).await?;
        principal.may_read_all()?;
        Ok(AcrossSessions(principal))
    }
}

/// Route layer of the host write API: the caller `http::gate::authenticate` resolved must be the host (401 else).
/// The middleware already refuses anyone else; this keeps the host API closed if it is ever wired
/// without it.
pub async fn require_host(request: Request, next: Next) -> Response {
    match request.extensions().get::<Principal>() {
        Some(Principal::Host) => next.run(request).await,
        _ => ApiError::host_token_required().into_response(),
    }
}
