//! Operator actions (docs/api.md "Operator actions"): staff add a note to an operation, or reconcile an
//! unknown outcome with evidence they observed at the provider. Staff only: a sign-in cookie, a staff API
//! token or the trusted proxy's user header; the host, a viewer, and nobody in open access mode get 403
//! `staff_only` (no credential where reads are closed: 401, from the middleware).
//!
//! Two ways in, one rule set:
//! - JSON under `/api/sessions/{session_key}/mutations/{mutation_id}/…` (documented), errors as the host
//!   API's: 401 → 403 → 415 → 400 → 422 → 404 → 409, each `{"error": …}` ([`api`]);
//! - no-JavaScript forms (`application/x-www-form-urlencoded`) under
//!   `/sessions/{session_key}/operations/{mutation_id}/…` (pages, not in the API document): 303 back to
//!   the operation page, or an HTML page saying what is wrong with the refusal's status ([`forms`]).
//!
//! Both build the same [`ledger::Command`] through the host API's request types and conversions, check
//! what a claim or an assignment names the same way ([`checks`]), and apply it with
//! [`ledger::command::Actor::Staff`], so the history records `staff:<name>`.

pub mod api;
pub mod checks;
pub mod forms;

use axum::routing::post;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::AppState;

pub use api::{AssignBody, OperatorErrors, Staff};
pub(crate) use checks::claimed_entry;
pub(crate) use forms::{form_bytes, plain_words, with_status};
pub use forms::{kept_form, StrictForm};

/// The documented JSON routes ([`api`]), and the form routes of the operation page ([`forms`],
/// undocumented): each form's path answers `GET` with 303 to its operation page.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(api::add_note))
        .routes(routes!(api::reconcile))
        .routes(routes!(api::claim, api::release))
        .routes(routes!(api::assign))
        .route(
            "/sessions/{session_key}/operations/{mutation_id}/assignment",
            post(forms::assign_form).get(forms::to_operation_page),
        )
        .route(
            "/sessions/{session_key}/operations/{mutation_id}/claim",
            post(forms::claim_form).get(forms::to_operation_page),
        )
        .route(
            "/sessions/{session_key}/operations/{mutation_id}/release",
            post(forms::release_form).get(forms::to_operation_page),
        )
        .route(
            "/sessions/{session_key}/operations/{mutation_id}/notes",
            post(forms::note_form).get(forms::to_operation_page),
        )
        .route(
            "/sessions/{session_key}/operations/{mutation_id}/reconciliation",
            post(forms::reconcile_form).get(forms::to_operation_page),
        )
}
