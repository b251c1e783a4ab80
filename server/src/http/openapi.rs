//! The OpenAPI 3.1 document of every endpoint, generated from the handlers' `#[utoipa::path]`
//! annotations and the wire types, served at `GET /api/openapi.json`.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{host, live, read, replay};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Outcome ledger",
        description = "mutation_outcome/v1: what happened to each protected write of an agent. The host write API records ledger transitions; history, replay snapshots and live run events publish the projected records."
    ),
    paths(
        host::approve,
        host::record_intent,
        host::settle,
        host::cancel,
        host::reconcile,
        host::attach_metadata,
        host::fresh_attempt,
        host::delete_session,
        host::batch,
        read::mutation_outcomes,
        replay::mutation_events,
        live::run_events,
        read::sessions,
        read::turns,
        read::turn_entries,
        read::operation,
        read::unknowns,
        read::healthz,
        openapi_json,
    ),
    modifiers(&HostToken)
)]
pub struct ApiDoc;

struct HostToken;

impl Modify for HostToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "host_token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// `GET /api/openapi.json`.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "operations",
    responses((status = 200, description = "this document", content_type = "application/json"))
)]
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
