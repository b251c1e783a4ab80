//! How one outcome reads: status in words, icon and colour (never colour alone); the unknown explanation
//! of seed 002 with the operation id to quote; the server-confirmed title as a safe link.

use ledger::wire::{MutationOutcome, PublishedStatus, Reason};
use leptos::prelude::*;

use crate::components::marks::{mark, marked};

/// Words, icon and tone of a status (a class of `style/main.css`: its background, text and border colours,
/// light and dark). `in_flight` is an unknown whose attempt has not settled yet.
pub fn status_look(
    status: PublishedStatus,
    in_flight: bool,
) -> (&'static str, &'static str, &'static str) {
    match (status, in_flight) {
        (PublishedStatus::Completed, _) => ("Completed", "✓", "tone-completed"),
        (PublishedStatus::Failed, _) => ("Failed", "✕", "tone-failed"),
        (PublishedStatus::NotExecuted, _) => ("Not executed", "⊘", "tone-not-executed"),
        (PublishedStatus::OutcomeUnknown, true) => {
            ("In flight: outcome not yet known", "…", "tone-in-flight")
        }
        (PublishedStatus::OutcomeUnknown, false) => ("Outcome unknown", "?", "tone-unknown"),
    }
}

/// The reason in words, where the record has one.
pub fn reason_text(reason: Reason) -> &'static str {
    match reason {
        Reason::ExecutionTimeout => {
            "The attempt timed out while executing; whether it took effect is not known."
        }
        Reason::PreDispatchDeadline => {
            "Cancelled by its deadline before it was sent: the write was never dispatched."
        }
    }
}

/// Whether `url` may be a link target (the server already keeps only http(s); checked again here).
pub fn safe_href(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}

/// What the pages count, each on its own (docs/design.md "What the person sees"): the settled statuses,
/// and in flight apart. "Outcome unknown" counts settled `outcome_unknown` outcomes only: an in-flight
/// write publishes `outcome_unknown` too, but it is counted (and filtered) as "In flight", never as
/// unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CountKind {
    OutcomeUnknown,
    InFlight,
    Failed,
    NotExecuted,
    Completed,
}

impl CountKind {
    /// Unknown first, then in flight, then the other settled statuses (as [`PublishedStatus::ALL`]).
    pub const ALL: [CountKind; 5] = [
        CountKind::OutcomeUnknown,
        CountKind::InFlight,
        CountKind::Failed,
        CountKind::NotExecuted,
        CountKind::Completed,
    ];

    /// A stable name for tests and styling: the wire spelling of the status, or `in_flight`.
    pub fn as_str(self) -> &'static str {
        match self {
            CountKind::OutcomeUnknown => "outcome_unknown",
            CountKind::InFlight => "in_flight",
            CountKind::Failed => "failed",
            CountKind::NotExecuted => "not_executed",
            CountKind::Completed => "completed",
        }
    }

    /// Its number in `counts` (whose `outcome_unknown` includes in flight, as the API spells it).
    pub fn of(self, counts: &ledger::wire::StatusCounts) -> u64 {
        match self {
            CountKind::OutcomeUnknown => counts.settled_unknown(),
            CountKind::InFlight => counts.in_flight,
            CountKind::Failed => counts.failed,
            CountKind::NotExecuted => counts.not_executed,
            CountKind::Completed => counts.completed,
        }
    }

    /// Whether an outcome of `status`, in flight or not, is of this kind.
    pub fn matches(self, status: PublishedStatus, in_flight: bool) -> bool {
        match self {
            CountKind::InFlight => in_flight,
            CountKind::OutcomeUnknown => status == PublishedStatus::OutcomeUnknown && !in_flight,
            CountKind::Failed => status == PublishedStatus::Failed,
            CountKind::NotExecuted => status == PublishedStatus::NotExecuted,
            CountKind::Completed => status == PublishedStatus::Completed,
        }
    }
}

/// The badge of a count: the status's icon, words and colours; "In flight" for in-flight writes.
#[component]
pub fn CountBadge(kind: CountKind) -> impl IntoView {
    let (words, icon, classes) = match kind {
        CountKind::InFlight => {
            let (_, icon, classes) = status_look(PublishedStatus::OutcomeUnknown, true);
            ("In flight", icon, classes)
        }
        CountKind::OutcomeUnknown => status_look(PublishedStatus::OutcomeUnknown, false),
        CountKind::Failed => status_look(PublishedStatus::Failed, false),
        CountKind::NotExecuted => status_look(PublishedStatus::NotExecuted, false),
        CountKind::Completed => status_look(PublishedStatus::Completed, false),
    };
    view! {
        <span
            class=format!("badge {classes}")
            data-kind=kind.as_str()
        >
            <span aria-hidden="true">{icon}</span>
            <span>{words}</span>
        </span>
    }
}

