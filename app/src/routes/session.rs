//! A session as its end user reads it (docs/design.md "What the person sees"): the logical turns of the
//! conversation with their outcomes, in recorded order, live, under a short summary that says what to quote
//! to support for an unknown outcome. Each row links to its operation page, each turn to its turn page.
//!
//! The page has a row budget ([`ROW_BUDGET`]): it shows the newest turns, each with its newest rows (at
//! most [`ROWS_PER_TURN`], live ones included), oldest first within what it shows, and says how many
//! earlier turns and rows it leaves out, with a link to them (the session's turns, the turn's page) that
//! works without JavaScript.

use ledger::wire::{SessionTurns, StatusCounts, TurnEntries, TurnSummary};
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::api::{self, ApiError};
use crate::components::marks::mark;
use crate::components::outcome::CopyIdButton;
use crate::components::time::Time;
use crate::components::{ApiErrorPanel, ConnectionIndicator, Counts, ExportLinks, ViewerNotice};
use crate::routes::{param, turn_href, turns_href};
use crate::roving::{KeysHelp, TimelineRows};
use crate::timeline::{Connection, Timeline};

/// The page's row budget (docs/design.md "What the person sees"): at most this many outcome rows in all,
/// a turn without rows counting as one. The newest turns are shown; the earlier ones are one click away
/// (the session's turns, [`turns_href`]).
pub const ROW_BUDGET: usize = 500;

/// Most outcomes of one turn the page shows: a bigger turn shows its newest ones (live ones included)
/// and links its turn page for the rest.
pub const ROWS_PER_TURN: usize = 50;

/// One turn as the page read it: its newest entries (newest first, with the turn's counts) and how
/// many rows it shows at most.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownTurn {
    pub logical_turn_id: String,
    pub first_recorded_at: String,
    pub shown: usize,
    pub entries: TurnEntries,
}

/// What the page read: the newest turns within [`ROW_BUDGET`] (oldest first), and what it leaves out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRead {
    pub session_key: String,
    pub last_activity: String,
    /// The session's turns in all.
    pub total_turns: u64,
    /// The counts of the turns not shown (the earlier ones), as read.
    pub earlier: StatusCounts,
    pub turns: Vec<ShownTurn>,
}

/// Which turns of `newest_first` the page shows, and how many rows of each: the newest turns, each with
/// its newest rows up to `per_turn`, until `budget` rows are shown (a turn without rows counts as one).
/// Answers (index in `newest_first`, rows) pairs, newest first.
pub fn plan(newest_first: &[TurnSummary], budget: usize, per_turn: usize) -> Vec<(usize, usize)> {
    let mut left = budget;
    let mut out = Vec::new();
    for (i, t) in newest_first.iter().enumerate() {
        if left == 0 {
            break;
        }
        let rows = usize::try_from(t.counts.total())
            .unwrap_or(usize::MAX)
            .min(per_turn)
            .min(left);
        out.push((i, rows));
        left -= rows.max(1);
    }
    out
}

/// Reads the session's newest turns (one page of [`ROW_BUDGET`] turns, newest first, with the session's
/// counts and number of turns), then the newest rows of each turn the [`plan`] shows.
async fn read(reader: api::Reader, key: String) -> Result<SessionRead, ApiError> {
    let turns: SessionTurns = reader.newest_turns(&key, ROW_BUDGET).await?;
    let mut earlier = turns.counts.clone();
    let mut shown = Vec::new();
    for (i, rows) in plan(&turns.turns, ROW_BUDGET, ROWS_PER_TURN) {
        let t = &turns.turns[i];
        earlier.sub_all(&t.counts);
        let entries = if rows == 0 {
            // Nothing published in this turn yet: nothing to read.
            TurnEntries {
                session_key: turns.session_key.clone(),
                logical_turn_id: t.logical_turn_id.clone(),
                latest_revision: t.latest_revision,
                entries: Vec::new(),
                next: None,
                counts: Some(t.counts.clone()),
            }
        } else {
            reader
                .newest_entries(&key, &t.logical_turn_id, rows)
                .await?
        };
        shown.push(ShownTurn {
            logical_turn_id: t.logical_turn_id.clone(),
            first_recorded_at: t.first_recorded_at.clone(),
            // A turn cut short by the budget keeps showing as many rows as it got; the others up to the
            // cap per turn.
            shown: if rows < ROWS_PER_TURN && (rows as u64) < t.counts.total() {
                rows.max(1)
            } else {
                ROWS_PER_TURN
            },
            entries,
        });
    }
    shown.reverse();
    Ok(SessionRead {
        session_key: turns.session_key,
        last_activity: turns.last_activity,
        total_turns: turns.total,
        earlier,
        turns: shown,
    })
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
    /// Rows shown at most (the newest).
    shown: usize,
    timeline: RwSignal<Timeline>,
}

