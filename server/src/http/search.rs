//! `GET /api/search` (docs/api.md "Search"): one box over session keys, mutation ids, titles and resource
//! ids, for staff and investigators (every caller who may list sessions; a viewer gets 404).

use axum::extract::State;
use axum::Json;
use ledger::search::{
    SearchAfter, SearchFloors, SearchQuery, SessionPosition, SEARCH_DEFAULT_LIMIT,
    SEARCH_MAX_BYTES, SEARCH_MAX_LIMIT,
};
use ledger::wire::SearchResults;
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::cursor::{self, Listing, Position};
use super::extract::ReadQuery;
use super::query::read_limit;
use crate::access::AcrossSessions;
use crate::error::ApiError;
use crate::AppState;

/// The search route, with its documentation.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(search))
}

/// `?q=&limit=&after=` of a search, read as text and checked by the handler.
#[derive(Deserialize)]
pub struct SearchParams {
    q: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

/// The search text of `q`: trimmed, each marked invisible character (`⟨U+200B⟩`, as the pages show
/// them) back to the character itself; 1 to [`SEARCH_MAX_BYTES`] bytes without control characters, else
/// 400 `invalid_parameter` naming `q`.
fn search_text(q: Option<&str>) -> Result<String, ApiError> {
    let bad = |message: String| ApiError::bad_request("invalid_parameter", message, Some("q"));
    let text = app::components::marks::unmarked(q.unwrap_or("").trim()).into_owned();
    if text.is_empty() {
        return Err(bad(
            "q is the text to search for: give at least one character".into(),
        ));
    }
    if !ledger::ids::is_search_text(&text) {
        return Err(bad(format!(
            "q is 1 to {SEARCH_MAX_BYTES} bytes of text without control characters"
        )));
    }
    Ok(text)
}

/// `GET /api/search?q=<text>[&limit=&after=]` → `{"sessions": [{"session_key", "last_activity",
/// "counts"}], "operations": [{"session_key", "logical_turn_id", "turn_number", "mutation_id", "tool",
/// "title", "status", "recorded_at", "settled_at"}], "next", "searched_newest"}` (docs/api.md "Search"):
/// sessions that have not expired whose key contains `q`, and their published operations whose
/// `mutation_id`, title or resource id contains it, each newest first and case-insensitively; a `q` of
/// 1 or 2 characters is looked for among the newest 20,000 operations and sessions only, and the page
/// that reaches that bound while older ones exist says `searched_newest: 20000` (else `null`). At most
/// `limit` of each (1 to 100, default 20), after `after` (the previous answer's `next`). `q` may carry
/// the marked form of invisible characters (`⟨U+200B⟩`). Errors: 400 (`invalid_parameter` naming `q` or
/// `limit`, `invalid_cursor` naming `after`, `invalid_query`); a viewer gets 404 `not_found`.
#[utoipa::path(
    get,
    path = "/api/search",
    tag = "read",
    params(
        ("q" = String, Query, min_length = 1, max_length = 256, pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$", description = "the text: part of a session id, an operation id, a title or a resource id; case-insensitive; 1 or 2 characters are looked for among the newest 20,000 operations and sessions only (`searched_newest`); `⟨U+200B⟩` stands for that invisible character"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "sessions, and operations, at most: 1 to 100, default 20"),
        ("after" = Option<String>, Query, description = "opaque cursor: the `next` of the previous page"),
    ),
    responses(
        (status = 200, description = "the matching sessions and operations, newest first, the next page's cursor or null, and `searched_newest` (the bound a 1- or 2-character query reached on this page, or null)", body = SearchResults),
        (status = 400, description = "a missing, empty or too long `q`, an invalid `limit` or `after`, or a malformed query", body = ledger::wire::ErrorBody),
        (status = 404, description = "a viewer (who reads one session only)", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn search(
    State(state): State<AppState>,
    _: AcrossSessions,
    ReadQuery(params): ReadQuery<SearchParams>,
) -> Result<Json<SearchResults>, ApiError> {
    let text = search_text(params.q.as_deref())?;
    let limit = read_limit(
        params.limit.as_deref(),
        "limit",
        SEARCH_DEFAULT_LIMIT,
        SEARCH_MAX_LIMIT,
    )?;
    let after = match params.after.as_deref() {
        None => None,
        Some(a) => match cursor::decode(a, Listing::Search)? {
            Position::Search { s, k, o, w, wk } => Some(SearchAfter {
                sessions: s.map(|at| SessionPosition {
                    at,
                    key: k.unwrap_or_default(),
                }),
                operations: o,
                floors: w.map(|[sessions, operations]| SearchFloors {
                    sessions: SessionPosition {
                        at: sessions,
                        key: wk.unwrap_or_default(),
                    },
                    operations,
                }),
            }),
            _ => return Err(cursor::invalid_cursor()),
        },
    };
    let (mut results, next) = state
        .sessions
        .search(&SearchQuery { text, limit, after })
        .await?;
    results.next = next.map(|n| {
        Position::Search {
            s: n.sessions.as_ref().map(|p| p.at),
            k: n.sessions.map(|p| p.key).filter(|k| !k.is_empty()),
            o: n.operations,
            w: n.floors.as_ref().map(|f| [f.sessions.at, f.operations]),
            wk: n.floors.map(|f| f.sessions.key).filter(|k| !k.is_empty()),
        }
        .encode()
    });
    Ok(Json(results))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_trimmed_and_unmarked_and_checked() {
        assert_eq!(
            search_text(Some("  Support-Chat ")).unwrap(),
            "Support-Chat"
        );
        assert_eq!(search_text(Some("a⟨U+200B⟩b")).unwrap(), "a\u{200B}b");
        for bad in [None, Some(""), Some("   "), Some("a\u{7}b")] {
            let e = search_text(bad).unwrap_err();
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST, "{bad:?}");
        }
        assert!(search_text(Some(&"x".repeat(256))).is_ok());
        assert!(search_text(Some(&"x".repeat(257))).is_err());
    }
}
