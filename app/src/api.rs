//! The only place the app talks HTTP: GET requests to the server's public JSON API. In the browser through
//! `fetch` (gloo-net); while rendering on the server through an [`ApiTransport`] the server provides.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ledger::wire::{
    Caller, ErrorBody, OperationHistory, OperationMatches, SessionTurns, TurnEntries,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A response as the transport returns it.
pub struct TransportResponse {
    pub status: u16,
    pub body: String,
}

/// The future a transport returns.
pub type TransportFuture = Pin<Box<dyn Future<Output = Result<TransportResponse, String>> + Send>>;

/// Answers a GET of an API path (`/api/...`, with query) during server-side rendering.
#[derive(Clone)]
pub struct ApiTransport(pub Arc<dyn Fn(String) -> TransportFuture + Send + Sync>);

/// Why a read failed, as the pages tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApiError {
    /// 404: `code` is `session_not_found`, `session_expired`, `turn_not_found`, …
    NotFound { code: String, message: String },
    /// Any other non-200 status.
    Status { status: u16, message: String },
    /// The request did not complete, or the body was not what the API promises.
    Network(String),
}

impl ApiError {
    /// The HTTP status of a server-rendered page whose read failed this way. A client's mistake stays a
    /// client error: 404 when the API found nothing (an id that could never have been stored included),
    /// the API's own 4xx otherwise. Only a real fault is a 5xx: 503 when the API answered 503 (the
    /// ledger is busy or its database cannot be reached: the page says so and carries `Retry-After`,
    /// `components::set_page_status`), 502 when the API failed otherwise or could not be read.
    pub fn page_status(&self) -> u16 {
        match self {
            ApiError::NotFound { .. } => 404,
            ApiError::Status { status, .. } if (400..500).contains(status) => *status,
            ApiError::Status { status: 503, .. } => 503,
            ApiError::Status { .. } | ApiError::Network(_) => 502,
        }
    }

    /// A sentence for the page.
    pub fn describe(&self) -> String {
        match self {
            ApiError::NotFound { code, .. } if code == "session_expired" => {
                "This session has expired: its history is no longer kept.".to_owned()
            }
            ApiError::NotFound { code, .. } if code == "session_not_found" => {
                "No session with this id.".to_owned()
            }
            ApiError::NotFound { code, .. } if code == "turn_not_found" => {
                "This session has no logical turn with this id.".to_owned()
            }
            ApiError::NotFound { message, .. } => message.clone(),
            // Never the API's own words here: they speak of bearer tokens to programs.
            ApiError::Status { status: 401, .. } => {
                "Your sign-in has ended, so nothing more can be shown. Sign in again to go on.".to_owned()
            }
            ApiError::Status { status: 403, .. } => {
                "You may not see this: it is for signed-in staff.".to_owned()
            }
            ApiError::Status { status: 429, .. } => {
                "Too many failed sign-ins from this address. Wait a minute, then try again.".to_owned()
            }
            ApiError::Status { status: 503, .. } => {
                "The ledger is busy or its database cannot be reached. Try again in a moment.".to_owned()
            }
            ApiError::Status { status, .. } if *status >= 500 => {
                format!("The server failed to answer ({status}); its log says why.")
            }
            ApiError::Status { status, message } => {
                format!("The server refused this read ({status}): {message}")
            }
            ApiError::Network(m) if m.starts_with("unexpected body") => {
                "The server's answer could not be read.".to_owned()
            }
            ApiError::Network(_) => {
                "The server cannot be reached. Check that it is running and that this device is online."
                    .to_owned()
            }
        }
    }

    /// Whether the read was refused for want of a credential (401): the sign-in ended, or a viewer
    /// link no longer works.
    pub fn signed_out(&self) -> bool {
        matches!(self, ApiError::Status { status: 401, .. })
    }
}

/// Percent-encodes one path segment or query value (every byte but unreserved characters).
pub fn enc(s: &str) -> String {
    urlencoding::encode(s).into_owned()
}

fn decode<T: DeserializeOwned>(status: u16, body: &str) -> Result<T, ApiError> {
    if status == 200 {
        return serde_json::from_str(body)
            .map_err(|e| ApiError::Network(format!("unexpected body: {e}")));
    }
    let (code, message) = serde_json::from_str::<ErrorBody>(body)
        .map(|b| (b.error.code, b.error.message))
        .unwrap_or_else(|_| ("unknown".to_owned(), body.chars().take(200).collect()));
    if status == 404 {
        Err(ApiError::NotFound { code, message })
    } else {
        Err(ApiError::Status { status, message })
    }
}

