//! One turn of the session page, with its heading, its collapse button and its newest rows.

use leptos::prelude::*;

use super::map::{format_turns, Map};
use super::{id_repeats_label, TurnBlock};
use crate::components::marks::mark;
use crate::components::time::Time;
use crate::components::timeline_rows::TimelineRows;
use crate::components::Counts;
use crate::routes::{session_href, turn_href};
use crate::timeline::Timeline;

/// One turn: its heading ("Turn 3", the id beside it only when it says more, when it started, its
/// counts), a collapse button (a GET form: the address with this turn toggled in `?collapsed=`, so it
/// works without JavaScript) and, unless collapsed, its newest rows.
#[component]
pub(super) fn TurnSection(map: Map, number: usize, block: TurnBlock) -> impl IntoView {
    let timeline = block.timeline;
    let shown = block.shown;
    let turn = block.logical_turn_id.clone();
    let session = map.key.clone();
    let href = turn_href(&session, &turn);
    let more_href = href.clone();
    let collapsed = map.collapsed;
    let is_collapsed = move || collapsed.with(|c| c.contains(&number));
    // The turn's newest rows, in recorded order (live ones included).
    let rows = Memo::new(move |_| timeline.with(|t| t.newest_rows(shown).to_vec()));
    let more = move || {
        let total = timeline.with(Timeline::len);
        let on_page = rows.with(Vec::len);
        (total > on_page).then(|| {
            let hidden = total - on_page;
            view! {
                <p class="turn-more mb-2 text-sm" data-hidden=hidden>
                    {if hidden == 1 {
                        format!("1 earlier outcome of this turn is not shown here (the newest {on_page} of {total} are). ")
                    } else {
                        format!("{hidden} earlier outcomes of this turn are not shown here (the newest {on_page} of {total} are). ")
                    }}
                    <a rel="external" class="underline underline-offset-2" href=more_href.clone()>"See them all on the turn's page"</a>
                </p>
            }
        })
    };
    let id = (!id_repeats_label(&turn, number)).then(|| mark(&turn));
    let label = if id.is_some() {
        format!("Turn {number} · ")
    } else {
        format!("Turn {number}")
    };
    let toggled = move || {
        collapsed.with(|c| {
            let mut c = c.clone();
            if !c.remove(&number) {
                c.insert(number);
            }
            format_turns(&c)
        })
    };
    let toggle_map = map.clone();
    let body_id = format!("turn-{number}-rows");
    let action = format!("{}#turn-{number}", session_href(&session));
    view! {
        <li class="turn scroll-mt-4" id=format!("turn-{number}") data-turn-id=turn.clone() data-turn-number=number
            data-collapsed=move || is_collapsed().to_string()>
            <div class="mb-2 flex flex-wrap items-start justify-between gap-2">
                <h2 id=format!("turn-{number}-title") tabindex="-1" class="flex min-w-0 flex-wrap items-baseline gap-x-3 gap-y-1 text-lg font-semibold focus:outline-none">
                    <a rel="external" class="break-all underline underline-offset-2" href=href>
                        {label}
                        {id.map(|id| view! { <bdi class="font-mono">{id}</bdi> })}
                    </a>
                    <span class="text-xs font-normal opacity-80">"Started " <Time at=block.first_recorded_at.clone()/></span>
                    <span class="text-sm font-normal">{move || view! { <Counts counts=timeline.with(Timeline::counts)/> }}</span>
                </h2>
                <form method="get" action=action
                    on:submit=move |ev| {
                        ev.prevent_default();
                        let collapse = !toggle_map.collapsed.with_untracked(|c| c.contains(&number));
                        toggle_map.set(&[number], collapse);
                    }>
                    <input type="hidden" name="collapsed" value=toggled/>
                    <button type="submit" aria-controls=body_id.clone() aria-expanded=move || (!is_collapsed()).to_string()
                        class="collapse-toggle rounded border border-slate-400 px-2 py-0.5 text-sm hover:bg-slate-100 focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 dark:border-slate-600 dark:hover:bg-slate-800">
                        <span aria-hidden="true">{move || if is_collapsed() { "▸ " } else { "▾ " }}</span>
                        {move || if is_collapsed() { "Expand" } else { "Collapse" }}
                        <span class="sr-only">{format!(" turn {number}")}</span>
                    </button>
                </form>
            </div>
            <div id=body_id hidden=is_collapsed>
                {move || (!is_collapsed()).then(|| {
                    let session = session.clone();
                    view! {
                        {more.clone()}
                        <TimelineRows session rows label=format!("Outcomes of turn {number}, in recorded order") class="space-y-2"/>
                        {move || timeline.with(Timeline::is_empty).then(|| view! { <p class="text-sm">"No published outcomes in this turn yet."</p> })}
                    }
                })}
            </div>
        </li>
    }
    .into_any()
}
