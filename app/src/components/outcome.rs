//! How one outcome reads: status in words, icon and colour (never colour alone); the unknown explanation
//! of seed 002 with the operation id to quote; the server-confirmed title as a safe link.

use ledger::wire::{EstablishedBy, MutationOutcome, PublishedStatus, Reason, SettledBy};
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
            "It timed out while running; whether it took effect is not known."
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
/// polite live region beside it for [`COPIED_MS`], then goes; every click copies again. The region's text
/// is written by the click ([`copy_and_say`]), not by a signal: nothing of the button is reactive, so a
/// page with many of them (a session's summary of unknowns) hydrates only their listeners.
#[component]
pub fn CopyButton(
    text: String,
    #[prop(optional)] label: Option<&'static str>,
    #[prop(optional, into)] name: Option<String>,
) -> impl IntoView {
    let label = label.unwrap_or("Copy operation id");
    let name = name.unwrap_or_else(|| label.to_owned());
    #[cfg(feature = "hydrate")]
    let on_click = {
        use wasm_bindgen::JsCast;
        let clicks = std::rc::Rc::new(std::cell::Cell::new(0u64));
        move |ev: leptos::ev::MouseEvent| {
            if let Some(button) = ev
                .current_target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            {
                copy_and_say(&text, &button, &clicks);
            }
        }
    };
    #[cfg(not(feature = "hydrate"))]
    let on_click = move |_: leptos::ev::MouseEvent| {
        let _ = &text;
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
            <span class="copy-status" role="status" aria-live="polite"></span>
        </span>
    }
}

/// Copies `text` and says so: "Copied" in `button`'s next sibling `.copy-status` for [`COPIED_MS`].
/// `clicks` counts the button's clicks, so that only the last click's timer clears the message.
#[cfg(feature = "hydrate")]
fn copy_and_say(text: &str, button: &web_sys::Element, clicks: &std::rc::Rc<std::cell::Cell<u64>>) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let _ = window.navigator().clipboard().write_text(text);
    let Some(status) = button
        .next_element_sibling()
        .filter(|s| s.class_list().contains("copy-status"))
    else {
        return;
    };
    let click = clicks.get() + 1;
    clicks.set(click);
    status.set_text_content(Some("Copied"));
    let clicks = clicks.clone();
    set_timeout(
        move || {
            if clicks.get() == click {
                status.set_text_content(Some(""));
            }
        },
        std::time::Duration::from_millis(COPIED_MS),
    );
}

/// One outcome as a card: badge, title, tool, times, reason, and for an unknown outcome the explanation
/// with the operation id to quote and a copy button.
///
/// The card is one element whose content is HTML written by [`card_html`], on the server and in the
/// browser alike (a live row's card is written the same way): hydration adopts it as one node instead of
/// walking some 30 views a row, which on a 200-row turn page was most of hydration's one long task
/// (docs/performance.md "First load"). What is interactive in it is delegated to the card's element: the copy
/// button's click, and its times, which the page clock writes ([`crate::components::time`]).
#[component]
pub fn OutcomeCard(
    outcome: MutationOutcome,
    #[prop(optional)] in_flight: bool,
    revision: Option<i64>,
    /// When the entry was recorded and last settled (RFC 3339), when known.
    #[prop(default = None)]
    recorded_at: Option<String>,
    #[prop(default = None)] settled_at: Option<String>,
    /// The entry's deadline, who settled it and who established it (docs/api.md "Deadlines").
    #[prop(default = None)]
    deadline_at: Option<String>,
    #[prop(default = None)] settled_by: Option<SettledBy>,
    #[prop(default = None)] established_by: Option<EstablishedBy>,
    /// Show an in-flight write's deadline (never to an end user: the deadline is for staff).
    #[prop(optional)]
    deadline: bool,
    /// The reader is staff: the explanation of an unknown outcome speaks to support, not to the end user.
    #[prop(optional)]
    for_staff: bool,
) -> impl IntoView {
    let status = outcome.status;
    let (_, _, tone) = status_look(status, in_flight);
    let card = Card {
        in_flight,
        revision,
        recorded_at,
        settled_at,
        deadline_at,
        settled_by,
        established_by,
        show_deadline: deadline,
        for_staff,
        // Inside a roving list the card's links and buttons leave the tab order.
        roving: crate::components::roving::control_tabindex().is_some(),
        support: crate::support::contact(),
    };
    let html = card_html(&outcome, &card);
    let class = format!("outcome {tone}");
    let mutation_id = outcome.mutation_id;
    if status != PublishedStatus::OutcomeUnknown {
        return view! {
            <div class=class data-mutation-id=mutation_id data-status=status.as_str() inner_html=html></div>
        }
        .into_any();
    }
    let copy = copy_on_click(mutation_id.clone());
    view! {
        <div class=class data-mutation-id=mutation_id data-status=status.as_str() inner_html=html on:click=copy></div>
    }
    .into_any()
}