/// The turns not shown (all earlier than those shown): how many, and their counts as last read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Earlier {
    turns: u64,
    counts: StatusCounts,
}

#[component]
fn LiveSession(read: SessionRead) -> impl IntoView {
    let key = read.session_key.clone();
    let blocks = RwSignal::new(
        read.turns
            .iter()
            .map(|t| TurnBlock {
                logical_turn_id: t.logical_turn_id.clone(),
                first_recorded_at: t.first_recorded_at.clone(),
                shown: t.shown,
                timeline: RwSignal::new(Timeline::newest(&t.entries)),
            })
            .collect::<Vec<_>>(),
    );
    let earlier = RwSignal::new(Earlier {
        turns: read.total_turns.saturating_sub(read.turns.len() as u64),
        counts: read.earlier.clone(),
    });
    let connection = RwSignal::new(Connection::Snapshot);
    let last_activity = read.last_activity.clone();
    #[cfg(feature = "hydrate")]
    {
        let key = key.clone();
        let read_through: Vec<i64> = read
            .turns
            .iter()
            .map(|t| t.entries.latest_revision)
            .collect();
        Effect::new(move |_| {
            follow::start(
                key.clone(),
                blocks,
                earlier,
                read_through.clone(),
                connection,
            )
        });
    }
    let row_key = key.clone();
    let all_turns = turns_href(&key);
    // Each turn's number in the session: the earlier turns come first.
    let numbered = move || {
        let before = earlier.with(|e| e.turns) as usize;
        blocks
            .get()
            .into_iter()
            .enumerate()
            .map(|(i, b)| (before + i + 1, b))
            .collect::<Vec<_>>()
    };
    view! {
        <p class="mb-2 text-sm opacity-80">"Last activity " <Time at=last_activity/></p>
        <div class="mb-3 flex flex-wrap items-center justify-between gap-3">
            <ConnectionIndicator connection/>
            <ExportLinks session_key=key.clone()/>
        </div>
        <Summary blocks earlier/>
        <KeysHelp/>
        {move || {
            let n = earlier.with(|e| e.turns);
            (n > 0).then(|| view! {
                <p class="earlier-turns mb-3 text-sm" data-earlier=n>
                    {if n == 1 {
                        "1 earlier turn is not shown here; this page shows the newest turns. ".to_owned()
                    } else {
                        format!("{n} earlier turns are not shown here; this page shows the newest turns. ")
                    }}
                    <a rel="external" class="underline underline-offset-2" href=all_turns.clone()>"See every turn of this session"</a>
                </p>
            })
        }}
        <ol class="turns space-y-6" aria-label="Turns of this session, oldest first">
            <For
                each=numbered
                key=|(n, b)| (*n, b.logical_turn_id.clone())
                children=move |(n, b)| {
                    let session = row_key.clone();
                    view! { <TurnSection session number=n block=b/> }
                }
            />
        </ol>
        {move || blocks.with(|b| b.is_empty()).then(|| view! { <p>"No logical turns yet."</p> })}
    }
}

