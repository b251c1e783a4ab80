//! A logical turn's timeline: server-rendered from the entries API, then kept live in the browser (the
//! session's run events, and the entries changed since the last read: `crate::live::TurnFeed`), upserting
//! by `mutation_id` and keeping the recorded order.
//!
//! A big turn (docs/design.md "Big turns") is read a page at a time: the server renders the first
//! [`ROWS_STEP`] rows (or `?rows=N`, up to one page of the entries API) with the turn's counts from the
//! turns API; the browser reads the other pages in the background, and shows [`ROWS_STEP`] more rows (of the
//! status filtered on) per "Show more". The page's DOM holds only the rows shown.

use ledger::wire::{StatusCounts, TurnEntries};
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::api::{self, ApiError};
use crate::components::marks::mark;
use crate::components::outcome::{CountBadge, CountKind};
use crate::components::waterfall::TimelinePicture;
use crate::components::ApiErrorPanel;
use crate::components::{roving, timeline_rows};
use crate::connection::Connection;
use crate::routes::session::id_repeats_label;
use crate::routes::{param, session_href};
use crate::timeline::{Row, Timeline};

/// Rows shown at first, and added by each "Show more".
pub const ROWS_STEP: usize = 200;

/// What the page read: the first page of the turn's entries and, when there are more pages, the turn's
/// counts (the first read's `counts`, read with the entries); and, from the turn's place (its number and
/// neighbours, docs/api.md "A turn's place"), the page's title and its heading with the previous / next
/// links as HTML, written on the server ([`head_html`]): the browser bundle carries neither the place's
/// shape nor that code (docs/performance.md "Bundle size"). Sent to the browser compactly ([`crate::hydration`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRead {
    pub title: String,
    pub head: String,
    #[serde(with = "crate::hydration::entries")]
    pub entries: TurnEntries,
    pub counts: Option<StatusCounts>,
}

/// Reads the turn's place (on the server: the page's links are full navigations, so the browser never
/// reads a turn page's resource again; there the title and heading stay as the server sent them), then its
/// first `rows` entries (one page) and, for a turn with more, its counts.
async fn read(
    reader: api::Reader,
    key: String,
    turn: String,
    rows: usize,
) -> Result<TurnRead, ApiError> {
    #[cfg(feature = "ssr")]
    let (title, head) = {
        let place: ledger::wire::TurnPlace =
            reader.get_json(api::turn_place_path(&key, &turn)).await?;
        (title_text(&place), head_html(&place))
    };
    #[cfg(not(feature = "ssr"))]
    let (title, head) = (String::new(), String::new());
    let mut entries = reader.first_entries(&key, &turn, rows).await?;
    let counts = entries.counts.take().filter(|_| entries.next.is_some());
    Ok(TurnRead {
        title,
        head,
        entries,
        counts,
    })
}

/// A turn's name by its number: "Turn 13", with its id (marked) only when the id says more than the
/// number (`id_repeats_label`, as the session page and the turns list name turns): `(label, Some(id))`.
pub fn turn_name(number: u64, id: &str) -> (String, Option<String>) {
    let n = usize::try_from(number).unwrap_or(0);
    if n == 0 {
        return ("Turn".to_owned(), Some(mark(id)));
    }
    let label = format!("Turn {n}");
    if id_repeats_label(id, n) {
        (label, None)
    } else {
        (label, Some(mark(id)))
    }
}

/// The page's title: "Turn 13 · Outcome ledger", or "Turn 2 (turn-b7f) · Outcome ledger".
#[cfg(feature = "ssr")]
fn title_text(place: &ledger::wire::TurnPlace) -> String {
    match turn_name(place.number, &place.logical_turn_id) {
        (label, None) => format!("{label} · Outcome ledger"),
        (label, Some(id)) => format!("{label} ({id}) · Outcome ledger"),
    }
}

