//! History (seed 000, "Session history") and the dashboard's own reads (docs/api.md "History" and "Dashboard reads"). Errors: 400
//! (missing or empty parameter, invalid query) → 404 (unknown or expired session, unknown turn). An
//! identifier that could never have been stored (over 256 bytes, control characters) is simply unknown.

use axum::extract::State;
use axum::http::Uri;
use axum::response::Response;
use axum::Json;
use bytes::Bytes;
use ledger::ids::SEARCH_TEXT_MAX_BYTES;
use ledger::ids::{LogicalTurnId, MutationId, SessionKey, ToolName};
use ledger::sessions::{UnknownsSort, UnknownsSortBy, UnknownsState};
use ledger::store::format_time;
use ledger::wire::{
    OperationHistory, OperationMatch, OperationMatches, SessionList, SessionTurns, TurnEntries,
    TurnPlace, UnknownsPage,
};
use ledger::{
    ClaimFilter, EntriesPage, HistoryChunks, HistoryPage, SessionsAfter, SessionsQuery, TurnsPage,
    UnknownsAfter, UnknownsQuery,
};
use serde::Deserialize;

use super::cursor::{self, Listing, Position};
use super::extract::{ReadPath, ReadQuery};
use super::query::{lossy_segment, read_id, read_limit, read_param, read_revision, unknown};
use crate::access::{AcrossSessions, Principal};
use crate::error::ApiError;
use crate::sse;
use crate::AppState;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The documented read routes of this module (history, sessions, turns, operations, unknowns) and
/// `/healthz`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(mutation_outcomes))
        .routes(routes!(sessions))
        .routes(routes!(turns))
        .routes(routes!(turn_place))
        .routes(routes!(turn_entries))
        .routes(routes!(operation_history))
        .routes(routes!(operation))
        .routes(routes!(unknowns))
        .routes(routes!(healthz))
}

pub use ledger::sessions::{
    ENTRIES_MAX_LIMIT, HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT, SESSIONS_DEFAULT_LIMIT,
    SESSIONS_MAX_LIMIT, TURNS_DEFAULT_LIMIT, TURNS_MAX_LIMIT, UNKNOWNS_DEFAULT_LIMIT,
    UNKNOWNS_MAX_LIMIT,
};

/// `?session_id=<key>`.
#[derive(Deserialize)]
pub struct SessionParam {
    session_id: Option<String>,
}

impl SessionParam {
    /// The raw parameter, if given.
    pub fn session_id_opt(self) -> Option<String> {
        self.session_id
    }
}

/// `GET /api/mutation-outcomes?session_id=<key>` → `{"mutation_outcomes": [...]}`, oldest logical turn
/// first, then in recorded order.
#[utoipa::path(
    get,
    path = "/api/mutation-outcomes",
    tag = "history",
    params(("session_id" = String, Query, min_length = 1, description = "session key")),
    responses(
        (status = 200, description = "every retained outcome, oldest logical turn first", body = ledger::wire::MutationOutcomes),
        (status = 400, description = "missing or empty parameter, or a malformed query or path", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session, or unknown turn", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn mutation_outcomes(
    State(state): State<AppState>,
    principal: Principal,
    ReadQuery(params): ReadQuery<SessionParam>,
) -> Result<Response, ApiError> {
    let key = read_param(params.session_id, "session_id", SessionKey::parse)?;
    principal.may_read(&key)?;
    let chunks = state.sessions.history(&key).await?;
    Ok(sse::json_stream(history_body(chunks)))
}

/// `{"mutation_outcomes":[` record `,` record … `]}`, one write per chunk of the ledger's read, each
/// serialised by the read itself (`HistoryChunks::next_json`).
fn history_body(mut chunks: HistoryChunks) -> impl futures::Stream<Item = sse::Chunk> {
    async_stream::stream! {
        yield Ok(Bytes::from_static(b"{\"mutation_outcomes\":["));
        loop {
            match chunks.next_json().await {
                Ok(Some(buf)) if buf.is_empty() => {}
                Ok(Some(buf)) => yield Ok(Bytes::from(buf)),
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(error = %e, "history read failed");
                    yield Err(sse::broken("the history read"));
                    return;
                }
            }
        }
        yield Ok(Bytes::from_static(b"]}"));
    }
}

/// `?limit=&after=&has_unknown=&tool=&prefix=&active_after=&active_before=` of the sessions list, read
/// as text and checked by the handler.
#[derive(Deserialize)]
pub struct SessionsParams {
    limit: Option<String>,
    after: Option<String>,
    has_unknown: Option<String>,
    tool: Option<String>,
    prefix: Option<String>,
    active_after: Option<String>,
    active_before: Option<String>,
}

/// An optional RFC 3339 time parameter (`2026-11-29T20:00:00Z`, any offset) as ms since the epoch (finer
/// digits cut); anything else, empty included, is 400 `invalid_parameter` naming `field`.
fn read_time(value: Option<&str>, field: &str) -> Result<Option<i64>, ApiError> {
    let Some(v) = value else {
        return Ok(None);
    };
    time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc3339)
        .ok()
        .and_then(|t| i64::try_from(t.unix_timestamp_nanos().div_euclid(1_000_000)).ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_parameter",
                format!("{field} is an RFC 3339 time, e.g. 2026-11-29T20:00:00Z"),
                Some(field),
            )
        })
}

