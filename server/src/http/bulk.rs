//! Bulk actions on selected rows of the support queue (docs/api.md "Bulk actions"): claim, release, or
//! reconcile several operations with one piece of evidence (a provider's incident report, say). Staff
//! only, as every operator action ([`super::operator`]).
//!
//! - JSON: `POST /api/reconciliations` `{"operations": [{"session_key", "mutation_id", "attempt_id"}],
//!   "completed", "evidence"}` → 200 `{"results": [...], "reconciled", "refused"}`, one result per
//!   operation in the order sent; each reconciled about its own attempt, in one transaction (a refused
//!   one changes nothing, the others still apply), each its own history row.
//! - No-JavaScript forms of the queue page (pages, not in the API document): `POST /unknowns/bulk`
//!   (fields `op`, repeated: `<session key>/<mutation id>/<attempt id>`, each percent-encoded; `action`:
//!   `claim`, `release` or `reconcile`): a claim or release is done at once and answered by a page listing
//!   every operation with what came of it; `reconcile` answers the confirmation page, listing every
//!   operation and asking for the evidence, which posts to `POST /unknowns/bulk/reconciliation` (the same
//!   `op` fields and the evidence's): a page listing what was reconciled and what was refused, or, for bad
//!   evidence (`observed_at` "18:50"), the confirmation page again with what was typed and the field named.

use axum::extract::{FromRequest, State};
use axum::http::header::LOCATION;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use ledger::command::Actor;
use ledger::wire::{EntryState, ErrorDetail};
use ledger::Command;
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::host::ReconcileBody;
use super::operator::{claimed_entry, form_bytes, plain_words, with_status, OperatorErrors, Staff};
use super::page::html;
use super::write::{body, from_value, Request};
use crate::access::Principal;
use crate::error::ApiError;
use crate::AppState;
use app::desk::{BulkDone, BulkEvidence, BulkRow};

/// Operations one bulk action takes at most (a queue page's rows).
pub const BULK_MAX: usize = 200;

/// The JSON route (documented) and the queue page's forms.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(reconcile_many))
        .route("/unknowns/bulk", post(bulk_form).get(to_queue))
        .route(
            "/unknowns/bulk/reconciliation",
            post(bulk_reconcile_form).get(to_queue),
        )
}

/// `GET` on a form's path (a bookmark): 303 to the queue.
async fn to_queue() -> Response {
    (StatusCode::SEE_OTHER, [(LOCATION, "/unknowns")]).into_response()
}

/// One operation of a bulk reconciliation: its keys and the attempt the evidence is about (the attempt
/// the queue showed; another is refused 409 `attempt_mismatch`, as one reconciliation).
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
pub struct BulkOperation {
    #[schema(value_type = String, required = true)]
    pub session_key: Option<String>,
    #[schema(value_type = String, required = true)]
    pub mutation_id: Option<String>,
    #[schema(value_type = String, required = true)]
    pub attempt_id: Option<String>,
}

/// `{"operations": [...], "completed", "evidence": {"source", "reference", "observed_at",
/// "provider_status"?}}`: one piece of evidence for 1 to 200 operations.
#[derive(Deserialize, utoipa::ToSchema)]
pub struct BulkReconcileBody {
    /// 1 to 200 operations, each with the attempt the evidence is about.
    #[schema(value_type = Vec<BulkOperation>, required = true, min_items = 1, max_items = 200)]
    operations: Option<Vec<BulkOperation>>,
    /// Whether the provider shows the original attempts took effect.
    #[schema(value_type = bool, required = true)]
    completed: Option<bool>,
    /// As a reconciliation's `evidence` (docs/api.md "Host write API").
    #[schema(value_type = Object, required = true)]
    evidence: Option<serde_json::Value>,
}

/// What came of one operation of a bulk action.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BulkResult {
    pub session_key: String,
    pub mutation_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// The status the single action would have answered: 200 done, else its error's (404, 409, 422).
    pub status: u16,
    /// The entry after the change (done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<EntryState>,
    /// Why it was refused (nothing changed for this operation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

/// `{"results", "reconciled", "refused"}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BulkAnswer {
    /// One per operation, in the order sent.
    pub results: Vec<BulkResult>,
    /// How many were reconciled.
    pub reconciled: usize,
    /// How many were refused.
    pub refused: usize,
}

