//! The support queue: open unknown outcomes across sessions, oldest first.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api;
use crate::components::ApiErrorPanel;
use crate::routes::operation::OperationList;

#[component]
pub fn UnknownsPage() -> impl IntoView {
    let queue = Resource::new(|| (), |_| api::unknowns());
    view! {
        <Title text="Open unknowns · Outcome ledger"/>
        <h1 class="mb-1 text-2xl font-semibold">"Open unknown outcomes"</h1>
        <p class="mb-4 text-sm opacity-80">"Oldest first, with how long each has been unknown and how many notes staff left. Each stays unknown until evidence about its original attempt reconciles it."</p>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match queue.await {
                    Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                    Ok(m) if m.matches.is_empty() => view! { <p>"No open unknown outcomes."</p> }.into_any(),
                    Ok(m) => view! { <OperationList matches=m.matches/> }.into_any(),
                }
            })}
        </Suspense>
    }
}
