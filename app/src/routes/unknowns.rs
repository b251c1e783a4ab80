//! The support queue (docs/design.md "The unknowns queue"): every settled unknown outcome across sessions
//! (`state=unknown`, those the ledger settled at a deadline included) as a dense table for staff, one 16 px row each (50 rows on one 1280×800 screen), 200 rows a page;
//! ids and tool names are never cut (their columns take the width of their longest value, `style/main.css`). Sorted and
//! filtered in the address, as `GET /api/unknowns` names them (docs/api.md "Support queue"):
//! `?tool_like=&session_like=` (case-insensitive substrings), `tool=&session_key=` (exact),
//! `min_age_secs=`, `settled_after=&settled_before=` (RFC 3339, or a form's `YYYY-MM-DDTHH:MM` read as
//! UTC), `sort=age|tool|session&order=asc|desc`, `after=`; "as of" the read, refreshing itself. It links to
//! the staff's view of the writes in flight (`/in-flight`, `state=in_flight`, the soonest deadline first,
//! docs/api.md "Deadlines"), the same table with each row's deadline, with their count.
//! Rows can be selected to open several operation pages at once, and staff claim one ("I'm on it"):
//! `POST /api/sessions/{key}/mutations/{id}/claim` once interactive, a form post without JavaScript.
//!
//! The page keeps only what the table shows ([`QueuePage`], short field names), so that 200 rows stay
//! within the page budget of 150 KB of HTML, the hydration data included.

use ledger::wire::{Claim, LedgerStatus, SettledBy, UnknownsPage};
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::components::listing::{
    field_time, filter_to_api, listing_with, query_string, value_of, Listing, PageNav, FIELD,
    ID_FIELD,
};
use crate::components::marks::mark;
use crate::components::{ApiErrorPanel, AsOf};
use crate::routes::{history_href, session_href};

/// The filters and the order of the queue, as the API names them (docs/api.md "Support queue").
const FILTERS: [&str; 10] = [
    "claim",
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

/// The filters of the in-flight view: those of the queue but the settled times (a write in flight has
/// not settled).
const IN_FLIGHT_FILTERS: [&str; 8] = [
    "claim",
    "tool_like",
    "session_like",
    "tool",
    "session_key",
    "min_age_secs",
    "sort",
    "order",
];

/// Which of the two staff tables a page is: the queue of settled unknowns, or the writes in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// `/unknowns`: `state=unknown`, the oldest first.
    Unknown,
    /// `/in-flight`: `state=in_flight`, the soonest deadline first.
    InFlight,
}

impl Queue {
    /// The page's path.
    pub fn path(self) -> &'static str {
        match self {
            Queue::Unknown => "/unknowns",
            Queue::InFlight => "/in-flight",
        }
    }

    /// The column the page is sorted by when its address names none.
    pub fn default_sort(self) -> SortBy {
        match self {
            Queue::Unknown => SortBy::Age,
            Queue::InFlight => SortBy::Deadline,
        }
    }
}

/// The longest last note a row shows, in characters (the whole note is on the operation page).
pub const LAST_NOTE_CHARS: usize = 60;

/// One row of the queue: what the table shows of an `OperationMatch` of `/api/unknowns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub session_key: String,
    pub turn: String,
    pub mutation_id: String,
    pub tool: String,
    pub title: Option<String>,
    pub age_secs: Option<u64>,
    pub notes: Option<u64>,
    /// The latest note, cut to [`LAST_NOTE_CHARS`].
    pub last_note: Option<String>,
    pub claim: Option<Claim>,
    /// When staff were first alerted (RFC 3339 UTC; docs/api.md "Alerted").
    pub alerted_at: Option<String>,
    /// In flight (`execution_started`), not a settled unknown.
    pub in_flight: bool,
    /// Settled unknown by the ledger at its deadline (its host stopped reporting).
    pub by_ledger: bool,
    /// Its deadline (RFC 3339 UTC; docs/api.md "Deadlines").
    pub deadline_at: Option<String>,
    /// The entry's current attempt: what a bulk reconciliation of the row is about.
    pub attempt_id: Option<String>,
}

/// One page of the queue as the page keeps it. The rows are not part of the page's hydration data
/// (`serde(skip)`): the server renders them as the table body's HTML ([`rows_html`]), which the browser
/// keeps as the document has it until a read in the browser renders them from the API's answer
/// (`rows_in_document`). So the page sends each row once, as HTML only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuePage {
    #[serde(skip)]
    pub rows: Vec<Row>,
    /// How many rows the page shows.
    pub shown: usize,
    pub next: Option<String>,
    pub total: u64,
    /// The whole queue's oldest settled unknown, in whole seconds (the API's `oldest_unknown_age_secs`,
    /// the figure of the metric `outcomes_unknown_oldest_age_seconds`, docs/api.md "Metrics").
    pub oldest: Option<u64>,
    /// How many writes are in flight, whatever the filters (the API's `in_flight_total`).
    #[serde(default)]
    pub in_flight: u64,
}

