//! The support queue: open unknown outcomes across sessions, oldest first, paged and filtered in the
//! address (`?tool=&session_key=&min_age_secs=&after=`), "as of" the read, refreshing itself.

use ledger::wire::UnknownsPage;
use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::{ApiErrorPanel, AsOf};
use crate::routes::listing::{listing, value_of, Listing, PageNav, FIELD, ID_FIELD};
use crate::routes::operation::OperationList;

/// The filters of the queue, as the API names them (docs/api.md "Dashboard reads").
const FILTERS: [&str; 3] = ["tool", "session_key", "min_age_secs"];

#[component]
pub fn UnknownsQueuePage() -> impl IntoView {
    let Listing {
        read: queue,
        refresh,
        filters,
        later,
    } = listing::<UnknownsPage>("/api/unknowns", &FILTERS);
    view! {
        <Title text="Open unknowns · Outcome ledger"/>
        <h1 class="mb-1 text-2xl font-semibold">"Open unknown outcomes"</h1>
        <p class="mb-4 text-sm opacity-80">"Oldest first, with how long each has been unknown and how many notes staff left. Each stays unknown until evidence about its original attempt reconciles it."</p>
        <QueueFilters filters=filters.clone()/>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let filters = filters.clone();
                Suspend::new(async move {
                    match queue.await {
                        Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                        Ok(q) => {
                            let shown = q.page.matches.len();
                            view! {
                                <AsOf at=q.as_of.clone() refresh stale=q.stale.clone()/>
                                {(shown == 0).then(|| view! { <p>{if filters.is_empty() { "No open unknown outcomes." } else { "No open unknown outcome matches these filters." }}</p> })}
                                <OperationList matches=q.page.matches/>
                                <PageNav shown total=q.page.total next=q.page.next page_path="/unknowns" filters later noun="open unknown" nouns="open unknowns"/>
                            }.into_any()
                        }
                    }
                })
            }}
        </Transition>
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
    let tool = value_of(&filters, "tool");
    let session = value_of(&filters, "session_key");
    let age = value_of(&filters, "min_age_secs");
    view! {
        <form method="get" action="/unknowns" class="filters mb-3 grid gap-2 sm:grid-cols-4 sm:items-end" aria-label="Filter the queue">
            <label class="flex flex-col text-sm">"Tool"
                <input name="tool" type="text" value=tool class=ID_FIELD autocomplete="off" spellcheck="false"/>
            </label>
            <label class="flex flex-col text-sm">"Session id"
                <input name="session_key" type="text" value=session class=ID_FIELD autocomplete="off" spellcheck="false"/>
            </label>
            <label class="flex flex-col text-sm">"Open for"
                <select name="min_age_secs" class=FIELD>
                    {AGES.into_iter().map(|(v, words)| view! { <option value=v selected=age == v>{words}</option> }).collect_view()}
                </select>
            </label>
            <div class="flex gap-2">
                <button type="submit" class="rounded bg-sky-700 px-3 py-1 text-sm font-semibold text-white hover:bg-sky-800">"Filter"</button>
                <a rel="external" href="/unknowns" class="px-2 py-1 text-sm underline underline-offset-2">"Clear"</a>
            </div>
        </form>
    }
}
