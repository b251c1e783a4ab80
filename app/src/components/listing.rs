//! What the paged listings share (docs/api.md "Paging", docs/design.md "What the person sees"): filters and the
//! page cursor live in the page's own address (`?prefix=…&after=…`), are passed on to the API as they
//! are (a mark of an invisible character, `⟨U+200B⟩`, read back as that character), and each page says
//! how many match in all ("50 of 218") with a link to the next page.

use std::sync::{Arc, Mutex};

use leptos::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::api;
use crate::components::refresh_ticker;
use crate::components::time::now_rfc3339;

/// Classes of a filter form's field; [`ID_FIELD`] for one holding an id or a tool name (monospace).
pub const FIELD: &str = "w-full rounded border border-slate-400 bg-white px-2 py-1 text-sm dark:border-slate-600 dark:bg-slate-900";
pub const ID_FIELD: &str = "w-full rounded border border-slate-400 bg-white px-2 py-1 font-mono text-sm dark:border-slate-600 dark:bg-slate-900";

/// One page of a listing (`T`: the API's answer) and when the page read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed<T> {
    #[serde(flatten)]
    pub page: T,
    /// When the page read it (RFC 3339).
    #[serde(default)]
    pub as_of: String,
    /// Set when a later read failed: the page is the last one read (at `as_of`), kept on screen as
    /// "stale since" instead of being replaced by the error.
    #[serde(default)]
    pub stale: Option<Stale>,
}

/// Why a listing shows the last page it read instead of a fresh one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stale {
    /// The server could not be reached (or failed to answer).
    Unreachable,
    /// The read was refused for want of a credential: the sign-in ended.
    SignedOut,
    /// Any other refusal, in words.
    Failed(String),
}

impl Stale {
    fn of(e: &api::ApiError) -> Stale {
        match e {
            api::ApiError::Network(_) => Stale::Unreachable,
            api::ApiError::Status { status, .. } if *status >= 500 => Stale::Unreachable,
            e if e.signed_out() => Stale::SignedOut,
            e => Stale::Failed(e.describe()),
        }
    }
}

/// A listing page's read: the resource (read again at every tick of `refresh`), the filters in force
/// and whether this is a later page.
pub struct Listing<T: Send + Sync + 'static> {
    pub read: Resource<Result<Listed<T>, api::ApiError>>,
    pub refresh: RwSignal<u64>,
    pub filters: Vec<(&'static str, String)>,
    pub later: bool,
}

/// Reads `api_path` with the filters named `filter_names` and the page cursor `after` taken from this
/// page's address, again every [`crate::components::REFRESH_SECS`] and on demand.
pub fn listing<T>(api_path: &'static str, filter_names: &[&'static str]) -> Listing<T>
where
    T: DeserializeOwned + Serialize + Clone + Send + Sync + 'static,
{
    listing_as::<T, T>(api_path, filter_names, filter_to_api, |page| page)
}

/// A filter's value as the API reads it: a time filter (`…_after`, `…_before`: the sessions list's
/// `active_*`, the queue's `settled_*`) typed in a `datetime-local` field becomes RFC 3339 UTC
/// ([`api_time`]); anything else is sent as it is.
pub fn filter_to_api(name: &str, value: String) -> String {
    if name.ends_with("_after") || name.ends_with("_before") {
        api_time(&value)
    } else {
        value
    }
}