impl From<UnknownsPage> for QueuePage {
    fn from(page: UnknownsPage) -> Self {
        let rows: Vec<Row> = page
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
                alerted_at: m.alerted_at,
                in_flight: m.entry.ledger_status == LedgerStatus::ExecutionStarted,
                by_ledger: m.entry.settled_by == Some(SettledBy::Ledger),
                deadline_at: m.entry.deadline_at,
                attempt_id: m.attempt_id,
            })
            .collect();
        QueuePage {
            shown: rows.len(),
            rows,
            next: page.next,
            total: page.total,
            oldest: page.oldest_unknown_age_secs,
            in_flight: page.in_flight_total,
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

/// An age in the table: `42 s`, `3 min`, `5 h`, `2 d` (rounded down).
pub fn age_short(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

/// The queue's oldest settled unknown in words: `Oldest unknown outcome: 42 s`, or with the minutes,
/// hours or days first `Oldest unknown outcome: 3 min (187 s)`; the seconds are the metric's figure.
pub fn oldest_words(secs: u64) -> String {
    if secs < 60 {
        format!("Oldest unknown outcome: {secs} s")
    } else {
        format!("Oldest unknown outcome: {} ({secs} s)", age_short(secs))
    }
}

/// The columns the queue sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Age,
    Tool,
    Session,
    Deadline,
}

impl SortBy {
    fn name(self) -> &'static str {
        match self {
            SortBy::Age => "age",
            SortBy::Tool => "tool",
            SortBy::Session => "session",
            SortBy::Deadline => "deadline",
        }
    }

    /// The API's default order of a column: the oldest first (`desc` by age), tools and sessions A→Z, the
    /// soonest deadline first.
    fn default_desc(self) -> bool {
        self == SortBy::Age
    }
}

