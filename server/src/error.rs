//! The server's one error type, mapped once to an HTTP status and the JSON body
//! `{"error": {"code", "message", "field"?, "current"?}}`. Internal errors are logged, never leaked.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use ledger::wire::{ErrorBody, ErrorDetail};
use ledger::LedgerError;

/// An API error: a status, a machine code, a sentence, and the field it concerns where there is one.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// Boxed: a 409 carries the entry's state, and errors travel through every handler's `Result`.
    pub detail: Box<ErrorDetail>,
    /// `Retry-After` in seconds; every 503 has [`RETRY_AFTER_SECS`] when this is `None` (storage faults
    /// [`STORAGE_RETRY_AFTER_SECS`]).
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    fn new(
        status: StatusCode,
        code: &str,
        message: impl Into<String>,
        field: Option<&str>,
    ) -> Self {
        ApiError {
            status,
            detail: Box::new(ErrorDetail {
                code: code.to_owned(),
                message: message.into(),
                field: field.map(str::to_owned),
                current: None,
                claim: None,
            }),
            retry_after_secs: None,
        }
    }

    /// 400: a required query parameter is missing.
    pub fn missing_parameter(field: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "missing_parameter",
            format!("the {field} parameter is required"),
            Some(field),
        )
    }

    /// 400: a parameter or body is malformed.
    pub fn bad_request(code: &str, message: impl Into<String>, field: Option<&str>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message, field)
    }

    /// 422: a field breaks a rule.
    pub fn invalid_field(field: &str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            message,
            Some(field),
        )
    }

    /// 401 on the host write API: no valid host token.
    pub fn host_token_required() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid host token is required: Authorization: Bearer <host token>",
            None,
        )
    }

    /// 401 on a read API: no valid credential (docs/access.md).
    pub fn credential_required() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a credential is required: Authorization: Bearer <host or staff token>, a staff sign-in, or a viewer link",
            None,
        )
    }

    /// 403: the caller is known but this is not theirs to do (`code` says why).
    pub fn forbidden(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message, None)
    }

    /// 403 `staff_only`: an operator action (a note, a reconciliation by staff) asked by a caller who is
    /// not staff: the host, a viewer, or nobody in open access mode (docs/access.md "Operator actions").
    pub fn staff_only() -> Self {
        Self::forbidden(
            "staff_only",
            "only staff may do this: sign in, or send a staff API token (Authorization: Bearer <staff token>)",
        )
    }

    /// 429: too many failed credentials from this client; `Retry-After` says when the next try counts.
    pub fn too_many_failures(wait: std::time::Duration) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_failures",
            "too many failed credentials from this address; wait, then try again with a valid one",
            None,
        );
        e.retry_after_secs = Some(whole_secs(wait));
        e
    }

    /// 405 for a method the path does not answer.
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this endpoint does not answer this method",
            None,
        )
    }

    /// 404 for a path that names no endpoint.
    pub fn no_route() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint", None)
    }

    /// 503 with `Retry-After` (seconds, [`RETRY_AFTER_SECS`]): the server is at a limit or the ledger is
    /// busy; nothing was changed and the same request may be sent again.
    pub fn unavailable(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message, None)
    }

    /// 413 `body_too_large`: the body is over `http::write::BODY_LIMIT_BYTES`.
    pub fn body_too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            "the request body is over the 2 MiB limit",
            None,
        )
    }

    /// 500, with nothing of the cause in the body.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the server log",
            None,
        )
    }
}