/// What a card shows besides its outcome (see [`OutcomeCard`]'s props).
#[derive(Debug, Clone, Default)]
pub struct Card {
    pub in_flight: bool,
    pub revision: Option<i64>,
    pub recorded_at: Option<String>,
    pub settled_at: Option<String>,
    /// When the ledger settles it unknown unless its host reports first (RFC 3339; docs/api.md
    /// "Deadlines"): shown for an in-flight write when `show_deadline`.
    pub deadline_at: Option<String>,
    /// Who settled the current state (`ledger`: at its deadline, the host never reported).
    pub settled_by: Option<SettledBy>,
    /// Who established the current state by a reconciliation.
    pub established_by: Option<EstablishedBy>,
    /// The reader may see deadlines (staff; never a viewer).
    pub show_deadline: bool,
    pub for_staff: bool,
    /// The card sits in a roving list: its links and buttons get `tabindex="-1"`.
    pub roving: bool,
    /// Where an end user quotes the id of an unknown outcome ([`crate::support`]).
    pub support: Option<crate::support::SupportContact>,
}

/// The content of an outcome's card, as HTML (every text and attribute value escaped):
///
/// - `.o-head`: the badge (its words; the icon is drawn by the stylesheet from the card's tone) and the
///   title, or the tool when there is none, linked to the sanitised url only ([`safe_href`]);
/// - `.o-meta .details`: the tool (when a title heads the card), the resource id (only with what names
///   it: its title or its link), the revision (when given);
/// - `.row-times`: "Recorded …" (or "In flight since …") and "· settled …" / "· unknown since …" /
///   "· cancelled …" as `<time datetime>` elements ([`crate::components::time::time_text`]), the last
///   followed by how long a settled write took ("· took 40 s", [`took`]);
/// - the reason in words, when the record has one;
/// - for a settled or in-flight unknown, the plain message of seed 002 (docs/design.md "What the person
///   sees"): an end user (the default) is told not to repeat it and to quote the id to support; staff, who
///   are that support, to check it with the provider and reconcile it; then the operation id and a copy
///   button (`.copy-operation-id`, named "Copy operation id <id>") with its polite status (`.copy-status`);
/// - otherwise "Operation id: <id>".
///
/// Cf characters of the title, tool, resource id and operation id are shown as marks
/// ([`crate::components::marks`]).
pub fn card_html(outcome: &MutationOutcome, card: &Card) -> String {
    let status = outcome.status;
    let unknown = status == PublishedStatus::OutcomeUnknown;
    let (words, _, _) = status_look(status, card.in_flight);
    let tabindex: &[(&str, &str)] = if card.roving {
        &[("tabindex", "-1")]
    } else {
        &[]
    };
    let mut h = Html::default();
    h.el("div", &[("class", "o-head")], |h| {
        h.el("span", &[("class", "badge")], |h| h.text(words));
        let text = match outcome.title.as_deref() {
            Some(title) => mark(title),
            None => tool_text(&outcome.tool, card),
        };
        let class = if outcome.title.is_some() {
            "o-title"
        } else {
            "o-tool"
        };
        match outcome.url.as_deref().filter(|u| safe_href(u)) {
            Some(url) => {
                let mut attrs = vec![("href", url)];
                attrs.extend_from_slice(tabindex);
                let link_class = format!("{class} o-link");
                attrs.extend([
                    ("target", "_blank"),
                    ("rel", "noopener noreferrer nofollow"),
                    ("class", link_class.as_str()),
                ]);
                h.el("a", &attrs, |h| {
                    h.el("bdi", &tool_title(outcome, card, "outcome-title"), |h| {
                        h.text(&text)
                    })
                });
            }
            None => {
                let bdi_class = format!("{class} outcome-title");
                h.el("bdi", &tool_title(outcome, card, &bdi_class), |h| {
                    h.text(&text)
                });
            }
        }
    });
    // The tool heads the card when there is no title; then it is not repeated below. The resource id
    // only with what names it (its title or its link): "resource 478" alone tells an end user nothing.
    let named = outcome.title.is_some() || outcome.url.as_deref().is_some_and(safe_href);
    let details = [
        outcome
            .title
            .is_some()
            .then(|| tool_text(&outcome.tool, card)),
        outcome
            .resource_id
            .as_ref()
            .filter(|_| named)
            .map(|id| format!("resource {}", marked(id))),
        card.revision.map(|r| format!("revision {r}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    h.el("p", &[("class", "o-meta")], |h| {
        let attrs = if outcome.title.is_some() {
            tool_title(outcome, card, "details")
        } else {
            vec![("class", "details")]
        };
        h.el("bdi", &attrs, |h| h.text(&details))
    });
    row_times(&mut h, status, card);
    let stopped = stopped_reporting(outcome, card);
    match outcome.reason {
        // The end user's sentence says it ([`unknown_explanation`]); staff read who settled it.
        Some(_) if stopped && !card.for_staff => {}
        Some(_) if stopped => h.el("p", &[("class", "reason mt-1 text-sm")], |h| {
            h.text(LEDGER_SETTLED)
        }),
        Some(reason) => h.el("p", &[("class", "reason mt-1 text-sm")], |h| {
            h.text(reason_text(reason))
        }),
        None => {}
    }
    if let Some(words) = established_words(status, card.established_by) {
        h.el("p", &[("class", "established mt-1 text-sm")], |h| {
            h.text(&words);
            if let Some(at) = card.settled_at.as_deref() {
                h.text(" ");
                time_el(h, at, crate::components::time::TimeKind::Age);
            }
        });
    }
    if unknown {
        unknown_explanation(&mut h, &outcome.mutation_id, card, tabindex);
    } else {
        h.el("p", &[("class", "o-meta")], |h| {
            h.text("Operation id: ");
            h.el("code", &[("class", "operation-id")], |h| {
                h.text(&marked(&outcome.mutation_id))
            });
        });
    }
    h.0
}

/// The tool as the card shows it: its raw name for staff, in words for an end user
/// ([`crate::components::marks::readable_tool`]).
fn tool_text(tool: &str, card: &Card) -> String {
    if card.for_staff {
        mark(tool)
    } else {
        crate::components::marks::readable_tool(tool)
    }
}

/// `class`, and for an end user the raw tool name as the element's `title` (the card shows it in words).
fn tool_title<'a>(
    outcome: &'a MutationOutcome,
    card: &Card,
    class: &'a str,
) -> Vec<(&'a str, &'a str)> {
    let mut attrs = vec![("class", class)];
    // On a row of a list the details' title is left out (a page of 500 rows stays within its budget);
    // the operation page has it.
    if !card.for_staff && (outcome.title.is_none() || (class == "details" && !card.roving)) {
        attrs.push(("title", outcome.tool.as_str()));
    }
    attrs
}

