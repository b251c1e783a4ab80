//! The page's address exactly as the browser sent it, decoded once (docs/design.md "What the person sees": ids round-trip).
//!
//! The router's own parameter maps cannot be trusted with ids: leptos_router percent-decodes a route
//! parameter and a query value a second time (and a link it follows in the browser a third, through
//! `decodeURI`), so an id holding `%41` opened the page of `A`, and `%2F`, `%25` or `+` were mangled. Pages
//! therefore read their ids here: from the raw request path and query on the server
//! (`http::request::Parts`), from `window.location` in the browser, each path segment percent-decoded once
//! and the query parsed as `application/x-www-form-urlencoded` (a plain GET form's encoding). Links that
//! carry an id are followed by the browser (`rel="external"` on every link to a page path built here,
//! [`session_href`] and its siblings) rather than by the router, so the address a page reads is always the one its link encoded.

/// The raw path (`/sessions/a%2Fb/turns/t`), not decoded.
pub fn raw_path() -> String {
    raw().0
}

/// The raw query string without `?` ("" when none), not decoded.
pub fn raw_query() -> String {
    raw().1
}

#[cfg(feature = "ssr")]
fn raw() -> (String, String) {
    match leptos::prelude::use_context::<http::request::Parts>() {
        Some(parts) => (
            parts.uri.path().to_owned(),
            parts.uri.query().unwrap_or_default().to_owned(),
        ),
        None => (String::new(), String::new()),
    }
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn raw() -> (String, String) {
    let location = web_sys::window().map(|w| w.location());
    let path = location
        .as_ref()
        .and_then(|l| l.pathname().ok())
        .unwrap_or_default();
    let search = location
        .as_ref()
        .and_then(|l| l.search().ok())
        .unwrap_or_default();
    (path, search.strip_prefix('?').unwrap_or(&search).to_owned())
}

#[cfg(not(any(feature = "ssr", feature = "hydrate")))]
fn raw() -> (String, String) {
    (String::new(), String::new())
}

/// Segment `index` of `path` (`/sessions/{key}`: the key is 2), percent-decoded once; bytes that are not
/// UTF-8 once decoded become U+FFFD (such an id could never have been stored). "" when absent.
pub fn segment_of(path: &str, index: usize) -> String {
    let raw = path.split('/').nth(index).unwrap_or_default();
    String::from_utf8_lossy(&urlencoding::decode_binary(raw.as_bytes())).into_owned()
}

/// The first value of query parameter `name` in `query` (form-decoded once: `+` is a space), if any.
pub fn query_value_of(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Segment `index` of this page's path, decoded once (see [`segment_of`]).
pub fn segment(index: usize) -> String {
    segment_of(&raw_path(), index)
}

/// Query parameter `name` of this page's address, decoded once (see [`query_value_of`]).
pub fn query_value(name: &str) -> Option<String> {
    query_value_of(&raw_query(), name)
}

/// The page path of a session.
pub fn session_href(key: &str) -> String {
    format!("/sessions/{}", crate::api::enc(key))
}

/// The page path of a session's turns, every one, a page at a time (`?after=` for a later page).
pub fn turns_href(key: &str) -> String {
    format!("/sessions/{}/turns", crate::api::enc(key))
}

/// The page path of a logical turn.
pub fn turn_href(key: &str, turn: &str) -> String {
    format!(
        "/sessions/{}/turns/{}",
        crate::api::enc(key),
        crate::api::enc(turn)
    )
}

/// The page path of an operation.
pub fn operation_href(id: &str) -> String {
    format!("/operations/{}", crate::api::enc(id))
}

/// The page path of one operation of a session: its history and the operator actions.
pub fn history_href(key: &str, mutation_id: &str) -> String {
    format!(
        "/sessions/{}/operations/{}",
        crate::api::enc(key),
        crate::api::enc(mutation_id)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::enc;

    /// Ids the links must carry through unchanged: `%41`, `%25`, `%2F`, `/`, spaces, `+`, non-ASCII, and
    /// 256 bytes.
    fn hard_ids() -> Vec<String> {
        vec![
            "pct%41".into(),
            "pct%2541".into(),
            "a%2Fb".into(),
            "a/b/c".into(),
            "two words".into(),
            "a+b".into(),
            "op%20pct%2F%zz".into(),
            "Grüße-ключ-鍵".into(),
            "é".repeat(128),
            "?#&=;".into(),
        ]
    }

    #[test]
    fn every_page_path_decodes_back_to_the_exact_ids() {
        for key in hard_ids() {
            for other in hard_ids() {
                assert_eq!(segment_of(&session_href(&key), 2), key);
                let turn = turn_href(&key, &other);
                assert_eq!(
                    (segment_of(&turn, 2), segment_of(&turn, 4)),
                    (key.clone(), other.clone())
                );
                let history = history_href(&key, &other);
                assert_eq!(
                    (segment_of(&history, 2), segment_of(&history, 4)),
                    (key.clone(), other.clone())
                );
            }
        }
        assert_eq!("é".repeat(128).len(), 256);
    }

    #[test]
    fn a_query_value_decodes_once_as_a_form_would_send_it() {
        for id in hard_ids() {
            assert_eq!(
                query_value_of(&format!("x=1&q={}", enc(&id)), "q").as_deref(),
                Some(id.as_str())
            );
        }
        // A GET form sends a space as `+` and a `+` as `%2B`.
        assert_eq!(
            query_value_of("q=op+pct%252F%25zz", "q").as_deref(),
            Some("op pct%2F%zz")
        );
        assert_eq!(query_value_of("q=a%2Bb", "q").as_deref(), Some("a+b"));
        assert_eq!(query_value_of("other=1", "q"), None);
    }

    #[test]
    fn a_segment_that_is_not_utf8_once_decoded_is_marked_not_guessed() {
        assert_eq!(segment_of("/sessions/%FF", 2), "\u{FFFD}");
        assert_eq!(segment_of("/sessions", 2), "");
    }
}
