//! A session as its end user reads it (docs/design.md "What the person sees"): every logical turn of the
//! conversation with its outcomes, in recorded order, live, under a short summary that says what to quote
//! to support for an unknown outcome. Each row links to its operation page, each turn to its turn page.

use ledger::wire::{SessionTurns, StatusCounts, TurnEntries, TurnSummary};
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::api::{self, ApiError};
use crate::components::marks::mark;
use crate::components::outcome::CopyIdButton;
use crate::components::time::Time;
use crate::components::{ApiErrorPanel, ConnectionIndicator, Counts, ExportLinks, ViewerNotice};
use crate::routes::{param, turn_href};
use crate::roving::{KeysHelp, TimelineRows};
use crate::timeline::{Connection, Timeline};

/// Most turns whose outcomes the page reads at once; a longer session shows the first ones and says how
/// many more there are (each still opens from its turn page).
pub const TURNS_SHOWN: usize = 200;

/// What the page read: the session's turns and the entries of the first [`TURNS_SHOWN`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRead {
    pub turns: SessionTurns,
    pub entries: Vec<TurnEntries>,
}

/// Most outcomes of one turn the page shows (docs/design.md "Big turns"): a bigger turn shows its first
/// ones and links its turn page for the rest; the browser still reads the rest, for the summary.
pub const ROWS_PER_TURN: usize = 50;

/// Reads the session's turns, then the first [`ROWS_PER_TURN`] entries of each shown turn.
async fn read(reader: api::Reader, key: String) -> Result<SessionRead, ApiError> {
    let turns: SessionTurns = reader.get_json(api::session_turns_path(&key)).await?;
    let mut entries = Vec::new();
    for t in turns.turns.iter().take(TURNS_SHOWN) {
        entries.push(
            reader
                .first_entries(&key, &t.logical_turn_id, ROWS_PER_TURN)
                .await?,
        );
    }
    Ok(SessionRead { turns, entries })
}

