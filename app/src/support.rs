//! Where an end user quotes an operation id (docs/design.md "What the person sees"): the server's
//! `--support-contact` (an `https:` or `mailto:` URL) and `--support-label`, shown as a link beside every
//! id to quote on the pages; without it the pages say "the support of the service you used".
//!
//! The server puts it in the page's context ([`Support`]) and in the document's head as
//! `<meta name="support-contact" content="<url>">` and `<meta name="support-label" content="<label>">`
//! ([`SupportMeta`]); the browser reads those two once, so both render the same links.

use leptos::prelude::*;

/// A support contact: the link's address and its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportContact {
    /// An `https:` or `mailto:` URL (checked by the server at start).
    pub url: String,
    /// What the link reads, e.g. `help.example.com` or `Example support`.
    pub label: String,
}

/// The page's support contact, in context (server side); `Support(None)` when there is none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Support(pub Option<SupportContact>);

/// What the pages say instead of a link when the server names no contact.
pub const NO_CONTACT: &str = "the support of the service you used";

/// The support contact of this page: from context on the server, from the document's head in the
/// browser (read once).
pub fn contact() -> Option<SupportContact> {
    #[cfg(feature = "hydrate")]
    {
        thread_local! {
            static READ: Option<SupportContact> = from_head();
        }
        READ.with(Clone::clone)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        use_context::<Support>().and_then(|s| s.0)
    }
}

#[cfg(feature = "hydrate")]
fn from_head() -> Option<SupportContact> {
    let doc = web_sys::window()?.document()?;
    let meta = |name: &str| {
        doc.query_selector(&format!("meta[name=\"{name}\"]"))
            .ok()
            .flatten()
            .and_then(|m| m.get_attribute("content"))
    };
    Some(SupportContact {
        url: meta("support-contact")?,
        label: meta("support-label")?,
    })
}

/// The two `<meta>` elements of the document's head naming the support contact (nothing without one).
#[component]
pub fn SupportMeta() -> impl IntoView {
    contact().map(|c| {
        view! {
            <meta name="support-contact" content=c.url/>
            <meta name="support-label" content=c.label/>
        }
    })
}

/// The support contact as a link (`a.support-contact`, opening apart from the page), or
/// [`NO_CONTACT`] as text.
#[component]
pub fn SupportLink() -> impl IntoView {
    match contact() {
        Some(c) => view! {
            <a class="support-contact underline underline-offset-2" href=c.url rel="external noopener noreferrer" target="_blank">{c.label}</a>
        }
        .into_any(),
        None => view! { <span class="support-contact">{NO_CONTACT}</span> }.into_any(),
    }
}
