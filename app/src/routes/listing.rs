//! What the paged listings share (docs/design.md "Read APIs", "What the person sees"): filters and the
//! page cursor live in the page's own address (`?prefix=…&after=…`), are passed on to the API as they
//! are, and each page says how many match in all ("50 of 218") with a link to the next page.

use leptos::prelude::*;

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
    noun: &'static str,
) -> impl IntoView {
    let count = format!("Showing {shown} of {total} {noun}");
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
}