/// [`listing`] whose page keeps `shown(answer)` (of the API's answer `A`) rather than the answer itself:
/// what the page renders and hands to the browser for hydration, so a page may keep only what it shows.
/// `to_api(name, value)` turns a filter's value as the address holds it into the value sent to the API
/// (after the marks of invisible characters are read back).
pub fn listing_as<A, T>(
    api_path: &'static str,
    filter_names: &[&'static str],
    to_api: fn(&str, String) -> String,
    shown: fn(A) -> T,
) -> Listing<T>
where
    A: DeserializeOwned + Send + 'static,
    T: DeserializeOwned + Serialize + Clone + Send + Sync + 'static,
{
    listing_with(api_path, filter_names, to_api, shown, &[])
}

/// [`listing_as`] where `api_path` may carry a query of its own (`/api/unknowns?state=in_flight`: what
/// the page always asks), and `defaults` are sent for the filters the address does not give (a page's
/// own default order, `sort=deadline`).
pub fn listing_with<A, T>(
    api_path: &'static str,
    filter_names: &[&'static str],
    to_api: fn(&str, String) -> String,
    shown: fn(A) -> T,
    defaults: &[(&'static str, &'static str)],
) -> Listing<T>
where
    A: DeserializeOwned + Send + 'static,
    T: DeserializeOwned + Serialize + Clone + Send + Sync + 'static,
{
    let filters = asked(filter_names);
    let after = asked(&["after"]);
    // An id or tool typed as the page shows it (`a⟨U+200B⟩b`) filters by the raw id (docs/design.md "What
    // the person sees"); the form keeps what was typed.
    let mut query: Vec<(&'static str, String)> = filters
        .iter()
        .map(|(k, v)| {
            (
                *k,
                to_api(k, crate::components::marks::unmarked(v).into_owned()),
            )
        })
        .collect();
    for (name, value) in defaults {
        if !filters.iter().any(|(k, _)| k == name) {
            query.push((name, (*value).to_owned()));
        }
    }
    query.extend(after.iter().cloned());
    let path = match query_string(&query).strip_prefix('?') {
        Some(q) if api_path.contains('?') => format!("{api_path}&{q}"),
        _ => format!("{api_path}{}", query_string(&query)),
    };
    let refresh = refresh_ticker();
    let reader = api::reader();
    // The last page read, kept so that a failed refresh shows it as stale instead of an error
    // (docs/design.md "What the person sees").
    let last: Arc<Mutex<Option<Listed<T>>>> = Arc::new(Mutex::new(None));
    let kept = last.clone();
    let read = Resource::new(
        move || refresh.get(),
        move |_| {
            let read = reader.get_json::<A>(path.clone());
            let last = kept.clone();
            async move {
                match read.await {
                    Ok(page) => Ok(Listed {
                        page: shown(page),
                        as_of: now_rfc3339(),
                        stale: None,
                    }),
                    Err(e) => match last.lock().ok().and_then(|l| l.clone()) {
                        Some(shown) => Ok(Listed {
                            stale: Some(Stale::of(&e)),
                            ..shown
                        }),
                        None => Err(e),
                    },
                }
            }
        },
    );
    // Every fresh page read (the server-rendered one included, once hydrated) is the one kept.
    Effect::new(move |_| {
        if let Some(Ok(l)) = read.get() {
            if l.stale.is_none() {
                if let Ok(mut kept) = last.lock() {
                    *kept = Some(l);
                }
            }
        }
    });
    Listing {
        read,
        refresh,
        filters,
        later: !after.is_empty(),
    }
}

/// The non-empty values of `names` in this page's address, decoded once ([`crate::address`]).
pub fn asked(names: &[&'static str]) -> Vec<(&'static str, String)> {
    names
        .iter()
        .filter_map(|n| {
            crate::address::query_value(n)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .map(|v| (*n, v))
        })
        .collect()
}

/// A time filter as the API takes it (RFC 3339): a form's `datetime-local` value (`2026-12-03T07:15` or
/// `2026-12-03T07:15:30`, no offset) is read as UTC (`2026-12-03T07:15:00Z`); anything else is passed
/// as it is (the API names a bad one, docs/api.md "Sessions").
pub fn api_time(value: &str) -> String {
    let local = |v: &str| {
        let b = v.as_bytes();
        v.is_ascii()
            && b.len() >= 16
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
            && b[13] == b':'
            && (b.len() == 16 || (b.len() == 19 && b[16] == b':'))
            && b.iter()
                .enumerate()
                .all(|(i, c)| [4, 7, 10, 13, 16].contains(&i) || c.is_ascii_digit())
    };
    match value.len() {
        16 if local(value) => format!("{value}:00Z"),
        19 if local(value) => format!("{value}Z"),
        _ => value.to_owned(),
    }
}

/// A time filter as a `datetime-local` field shows it: the form's own value, or a UTC RFC 3339 time to
/// the second (`2026-12-03T07:15:30.123Z` → `2026-12-03T07:15:30`); "" for what the field cannot show.
pub fn field_time(value: &str) -> String {
    if api_time(value) != value {
        return value.to_owned();
    }
    let head = value.get(..19).unwrap_or_default();
    let utc = value.ends_with('Z') || value.ends_with("+00:00");
    if utc && api_time(head) != head {
        head.to_owned()
    } else {
        String::new()
    }
}

/// `pairs` as a query string (form-encoded; "" when empty), with `?` when not empty.
pub fn query_string(pairs: &[(&str, String)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    format!("?{}", s.finish())
}

/// The value of `name` among `pairs`, or "".
pub fn value_of(pairs: &[(&str, String)], name: &str) -> String {
    pairs
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// "Showing 50 of 218" and the links to the first and the next page (`page_path` with the filters, and
/// `after` for the next).
#[component]
pub fn PageNav(
    shown: usize,
    total: u64,
    next: Option<String>,
    /// The page's path (`/`, `/unknowns`).
    page_path: &'static str,
    /// The filters in force (without `after`).
    filters: Vec<(&'static str, String)>,
    /// Whether this is a later page (`after` was given).
    later: bool,
    /// What is listed, for one and for any other number ("session", "sessions").
    noun: &'static str,
    nouns: &'static str,
) -> impl IntoView {
    let count = format!(
        "Showing {shown} of {}",
        crate::components::count(total, noun, nouns)
    );
    let first = later.then(|| format!("{page_path}{}", query_string(&filters)));
    let next = next.map(|n| {
        let mut q = filters.clone();
        q.push(("after", n));
        format!("{page_path}{}", query_string(&q))
    });
    view! {
        <nav class="page-nav my-3 flex flex-wrap items-center gap-3 text-sm" aria-label="Pages">
            <span class="page-count" data-shown=shown data-total=total>{count}{later.then_some(" (a later page)")}</span>
            {first.map(|href| view! { <a rel="external" class="first-page underline underline-offset-2" href=href>"← First page"</a> })}
            {next.map(|href| view! { <a rel="external" class="next-page underline underline-offset-2" href=href>"Next page →"</a> })}
        </nav>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_round_trip_through_the_query_string() {
        let q = query_string(&[("prefix", "a b&c".into()), ("after", "x+y/z=".into())]);
        assert_eq!(q, "?prefix=a+b%26c&after=x%2By%2Fz%3D");
        let raw = q.trim_start_matches('?');
        assert_eq!(
            crate::address::query_value_of(raw, "prefix").as_deref(),
            Some("a b&c")
        );
        assert_eq!(
            crate::address::query_value_of(raw, "after").as_deref(),
            Some("x+y/z=")
        );
        assert_eq!(query_string(&[]), "");
    }

    #[test]
    fn a_form_time_is_read_as_utc_and_shown_back() {
        assert_eq!(api_time("2026-12-03T07:15"), "2026-12-03T07:15:00Z");
        assert_eq!(api_time("2026-12-03T07:15:30"), "2026-12-03T07:15:30Z");
        assert_eq!(
            api_time("2026-12-03T07:15:30+01:00"),
            "2026-12-03T07:15:30+01:00"
        );
        assert_eq!(api_time("yesterday"), "yesterday");
        assert_eq!(api_time("2026-12-03 07:15"), "2026-12-03 07:15");
        assert_eq!(field_time("2026-12-03T07:15"), "2026-12-03T07:15");
        assert_eq!(
            field_time("2026-12-03T07:15:30.123Z"),
            "2026-12-03T07:15:30"
        );
        assert_eq!(field_time("2026-12-03T07:15:30+01:00"), "");
        assert_eq!(field_time("yesterday"), "");
    }
}
