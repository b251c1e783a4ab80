//! The support queue (docs/design.md "The unknowns queue"): every open unknown outcome across sessions as a
//! dense table for staff, one 16 px row each (50 rows on one 1280×800 screen), 200 rows a page. Sorted and
//! filtered in the address, as `GET /api/unknowns` names them (docs/api.md "Support queue"):
//! `?tool_like=&session_like=` (case-insensitive substrings), `tool=&session_key=` (exact),
//! `min_age_secs=`, `settled_after=&settled_before=` (RFC 3339, or a form's `YYYY-MM-DDTHH:MM` read as
//! UTC), `sort=age|tool|session&order=asc|desc`, `after=`; "as of" the read, refreshing itself.
//! Rows can be selected to open several operation pages at once, and staff claim one ("I'm on it"):
//! `POST /api/sessions/{key}/mutations/{id}/claim` once interactive, a form post without JavaScript.
//!
//! The page keeps only what the table shows ([`QueuePage`], short field names), so that 200 rows stay
//! within the page budget of 150 KB of HTML, the hydration data included.

use ledger::wire::{Claim, UnknownsPage};
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::components::marks::mark;
use crate::components::{ApiErrorPanel, AsOf};
use crate::routes::listing::{
    listing_as, query_string, value_of, Listing, PageNav, FIELD, ID_FIELD,
};
use crate::routes::{history_href, session_href};

/// The filters and the order of the queue, as the API names them (docs/api.md "Support queue").
const FILTERS: [&str; 9] = [
    "tool_like",
    "session_like",
    "tool",
    "session_key",
    "min_age_secs",
    "settled_after",
    "settled_before",
    "sort",
    "order",
];

/// The longest last note a row shows, in characters (the whole note is on the operation page).
pub const LAST_NOTE_CHARS: usize = 80;

/// One row of the queue: what the table shows of an `OperationMatch` of `/api/unknowns`, under short
/// names (they are sent again, once per row, as the page's hydration data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    #[serde(rename = "k")]
    pub session_key: String,
    #[serde(rename = "t")]
    pub turn: String,
    #[serde(rename = "m")]
    pub mutation_id: String,
    #[serde(rename = "o")]
    pub tool: String,
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub age_secs: Option<u64>,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<u64>,
    /// The latest note, cut to [`LAST_NOTE_CHARS`].
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub last_note: Option<String>,
    #[serde(rename = "h", default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
}

/// One page of the queue as the page keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuePage {
    pub rows: Vec<Row>,
    pub next: Option<String>,
    pub total: u64,
}

impl From<UnknownsPage> for QueuePage {
    fn from(page: UnknownsPage) -> Self {
        let rows = page
            .matches
            .into_iter()
            .map(|m| Row {
                session_key: m.session_key,
                turn: m.entry.outcome.logical_turn_id,
                mutation_id: m.entry.outcome.mutation_id,
                tool: m.entry.outcome.tool,
                title: m.entry.outcome.title,
                age_secs: m.age_secs,
                notes: m.notes,
                last_note: m.last_note.map(|n| cut(&n, LAST_NOTE_CHARS)),
                claim: m.claim,
            })
            .collect();
        QueuePage {
            rows,
            next: page.next,
            total: page.total,
        }
    }
}

/// `text` cut to at most `max` characters, the last of them `…` when cut (cutting it again changes nothing).
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// A filter's value as the API takes it: a settle time typed in a form's date and time field
/// (`2026-12-01T18:30`, or with seconds) is read as UTC (`2026-12-01T18:30:00Z`); anything else is sent
/// as it is (the API answers 400 naming the field when it is not RFC 3339).
pub fn to_api(name: &str, value: String) -> String {
    if !name.starts_with("settled_") {
        return value;
    }
    match local_shape(&value) {
        Some(16) => format!("{value}:00Z"),
        Some(19) => format!("{value}Z"),
        _ => value,
    }
}

