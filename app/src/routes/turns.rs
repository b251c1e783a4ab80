//! Every logical turn of a session, oldest first, a page at a time (docs/api.md "Turns"): where the
//! session page's "earlier turns" link leads, without JavaScript. Each turn links to its turn page and
//! shows its counts as read.

use ledger::wire::SessionTurns;
use leptos::prelude::*;
use leptos_meta::Title;

use crate::api;
use crate::components::listing::query_string;
use crate::components::marks::mark;
use crate::components::time::Time;
use crate::components::{count, ApiErrorPanel, Counts, ViewerNotice};
use crate::routes::session::id_repeats_label;
use crate::routes::{param, session_href, turn_href, turns_href};

/// Turns one page lists.
pub const TURNS_PER_PAGE: usize = 200;

#[component]
pub fn TurnsPage() -> impl IntoView {
    let key = param(2);
    let after = crate::address::query_value("after").filter(|a| !a.is_empty());
    let later = after.is_some();
    let reader = api::reader();
    let turns = Resource::new(
        move || key.get(),
        move |k| {
            let mut q = vec![("limit", TURNS_PER_PAGE.to_string())];
            if let Some(a) = after.clone() {
                q.push(("after", a));
            }
            reader.get_json::<SessionTurns>(format!(
                "{}{}",
                api::session_turns_path(&k),
                query_string(&q)
            ))
        },
    );
    view! {
        <Title text=crate::routes::page_title(move || format!("Turns of session {} · Outcome ledger", mark(&key.get())))/>
        <p class="mb-1 text-sm">
            <a rel="external" class="underline-offset-2 hover:underline" href=move || session_href(&key.get())>
                "← Session " <bdi class="font-mono">{move || mark(&key.get())}</bdi>
            </a>
        </p>
        <h1 class="mb-4 break-all text-2xl font-semibold">"Every turn of session " <bdi class="font-mono">{move || mark(&key.get())}</bdi></h1>
        <ViewerNotice/>
        <Suspense fallback=|| view! { <p>"Loading the turns…"</p> }>
            {move || Suspend::new(async move {
                match turns.await {
                    Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                    Ok(t) => view! { <TurnList turns=t later/> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn TurnList(turns: SessionTurns, later: bool) -> impl IntoView {
    let key = turns.session_key.clone();
    let shown = turns.turns.len();
    let first = later.then(|| turns_href(&key));
    let next = turns
        .next
        .clone()
        .map(|n| format!("{}{}", turns_href(&key), query_string(&[("after", n)])));
    let nav = move || {
        view! {
            <nav class="page-nav my-3 flex flex-wrap items-center gap-3 text-sm" aria-label="Pages">
                <span class="page-count" data-shown=shown data-total=turns.total>
                    {format!("Showing {shown} of {}, oldest first", count(turns.total, "turn", "turns"))}
                    {later.then_some(" (a later page)")}
                </span>
                {first.clone().map(|href| view! { <a rel="external" class="first-page underline underline-offset-2" href=href>"← First page"</a> })}
                {next.clone().map(|href| view! { <a rel="external" class="next-page underline underline-offset-2" href=href>"Next page →"</a> })}
            </nav>
        }
    };
    view! {
        {nav()}
        <ol class="turn-list space-y-2" aria-label="Turns of this session, oldest first">
            {turns.turns.into_iter().map(|t| {
                // "Turn 3", with the turn's id only when it says more than its number (as on the session page).
                let number = usize::try_from(t.number).unwrap_or(0);
                let id = (number == 0 || !id_repeats_label(&t.logical_turn_id, number)).then(|| mark(&t.logical_turn_id));
                let label = match (number, id.is_some()) {
                    (0, _) => "Turn ".to_owned(),
                    (n, true) => format!("Turn {n} · "),
                    (n, false) => format!("Turn {n}"),
                };
                view! {
                <li class="turn-item flex flex-wrap items-center gap-x-3 gap-y-1" data-turn-id=t.logical_turn_id.clone() data-turn-number=t.number>
                    <a rel="external" class="break-all underline underline-offset-2" href=turn_href(&key, &t.logical_turn_id)>
                        {label}
                        {id.map(|id| view! { <bdi class="font-mono">{id}</bdi> })}
                    </a>
                    <span class="text-xs opacity-80">"Started " <Time at=t.first_recorded_at.clone()/></span>
                    {if t.counts.total() == 0 {
                        view! { <span class="text-sm opacity-80">"No published outcomes"</span> }.into_any()
                    } else {
                        view! { <Counts counts=t.counts/> }.into_any()
                    }}
                </li>
            }}).collect_view()}
        </ol>
        {(shown == 0).then(|| view! { <p>"No logical turns yet."</p> })}
        {nav()}
    }
}