/// What staff read of a write the ledger settled at its deadline (docs/api.md "Deadlines").
pub const LEDGER_SETTLED: &str =
    "The host did not settle it by its deadline: the ledger settled it as unknown (execution timeout).";

/// Whether the card is a write the ledger settled unknown at its deadline: its host stopped reporting.
fn stopped_reporting(outcome: &MutationOutcome, card: &Card) -> bool {
    outcome.status == PublishedStatus::OutcomeUnknown
        && !card.in_flight
        && card.settled_by == Some(SettledBy::Ledger)
}

/// A reconciled outcome in an end user's words, by who established it (docs/design.md "What the person
/// sees"): "Confirmed completed by support", "Confirmed not done by the provider's status", …; `None`
/// when it was not reconciled (or is still unknown).
pub fn established_words(status: PublishedStatus, by: Option<EstablishedBy>) -> Option<String> {
    let done = match status {
        PublishedStatus::Completed => "Confirmed completed",
        PublishedStatus::Failed | PublishedStatus::NotExecuted => "Confirmed not done",
        PublishedStatus::OutcomeUnknown => return None,
    };
    let by = match by? {
        EstablishedBy::Staff => "support",
        EstablishedBy::StatusCheck => "the provider's status",
        EstablishedBy::LateAnswer => "the tool's late answer",
        EstablishedBy::Host => "the agent",
    };
    Some(format!("{done} by {by}"))
}

/// A `<time datetime>` of `kind` as the page clock writes it ([`crate::components::time`]).
fn time_el(h: &mut Html, at: &str, kind: crate::components::time::TimeKind) {
    use crate::components::time::{kind_text, time_title};
    let title = time_title(at);
    let mut attrs = vec![("datetime", at)];
    attrs.extend(title.as_deref().map(|t| ("title", t)));
    attrs.extend(kind.attribute().map(|a| (a, "")));
    h.el("time", &attrs, |h| h.text(&kind_text(at, kind)))
}