/// A status badge: icon and words.
#[component]
pub fn StatusBadge(status: PublishedStatus, #[prop(optional)] in_flight: bool) -> impl IntoView {
    let (words, icon, classes) = status_look(status, in_flight);
    view! {
        <span
            class=format!("badge {classes}")
            data-status=status.as_str()
        >
            <span aria-hidden="true">{icon}</span>
            {words}
        </span>
    }
}

/// The title (or the tool name when there is none), linked to the sanitised url only; its Cf characters
/// shown as marks ([`crate::components::marks`]).
#[component]
pub fn OutcomeTitle(outcome: MutationOutcome) -> impl IntoView {
    let text = mark(outcome.title.as_deref().unwrap_or(&outcome.tool));
    let has_title = outcome.title.is_some();
    let class = if has_title { "o-title" } else { "o-tool" };
    match outcome.url.filter(|u| safe_href(u)) {
        Some(url) => view! {
            <a
                href=url
                tabindex=crate::components::roving::control_tabindex()
                target="_blank"
                rel="noopener noreferrer nofollow"
                class=format!("{class} o-link")
            >
                <bdi class="outcome-title">{text}</bdi>
            </a>
        }
        .into_any(),
        None => view! { <bdi class=format!("{class} outcome-title")>{text}</bdi> }.into_any(),
    }
}

/// The plain message of an unknown outcome (seed 002, "Tell the user…"): what is known, and what the
/// reader can do, with the operation id. An end user (the default) is told not to repeat it and to
/// quote the id to support; staff (`for_staff`), who are that support, are told to check it with the
/// provider and reconcile it (docs/design.md "What the person sees").
#[component]
pub fn UnknownExplanation(
    mutation_id: String,
    #[prop(optional)] in_flight: bool,
    #[prop(optional)] for_staff: bool,
) -> impl IntoView {
    let lead = match (in_flight, for_staff) {
        (true, false) => "This write was started and has not reported back yet. Until it does, its result is not established.",
        (false, false) => "The result of this write is not established. The original operation is under investigation, and automatic resend is paused.",
        (true, true) => "Started and not reported back yet: its result is not established until it reports or is reconciled.",
        (false, true) => "Not established: nothing shows whether the provider carried it out. Automatic resend stays paused until it is reconciled.",
    };
    let todo = match (in_flight, for_staff) {
        (true, false) => "Do not repeat it yourself: wait for it to report back. If it stays like this, quote the operation id below to support.",
        (false, false) => "Do not repeat this action yourself: it may already have taken effect. Quote the operation id below to support; they will check it with the provider.",
        (true, true) => "If it stays like this, look the operation id up with the provider and reconcile it with what you find.",
        (false, true) => "Look the operation id up with the provider, then reconcile it below with what you find. Do not send it again before that: it may already have taken effect.",
    };
    let id_label = if for_staff {
        "Operation id:"
    } else {
        "Operation id to quote:"
    };
    view! {
        <div class="unknown-explanation" data-audience=if for_staff { "staff" } else { "end-user" }>
            <p>{lead}</p>
            {(!for_staff).then(|| view! { <p>"It is not shown as done or failed, because there is no evidence either way yet."</p> })}
            <p class="what-to-do">{todo}</p>
            <p class="o-quote">
                <span>{id_label}</span>
                <code class="operation-id">
                    {mark(&mutation_id)}
                </code>
                <CopyIdButton id=mutation_id/>
            </p>
        </div>
    }
}

/// A copy button for an operation id: copies the raw id; its accessible name names the id as shown
/// (marked): "Copy operation id dash-create-1".
#[component]
pub fn CopyIdButton(id: String) -> impl IntoView {
    let name = format!("Copy operation id {}", marked(&id));
    view! { <CopyButton text=id name/> }
}

/// How long "Copied" shows before the button reads its label again.
pub const COPIED_MS: u64 = 2000;

