//! What a request path is, for access ([`PathClass`]): open, the host API, a read API or a page.

/// What a path is, for access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathClass {
    /// Open in every mode: `/healthz`, `/sign-in`, `/sign-out`, `/v/{token}`, static assets (`/pkg/`,
    /// [`INSTALL_FILES`]), `/api/openapi.json`.
    Open,
    /// The host write API: the host token only.
    Host,
    /// Any other `/api` path, and `/metrics`: a read API.
    Api,
    /// A dashboard page.
    Page,
}

/// The files that make the dashboard installable, its offline pages (`public/`: the device is offline,
/// the server cannot be reached) and the script that keeps a form posted while the server cannot be
/// reached (`/forms.js`): nobody's data. A browser fetches the manifest's icons without cookies, and the
/// service worker and the sign-in form's script must load before anyone signs in.
pub const INSTALL_FILES: [&str; 12] = [
    "/manifest.webmanifest",
    "/icon.svg",
    "/icon-192.png",
    "/icon-512.png",
    "/icon-maskable-512.png",
    "/apple-touch-icon.png",
    "/sw.js",
    "/sw-register.js",
    "/offline.html",
    "/unreachable.html",
    "/offline.css",
    "/forms.js",
];

/// `GET /metrics` (docs/api.md "Metrics"): a read API, so open where reads are open and otherwise 401
/// JSON without a credential (never the page's redirect to sign-in: a scraper follows no form).
pub const METRICS_PATH: &str = "/metrics";

/// Classifies a request path.
pub fn classify(path: &str) -> PathClass {
    const OPEN_EXACT: [&str; 5] = [
        "/healthz",
        "/sign-in",
        "/sign-out",
        "/api/openapi.json",
        "/favicon.ico",
    ];
    if OPEN_EXACT.contains(&path)
        || INSTALL_FILES.contains(&path)
        || path.starts_with("/v/")
        || path.starts_with("/pkg/")
    {
        PathClass::Open
    } else if path == "/api/host" || path.starts_with("/api/host/") {
        PathClass::Host
    } else if path == "/api" || path.starts_with("/api/") || path == METRICS_PATH {
        PathClass::Api
    } else {
        PathClass::Page
    }
}

/// Whether `path` is an operator form of the operation page:
/// `/sessions/{session_key}/operations/{mutation_id}/notes` or `…/reconciliation`.
pub fn is_operator_form(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/sessions/") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    matches!(
        parts.as_slice(),
        [key, "operations", id, "notes" | "reconciliation"] if !key.is_empty() && !id.is_empty()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified() {
        for (path, class) in [
            ("/healthz", PathClass::Open),
            ("/sign-in", PathClass::Open),
            ("/sign-out", PathClass::Open),
            ("/v/abc", PathClass::Open),
            ("/pkg/outcomes.wasm", PathClass::Open),
            ("/api/openapi.json", PathClass::Open),
            ("/manifest.webmanifest", PathClass::Open),
            ("/icon-192.png", PathClass::Open),
            ("/sw.js", PathClass::Open),
            ("/offline.html", PathClass::Open),
            ("/offline.html/x", PathClass::Page),
            ("/api/host/batch", PathClass::Host),
            ("/api/host", PathClass::Host),
            ("/api/hostile", PathClass::Api),
            ("/api/sessions", PathClass::Api),
            ("/api", PathClass::Api),
            ("/metrics", PathClass::Api),
            ("/metrics/x", PathClass::Page),
            ("/", PathClass::Page),
            ("/sign-in/x", PathClass::Page),
            ("/find", PathClass::Page),
            ("/healthz/x", PathClass::Page),
        ] {
            assert_eq!(classify(path), class, "{path}");
        }
    }

    #[test]
    fn operator_forms_are_known_by_their_path() {
        for yes in [
            "/sessions/a/operations/m/notes",
            "/sessions/a%2Fb/operations/m%3A1/reconciliation",
        ] {
            assert!(is_operator_form(yes), "{yes}");
        }
        for no in [
            "/sessions/a/operations/m",
            "/sessions/a/operations/m/notes/x",
            "/sessions//operations/m/notes",
            "/sessions/a/turns/m/notes",
            "/api/sessions/a/mutations/m/notes",
            "/sign-in",
        ] {
            assert!(!is_operator_form(no), "{no}");
        }
    }
}