/// When a row was recorded and settled (docs/design.md "What the person sees"): an in-flight write says
/// how long it has been in flight, a settled unknown how long it has been unknown. "Recorded … · settled
/// …", or "Settled …" alone when the recorded time is shown elsewhere; nothing without either time.
/// After them, for staff, an in-flight write's deadline on a line of its own (`.deadline`: "Deadline in 12 min
/// · 23:15:00", how long until the ledger settles it, docs/api.md "Deadlines").
fn row_times(h: &mut Html, status: PublishedStatus, card: &Card) {
    use crate::components::time::TimeKind;
    let settled_at = card.settled_at.as_deref().filter(|_| !card.in_flight);
    let deadline_at = card
        .deadline_at
        .as_deref()
        .filter(|_| card.in_flight && card.show_deadline);
    let deadline = |h: &mut Html| {
        if let Some(at) = deadline_at {
            h.el("p", &[("class", "deadline")], |h| {
                h.text("Deadline ");
                time_el(h, at, TimeKind::Due);
            });
        }
    };
    if card.recorded_at.is_none() && settled_at.is_none() {
        deadline(h);
        return;
    }
    let settled_words = match status {
        PublishedStatus::OutcomeUnknown => "unknown since ",
        PublishedStatus::NotExecuted => "cancelled ",
        _ => "settled ",
    };
    let settled_words = if card.recorded_at.is_some() {
        format!(" · {settled_words}")
    } else {
        let mut w = settled_words.to_owned();
        w[..1].make_ascii_uppercase();
        w
    };
    let time = |h: &mut Html, at: &str| time_el(h, at, TimeKind::Age);
    h.el("p", &[("class", "row-times")], |h| {
        if let Some(at) = card.recorded_at.as_deref() {
            h.el("span", &[("class", "recorded")], |h| {
                h.text(if card.in_flight {
                    "In flight since "
                } else {
                    "Recorded "
                });
                time(h, at);
            });
        }
        if let Some(at) = settled_at {
            h.el("span", &[("class", "settled")], |h| {
                h.text(&settled_words);
                time(h, at);
                // In the same element: a row's bytes count (docs/performance.md "Page weight").
                if let Some(words) = took(status, card) {
                    h.text(&words);
                }
            });
        }
    });
    deadline(h);
}

/// How long a settled write took, recorded → settled (docs/design.md "What the person sees"): " · took
/// 40 s" (" · after 40 s" for an unknown one: "unknown since … · after 40 s"); `None` in flight (the row says its age), without
/// either time, and for a reconciled row (its settlement is the reconciliation, not the write).
fn took(status: PublishedStatus, card: &Card) -> Option<String> {
    use crate::components::time::{between_ms, duration_words};
    if card.in_flight || card.established_by.is_some() {
        return None;
    }
    let ms = between_ms(card.recorded_at.as_deref()?, card.settled_at.as_deref()?)?;
    let words = if status == PublishedStatus::OutcomeUnknown {
        "after"
    } else {
        "took"
    };
    Some(format!(" · {words} {}", duration_words(ms)))
}

/// The plain message of an unknown outcome (seed 002, "Tell the user…"): what is known, and what the
/// reader can do, with the operation id and its copy button.
fn unknown_explanation(h: &mut Html, mutation_id: &str, card: &Card, tabindex: &[(&str, &str)]) {
    let (in_flight, for_staff) = (card.in_flight, card.for_staff);
    // The ledger settled it at its deadline (the end user's words: docs/design.md "What the person sees").
    let stopped = !in_flight && card.settled_by == Some(SettledBy::Ledger);
    let lead = match (in_flight, for_staff) {
        (true, false) => "This write is in progress: its result is not established yet.",
        (false, false) => "The result of this write is not established. The original operation is under investigation, and automatic resend is paused.",
        (true, true) => "Started and not reported back yet: its result is not established until it reports or is reconciled.",
        (false, true) if stopped => "Not established: its host stopped reporting, and nothing shows whether the provider carried it out. Automatic resend stays paused until it is reconciled.",
        (false, true) => "Not established: nothing shows whether the provider carried it out. Automatic resend stays paused until it is reconciled.",
    };
    // What to do, around where to quote the id (an end user's: [`support_words`]; staff are that support).
    let (todo, after) = match (in_flight, for_staff) {
        (true, false) => ("Do not repeat it yourself. If the agent does not report back in time, this page will say so; then quote the operation id below to ", "."),
        (false, false) if stopped => ("If you need to know, quote the operation id below to ", "; they will check it with the provider."),
        (false, false) => ("Do not repeat this action yourself: it may already have taken effect. Quote the operation id below to ", "; they will check it with the provider."),
        (true, true) => ("If its host is gone, look the operation id up with the provider and reconcile it below with what you find; otherwise the ledger settles it as unknown at its deadline.", ""),
        (false, true) => ("Look the operation id up with the provider, then reconcile it below with what you find. Do not send it again before that: it may already have taken effect.", ""),
    };
    let id_label = if for_staff {
        "Operation id:"
    } else {
        "Operation id to quote:"
    };
    let audience = if for_staff { "staff" } else { "end-user" };
    let shown = marked(mutation_id);
    h.el(
        "div",
        &[("class", "unknown-explanation"), ("data-audience", audience)],
        |h| {
            if stopped && !for_staff {
                h.el("p", &[("class", "stopped")], |h| {
                    h.text("The agent stopped reporting on this write");
                    if let Some(at) = card.settled_at.as_deref() {
                        h.text(" at ");
                        time_el(h, at, crate::components::time::TimeKind::Clock);
                    }
                    h.text(". Whether it took effect is not known; it is being looked into. Do not repeat it yourself.");
                });
            } else {
                h.el("p", &[], |h| h.text(lead));
            }
            h.el("p", &[("class", "what-to-do")], |h| {
                h.text(todo);
                if !for_staff {
                    support_words(h, card.support.as_ref(), tabindex);
                }
                h.text(after);
            });
            h.el("p", &[("class", "o-quote")], |h| {
                h.el("span", &[], |h| h.text(id_label));
                h.el("code", &[("class", "operation-id")], |h| h.text(&shown));
                h.el("span", &[("class", "copy")], |h| {
                    let name = format!("Copy operation id {shown}");
                    let mut attrs = vec![("type", "button"), ("aria-label", name.as_str())];
                    attrs.extend_from_slice(tabindex);
                    attrs.push(("class", "copy-operation-id"));
                    h.el("button", &attrs, |h| h.text("Copy operation id"));
                    h.el(
                        "span",
                        &[
                            ("class", "copy-status"),
                            ("role", "status"),
                            ("aria-live", "polite"),
                        ],
                        |_| {},
                    );
                });
            });
        },
    );
}

