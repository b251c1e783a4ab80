//! HTTP routes. Each concern's module exposes its own [`OpenApiRouter`] (routes and their OpenAPI
//! documentation declared together, with `utoipa_axum::routes!`); [`documented`] merges them in this one
//! place, [`api_router`] serves them and [`openapi::document`] publishes what they declare.

pub mod bulk;
pub mod cursor;
pub mod export;
pub mod extract;
pub mod gate;
pub mod guards;
pub mod host;
pub mod live;
pub mod malformed;
pub mod openapi;
pub mod operator;
pub mod page;
pub mod query;
pub mod read;
pub mod replay;
pub mod search;
pub mod security;
pub mod sign_in;
pub mod strict_json;
pub mod timeline;
pub mod viewer_links;
pub mod write;

use axum::middleware;
use axum::routing::any;
use axum::Router;
use utoipa_axum::router::OpenApiRouter;

use crate::AppState;

/// Every route, with the documentation of those in the API document: the host write API (behind
/// [`crate::access::require_host`]), the read APIs, the export, the operator actions (and their forms),
/// the access routes, `/metrics` and `/api/openapi.json`. Who may
/// call what is decided before routing by [`crate::http::gate::authenticate`]; the host routes check again
/// that the caller is the host.
pub fn documented() -> OpenApiRouter<AppState> {
    let host = host::router()
        .merge(viewer_links::router())
        .route_layer(middleware::from_fn(crate::access::require_host))
        // Outside the host check: a request it refuses is timed too.
        .route_layer(middleware::from_fn(crate::metrics::time_host_request));
    OpenApiRouter::with_openapi(openapi::info())
        .merge(host)
        .merge(read::router())
        .merge(timeline::router())
        .merge(export::router())
        .merge(operator::router())
        .merge(bulk::router())
        .merge(replay::router())
        .merge(search::router())
        .merge(live::router())
        .merge(sign_in::router())
        .merge(openapi::router())
        .merge(crate::metrics::router())
}

/// The router the server runs: [`documented`], plus a JSON 404 for any other `/api` path and a JSON 405
/// for a method a path does not answer.
pub fn api_router() -> Router<AppState> {
    let (router, _) = documented()
        .route("/api/{*rest}", any(no_route))
        .split_for_parts();
    router.method_not_allowed_fallback(method_not_allowed)
}

/// Any other `/api` path: a JSON 404 (not the dashboard's HTML page).
async fn no_route() -> crate::error::ApiError {
    crate::error::ApiError::no_route()
}

/// A method the path does not answer: a JSON 405.
async fn method_not_allowed() -> crate::error::ApiError {
    crate::error::ApiError::method_not_allowed()
}
