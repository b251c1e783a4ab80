//! HTTP routes. `router` builds the whole API; each concern has its own module.

pub mod host;
pub mod live;
pub mod malformed;
pub mod openapi;
pub mod query;
pub mod read;
pub mod replay;
pub mod security;
pub mod sign_in;
pub mod sse;
pub mod viewer_links;

use axum::middleware;
use axum::routing::{any, delete, get, post, put};
use axum::Router;

use crate::AppState;

/// Every `/api` route, `/healthz`, and the access routes (`/sign-in`, `/sign-out`, `/v/{token}`). Who
/// may call what is decided before routing by [`crate::access::authenticate`]; `/api/host` checks again
/// that the caller is the host.
pub fn api_router() -> Router<AppState> {
    let host = Router::new()
        .route("/sessions/{session_key}/mutations", post(host::approve))
        .route(
            "/sessions/{session_key}/mutations/{mutation_id}/intent",
            post(host::record_intent),
        )
        .route(
            "/sessions/{session_key}/mutations/{mutation_id}/settlement",
            post(host::settle),
        )
        .route(
            "/sessions/{session_key}/mutations/{mutation_id}/cancellation",
            post(host::cancel),
        )
        .route(
            "/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
            post(host::reconcile),
        )
        .route(
            "/sessions/{session_key}/mutations/{mutation_id}/metadata",
            put(host::attach_metadata),
        )
        .route(
            "/sessions/{session_key}/mutations/{mutation_id}/attempts",
            post(host::fresh_attempt),
        )
        .route("/sessions/{session_key}", delete(host::delete_session))
        .route(
            "/sessions/{session_key}/viewer-links",
            post(viewer_links::create).delete(viewer_links::revoke),
        )
        .route("/batch", post(host::batch))
        .route_layer(middleware::from_fn(crate::access::require_host));

    Router::new()
        .nest("/api/host", host)
        .route("/api/mutation-outcomes", get(read::mutation_outcomes))
        .route("/api/mutation-events", get(replay::mutation_events))
        .route("/api/run-events", get(live::run_events))
        .route("/api/sessions", get(read::sessions))
        .route("/api/sessions/{session_key}/turns", get(read::turns))
        .route(
            "/api/sessions/{session_key}/turns/{logical_turn_id}/entries",
            get(read::turn_entries),
        )
        .route("/api/operations/{mutation_id}", get(read::operation))
        .route("/api/unknowns", get(read::unknowns))
        .route("/api/me", get(sign_in::me))
        .route("/api/openapi.json", get(openapi::openapi_json))
        .route("/api/{*rest}", any(no_route))
        .route("/healthz", get(read::healthz))
        .route(
            "/sign-in",
            get(sign_in::sign_in_form).post(sign_in::sign_in),
        )
        .route("/sign-out", post(sign_in::sign_out))
        .route("/v/{token}", get(sign_in::open_viewer_link))
        .method_not_allowed_fallback(method_not_allowed)
}

/// Any other `/api` path: a JSON 404 (not the dashboard's HTML page).
async fn no_route() -> crate::error::ApiError {
    crate::error::ApiError::no_route()
}

/// A method the path does not answer: a JSON 405.
async fn method_not_allowed() -> crate::error::ApiError {
    crate::error::ApiError::method_not_allowed()
}