/// The session's summary: counts across the whole session (the shown turns live, the earlier ones as
/// last read), and each settled unknown's operation id the page holds, to quote, with a copy button.
#[component]
fn Summary(blocks: RwSignal<Vec<TurnBlock>>, earlier: RwSignal<Earlier>) -> impl IntoView {
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

#[component]
fn TurnSection(session: String, number: usize, block: TurnBlock) -> impl IntoView {
    let timeline = block.timeline;
    let shown = block.shown;
    let turn = block.logical_turn_id.clone();
    let href = turn_href(&session, &turn);
    let more_href = href.clone();
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
    view! {
        <li class="turn" data-turn-id=turn.clone()>
            <h2 class="mb-2 flex flex-wrap items-baseline gap-x-3 gap-y-1 text-lg font-semibold">
                <a rel="external" class="break-all underline underline-offset-2" href=href>
                    {format!("Turn {number} · ")}<bdi class="font-mono">{mark(&turn)}</bdi>
                </a>
                <span class="text-xs font-normal opacity-80">"Started " <Time at=block.first_recorded_at.clone()/></span>
                <span class="text-sm font-normal">{move || view! { <Counts counts=timeline.with(Timeline::counts)/> }}</span>
            </h2>
            {more}
            <TimelineRows session rows label=format!("Outcomes of turn {number}, in recorded order") class="space-y-2"/>
            {move || timeline.with(Timeline::is_empty).then(|| view! { <p class="text-sm">"No published outcomes in this turn yet."</p> })}
        </li>
    }
}

/// The session page's live follower (hydrate only): one windowed [`crate::live::TurnFeed`] per shown turn
/// on one live stream. A change of a turn not shown, and every (re)open, reads the newest turns again:
/// turns newer than every shown one are added (the oldest shown ones leave the page while the rows shown
/// pass [`ROW_BUDGET`]), the earlier turns' number and counts are read again, and after a (re)open the
/// shown turns whose latest revision moved catch up.
#[cfg(feature = "hydrate")]
mod follow {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use ledger::wire::SessionTurns;
    use leptos::prelude::*;

    use super::{Earlier, TurnBlock, ROWS_PER_TURN, ROW_BUDGET};
    use crate::api;
    use crate::live::{Change, Event, Live, TurnFeed};
    use crate::timeline::{Connection, Timeline};

    struct Follow {
        blocks: RwSignal<Vec<TurnBlock>>,
        earlier: RwSignal<Earlier>,
        feeds: RefCell<Vec<Rc<TurnFeed>>>,
        listing: Cell<bool>,
        list_again: Cell<bool>,
        catch_up: Cell<bool>,
    }

    pub fn start(
        key: String,
        blocks: RwSignal<Vec<TurnBlock>>,
        earlier: RwSignal<Earlier>,
        read_through: Vec<i64>,
        connection: RwSignal<Connection>,
    ) {
        let feeds = blocks.with_untracked(|bs| {
            bs.iter()
                .zip(read_through)
                .map(|(b, latest)| {
                    TurnFeed::windowed(b.logical_turn_id.clone(), b.timeline, latest, b.shown)
                })
                .collect()
        });
        let follow = Rc::new(Follow {
            blocks,
            earlier,
            feeds: RefCell::new(feeds),
            listing: Cell::new(false),
            list_again: Cell::new(false),
            catch_up: Cell::new(false),
        });
        crate::live::connect(key, connection, move |live, event| {
            let feeds = follow.feeds.borrow().clone();
            let known = |turn: &str| feeds.iter().any(|f| f.turn() == turn);
            let relist = match &event {
                Event::Opened => true,
                Event::Change(c) => match c {
                    // None named: every turn, new ones included (docs/api.md "Live run events").
                    Change::Resync(turns) => turns.is_empty() || turns.iter().any(|t| !known(t)),
                    other => other.turn().is_some_and(|t| !known(t)),
                },
            };
            if !matches!(event, Event::Opened) {
                for f in &feeds {
                    f.hear(live, &event);
                }
            }
            if relist {
                list(follow.clone(), live.clone(), matches!(event, Event::Opened));
            }
        });
    }

    /// Reads the newest turns (one read at a time; one asked for meanwhile follows it) and applies them.
    fn list(follow: Rc<Follow>, live: Rc<Live>, catch_up: bool) {
        if catch_up {
            follow.catch_up.set(true);
        }
        if follow.listing.replace(true) {
            follow.list_again.set(true);
            return;
        }
        leptos::task::spawn_local(async move {
            loop {
                let shown = follow.blocks.with_untracked(Vec::len);
                match api::newest_turns(live.session(), (shown + 50).min(1000)).await {
                    Ok(turns) => apply(&follow, &live, &turns, follow.catch_up.replace(false)),
                    Err(e) => {
                        live.stop_for(&e);
                    }
                }
                if !follow.list_again.replace(false) || live.stopped() {
                    break;
                }
            }
            follow.listing.set(false);
        });
    }

    /// Rows a block counts for in the budget: those it shows (at least one).
    fn rows_of(b: &TurnBlock) -> usize {
        b.timeline.with_untracked(|t| t.len().min(b.shown)).max(1)
    }

    fn apply(follow: &Rc<Follow>, live: &Rc<Live>, turns: &SessionTurns, catch_up: bool) {
        // Newest first: the turns before the first shown one are new; the others are shown or earlier.
        let mut fresh = Vec::new();
        let mut seen_shown = false;
        for t in &turns.turns {
            let feed = follow
                .feeds
                .borrow()
                .iter()
                .find(|f| f.turn() == t.logical_turn_id)
                .cloned();
            match feed {
                Some(feed) => {
                    seen_shown = true;
                    if catch_up {
                        feed.read_if_behind(live, t.latest_revision);
                    }
                }
                None if !seen_shown => fresh.push(t.clone()),
                None => {}
            }
        }
        for t in fresh.into_iter().rev() {
            let timeline = RwSignal::new(Timeline::default());
            follow.blocks.update(|bs| {
                bs.push(TurnBlock {
                    logical_turn_id: t.logical_turn_id.clone(),
                    first_recorded_at: t.first_recorded_at.clone(),
                    shown: ROWS_PER_TURN,
                    timeline,
                })
            });
            let feed = TurnFeed::windowed(t.logical_turn_id.clone(), timeline, 0, ROWS_PER_TURN);
            follow.feeds.borrow_mut().push(feed.clone());
            feed.read(live);
        }
        // The row budget: the oldest shown turns leave the page while the rows shown pass it.
        let over = follow.blocks.with_untracked(|bs| {
            let mut rows: usize = bs.iter().map(rows_of).sum();
            let mut n = 0;
            while n + 1 < bs.len() && rows > ROW_BUDGET {
                rows -= rows_of(&bs[n]);
                n += 1;
            }
            n
        });
        if over > 0 {
            let gone: Vec<String> = follow.blocks.with_untracked(|bs| {
                bs.iter()
                    .take(over)
                    .map(|b| b.logical_turn_id.clone())
                    .collect()
            });
            follow.blocks.update(|bs| {
                bs.drain(..over);
            });
            follow
                .feeds
                .borrow_mut()
                .retain(|f| !gone.iter().any(|g| g == f.turn()));
        }
        // The earlier turns: the session's counts less the shown turns' (as this read counts them).
        let mut counts = turns.counts.clone();
        let shown = follow.blocks.with_untracked(|bs| {
            for b in bs {
                match turns
                    .turns
                    .iter()
                    .find(|t| t.logical_turn_id == b.logical_turn_id)
                {
                    Some(t) => counts.sub_all(&t.counts),
                    None => counts.sub_all(&b.timeline.with_untracked(Timeline::counts)),
                }
            }
            bs.len() as u64
        });
        let earlier = Earlier {
            turns: turns.total.saturating_sub(shown),
            counts,
        };
        if follow.earlier.with_untracked(|e| *e != earlier) {
            follow.earlier.set(earlier);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: &str, outcomes: u64) -> TurnSummary {
        TurnSummary {
            logical_turn_id: id.into(),
            first_recorded_at: String::new(),
            latest_revision: 0,
            counts: StatusCounts {
                completed: outcomes,
                ..StatusCounts::default()
            },
        }
    }

    #[test]
    fn the_plan_shows_the_newest_turns_within_the_row_budget() {
        // 200 turns of 100, newest first: ten turns of 50 rows.
        let many: Vec<TurnSummary> = (0..200).map(|i| turn(&format!("t{i}"), 100)).collect();
        let p = plan(&many, ROW_BUDGET, ROWS_PER_TURN);
        assert_eq!(p, (0..10).map(|i| (i, 50)).collect::<Vec<_>>());
        // A turn without rows counts one; the last turn is cut to what is left.
        let mixed = [turn("a", 3), turn("b", 0), turn("c", 100), turn("d", 100)];
        assert_eq!(plan(&mixed, 60, 50), [(0, 3), (1, 0), (2, 50), (3, 6)]);
        // 20,000 empty turns: 500 shown.
        let empty: Vec<TurnSummary> = (0..20_000).map(|i| turn(&format!("t{i}"), 0)).collect();
        assert_eq!(plan(&empty, ROW_BUDGET, ROWS_PER_TURN).len(), 500);
        assert!(plan(&[], ROW_BUDGET, ROWS_PER_TURN).is_empty());
    }

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
