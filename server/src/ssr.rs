//! Server-side rendering of the dashboard (`app`). The app reads through the public HTTP API; while
//! rendering on the server, its requests are answered in process by the same API router (no socket).

use std::sync::Arc;

use app::api::{ApiTransport, TransportResponse};
use axum::body::Body;
use axum::http::Request;
use axum::Router;
use leptos::config::{Env, LeptosOptions};
use leptos::prelude::{provide_context, use_context};
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower::ServiceExt;

use crate::access::Principal;
use crate::assets::OUTPUT_NAME;
use crate::http::security::CspNonce;

/// Leptos settings for a site root and listening address.
pub fn leptos_options(site_root: &str, addr: std::net::SocketAddr) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name(OUTPUT_NAME)
        .site_root(site_root)
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .env(Env::PROD)
        .build()
}

/// A transport that answers the app's GET requests with `api` in process, as `principal` (the caller of
/// the page being rendered: a viewer's page reads only what that viewer may read). Without a principal
/// the API refuses every read (401).
pub fn in_process_transport(api: Router, principal: Option<Principal>) -> ApiTransport {
    ApiTransport(Arc::new(move |path: String| {
        let api = api.clone();
        let principal = principal.clone();
        Box::pin(async move {
            let mut request = Request::get(&path)
                .body(Body::empty())
                .map_err(|e| e.to_string())?;
            if let Some(p) = principal {
                request.extensions_mut().insert(p);
            }
            let response = api.oneshot(request).await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024)
                .await
                .map_err(|e| e.to_string())?;
            Ok(TransportResponse {
                status,
                body: String::from_utf8_lossy(&bytes).into_owned(),
            })
        })
    }))
}

/// The app's routes, generated once per process.
///
/// Generating them renders the app with resource loading suppressed, and Leptos keeps that switch in one
/// process-wide flag: a page rendering on another thread at the same moment would get resources that never
/// load, and its response would never come. A server builds its pages before it serves, so only a
/// process that builds several servers (the HTTP tests) could meet that; generating once makes it
/// impossible.
fn route_list() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> =
        std::sync::OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(app::App)).clone()
}

/// The dashboard's pages, the bundle under `/pkg/` ([`crate::assets::service`]) and the other static
/// files under the site root. Each page renders with, in context, a transport that reads `api` in process
/// as the page's caller, the request's CSP nonce (so the hydration scripts carry it) and the support
/// contact (`support`); it names the files of `bundle`.
pub fn pages(
    options: LeptosOptions,
    bundle: app::Bundle,
    api: Router,
    support: app::support::Support,
) -> Router {
    let pkg = crate::assets::service(&options.site_root);
    let routes = route_list();
    let context = move || {
        let parts = use_context::<axum::http::request::Parts>();
        let principal = parts
            .as_ref()
            .and_then(|p| p.extensions.get::<Principal>().cloned());
        if let Some(nonce) = parts.as_ref().and_then(|p| p.extensions.get::<CspNonce>()) {
            provide_context(leptos::nonce::Nonce::from_value(nonce.0.clone()));
        }
        provide_context(in_process_transport(api.clone(), principal));
        provide_context(support.clone());
    };
    Router::new()
        .leptos_routes_with_context(&options, routes, context.clone(), {
            let bundle = bundle.clone();
            move || app::shell(bundle.clone())
        })
        .nest_service("/pkg", pkg)
        .fallback(leptos_axum::file_and_error_handler_with_context(
            context,
            move |_| app::shell(bundle.clone()),
        ))
        .with_state(options)
}