/// The length of `v` when it is a zone-less date and time as a form's field gives it (16 or 19).
fn local_shape(v: &str) -> Option<usize> {
    let b = v.as_bytes();
    let digits = |r: std::ops::Range<usize>| r.into_iter().all(|i| b[i].is_ascii_digit());
    let ok = (v.len() == 16 || v.len() == 19)
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && (v.len() == 16 || (b[16] == b':' && digits(17..19)));
    ok.then_some(v.len())
}

/// What a date and time field shows for a settle time of the address: the UTC time without its `Z`
/// (`2026-12-01T18:30:00Z` → `2026-12-01T18:30:00`); "" when the field could not show it.
pub fn local_value(v: &str) -> String {
    if local_shape(v).is_some() {
        return v.to_owned();
    }
    match v.strip_suffix('Z') {
        Some(t) if local_shape(t).is_some() => t.to_owned(),
        _ => String::new(),
    }
}

/// An age in the table: `42 s`, `3 min`, `5 h`, `2 d` (rounded down).
pub fn age_short(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

/// The columns the queue sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Age,
    Tool,
    Session,
}

impl SortBy {
    fn name(self) -> &'static str {
        match self {
            SortBy::Age => "age",
            SortBy::Tool => "tool",
            SortBy::Session => "session",
        }
    }

    /// The API's default order of a column: the oldest first (`desc` by age), tools and sessions A→Z.
    fn default_desc(self) -> bool {
        self == SortBy::Age
    }
}