/// Where an end user quotes the id ([`crate::support`]): the server's support contact as a link
/// (`a.support-contact`), or the words [`crate::support::NO_CONTACT`].
fn support_words(
    h: &mut Html,
    support: Option<&crate::support::SupportContact>,
    tabindex: &[(&str, &str)],
) {
    match support {
        Some(c) => {
            let mut attrs = vec![
                ("class", "support-contact"),
                ("href", c.url.as_str()),
                ("target", "_blank"),
                ("rel", "noopener noreferrer"),
            ];
            attrs.extend_from_slice(tabindex);
            h.el("a", &attrs, |h| h.text(&c.label));
        }
        None => h.text(crate::support::NO_CONTACT),
    }
}

/// HTML written as text: elements with escaped attribute values and escaped text (html-escape).
#[derive(Default)]
struct Html(String);

impl Html {
    fn el(&mut self, tag: &str, attrs: &[(&str, &str)], body: impl FnOnce(&mut Html)) {
        self.0.push('<');
        self.0.push_str(tag);
        for (name, value) in attrs {
            self.0.push(' ');
            self.0.push_str(name);
            self.0.push_str("=\"");
            html_escape::encode_double_quoted_attribute_to_string(value, &mut self.0);
            self.0.push('"');
        }
        self.0.push('>');
        body(self);
        self.0.push_str("</");
        self.0.push_str(tag);
        self.0.push('>');
    }

    fn text(&mut self, text: &str) {
        html_escape::encode_text_to_string(text, &mut self.0);
    }
}