/// Whether a refusal is about the evidence every operation shares (then nothing is done at all).
fn about_evidence(e: &ApiError) -> bool {
    e.detail
        .field
        .as_deref()
        .is_some_and(|f| f == "completed" || f == "evidence" || f.starts_with("evidence."))
}

/// Reconciles each of `ops` about its own attempt with one piece of evidence, as staff `name`, in one
/// transaction: one result per operation, in order. Bad evidence (a field of `completed` or
/// `evidence`: the same for every operation) is the whole answer's error and nothing is done; an
/// operation's own problem (its keys, its attempt, already settled) is its result.
async fn reconcile_all(
    state: &AppState,
    name: &str,
    ops: &[BulkOperation],
    completed: Option<bool>,
    evidence: Option<serde_json::Value>,
) -> Result<Vec<Result<EntryState, ApiError>>, ApiError> {
    if ops.is_empty() || ops.len() > BULK_MAX {
        return Err(ApiError::invalid_field(
            "operations",
            format!("operations holds 1 to {BULK_MAX} operations"),
        ));
    }
    let mut commands: Vec<Option<Command>> = Vec::with_capacity(ops.len());
    let mut results: Vec<Result<EntryState, ApiError>> = Vec::with_capacity(ops.len());
    for op in ops {
        let single = serde_json::json!({
            "attempt_id": op.attempt_id,
            "completed": completed,
            "evidence": evidence,
        });
        let converted = from_value::<ReconcileBody>(single).and_then(|body| {
            let path = (
                op.session_key.clone().unwrap_or_default(),
                op.mutation_id.clone().unwrap_or_default(),
            );
            let command = Command::try_from(Request { path, body })?;
            ledger::check_action_fields(&command.action)?;
            Ok(command)
        });
        match converted {
            Err(e) if about_evidence(&e) => return Err(e),
            Err(e) => {
                commands.push(None);
                results.push(Err(e));
            }
            Ok(c) => {
                commands.push(Some(c));
                results.push(Err(ApiError::no_route()));
            }
        }
    }
    let valid: Vec<Command> = commands.iter().flatten().cloned().collect();
    let kinds: Vec<_> = valid
        .iter()
        .map(|c| crate::metrics::kind_of(&c.action))
        .collect();
    let applied = state
        .engine
        .apply_batch_as(Actor::Staff(name.to_owned()), valid)
        .await?;
    let mut applied = applied.into_iter().zip(kinds);
    for (slot, command) in results.iter_mut().zip(&commands) {
        if command.is_some() {
            if let Some((r, kind)) = applied.next() {
                *slot = r.map_err(ApiError::from).inspect(|entry| {
                    state.metrics.transition(kind, entry.ledger_status);
                });
            }
        }
    }
    Ok(results)
}

fn answer_of(ops: &[BulkOperation], results: Vec<Result<EntryState, ApiError>>) -> BulkAnswer {
    let results: Vec<BulkResult> = ops
        .iter()
        .zip(results)
        .map(|(op, r)| {
            let (status, entry, error) = match r {
                Ok(entry) => (200, Some(entry), None),
                Err(e) => (e.status.as_u16(), None, Some(*e.detail)),
            };
            BulkResult {
                session_key: op.session_key.clone().unwrap_or_default(),
                mutation_id: op.mutation_id.clone().unwrap_or_default(),
                attempt_id: op.attempt_id.clone(),
                status,
                entry,
                error,
            }
        })
        .collect();
    let reconciled = results.iter().filter(|r| r.status == 200).count();
    BulkAnswer {
        refused: results.len() - reconciled,
        reconciled,
        results,
    }
}

