//! The OpenAPI 3.1 document of every endpoint, generated from the handlers' `#[utoipa::path]`
//! annotations and the wire types, served at `GET /api/openapi.json`.

use std::sync::OnceLock;

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::AppState;

/// The document's information; the paths and schemas come from the routes ([`super::documented`]).
#[derive(OpenApi)]
#[openapi(info(
    title = "Outcome ledger",
    description = "mutation_outcome/v1: what happened to each protected write of an agent. The host write API records ledger transitions; history, replay snapshots and live run events publish the projected records."
))]
struct ApiDoc;

/// The document's information, before any route is added.
pub fn info() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The whole document: what every route of [`super::documented`] declares, with the security schemes.
/// Built once.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOCUMENT: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let mut doc = super::documented().into_openapi();
        Security.modify(&mut doc);
        doc
    })
}

/// `GET /api/openapi.json`, documented.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(openapi_json))
}

/// The security schemes (docs/access.md) and which operations need which: the host API the host token;
/// every read API any of host token, staff token, sign-in cookie or viewer cookie (none in open access
/// mode); `/metrics` the host token, a staff token or sign-in; the operator actions a staff token or
/// sign-in; `/healthz` and this document nothing. Read APIs
/// and operator actions also document their 401.
struct Security;

/// Paths open in every access mode.
const OPEN_PATHS: [&str; 2] = ["/healthz", "/api/openapi.json"];

/// The operator actions: staff only (a staff token or a sign-in; docs/api.md "Operator actions").
const OPERATOR_PATHS: [&str; 4] = [
    "/api/sessions/{session_key}/mutations/{mutation_id}/notes",
    "/api/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
    "/api/sessions/{session_key}/mutations/{mutation_id}/assignment",
    "/api/reconciliations",
];

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "host_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The host token (--host-token, OUTCOMES_HOST_TOKEN, or <data dir>/host-token): every host write and every read.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "staff_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A staff API token (`outcomes staff token NAME`): every read API and the operator actions.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "sign_in",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::access::SIGN_IN_COOKIE,
                "A staff sign-in (POST /sign-in): every read API and the operator actions. A change made with it needs a matching Origin.",
            ))),
        );
        components.add_security_scheme(
            "viewer",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::access::VIEWER_COOKIE,
                "A viewer link (GET /v/{token}): the read APIs of that one session; others answer 404.",
            ))),
        );
        let none: [&str; 0] = [];
        let host = vec![SecurityRequirement::new("host_token", none)];
        let readers: Vec<SecurityRequirement> = ["host_token", "staff_token", "sign_in", "viewer"]
            .into_iter()
            .map(|s| SecurityRequirement::new(s, none))
            .collect();
        let staff: Vec<SecurityRequirement> = ["staff_token", "sign_in"]
            .into_iter()
            .map(|s| SecurityRequirement::new(s, none))
            .collect();
        let metrics: Vec<SecurityRequirement> = ["host_token", "staff_token", "sign_in"]
            .into_iter()
            .map(|s| SecurityRequirement::new(s, none))
            .collect();
        let unauthorized = utoipa::openapi::ResponseBuilder::new()
            .description("no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token")
            .content(
                "application/json",
                utoipa::openapi::ContentBuilder::new()
                    .schema(Some(utoipa::openapi::Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build();
        for (path, item) in openapi.paths.paths.iter_mut() {
            let ops = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
            ];
            for op in ops.into_iter().flatten() {
                if OPEN_PATHS.contains(&path.as_str()) {
                    op.security = Some(vec![SecurityRequirement::default()]);
                } else if path.starts_with("/api/host/") {
                    op.security = Some(host.clone());
                } else if path == crate::access::METRICS_PATH {
                    // Not a viewer's (docs/api.md "Metrics").
                    op.security = Some(metrics.clone());
                    op.responses
                        .responses
                        .entry("401".to_owned())
                        .or_insert_with(|| unauthorized.clone().into());
                } else {
                    op.security = Some(if OPERATOR_PATHS.contains(&path.as_str()) {
                        staff.clone()
                    } else {
                        readers.clone()
                    });
                    op.responses
                        .responses
                        .entry("401".to_owned())
                        .or_insert_with(|| unauthorized.clone().into());
                }
            }
        }
    }
}

/// `GET /api/openapi.json`.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "operations",
    responses((status = 200, description = "this document", content_type = "application/json"))
)]
pub async fn openapi_json() -> Json<&'static utoipa::openapi::OpenApi> {
    Json(document())
}
