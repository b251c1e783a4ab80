//! Support look-up: an operation by its id (`mutation_id`), every match across sessions.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api;
use crate::components::marks::mark;
use crate::components::outcome::OutcomeCard;
use crate::components::time::{open_for, Time};
use crate::components::ApiErrorPanel;
use crate::routes::{history_href, param, session_href, turn_href};

#[component]
pub fn LookupPage() -> impl IntoView {
    let id = param(2);
    let found = Resource::new(move || id.get(), |id| api::operation(&id));
    let caller = use_context::<crate::CallerResource>();
    view! {
        <Title text=crate::routes::page_title(move || format!("Operation {} · Outcome ledger", mark(&id.get())))/>
        <h1 class="mb-4 break-all text-2xl font-semibold">"Operation " <bdi class="font-mono">{move || mark(&id.get())}</bdi></h1>
        <Suspense fallback=|| view! { <p>"Looking up…"</p> }>
            {move || Suspend::new(async move {
                let viewer = crate::components::is_viewer(caller).await;
                match found.await {
                    Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                    Ok(m) if m.matches.is_empty() => {
                        crate::components::set_page_status(404);
                        view! {
                        <p class="no-match">"No published outcome has this operation id. Check the id, or the session may have expired."</p>
                    }.into_any()
                    }
                    Ok(m) => view! { <OperationList matches=m.matches viewer/> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// A list of operations with their session and turn, each linking to its history page; for an open
/// entry (unknown or in flight) how long it has been open, and how many staff notes it has. `viewer`:
/// the reader is an end user (a viewer link), who reads no revision numbers.
#[component]
pub fn OperationList(
    matches: Vec<ledger::wire::OperationMatch>,
    #[prop(optional)] viewer: bool,
) -> impl IntoView {
    view! {
        <ul class="operations space-y-4">
            {matches.into_iter().map(|m| {
                let turn = m.entry.outcome.logical_turn_id.clone();
                let in_flight = m.entry.ledger_status == ledger::wire::LedgerStatus::ExecutionStarted;
                let history = history_href(&m.session_key, &m.entry.outcome.mutation_id);
                let mutation_id = m.entry.outcome.mutation_id.clone();
                let open = m.age_secs.map(|a| {
                    let what = if in_flight { "in flight" } else { "unknown" };
                    format!("{what} {}", open_for(a))
                });
                // Absent for a viewer: the server leaves staff notes out of what an end user reads.
                let notes = match m.notes.unwrap_or(0) {
                    0 => None,
                    1 => Some("1 note".to_owned()),
                    n => Some(format!("{n} notes")),
                };
                view! {
                    <li class="operation" data-mutation-id=mutation_id>
                        <p class="mb-1 text-sm">
                            "Session "
                            <a rel="external" class="break-all font-mono underline underline-offset-2" href=session_href(&m.session_key)><bdi>{mark(&m.session_key)}</bdi></a>
                            " · turn "
                            <a rel="external" class="break-all font-mono underline underline-offset-2" href=turn_href(&m.session_key, &turn)><bdi>{mark(&turn)}</bdi></a>
                            " · recorded "
                            <Time at=m.entry.recorded_at.clone()/>
                        </p>
                        <OutcomeCard outcome=m.entry.outcome in_flight revision=m.entry.mutation_revision.filter(|_| !viewer) settled_at=m.entry.settled_at.clone()
                            deadline_at=m.entry.deadline_at.clone() settled_by=m.entry.settled_by established_by=m.entry.established_by deadline=!viewer/>
                        <p class="mt-1 flex flex-wrap items-center gap-x-3 text-sm">
                            {open.map(|o| view! { <span class="age font-medium" data-age-secs=m.age_secs.unwrap_or(0)>{o}</span> })}
                            {notes.map(|n| view! { <span class="notes" data-notes=m.notes.unwrap_or(0)>{n}</span> })}
                            <a rel="external" class="history-link underline underline-offset-2" href=history>"History and actions →"</a>
                        </p>
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}
