//! A session: its logical turns, oldest first, with counts and links.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api;
use crate::components::{ApiErrorPanel, Counts, ExportLinks, ViewerNotice};
use crate::routes::{param, turn_href};

#[component]
pub fn SessionPage() -> impl IntoView {
    let key = param(2);
    let turns = Resource::new(move || key.get(), |k| api::session_turns(&k));
    view! {
        <Title text=crate::routes::page_title(move || format!("Session {} · Outcome ledger", key.get()))/>
        <h1 class="mb-1 text-2xl font-semibold">"Session " <bdi class="font-mono">{move || key.get()}</bdi></h1>
        <ViewerNotice/>
        <Suspense fallback=|| view! { <p>"Loading turns…"</p> }>
            {move || Suspend::new(async move {
                match turns.await {
                    Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                    Ok(s) => {
                        let key = s.session_key.clone();
                        view! {
                            <p class="mb-2 text-sm opacity-80">"Last activity " <crate::components::time::Time at=s.last_activity.clone()/></p>
                            <ExportLinks session_key=key.clone()/>
                            <ol class="turns space-y-2">
                                {s.turns.into_iter().enumerate().map(|(i, t)| view! {
                                    <li class="turn flex flex-wrap items-center justify-between gap-2 rounded border border-slate-200 p-3 dark:border-slate-800">
                                        <a rel="external" class="break-all underline underline-offset-2" href=turn_href(&key, &t.logical_turn_id)>
                                            {format!("Turn {} · ", i + 1)}<bdi class="font-mono">{t.logical_turn_id.clone()}</bdi>
                                        </a>
                                        <Counts counts=t.counts/>
                                    </li>
                                }).collect_view()}
                            </ol>
                        }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}