/// `GET /api/sessions[?limit=&after=&has_unknown=&tool=&prefix=]` → `{"sessions": [{"session_key",
/// "created_at", "last_activity", "turn_count", "counts"}], "next", "total"}` (docs/api.md "Sessions"):
/// sessions that have not expired, most recently active first (`last_activity` descending, then by key),
/// at most `limit` (1 to 200, default 50), after `after` (the previous answer's `next`); `has_unknown`
/// `true` / `false` keeps the sessions with / without an open unknown (`counts.outcome_unknown` above 0:
/// settled unknown or in flight); `tool` those with a published entry of that exact tool; `prefix` those
/// whose key starts with these bytes (`%` and `_` are literal); `active_after` / `active_before` (RFC 3339)
/// those last active in `[after, before)`. `total` counts every matching session. Errors: 400
/// (`invalid_parameter` naming `limit`, `has_unknown`, `tool`, `active_after` or `active_before`,
/// `invalid_cursor` naming `after`, `invalid_query`); a viewer gets 404 `not_found`. A `tool` that could never have been stored
/// (over 256 bytes, a control character), or a `prefix` holding a control character (U+0000 among
/// them: no key holds one), matches nothing. Other parameters are ignored.
#[utoipa::path(
    get,
    path = "/api/sessions",
    tag = "read",
    params(
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 200, description = "sessions at most, 1 to 200, default 50"),
        ("after" = Option<String>, Query, description = "opaque cursor: the `next` of the previous page"),
        ("has_unknown" = Option<bool>, Query, description = "`true`: only sessions with an open unknown (settled `outcome_unknown` or in flight); `false`: only sessions without one"),
        ("tool" = Option<String>, Query, min_length = 1, description = "only sessions with a published entry of this exact tool"),
        ("prefix" = Option<String>, Query, description = "only sessions whose key starts with these bytes (`%` and `_` are literal); one holding a control character matches nothing"),
        ("active_after" = Option<String>, Query, format = DateTime, description = "RFC 3339: only sessions whose last activity is at or after this time"),
        ("active_before" = Option<String>, Query, format = DateTime, description = "RFC 3339: only sessions whose last activity is before this time"),
    ),
    responses(
        (status = 200, description = "one page of the sessions that have not expired, most recently active first, the next page's cursor or null, and how many sessions match", body = ledger::wire::SessionList),
        (status = 400, description = "invalid `limit`, `after`, `has_unknown`, `tool`, `active_after` or `active_before`, or a malformed query", body = ledger::wire::ErrorBody),
        (status = 404, description = "a viewer (who reads one session only)", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn sessions(
    State(state): State<AppState>,
    _: AcrossSessions,
    ReadQuery(params): ReadQuery<SessionsParams>,
) -> Result<Json<SessionList>, ApiError> {
    let limit = read_limit(
        params.limit.as_deref(),
        "limit",
        SESSIONS_DEFAULT_LIMIT,
        SESSIONS_MAX_LIMIT,
    )?;
    let after = match params.after.as_deref() {
        None => None,
        Some(a) => match cursor::decode(a, Listing::Sessions)? {
            Position::Sessions { at, key } => Some(SessionsAfter {
                last_write_at: at,
                session_key: key,
            }),
            _ => return Err(cursor::invalid_cursor()),
        },
    };
    let has_unknown = match params.has_unknown.as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_parameter",
                "has_unknown is true or false",
                Some("has_unknown"),
            ))
        }
    };
    let active_after = read_time(params.active_after.as_deref(), "active_after")?;
    let active_before = read_time(params.active_before.as_deref(), "active_before")?;
    let tool = filter_id(params.tool, "tool", ToolName::parse)?;
    // A prefix of no key never reaches the ledger (Postgres `text` cannot hold U+0000; docs/api.md
    // "Text a client sends").
    let prefix_of_a_key = !matches!(&params.prefix, Some(p) if p.chars().any(char::is_control));
    let (Some(tool), true) = (tool, prefix_of_a_key) else {
        return Ok(Json(SessionList {
            sessions: Vec::new(),
            next: None,
            total: 0,
        }));
    };
    let query = SessionsQuery {
        limit,
        after,
        has_unknown,
        tool,
        prefix: params.prefix,
        active_after,
        active_before,
    };
    let (mut list, next) = state.sessions.sessions(&query).await?;
    list.next = next.map(|n| {
        Position::Sessions {
            at: n.last_write_at,
            key: n.session_key,
        }
        .encode()
    });
    Ok(Json(list))
}

/// An optional exact-match filter on an identifier: absent → `Ok(Some(None))`; empty → 400
/// `invalid_parameter` naming `field`; one that could never have been stored → `Ok(None)` (it matches
/// nothing).
fn filter_id<T>(
    value: Option<String>,
    field: &str,
    parse: impl FnOnce(String) -> Result<T, ledger::ids::IdError>,
) -> Result<Option<Option<String>>, ApiError> {
    match value {
        None => Ok(Some(None)),
        Some(v) => Ok(read_id(Some(v.clone()), field, parse)?.map(|_| Some(v))),
    }
}

