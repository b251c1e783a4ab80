//! What both ways into the operator actions check alike (docs/api.md "Operator actions", "Claims"): the
//! entry a claim, a release or an assignment names, and the staff account an assignment hands it to.

use crate::error::ApiError;
use crate::http::write::EntryPath;
use crate::AppState;

/// The entry a claim names (its path read by [`WritePath`](crate::http::extract::WritePath): 400
/// `invalid_path`), its identifiers checked as a write's: 422 naming `session_key` or `mutation_id`.
pub(crate) fn claimed_entry(
    (session_key, mutation_id): EntryPath,
) -> Result<(ledger::ids::SessionKey, ledger::ids::MutationId), ApiError> {
    Ok((
        crate::http::query::write_id(session_key, "session_key", ledger::ids::SessionKey::parse)?,
        crate::http::query::write_id(mutation_id, "mutation_id", ledger::ids::MutationId::parse)?,
    ))
}

/// `to` checked: a present staff account's name, else 422 `invalid_field` naming `to` (the name said).
pub(crate) async fn assignee(state: &AppState, to: Option<String>) -> Result<String, ApiError> {
    let to = to
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::invalid_field("to", "to is required: the name of a staff account")
        })?;
    let known = ledger::access::check_staff_name(&to).is_ok()
        && state
            .access
            .store
            .password_hash(&to)
            .await
            .map_err(ApiError::from)?
            .is_some();
    if !known {
        let shown: String = to.chars().take(64).collect();
        return Err(ApiError::invalid_field(
            "to",
            format!("there is no staff account named {shown:?}"),
        ));
    }
    Ok(to)
}
