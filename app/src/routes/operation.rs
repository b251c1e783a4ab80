//! Support look-up: an operation by its id (`mutation_id`), every match across sessions.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api;
use crate::components::outcome::OutcomeCard;
use crate::components::ApiErrorPanel;
use crate::routes::{param, session_href, turn_href};

#[component]
pub fn OperationPage() -> impl IntoView {
    let id = param("mutation_id");
    let found = Resource::new(move || id.get(), |id| api::operation(&id));
    view! {
        <Title text=crate::routes::page_title(move || format!("Operation {} · Outcome ledger", id.get()))/>
        <h1 class="mb-4 break-all text-2xl font-semibold">"Operation " <bdi class="font-mono">{move || id.get()}</bdi></h1>
        <Suspense fallback=|| view! { <p>"Looking up…"</p> }>
            {move || Suspend::new(async move {
                match found.await {
                    Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                    Ok(m) if m.matches.is_empty() => {
                        crate::components::set_page_status(404);
                        view! {
                        <p class="no-match">"No published outcome has this operation id. Check the id, or the session may have expired."</p>
                    }.into_any()
                    }
                    Ok(m) => view! { <OperationList matches=m.matches/> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// A list of operations with their session and turn.
#[component]
pub fn OperationList(matches: Vec<ledger::wire::OperationMatch>) -> impl IntoView {
    view! {
        <ul class="operations space-y-4">
            {matches.into_iter().map(|m| {
                let turn = m.entry.outcome.logical_turn_id.clone();
                let in_flight = m.entry.ledger_status == ledger::wire::LedgerStatus::ExecutionStarted;
                view! {
                    <li class="operation">
                        <p class="mb-1 text-sm">
                            "Session "
                            <a class="break-all font-mono underline underline-offset-2" href=session_href(&m.session_key)><bdi>{m.session_key.clone()}</bdi></a>
                            " · turn "
                            <a class="break-all font-mono underline underline-offset-2" href=turn_href(&m.session_key, &turn)><bdi>{turn.clone()}</bdi></a>
                            {format!(" · recorded {}", m.entry.recorded_at)}
                        </p>
                        <OutcomeCard outcome=m.entry.outcome in_flight revision=m.entry.mutation_revision/>
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}