/// GETs `path` and decodes the JSON body. Must be called inside the reactive owner (it reads context
/// synchronously on the server); the returned future is `Send`.
pub fn get_json<T: DeserializeOwned + 'static>(
    path: String,
) -> impl Future<Output = Result<T, ApiError>> + Send + 'static {
    reader().get_json(path)
}

/// Reads several API paths from one page's resource: made inside the reactive owner (where the server's
/// transport is in context), then usable after any `.await` of the resource's future.
#[derive(Clone)]
pub struct Reader {
    #[cfg(feature = "ssr")]
    transport: Option<ApiTransport>,
}

/// A [`Reader`] for this page. Call it inside the reactive owner, like [`get_json`].
pub fn reader() -> Reader {
    Reader {
        #[cfg(feature = "ssr")]
        transport: leptos::prelude::use_context::<ApiTransport>(),
    }
}

impl Reader {
    /// GETs `path` and decodes the JSON body.
    pub fn get_json<T: DeserializeOwned + 'static>(
        &self,
        path: String,
    ) -> impl Future<Output = Result<T, ApiError>> + Send + 'static {
        #[cfg(feature = "ssr")]
        let fetched = {
            let transport = self.transport.clone();
            async move {
                let t = transport
                    .ok_or_else(|| ApiError::Network("no API transport in context".into()))?;
                (t.0)(path).await.map_err(ApiError::Network)
            }
        };
        #[cfg(not(feature = "ssr"))]
        let fetched = fetch_text(path);
        async move {
            let r = fetched.await?;
            decode(r.status, &r.body)
        }
    }
}

impl Reader {
    /// A turn's entries (changed after `after_revision`, when given), following `next` through every page
    /// and returning them as one answer with `next: null`. `latest_revision` is the first page's: what a
    /// later page holds beyond it is read again at the next catch-up, never lost.
    pub fn turn_entries(
        &self,
        key: &str,
        turn: &str,
        after_revision: Option<i64>,
    ) -> impl Future<Output = Result<TurnEntries, ApiError>> + Send + 'static {
        let reader = self.clone();
        let base = turn_entries_path(key, turn);
        async move {
            let query = |after: Option<&str>| {
                let mut q: Vec<String> = Vec::new();
                if let Some(r) = after_revision {
                    q.push(format!("after_revision={r}"));
                }
                if let Some(a) = after {
                    q.push(format!("after={}", enc(a)));
                }
                if q.is_empty() {
                    base.clone()
                } else {
                    format!("{base}?{}", q.join("&"))
                }
            };
            let mut all: TurnEntries = reader.get_json(query(None)).await?;
            while let Some(next) = all.next.take() {
                let page: TurnEntries = reader.get_json(query(Some(&next))).await?;
                all.entries.extend(page.entries);
                all.next = page.next;
            }
            Ok(all)
        }
    }
}

impl Reader {
    /// The first `limit` (at most [`ENTRIES_PAGE`]) entries of a turn, one page: `next` is set when there
    /// are more (docs/design.md "Big turns").
    pub fn first_entries(
        &self,
        key: &str,
        turn: &str,
        limit: usize,
    ) -> impl Future<Output = Result<TurnEntries, ApiError>> + Send + 'static {
        self.entries_page(key, turn, "", limit)
    }

    /// The newest `limit` (at most [`ENTRIES_PAGE`]) entries of a turn, newest first, with the turn's
    /// counts read with them (`?order=newest`, docs/api.md "Turn entries").
    pub fn newest_entries(
        &self,
        key: &str,
        turn: &str,
        limit: usize,
    ) -> impl Future<Output = Result<TurnEntries, ApiError>> + Send + 'static {
        self.entries_page(key, turn, "order=newest&", limit)
    }

    /// The newest `limit` (1 to 1000) turns of a session, newest first, with the session's counts and
    /// its number of turns (`?order=newest`, docs/api.md "Turns").
    pub fn newest_turns(
        &self,
        key: &str,
        limit: usize,
    ) -> impl Future<Output = Result<SessionTurns, ApiError>> + Send + 'static {
        self.get_json(format!(
            "{}?order=newest&limit={}",
            session_turns_path(key),
            limit.clamp(1, 1000)
        ))
    }

    /// One page of a turn's entries: `query` is what goes before `limit=` (empty, or `order=newest&`).
    fn entries_page(
        &self,
        key: &str,
        turn: &str,
        query: &str,
        limit: usize,
    ) -> impl Future<Output = Result<TurnEntries, ApiError>> + Send + 'static {
        self.get_json(format!(
            "{}?{query}limit={}",
            turn_entries_path(key, turn),
            limit.clamp(1, ENTRIES_PAGE)
        ))
    }
}