/// The click handler of a card with a copy button: a click on `.copy-operation-id` copies `mutation_id`
/// (the raw id) and shows "Copied" in the button's `.copy-status` for [`COPIED_MS`]; every click copies
/// again, and only the last click's timer clears the message ([`CopyButton`] does the same for its own
/// button).
fn copy_on_click(mutation_id: String) -> impl FnMut(leptos::ev::MouseEvent) + 'static {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let clicks = std::rc::Rc::new(std::cell::Cell::new(0u64));
        move |ev: leptos::ev::MouseEvent| {
            if let Some(button) = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .and_then(|t| t.closest("button.copy-operation-id").ok().flatten())
            {
                copy_and_say(&mutation_id, &button, &clicks);
            }
        }
    }
    #[cfg(not(feature = "hydrate"))]
    move |_: leptos::ev::MouseEvent| {
        let _ = &mutation_id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: PublishedStatus) -> MutationOutcome {
        MutationOutcome {
            schema: "mutation_outcome/v1".into(),
            logical_turn_id: "turn-1".into(),
            mutation_id: "dash-create-1".into(),
            tool: "mcp__dashboards__create".into(),
            status,
            resource_id: Some("4000".into()),
            url: Some("https://dashboards.example.com/d/4000".into()),
            title: Some("Revenue dashboard".into()),
            reason: None,
        }
    }

    /// An end user's unknown card says where to quote its id: the server's support contact as a link, or
    /// "the support of the service you used"; staff, who are that support, read neither.
    #[test]
    fn an_end_users_unknown_card_names_where_to_quote_its_id() {
        let mut unknown = outcome(PublishedStatus::OutcomeUnknown);
        unknown.reason = Some(Reason::ExecutionTimeout);
        let support = crate::support::SupportContact {
            url: "https://help.example.com/agents".into(),
            label: "Example support".into(),
        };
        let with = card_html(
            &unknown,
            &Card {
                support: Some(support.clone()),
                ..Card::default()
            },
        );
        assert!(with.contains(r#"<p class="what-to-do">Do not repeat this action yourself: it may already have taken effect. Quote the operation id below to <a class="support-contact" href="https://help.example.com/agents" target="_blank" rel="noopener noreferrer">Example support</a>; they will check it with the provider.</p>"#), "{with}");
        let without = card_html(&unknown, &Card::default());
        assert!(without.contains(r#"<p class="what-to-do">Do not repeat this action yourself: it may already have taken effect. Quote the operation id below to the support of the service you used; they will check it with the provider.</p>"#), "{without}");
        let staff = card_html(
            &unknown,
            &Card {
                for_staff: true,
                support: Some(support),
                ..Card::default()
            },
        );
        assert!(!staff.contains("support-contact"), "{staff}");
        assert!(!staff.contains("service you used"), "{staff}");
        assert!(
            staff.contains(r#"<bdi class="details">mcp__dashboards__create · resource 4000</bdi>"#),
            "{staff}"
        );
    }

    /// The card's HTML, whole, for a completed outcome in a roving list (a timeline row): what the server
    /// sends for it and what the browser writes for a live row.
    #[test]
    fn a_completed_card_reads_badge_title_details_times_and_operation_id() {
        let card = Card {
            revision: Some(3),
            recorded_at: Some("2026-12-06T03:09:18.272Z".into()),
            settled_at: Some("2026-12-06T03:09:19Z".into()),
            roving: true,
            ..Card::default()
        };
        assert_eq!(
            card_html(&outcome(PublishedStatus::Completed), &card),
            concat!(
                r#"<div class="o-head"><span class="badge">Completed</span>"#,
                r#"<a href="https://dashboards.example.com/d/4000" tabindex="-1" target="_blank" rel="noopener noreferrer nofollow" class="o-title o-link"><bdi class="outcome-title">Revenue dashboard</bdi></a></div>"#,
                r#"<p class="o-meta"><bdi class="details">dashboards · create · resource 4000 · revision 3</bdi></p>"#,
                r#"<p class="row-times"><span class="recorded">Recorded <time datetime="2026-12-06T03:09:18.272Z">2026-12-06 03:09:18 UTC</time></span>"#,
                r#"<span class="settled"> · settled <time datetime="2026-12-06T03:09:19Z">2026-12-06 03:09:19 UTC</time> · took 728 ms</span></p>"#,
                r#"<p class="o-meta">Operation id: <code class="operation-id">dash-create-1</code></p>"#,
            )
        );
    }

    /// What a host wrote is text, never markup: `<`, `&` and quotes are escaped in text and attributes; a
    /// link that is not http(s) is no link; Cf characters show as marks, in the id and the copy button's
    /// name alike; outside a roving list nothing gets a `tabindex`.
    /// A settled row says how long it took (recorded → settled); an unknown one how long until it was
    /// unknown; an in-flight row keeps its age and a reconciled one says nothing of a duration.
    #[test]
    fn a_settled_row_says_how_long_it_took() {
        let times = |recorded: &str, settled: &str| Card {
            recorded_at: Some(recorded.into()),
            settled_at: Some(settled.into()),
            ..Card::default()
        };
        let took = |status, card: &Card| {
            let html = card_html(&outcome(status), card);
            html.split_once("</time> · ")
                .map(|(_, rest)| format!(" · {}", rest.split_once("</span>").unwrap().0))
        };
        let forty = times("2026-12-06T17:33:01.5Z", "2026-12-06T17:33:41.9Z");
        assert_eq!(
            took(PublishedStatus::Completed, &forty).as_deref(),
            Some(" · took 40 s")
        );
        assert_eq!(
            took(
                PublishedStatus::Failed,
                &times("2026-12-06T17:33:01Z", "2026-12-06T17:33:02.25Z")
            )
            .as_deref(),
            Some(" · took 1.2 s")
        );
        assert_eq!(
            took(
                PublishedStatus::NotExecuted,
                &times("2026-12-06T17:33:01Z", "2026-12-06T17:36:30Z")
            )
            .as_deref(),
            Some(" · took 3 min")
        );
        assert_eq!(
            took(PublishedStatus::OutcomeUnknown, &forty).as_deref(),
            Some(" · after 40 s")
        );
        let in_flight = Card {
            in_flight: true,
            ..forty.clone()
        };
        assert_eq!(took(PublishedStatus::OutcomeUnknown, &in_flight), None);
        assert!(
            card_html(&outcome(PublishedStatus::OutcomeUnknown), &in_flight)
                .contains("In flight since ")
        );
        let reconciled = Card {
            established_by: Some(EstablishedBy::Staff),
            ..forty.clone()
        };
        assert_eq!(took(PublishedStatus::Completed, &reconciled), None);
        let no_recorded = Card {
            recorded_at: None,
            ..forty
        };
        assert_eq!(took(PublishedStatus::Completed, &no_recorded), None);
    }

    #[test]
    fn host_text_is_escaped_marked_and_only_http_links() {
        let mut o = outcome(PublishedStatus::OutcomeUnknown);
        o.title = Some(r#"<img src=x onerror="alert(1)"> & co"#.into());
        o.url = Some("javascript:alert(1)".into());
        o.mutation_id = "op\u{200B}1".into();
        let html = card_html(&o, &Card::default());
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<a "), "{html}");
        assert!(!html.contains("tabindex"), "{html}");
        assert!(
            html.contains(r#"<bdi class="o-title outcome-title">&lt;img src=x onerror="alert(1)"&gt; &amp; co</bdi>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<code class="operation-id">op⟨U+200B⟩1</code>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<button type="button" aria-label="Copy operation id op⟨U+200B⟩1" class="copy-operation-id">Copy operation id</button><span class="copy-status" role="status" aria-live="polite"></span>"#),
            "{html}"
        );
        o.url = Some(r#"https://x.example/?q="><script>"#.into());
        let html = card_html(&o, &Card::default());
        assert!(
            html.contains(r#"href="https://x.example/?q=&quot;&gt;&lt;script&gt;""#),
            "{html}"
        );
    }

    /// Seed 002: an unknown outcome is explained as not established, to the end user with the id to quote
    /// and not to repeat it, to staff with what to check; in flight says so and has no settled time.
    #[test]
    fn an_unknown_card_explains_itself_to_its_reader() {
        let o = outcome(PublishedStatus::OutcomeUnknown);
        let user = card_html(&o, &Card::default());
        assert!(user.contains(r#"<span class="badge">Outcome unknown</span>"#));
        assert!(user.contains(r#"data-audience="end-user""#));
        assert!(user.contains("<p>The result of this write is not established. The original operation is under investigation, and automatic resend is paused.</p>"));
        // Never "failed" or "done" without evidence (docs/design.md "What the person sees").
        assert!(!user.to_lowercase().contains("failed"), "{user}");
        assert!(!user.contains(" done"), "{user}");
        assert!(user.contains("Do not repeat this action yourself"));
        assert!(user.contains("<span>Operation id to quote:</span>"));
        let staff = card_html(
            &o,
            &Card {
                for_staff: true,
                ..Card::default()
            },
        );
        assert!(staff.contains(r#"data-audience="staff""#));
        assert!(staff.contains("<span>Operation id:</span>"));
        assert!(!staff.contains("It is not shown as done or failed"));
        let flight = card_html(
            &o,
            &Card {
                in_flight: true,
                recorded_at: Some("2026-12-06T03:09:18Z".into()),
                settled_at: Some("2026-12-06T03:09:18Z".into()),
                ..Card::default()
            },
        );
        assert!(flight.contains(r#"<span class="badge">In flight: outcome not yet known</span>"#));
        assert!(flight.contains(r#"<span class="recorded">In flight since <time datetime="2026-12-06T03:09:18Z">2026-12-06 03:09:18 UTC</time></span></p>"#));
        assert!(!flight.contains("settled"));
        let mut failed = outcome(PublishedStatus::Failed);
        failed.reason = Some(Reason::ExecutionTimeout);
        failed.title = None;
        let failed = card_html(&failed, &Card::default());
        assert!(failed.contains(r#"<a href="https://dashboards.example.com/d/4000" target="_blank" rel="noopener noreferrer nofollow" class="o-tool o-link"><bdi class="outcome-title" title="mcp__dashboards__create">dashboards · create</bdi></a>"#), "{failed}");
        assert!(failed.contains(r#"<p class="reason mt-1 text-sm">It timed out while running; whether it took effect is not known.</p>"#));
        assert!(!failed.contains("unknown-explanation"));
    }

    /// A write the ledger settled at its deadline reads, for the end user, in docs/design.md's words with
    /// the time it stopped (a `<time data-clock>`: local time, no age), and no reason of its own; staff
    /// read that the host did not settle it by its deadline.
    #[test]
    fn a_write_the_ledger_settled_at_its_deadline_says_the_agent_stopped_reporting() {
        let mut o = outcome(PublishedStatus::OutcomeUnknown);
        o.reason = Some(Reason::ExecutionTimeout);
        let card = Card {
            recorded_at: Some("2026-12-06T17:33:01Z".into()),
            settled_at: Some("2026-12-06T17:48:03.120Z".into()),
            deadline_at: Some("2026-12-06T17:48:01Z".into()),
            settled_by: Some(SettledBy::Ledger),
            ..Card::default()
        };
        let user = card_html(&o, &card);
        assert!(
            user.contains(concat!(
                r#"<p class="stopped">The agent stopped reporting on this write at "#,
                r#"<time datetime="2026-12-06T17:48:03.120Z" data-clock="">2026-12-06 17:48:03 UTC</time>. "#,
                "Whether it took effect is not known; it is being looked into. Do not repeat it yourself.</p>"
            )),
            "{user}"
        );
        assert!(!user.contains("class=\"reason"), "{user}");
        assert!(!user.contains("deadline"), "{user}");
        assert!(!user.contains("report back"), "{user}");
        assert!(
            user.contains("<span>Operation id to quote:</span>"),
            "{user}"
        );
        let staff = card_html(
            &o,
            &Card {
                for_staff: true,
                show_deadline: true,
                ..card.clone()
            },
        );
        assert!(staff.contains(LEDGER_SETTLED), "{staff}");
        assert!(!staff.contains("The agent stopped reporting"), "{staff}");
        // The host settled it unknown itself: the usual words, with its reason.
        let host = card_html(
            &o,
            &Card {
                settled_by: Some(SettledBy::Host),
                ..card
            },
        );
        assert!(host.contains("It timed out while running"), "{host}");
        assert!(!host.contains("stopped reporting"), "{host}");
    }

    /// In flight: the end user reads that it is in progress and that the page will say if it does not
    /// report back (no promise that it will), never the deadline; staff read the deadline.
    #[test]
    fn a_write_in_flight_shows_its_deadline_to_staff_only() {
        let o = outcome(PublishedStatus::OutcomeUnknown);
        let card = Card {
            in_flight: true,
            recorded_at: Some("2026-12-06T17:33:01Z".into()),
            deadline_at: Some("2026-12-06T17:48:01Z".into()),
            ..Card::default()
        };
        let user = card_html(&o, &card);
        assert!(!user.contains("deadline"), "{user}");
        assert!(!user.contains("wait for it to report back"), "{user}");
        assert!(
            user.contains("<p>This write is in progress: its result is not established yet.</p>"),
            "{user}"
        );
        assert!(user.contains("If the agent does not report back in time, this page will say so"));
        let staff = card_html(
            &o,
            &Card {
                show_deadline: true,
                for_staff: true,
                ..card
            },
        );
        assert!(
            staff.contains(concat!(
                r#"<p class="row-times"><span class="recorded">In flight since <time datetime="2026-12-06T17:33:01Z">2026-12-06 17:33:01 UTC</time></span></p>"#,
                r#"<p class="deadline">Deadline <time datetime="2026-12-06T17:48:01Z" data-due="">2026-12-06 17:48:01 UTC</time></p>"#,
            )),
            "{staff}"
        );
        assert!(staff.contains("reconcile it below"), "{staff}");
    }

    /// A reconciled outcome says who established it, in the end user's words.
    #[test]
    fn a_reconciled_outcome_says_who_established_it() {
        assert_eq!(
            established_words(PublishedStatus::Completed, Some(EstablishedBy::Staff)).as_deref(),
            Some("Confirmed completed by support")
        );
        assert_eq!(
            established_words(PublishedStatus::Failed, Some(EstablishedBy::StatusCheck)).as_deref(),
            Some("Confirmed not done by the provider's status")
        );
        assert_eq!(
            established_words(PublishedStatus::Completed, Some(EstablishedBy::LateAnswer))
                .as_deref(),
            Some("Confirmed completed by the tool's late answer")
        );
        assert_eq!(
            established_words(PublishedStatus::Failed, Some(EstablishedBy::Host)).as_deref(),
            Some("Confirmed not done by the agent")
        );
        assert_eq!(established_words(PublishedStatus::Completed, None), None);
        let html = card_html(
            &outcome(PublishedStatus::Completed),
            &Card {
                settled_at: Some("2026-12-06T18:00:00Z".into()),
                established_by: Some(EstablishedBy::Staff),
                ..Card::default()
            },
        );
        assert!(
            html.contains(r#"<p class="established mt-1 text-sm">Confirmed completed by support <time datetime="2026-12-06T18:00:00Z">2026-12-06 18:00:00 UTC</time></p>"#),
            "{html}"
        );
    }

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
