//! One operation of a session (`/sessions/{key}/operations/{mutation_id}`): where it stands, every change
//! it went through as a timeline (docs/ledger.md "History"), the published record as JSON, the links to
//! what it was commissioned after and what was commissioned after it, and for staff the operator actions
//! (a note; reconciling an unknown outcome with evidence, bound to the attempt shown). Kept live: a change
//! of the entry reloads the history (notes have no live event: they show on the next load).

use ledger::wire::{
    EstablishedBy, HistoryChange, HistoryKind, LedgerStatus, OperationHistory, PublishedStatus,
    SettledBy,
};
use leptos::prelude::*;
use leptos_meta::Title;

use crate::api;
use crate::components::marks::mark;
use crate::components::outcome::{reason_text, CopyButton, OutcomeCard, StatusBadge};
use crate::components::time::{now_rfc3339, DueTime, Time};
use crate::components::ApiErrorPanel;
use crate::connection::Connection;
use crate::routes::{history_href, param, session_href, turn_href};

#[component]
pub fn OperationPage() -> impl IntoView {
    let key = param(2);
    let id = param(4);
    // `?history_after=<cursor>`: the changes before the newest window (docs/api.md "Operation history").
    let older = crate::address::query_value("history_after").filter(|a| !a.is_empty());
    let older_page = older.is_some();
    let reader = api::reader();
    let found = Resource::new(
        move || (key.get(), id.get(), older.clone()),
        move |(k, m, older)| {
            let history = api::operation_history(&k, &m, older.as_deref());
            let reader = reader.clone();
            async move {
                let history = history.await?;
                let turn = read_turn_name(&reader, &history).await;
                Ok::<_, api::ApiError>((history, turn))
            }
        },
    );
    let caller = use_context::<crate::CallerResource>();
    view! {
        <Title text=crate::routes::page_title(move || format!("Operation {} · Outcome ledger", mark(&id.get())))/>
        <Suspense fallback=|| view! { <p>"Loading the operation…"</p> }>
            {move || Suspend::new(async move {
                let viewer = crate::components::is_viewer(caller).await;
                let staff = crate::components::is_staff(caller).await;
                match found.await {
                    Err(e) => view! {
                        <h1 class="mb-4 break-all text-2xl font-semibold">"Operation " <bdi class="font-mono">{mark(&id.get_untracked())}</bdi></h1>
                        <ApiErrorPanel error=e/>
                    }.into_any(),
                    Ok((h, turn)) if older_page => view! { <OlderHistory history=h turn viewer/> }.into_any(),
                    Ok((h, turn)) => view! { <LiveHistory history=h turn viewer staff/> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The operation's turn by its number, "Turn 13" (with its id when the id says more: `(label, id)`), read
/// on the server from the turn's place (docs/api.md "A turn's place"); the id alone ("Turn" and the id)
/// when that read fails. The browser never reads it again (the page's links are full navigations).
async fn read_turn_name(
    reader: &api::Reader,
    history: &OperationHistory,
) -> (String, Option<String>) {
    #[cfg(feature = "ssr")]
    if let Ok(place) = reader
        .get_json::<ledger::wire::TurnPlace>(api::turn_place_path(
            &history.session_key,
            &history.logical_turn_id,
        ))
        .await
    {
        return crate::routes::turn::turn_name(place.number, &place.logical_turn_id);
    }
    let _ = reader;
    ("Turn".to_owned(), Some(mark(&history.logical_turn_id)))
}

/// The link to the operation's turn: "Turn 13", or "Turn 2 · turn-b7f" ([`read_turn_name`]).
#[component]
fn TurnLink(href: String, turn: (String, Option<String>)) -> impl IntoView {
    let (label, id) = turn;
    view! {
        <a rel="external" class="underline-offset-2 hover:underline" href=href>
            {label}
            {id.map(|id| view! { " " <bdi class="break-all font-mono">{id}</bdi> })}
        </a>
    }
}

/// The kind of a change in words, for `viewer` (an end user: docs/design.md "What the person sees") or
/// staff ([`kind_words`]). An end user reads what their agent did and who established a result, with no
/// attempt ids, no deadlines and none of the ledger's own words ("intent", "settled", "reconciled"):
/// "Your agent started it", "Marked unknown" (the ledger's settlement at a deadline), "Confirmed
/// completed by support".
pub fn kind_words_for(change: &HistoryChange, viewer: bool) -> String {
    if !viewer {
        return kind_words(change);
    }
    let status = change.outcome.as_ref().map(|o| o.status);
    match change.kind {
        HistoryKind::Approval => "Your agent asked for it".to_owned(),
        HistoryKind::Intent => "Your agent started it".to_owned(),
        HistoryKind::Settlement if change.settled_by == Some(SettledBy::Ledger) => {
            "Marked unknown".to_owned()
        }
        HistoryKind::Settlement => "Your agent reported the result".to_owned(),
        HistoryKind::Cancellation => "Cancelled before it was sent".to_owned(),
        HistoryKind::Reconciliation => status
            .and_then(|s| crate::components::outcome::established_words(s, change.established_by))
            .unwrap_or_else(|| "Its result was established".to_owned()),
        HistoryKind::Metadata => "Its title and link were added".to_owned(),
        HistoryKind::Attempt => "Your agent tried it again".to_owned(),
        HistoryKind::Imported => "Copied from an earlier record".to_owned(),
        // Internal to staff: a viewer is never sent these.
        HistoryKind::Note | HistoryKind::Claim | HistoryKind::Release => kind_words(change),
    }
}

/// The kind of a change in words.
pub fn kind_words(change: &HistoryChange) -> String {
    let attempt = change
        .attempt_id
        .as_deref()
        .map(|a| format!(" (attempt {})", mark(a)))
        .unwrap_or_default();
    match change.kind {
        HistoryKind::Approval => "Approved by the host".to_owned(),
        HistoryKind::Intent => format!("Intent recorded: execution started{attempt}"),
        HistoryKind::Settlement if change.settled_by == Some(SettledBy::Ledger) => {
            format!("Settled by the ledger at its deadline{attempt}")
        }
        HistoryKind::Settlement => format!("Settled{attempt}"),
        HistoryKind::Cancellation => format!("Cancelled before dispatch{attempt}"),
        HistoryKind::Reconciliation => format!("Reconciled with evidence{attempt}"),
        HistoryKind::Metadata => "Host metadata attached".to_owned(),
        HistoryKind::Attempt => format!("Fresh attempt{attempt}"),
        HistoryKind::Note => "Note".to_owned(),
        HistoryKind::Imported => "Imported (recorded before history was kept)".to_owned(),
        // An assignment: a claim whose note names the staff member it was handed to.
        HistoryKind::Claim => match change.note.as_deref() {
            Some(to) => format!("Assigned to {to}"),
            None => "Claimed: working on it".to_owned(),
        },
        HistoryKind::Release => "Claim released".to_owned(),
    }
}

/// Whether a change of this kind is what gave the entry its reason (a settlement or cancellation; an
/// imported entry's reason came with it). Every row carries the entry's reason after the change; the
/// timeline shows it only where it arose.
fn sets_reason(kind: HistoryKind) -> bool {
    matches!(
        kind,
        HistoryKind::Settlement | HistoryKind::Cancellation | HistoryKind::Imported
    )
}

/// Who made a change, in words: `host` → "the host", `ledger` → "the ledger" (its settlement at a
/// deadline, docs/api.md "Deadlines"), `staff:<name>` → "staff <name>", and `staff` (what
/// the server gives a viewer: staff names are internal, docs/access.md "Viewer links") → "support".
pub fn actor_words(actor: &str) -> String {
    match actor.strip_prefix("staff:") {
        Some(name) => format!("staff {name}"),
        None if actor == "host" => "the host".to_owned(),
        None if actor == "ledger" => "the ledger".to_owned(),
        None if actor == "staff" => "support".to_owned(),
        None => actor.to_owned(),
    }
}

/// The change that tells where the entry stands: the latest that is not internal to staff, or, when the
/// page's window of the history holds only notes, claims and releases (a storm of claims: the page shows
/// the newest changes only), the latest of those, which carry the entry's state as it was when they were
/// made, and nothing changed it since.
fn latest_state(history: &OperationHistory) -> Option<&HistoryChange> {
    history
        .changes
        .iter()
        .rev()
        .find(|c| !c.kind.is_internal())
        .or_else(|| history.changes.last())
}

/// Where the entry stands, as its card shows it: the published record the history ends with, whether
/// it is in flight (started, unsettled), its revision, and from the change that set its state: since
/// when (the intent's time in flight, the settlement's otherwise), its deadline, and who settled or
/// established it (docs/api.md "Deadlines").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Current {
    pub outcome: Option<ledger::wire::MutationOutcome>,
    pub in_flight: bool,
    pub revision: Option<i64>,
    pub since: Option<String>,
    pub deadline_at: Option<String>,
    pub settled_by: Option<SettledBy>,
    pub established_by: Option<EstablishedBy>,
}

/// Whether a change of this kind sets the entry's status (not a note, claim, release or metadata).
fn sets_status(kind: HistoryKind) -> bool {
    matches!(
        kind,
        HistoryKind::Approval
            | HistoryKind::Intent
            | HistoryKind::Settlement
            | HistoryKind::Cancellation
            | HistoryKind::Reconciliation
            | HistoryKind::Attempt
            | HistoryKind::Imported
    )
}

/// See [`Current`].
fn current(history: &OperationHistory) -> Current {
    let last = latest_state(history);
    let outcome = history.changes.iter().rev().find_map(|c| c.outcome.clone());
    let in_flight = last.is_some_and(|c| c.ledger_status == LedgerStatus::ExecutionStarted);
    let revision = history.changes.iter().rev().find_map(|c| c.revision);
    let set = history.changes.iter().rev().find(|c| sets_status(c.kind));
    Current {
        outcome,
        in_flight,
        revision,
        since: set.map(|c| c.at.clone()),
        deadline_at: last.and_then(|c| c.deadline_at.clone()),
        settled_by: set.and_then(|c| c.settled_by),
        established_by: set.and_then(|c| c.established_by),
    }
}

/// The attempt an operator reconciles: the entry's current one, when it is a settled unknown outcome or
/// in flight (its host may be gone; the API reconciles `execution_started` too, docs/api.md "Deadlines").
pub fn reconcilable_attempt(history: &OperationHistory) -> Option<String> {
    let last = latest_state(history)?;
    matches!(
        last.ledger_status,
        LedgerStatus::OutcomeUnknown | LedgerStatus::ExecutionStarted
    )
    .then(|| last.attempt_id.clone())
    .flatten()
}

/// Whether the entry is a settled unknown outcome (what staff are alerted about).
fn settled_unknown(history: &OperationHistory) -> bool {
    latest_state(history).is_some_and(|c| c.ledger_status == LedgerStatus::OutcomeUnknown)
}

/// The operation, live. `viewer`: the reader is an end user (a viewer link), who reads no revision
/// numbers (docs/design.md "What the person sees"); `staff`: signed-in staff, who get the claim, the
/// operator actions and an explanation of an unknown outcome meant for support.
#[component]
fn LiveHistory(
    history: OperationHistory,
    turn: (String, Option<String>),
    viewer: bool,
    staff: bool,
) -> impl IntoView {
    let turn_name = turn;
    let (key, turn, id) = (
        history.session_key.clone(),
        history.logical_turn_id.clone(),
        history.mutation_id.clone(),
    );
    let history = RwSignal::new(history);
    let connection = RwSignal::new(Connection::Snapshot);
    {
        let (key, id) = (key.clone(), id.clone());
        Effect::new(move |_| {
            #[cfg(feature = "hydrate")]
            crate::watch::start(key.clone(), id.clone(), history, connection);
            #[cfg(not(feature = "hydrate"))]
            let _ = (&key, &id);
        });
    }
    // The forms re-render only when what they are bound to changes, so typing survives live updates.
    let attempt = Memo::new(move |_| history.with(reconcilable_attempt));
    let in_flight = Memo::new(move |_| history.with(|h| current(h).in_flight));
    // The card likewise: a note, a claim or an alert changes the history but not the card, which is then
    // not written again (its content is HTML: writing it again would drop focus and "Copied").
    let card = Memo::new(move |_| {
        let mut c = history.with(current);
        c.revision = c.revision.filter(|_| !viewer);
        c
    });
    let base = history_href(&key, &id);
    let claim_base = base.clone();
    let older_base = base.clone();
    view! {
        <p class="mb-1 flex flex-wrap gap-x-3 text-sm">
            <a rel="external" class="underline-offset-2 hover:underline" href=session_href(&key)>"← Session " <bdi class="break-all font-mono">{mark(&key)}</bdi></a>
            <TurnLink href=turn_href(&key, &turn) turn=turn_name/>
        </p>
        <div class="mb-4 flex flex-wrap items-center justify-between gap-3">
            <h1 class="break-all text-2xl font-semibold">"Operation " <bdi class="font-mono">{mark(&id)}</bdi></h1>
            <CopyLinkButton/>
        </div>
        // Stays in sight while scrolling, down to the forms (docs/design.md "What the person sees").
        <div class="sticky top-0 z-10 mb-3 bg-white/95 py-1 dark:bg-slate-950/95"><crate::components::ConnectionIndicator connection/></div>
        <section class="current mb-6" aria-label="Where it stands">
            {move || {
                let c = card.get();
                let (recorded_at, settled_at) = if c.in_flight { (c.since, None) } else { (None, c.since) };
                match c.outcome {
                    Some(o) => view! {
                        <OutcomeCard outcome=o in_flight=c.in_flight revision=c.revision for_staff=staff recorded_at settled_at
                            deadline_at=c.deadline_at settled_by=c.settled_by established_by=c.established_by deadline=!viewer/>
                    }.into_any(),
                    None => view! {
                        <p class="rounded-md border-l-4 border-slate-400 bg-slate-50 p-3 dark:bg-slate-900">
                            "Approved, not started: nothing is published for this operation yet."
                        </p>
                    }.into_any(),
                }
            }}
        </section>
        {staff.then(|| view! { <Alerted history/> })}
        {staff.then(|| view! { <ClaimBox base=claim_base history attempt/> })}
        {move || view! { <Commissioned history=history.get()/> }}
        <section class="mb-6" aria-labelledby="history-heading">
            <h2 id="history-heading" class="mb-2 text-lg font-semibold">"History"</h2>
            {move || history.with(|h| match h.next.clone() {
                None => view! {
                    <p class="mb-3 text-sm opacity-80">"Every change of this operation, oldest first, with who made it."</p>
                }.into_any(),
                Some(next) => view! {
                    <p class="mb-3 text-sm opacity-80">{format!("The newest {} changes of this operation, oldest first, with who made them.", h.changes.len())}</p>
                    <OlderLink base=older_base.clone() next/>
                }.into_any(),
            })}
            <ol class="history space-y-3 border-l-2 border-slate-300 pl-4 dark:border-slate-700">
                {move || history.with(|h| h.changes.iter().map(|c| view! { <Change change=c.clone() viewer/> }).collect_view())}
            </ol>
        </section>
        {move || history.with(current).outcome.and_then(|o| serde_json::to_string_pretty(&o).ok()).map(|json| view! {
            <details class="record mb-6 rounded-md border border-slate-200 p-3 dark:border-slate-800">
                <summary class="cursor-pointer font-medium">{if viewer { "Technical details (JSON)" } else { "Published record (mutation_outcome/v1 JSON)" }}</summary>
                <pre class="mt-2 overflow-x-auto whitespace-pre-wrap break-all rounded bg-slate-50 p-2 font-mono text-xs dark:bg-slate-900">{json.clone()}</pre>
                <CopyButton text=json label="Copy JSON"/>
            </details>
        })}
        {staff.then(|| view! { <OperatorActions base attempt in_flight/> })}
    }
}

/// The link to the changes before the ones shown: the operation page with `?history_after=` the
/// window's `next` (docs/api.md "Operation history").
#[component]
fn OlderLink(base: String, next: String) -> impl IntoView {
    let href = format!("{base}?history_after={}", api::enc(&next));
    view! {
        <p class="older-history mb-3 text-sm">
            <a rel="external" class="underline underline-offset-2" href=href>"Older changes →"</a>
        </p>
    }
}

/// An older window of the history (`?history_after=`): the [`api::HISTORY_PAGE`] changes before the
/// ones the previous window showed, oldest first, with the way back to the operation and on to older
/// ones. Not live, and without the card and the actions, which tell where the entry stands now.
#[component]
fn OlderHistory(
    history: OperationHistory,
    turn: (String, Option<String>),
    viewer: bool,
) -> impl IntoView {
    let turn_name = turn;
    let (key, turn, id) = (
        history.session_key.clone(),
        history.logical_turn_id.clone(),
        history.mutation_id.clone(),
    );
    let base = history_href(&key, &id);
    let shown = history.changes.len();
    view! {
        <p class="mb-1 flex flex-wrap gap-x-3 text-sm">
            <a rel="external" class="underline-offset-2 hover:underline" href=session_href(&key)>"← Session " <bdi class="break-all font-mono">{mark(&key)}</bdi></a>
            <TurnLink href=turn_href(&key, &turn) turn=turn_name/>
        </p>
        <h1 class="mb-4 break-all text-2xl font-semibold">"Operation " <bdi class="font-mono">{mark(&id)}</bdi></h1>
        <section class="mb-6" aria-labelledby="history-heading">
            <h2 id="history-heading" class="mb-2 text-lg font-semibold">"Older changes"</h2>
            <p class="mb-3 text-sm opacity-80">{format!("{shown} earlier changes of this operation, oldest first, with who made them.")}</p>
            <p class="newest-history mb-3 text-sm">
                <a rel="external" class="underline underline-offset-2" href=base.clone()>"← Newest changes and where it stands"</a>
            </p>
            {history.next.clone().map(|next| view! { <OlderLink base=base.clone() next/> })}
            <ol class="history space-y-3 border-l-2 border-slate-300 pl-4 dark:border-slate-700">
                {history.changes.into_iter().map(|c| view! { <Change change=c viewer/> }).collect_view()}
            </ol>
        </section>
    }
}

/// For staff: when they were alerted about the current unknown outcome (a webhook delivery, docs/api.md
/// "Alerted"), or, while the outcome is unknown and none was delivered, that no alert went out.
#[component]
fn Alerted(history: RwSignal<OperationHistory>) -> impl IntoView {
    move || {
        history.with(|h| {
            let unknown = settled_unknown(h);
            match h.alerted_at.clone() {
                Some(at) => Some(view! {
                    <p class="alerted mb-3 text-sm">"Staff were alerted " <crate::components::time::Time at/> " (webhook delivered)."</p>
                }.into_any()),
                None if unknown => Some(view! {
                    <p class="alerted mb-3 text-sm opacity-80">"No alert has been delivered about this unknown outcome (no webhook takes it, or its delivery is still being tried)."</p>
                }.into_any()),
                None => None,
            }
        })
    }
}

/// Who holds the claim on the operation (docs/api.md "Claims"), and since when: the history's `claim`
/// (whatever page of changes it holds), else the staff name of the latest `claim` row of its changes
/// when no `release` came after it. A viewer's history has neither.
pub fn claim_of(history: &OperationHistory) -> Option<(String, String)> {
    if let Some(c) = &history.claim {
        return Some((c.by.clone(), c.at.clone()));
    }
    history
        .changes
        .iter()
        .rev()
        .find(|c| matches!(c.kind, HistoryKind::Claim | HistoryKind::Release))
        .filter(|c| c.kind == HistoryKind::Claim)
        .map(|c| {
            // An assignment's holder is the colleague its note names.
            let by = c.note.clone().unwrap_or_else(|| {
                c.actor
                    .strip_prefix("staff:")
                    .unwrap_or(&c.actor)
                    .to_owned()
            });
            (by, c.at.clone())
        })
}

/// Staff only: who is on this operation, and "I'm on it" (or "Release" for a claim held). A form post
/// without JavaScript (`…/claim`, `…/release`, 303 back here); once interactive `POST`/`DELETE` of the
/// claim API, then the history is read again. A claim held by another is said in words (409).
#[component]
fn ClaimBox(
    base: String,
    history: RwSignal<OperationHistory>,
    attempt: Memo<Option<String>>,
) -> impl IntoView {
    let held = Memo::new(move |_| history.with(claim_of));
    let said = RwSignal::new(String::new());
    let (key, id) = history.with_untracked(|h| (h.session_key.clone(), h.mutation_id.clone()));
    let act = move |take: bool| {
        let (key, id) = (key.clone(), id.clone());
        move |ev: leptos::ev::MouseEvent| {
            ev.prevent_default();
            #[cfg(feature = "hydrate")]
            {
                let (key, id) = (key.clone(), id.clone());
                leptos::task::spawn_local(async move {
                    let answer = api::claim(&key, &id, take).await;
                    said.set(crate::routes::unknowns::claim_words(answer, &id));
                    if let Ok(h) = api::operation_history(&key, &id, None).await {
                        history.set(h);
                    }
                });
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = (&key, &id, take, said);
        }
    };
    let (take, release) = (act(true), act(false));
    view! {
        {move || (held.get().is_some() || attempt.get().is_some()).then(|| {
            let (take, release) = (take.clone(), release.clone());
            view! {
                <form method="post" class="claim-box mb-6 flex flex-wrap items-center gap-3 rounded-md border border-slate-200 p-3 text-sm dark:border-slate-800">
                    <input type="hidden" name="next" value=base.clone()/>
                    {match held.get() {
                        Some((by, at)) => view! {
                            <span class="claim-holder" data-by=by.clone()>{format!("{by} is on it")}" · since "<crate::components::time::Time at/></span>
                            <button type="submit" formaction=format!("{base}/release") class=BUTTON on:click=release>"Release"</button>
                        }.into_any(),
                        None => view! {
                            <span class="claim-holder">"Nobody is on it."</span>
                            <button type="submit" formaction=format!("{base}/claim") class=BUTTON on:click=take>"I'm on it"</button>
                        }.into_any(),
                    }}
                    <span class="claim-said" role="status" aria-live="polite">{move || said.get()}</span>
                </form>
                <form method="post" action=format!("{base}/assignment") class="assign-form -mt-4 mb-6 flex flex-wrap items-center gap-2 text-sm">
                    <input type="hidden" name="next" value=base.clone()/>
                    <label for="assign-to">"Hand it to a colleague"</label>
                    <input id="assign-to" name="to" required maxlength="64" autocomplete="off" spellcheck="false" placeholder="staff name"
                        class="w-40 rounded border border-slate-300 bg-white px-2 py-0.5 font-mono text-sm dark:border-slate-700 dark:bg-slate-900"/>
                    <button type="submit" class=BUTTON>"Assign"</button>
                </form>
            }
        })}
    }
}

/// The links between an operation and new work commissioned after it.
#[component]
fn Commissioned(history: OperationHistory) -> impl IntoView {
    let key = history.session_key.clone();
    let after = history.commissioned_after.clone().map(|a| {
        let href = history_href(&key, &a);
        view! {
            <p class="commissioned-after mb-2 text-sm">
                "Commissioned after operation "
                <a rel="external" class="break-all font-mono underline underline-offset-2" href=href><bdi>{mark(&a)}</bdi></a>
            </p>
        }
    });
    let later = (!history.commissioned.is_empty()).then(|| {
        view! {
            <div class="commissioned mb-2 text-sm">
                <p>"New work commissioned after this operation:"</p>
                <ul class="ml-4 list-disc">
                    {history.commissioned.iter().map(|m| view! {
                        <li><a rel="external" class="break-all font-mono underline underline-offset-2" href=history_href(&key, m)><bdi>{mark(m)}</bdi></a></li>
                    }).collect_view()}
                </ul>
            </div>
        }
    });
    view! { <div class="mb-4">{after}{later}</div> }
}

/// One change of the timeline (its revision number for staff only: `viewer` leaves it out).
#[component]
fn Change(change: HistoryChange, viewer: bool) -> impl IntoView {
    let status = change.outcome.as_ref().map(|o| o.status);
    let in_flight = change.ledger_status == LedgerStatus::ExecutionStarted;
    let badge = match (change.kind, status) {
        (k, _) if k.is_internal() => None,
        (_, None) => None,
        (_, Some(s)) => Some(
            view! { <StatusBadge status=s in_flight=in_flight && s == PublishedStatus::OutcomeUnknown/> },
        ),
    };
    // An end user reads who in the change's words ([`kind_words_for`]); staff the revision and actor.
    let details = [
        change
            .revision
            .filter(|_| !viewer)
            .map(|r| format!("revision {r}")),
        (!viewer).then(|| format!("by {}", actor_words(&change.actor))),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    view! {
        <li class="change relative" data-kind=change.kind.as_str() data-actor=change.actor.clone()>
            <span aria-hidden="true" class="absolute -left-[1.4rem] top-1.5 h-2.5 w-2.5 rounded-full bg-slate-400 dark:bg-slate-500"></span>
            <p class="flex flex-wrap items-center gap-2">
                <span class="font-medium">{kind_words_for(&change, viewer)}</span>
                {badge}
            </p>
            <p class="text-xs opacity-80">
                <Time at=change.at.clone()/>
                {(!details.is_empty()).then(|| view! { " · " <bdi>{details}</bdi> })}
            </p>
            {match change.settled_by {
                // The ledger's own settlement at the deadline: who did it and why, in words (the end
                // user's: the agent stopped reporting).
                Some(SettledBy::Ledger) => Some(view! {
                    <p class="reason by-ledger text-sm">{if viewer { "The agent stopped reporting on this write." } else { "The host did not settle it by its deadline." }}</p>
                }.into_any()),
                _ => change.reason.filter(|_| sets_reason(change.kind)).map(|r| view! { <p class="reason text-sm">{reason_text(r)}</p> }.into_any()),
            }}
            {change.deadline_at.clone().filter(|_| !viewer && matches!(change.kind, HistoryKind::Intent | HistoryKind::Attempt)).map(|at| view! {
                <p class="deadline text-xs opacity-80">"Deadline " <DueTime at/></p>
            })}
            {change.evidence.map(|e| view! {
                // A viewer's evidence holds only when it was observed (the server leaves out its
                // source and reference: free text typed for staff).
                <dl class="evidence mt-1 grid grid-cols-[auto_1fr] gap-x-3 text-sm">
                    {(!viewer).then(|| view! {
                        <dt class="opacity-80">"Source"</dt><dd class="break-all font-mono">{e.source}</dd>
                        <dt class="opacity-80">"Reference"</dt><dd class="break-all font-mono">{e.reference}</dd>
                    })}
                    <dt class="opacity-80">"Observed"</dt><dd><Time at=e.observed_at/></dd>
                    // The provider's own status the host passed through (staff only).
                    {e.provider_status.filter(|_| !viewer).map(|p| view! {
                        <dt class="opacity-80">"Provider status"</dt><dd class="provider-status font-mono">{p}</dd>
                    })}
                </dl>
            })}
            {change.note.filter(|_| change.kind != HistoryKind::Claim).map(|n| view! {
                <p class="note mt-1 whitespace-pre-wrap break-words rounded bg-slate-50 p-2 text-sm dark:bg-slate-900">{n}</p>
            })}
        </li>
    }
}

/// Copies the page's address.
#[component]
fn CopyLinkButton() -> impl IntoView {
    let copied = RwSignal::new(false);
    let on_click = move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(window) = web_sys::window() {
            if let Ok(href) = window.location().href() {
                let _ = window.navigator().clipboard().write_text(&href);
                copied.set(true);
            }
        }
    };
    view! {
        <button type="button" class="copy-link rounded border border-current px-2 py-0.5 text-sm hover:bg-black/5 dark:hover:bg-white/10" on:click=on_click>
            {move || if copied.get() { "Link copied" } else { "Copy link" }}
        </button>
    }
}

const INPUT: &str = "w-full rounded border border-slate-300 bg-white px-2 py-1 text-sm dark:border-slate-700 dark:bg-slate-900";
const BUTTON: &str = "rounded bg-slate-900 px-3 py-1 text-sm font-medium text-white hover:bg-slate-700 dark:bg-slate-100 dark:text-slate-900 dark:hover:bg-slate-300";

/// Staff only: add a note; reconcile an unknown outcome with evidence observed at the provider, bound to
/// the attempt this page shows. Plain form posts (they work without JavaScript), answered by 303 back here.
#[component]
fn OperatorActions(
    base: String,
    attempt: Memo<Option<String>>,
    in_flight: Memo<bool>,
) -> impl IntoView {
    let notes_action = format!("{base}/notes");
    let reconcile_action = format!("{base}/reconciliation");
    // "Observed at" is what the operator saw at the provider: empty until they enter it (the server
    // refuses a missing one), never the page's load time. Once the page is interactive, a button fills in
    // the current time for an observation made just now.
    let observed = RwSignal::new(String::new());
    let interactive = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| interactive.set(true));
    view! {
        <section class="operator-actions mb-6 space-y-6 rounded-md border border-slate-200 p-4 dark:border-slate-800" aria-labelledby="actions-heading">
            <h2 id="actions-heading" class="text-lg font-semibold">"Operator actions"</h2>
            <p class="text-sm opacity-80">"Recorded in the history with your name. Nothing here resends the write."</p>
            <form method="post" action=notes_action class="note-form space-y-2">
                <label class="block text-sm font-medium" for="note-text">"Add a note"</label>
                <p id="note-internal" class="note-internal text-xs opacity-80">"Notes are internal: staff see them with your name; the end user's viewer link never shows a note, their count or who wrote them."</p>
                <textarea id="note-text" name="text" aria-describedby="note-internal" required maxlength="4096" rows="3" class=INPUT
                    placeholder="What you found, whom you asked, what is next"></textarea>
                <button type="submit" class=BUTTON>"Add note"</button>
            </form>
            {move || attempt.get().map(|attempt| view! {
                <form method="post" action=reconcile_action.clone() class="reconcile-form space-y-2">
                    <h3 class="font-medium">{move || if in_flight.get() { "Reconcile this write in flight" } else { "Reconcile this unknown outcome" }}</h3>
                    {move || in_flight.get().then(|| view! {
                        <p class="in-flight-hint text-sm">"Its host has not reported back. If you know what happened at the provider (the host is gone, or you checked), record it here; the host's own report is then refused."</p>
                    })}
                    <p class="text-sm">
                        "Only with evidence you observed at the provider about attempt "
                        <code class="font-mono">{mark(&attempt)}</code>
                        ". If the entry moved on since this page loaded, the ledger refuses it."
                    </p>
                    <input type="hidden" name="attempt_id" value=attempt.clone()/>
                    <fieldset class="space-y-1">
                        <legend class="text-sm font-medium">"What the provider shows"</legend>
                        <label class="mr-4 inline-flex items-center gap-1 text-sm"><input type="radio" name="completed" value="true" required/>"It took effect (completed)"</label>
                        <label class="inline-flex items-center gap-1 text-sm"><input type="radio" name="completed" value="false"/>"It did not take effect (not executed)"</label>
                    </fieldset>
                    <label class="block text-sm font-medium">"Evidence source" <input name="source" required maxlength="256" class=INPUT placeholder="payments-api"/></label>
                    <label class="block text-sm font-medium">"Evidence reference" <input name="reference" required maxlength="256" class=INPUT placeholder="refund re_123"/></label>
                    <label class="block text-sm font-medium" for="observed-at">"Observed at (RFC 3339)"</label>
                    <div class="flex items-center gap-2">
                        <input id="observed-at" name="observed_at" required class=INPUT placeholder="2026-12-01T18:30:00Z" aria-describedby="observed-at-hint"
                            prop:value=move || observed.get() on:input=move |ev| observed.set(event_target_value(&ev))/>
                        {move || interactive.get().then(|| view! {
                            <button type="button" class="observed-now shrink-0 rounded border border-slate-400 px-2 py-1 text-xs hover:bg-slate-100 dark:border-slate-600 dark:hover:bg-slate-800"
                                on:click=move |_| observed.set(now_rfc3339())>"Now"</button>
                        })}
                    </div>
                    <p id="observed-at-hint" class="text-xs opacity-80">"When you saw it at the provider, with its time zone. Nothing is filled in for you."</p>
                    <button type="submit" class=BUTTON>"Reconcile"</button>
                </form>
            })}
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(kind: HistoryKind, status: LedgerStatus, attempt: Option<&str>) -> HistoryChange {
        HistoryChange {
            kind,
            at: "2026-12-01T18:00:00.000Z".into(),
            revision: None,
            actor: "host".into(),
            attempt_id: attempt.map(str::to_owned),
            ledger_status: status,
            reason: None,
            evidence: None,
            note: None,
            outcome: None,
            deadline_at: None,
            settled_by: None,
            established_by: None,
        }
    }

    fn history(changes: Vec<HistoryChange>) -> OperationHistory {
        OperationHistory {
            session_key: "s".into(),
            logical_turn_id: "t".into(),
            mutation_id: "m".into(),
            commissioned_after: None,
            commissioned: vec![],
            changes,
            next: None,
            alerted_at: None,
            claim: None,
        }
    }

    /// A settled unknown outcome and a write in flight (its host may be gone, docs/api.md "Deadlines")
    /// are reconcilable, with the current attempt; nothing else is.
    #[test]
    fn an_unknown_outcome_or_a_write_in_flight_is_reconcilable_and_with_its_current_attempt() {
        use HistoryKind::*;
        use LedgerStatus::*;
        let approved = change(Approval, Approved, None);
        let started = change(Intent, ExecutionStarted, Some("att-1"));
        let unknown = change(Settlement, OutcomeUnknown, Some("att-1"));
        // A note after it keeps the status of the change before it.
        let note = change(Note, OutcomeUnknown, Some("att-1"));
        let done = change(Reconciliation, Completed, Some("att-1"));
        assert_eq!(reconcilable_attempt(&history(vec![approved.clone()])), None);
        assert_eq!(
            reconcilable_attempt(&history(vec![approved.clone(), started.clone()])),
            Some("att-1".into())
        );
        assert!(!settled_unknown(&history(vec![
            approved.clone(),
            started.clone()
        ])));
        let open = vec![
            approved.clone(),
            started.clone(),
            unknown.clone(),
            note.clone(),
        ];
        assert_eq!(
            reconcilable_attempt(&history(open.clone())),
            Some("att-1".into())
        );
        let mut closed = open;
        closed.push(done);
        assert_eq!(reconcilable_attempt(&history(closed)), None);
        // In flight: the last change that is not a note started an attempt.
        let mut started = started;
        started.at = "2026-12-01T18:00:01.000Z".into();
        started.deadline_at = Some("2026-12-01T18:15:01.000Z".into());
        let c = current(&history(vec![approved, started, note]));
        assert!(c.in_flight);
        // In flight since the intent, with its deadline.
        assert_eq!(c.since.as_deref(), Some("2026-12-01T18:00:01.000Z"));
        assert_eq!(c.deadline_at.as_deref(), Some("2026-12-01T18:15:01.000Z"));
    }

    #[test]
    fn changes_read_in_words_with_their_attempt() {
        let c = change(
            HistoryKind::Intent,
            LedgerStatus::ExecutionStarted,
            Some("att-2"),
        );
        assert_eq!(
            kind_words(&c),
            "Intent recorded: execution started (attempt att-2)"
        );
        let c = change(HistoryKind::Approval, LedgerStatus::Approved, None);
        assert_eq!(kind_words(&c), "Approved by the host");
    }

    #[test]
    fn the_latest_claim_holds_until_a_release() {
        use HistoryKind::*;
        use LedgerStatus::*;
        let unknown = change(Settlement, OutcomeUnknown, Some("att-1"));
        let mut claim = change(Claim, OutcomeUnknown, Some("att-1"));
        claim.actor = "staff:ada".into();
        let release = change(Release, OutcomeUnknown, Some("att-1"));
        assert_eq!(claim_of(&history(vec![unknown.clone()])), None);
        assert_eq!(
            claim_of(&history(vec![unknown.clone(), claim.clone()])),
            Some(("ada".into(), "2026-12-01T18:00:00.000Z".into()))
        );
        assert_eq!(
            claim_of(&history(vec![unknown.clone(), claim.clone(), release])),
            None
        );
        let note = change(Note, OutcomeUnknown, Some("att-1"));
        assert_eq!(
            claim_of(&history(vec![unknown, claim, note])).map(|c| c.0),
            Some("ada".into())
        );
    }

    /// The ledger's settlement at a deadline reads as the ledger's, and the card knows the ledger settled
    /// it even after metadata came later.
    #[test]
    fn a_settlement_by_the_ledger_reads_as_the_ledgers() {
        use HistoryKind::*;
        use LedgerStatus::*;
        let mut by_ledger = change(Settlement, OutcomeUnknown, Some("att-1"));
        by_ledger.actor = "ledger".into();
        by_ledger.settled_by = Some(SettledBy::Ledger);
        by_ledger.at = "2026-12-01T18:15:02.000Z".into();
        assert_eq!(
            kind_words(&by_ledger),
            "Settled by the ledger at its deadline (attempt att-1)"
        );
        assert_eq!(actor_words(&by_ledger.actor), "the ledger");
        // An end user reads no deadline.
        assert_eq!(kind_words_for(&by_ledger, true), "Marked unknown");
        let c = current(&history(vec![
            change(Intent, ExecutionStarted, Some("att-1")),
            by_ledger,
            change(Metadata, OutcomeUnknown, Some("att-1")),
        ]));
        assert!(!c.in_flight);
        assert_eq!(c.settled_by, Some(SettledBy::Ledger));
        assert_eq!(c.since.as_deref(), Some("2026-12-01T18:15:02.000Z"));
    }

    /// What an end user reads of each change: what their agent did and who established a result, never
    /// an attempt id or the ledger's own words.
    #[test]
    fn an_end_user_reads_each_change_in_their_words() {
        use HistoryKind::*;
        use LedgerStatus::*;
        let reconciled = |by: EstablishedBy, status: PublishedStatus| {
            let mut c = change(Reconciliation, Completed, Some("att-1"));
            c.established_by = Some(by);
            c.outcome = Some(ledger::wire::MutationOutcome {
                schema: "mutation_outcome/v1".into(),
                logical_turn_id: "t".into(),
                mutation_id: "m".into(),
                tool: "payments.charge".into(),
                status,
                resource_id: None,
                url: None,
                title: None,
                reason: None,
            });
            c
        };
        let cases = [
            (change(Approval, Approved, None), "Your agent asked for it"),
            (
                change(Intent, ExecutionStarted, Some("att-1")),
                "Your agent started it",
            ),
            (
                change(Settlement, Completed, Some("att-1")),
                "Your agent reported the result",
            ),
            (
                change(Cancellation, Failed, Some("att-1")),
                "Cancelled before it was sent",
            ),
            (
                change(Attempt, ExecutionStarted, Some("att-2")),
                "Your agent tried it again",
            ),
            (
                change(Metadata, Completed, Some("att-1")),
                "Its title and link were added",
            ),
            (
                reconciled(EstablishedBy::Staff, PublishedStatus::Completed),
                "Confirmed completed by support",
            ),
            (
                reconciled(EstablishedBy::StatusCheck, PublishedStatus::NotExecuted),
                "Confirmed not done by the provider's status",
            ),
        ];
        for (c, words) in cases {
            let said = kind_words_for(&c, true);
            assert_eq!(said, words);
            for word in [
                "attempt", "att-", "intent", "settled", "reconcil", "ledger", "host",
            ] {
                assert!(!said.to_lowercase().contains(word), "{said}");
            }
        }
    }

    #[test]
    fn actors_read_in_words() {
        assert_eq!(actor_words("ledger"), "the ledger");
        assert_eq!(actor_words("host"), "the host");
        assert_eq!(actor_words("staff:alice"), "staff alice");
        assert_eq!(actor_words("staff"), "support");
        assert_eq!(actor_words("other"), "other");
    }
}
