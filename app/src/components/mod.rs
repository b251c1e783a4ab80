//! Pieces shared by the pages.

pub mod outcome;

use ledger::wire::{PublishedStatus, StatusCounts};
use leptos::prelude::*;

use self::outcome::StatusBadge;

/// Counts by status, unknown first, as badges with numbers.
#[component]
pub fn Counts(counts: StatusCounts) -> impl IntoView {
    view! {
        <span class="flex flex-wrap gap-2">
            {PublishedStatus::ALL
                .into_iter()
                .filter(|s| counts.get(*s) > 0)
                .map(|s| view! {
                    <span class="inline-flex items-center gap-1 text-sm" data-count=s.as_str()>
                        <StatusBadge status=s/>
                        <span class="font-semibold tabular-nums">{counts.get(s)}</span>
                    </span>
                })
                .collect_view()}
            {(counts.in_flight > 0).then(|| view! {
                <span class="text-xs opacity-80" data-count="in_flight">{format!("({} in flight)", counts.in_flight)}</span>
            })}
        </span>
    }
}

/// An error panel for a failed read.
#[component]
pub fn ErrorPanel(message: String) -> impl IntoView {
    view! {
        <div role="alert" class="error-panel rounded-md border-l-4 border-red-600 bg-red-50 p-3 text-red-900 dark:bg-red-950 dark:text-red-100">
            {message}
        </div>
    }
}