/// The page's heading ("Turn 2 · turn-b7f") and its previous / next links ("← Turn 1", "2 of 3",
/// "Turn 3 →"; plain links, none at either end), as HTML, every text and attribute escaped.
#[cfg(feature = "ssr")]
pub fn head_html(place: &ledger::wire::TurnPlace) -> String {
    use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};
    let (label, id) = turn_name(place.number, &place.logical_turn_id);
    let id = id.map_or(String::new(), |id| {
        format!(" · <bdi class=\"font-mono\">{}</bdi>", text(&id))
    });
    let link = |t: &Option<ledger::wire::TurnLink>, class: &str, words: &dyn Fn(u64) -> String| {
        t.as_ref().map_or(String::new(), |t| {
            format!(
                "<a rel=\"external\" href=\"{}\" class=\"{class} underline underline-offset-2\">{}</a>",
                attr(&crate::routes::turn_href(&place.session_key, &t.logical_turn_id)),
                words(t.number)
            )
        })
    };
    format!(
        "<h1 class=\"mb-2 text-2xl font-semibold\">{}{id}</h1>\
<nav class=\"turn-nav mb-3 flex flex-wrap items-center gap-3 text-sm\" aria-label=\"Turns\">{}\
<span class=\"opacity-80 tabular-nums\">{} of {}</span>{}</nav>",
        text(&label),
        link(&place.previous, "prev-turn", &|n| format!("← Turn {n}")),
        place.number,
        place.total,
        link(&place.next, "next-turn", &|n| format!("Turn {n} →")),
    )
}

/// The rows asked for in the address (`?rows=N`): at least [`ROWS_STEP`].
fn rows_asked() -> usize {
    crate::address::query_value("rows")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(ROWS_STEP)
        .max(ROWS_STEP)
}