/// The order in force on the queue: the column and whether descending (the API's defaults when absent).
pub fn order_of(filters: &[(&'static str, String)]) -> (SortBy, bool) {
    order_in(Queue::Unknown, filters)
}

/// The order in force on `queue`'s page: [`order_of`], by the page's own column when none is named.
pub fn order_in(queue: Queue, filters: &[(&'static str, String)]) -> (SortBy, bool) {
    let by = match value_of(filters, "sort").as_str() {
        "tool" => SortBy::Tool,
        "session" => SortBy::Session,
        "age" => SortBy::Age,
        "deadline" => SortBy::Deadline,
        _ => queue.default_sort(),
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
    sort_href_in(Queue::Unknown, filters, by)
}

/// [`sort_href`] on `queue`'s page.
pub fn sort_href_in(queue: Queue, filters: &[(&'static str, String)], by: SortBy) -> String {
    let (now, desc) = order_in(queue, filters);
    let desc = if now == by { !desc } else { by.default_desc() };
    let mut q: Vec<(&str, String)> = filters
        .iter()
        .filter(|(k, _)| *k != "sort" && *k != "order")
        .cloned()
        .collect();
    q.push(("sort", by.name().to_owned()));
    q.push(("order", if desc { "desc" } else { "asc" }.to_owned()));
    format!("{}{}", queue.path(), query_string(&q))
}

/// `/unknowns`: the settled unknown outcomes.
#[component]
pub fn UnknownsQueuePage() -> impl IntoView {
    view! { <QueueView kind=Queue::Unknown/> }
}

/// `/in-flight`: the writes in flight, the soonest deadline first.
#[component]
pub fn InFlightPage() -> impl IntoView {
    view! { <QueueView kind=Queue::InFlight/> }
}

/// The link from the queue to the writes in flight, with their count.
fn in_flight_words(n: u64) -> String {
    match n {
        0 => "No writes in flight".to_owned(),
        1 => "1 write in flight →".to_owned(),
        n => format!("{n} writes in flight →"),
    }
}

#[component]
fn QueueView(kind: Queue) -> impl IntoView {
    let Listing {
        read: queue,
        refresh,
        filters,
        later,
    } = match kind {
        Queue::Unknown => listing_with::<UnknownsPage, QueuePage>(
            "/api/unknowns?state=unknown",
            &FILTERS,
            filter_to_api,
            QueuePage::from,
            &[],
        ),
        Queue::InFlight => listing_with::<UnknownsPage, QueuePage>(
            "/api/unknowns?state=in_flight",
            &IN_FLIGHT_FILTERS,
            filter_to_api,
            QueuePage::from,
            &[("sort", "deadline")],
        ),
    };
    let caller = use_context::<crate::CallerResource>();
    // The rows ticked, by their operation page's path: kept across the page's refreshes.
    let selected = RwSignal::new(Vec::<String>::new());
    // What the last claim, copy or bulk open came to, in words.
    let said = RwSignal::new(String::new());
    let blocked = RwSignal::new(Vec::<String>::new());
    let (title, heading, lead) = match kind {
        Queue::Unknown => (
            "Open unknowns · Outcome ledger",
            "Open unknown outcomes",
            "Each stays unknown until evidence about its original attempt reconciles it. Claim one you work on, so that nobody else does it twice.",
        ),
        Queue::InFlight => (
            "Writes in flight · Outcome ledger",
            "Writes in flight",
            "Started, and their hosts have not reported back yet; the soonest deadline first. A write still in flight at its deadline is settled unknown by the ledger and joins the open unknowns. Reconcile one whose host you know is gone.",
        ),
    };
    view! {
        <Title text=title/>
        <h1 class="mb-1 text-2xl font-semibold">{heading}</h1>
        <p class="mb-3 text-sm opacity-80">{lead}</p>
        {(kind == Queue::InFlight).then(|| view! {
            <p class="queue-link mb-3 text-sm"><a rel="external" class="underline underline-offset-2" href="/unknowns">"← Open unknown outcomes"</a></p>
        })}
        <QueueFilters filters=filters.clone() kind/>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let filters = filters.clone();
                Suspend::new(async move {
                    let staff = crate::components::is_staff(caller).await;
                    match queue.await {
                        Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                        Ok(q) => {
                            let shown = q.page.shown;
                            let none = match (kind, filters.is_empty()) {
                                (Queue::Unknown, true) => "No open unknown outcomes.",
                                (Queue::Unknown, false) => "No open unknown outcome matches these filters.",
                                (Queue::InFlight, true) => "No writes in flight.",
                                (Queue::InFlight, false) => "No write in flight matches these filters.",
                            };
                            let empty = (shown == 0).then(|| view! { <p>{none}</p> });
                            let (noun, nouns) = match kind {
                                Queue::Unknown => ("open unknown", "open unknowns"),
                                Queue::InFlight => ("write in flight", "writes in flight"),
                            };
                            let in_flight = q.page.in_flight;
                            view! {
                                <AsOf at=q.as_of.clone() refresh stale=q.stale.clone()/>
                                {q.page.oldest.filter(|_| kind == Queue::Unknown).map(|secs| view! { <p class="oldest-unknown mb-2 text-sm" data-age-secs=secs.to_string()>{oldest_words(secs)}</p> })}
                                {(kind == Queue::Unknown).then(|| view! {
                                    <p class="in-flight-link mb-2 text-sm" data-count=in_flight.to_string()>
                                        {if in_flight == 0 {
                                            view! { <span>{in_flight_words(0)}</span> }.into_any()
                                        } else {
                                            view! { <a rel="external" class="underline underline-offset-2" href="/in-flight">{in_flight_words(in_flight)}</a> }.into_any()
                                        }}
                                        " (started, not reported back yet: they join this queue if the ledger settles them at their deadline)"
                                    </p>
                                })}
                                {empty}
                                <QueueTable rows=q.page.rows shown filters=filters.clone() staff selected said blocked refresh kind/>
                                <PageNav shown total=q.page.total next=q.page.next page_path=kind.path() filters later noun nouns/>
                            }.into_any()
                        }
                    }
                })
            }}
        </Transition>
    }
}

/// The table, its bulk bar and what the last action said. The rows' cells are plain HTML
/// ([`rows_html`]); what a row does once interactive (tick, copy, claim) is handled by the table for all
/// its rows, reading the row's operation link (its path holds the session key and the operation id).
#[component]
fn QueueTable(
    rows: Vec<Row>,
    shown: usize,
    filters: Vec<(&'static str, String)>,
    staff: bool,
    selected: RwSignal<Vec<String>>,
    said: RwSignal<String>,
    blocked: RwSignal<Vec<String>>,
    refresh: RwSignal<u64>,
    kind: Queue,
) -> impl IntoView {
    if shown == 0 {
        return ().into_any();
    }
    let (by, desc) = order_in(kind, &filters);
    let header = |col: SortBy, words: &'static str, class: &'static str| {
        let sort = (by == col).then_some(if desc { "descending" } else { "ascending" });
        let arrow = match (by == col, desc) {
            (false, _) => "",
            (true, true) => " ↓",
            (true, false) => " ↑",
        };
        view! { <th scope="col" class=class aria-sort=sort><a rel="external" href=sort_href_in(kind, &filters, col)>{words}{arrow}</a></th> }
    };
    let count = Memo::new(move |_| selected.with(Vec::len));
    let open_selected = move |_| {
        let chosen = selected.get_untracked();
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
    };
    let tick_all = move |ev: leptos::ev::Event| {
        let on = event_target_checked(&ev);
        let hrefs = tick_every_row(on);
        selected.set(if on { hrefs } else { Vec::new() });
    };
    let on_change = move |ev: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        if let Some((href, on)) = row_event::ticked(&ev) {
            selected.update(|s| {
                s.retain(|h| h != &href);
                if on {
                    s.push(href);
                }
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = ev;
    };
    let on_click = move |ev: leptos::ev::MouseEvent| {
        // The rows' links are plain HTML (no `rel="external"`): this listener is the table's own (the app
        // does not delegate events), so stopping the click here keeps it from the router's handler on the
        // window and the browser follows the link (ids round-trip, docs/design.md "What the person sees").
        #[cfg(feature = "hydrate")]
        if row_event::on_link(&ev) {
            ev.stop_propagation();
            return;
        }
        #[cfg(feature = "hydrate")]
        match row_event::button(&ev) {
            Some((row_event::Button::Copy, _, id)) => {
                if let Some(window) = web_sys::window() {
                    let _ = window.navigator().clipboard().write_text(&id);
                    said.set(format!("Copied operation id {}", mark(&id)));
                }
            }
            Some((row_event::Button::Claim, key, id)) => {
                leptos::task::spawn_local(async move {
                    said.set(claim_words(crate::api::claim(&key, &id, true).await, &id));
                    refresh.update(|t| *t += 1);
                });
            }
            None => {}
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (ev, refresh);
    };
    // A page hydrated from the server has no rows of its own (`QueuePage::rows` is not in its hydration
    // data): its table body is the one in the document, taken as it stands, so that the same page shown
    // again (a failed read keeps it, marked stale) keeps its rows. A rebuild sets a table body again even
    // when it is the same text (Leptos `erase_components` clears an erased `inner_html` first).
    let body = if rows.is_empty() && shown > 0 {
        rows_in_document()
    } else {
        rows_html(&rows, staff, &selected.get_untracked())
    };
    view! {
        // The bulk form: the rows' select boxes belong to it (`form="bulk"`), so it works without
        // JavaScript; "Open selected" and "Clear selection" need the page interactive.
        <form id="bulk" method="post" action="/unknowns/bulk" class="bulk mb-2 flex flex-wrap items-center gap-2 text-sm" aria-label="Selected rows">
            // The selection (interactive pages); without JavaScript none is sent and the server answers a
            // page to select rows on, for the queue's filters sent here.
            {move || selected.get().iter().filter_map(|h| op_of_href(h)).map(|v| view! { <input type="hidden" name="op" value=v/> }).collect_view()}
            <input type="hidden" name="state" value=match kind { Queue::Unknown => "unknown", Queue::InFlight => "in_flight" }/>
            {["claim", "tool_like", "session_like"].into_iter().map(|k| (k, value_of(&filters, k))).filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| view! { <input type="hidden" name=k value=v/> }).collect_view()}
            <button type="button" class="open-selected js-only rounded bg-sky-700 px-2 py-0.5 font-semibold text-white hover:bg-sky-800 disabled:opacity-50"
                disabled=move || count.get() == 0 on:click=open_selected>
                {move || format!("Open selected ({})", count.get())}
            </button>
            <button type="submit" name="action" value="claim" class=BULK_BUTTON>"Claim selected"</button>
            <button type="submit" name="action" value="release" class=BULK_BUTTON>"Release selected"</button>
            <button type="submit" name="action" value="reconcile" class=BULK_BUTTON>"Reconcile selected…"</button>
            <button type="button" class="clear-selected js-only rounded border border-slate-400 px-2 py-0.5 hover:bg-slate-100 disabled:opacity-50 dark:border-slate-600 dark:hover:bg-slate-800"
                disabled=move || count.get() == 0 on:click=move |_| { tick_every_row(false); selected.set(Vec::new()); blocked.set(Vec::new()); }>
                "Clear selection"
            </button>
        </form>
        <p class="queue-said mb-2 min-h-5 text-sm" role="status" aria-live="polite">{move || said.get()}</p>
        {move || {
            let b = blocked.get();
            (!b.is_empty()).then(|| view! {
                <ul class="blocked mb-2 ml-4 list-disc text-sm">
                    {b.into_iter().map(|h| view! { <li><a rel="external" target="_blank" class="underline" href=h.clone()>{h.clone()}</a></li> }).collect_view()}
                </ul>
            })
        }}
        <div class="qs">
            <table class="q" on:click=on_click on:change=on_change>
                <caption class="sr-only">{match kind { Queue::Unknown => "Open unknown outcomes, one a row", Queue::InFlight => "Writes in flight, one a row" }}</caption>
                <thead>
                    <tr>
                        <th scope="col" class="w-6"><input type="checkbox" class="sel-all" aria-label="Select every row"
                            prop:checked=move || { count.get() >= shown } on:change=tick_all/></th>
                        {header(SortBy::Age, "Age", "w-14")}
                        {header(SortBy::Tool, "Tool", "w-24")}
                        <th scope="col" class="w-2/5">"Title"</th>
                        {header(SortBy::Session, "Session", "w-24")}
                        <th scope="col" class="w-12">"Turn"</th>
                        <th scope="col" class="w-28">"Operation id"</th>
                        <th scope="col" class="w-12">"Notes"</th>
                        <th scope="col" class="w-1/6">"Last note"</th>
                        <th scope="col" class="w-28">"On it"</th>
                        {match kind {
                            Queue::Unknown => view! {
                                <th scope="col" class="w-24">"Alerted (UTC)"</th>
                                <th scope="col" class="w-20">"Status"</th>
                            }.into_any(),
                            Queue::InFlight => header(SortBy::Deadline, "Deadline", "w-36").into_any(),
                        }}
                    </tr>
                </thead>
                <tbody class="operations" inner_html=body></tbody>
            </table>
        </div>
    }
    .into_any()
}

/// A row's `op` field of the bulk form (docs/api.md "Bulk actions"): `<session key>/<mutation id>/<attempt
/// id>`, each percent-encoded as a path segment (so a `/` inside an id cannot split it).
pub fn op_field(session_key: &str, mutation_id: &str, attempt_id: &str) -> String {
    format!(
        "{}/{}/{}",
        crate::api::enc(session_key),
        crate::api::enc(mutation_id),
        crate::api::enc(attempt_id)
    )
}

/// The `op` field of a selected row, from its operation page's path `/sessions/{k}/operations/{m}`
/// (segments percent-encoded as they are): `{k}/{m}/`, without an attempt (the confirmation page names
/// the attempt each is reconciled about, docs/api.md "Bulk actions").
pub fn op_of_href(href: &str) -> Option<String> {
    let rest = href.strip_prefix("/sessions/")?;
    let mut parts = rest.split('/');
    let (k, ops, m) = (parts.next()?, parts.next()?, parts.next()?);
    (ops == "operations" && parts.next().is_none()).then(|| format!("{k}/{m}/"))
}

/// A bulk action's button (a form submit: it works without JavaScript).
const BULK_BUTTON: &str = "rounded border border-slate-400 px-2 py-0.5 hover:bg-slate-100 dark:border-slate-600 dark:hover:bg-slate-800";

/// `s` escaped for HTML text and attribute values (`&`, `<`, `>`, `"` and `'`; html-escape).
pub fn esc(s: &str) -> String {
    html_escape::encode_quoted_attribute(s).into_owned()
}

/// The table body's rows as HTML, one `<tr>` each, with as few bytes as a row can have: cells without
/// classes (styled by their column, `style/main.css`), host strings marked ([`mark`]) and escaped. The
/// cells: a select box named by the operation id (`aria-labelledby` its link, `id="r<i>"`), age, tool,
/// title, session (a link), turn, operation id (a link to its page; a copy button), notes, last note,
/// who is on it, or for staff an "I'm on it" button (interactive pages only; without JavaScript the
/// operation page's form claims), when staff were alerted ([`alerted_cell`]), and the status or the
/// deadline ([`last_cell`]). `selected` rows (operation page paths) are ticked.
pub fn rows_html(rows: &[Row], staff: bool, selected: &[String]) -> String {
    let mut out = String::with_capacity(rows.len() * 640);
    for (i, r) in rows.iter().enumerate() {
        let href = history_href(&r.session_key, &r.mutation_id);
        let ticked = if selected.contains(&href) {
            " checked"
        } else {
            ""
        };
        let notes = r
            .notes
            .filter(|n| *n > 0)
            .map(|n| n.to_string())
            .unwrap_or_default();
        let claim = match (&r.claim, staff) {
            (Some(c), _) => format!("{} is on it", esc(&c.by)),
            (None, true) => "<button class=\"take\">I&#39;m on it</button>".to_owned(),
            (None, false) => String::new(),
        };
        out.push_str(&format!(
            "<tr><td><input type=\"checkbox\" aria-labelledby=\"r{i}\"{ticked}></td><td>{age}</td><td>{tool}</td><td>{title}</td>\
             <td><a href=\"{session_href}\">{session}</a></td><td>{turn}</td>\
             <td><a id=\"r{i}\" href=\"{href}\">{id}</a> <button class=\"cp\" aria-label=\"Copy id\">⧉</button></td>\
             <td>{notes}</td><td>{note}</td><td>{claim}</td>{alerted}<td>{last}</td></tr>",
            age = r.age_secs.map(age_short).unwrap_or_default(),
            tool = esc(&mark(&r.tool)),
            title = esc(&r.title.as_deref().map(mark).unwrap_or_default()),
            session_href = esc(&session_href(&r.session_key)),
            session = esc(&mark(&r.session_key)),
            turn = esc(&mark(&r.turn)),
            href = esc(&href),
            id = esc(&mark(&r.mutation_id)),
            note = esc(&r.last_note.as_deref().map(mark).unwrap_or_default()),
            // A write in flight has not been alerted about: its view has no such column.
            alerted = if r.in_flight {
                String::new()
            } else {
                format!(
                    "<td>{}</td>",
                    r.alerted_at.as_deref().map(alerted_cell).unwrap_or_default()
                )
            },
            last = last_cell(r),
        ));
    }
    out
}

/// The status cell of a settled unknown the ledger settled at its deadline: "No report", its title saying
/// what that means.
const LEDGER_STATUS: &str = "<span title=\"Its host did not report by the deadline: the ledger settled it unknown\">No report</span>";

/// The last cell of a row: a write in flight's deadline (`<time data-due>`, which the page clock writes
/// as how long until it and the local time, "in 12 min · 23:15:00"), or a settled unknown's status:
/// "Unknown", or "No report" when the ledger settled it at its deadline (docs/api.md "Deadlines").
fn last_cell(r: &Row) -> String {
    match (&r.deadline_at, r.in_flight) {
        (Some(at), true) => format!(
            "<time datetime=\"{}\" data-due>{}</time>",
            esc(at),
            esc(&crate::components::time::kind_text(
                at,
                crate::components::time::TimeKind::Due
            ))
        ),
        (None, true) => "In flight".to_owned(),
        (_, false) if r.by_ledger => LEDGER_STATUS.to_owned(),
        (_, false) => "Unknown".to_owned(),
    }
}

/// The "Alerted" cell of a row: `<time>` of the RFC 3339 UTC `at`, reading `MM-DD HH:MM` (UTC, as the
/// column's heading says; the same on the server and in the browser), the full UTC time as its title.
/// `data-utc` keeps the page clock from writing it in local time ([`crate::components::time::tick`]).
fn alerted_cell(at: &str) -> String {
    let short = at
        .get(5..16)
        .filter(|s| s.as_bytes().get(5) == Some(&b'T'))
        .map(|s| s.replacen('T', " ", 1))
        .unwrap_or_else(|| at.to_owned());
    format!(
        "<time datetime=\"{}\" title=\"{}\" data-utc>{}</time>",
        esc(at),
        esc(&crate::components::time::utc_text(at)),
        esc(&short)
    )
}

/// Ticks (or unticks) every row's select box on the page; the operation page paths of the rows.
fn tick_every_row(on: bool) -> Vec<String> {
    #[cfg(feature = "hydrate")]
    {
        row_event::tick_all(on)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = on;
        Vec::new()
    }
}

/// The table body's rows as the document holds them (its HTML, each select box's `checked` attribute
/// set as the box is now); "" outside the browser or without a table.
fn rows_in_document() -> String {
    #[cfg(feature = "hydrate")]
    {
        row_event::rows_html_now().unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        String::new()
    }
}

/// What a click or a change inside the table's body was about (browser only).
#[cfg(feature = "hydrate")]
mod row_event {
    use wasm_bindgen::JsCast;
    use web_sys::Element;

    pub enum Button {
        Copy,
        Claim,
    }

    /// The operation page path of the row `el` is in (its operation link's `href`).
    fn row_href(el: &Element) -> Option<String> {
        el.closest("tr")
            .ok()??
            .query_selector("a[id]")
            .ok()??
            .get_attribute("href")
    }

    fn target(ev: &web_sys::Event) -> Option<Element> {
        ev.target()?.dyn_into::<Element>().ok()
    }

    fn checked(el: &Element) -> bool {
        js_sys::Reflect::get(el, &"checked".into())
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }

    /// Whether the click was on a link in the table's body.
    pub fn on_link(ev: &web_sys::MouseEvent) -> bool {
        target(ev).is_some_and(|el| el.closest("tbody a").ok().flatten().is_some())
    }

    /// A row's select box changed: the row's page path and whether it is ticked now.
    pub fn ticked(ev: &web_sys::Event) -> Option<(String, bool)> {
        let el = target(ev)?;
        if el.get_attribute("type").as_deref() != Some("checkbox")
            || el.closest("tbody").ok()?.is_none()
        {
            return None;
        }
        Some((row_href(&el)?, checked(&el)))
    }

    /// A row's copy or claim button was clicked: which, and the row's session key and operation id (its
    /// link's path segments, decoded once).
    pub fn button(ev: &web_sys::MouseEvent) -> Option<(Button, String, String)> {
        let el = target(ev)?.closest("button").ok()??;
        let which = match el.class_name().as_str() {
            "cp" => Button::Copy,
            "take" => Button::Claim,
            _ => return None,
        };
        let href = row_href(&el)?;
        Some((
            which,
            crate::address::segment_of(&href, 2),
            crate::address::segment_of(&href, 4),
        ))
    }

    /// The table body's HTML now, each select box's `checked` attribute first made to say whether the
    /// box is ticked (the HTML has attributes, not the boxes' state).
    pub fn rows_html_now() -> Option<String> {
        let document = web_sys::window()?.document()?;
        let body = document.query_selector("table.q tbody.operations").ok()??;
        let boxes = body.query_selector_all("input[type=checkbox]").ok()?;
        for i in 0..boxes.length() {
            let Some(el) = boxes.item(i).and_then(|n| n.dyn_into::<Element>().ok()) else {
                continue;
            };
            let _ = if checked(&el) {
                el.set_attribute("checked", "")
            } else {
                el.remove_attribute("checked")
            };
        }
        Some(body.inner_html())
    }

    /// Sets every row's select box; the rows' page paths.
    pub fn tick_all(on: bool) -> Vec<String> {
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return Vec::new();
        };
        let Ok(boxes) = document.query_selector_all("table.q tbody input[type=checkbox]") else {
            return Vec::new();
        };
        let mut hrefs = Vec::new();
        for i in 0..boxes.length() {
            let Some(el) = boxes.item(i).and_then(|n| n.dyn_into::<Element>().ok()) else {
                continue;
            };
            let _ = js_sys::Reflect::set(&el, &"checked".into(), &on.into());
            if let Some(h) = row_href(&el) {
                hrefs.push(h);
            }
        }
        hrefs
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

/// The claim filter's choices (`claim=`, docs/api.md "Support queue").
const CLAIMS: [(&str, &str); 3] = [
    ("", "Anyone's"),
    ("mine", "Mine"),
    ("unclaimed", "Nobody's (unclaimed)"),
];

#[component]
fn QueueFilters(filters: Vec<(&'static str, String)>, kind: Queue) -> impl IntoView {
    let path = kind.path();
    let claim = value_of(&filters, "claim");
    let settled = kind == Queue::Unknown;
    let tool = value_of(&filters, "tool_like");
    let session = value_of(&filters, "session_like");
    let age = value_of(&filters, "min_age_secs");
    let after = field_time(&value_of(&filters, "settled_after"));
    let before = field_time(&value_of(&filters, "settled_before"));
    // Kept as they are when filtering again: the order, and the exact filters a link may carry.
    let kept: Vec<(&str, String)> = ["sort", "order", "tool", "session_key"]
        .into_iter()
        .map(|k| (k, value_of(&filters, k)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let exact: Vec<(&str, String)> = [("tool", "tool"), ("session_key", "session")]
        .into_iter()
        .filter_map(|(k, words)| {
            let v = value_of(&filters, k);
            (!v.is_empty()).then(|| (words, mark(&v)))
        })
        .collect();
    let without_exact: Vec<(&str, String)> = filters
        .iter()
        .filter(|(k, _)| *k != "tool" && *k != "session_key")
        .cloned()
        .collect();
    view! {
        <form method="get" action=path class="filters mb-3 grid gap-2 sm:grid-cols-3 lg:grid-cols-7 lg:items-end" aria-label="Filter the queue">
            <label class="flex flex-col text-sm">"On it"
                <select name="claim" class=FIELD>
                    {CLAIMS.into_iter().map(|(v, words)| view! { <option value=v selected=claim == v>{words}</option> }).collect_view()}
                </select>
            </label>
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
            {settled.then(|| view! {
                <label class="flex flex-col text-sm">"Settled from (UTC)"
                    <input name="settled_after" type="datetime-local" step="1" value=after class=FIELD/>
                </label>
                <label class="flex flex-col text-sm">"Settled before (UTC)"
                    <input name="settled_before" type="datetime-local" step="1" value=before class=FIELD/>
                </label>
            })}
            {kept.into_iter().map(|(k, v)| view! { <input type="hidden" name=k value=v/> }).collect_view()}
            <div class="flex gap-2">
                <button type="submit" class="rounded bg-sky-700 px-3 py-1 text-sm font-semibold text-white hover:bg-sky-800">"Filter"</button>
                <a rel="external" href=path class="px-2 py-1 text-sm underline underline-offset-2">"Clear"</a>
            </div>
        </form>
        {(!exact.is_empty()).then(|| view! {
            <p class="exact-filters mb-3 text-sm">
                "Only the exact "
                {exact.into_iter().enumerate().map(|(i, (words, v))| view! {
                    {(i > 0).then_some(" and ")}{words}" "<bdi class="font-mono">{v}</bdi>
                }).collect_view()}
                ". "
                <a rel="external" class="underline underline-offset-2" href=format!("{path}{}", query_string(&without_exact))>"Remove"</a>
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
            filter_to_api("settled_after", "2026-12-01T18:30".into()),
            "2026-12-01T18:30:00Z"
        );
        assert_eq!(
            filter_to_api("settled_before", "2026-12-01T18:30:05".into()),
            "2026-12-01T18:30:05Z"
        );
        assert_eq!(
            filter_to_api("settled_after", "2026-12-01T18:30:00+01:00".into()),
            "2026-12-01T18:30:00+01:00"
        );
        assert_eq!(
            filter_to_api("tool_like", "2026-12-01T18:30".into()),
            "2026-12-01T18:30"
        );
        assert_eq!(field_time("2026-12-01T18:30:00Z"), "2026-12-01T18:30:00");
        assert_eq!(field_time("2026-12-01T18:30"), "2026-12-01T18:30");
        assert_eq!(field_time("2026-12-01T18:30:00+01:00"), "");
        assert_eq!(field_time("yesterday"), "");
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

    #[test]
    fn a_row_shows_when_staff_were_alerted_in_utc_and_nothing_when_they_were_not() {
        let row = |alerted_at: Option<&str>| Row {
            session_key: "s-1".into(),
            turn: "t-1".into(),
            mutation_id: "m-1".into(),
            tool: "mcp__dashboards__create".into(),
            title: None,
            age_secs: Some(185),
            notes: None,
            last_note: None,
            claim: None,
            alerted_at: alerted_at.map(str::to_owned),
            in_flight: false,
            by_ledger: false,
            deadline_at: Some("2026-12-03T14:15:00.000Z".into()),
            attempt_id: Some("att 1".into()),
        };
        let html = rows_html(&[row(Some("2026-12-03T14:30:05.123Z"))], true, &[]);
        assert!(
            html.ends_with(
                "<td><time datetime=\"2026-12-03T14:30:05.123Z\" \
                 title=\"2026-12-03 14:30:05 UTC\" data-utc>12-03 14:30</time></td><td>Unknown</td></tr>"
            ),
            "{html}"
        );
        let html = rows_html(&[row(None)], true, &[]);
        assert!(html.ends_with("<td></td><td>Unknown</td></tr>"), "{html}");
        // The select box carries no form field: the bulk form sends the selection (`op_of_href`).
        assert!(
            html.starts_with("<tr><td><input type=\"checkbox\" aria-labelledby=\"r0\"></td>"),
            "{html}"
        );
        assert_eq!(
            op_of_href("/sessions/s%201/operations/m%2F1").as_deref(),
            Some("s%201/m%2F1/")
        );
        assert_eq!(html.matches("<td").count(), 12, "{html}");
    }

    /// The queue's last column says who settled an unknown; the in-flight view's, each write's deadline.
    #[test]
    fn a_row_ends_with_its_status_or_its_deadline() {
        let mut r = Row {
            session_key: "s-1".into(),
            turn: "t-1".into(),
            mutation_id: "m-1".into(),
            tool: "mcp__dashboards__create".into(),
            title: None,
            age_secs: Some(185),
            notes: None,
            last_note: None,
            claim: None,
            alerted_at: None,
            in_flight: false,
            by_ledger: true,
            deadline_at: Some("2026-12-03T14:15:00.000Z".into()),
            attempt_id: Some("att 1".into()),
        };
        assert_eq!(last_cell(&r), LEDGER_STATUS);
        r.by_ledger = false;
        r.in_flight = true;
        assert_eq!(
            last_cell(&r),
            "<time datetime=\"2026-12-03T14:15:00.000Z\" data-due>2026-12-03 14:15:00 UTC</time>"
        );
        let html = rows_html(&[r], true, &[]);
        assert!(html.contains("<td>3 min</td>"), "{html}");
        // No "Alerted" cell in the in-flight view: its deadline is the 11th.
        assert_eq!(html.matches("<td").count(), 11, "{html}");
    }

    #[test]
    fn the_in_flight_view_is_ordered_by_deadline_unless_its_address_says_otherwise() {
        let none: Vec<(&'static str, String)> = vec![];
        assert_eq!(order_in(Queue::InFlight, &none), (SortBy::Deadline, false));
        assert_eq!(
            sort_href_in(Queue::InFlight, &none, SortBy::Deadline),
            "/in-flight?sort=deadline&order=desc"
        );
        assert_eq!(
            sort_href_in(Queue::InFlight, &none, SortBy::Age),
            "/in-flight?sort=age&order=desc"
        );
        let by_age = vec![("sort", "age".to_owned())];
        assert_eq!(order_in(Queue::InFlight, &by_age), (SortBy::Age, true));
        assert_eq!(in_flight_words(0), "No writes in flight");
        assert_eq!(in_flight_words(1), "1 write in flight →");
        assert_eq!(in_flight_words(12), "12 writes in flight →");
    }
}
