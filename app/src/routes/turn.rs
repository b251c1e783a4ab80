//! A logical turn's timeline: server-rendered from the entries API, then kept live in the browser (the
//! session's run events, and the entries changed since the last read: `crate::live::TurnFeed`), upserting
//! by `mutation_id` and keeping the recorded order.

use ledger::wire::{PublishedStatus, TurnEntries};
use leptos::prelude::*;
use leptos_meta::Title;

use crate::api;
use crate::components::marks::mark;
use crate::components::outcome::{OutcomeCard, StatusBadge};
use crate::components::ApiErrorPanel;
use crate::routes::{param, session_href};
use crate::timeline::{Connection, Row, Timeline};

#[component]
pub fn TurnPage() -> impl IntoView {
    let key = param(2);
    let turn = param(4);
    let entries = Resource::new(
        move || (key.get(), turn.get()),
        |(k, t)| api::turn_entries(&k, &t),
    );
    view! {
        <Title text=crate::routes::page_title(move || format!("Turn {} · Outcome ledger", mark(&turn.get())))/>
        <p class="mb-1 text-sm">
            <a rel="external" class="underline-offset-2 hover:underline" href=move || session_href(&key.get())>
                "← Session " <bdi class="font-mono">{move || mark(&key.get())}</bdi>
            </a>
        </p>
        <h1 class="mb-4 text-2xl font-semibold">"Turn " <bdi class="font-mono">{move || mark(&turn.get())}</bdi></h1>
        <crate::components::ViewerNotice/>
        <Suspense fallback=|| view! { <p>"Loading the timeline…"</p> }>
            {move || Suspend::new(async move {
                match entries.await {
                    Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                    Ok(e) => view! {
                        <crate::components::ExportLinks session_key=e.session_key.clone()/>
                        <LiveTimeline entries=e/>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The accessible name of a timeline row: status in words, then title (or tool).
fn row_label(r: &Row) -> String {
    let (words, _, _) = crate::components::outcome::status_look(r.outcome.status, r.in_flight);
    let title = r.outcome.title.as_deref().unwrap_or(&r.outcome.tool);
    format!("{words}: {}", mark(title))
}

/// ArrowDown / j and ArrowUp / k move focus to the next / previous row (when a row has focus).
fn move_focus(ev: leptos::ev::KeyboardEvent) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let forward = match ev.key().as_str() {
            "ArrowDown" | "j" => true,
            "ArrowUp" | "k" => false,
            _ => return,
        };
        if ev.ctrl_key() || ev.alt_key() || ev.meta_key() {
            return;
        }
        let Some(row) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .filter(|e| {
                e.class_name()
                    .split_whitespace()
                    .any(|c| c == "timeline-row")
            })
        else {
            return;
        };
        let next = if forward {
            row.next_element_sibling()
        } else {
            row.previous_element_sibling()
        };
        if let Some(next) = next.and_then(|n| n.dyn_into::<web_sys::HtmlElement>().ok()) {
            ev.prevent_default();
            let _ = next.focus();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = ev;
}

#[component]
fn LiveTimeline(entries: TurnEntries) -> impl IntoView {
    let timeline = RwSignal::new(Timeline::from_entries(&entries));
    let connection = RwSignal::new(Connection::Snapshot);
    let filter = RwSignal::new(None::<PublishedStatus>);
    let session_key = entries.session_key.clone();
    let row_session = entries.session_key.clone();
    let turn_id = entries.logical_turn_id.clone();
    #[cfg(feature = "hydrate")]
    let read_through = entries.latest_revision;
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            let feed = crate::live::TurnFeed::new(turn_id.clone(), timeline, read_through);
            crate::live::connect(session_key.clone(), connection, move |live, event| {
                feed.hear(live, &event)
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (&session_key, &turn_id);
    });
    let rows = move || {
        timeline.with(|t| {
            t.rows()
                .iter()
                .filter(|r| filter.get().is_none_or(|f| r.outcome.status == f))
                .cloned()
                .collect::<Vec<Row>>()
        })
    };
    view! {
        <div class="mb-3 flex flex-wrap items-center justify-between gap-3">
            <crate::components::ConnectionIndicator connection/>
            <p class="text-xs opacity-80">"Read through change " <span class="cursor tabular-nums">{move || timeline.with(|t| t.cursor())}</span></p>
        </div>
        <div class="summary mb-4 flex flex-wrap gap-2" role="group" aria-label="Filter by status">
            <button
                type="button"
                class="rounded border px-2 py-0.5 text-sm aria-pressed:font-semibold aria-pressed:ring-2"
                aria-pressed=move || filter.get().is_none().to_string()
                on:click=move |_| filter.set(None)
            >
                {move || format!("All ({})", timeline.with(|t| t.rows().len()))}
            </button>
            {PublishedStatus::ALL.into_iter().map(|s| view! {
                <button
                    type="button"
                    class="filter inline-flex items-center gap-1 rounded border px-2 py-0.5 text-sm aria-pressed:ring-2"
                    data-filter=s.as_str()
                    aria-pressed=move || (filter.get() == Some(s)).to_string()
                    on:click=move |_| filter.set(Some(s))
                >
                    <StatusBadge status=s/>
                    <span class="tabular-nums">{move || timeline.with(|t| t.count(s))}</span>
                </button>
            }).collect_view()}
        </div>
        <p class="sr-only" id="timeline-keys">"Use the arrow keys, or j and k, to move between outcomes."</p>
        <ol class="timeline space-y-3" aria-label="Outcomes of this turn, in recorded order" aria-describedby="timeline-keys" on:keydown=move_focus>
            <For
                each=rows
                key=|r| (r.outcome.mutation_id.clone(), r.revision, r.in_flight, r.sequence, r.settled_at.clone())
                children=move |r| { let label = row_label(&r); let history = crate::routes::history_href(&row_session, &r.outcome.mutation_id); view! {
                    <li aria-label=label class="timeline-row rounded-md focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500" tabindex="0">
                        <OutcomeCard outcome=r.outcome in_flight=r.in_flight revision=r.revision recorded_at=r.recorded_at.clone() settled_at=r.settled_at.clone()/>
                        <a rel="external" class="history-link mt-1 inline-block text-sm underline underline-offset-2" href=history>"History →"</a>
                    </li>
                }}
            />
        </ol>
        {move || timeline.with(|t| t.rows().is_empty()).then(|| view! { <p>"No published outcomes in this turn yet."</p> })}
    }
}
