//! One page per module.

pub mod find;
pub mod home;
pub mod lookup;
pub mod operation;
pub mod session;
pub mod turn;
pub mod turns;
pub mod unknowns;

use leptos::prelude::*;

/// Segment `index` of the page's path (`/sessions/{key}/turns/{turn}`: the key is 2, the turn 4), decoded
/// exactly once from the address the browser sent ([`crate::address`]; never the router's parameter map,
/// which decodes twice). "" when absent.
pub fn param(index: usize) -> Memo<String> {
    let value = crate::address::segment(index);
    Memo::new(move |_| value.clone())
}

/// The text of a page's `<Title>`, from `text`, HTML-escaped on the server.
///
/// On the server the text is computed once, now, while the page renders inside its request's reactive
/// owner, and handed to the title as a plain string. The server integration reads the title after the
/// page rendered, outside that owner: a closure reading a route parameter (an arena-allocated memo) there
/// reads whichever request's arena happens to be current on that thread, and under concurrent requests
/// that panics with "reactive value … already disposed" and drops the response. In the browser the title
/// stays reactive, so it follows client-side navigation.
pub fn page_title(
    text: impl Fn() -> String + Send + Sync + 'static,
) -> leptos::text_prop::TextProp {
    #[cfg(feature = "ssr")]
    {
        // leptos_meta writes the server-side title into the document as it is, unescaped: a route
        // parameter such as `x</title><meta http-equiv=refresh …>` would otherwise become markup.
        leptos::text_prop::TextProp::from(html_escape::encode_text(&text()).into_owned())
    }
    #[cfg(not(feature = "ssr"))]
    {
        leptos::text_prop::TextProp::from(text)
    }
}

/// The page paths, built in [`crate::address`] beside the reading of them (the components link to
/// them too).
pub use crate::address::{history_href, operation_href, session_href, turn_href, turns_href};