/// `POST /api/reconciliations` `{"operations": [{"session_key", "mutation_id", "attempt_id"}],
/// "completed", "evidence"}` → 200 `{"results": [{"session_key", "mutation_id", "attempt_id", "status",
/// "entry"? | "error"?}], "reconciled", "refused"}` (docs/api.md "Bulk actions"): each operation
/// reconciled about its own attempt with the one piece of evidence, as staff, in one transaction; each
/// reconciliation its own history row (and the release of a claim it ends) and live event; a refused
/// one (`404`, `409` `attempt_mismatch` or `already_settled`, `422` a key) is listed with its error and
/// changes nothing. Bad evidence or `completed`: 422 naming the field, nothing done; `operations` not 1 to
/// 200 items: 422 naming `operations`.
#[utoipa::path(
    post,
    path = "/api/reconciliations",
    tag = "operator",
    request_body = BulkReconcileBody,
    responses(
        (status = 200, description = "one result per operation, in the order sent, and the counts", body = BulkAnswer),
        OperatorErrors,
        super::write::JsonBodyErrors,
    ),
)]
pub async fn reconcile_many(
    State(state): State<AppState>,
    Staff(name): Staff,
    super::write::JsonBody(bytes): super::write::JsonBody,
) -> Result<Json<BulkAnswer>, ApiError> {
    let b: BulkReconcileBody = body(&bytes)?;
    let ops = b
        .operations
        .ok_or_else(|| ApiError::invalid_field("operations", "operations is required"))?;
    let results = reconcile_all(&state, &name, &ops, b.completed, b.evidence).await?;
    Ok(Json(answer_of(&ops, results)))
}

/// A bulk form's fields: every `op` (in order) and the others by name (the last of each).
struct BulkFields {
    ops: Vec<String>,
    fields: Vec<(String, String)>,
}