impl From<LedgerError> for ApiError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::Invalid { field, message } => ApiError::invalid_field(&field, message),
            LedgerError::SessionNotFound => Self::new(
                StatusCode::NOT_FOUND,
                "session_not_found",
                "unknown session",
                Some("session_id"),
            ),
            LedgerError::SessionExpired => Self::new(
                StatusCode::NOT_FOUND,
                "session_expired",
                "the session has expired; its history is no longer available",
                None,
            ),
            LedgerError::TurnNotFound => Self::new(
                StatusCode::NOT_FOUND,
                "turn_not_found",
                "unknown logical turn",
                None,
            ),
            LedgerError::MutationNotFound => Self::new(
                StatusCode::NOT_FOUND,
                "mutation_not_found",
                "unknown mutation",
                None,
            ),
            LedgerError::CommissionedAfterNotFound => Self::new(
                StatusCode::NOT_FOUND,
                "mutation_not_found",
                "commissioned_after names no other mutation recorded in this session",
                Some("commissioned_after"),
            ),
            LedgerError::Refused { refusal, current } => ApiError {
                status: StatusCode::CONFLICT,
                detail: Box::new(ErrorDetail {
                    code: refusal.code().to_owned(),
                    message: refusal.message().to_owned(),
                    field: None,
                    current: Some(*current),
                    claim: None,
                }),
                retry_after_secs: None,
            },
            LedgerError::AlreadyClaimed { claim } => ApiError {
                status: StatusCode::CONFLICT,
                detail: Box::new(ErrorDetail {
                    code: "already_claimed".to_owned(),
                    message: format!("{} is already on it (since {})", claim.by, claim.at),
                    field: None,
                    current: None,
                    claim: Some(claim),
                }),
                retry_after_secs: None,
            },
            LedgerError::TooManyClaims { retry_after_ms } => {
                let mut e = Self::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_claims",
                    format!(
                        "you claimed or released this operation {} times in the last minute; nothing was changed, try again after Retry-After seconds",
                        ledger::error::CLAIMS_PER_MINUTE
                    ),
                    None,
                );
                e.retry_after_secs = Some(whole_secs(std::time::Duration::from_millis(
                    u64::try_from(retry_after_ms).unwrap_or(1),
                )));
                e
            }
            LedgerError::CursorAhead { cursor, latest } => Self::new(
                StatusCode::CONFLICT,
                "cursor_ahead",
                format!("cursor {cursor} is past the turn's latest revision {latest}"),
                Some("after"),
            ),
            LedgerError::Busy => {
                tracing::warn!(
                    "ledger busy: no lock or connection free within the configured wait"
                );
                ApiError::unavailable(
                    "busy",
                    "the ledger is busy (another writer holds its write lock, or every connection is in use); nothing was changed, retry later",
                )
            }
            LedgerError::StorageFull => {
                tracing::warn!("write refused: the ledger's storage is full");
                let mut e = ApiError::unavailable(
                    "storage_full",
                    "the ledger's storage is full; nothing was changed, retry later (writes resume by themselves once space is freed)",
                );
                e.retry_after_secs = Some(STORAGE_RETRY_AFTER_SECS);
                e
            }
            LedgerError::StorageUnavailable => {
                tracing::warn!("write refused: the ledger's storage refuses writes");
                let mut e = ApiError::unavailable(
                    "storage_unavailable",
                    "the ledger's storage refuses writes (read-only or failing); nothing was changed, retry later",
                );
                e.retry_after_secs = Some(STORAGE_RETRY_AFTER_SECS);
                e
            }
            LedgerError::Unavailable => {
                tracing::warn!("ledger database unreachable: the connection was lost");
                ApiError::unavailable(
                    "unavailable",
                    "the ledger's database cannot be reached; nothing was changed, retry later",
                )
            }
            // A fault of the ledger's own code: answered as a store failure is (500 `internal`, nothing
            // of the cause in the body), logged with what did not hold.
            LedgerError::Internal(what) => {
                tracing::error!(error = %what, "ledger fault: an invariant of its code did not hold");
                ApiError::internal()
            }
            other => {
                tracing::error!(error = %other, "ledger failure");
                ApiError::internal()
            }
        }
    }
}

/// `wait` in whole seconds, rounded up (a `Retry-After` must not send a client back too early).
pub fn whole_secs(wait: std::time::Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// `Retry-After` of every 503 answer, in seconds.
pub const RETRY_AFTER_SECS: u64 = 1;

/// `Retry-After` of a 503 `storage_full` or `storage_unavailable` answer (and of `/healthz` during such a
/// fault), in seconds: freeing space takes longer than a lock is held.
pub const STORAGE_RETRY_AFTER_SECS: u64 = 5;

/// Marks a response as a 503 `busy` answer ([`ApiError`] sets it), for `metrics::count_answers`.
#[derive(Debug, Clone, Copy)]
pub struct BusyAnswer;

impl ApiError {
    /// Whether this is the 503 `busy` answer (counted by `GET /metrics` as `outcomes_busy_total`; an
    /// answer built from it marks itself with [`BusyAnswer`]).
    pub fn is_busy(&self) -> bool {
        self.status == StatusCode::SERVICE_UNAVAILABLE && self.detail.code == "busy"
    }

    /// The `Retry-After` this error's answer carries, in seconds (at least 1): its own wait, else
    /// [`RETRY_AFTER_SECS`] on every 503; `None` for other errors. The JSON answer and the operator
    /// forms' refusal page both send it.
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after_secs
            .or((self.status == StatusCode::SERVICE_UNAVAILABLE).then_some(RETRY_AFTER_SECS))
            .map(|secs| secs.max(1))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = self.retry_after();
        let busy = self.is_busy();
        let mut response = (
            self.status,
            Json(ErrorBody {
                error: *self.detail,
            }),
        )
            .into_response();
        if let Some(secs) = retry_after {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs),
            );
        }
        if busy {
            response.extensions_mut().insert(BusyAnswer);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fault of the ledger's own code is answered exactly as a store failure: 500 `internal`, the same
    /// body, no `Retry-After`, nothing of the cause in the body.
    #[test]
    fn an_internal_fault_is_answered_as_a_store_failure() {
        let store = ApiError::from(LedgerError::Store(sqlx::Error::RowNotFound));
        let internal = ApiError::from(LedgerError::Internal("the secret cause".into()));
        for e in [&store, &internal] {
            assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(e.detail.code, "internal");
            assert_eq!(e.detail.message, "internal error; see the server log");
            assert_eq!((e.detail.field.as_deref(), e.retry_after()), (None, None));
        }
        let body = |e: ApiError| serde_json::to_value(ErrorBody { error: *e.detail }).unwrap();
        assert_eq!(body(internal), body(store));
    }
}