#[component]
pub fn TurnPage() -> impl IntoView {
    let key = param(2);
    let turn = param(4);
    let rows = rows_asked();
    let reader = api::reader();
    let entries = Resource::new(
        move || (key.get(), turn.get()),
        move |(k, t)| read(reader.clone(), k, t, rows),
    );
    let caller = use_context::<crate::CallerResource>();
    view! {
        <p class="mb-1 text-sm">
            <a rel="external" class="underline-offset-2 hover:underline" href=move || session_href(&key.get())>
                "← Session " <bdi class="font-mono">{move || mark(&key.get())}</bdi>
            </a>
        </p>
        <Suspense fallback=|| view! { <p>"Loading the timeline…"</p> }>
            {move || Suspend::new(async move {
                let viewer = crate::components::is_viewer(caller).await;
                match entries.await {
                    Err(e) => view! {
                        <Title text=crate::routes::page_title(move || format!("Turn {} · Outcome ledger", mark(&turn.get())))/>
                        <h1 class="mb-4 text-2xl font-semibold">"Turn " <bdi class="font-mono">{move || mark(&turn.get())}</bdi></h1>
                        <crate::components::ViewerNotice/>
                        <ApiErrorPanel error=e/>
                    }.into_any(),
                    Ok(r) => {
                        let title = r.title.clone();
                        view! {
                            <Title text=crate::routes::page_title(move || title.clone())/>
                            <div class="turn-head" inner_html=r.head.clone()></div>
                            <crate::components::ViewerNotice/>
                            <crate::components::ExportLinks session_key=r.entries.session_key.clone()/>
                            <LiveTimeline read=r shown=rows viewer/>
                        }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

/// Classes of a filter button (`.filter` in `style/main.css`): pressed reads as a filled, bordered button
/// with a check mark; focus is a separate sky-blue ring, so the pressed "All" does not look focused on
/// load.
const FILTER: &str = "filter group";

/// The check mark of a pressed filter.
fn pressed_mark() -> impl IntoView {
    view! { <span aria-hidden="true" class="hidden group-aria-pressed:inline">"✓"</span> }
}

/// "Show more": a link to the same page with more rows (works without JavaScript); in the browser it
/// shows them in place.
fn show_more_href(shown: usize) -> String {
    format!("?rows={}", shown + ROWS_STEP)
}

/// The turn's rows, live. `viewer`: the reader is an end user (a viewer link), who reads no revision
/// numbers nor the change read through (docs/design.md "What the person sees").
#[component]
fn LiveTimeline(read: TurnRead, shown: usize, viewer: bool) -> impl IntoView {
    let entries = read.entries;
    let timeline = RwSignal::new(Timeline::from_first_page(&entries, read.counts));
    let connection = RwSignal::new(Connection::Snapshot);
    let filter = RwSignal::new(None::<CountKind>);
    let shown = RwSignal::new(shown);
    let session_key = entries.session_key.clone();
    let row_session = entries.session_key.clone();
    let turn_id = entries.logical_turn_id.clone();
    let picture = (entries.session_key.clone(), entries.logical_turn_id.clone());
    #[cfg(feature = "hydrate")]
    let (read_through, rest) = (entries.latest_revision, entries.next.clone());
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            let feed = crate::live::TurnFeed::with_rest(
                turn_id.clone(),
                timeline,
                read_through,
                rest.clone(),
            );
            let neighbours = Neighbours::new(session_key.clone(), turn_id.clone());
            crate::live::connect(session_key.clone(), connection, move |live, event| {
                neighbours.hear(&event);
                feed.hear(live, &event)
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (&session_key, &turn_id);
    });
    // The rows shown: the first `shown` of those the filter keeps.
    let rows = Memo::new(move |_| {
        let f = filter.get();
        let n = shown.get();
        timeline.with(|t| {
            t.rows()
                .iter()
                .filter(|r| f.is_none_or(|f| f.matches(r.outcome.status, r.in_flight)))
                .take(n)
                .cloned()
                .collect::<Vec<Row>>()
        })
    });
    // How many rows the filter keeps in the whole turn (as counted, while pages are still being read).
    let matching = move || {
        let f = filter.get();
        timeline.with(|t| match f {
            None => t.len(),
            Some(k) => kind_count(t, k),
        })
    };
    let more = move || {
        let total = matching();
        let on_page = rows.with(Vec::len);
        let n = shown.get();
        let complete = timeline.with(Timeline::complete);
        if on_page >= n && total > on_page {
            let next = ROWS_STEP.min(total - on_page);
            Some(view! {
                <p class="more mt-4 flex flex-wrap items-center gap-3 text-sm">
                    <span class="tabular-nums">{format!("Showing {on_page} of {total}.")}</span>
                    <a rel="external" class="show-more rounded border border-slate-400 px-2 py-1 underline-offset-2 hover:bg-slate-100 dark:border-slate-600 dark:hover:bg-slate-800"
                        href=show_more_href(n)
                        on:click=move |ev| { ev.prevent_default(); shown.update(|s| *s += ROWS_STEP); }>
                        {format!("Show {next} more")}
                    </a>
                </p>
            }.into_any())
        } else if !complete {
            Some(
                view! {
                    <p class="more loading mt-4 text-sm" role="status">
                        {format!("Showing {on_page} of {total}; reading the rest of this turn…")}
                    </p>
                }
                .into_any(),
            )
        } else {
            None
        }
    };
    view! {
        <div class="mb-3 flex flex-wrap items-center justify-between gap-3">
            <crate::components::ConnectionIndicator connection/>
            {(!viewer).then(|| view! {
                <p class="text-xs opacity-80">"Read through change " <span class="cursor tabular-nums">{move || timeline.with(|t| t.cursor())}</span></p>
            })}
        </div>
        <TimelinePicture key=picture.0 turn=picture.1
            writes=Signal::derive(move || timeline.with(Timeline::len))
            at=Signal::derive(move || timeline.with(Timeline::cursor))/>
        <div class="summary mb-4 flex flex-wrap gap-2" role="group" aria-label="Filter by status">
            <button
                type="button"
                class=FILTER
                data-filter="all"
                aria-pressed=move || filter.get().is_none().to_string()
                on:click=move |_| filter.set(None)
            >
                {pressed_mark()}
                <span class="label">{move || format!("All ({})", timeline.with(Timeline::len))}</span>
            </button>
            {CountKind::ALL.into_iter().map(|k| view! {
                <button
                    type="button"
                    class=FILTER
                    data-filter=k.as_str()
                    aria-pressed=move || (filter.get() == Some(k)).to_string()
                    on:click=move |_| filter.set(Some(k))
                >
                    {pressed_mark()}
                    <CountBadge kind=k/>
                    <span class="tabular-nums">{move || timeline.with(|t| kind_count(t, k))}</span>
                </button>
            }).collect_view()}
        </div>
        <roving::KeysHelp/>
        <timeline_rows::TimelineRows session=row_session rows label="Outcomes of this turn, in recorded order".to_owned() class="timeline space-y-3" revisions=!viewer deadlines=!viewer/>
        {more}
        {move || timeline.with(|t| t.is_empty()).then(|| view! { <p>"No published outcomes in this turn yet."</p> })}
    }
}

/// Keeps the heading's "N of M" and its "Turn N+1 →" link current while the page is open: the first
/// time the session's stream names a turn other than this one (a turn that began since, or one seen
/// for the first time), the turn's place is read again (docs/api.md "A turn's place"), the count
/// rewritten and, when this was the last turn and a next one exists now, the next link added. One read
/// at a time; a turn named while one runs reads once more after it.
#[cfg(feature = "hydrate")]
struct Neighbours {
    session_key: String,
    turn: String,
    seen: std::cell::RefCell<std::collections::HashSet<String>>,
    reading: std::cell::Cell<bool>,
    read_again: std::cell::Cell<bool>,
}

#[cfg(feature = "hydrate")]
impl Neighbours {
    fn new(session_key: String, turn: String) -> std::rc::Rc<Neighbours> {
        std::rc::Rc::new(Neighbours {
            session_key,
            turn,
            seen: Default::default(),
            reading: Default::default(),
            read_again: Default::default(),
        })
    }

    fn hear(self: &std::rc::Rc<Self>, event: &crate::live::Event) {
        let crate::live::Event::Change(crate::live::Change::TurnChanged {
            logical_turn_id, ..
        }) = event
        else {
            return;
        };
        if *logical_turn_id == self.turn || !self.seen.borrow_mut().insert(logical_turn_id.clone())
        {
            return;
        }
        if self.reading.replace(true) {
            self.read_again.set(true);
            return;
        }
        let me = self.clone();
        leptos::task::spawn_local(async move {
            loop {
                me.read_again.set(false);
                let path = api::turn_place_path(&me.session_key, &me.turn);
                if let Ok(place) = api::get_json::<ledger::wire::TurnPlace>(path).await {
                    me.show(&place);
                }
                if !me.read_again.get() {
                    break;
                }
            }
            me.reading.set(false);
        });
    }

    /// Rewrites the heading's count and adds the next link the server's heading did not have.
    fn show(&self, place: &ledger::wire::TurnPlace) {
        let Some(nav) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.query_selector(".turn-head nav.turn-nav").ok().flatten())
        else {
            return;
        };
        if let Ok(Some(count)) = nav.query_selector("span") {
            count.set_inner_html(&format!("{} of {}", place.number, place.total));
        }
        let has_next = matches!(nav.query_selector(".next-turn"), Ok(Some(_)));
        if let (Some(next), false) = (&place.next, has_next) {
            let href = crate::routes::turn_href(&self.session_key, &next.logical_turn_id);
            let _ = nav.insert_adjacent_html(
                "beforeend",
                &format!(
                    "<a rel=\"external\" href=\"{}\" class=\"next-turn underline underline-offset-2\">Turn {} →</a>",
                    html_escape::encode_double_quoted_attribute(&href),
                    next.number
                ),
            );
        }
    }
}

/// How many of the turn's outcomes are of `kind` (settled unknown and in flight apart).
fn kind_count(t: &Timeline, kind: CountKind) -> usize {
    match kind {
        CountKind::InFlight => t.in_flight(),
        CountKind::OutcomeUnknown => t.settled_unknown(),
        CountKind::Failed => t.count(ledger::wire::PublishedStatus::Failed),
        CountKind::NotExecuted => t.count(ledger::wire::PublishedStatus::NotExecuted),
        CountKind::Completed => t.count(ledger::wire::PublishedStatus::Completed),
    }
}
