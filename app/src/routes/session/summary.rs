//! The session's summary above its turns (docs/design.md "What the person sees"): what happened, and each
//! unknown outcome by what it was (its title, else its tool in words), its turn and the id to quote.

use ledger::wire::StatusCounts;
use leptos::prelude::*;

use super::{Earlier, TurnBlock};
use crate::components::marks::{mark, readable_tool};
use crate::components::outcome::CopyIdButton;
use crate::routes::history_href;
use crate::support::SupportLink;
use crate::timeline::Timeline;

/// Unknown outcomes the summary lists before the rest fold into "N more unknown outcomes" (a
/// `<details>` that opens without JavaScript), so the turns stay near the top of the page.
pub const SHOWN_UNKNOWNS: usize = 5;

/// One settled unknown outcome as the summary lists it.
#[derive(Debug, Clone, PartialEq)]
struct Unknown {
    /// The turn's number on this page and its id.
    turn: usize,
    mutation_id: String,
    title: Option<String>,
    tool: String,
}

/// The session's summary: counts across the whole session (the shown turns live, the earlier ones as
/// last read), then each settled unknown the page holds (`li.summary-item`): its title, else its tool in
/// words with the raw name as the link's `title` (a link to its operation page), its turn (a link to the
/// turn on this page), and its operation id (`code.summary-unknown`) with a copy button. The first
/// [`SHOWN_UNKNOWNS`] show; the rest are one click away.
#[component]
pub(super) fn Summary(
    session_key: String,
    blocks: RwSignal<Vec<TurnBlock>>,
    earlier: RwSignal<Earlier>,
) -> impl IntoView {
    let counts = Memo::new(move |_| {
        let mut c = earlier.with(|e| e.counts.clone());
        blocks.with(|bs| {
            for b in bs {
                c.add_all(&b.timeline.with(Timeline::counts));
            }
        });
        c
    });
    let unknowns = Memo::new(move |_| {
        let before = earlier.with(|e| e.turns) as usize;
        blocks.with(|bs| {
            bs.iter()
                .enumerate()
                .flat_map(|(i, b)| {
                    b.timeline.with(|t| {
                        t.settled_unknowns()
                            .map(|r| Unknown {
                                turn: before + i + 1,
                                mutation_id: r.outcome.mutation_id.clone(),
                                title: r.outcome.title.clone(),
                                tool: r.outcome.tool.clone(),
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect::<Vec<_>>()
        })
    });
    // The first few with a copy button; the rest, folded away, copy from their cards below (a page of
    // 500 rows stays within its budget).
    let item = move |u: Unknown, copy: bool| {
        let what = u
            .title
            .as_deref()
            .map_or_else(|| readable_tool(&u.tool), mark);
        let turn = format!("Turn {}", u.turn);
        view! {
            <li class="summary-item">
                <p>
                    <a rel="external" class="summary-what" href=history_href(&session_key, &u.mutation_id) title=u.tool.clone()><bdi>{what}</bdi></a>
                    <a rel="external" class="summary-turn" href=format!("#turn-{}", u.turn)>{turn}</a>
                </p>
                <p><code class="summary-unknown">{mark(&u.mutation_id)}</code>{copy.then(|| view! { <CopyIdButton id=u.mutation_id/> })}</p>
            </li>
        }
    };
    view! {
        <section class="session-summary mb-4 rounded-md border border-slate-200 p-3 dark:border-slate-800" aria-label="Summary">
            <p class="summary-text font-medium">{move || summary_text(&counts.get())}</p>
            {move || {
                let mut list = unknowns.get();
                (!list.is_empty()).then(|| {
                    let rest = list.split_off(list.len().min(SHOWN_UNKNOWNS));
                    let n = list.len() + rest.len();
                    view! {
                        <div class="mt-2 text-sm">
                            <p class="summary-todo">
                                {if n == 1 {
                                    "Its result is not established: do not repeat it yourself. Quote its operation id to "
                                } else {
                                    "Their results are not established: do not repeat them yourself. Quote each operation id to "
                                }}
                                <SupportLink/>"."
                            </p>
                            <ul class="summary-unknowns mt-2 space-y-2">{list.into_iter().map(|u| item(u, true)).collect_view()}</ul>
                            {(!rest.is_empty()).then(|| view! {
                                <details class="summary-more mt-2">
                                    <summary class="cursor-pointer underline underline-offset-2">{
                                        if rest.len() == 1 { "1 more unknown outcome".to_owned() } else { format!("{} more unknown outcomes", rest.len()) }
                                    }</summary>
                                    <ul class="mt-2 space-y-2">{rest.into_iter().map(|u| item(u, false)).collect_view()}</ul>
                                </details>
                            })}
                        </div>
                    }
                })
            }}
            {move || {
                // Settled unknowns whose ids the page does not hold: in earlier turns, or in the earlier
                // rows of a turn.
                let missing = (counts.with(StatusCounts::settled_unknown) as usize)
                    .saturating_sub(unknowns.with(Vec::len));
                (missing > 0).then(|| view! {
                    <p class="rest-unknowns mt-2 text-sm">{if missing == 1 {
                        "1 more unknown outcome is in an earlier turn or in the earlier rows of a turn, not shown here: open its turn to quote its id.".to_owned()
                    } else {
                        format!("{missing} more unknown outcomes are in earlier turns or in the earlier rows of a turn, not shown here: open each turn to quote its id.")
                    }}</p>
                })
            }}
        </section>
    }
}

/// `3 completed, 1 failed, 1 in flight, 1 unknown` (zero counts left out; "No outcomes yet." when all are).
/// In flight and unknown are counted apart: "unknown" is settled `outcome_unknown` only.
pub fn summary_text(c: &StatusCounts) -> String {
    let parts: Vec<String> = [
        (c.completed, "completed"),
        (c.failed, "failed"),
        (c.not_executed, "not executed"),
        (c.in_flight, "in flight"),
        (c.settled_unknown(), "unknown"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    if parts.is_empty() {
        "No outcomes yet.".to_owned()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_says_in_flight_and_unknown_apart() {
        let c = StatusCounts {
            completed: 1,
            failed: 0,
            not_executed: 0,
            outcome_unknown: 1,
            in_flight: 1,
        };
        assert_eq!(summary_text(&c), "1 completed, 1 in flight");
    }
}