/// The path of a turn's entries (docs/api.md "Dashboard reads").
pub fn turn_entries_path(key: &str, turn: &str) -> String {
    format!("/api/sessions/{}/turns/{}/entries", enc(key), enc(turn))
}

/// The path of a turn's place: its number and neighbours (docs/api.md "A turn's place").
pub fn turn_place_path(key: &str, turn: &str) -> String {
    format!("/api/sessions/{}/turns/{}", enc(key), enc(turn))
}

/// The path of a session's turns.
pub fn session_turns_path(key: &str) -> String {
    format!("/api/sessions/{}/turns", enc(key))
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn fetch_text(
    path: String,
) -> impl Future<Output = Result<TransportResponse, ApiError>> + Send + 'static {
    send_wrapper::SendWrapper::new(async move {
        let response = gloo_net::http::Request::get(&path)
            .send()
            .await
            .map_err(|e| ApiError::Network(e.to_string()))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| ApiError::Network(e.to_string()))?;
        Ok(TransportResponse { status, body })
    })
}

#[cfg(not(any(feature = "ssr", feature = "hydrate")))]
fn fetch_text(
    _path: String,
) -> impl Future<Output = Result<TransportResponse, ApiError>> + Send + 'static {
    async { Err(ApiError::Network("built without ssr or hydrate".into())) }
}

/// `GET /api/me`: who the caller is (docs/access.md).
pub fn me() -> impl Future<Output = Result<Caller, ApiError>> + Send + 'static {
    get_json("/api/me".to_owned())
}

/// `GET /api/sessions/{key}/turns?limit=1`: whether the session can be read (its 404s, a 401), and its
/// counts and number of turns, for one turn's summary at most.
pub fn session_turns(
    key: &str,
) -> impl Future<Output = Result<SessionTurns, ApiError>> + Send + 'static {
    get_json(format!("{}?limit=1", session_turns_path(key)))
}

/// [`Reader::newest_turns`] from the browser.
pub fn newest_turns(
    key: &str,
    limit: usize,
) -> impl Future<Output = Result<SessionTurns, ApiError>> + Send + 'static {
    reader().newest_turns(key, limit)
}

/// [`Reader::newest_entries`] from the browser.
pub fn newest_entries(
    key: &str,
    turn: &str,
    limit: usize,
) -> impl Future<Output = Result<TurnEntries, ApiError>> + Send + 'static {
    reader().newest_entries(key, turn, limit)
}

/// `GET /api/sessions/{key}/turns/{turn}/entries?after_revision=N`, every page: with `after_revision`,
/// only the entries changed after that revision (docs/api.md "Dashboard reads"); 409 when it is past the
/// turn's latest revision.
pub fn turn_entries_since(
    key: &str,
    turn: &str,
    after_revision: Option<i64>,
) -> impl Future<Output = Result<TurnEntries, ApiError>> + Send + 'static {
    reader().turn_entries(key, turn, after_revision)
}

/// Entries per page of a turn read a page at a time (the entries API's largest `limit`).
pub const ENTRIES_PAGE: usize = 1000;

/// The page of a turn's entries after the cursor `after` (a `next` of the previous page), up to
/// [`ENTRIES_PAGE`] entries.
pub fn turn_entries_page(
    key: &str,
    turn: &str,
    after: &str,
) -> impl Future<Output = Result<TurnEntries, ApiError>> + Send + 'static {
    get_json(format!(
        "{}?limit={ENTRIES_PAGE}&after={}",
        turn_entries_path(key, turn),
        enc(after)
    ))
}

/// `GET /api/operations/{mutation_id}`.
pub fn operation(
    id: &str,
) -> impl Future<Output = Result<OperationMatches, ApiError>> + Send + 'static {
    get_json(format!("/api/operations/{}", enc(id)))
}

/// Changes the operation page shows at once: the newest, with a link to older ones (docs/api.md
/// "Operation history").
pub const HISTORY_PAGE: u32 = 100;

