//! Home: find a session or an operation by id; the sessions, most recently active first, paged and
//! filtered in the address (`?prefix=&has_unknown=&tool=&active_after=&active_before=&after=`), "as of"
//! the read, refreshing itself. The time range is in UTC (the form's fields, `datetime-local`, read as
//! UTC: [`crate::components::listing::api_time`]), so it works without JavaScript.

use ledger::wire::{SessionList, SessionSummary};
use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::listing::{
    field_time, listing, value_of, Listing, PageNav, FIELD, ID_FIELD,
};
use crate::components::marks::mark;
use crate::components::time::Time;
use crate::components::{count, ApiErrorPanel, AsOf, Counts};
use crate::routes::find::SearchForm;
use crate::routes::session_href;

/// The filters of the sessions listing, as the API names them (docs/api.md "Sessions").
const FILTERS: [&str; 5] = [
    "prefix",
    "has_unknown",
    "tool",
    "active_after",
    "active_before",
];

#[component]
pub fn HomePage() -> impl IntoView {
    let Listing {
        read: sessions,
        refresh,
        filters,
        later,
    } = listing::<SessionList>("/api/sessions", &FILTERS);
    view! {
        <Title text="Sessions · Outcome ledger"/>
        <h1 class="mb-4 text-2xl font-semibold">"Outcome ledger"</h1>
        <SearchForm/>
        <h2 class="mb-2 text-xl font-semibold">"Sessions"</h2>
        <SessionFilters filters=filters.clone()/>
        <Transition fallback=|| view! { <p>"Loading sessions…"</p> }>
            {move || {
                let filters = filters.clone();
                Suspend::new(async move {
                    match sessions.await {
                        Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                        Ok(list) => {
                            let shown = list.page.sessions.len();
                            view! {
                                <AsOf at=list.as_of.clone() refresh stale=list.stale.clone()/>
                                {(shown == 0).then(|| view! { <p>{if filters.is_empty() { "No sessions yet." } else { "No session matches these filters." }}</p> })}
                                <ul class="sessions divide-y divide-slate-200 dark:divide-slate-800">
                                    {list.page.sessions.into_iter().map(|s| view! { <SessionRow s/> }).collect_view()}
                                </ul>
                                <PageNav shown total=list.page.total next=list.page.next page_path="/" filters later noun="session" nouns="sessions"/>
                            }.into_any()
                        }
                    }
                })
            }}
        </Transition>
    }
}

#[component]
fn SessionRow(s: SessionSummary) -> impl IntoView {
    view! {
        <li class="session flex flex-wrap items-center justify-between gap-2 py-3">
            <div class="min-w-0">
                <a rel="external" class="break-all font-mono underline underline-offset-2" href=session_href(&s.session_key)>
                    <bdi>{mark(&s.session_key)}</bdi>
                </a>
                <p class="text-xs opacity-80">
                    {format!("{} · last activity ", count(s.turn_count, "turn", "turns"))}<Time at=s.last_activity.clone()/>
                </p>
            </div>
            <Counts counts=s.counts/>
        </li>
    }
}

/// The filters as a plain GET form (works without JavaScript); the values in force are filled in.
#[component]
fn SessionFilters(filters: Vec<(&'static str, String)>) -> impl IntoView {
    let prefix = value_of(&filters, "prefix");
    let tool = value_of(&filters, "tool");
    let has_unknown = value_of(&filters, "has_unknown");
    let active_after = field_time(&value_of(&filters, "active_after"));
    let active_before = field_time(&value_of(&filters, "active_before"));
    let time_field = format!("{FIELD} dark:[color-scheme:dark]");
    view! {
        <form method="get" action="/" class="filters mb-3 grid gap-2 sm:grid-cols-3 sm:items-end" aria-label="Filter sessions">
            <label class="flex flex-col text-sm">"Session id starts with"
                <input name="prefix" type="text" value=prefix class=ID_FIELD autocomplete="off" spellcheck="false"/>
            </label>
            <label class="flex flex-col text-sm">"Tool"
                <input name="tool" type="text" value=tool class=ID_FIELD autocomplete="off" spellcheck="false" placeholder="e.g. mcp__dashboards__create"/>
            </label>
            <label class="flex flex-col text-sm">"Open unknown"
                <select name="has_unknown" class=FIELD>
                    <option value="" selected=has_unknown.is_empty()>"Any"</option>
                    <option value="true" selected=has_unknown == "true">"Has an open unknown"</option>
                    <option value="false" selected=has_unknown == "false">"Has none"</option>
                </select>
            </label>
            <label class="flex flex-col text-sm">"Last active from (UTC)"
                <input name="active_after" type="datetime-local" step="1" value=active_after class=time_field.clone()/>
            </label>
            <label class="flex flex-col text-sm">"Last active before (UTC)"
                <input name="active_before" type="datetime-local" step="1" value=active_before class=time_field/>
            </label>
            <div class="flex gap-2">
                <button type="submit" class="rounded bg-sky-700 px-3 py-1 text-sm font-semibold text-white hover:bg-sky-800">"Filter"</button>
                <a rel="external" href="/" class="px-2 py-1 text-sm underline underline-offset-2">"Clear"</a>
            </div>
        </form>
    }
}