/// Copies `text` to the clipboard. The button reads `label` (default "Copy operation id"); its
/// accessible name is `name` (default: the label). Once copied, "Copied" shows and is announced in a
/// polite live region beside it for [`COPIED_MS`], then goes; every click copies again.
#[component]
pub fn CopyButton(
    text: String,
    #[prop(optional)] label: Option<&'static str>,
    #[prop(optional, into)] name: Option<String>,
) -> impl IntoView {
    let label = label.unwrap_or("Copy operation id");
    let name = name.unwrap_or_else(|| label.to_owned());
    let copied = RwSignal::new(false);
    // Clicks so far: a reset timer only clears the message of its own click.
    let clicks = RwSignal::new(0u64);
    let on_click = move |_| {
        #[cfg(feature = "hydrate")]
        {
            if let Some(window) = web_sys::window() {
                let _ = window.navigator().clipboard().write_text(&text);
                let click = clicks.get_untracked() + 1;
                clicks.set(click);
                copied.set(true);
                set_timeout(
                    move || {
                        if clicks.try_get_untracked() == Some(click) {
                            copied.set(false);
                        }
                    },
                    std::time::Duration::from_millis(COPIED_MS),
                );
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (&text, clicks, copied);
    };
    view! {
        <span class="copy">
            <button
                type="button"
                aria-label=name
                tabindex=crate::components::roving::control_tabindex()
                class="copy-operation-id"
                on:click=on_click
            >
                {label}
            </button>
            <span class="copy-status" role="status" aria-live="polite">
                {move || copied.get().then_some("Copied")}
            </span>
        </span>
    }
}

/// One outcome as a card: badge, title, tool, reason, and for an unknown outcome the explanation.
#[component]
pub fn OutcomeCard(
    outcome: MutationOutcome,
    #[prop(optional)] in_flight: bool,
    revision: Option<i64>,
    /// When the entry was recorded and last settled (RFC 3339), when known.
    #[prop(default = None)]
    recorded_at: Option<String>,
    #[prop(default = None)] settled_at: Option<String>,
    /// The reader is staff: the explanation of an unknown outcome speaks to support, not to the end user.
    #[prop(optional)]
    for_staff: bool,
) -> impl IntoView {
    let status = outcome.status;
    let unknown = status == PublishedStatus::OutcomeUnknown;
    let (words, _icon, classes) = status_look(status, in_flight);
    let reason = outcome.reason.map(reason_text);
    let mutation_id = outcome.mutation_id.clone();
    // The tool heads the card when there is no title; then it is not repeated below. The resource id
    // only with what names it (its title or its link): "resource 478" alone tells an end user nothing.
    let named = outcome.title.is_some() || outcome.url.as_deref().is_some_and(safe_href);
    let details = [
        outcome.title.is_some().then(|| mark(&outcome.tool)),
        outcome
            .resource_id
            .as_ref()
            .filter(|_| named)
            .map(|id| format!("resource {}", marked(id))),
        revision.map(|r| format!("revision {r}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    view! {
        <div class=format!("outcome {classes}") data-mutation-id=mutation_id.clone() data-status=status.as_str()>
            <div class="o-head">
                // The card's own badge, in the card's tone, its icon drawn by the stylesheet from the tone
                // (`.o-head > .badge::before`, hidden from screen readers): the same icon as [`status_look`]
                // names, without an element of its own in every row.
                <span class="badge">{words}</span>
                <OutcomeTitle outcome=outcome.clone()/>
            </div>
            <p class="o-meta"><bdi class="details">{details}</bdi></p>
            <RowTimes status in_flight recorded_at settled_at/>
            {reason.map(|r| view! { <p class="reason mt-1 text-sm">{r}</p> })}
            {unknown.then(|| view! { <UnknownExplanation mutation_id=mutation_id.clone() in_flight for_staff/> })}
            {(!unknown).then(|| view! {
                <p class="o-meta">"Operation id: "<code class="operation-id">{mark(&mutation_id)}</code></p>
            })}
        </div>
    }
}

/// When a row was recorded and settled, as `<time>` elements with their ages (docs/design.md "What the
/// person sees"): an in-flight write says how long it has been in flight, a settled unknown how long it has
/// been unknown.
#[component]
fn RowTimes(
    status: PublishedStatus,
    in_flight: bool,
    recorded_at: Option<String>,
    settled_at: Option<String>,
) -> impl IntoView {
    use crate::components::time::Time;
    if recorded_at.is_none() && settled_at.is_none() {
        return None;
    }
    let settled_words = match status {
        PublishedStatus::OutcomeUnknown => "unknown since ",
        PublishedStatus::NotExecuted => "cancelled ",
        _ => "settled ",
    };
    // "Recorded … · settled …", or "Settled …" alone when the recorded time is shown elsewhere.
    let settled_words = if recorded_at.is_some() {
        format!(" · {settled_words}")
    } else {
        let mut w = settled_words.to_owned();
        w[..1].make_ascii_uppercase();
        w
    };
    Some(view! {
        <p class="row-times">
            {recorded_at.map(|at| view! {
                <span class="recorded">{if in_flight { "In flight since " } else { "Recorded " }}<Time at/></span>
            })}
            {settled_at.filter(|_| !in_flight).map(|at| view! {
                <span class="settled">{settled_words}<Time at/></span>
            })}
        </p>
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A card's badge icon is drawn by the stylesheet (`.o-head > .badge::before`): each tone's rule there
    /// draws the icon [`status_look`] names, with empty alternative text (and without, for a browser that
    /// has none).
    #[test]
    fn the_stylesheet_draws_the_icon_of_status_look_on_each_card_badge() {
        let css = include_str!("../../../style/main.css");
        for status in [
            PublishedStatus::Completed,
            PublishedStatus::Failed,
            PublishedStatus::NotExecuted,
            PublishedStatus::OutcomeUnknown,
        ] {
            for in_flight in [false, true] {
                let (_, icon, tone) = status_look(status, in_flight);
                let rule = format!(
                    ".{tone} > .o-head > .badge::before {{\n    content: \"{icon}\";\n    content: \"{icon}\" / \"\";\n  }}"
                );
                assert!(css.contains(&rule), "style/main.css lacks {rule}");
            }
        }
    }
}
