//! Home: find a session or an operation by id; the sessions list for investigators.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api;
use crate::components::{ApiErrorPanel, Counts};
use crate::routes::find::SearchForm;
use crate::routes::session_href;

#[component]
pub fn HomePage() -> impl IntoView {
    let sessions = Resource::new(|| (), |_| api::sessions());
    view! {
        <Title text="Sessions · Outcome ledger"/>
        <h1 class="mb-4 text-2xl font-semibold">"Outcome ledger"</h1>
        <SearchForm/>
        <h2 class="mb-2 text-xl font-semibold">"Sessions"</h2>
        <Suspense fallback=|| view! { <p>"Loading sessions…"</p> }>
            {move || Suspend::new(async move {
                match sessions.await {
                    Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                    Ok(list) if list.sessions.is_empty() => view! { <p>"No sessions yet."</p> }.into_any(),
                    Ok(list) => view! {
                        <ul class="sessions divide-y divide-slate-200 dark:divide-slate-800">
                            {list.sessions.into_iter().map(|s| view! {
                                <li class="session flex flex-wrap items-center justify-between gap-2 py-3">
                                    <div>
                                        <a rel="external" class="break-all font-mono underline underline-offset-2" href=session_href(&s.session_key)>
                                            <bdi>{s.session_key.clone()}</bdi>
                                        </a>
                                        <p class="text-xs opacity-80">
                                            {format!("{} turn(s) · last activity {}", s.turn_count, s.last_activity)}
                                        </p>
                                    </div>
                                    <Counts counts=s.counts/>
                                </li>
                            }).collect_view()}
                        </ul>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}