/// The order in force: the column and whether descending (the API's defaults when absent).
pub fn order_of(filters: &[(&'static str, String)]) -> (SortBy, bool) {
    let by = match value_of(filters, "sort").as_str() {
        "tool" => SortBy::Tool,
        "session" => SortBy::Session,
        _ => SortBy::Age,
    };
    let desc = match value_of(filters, "order").as_str() {
        "asc" => false,
        "desc" => true,
        _ => by.default_desc(),
    };
    (by, desc)
}

/// The address of a column header's link: the same filters, sorted by `by`; the column in force turns
/// around, another starts in its default order. A new order starts again at the first page.
pub fn sort_href(filters: &[(&'static str, String)], by: SortBy) -> String {
    let (now, desc) = order_of(filters);
    let desc = if now == by { !desc } else { by.default_desc() };
    let mut q: Vec<(&str, String)> = filters
        .iter()
        .filter(|(k, _)| *k != "sort" && *k != "order")
        .cloned()
        .collect();
    q.push(("sort", by.name().to_owned()));
    q.push(("order", if desc { "desc" } else { "asc" }.to_owned()));
    format!("/unknowns{}", query_string(&q))
}

#[component]
pub fn UnknownsQueuePage() -> impl IntoView {
    let Listing {
        read: queue,
        refresh,
        filters,
        later,
    } = listing_as::<UnknownsPage, QueuePage>("/api/unknowns", &FILTERS, to_api, QueuePage::from);
    let caller = use_context::<crate::CallerResource>();
    // The rows ticked, by their operation page's path: kept across the page's refreshes.
    let selected = RwSignal::new(Vec::<String>::new());
    // What the last claim, copy or bulk open came to, in words.
    let said = RwSignal::new(String::new());
    let blocked = RwSignal::new(Vec::<String>::new());
    view! {
        <Title text="Open unknowns · Outcome ledger"/>
        <h1 class="mb-1 text-2xl font-semibold">"Open unknown outcomes"</h1>
        <p class="mb-3 text-sm opacity-80">"Each stays unknown until evidence about its original attempt reconciles it. Claim one you work on, so that nobody else does it twice."</p>
        <QueueFilters filters=filters.clone()/>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let filters = filters.clone();
                Suspend::new(async move {
                    let staff = match caller {
                        Some(c) => c.0.await.is_ok_and(|c| c.access == "staff"),
                        None => false,
                    };
                    match queue.await {
                        Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                        Ok(q) => {
                            let shown = q.page.rows.len();
                            let empty = (shown == 0).then(|| view! { <p>{if filters.is_empty() { "No open unknown outcomes." } else { "No open unknown outcome matches these filters." }}</p> });
                            view! {
                                <AsOf at=q.as_of.clone() refresh stale=q.stale.clone()/>
                                {empty}
                                <QueueTable rows=q.page.rows filters=filters.clone() staff selected said blocked refresh/>
                                <PageNav shown total=q.page.total next=q.page.next page_path="/unknowns" filters later noun="open unknown" nouns="open unknowns"/>
                            }.into_any()
                        }
                    }
                })
            }}
        </Transition>
    }
}

/// The path and query of this page (where a form post comes back to).
fn this_page() -> String {
    let query = crate::address::raw_query();
    if query.is_empty() {
        "/unknowns".to_owned()
    } else {
        format!("/unknowns?{query}")
    }
}

/// The table, its bulk bar and what the last action said.
#[component]
fn QueueTable(
    rows: Vec<Row>,
    filters: Vec<(&'static str, String)>,
    staff: bool,
    selected: RwSignal<Vec<String>>,
    said: RwSignal<String>,
    blocked: RwSignal<Vec<String>>,
    refresh: RwSignal<u64>,
) -> impl IntoView {
    if rows.is_empty() {
        return ().into_any();
    }
    let (by, desc) = order_of(&filters);
    let hrefs: Vec<String> = rows
        .iter()
        .map(|r| history_href(&r.session_key, &r.mutation_id))
        .collect();
    let header = |col: SortBy, words: &'static str, class: &'static str| {
        let sort = (by == col).then_some(if desc { "descending" } else { "ascending" });
        let arrow = match (by == col, desc) {
            (false, _) => "",
            (true, true) => " ↓",
            (true, false) => " ↑",
        };
        view! { <th scope="col" class=class aria-sort=sort><a rel="external" href=sort_href(&filters, col)>{words}{arrow}</a></th> }
    };
    let count = {
        let hrefs = hrefs.clone();
        Memo::new(move |_| selected.with(|s| hrefs.iter().filter(|h| s.contains(h)).count()))
    };
    let all_ticked = {
        let n = hrefs.len();
        move || count.get() == n
    };
    let tick_all = {
        let hrefs = hrefs.clone();
        move |ev: leptos::ev::Event| {
            let on = event_target_checked(&ev);
            selected.update(|s| {
                s.retain(|h| !hrefs.contains(h));
                if on {
                    s.extend(hrefs.iter().cloned());
                }
            });
        }
    };
    let open_selected = {
        let hrefs = hrefs.clone();
        move |_| {
            let chosen: Vec<String> =
                selected.with(|s| hrefs.iter().filter(|h| s.contains(h)).cloned().collect());
            let refused = open_pages(&chosen);
            let n = chosen.len();
            if refused.is_empty() {
                said.set(format!(
                    "Opened {} in new tabs.",
                    crate::components::count(n as u64, "operation page", "operation pages")
                ));
            } else {
                said.set(format!(
                    "The browser opened {} of {} pages and blocked the rest. Allow pop-ups for this site, or open them here:",
                    n - refused.len(),
                    n
                ));
            }
            blocked.set(refused);
        }
    };
    let next = this_page();
    let body = rows
        .into_iter()
        .zip(hrefs)
        .enumerate()
        .map(|(i, (r, href))| view! { <QueueRow i row=r href staff selected said refresh/> })
        .collect_view();
    view! {
        <div class="bulk mb-2 flex flex-wrap items-center gap-2 text-sm">
            <button type="button" class="open-selected rounded bg-sky-700 px-2 py-0.5 font-semibold text-white hover:bg-sky-800 disabled:opacity-50"
                disabled=move || count.get() == 0 on:click=open_selected>
                {move || format!("Open selected ({})", count.get())}
            </button>
            <button type="button" class="clear-selected rounded border border-slate-400 px-2 py-0.5 hover:bg-slate-100 disabled:opacity-50 dark:border-slate-600 dark:hover:bg-slate-800"
                disabled=move || count.get() == 0 on:click=move |_| { selected.set(Vec::new()); blocked.set(Vec::new()); }>
                "Clear selection"
            </button>
        </div>
        <p class="queue-said mb-2 min-h-5 text-sm" role="status" aria-live="polite">{move || said.get()}</p>
        {move || {
            let b = blocked.get();
            (!b.is_empty()).then(|| view! {
                <ul class="blocked mb-2 ml-4 list-disc text-sm">
                    {b.into_iter().map(|h| view! { <li><a rel="external" target="_blank" class="underline" href=h.clone()>{h.clone()}</a></li> }).collect_view()}
                </ul>
            })
        }}
        <form method="post" class="queue-form">
            <input type="hidden" name="next" value=next/>
            <div class="qs">
                <table class="q">
                    <caption class="sr-only">"Open unknown outcomes, one a row"</caption>
                    <thead>
                        <tr>
                            <th scope="col" class="w-6"><input type="checkbox" class="sel-all" aria-label="Select every row" prop:checked=all_ticked on:change=tick_all/></th>
                            {header(SortBy::Age, "Age", "w-14")}
                            {header(SortBy::Tool, "Tool", "w-40")}
                            <th scope="col">"Title"</th>
                            {header(SortBy::Session, "Session", "w-44")}
                            <th scope="col" class="w-20">"Turn"</th>
                            <th scope="col" class="w-56">"Operation id"</th>
                            <th scope="col" class="w-12">"Notes"</th>
                            <th scope="col" class="w-48">"Last note"</th>
                            <th scope="col" class="w-28">"On it"</th>
                        </tr>
                    </thead>
                    <tbody class="operations">{body}</tbody>
                </table>
            </div>
        </form>
    }
    .into_any()
}

/// One unknown outcome as a row of the table.
#[component]
fn QueueRow(
    i: usize,
    row: Row,
    href: String,
    staff: bool,
    selected: RwSignal<Vec<String>>,
    said: RwSignal<String>,
    refresh: RwSignal<u64>,
) -> impl IntoView {
    let id = format!("r{i}");
    let ticked = {
        let href = href.clone();
        move || selected.with(|s| s.contains(&href))
    };
    let tick = {
        let href = href.clone();
        move |ev: leptos::ev::Event| {
            let on = event_target_checked(&ev);
            selected.update(|s| {
                s.retain(|h| h != &href);
                if on {
                    s.push(href.clone());
                }
            });
        }
    };
    let copy = {
        let raw = row.mutation_id.clone();
        move |_| {
            #[cfg(feature = "hydrate")]
            if let Some(window) = web_sys::window() {
                let _ = window.navigator().clipboard().write_text(&raw);
                said.set(format!("Copied operation id {}", mark(&raw)));
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = &raw;
        }
    };
    let claim_cell = match (&row.claim, staff) {
        (Some(c), _) => {
            view! { <td class="claim" data-by=c.by.clone()>{format!("{} is on it", c.by)}</td> }
                .into_any()
        }
        (None, true) => {
            let action = format!("{href}/claim");
            let (key, mutation_id) = (row.session_key.clone(), row.mutation_id.clone());
            let take = move |ev: leptos::ev::MouseEvent| {
                ev.prevent_default();
                #[cfg(feature = "hydrate")]
                {
                    let (key, mutation_id) = (key.clone(), mutation_id.clone());
                    leptos::task::spawn_local(async move {
                        said.set(claim_words(
                            crate::api::claim(&key, &mutation_id, true).await,
                            &mutation_id,
                        ));
                        refresh.update(|t| *t += 1);
                    });
                }
                #[cfg(not(feature = "hydrate"))]
                let _ = (&key, &mutation_id, said, refresh);
            };
            view! { <td class="claim"><button type="submit" class="take" formaction=action on:click=take>"I'm on it"</button></td> }.into_any()
        }
        (None, false) => view! { <td class="claim"></td> }.into_any(),
    };
    let notes = row
        .notes
        .filter(|n| *n > 0)
        .map(|n| n.to_string())
        .unwrap_or_default();
    view! {
        <tr class="operation" data-mutation-id=row.mutation_id.clone()>
            <td><input type="checkbox" class="sel" aria-labelledby=id.clone() prop:checked=ticked on:change=tick/></td>
            <td class="age">{row.age_secs.map(age_short).unwrap_or_default()}</td>
            <td class="m tool">{mark(&row.tool)}</td>
            <td class="tt">{row.title.as_deref().map(mark).unwrap_or_default()}</td>
            <td class="m"><a rel="external" href=session_href(&row.session_key)>{mark(&row.session_key)}</a></td>
            <td class="m">{mark(&row.turn)}</td>
            <td class="m"><a rel="external" class="op" id=id href=href>{mark(&row.mutation_id)}</a>" "<button type="button" class="cp" aria-label="Copy id" on:click=copy>"⧉"</button></td>
            <td class="notes">{notes}</td>
            <td class="last-note">{row.last_note.as_deref().map(mark).unwrap_or_default()}</td>
            {claim_cell}
        </tr>
    }
}

/// A claim's answer in words, for the queue and the operation page.
pub fn claim_words(answer: crate::api::ClaimAnswer, mutation_id: &str) -> String {
    use crate::api::ClaimAnswer;
    match answer {
        ClaimAnswer::Held => format!("You are on {} now.", mark(mutation_id)),
        ClaimAnswer::Released => format!("Nobody is on {} now.", mark(mutation_id)),
        ClaimAnswer::Taken(Some(by)) => {
            format!("Not claimed: {by} is already on {}.", mark(mutation_id))
        }
        ClaimAnswer::Taken(None) => format!(
            "Not claimed: someone else is already on {}.",
            mark(mutation_id)
        ),
        ClaimAnswer::Failed(why) => format!("Not claimed: {why}"),
    }
}

/// Opens each page in a new tab; the ones the browser refused (a pop-up blocker lets one page open per
/// click) are returned, for the page to list as links.
fn open_pages(hrefs: &[String]) -> Vec<String> {
    #[cfg(feature = "hydrate")]
    {
        let Some(window) = web_sys::window() else {
            return hrefs.to_vec();
        };
        hrefs
            .iter()
            .filter(|h| !matches!(window.open_with_url_and_target(h, "_blank"), Ok(Some(_))))
            .cloned()
            .collect()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        hrefs.to_vec()
    }
}

/// Ages the queue filters by: open at least this long.
const AGES: [(&str, &str); 5] = [
    ("", "Any age"),
    ("300", "5 min or more"),
    ("3600", "1 h or more"),
    ("86400", "1 day or more"),
    ("604800", "7 days or more"),
];

#[component]
fn QueueFilters(filters: Vec<(&'static str, String)>) -> impl IntoView {
    let tool = value_of(&filters, "tool_like");
    let session = value_of(&filters, "session_like");
    let age = value_of(&filters, "min_age_secs");
    let after = local_value(&value_of(&filters, "settled_after"));
    let before = local_value(&value_of(&filters, "settled_before"));
    // Kept as they are when filtering again: the order, and the exact filters a link may carry.
    let kept: Vec<(&str, String)> = ["sort", "order", "tool", "session_key"]
        .into_iter()
        .map(|k| (k, value_of(&filters, k)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let exact: Vec<String> = [("tool", "tool"), ("session_key", "session")]
        .into_iter()
        .filter_map(|(k, words)| {
            let v = value_of(&filters, k);
            (!v.is_empty()).then(|| format!("{words} {}", mark(&v)))
        })
        .collect();
    let without_exact: Vec<(&str, String)> = filters
        .iter()
        .filter(|(k, _)| *k != "tool" && *k != "session_key")
        .cloned()
        .collect();
    view! {
        <form method="get" action="/unknowns" class="filters mb-3 grid gap-2 sm:grid-cols-3 lg:grid-cols-6 lg:items-end" aria-label="Filter the queue">
            <label class="flex flex-col text-sm">"Tool contains"
                <input name="tool_like" type="text" value=tool class=ID_FIELD autocomplete="off" spellcheck="false"/>
            </label>
            <label class="flex flex-col text-sm">"Session contains"
                <input name="session_like" type="text" value=session class=ID_FIELD autocomplete="off" spellcheck="false"/>
            </label>
            <label class="flex flex-col text-sm">"Open for"
                <select name="min_age_secs" class=FIELD>
                    {AGES.into_iter().map(|(v, words)| view! { <option value=v selected=age == v>{words}</option> }).collect_view()}
                </select>
            </label>
            <label class="flex flex-col text-sm">"Settled from (UTC)"
                <input name="settled_after" type="datetime-local" step="1" value=after class=FIELD/>
            </label>
            <label class="flex flex-col text-sm">"Settled before (UTC)"
                <input name="settled_before" type="datetime-local" step="1" value=before class=FIELD/>
            </label>
            {kept.into_iter().map(|(k, v)| view! { <input type="hidden" name=k value=v/> }).collect_view()}
            <div class="flex gap-2">
                <button type="submit" class="rounded bg-sky-700 px-3 py-1 text-sm font-semibold text-white hover:bg-sky-800">"Filter"</button>
                <a rel="external" href="/unknowns" class="px-2 py-1 text-sm underline underline-offset-2">"Clear"</a>
            </div>
        </form>
        {(!exact.is_empty()).then(|| view! {
            <p class="exact-filters mb-3 text-sm">
                "Only the exact " {exact.join(" and ")} ". "
                <a rel="external" class="underline underline-offset-2" href=format!("/unknowns{}", query_string(&without_exact))>"Remove"</a>
            </p>
        })}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settle_time_typed_in_a_form_field_is_read_as_utc() {
        assert_eq!(
            to_api("settled_after", "2026-12-01T18:30".into()),
            "2026-12-01T18:30:00Z"
        );
        assert_eq!(
            to_api("settled_before", "2026-12-01T18:30:05".into()),
            "2026-12-01T18:30:05Z"
        );
        assert_eq!(
            to_api("settled_after", "2026-12-01T18:30:00+01:00".into()),
            "2026-12-01T18:30:00+01:00"
        );
        assert_eq!(
            to_api("tool_like", "2026-12-01T18:30".into()),
            "2026-12-01T18:30"
        );
        assert_eq!(local_value("2026-12-01T18:30:00Z"), "2026-12-01T18:30:00");
        assert_eq!(local_value("2026-12-01T18:30"), "2026-12-01T18:30");
        assert_eq!(local_value("2026-12-01T18:30:00+01:00"), "");
        assert_eq!(local_value("yesterday"), "");
    }

    #[test]
    fn a_column_header_turns_its_order_around_and_another_starts_in_its_default() {
        let none: Vec<(&'static str, String)> = vec![("tool_like", "create".into())];
        assert_eq!(order_of(&none), (SortBy::Age, true));
        assert_eq!(
            sort_href(&none, SortBy::Age),
            "/unknowns?tool_like=create&sort=age&order=asc"
        );
        assert_eq!(
            sort_href(&none, SortBy::Tool),
            "/unknowns?tool_like=create&sort=tool&order=asc"
        );
        let by_tool = vec![("sort", "tool".to_owned()), ("order", "asc".to_owned())];
        assert_eq!(order_of(&by_tool), (SortBy::Tool, false));
        assert_eq!(
            sort_href(&by_tool, SortBy::Tool),
            "/unknowns?sort=tool&order=desc"
        );
        assert_eq!(
            sort_href(&by_tool, SortBy::Session),
            "/unknowns?sort=session&order=asc"
        );
        assert_eq!(
            sort_href(&by_tool, SortBy::Age),
            "/unknowns?sort=age&order=desc"
        );
    }

    #[test]
    fn a_last_note_is_cut_once_and_ages_read_short() {
        let long = "x".repeat(200);
        let once = cut(&long, LAST_NOTE_CHARS);
        assert_eq!(once.chars().count(), LAST_NOTE_CHARS);
        assert!(once.ends_with('…'));
        assert_eq!(cut(&once, LAST_NOTE_CHARS), once);
        assert_eq!(cut("short", LAST_NOTE_CHARS), "short");
        assert_eq!(age_short(42), "42 s");
        assert_eq!(age_short(185), "3 min");
        assert_eq!(age_short(3 * 3600), "3 h");
        assert_eq!(age_short(2 * 86_400 + 5), "2 d");
    }
}