impl BulkFields {
    fn get(&self, name: &str) -> Option<String> {
        self.fields
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

impl<S: Send + Sync> FromRequest<S> for BulkFields {
    type Rejection = ApiError;

    /// The form read as [`super::operator::StrictForm`] reads one (415, 413, 400), `op` repeated.
    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let bytes = form_bytes(req, state).await?;
        let mut ops = Vec::new();
        let mut fields = Vec::new();
        for (k, v) in url::form_urlencoded::parse(&bytes) {
            if k == "op" {
                ops.push(v.into_owned());
            } else {
                fields.push((k.into_owned(), v.into_owned()));
            }
        }
        Ok(BulkFields { ops, fields })
    }
}

/// An `op` field read: `<session key>/<mutation id>/<attempt id>`, each percent-encoded (the attempt may
/// be empty for an entry with none).
fn op_of(field: &str) -> BulkOperation {
    let mut parts = field.splitn(3, '/').map(|p| {
        percent_encoding::percent_decode_str(p)
            .decode_utf8()
            .map(|s| s.into_owned())
            .unwrap_or_default()
    });
    BulkOperation {
        session_key: parts.next(),
        mutation_id: parts.next(),
        attempt_id: parts.next().filter(|a| !a.is_empty()),
    }
}

/// The rows a page lists: each operation's keys, its page and, read from the ledger, its tool and title.
async fn rows_of(state: &AppState, ops: &[BulkOperation]) -> Vec<BulkRow> {
    let mut rows = Vec::with_capacity(ops.len());
    for op in ops {
        let key = op.session_key.clone().unwrap_or_default();
        let id = op.mutation_id.clone().unwrap_or_default();
        let found = match ledger::ids::MutationId::parse(&id) {
            Ok(m) => state
                .sessions
                .find_operation_with_attempt(&m)
                .await
                .ok()
                .and_then(|all| all.into_iter().find(|x| x.session_key == key)),
            Err(_) => None,
        };
        // The attempt sent with the row, else the entry's current one (named on the confirmation page,
        // whose form then sends it: the evidence is about that attempt).
        let attempt = op
            .attempt_id
            .clone()
            .or_else(|| found.as_ref().and_then(|f| f.attempt_id.clone()));
        rows.push(BulkRow {
            href: app::routes::history_href(&key, &id),
            field: app::desk::op_field(&key, &id, attempt.as_deref().unwrap_or("")),
            session_key: key,
            mutation_id: id,
            attempt_id: attempt,
            tool: found.as_ref().map(|f| f.entry.outcome.tool.clone()),
            title: found.as_ref().and_then(|f| f.entry.outcome.title.clone()),
            done: None,
        });
    }
    rows
}

/// The staff member sending a bulk form, or the refusal page (403 for a caller who is not staff; the
/// middleware already sent anyone without a credential to sign in).
fn staff_of(principal: Result<Principal, ApiError>) -> Result<String, Box<Response>> {
    match principal {
        Ok(Principal::Staff { name, .. }) => Ok(name),
        Ok(_) => Err(Box::new(refused(&ApiError::staff_only(), None))),
        Err(e) => Err(Box::new(refused(&e, None))),
    }
}

fn refused(e: &ApiError, staff: Option<&str>) -> Response {
    with_status(
        e,
        app::standalone::operator_refusal_page_for(
            "Nothing was done.",
            &plain_words(e),
            "/unknowns",
            staff,
        ),
    )
}

/// `POST /unknowns/bulk` (fields `op` repeated, `action` `claim`, `release` or `reconcile`): claims or
/// releases every operation now and answers the page listing each with what came of it (200); for
/// `reconcile`, the confirmation page listing every operation with the evidence form (200). No `op`: 422
/// saying to select rows; another `action`: 422.
async fn bulk_form(
    State(state): State<AppState>,
    principal: Result<Principal, ApiError>,
    form: Result<BulkFields, ApiError>,
) -> Response {
    let name = match staff_of(principal) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let f = match form {
        Ok(f) => f,
        Err(e) => return refused(&e, Some(&name)),
    };
    let ops: Vec<BulkOperation> = f.ops.iter().map(|o| op_of(o)).collect();
    if ops.is_empty() {
        // Nothing selected (the queue without JavaScript sends no selection): the rows of the queue's
        // filters, to select on.
        return select_page(&state, &name, &f).await;
    }
    if ops.len() > BULK_MAX {
        let e = ApiError::invalid_field(
            "op",
            format!(
                "Select 1 to {BULK_MAX} rows of the queue first, then choose what to do with them."
            ),
        );
        return refused(&e, Some(&name));
    }
    let action = f.get("action").unwrap_or_default();
    let mut rows = rows_of(&state, &ops).await;
    match action.as_str() {
        "reconcile" => html(
            StatusCode::OK,
            app::desk::bulk_reconcile_page(&name, &rows, &BulkEvidence::default(), None),
        ),
        "claim" | "release" => {
            let take = action == "claim";
            for (row, op) in rows.iter_mut().zip(&ops) {
                let path = (
                    op.session_key.clone().unwrap_or_default(),
                    op.mutation_id.clone().unwrap_or_default(),
                );
                let done = async {
                    let (k, m) = claimed_entry(path)?;
                    let moved = if take {
                        let (r, added) = state
                            .engine
                            .claim_as(Actor::Staff(name.clone()), k, m)
                            .await?;
                        added.then_some(r)
                    } else {
                        state
                            .engine
                            .release_as(Actor::Staff(name.clone()), k, m)
                            .await?
                    };
                    Ok::<bool, ApiError>(moved.is_some())
                }
                .await;
                row.done = Some(match done {
                    Ok(true) if take => BulkDone::Done("Claimed: you are on it".to_owned()),
                    Ok(false) if take => BulkDone::Done("You were on it already".to_owned()),
                    Ok(true) => BulkDone::Done("Released".to_owned()),
                    Ok(false) => BulkDone::Done("Nobody was on it".to_owned()),
                    Err(e) => BulkDone::Refused(plain_words(&e)),
                });
            }
            let heading = if take {
                "Claim the selected operations"
            } else {
                "Release the selected operations"
            };
            html(
                StatusCode::OK,
                app::desk::bulk_result_page(&name, heading, &rows),
            )
        }
        _ => refused(
            &ApiError::invalid_field("action", "Choose claim, release or reconcile."),
            Some(&name),
        ),
    }
}

/// The page to select rows on (200): the open unknowns (or, `state=in_flight`, the writes in flight) of
/// the queue's filters `claim`, `tool_like`, `session_like` sent with the form, the first [`BULK_MAX`],
/// each with a select box naming its operation and attempt, and the bulk buttons.
async fn select_page(state: &AppState, name: &str, f: &BulkFields) -> Response {
    let given = |k: &str| f.get(k).filter(|v| !v.trim().is_empty());
    let query = ledger::UnknownsQuery {
        limit: BULK_MAX as u32,
        state: match f.get("state").as_deref() {
            Some("in_flight") => ledger::sessions::UnknownsState::InFlight,
            _ => ledger::sessions::UnknownsState::Unknown,
        },
        claim: match f.get("claim").as_deref() {
            Some("mine") => Some(ledger::ClaimFilter::HeldBy(name.to_owned())),
            Some("unclaimed") => Some(ledger::ClaimFilter::Unclaimed),
            _ => None,
        },
        tool_like: given("tool_like").filter(|v| ledger::ids::is_search_text(v)),
        session_like: given("session_like").filter(|v| ledger::ids::is_search_text(v)),
        ..ledger::UnknownsQuery::default()
    };
    let page = match state.sessions.open_unknowns(&query).await {
        Ok((page, _)) => page,
        Err(e) => return refused(&ApiError::from(e), Some(name)),
    };
    let rows: Vec<BulkRow> = page
        .matches
        .into_iter()
        .map(|m| {
            let (key, id) = (m.session_key, m.entry.outcome.mutation_id);
            BulkRow {
                href: app::routes::history_href(&key, &id),
                field: app::desk::op_field(&key, &id, m.attempt_id.as_deref().unwrap_or("")),
                session_key: key,
                mutation_id: id,
                attempt_id: m.attempt_id,
                tool: Some(m.entry.outcome.tool),
                title: m.entry.outcome.title,
                done: None,
            }
        })
        .collect();
    html(
        StatusCode::OK,
        app::desk::bulk_select_page(name, &rows, page.total),
    )
}

/// `POST /unknowns/bulk/reconciliation` (fields `op` repeated, `completed`, `source`, `reference`,
/// `observed_at`, `provider_status`): reconciles every operation about its own attempt and answers the
/// page listing what was reconciled and what was refused (200); bad evidence: the confirmation page again,
/// filled in, the problem next to its field (422), nothing done.
async fn bulk_reconcile_form(
    State(state): State<AppState>,
    principal: Result<Principal, ApiError>,
    form: Result<BulkFields, ApiError>,
) -> Response {
    let name = match staff_of(principal) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let f = match form {
        Ok(f) => f,
        Err(e) => return refused(&e, Some(&name)),
    };
    let ops: Vec<BulkOperation> = f.ops.iter().map(|o| op_of(o)).collect();
    if ops.is_empty() || ops.len() > BULK_MAX {
        let e = ApiError::invalid_field(
            "op",
            format!(
                "Select 1 to {BULK_MAX} rows of the queue first, then choose what to do with them."
            ),
        );
        return refused(&e, Some(&name));
    }
    let given = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    let typed = BulkEvidence {
        completed: f.get("completed"),
        source: f.get("source"),
        reference: f.get("reference"),
        observed_at: f.get("observed_at"),
        provider_status: f.get("provider_status"),
    };
    let mut rows = rows_of(&state, &ops).await;
    let completed = match typed.completed.as_deref() {
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => None,
        None => None,
    };
    let mut evidence = serde_json::json!({
        "source": typed.source,
        "reference": typed.reference,
        "observed_at": given(typed.observed_at.clone()),
    });
    if let Some(p) = typed.provider_status.clone().filter(|p| !p.is_empty()) {
        evidence["provider_status"] = serde_json::Value::String(p);
    }
    match reconcile_all(&state, &name, &ops, completed, Some(evidence)).await {
        Ok(results) => {
            for (row, r) in rows.iter_mut().zip(results) {
                row.done = Some(match r {
                    Ok(_) => BulkDone::Done("Reconciled".to_owned()),
                    Err(e) => BulkDone::Refused(plain_words(&e)),
                });
            }
            html(
                StatusCode::OK,
                app::desk::bulk_result_page(&name, "Reconcile the selected operations", &rows),
            )
        }
        Err(e) if about_evidence(&e) || e.status == StatusCode::UNPROCESSABLE_ENTITY => {
            let problem = app::standalone::FormProblem {
                heading: "Nothing was reconciled yet.".to_owned(),
                message: plain_words(&e),
                field: e.detail.field.clone(),
                refused: true,
            };
            with_status(
                &e,
                app::desk::bulk_reconcile_page(&name, &rows, &typed, Some(&problem)),
            )
        }
        Err(e) => refused(&e, Some(&name)),
    }
}