/// `?limit=&after=&order=` of the turns listing, read as text and checked by the handler.
#[derive(Deserialize)]
pub struct TurnsParams {
    limit: Option<String>,
    after: Option<String>,
    order: Option<String>,
}

/// `order=oldest` (the default) or `order=newest`; anything else is 400 `invalid_parameter` naming
/// `order`.
fn read_order(order: Option<&str>) -> Result<bool, ApiError> {
    match order {
        None | Some("oldest") => Ok(false),
        Some("newest") => Ok(true),
        Some(_) => Err(ApiError::bad_request(
            "invalid_parameter",
            "order is oldest or newest",
            Some("order"),
        )),
    }
}

/// `GET /api/sessions/{session_key}/turns[?limit=&after=&order=]` → `{"session_key", "last_activity",
/// "counts", "turns": [{"logical_turn_id", "first_recorded_at", "latest_revision", "counts"}], "next",
/// "total"}` (docs/api.md "Turns"): one page of the session's turns, oldest first (`order=newest`:
/// newest first), at most `limit` (1 to 1000, default 200), after `after` (the previous answer's
/// `next`, of the same order); `counts` are the whole session's and `total` its number of turns. Errors
/// in order: 400 (`invalid_parameter` naming `limit` or `order`, `invalid_cursor` naming `after`,
/// `invalid_query`, a malformed path) → 404 (`session_not_found`, `session_expired`).
#[utoipa::path(
    get,
    path = "/api/sessions/{session_key}/turns",
    tag = "read",
    params(
        ("session_key" = String, Path, description = "session key, percent-encoded"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "turns at most, 1 to 1000, default 200"),
        ("after" = Option<String>, Query, description = "opaque cursor: the `next` of the previous page (of the same `order`)"),
        ("order" = Option<String>, Query, pattern = "^(oldest|newest)$", description = "`oldest` (default): oldest turn first; `newest`: newest turn first"),
    ),
    responses(
        (status = 200, description = "one page of the session's turns (oldest first, or newest first with `order=newest`), the whole session's counts, the next page's cursor or null, and the number of turns", body = ledger::wire::SessionTurns),
        (status = 400, description = "invalid `limit`, `after` or `order`, or a malformed query or path", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn turns(
    State(state): State<AppState>,
    principal: Principal,
    ReadPath(key): ReadPath<String>,
    ReadQuery(params): ReadQuery<TurnsParams>,
) -> Result<Json<SessionTurns>, ApiError> {
    let key = key.map_err(|_| unknown("session_id"))?;
    let limit = read_limit(
        params.limit.as_deref(),
        "limit",
        TURNS_DEFAULT_LIMIT,
        TURNS_MAX_LIMIT,
    )?;
    let newest_first = read_order(params.order.as_deref())?;
    let after = match params.after.as_deref() {
        None => None,
        Some(a) => match cursor::decode(a, Listing::Turns)? {
            Position::Turns { seq, newest } if newest == newest_first => Some(seq),
            _ => return Err(cursor::invalid_cursor()),
        },
    };
    let key = read_param(Some(key), "session_id", SessionKey::parse)?;
    principal.may_read(&key)?;
    let page = TurnsPage {
        after,
        limit,
        newest_first,
    };
    let (mut turns, next) = state.sessions.turns_page(&key, &page).await?;
    turns.next = next.map(|seq| {
        Position::Turns {
            seq,
            newest: newest_first,
        }
        .encode()
    });
    Ok(Json(turns))
}

/// A session key and a turn from a read's path (`/api/sessions/{key}/turns/{turn}/…`), checked in the
/// order every turn read answers: a key that could never have been stored → 404 `session_not_found`;
/// a caller who may not read the session → its refusal; a turn that could never have been stored →
/// the session's own 404 when it has one, else 404 `turn_not_found`.
pub async fn session_and_turn(
    state: &AppState,
    principal: &Principal,
    uri: &Uri,
    path: Result<(String, String), String>,
) -> Result<(SessionKey, LogicalTurnId), ApiError> {
    let (k, t) = match path {
        Ok(kt) => (kt.0, Some(kt.1)),
        Err(bad) if bad == "session_key" => return Err(unknown("session_id")),
        // The turn is not UTF-8; the key (`/api/sessions/{key}/...`) is.
        Err(_) => (lossy_segment(uri.path(), 3), None),
    };
    let key = read_param(Some(k), "session_id", SessionKey::parse)?;
    principal.may_read(&key)?;
    let turn = match t {
        Some(t) => read_id(Some(t), "logical_turn_id", LogicalTurnId::parse)?,
        None => None,
    };
    let Some(turn) = turn else {
        // The session's own 404 (unknown, expired) comes first, as for a well-formed unknown turn.
        state.sessions.check_session(&key).await?;
        return Err(unknown("logical_turn_id"));
    };
    Ok((key, turn))
}

/// `GET /api/sessions/{session_key}/turns/{logical_turn_id}` → `{"session_key", "logical_turn_id",
/// "number", "first_recorded_at", "total", "previous", "next"}` (docs/api.md "A turn's place"): the
/// turn's number in its session (1 for the oldest, as the turns API numbers it), the session's number
/// of turns, and the turns just before and after it (`{"logical_turn_id", "number"}`, `null` at either
/// end): what the turn page's title and its previous / next links read. Errors in order: 400 (a
/// malformed query or path) → 404 (`session_not_found`, `session_expired`, `turn_not_found`).
#[utoipa::path(
    get,
    path = "/api/sessions/{session_key}/turns/{logical_turn_id}",
    tag = "read",
    params(
        ("session_key" = String, Path, description = "session key, percent-encoded"),
        ("logical_turn_id" = String, Path, description = "logical turn, percent-encoded"),
    ),
    responses(
        (status = 200, description = "the turn's number, the session's number of turns, and the turns before and after it (null at either end)", body = ledger::wire::TurnPlace),
        (status = 400, description = "a malformed query or path", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session, or unknown turn", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn turn_place(
    State(state): State<AppState>,
    principal: Principal,
    uri: Uri,
    ReadPath(path): ReadPath<(String, String)>,
) -> Result<Json<TurnPlace>, ApiError> {
    let (key, turn) = session_and_turn(&state, &principal, &uri, path).await?;
    Ok(Json(state.sessions.turn_place(&key, &turn).await?))
}

/// `?after_revision=&limit=&after=&order=` of the entries API, read as text and checked by the handler.
#[derive(Deserialize)]
pub struct EntriesParams {
    after_revision: Option<String>,
    limit: Option<String>,
    after: Option<String>,
    order: Option<String>,
}

/// `GET /api/sessions/{session_key}/turns/{logical_turn_id}/entries[?after_revision=N][&limit=n][&after=c]`
/// → `{"session_key", "logical_turn_id", "latest_revision", "entries": [{"sequence", "mutation_revision",
/// "outcome", "ledger_status", "recorded_at", "settled_at"}], "next", "counts"?}` (docs/api.md "Turn
/// entries"): the turn's published entries in recorded order (`sequence`; `order=newest`: newest first,
/// `next` going on with older ones), and on a first read (neither `after_revision` nor `after`) the
/// turn's counts read in the same transaction; with `after_revision` only those whose
/// `mutation_revision` is above N (legacy entries without a revision only without it), in flight ones
/// included, so a page catches up after a `turn_changed` hint. `latest_revision` is always the turn's
/// latest. At most `limit` entries (1 to 1000, default 1000); `next` is the opaque cursor of the next
/// page (`?after=`, the other parameters unchanged), `null` on the last. Errors in order: 400
/// (`invalid_cursor` naming `after_revision` or `after`, `invalid_parameter` naming `limit` or `order`, a malformed
/// query or path) → 404 (`session_not_found`, `session_expired`, `turn_not_found`) → 409
/// (`cursor_ahead` naming `after_revision`: above the turn's latest revision).
#[utoipa::path(
    get,
    path = "/api/sessions/{session_key}/turns/{logical_turn_id}/entries",
    tag = "read",
    params(
        ("session_key" = String, Path, description = "session key, percent-encoded"),
        ("logical_turn_id" = String, Path, description = "logical turn, percent-encoded"),
        ("after_revision" = Option<i64>, Query, minimum = 0, maximum = 9_223_372_036_854_774_784_i64, description = "only entries changed after this revision (ASCII digits, 0 to 2^63-1, at most the turn's latest revision); legacy entries without a revision only without it"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "entries at most, 1 to 1000, default 1000"),
        ("after" = Option<String>, Query, description = "opaque cursor: the `next` of the previous page (of the same `order`)"),
        ("order" = Option<String>, Query, pattern = "^(oldest|newest)$", description = "`oldest` (default): recorded order; `newest`: newest entry first"),
    ),
    responses(
        (status = 200, description = "the turn's published entries in recorded order (newest first with `order=newest`; `counts` on a first read) (changed after `after_revision` when given), its latest revision, and the next page's cursor or null", body = ledger::wire::TurnEntries),
        (status = 400, description = "invalid `after_revision`, `limit`, `after` or `order`, or a malformed query or path", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session, or unknown turn", body = ledger::wire::ErrorBody),
        (status = 409, description = "`after_revision` is past the turn's latest revision (`cursor_ahead`)", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn turn_entries(
    State(state): State<AppState>,
    principal: Principal,
    uri: Uri,
    ReadPath(path): ReadPath<(String, String)>,
    ReadQuery(params): ReadQuery<EntriesParams>,
) -> Result<Json<TurnEntries>, ApiError> {
    let after_revision = read_revision(params.after_revision.as_deref(), "after_revision")?;
    let limit = read_limit(
        params.limit.as_deref(),
        "limit",
        ENTRIES_MAX_LIMIT,
        ENTRIES_MAX_LIMIT,
    )?;
    let newest_first = read_order(params.order.as_deref())?;
    let after_sequence = match params.after.as_deref() {
        None => None,
        Some(a) => match cursor::decode(a, Listing::Entries)? {
            Position::Entries { seq, newest } if newest == newest_first => Some(seq),
            _ => return Err(cursor::invalid_cursor()),
        },
    };
    let (key, turn) = session_and_turn(&state, &principal, &uri, path).await?;
    let page = EntriesPage {
        after_revision,
        after_sequence,
        limit,
        newest_first,
    };
    let (mut entries, next) = state
        .sessions
        .turn_entries_page(&key, &turn, &page)
        .await
        .map_err(|e| {
            let mut error = ApiError::from(e);
            if error.detail.code == "cursor_ahead" {
                error.detail.field = Some("after_revision".to_owned());
            }
            error
        })?;
    entries.next = next.map(|seq| {
        Position::Entries {
            seq,
            newest: newest_first,
        }
        .encode()
    });
    Ok(Json(entries))
}

/// `?limit=&after=&order=` of an operation's history, read as text and checked by the handler.
#[derive(Deserialize)]
pub struct HistoryParams {
    limit: Option<String>,
    after: Option<String>,
    order: Option<String>,
}

/// `GET /api/sessions/{session_key}/mutations/{mutation_id}/history[?limit=&after=&order=]` →
/// `{"session_key", "logical_turn_id", "mutation_id", "commissioned_after", "commissioned", "changes",
/// "next", "alerted_at"?}` (docs/api.md "Operation history", docs/ledger.md "History"): one page of the
/// entry's changes, oldest first (`order=newest`: newest first), at most `limit` (1 to 1000, default
/// 500), after `after` (the previous answer's `next`, of the same order); `next` is `null` on the last
/// page. A viewer reads it without the rows internal to staff (notes, claims, releases: left out by the
/// read itself, so its pages and `next` count only the rows it sees) and with every staff actor as
/// `staff` ([`crate::access::without_internal`]). Errors in order: 400 (`invalid_parameter` naming
/// `limit` or `order`, `invalid_cursor` naming `after`, `invalid_query`, a malformed path) → 404 for an
/// unknown or expired session (first) or an unknown mutation, including identifiers that could never
/// have been stored.
#[utoipa::path(
    get,
    path = "/api/sessions/{session_key}/mutations/{mutation_id}/history",
    tag = "read",
    params(
        ("session_key" = String, Path, description = "session key, percent-encoded"),
        ("mutation_id" = String, Path, description = "operation id, percent-encoded"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "changes at most, 1 to 1000, default 500"),
        ("after" = Option<String>, Query, description = "opaque cursor: the `next` of the previous page (of the same `order`)"),
        ("order" = Option<String>, Query, pattern = "^(oldest|newest)$", description = "`oldest` (default): oldest change first; `newest`: newest change first (`next` goes on with older changes)"),
    ),
    responses(
        (status = 200, description = "one page of the entry's changes (oldest first, or newest first with `order=newest`), what it was commissioned after and before, and the next page's cursor or null", body = ledger::wire::OperationHistory),
        (status = 400, description = "invalid `limit`, `after` or `order`, or a malformed query or path", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session, or unknown mutation", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn operation_history(
    State(state): State<AppState>,
    principal: Principal,
    uri: Uri,
    ReadPath(path): ReadPath<(String, String)>,
    ReadQuery(params): ReadQuery<HistoryParams>,
) -> Result<Json<OperationHistory>, ApiError> {
    let limit = read_limit(
        params.limit.as_deref(),
        "limit",
        HISTORY_DEFAULT_LIMIT,
        HISTORY_MAX_LIMIT,
    )?;
    let newest_first = read_order(params.order.as_deref())?;
    let after = match params.after.as_deref() {
        None => None,
        Some(a) => match cursor::decode(a, Listing::History)? {
            Position::History { id, newest, op } if newest == newest_first => Some((id, op)),
            _ => return Err(cursor::invalid_cursor()),
        },
    };
    let (k, m) = match path {
        Ok(km) => (km.0, Some(km.1)),
        Err(bad) if bad == "session_key" => return Err(unknown("session_id")),
        // The mutation id is not UTF-8; the key (`/api/sessions/{key}/...`) is.
        Err(_) => (lossy_segment(uri.path(), 3), None),
    };
    let key = read_param(Some(k), "session_id", SessionKey::parse)?;
    principal.may_read(&key)?;
    let mutation = match m {
        Some(m) => read_id(Some(m), "mutation_id", MutationId::parse)?,
        None => None,
    };
    let Some(mutation) = mutation else {
        // The session's own 404 (unknown, expired) comes first, as for a well-formed unknown mutation.
        state.sessions.check_session(&key).await?;
        return Err(unknown("mutation_id"));
    };
    // A cursor of another operation is no position in this one's history.
    let tag = cursor::operation_tag(key.as_str(), mutation.as_str());
    let after = match after {
        Some((_, Some(op))) if op != tag => return Err(cursor::invalid_cursor()),
        other => other.map(|(id, _)| id),
    };
    let page = HistoryPage {
        after,
        limit,
        newest_first,
        internal: principal.sees_internal(),
    };
    let (mut history, next) = state
        .sessions
        .operation_history_page(&key, &mutation, &page)
        .await?;
    history.next = next.map(|id| {
        Position::History {
            id,
            newest: newest_first,
            op: Some(tag),
        }
        .encode()
    });
    if principal.sees_internal() {
        let alerted = state
            .webhooks
            .alerted_at(&[(&history.session_key, &history.mutation_id)])
            .await?;
        history.alerted_at = alerted.into_values().next().map(format_time);
    }
    Ok(Json(principal.history(history)))
}

/// `GET /api/operations/{mutation_id}` → `{"matches": [...]}`: every published outcome with this id; for
/// a viewer only those of its session, without `notes` (internal to staff).
#[utoipa::path(
    get,
    path = "/api/operations/{mutation_id}",
    tag = "read",
    params(("mutation_id" = String, Path, description = "operation id, percent-encoded")),
    responses(
        (status = 200, description = "every published outcome with this operation id (none for an unknown id)", body = ledger::wire::OperationMatches),
        (status = 400, description = "malformed path", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn operation(
    State(state): State<AppState>,
    principal: Principal,
    ReadPath(id): ReadPath<String>,
) -> Result<Json<OperationMatches>, ApiError> {
    // An id that could never have been stored matches nothing, like any other unknown id.
    let id = match id {
        Ok(id) => read_id(Some(id), "mutation_id", MutationId::parse)?,
        Err(_) => None,
    };
    let mut matches = match id {
        Some(id) => state.sessions.find_operation(&id).await?,
        None => Vec::new(),
    };
    // A viewer sees only matches in their own session, and no staff notes or claims.
    if let Some(own) = principal.viewer_session() {
        matches.retain(|m| m.session_key == own.as_str());
    }
    if principal.sees_internal() {
        with_alerted(&state, &mut matches).await?;
    } else {
        for m in &mut matches {
            m.notes = None;
            m.last_note = None;
            m.claim = None;
        }
    }
    Ok(Json(OperationMatches { matches }))
}

/// Fills each match's `alerted_at` (docs/api.md "Alerted"), for staff and the host: one read of the
/// webhook outbox per [`ledger::webhooks::ALERTED_MAX_OPERATIONS`] matches (a queue page is one).
async fn with_alerted(state: &AppState, matches: &mut [OperationMatch]) -> Result<(), ApiError> {
    for chunk in matches.chunks_mut(ledger::webhooks::ALERTED_MAX_OPERATIONS) {
        let operations: Vec<(&str, &str)> = chunk
            .iter()
            .map(|m| (m.session_key.as_str(), m.entry.outcome.mutation_id.as_str()))
            .collect();
        let mut alerted = state.webhooks.alerted_at(&operations).await?;
        for m in chunk {
            m.alerted_at = alerted
                .remove(&(m.session_key.clone(), m.entry.outcome.mutation_id.clone()))
                .map(format_time);
        }
    }
    Ok(())
}

/// `?limit=&after=&tool=&session_key=&min_age_secs=&tool_like=&session_like=&settled_after=
/// &settled_before=&sort=&order=` of the support queue, read as text and checked by the handler.
#[derive(Deserialize)]
pub struct UnknownsParams {
    limit: Option<String>,
    after: Option<String>,
    tool: Option<String>,
    session_key: Option<String>,
    min_age_secs: Option<String>,
    tool_like: Option<String>,
    session_like: Option<String>,
    settled_after: Option<String>,
    settled_before: Option<String>,
    sort: Option<String>,
    order: Option<String>,
    state: Option<String>,
    claim: Option<String>,
}

/// A `tool_like` / `session_like` substring: 1 to [`SEARCH_TEXT_MAX_BYTES`] bytes without control
/// characters ([`ledger::ids::is_search_text`]),
/// else 400 `invalid_parameter` naming `field`. Blank (only whitespace) is no filter, as a form sends it.
fn like_filter(value: Option<String>, field: &str) -> Result<Option<String>, ApiError> {
    let Some(v) = value else { return Ok(None) };
    if v.trim().is_empty() {
        return Ok(None);
    }
    if !ledger::ids::is_search_text(&v) {
        return Err(ApiError::bad_request(
            "invalid_parameter",
            format!(
                "{field} is 1 to {SEARCH_TEXT_MAX_BYTES} bytes of text without control characters"
            ),
            Some(field),
        ));
    }
    Ok(Some(v))
}

/// [`read_time`] for a filter a GET form sends: empty is no filter.
fn time_filter(value: Option<&str>, field: &str) -> Result<Option<i64>, ApiError> {
    read_time(value.filter(|v| !v.is_empty()), field)
}

/// `sort=age|tool|session` and `order=asc|desc` of the support queue; the default order is `desc` by age
/// (the oldest first) and `asc` by tool or session (A to Z). Anything else is 400 `invalid_parameter`
/// naming `sort` or `order`.
fn unknowns_sort(sort: Option<&str>, order: Option<&str>) -> Result<UnknownsSort, ApiError> {
    let by = match sort {
        None | Some("age") => UnknownsSortBy::Age,
        Some("tool") => UnknownsSortBy::Tool,
        Some("session") => UnknownsSortBy::Session,
        Some("deadline") => UnknownsSortBy::Deadline,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_parameter",
                "sort is age, tool, session or deadline",
                Some("sort"),
            ))
        }
    };
    let descending = match order {
        None => by == UnknownsSortBy::Age,
        Some("asc") => false,
        Some("desc") => true,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_parameter",
                "order is asc or desc",
                Some("order"),
            ))
        }
    };
    Ok(UnknownsSort { by, descending })
}

/// `GET /api/unknowns[?limit=&after=&tool=&session_key=&min_age_secs=&tool_like=&session_like=
/// &settled_after=&settled_before=&sort=&order=]` → `{"matches": [{"session_key", "entry", "age_secs",
/// "notes", "last_note"?, "claim"?}], "next", "total"}` (docs/api.md "Support queue"): open unknown
/// outcomes (settled unknown and in flight) across sessions, by default oldest recorded first
/// (`recorded_at`, then `sequence`; `sort=age|tool|session`, `order=asc|desc`), at most `limit` (1 to
/// 1000, default 200), after `after` (the previous answer's `next`, of the same order); `tool` and
/// `session_key` exact; `tool_like` and `session_like` case-insensitive substrings (1 to 256 bytes);
/// `min_age_secs` (whole seconds, 0 to 2^63-1) only items whose `age_secs` is known and at least that;
/// `settled_after` / `settled_before` (RFC 3339) only items settled in that range. `total` counts every
/// matching item. Errors: 400 (`invalid_parameter` naming the parameter, `invalid_cursor` naming `after`,
/// `invalid_query`); a viewer gets 404 `not_found`. A `tool` or `session_key` that could never have been
/// stored matches nothing. Other parameters are ignored.
#[utoipa::path(
    get,
    path = "/api/unknowns",
    tag = "read",
    params(
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "items at most, 1 to 1000, default 200"),
        ("after" = Option<String>, Query, description = "opaque cursor: the `next` of the previous page"),
        ("tool" = Option<String>, Query, min_length = 1, description = "only items of this exact tool"),
        ("session_key" = Option<String>, Query, min_length = 1, description = "only items of this exact session"),
        ("min_age_secs" = Option<i64>, Query, minimum = 0, maximum = 9_223_372_036_854_774_784_i64, description = "only items open at least this many whole seconds (their `age_secs`, from the history row that set their status, is known and at least this); ASCII digits"),
        ("tool_like" = Option<String>, Query, max_length = 256, pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$", description = "only items whose tool contains this text, case-insensitively; no control characters; blank: no filter"),
        ("session_like" = Option<String>, Query, max_length = 256, pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$", description = "only items whose session key contains this text, case-insensitively; no control characters; blank: no filter"),
        ("settled_after" = Option<String>, Query, format = DateTime, description = "only items settled at or after this RFC 3339 time (in-flight items have not settled)"),
        ("settled_before" = Option<String>, Query, format = DateTime, description = "only items settled before this RFC 3339 time"),
        ("sort" = Option<String>, Query, description = "age (default), tool, session or deadline (soonest first ascending)", pattern = "^(age|tool|session|deadline)$"),
        ("state" = Option<String>, Query, description = "all (default): settled unknowns and writes in flight; unknown: settled unknowns only (those the ledger settled at a deadline included); in_flight: writes in flight only", pattern = "^(all|unknown|in_flight)$"),
        ("order" = Option<String>, Query, description = "asc or desc; default desc by age (oldest first), asc by tool or session", pattern = "^(asc|desc)$"),
        ("claim" = Option<String>, Query, description = "unclaimed: only items nobody holds the claim of; mine: only items the calling staff member holds (staff only: anyone else gets 403 `staff_only`); empty or absent: every item", pattern = "^(unclaimed|mine)?$"),
    ),
    responses(
        (status = 200, description = "one page of the open unknown outcomes, oldest first, the next page's cursor or null, and how many match", body = ledger::wire::UnknownsPage),
        (status = 400, description = "invalid `limit`, `after`, `tool`, `session_key` or `min_age_secs`, or a malformed query", body = ledger::wire::ErrorBody),
        (status = 403, description = "`staff_only`: `claim=mine` asked by a caller who is not staff (the host token, open access)", body = ledger::wire::ErrorBody),
        (status = 404, description = "a viewer (who reads one session only)", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn unknowns(
    State(state): State<AppState>,
    _: AcrossSessions,
    principal: Principal,
    ReadQuery(params): ReadQuery<UnknownsParams>,
) -> Result<Json<UnknownsPage>, ApiError> {
    let claim = match (params.claim.as_deref(), &principal) {
        (None | Some(""), _) => None,
        (Some("unclaimed"), _) => Some(ClaimFilter::Unclaimed),
        (Some("mine"), Principal::Staff { name, .. }) => Some(ClaimFilter::HeldBy(name.clone())),
        // For who asks, not for what was sent: 403, as the operator actions answer a caller who is not
        // staff (a 400 would say the request itself was wrong).
        (Some("mine"), _) => {
            return Err(ApiError::forbidden(
                "staff_only",
                "claim=mine lists the claims of the signed-in staff member: sign in, or send a staff API token",
            ))
        }
        (Some(_), _) => {
            return Err(ApiError::bad_request(
                "invalid_parameter",
                "claim is unclaimed or mine",
                Some("claim"),
            ))
        }
    };
    let limit = read_limit(
        params.limit.as_deref(),
        "limit",
        UNKNOWNS_DEFAULT_LIMIT,
        UNKNOWNS_MAX_LIMIT,
    )?;
    let sort = unknowns_sort(params.sort.as_deref(), params.order.as_deref())?;
    let unknowns_state = match params.state.as_deref() {
        None | Some("all") => UnknownsState::All,
        Some("unknown") => UnknownsState::Unknown,
        Some("in_flight") => UnknownsState::InFlight,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_parameter",
                "state is all, unknown or in_flight",
                Some("state"),
            ))
        }
    };
    let after = match params.after.as_deref() {
        None => None,
        Some(a) => match cursor::decode(a, Listing::Unknowns)? {
            // A cursor holds its order: one of another order is not a position in this one.
            // By deadline the key is the previous item's deadline (ms): digits, nothing else.
            Position::Unknowns { key, by, .. }
                if by == cursor::sort_tag(sort)
                    && sort.by == UnknownsSortBy::Deadline
                    && key.as_deref().and_then(|k| k.parse::<i64>().ok()).is_none() =>
            {
                return Err(cursor::invalid_cursor())
            }
            Position::Unknowns { at, seq, key, by } if by == cursor::sort_tag(sort) => {
                Some(UnknownsAfter {
                    key,
                    recorded_at: at,
                    seq,
                })
            }
            _ => return Err(cursor::invalid_cursor()),
        },
    };
    let tool_like = like_filter(params.tool_like, "tool_like")?;
    let session_like = like_filter(params.session_like, "session_like")?;
    let settled_after = time_filter(params.settled_after.as_deref(), "settled_after")?;
    let settled_before = time_filter(params.settled_before.as_deref(), "settled_before")?;
    let tool = filter_id(params.tool, "tool", ToolName::parse)?;
    let session_key = filter_id(params.session_key, "session_key", SessionKey::parse)?;
    let min_age_secs = match params.min_age_secs.as_deref() {
        None => None,
        Some(v) => Some(
            ledger::ids::Cursor::parse(v)
                .map(|c| c.revision().unsigned_abs())
                .map_err(|_| {
                    ApiError::bad_request(
                        "invalid_parameter",
                        "min_age_secs is a whole number of seconds from 0 to 9223372036854775807",
                        Some("min_age_secs"),
                    )
                })?,
        ),
    };
    // The figures of `outcomes_unknown_oldest_age_seconds` and `outcomes_in_flight` (docs/api.md
    // "Metrics"), whatever the filters.
    let gauges = state.sessions.ledger_gauges().await?;
    let oldest_unknown_age_secs = gauges.unknown_oldest_age_secs;
    let in_flight_total = gauges.in_flight;
    let (Some(tool), Some(session_key)) = (tool, session_key) else {
        return Ok(Json(UnknownsPage {
            matches: Vec::new(),
            next: None,
            total: 0,
            oldest_unknown_age_secs,
            in_flight_total,
        }));
    };
    let query = UnknownsQuery {
        limit,
        after,
        tool,
        session_key,
        min_age_secs,
        tool_like,
        session_like,
        settled_after,
        settled_before,
        sort,
        state: unknowns_state,
        claim,
    };
    let (mut page, next) = state.sessions.open_unknowns(&query).await?;
    with_alerted(&state, &mut page.matches).await?;
    page.oldest_unknown_age_secs = oldest_unknown_age_secs;
    page.in_flight_total = in_flight_total;
    page.next = next.map(|n| {
        Position::Unknowns {
            at: n.recorded_at,
            seq: n.seq,
            key: n.key,
            by: cursor::sort_tag(sort),
        }
        .encode()
    });
    Ok(Json(page))
}

/// `GET /healthz` → 200 `{"status": "ok"}`; while the ledger's storage refuses writes (a full disk,
/// docs/ledger.md "Storage faults") 503 with `Retry-After` and `{"status": "unavailable", "reason":
/// "storage_full" | "storage_unavailable", "message", "since"}` (`since`: RFC 3339 UTC, the first
/// refused write). It turns 200 by itself once a write or its probe write succeeds.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses(
        (status = 200, description = "the server is up: {\"status\": \"ok\"}"),
        (status = 503, description = "the ledger's storage refuses writes: {\"status\": \"unavailable\", \"reason\": \"storage_full\" or \"storage_unavailable\", \"message\", \"since\"}, with Retry-After"),
    ),
)]
pub async fn healthz(State(state): State<AppState>) -> Response {
    use axum::response::IntoResponse;
    match state.engine.storage_fault().await {
        None => Json(serde_json::json!({ "status": "ok" })).into_response(),
        Some(fault) => {
            let mut r = (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                Json(serde_json::json!({
                    "status": "unavailable",
                    "reason": fault.code,
                    "message": fault.message,
                    "since": ledger::store::format_time(fault.since_ms),
                })),
            )
                .into_response();
            r.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(crate::error::STORAGE_RETRY_AFTER_SECS),
            );
            r
        }
    }
}