#[component]
pub fn SessionPage() -> impl IntoView {
    let key = param(2);
    let reader = api::reader();
    let session = Resource::new(move || key.get(), move |k| read(reader.clone(), k));
    view! {
        <Title text=crate::routes::page_title(move || format!("Session {} · Outcome ledger", mark(&key.get())))/>
        <h1 class="mb-1 break-all text-2xl font-semibold">"Session " <bdi class="font-mono">{move || mark(&key.get())}</bdi></h1>
        <ViewerNotice/>
        <Suspense fallback=|| view! { <p>"Loading the session…"</p> }>
            {move || Suspend::new(async move {
                match session.await {
                    Err(e) => view! { <ApiErrorPanel error=e/> }.into_any(),
                    Ok(s) => view! { <LiveSession read=s/> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// One turn as the page shows it.
#[derive(Clone)]
struct TurnBlock {
    logical_turn_id: String,
    first_recorded_at: String,
    timeline: RwSignal<Timeline>,
}

#[component]
fn LiveSession(read: SessionRead) -> impl IntoView {
    let key = read.turns.session_key.clone();
    let total_turns = read.turns.turns.len();
    let blocks = RwSignal::new(
        read.turns
            .turns
            .iter()
            .zip(read.entries.iter())
            .map(|(t, e)| TurnBlock {
                logical_turn_id: t.logical_turn_id.clone(),
                first_recorded_at: t.first_recorded_at.clone(),
                timeline: RwSignal::new(Timeline::from_first_page(e, Some(t.counts.clone()))),
            })
            .collect::<Vec<_>>(),
    );
    let connection = RwSignal::new(Connection::Snapshot);
    let last_activity = read.turns.last_activity.clone();
    // Turns past the first TURNS_SHOWN: listed with their counts as read, each linking to its page.
    let rest: Vec<TurnSummary> = read.turns.turns.iter().skip(TURNS_SHOWN).cloned().collect();
    let rest_counts = rest.iter().fold(StatusCounts::default(), |mut c, t| {
        add(&mut c, &t.counts);
        c
    });
    #[cfg(feature = "hydrate")]
    {
        let key = key.clone();
        let read_through: Vec<(i64, Option<String>)> = read
            .entries
            .iter()
            .map(|e| (e.latest_revision, e.next.clone()))
            .collect();
        Effect::new(move |_| follow::start(key.clone(), blocks, read_through.clone(), connection));
    }
    let row_key = key.clone();
    let numbered = move || blocks.get().into_iter().enumerate().collect::<Vec<_>>();
    view! {
        <p class="mb-2 text-sm opacity-80">"Last activity " <Time at=last_activity/></p>
        <div class="mb-3 flex flex-wrap items-center justify-between gap-3">
            <ConnectionIndicator connection/>
            <ExportLinks session_key=key.clone()/>
        </div>
        <Summary blocks rest=rest_counts.clone()/>
        {(total_turns > TURNS_SHOWN).then(|| view! {
            <p class="mb-3 text-sm">{format!("This session has {total_turns} turns; the first {TURNS_SHOWN} are shown in full here, the others are listed after them.")}</p>
        })}
        <KeysHelp/>
        <ol class="turns space-y-6" aria-label="Turns of this session, oldest first">
            <For
                each=numbered
                key=|(_, b)| b.logical_turn_id.clone()
                children=move |(i, b)| {
                    let session = row_key.clone();
                    view! { <TurnSection session number=i + 1 block=b/> }
                }
            />
        </ol>
        {move || blocks.with(|b| b.is_empty()).then(|| view! { <p>"No logical turns yet."</p> })}
        <LaterTurns session=key.clone() rest/>
    }
}

/// The turns past the first [`TURNS_SHOWN`]: a link to each, with its counts as the page read them.
#[component]
fn LaterTurns(session: String, rest: Vec<TurnSummary>) -> impl IntoView {
    (!rest.is_empty()).then(|| {
        view! {
            <section class="later-turns mt-6" aria-label="Later turns">
                <h2 class="mb-2 text-lg font-semibold">{format!("Turns {} to {}", TURNS_SHOWN + 1, TURNS_SHOWN + rest.len())}</h2>
                <p class="mb-2 text-sm opacity-80">"Counts as of loading this page; open a turn to see its outcomes, live."</p>
                <ol class="space-y-1" start=TURNS_SHOWN + 1>
                    {rest.into_iter().enumerate().map(|(i, t)| view! {
                        <li class="later-turn flex flex-wrap items-center gap-2">
                            <a rel="external" class="break-all underline underline-offset-2" href=turn_href(&session, &t.logical_turn_id)>
                                {format!("Turn {} · ", TURNS_SHOWN + i + 1)}<bdi class="font-mono">{mark(&t.logical_turn_id)}</bdi>
                            </a>
                            <Counts counts=t.counts/>
                        </li>
                    }).collect_view()}
                </ol>
            </section>
        }
    })
}

/// The session's summary: counts across every shown turn, and each settled unknown's operation id to
/// quote, with a copy button.
#[component]
fn Summary(blocks: RwSignal<Vec<TurnBlock>>, rest: StatusCounts) -> impl IntoView {
    let counts = Memo::new(move |_| {
        blocks.with(|bs| {
            let mut c = rest.clone();
            for b in bs {
                add(&mut c, &b.timeline.with(Timeline::counts));
            }
            c
        })
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
                // Settled unknowns whose ids the page does not hold: in the later turns listed below, or
                // in pages of big turns not read yet.
                let c = counts.get();
                let missing = (c.outcome_unknown.saturating_sub(c.in_flight) as usize).saturating_sub(unknown_ids.with(Vec::len));
                (missing > 0).then(|| view! {
                    <p class="rest-unknowns mt-2 text-sm">{if missing == 1 {
                        "1 more unknown outcome is in the later turns listed below, or in the part of a big turn not shown here: open its turn to quote its id.".to_owned()
                    } else {
                        format!("{missing} more unknown outcomes are in the later turns listed below, or in the parts of big turns not shown here: open each turn to quote its id.")
                    }}</p>
                })
            }}
        </section>
    }
}

/// `3 completed, 1 failed, 1 in flight, 1 unknown` (zero counts left out; "No outcomes yet." when all are).
pub fn summary_text(c: &StatusCounts) -> String {
    let settled_unknown = c.outcome_unknown.saturating_sub(c.in_flight);
    let parts: Vec<String> = [
        (c.completed, "completed"),
        (c.failed, "failed"),
        (c.not_executed, "not executed"),
        (c.in_flight, "in flight"),
        (settled_unknown, "unknown"),
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

#[component]
fn TurnSection(session: String, number: usize, block: TurnBlock) -> impl IntoView {
    let timeline = block.timeline;
    let turn = block.logical_turn_id.clone();
    let href = turn_href(&session, &turn);
    let more_href = href.clone();
    let rows = Memo::new(move |_| {
        timeline.with(|t| {
            t.rows()
                .iter()
                .take(ROWS_PER_TURN)
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    let more = move || {
        let total = timeline.with(Timeline::len);
        (total > ROWS_PER_TURN).then(|| view! {
            <p class="turn-more mt-2 text-sm">
                {format!("Showing the first {ROWS_PER_TURN} of {total} outcomes of this turn. ")}
                <a rel="external" class="underline underline-offset-2" href=more_href.clone()>"See them all on the turn's page"</a>
            </p>
        })
    };
    view! {
        <li class="turn" data-turn-id=turn.clone()>
            <h2 class="mb-2 flex flex-wrap items-baseline gap-x-3 gap-y-1 text-lg font-semibold">
                <a rel="external" class="break-all underline underline-offset-2" href=href>
                    {format!("Turn {number} · ")}<bdi class="font-mono">{mark(&turn)}</bdi>
                </a>
                <span class="text-xs font-normal opacity-80">"Started " <Time at=block.first_recorded_at.clone()/></span>
                <span class="text-sm font-normal">{move || view! { <Counts counts=timeline.with(Timeline::counts)/> }}</span>
            </h2>
            <TimelineRows session rows label=format!("Outcomes of turn {number}, in recorded order") class="space-y-2"/>
            {more}
            {move || timeline.with(Timeline::is_empty).then(|| view! { <p class="text-sm">"No published outcomes in this turn yet."</p> })}
        </li>
    }
}

/// Adds `more` to `total`, status by status.
fn add(total: &mut StatusCounts, more: &StatusCounts) {
    total.completed += more.completed;
    total.failed += more.failed;
    total.not_executed += more.not_executed;
    total.outcome_unknown += more.outcome_unknown;
    total.in_flight += more.in_flight;
}

/// The session page's live follower (hydrate only): one [`crate::live::TurnFeed`] per shown turn on one
/// live stream; a change of a turn not shown yet reads the turns again and adds the new ones (up to
/// [`TURNS_SHOWN`]); every (re)open reads the turns and catches up those whose latest revision moved.
#[cfg(feature = "hydrate")]
mod follow {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use leptos::prelude::*;

    use super::{TurnBlock, TURNS_SHOWN};
    use crate::api;
    use crate::live::{Event, Live, TurnFeed};
    use crate::timeline::{Connection, Timeline};

    struct Follow {
        blocks: RwSignal<Vec<TurnBlock>>,
        feeds: RefCell<Vec<Rc<TurnFeed>>>,
        listing: Cell<bool>,
    }

    pub fn start(
        key: String,
        blocks: RwSignal<Vec<TurnBlock>>,
        read_through: Vec<(i64, Option<String>)>,
        connection: RwSignal<Connection>,
    ) {
        let feeds = blocks.with_untracked(|bs| {
            bs.iter()
                .zip(read_through)
                .map(|(b, (latest, rest))| {
                    TurnFeed::with_rest(b.logical_turn_id.clone(), b.timeline, latest, rest)
                })
                .collect()
        });
        let follow = Rc::new(Follow {
            blocks,
            feeds: RefCell::new(feeds),
            listing: Cell::new(false),
        });
        crate::live::connect(key, connection, move |live, event| {
            let feeds = follow.feeds.borrow().clone();
            let known = |turn: &str| feeds.iter().any(|f| f.turn() == turn);
            let new_turn = match &event {
                Event::Opened => true,
                Event::Change(c) => match c {
                    // None named: every turn, new ones included (docs/api.md "Live run events").
                    crate::live::Change::Resync(turns) => {
                        turns.is_empty() || turns.iter().any(|t| !known(t))
                    }
                    other => other.turn().is_some_and(|t| !known(t)),
                },
            };
            if !matches!(event, Event::Opened) {
                for f in &feeds {
                    f.hear(live, &event);
                }
            }
            if new_turn {
                list(follow.clone(), live.clone(), matches!(event, Event::Opened));
            }
        });
    }

    /// Reads the turns: adds new ones (their feed reads all their entries) and, after a (re)open, catches up
    /// the known turns whose latest revision moved.
    fn list(follow: Rc<Follow>, live: Rc<Live>, catch_up: bool) {
        if follow.listing.replace(true) {
            return;
        }
        leptos::task::spawn_local(async move {
            match api::session_turns(live.session()).await {
                Ok(turns) => {
                    for t in turns.turns.iter().take(TURNS_SHOWN) {
                        let known = follow
                            .feeds
                            .borrow()
                            .iter()
                            .find(|f| f.turn() == t.logical_turn_id)
                            .cloned();
                        match known {
                            Some(feed) => {
                                if catch_up {
                                    feed.read_if_behind(&live, t.latest_revision);
                                }
                            }
                            None => {
                                let timeline = RwSignal::new(Timeline::default());
                                follow.blocks.update(|bs| {
                                    bs.push(TurnBlock {
                                        logical_turn_id: t.logical_turn_id.clone(),
                                        first_recorded_at: t.first_recorded_at.clone(),
                                        timeline,
                                    })
                                });
                                let feed = TurnFeed::new(t.logical_turn_id.clone(), timeline, 0);
                                follow.feeds.borrow_mut().push(feed.clone());
                                feed.read(&live);
                            }
                        }
                    }
                }
                Err(e) => {
                    live.stop_for(&e);
                }
            }
            follow.listing.set(false);
        });
    }
}