/// `GET /api/sessions/{key}/mutations/{mutation_id}/history?order=newest&limit=100[&after=]` (docs/api.md
/// "Operation history", docs/ledger.md "History"): the operation page's window of the history, the
/// newest [`HISTORY_PAGE`] changes, or with `older` (a `next` of such a window) the ones before it;
/// answered oldest first, as the page lists them, with `next` the cursor of the changes before these.
pub fn operation_history(
    key: &str,
    mutation_id: &str,
    older: Option<&str>,
) -> impl Future<Output = Result<OperationHistory, ApiError>> + Send + 'static {
    let path = history_window_path(key, mutation_id, older);
    let read = get_json::<OperationHistory>(path);
    async move {
        let mut history = read.await?;
        history.changes.reverse();
        Ok(history)
    }
}

/// The API path of [`operation_history`].
pub fn history_window_path(key: &str, mutation_id: &str, older: Option<&str>) -> String {
    let mut path = format!(
        "/api/sessions/{}/mutations/{}/history?order=newest&limit={HISTORY_PAGE}",
        enc(key),
        enc(mutation_id)
    );
    if let Some(after) = older {
        path.push_str(&format!("&after={}", enc(after)));
    }
    path
}

/// `GET /api/search?q=&limit=` (docs/api.md "Search"): sessions and operations whose ids, title or resource
/// id contain `q`, case-insensitively, at most `limit` (1 to 100) of each, newest first; `after` is a
/// `next` of an earlier answer.
pub fn search(
    q: &str,
    limit: u32,
    after: Option<&str>,
) -> impl Future<Output = Result<ledger::wire::SearchResults, ApiError>> + Send + 'static {
    get_json(search_path(q, limit, after))
}

/// The path of [`search`].
pub fn search_path(q: &str, limit: u32, after: Option<&str>) -> String {
    let mut path = format!("/api/search?q={}&limit={}", enc(q), limit.clamp(1, 100));
    if let Some(a) = after {
        path.push_str(&format!("&after={}", enc(a)));
    }
    path
}

/// The API path of an operation's claim (docs/api.md "Claims"): `POST` takes it, `DELETE` releases it.
pub fn claim_path(key: &str, mutation_id: &str) -> String {
    format!(
        "/api/sessions/{}/mutations/{}/claim",
        enc(key),
        enc(mutation_id)
    )
}

/// What taking or releasing a claim came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimAnswer {
    /// 201 or 200: the caller holds it now.
    Held,
    /// 204: nobody holds it now.
    Released,
    /// 409 `already_claimed`: another staff member holds it (their name, when the answer said).
    Taken(Option<String>),
    /// Any other answer, in words for the page.
    Failed(String),
}

/// Reads a claim answer: `status` and its body.
pub fn claim_answer(status: u16, body: &str) -> ClaimAnswer {
    match status {
        200 | 201 => ClaimAnswer::Held,
        204 => ClaimAnswer::Released,
        409 => {
            // `{"error": {"code": "already_claimed", …, "claim": {"by", "at"}}}` (docs/api.md "Claims").
            let by = serde_json::from_str::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.pointer("/error/claim/by")?.as_str().map(str::to_owned));
            ClaimAnswer::Taken(by)
        }
        403 => ClaimAnswer::Failed("Only signed-in staff can claim an operation.".to_owned()),
        // `too_many_claims` (docs/api.md "Claims"): the caller's 10 claims and releases of a minute.
        429 => ClaimAnswer::Failed(
            "You claimed or released this operation 10 times in the last minute. Nothing was changed: wait a minute, then try again."
                .to_owned(),
        ),
        s => ClaimAnswer::Failed(
            decode::<serde_json::Value>(s, body)
                .err()
                .map(|e| e.describe())
                .unwrap_or_else(|| format!("The server answered {s}.")),
        ),
    }
}

/// Takes (`take`) or releases the claim on an operation from the browser (`POST` / `DELETE`
/// [`claim_path`], with the page's sign-in cookie; the browser sends the `Origin` the server checks).
#[cfg(feature = "hydrate")]
pub async fn claim(key: &str, mutation_id: &str, take: bool) -> ClaimAnswer {
    let url = claim_path(key, mutation_id);
    let request = if take {
        gloo_net::http::Request::post(&url)
    } else {
        gloo_net::http::Request::delete(&url)
    };
    match request.send().await {
        Err(e) => ClaimAnswer::Failed(ApiError::Network(e.to_string()).describe()),
        Ok(r) => {
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            claim_answer(status, &body)
        }
    }
}

