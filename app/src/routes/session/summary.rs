//! The session's summary above its turns: what to quote to support for an unknown outcome.

use ledger::wire::StatusCounts;
use leptos::prelude::*;

use super::{Earlier, TurnBlock};
use crate::components::marks::mark;
use crate::components::outcome::CopyIdButton;
use crate::timeline::Timeline;

/// The session's summary: counts across the whole session (the shown turns live, the earlier ones as
/// last read), and each settled unknown's operation id the page holds, to quote, with a copy button.
#[component]
pub(super) fn Summary(
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
    let unknown_ids = Memo::new(move |_| {
        blocks.with(|bs| {
            bs.iter()
                .flat_map(|b| {
                    b.timeline.with(|t| {
                        t.settled_unknowns()
                            .map(|r| r.outcome.mutation_id.clone())
                            .collect::<Vec<_>>()
                    })
                })
                .collect::<Vec<_>>()
        })
    });
    view! {
        <section class="session-summary mb-5 rounded-md border border-slate-200 p-3 dark:border-slate-800" aria-label="Summary">
            <p class="summary-text font-medium">{move || summary_text(&counts.get())}</p>
            {move || {
                let ids = unknown_ids.get();
                (!ids.is_empty()).then(|| view! {
                    <div class="mt-2 text-sm">
                        <p>{if ids.len() == 1 {
                            "Its result is not established. Quote this operation id to support; do not repeat the write yourself:"
                        } else {
                            "Their results are not established. Quote these operation ids to support; do not repeat the writes yourself:"
                        }}</p>
                        <ul class="mt-1 space-y-1">
                            {ids.into_iter().map(|id| view! {
                                <li class="flex flex-wrap items-center gap-2">
                                    <code class="summary-unknown min-w-0 break-all font-mono text-xs">{mark(&id)}</code>
                                    <CopyIdButton id/>
                                </li>
                            }).collect_view()}
                        </ul>
                    </div>
                })
            }}
            {move || {
                // Settled unknowns whose ids the page does not hold: in earlier turns, or in the earlier
                // rows of a turn.
                let missing = (counts.with(StatusCounts::settled_unknown) as usize)
                    .saturating_sub(unknown_ids.with(Vec::len));
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