/// The export of a session as JSON Lines (docs/api.md "Export"): the records, and with `history` one
/// history answer per operation after them.
pub fn export_url(key: &str, history: bool) -> String {
    let mut u = format!("/api/sessions/{}/export", enc(key));
    if history {
        u.push_str("?history=true");
    }
    u
}

/// The replay URL of a turn: with `after` when a cursor is held, without for a full replay.
pub fn replay_url(key: &str, turn: &str, after: Option<i64>) -> String {
    let mut u = format!(
        "/api/mutation-events?session_id={}&logical_turn_id={}",
        enc(key),
        enc(turn)
    );
    if let Some(a) = after {
        u.push_str(&format!("&after={a}"));
    }
    u
}

/// The live stream URL of a session.
pub fn run_events_url(key: &str) -> String {
    format!("/api/run-events?session_id={}", enc(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> ApiError {
        decode::<SessionTurns>(status, body).unwrap_err()
    }

    #[test]
    fn a_page_is_4xx_for_a_client_mistake_and_502_only_for_a_fault() {
        let not_found = answer(
            404,
            r#"{"error":{"code":"session_not_found","message":"unknown session","field":"session_id"}}"#,
        );
        assert_eq!(
            not_found,
            ApiError::NotFound {
                code: "session_not_found".into(),
                message: "unknown session".into()
            }
        );
        assert_eq!(not_found.page_status(), 404);
        let bad = answer(
            400,
            r#"{"error":{"code":"invalid_parameter","message":"session_id: must not be empty","field":"session_id"}}"#,
        );
        assert_eq!(bad.page_status(), 400);
        assert_eq!(answer(422, "{}").page_status(), 422);
        assert_eq!(
            answer(
                500,
                r#"{"error":{"code":"internal","message":"internal error"}}"#
            )
            .page_status(),
            502
        );
        assert_eq!(answer(503, "busy").page_status(), 503);
        assert_eq!(answer(200, "not json").page_status(), 502);
        assert_eq!(ApiError::Network("refused".into()).page_status(), 502);
    }

    #[test]
    fn a_claim_held_by_another_names_who_holds_it() {
        assert_eq!(claim_answer(201, "{}"), ClaimAnswer::Held);
        assert_eq!(claim_answer(200, "{}"), ClaimAnswer::Held);
        assert_eq!(claim_answer(204, ""), ClaimAnswer::Released);
        let taken = r#"{"error":{"code":"already_claimed","message":"bo is already on it (since 2026-12-02T10:00:00Z)","claim":{"by":"bo","at":"2026-12-02T10:00:00Z"}}}"#;
        assert_eq!(
            claim_answer(409, taken),
            ClaimAnswer::Taken(Some("bo".into()))
        );
        assert_eq!(claim_answer(409, "{}"), ClaimAnswer::Taken(None));
        assert_eq!(
            claim_answer(
                429,
                r#"{"error":{"code":"too_many_claims","message":"you claimed or released this operation 10 times in the last minute; nothing was changed, try again after Retry-After seconds"}}"#
            ),
            ClaimAnswer::Failed("You claimed or released this operation 10 times in the last minute. Nothing was changed: wait a minute, then try again.".into())
        );
        assert_eq!(
            claim_answer(503, "busy"),
            ClaimAnswer::Failed(
                "The ledger is busy or its database cannot be reached. Try again in a moment."
                    .into()
            )
        );
        assert_eq!(
            claim_answer(
                403,
                r#"{"error":{"code":"staff_only","message":"staff only"}}"#
            ),
            ClaimAnswer::Failed("Only signed-in staff can claim an operation.".into())
        );
    }

    #[test]
    fn errors_read_in_words_without_the_apis_hints_for_programs() {
        let signed_out = answer(
            401,
            r#"{"error":{"code":"unauthorized","message":"a credential is required: Authorization: Bearer <host or staff token>"}}"#,
        );
        assert!(signed_out.signed_out());
        assert_eq!(
            signed_out.describe(),
            "Your sign-in has ended, so nothing more can be shown. Sign in again to go on."
        );
        assert_eq!(
            ApiError::Network("TypeError: Failed to fetch".into()).describe(),
            "The server cannot be reached. Check that it is running and that this device is online."
        );
        for e in [
            signed_out,
            ApiError::Network("TypeError: Failed to fetch".into()),
        ] {
            assert!(!e.describe().contains("Bearer"));
            assert!(!e.describe().contains("TypeError"));
        }
    }
}
