//! A session as its end user reads it (docs/design.md "What the person sees"): the logical turns of the
//! conversation with their outcomes, in recorded order, live, under a short summary that says what to quote
//! to support for an unknown outcome. Each row links to its operation page, each turn to its turn page.
//!
//! The page has a row budget ([`ROW_BUDGET`]): it shows the newest turns, each with its newest rows (at
//! most [`ROWS_PER_TURN`], live ones included), oldest first within what it shows, and says how many
//! earlier turns and rows it leaves out, with a link to them (the session's turns, the turn's page) that
//! works without JavaScript.
//!
//! The page is a map of the session (issue 26): a navigator (`nav#turn-nav`) lists the turns shown with
//! their counts and links to each, to the newest and to the first settled unknown; each turn collapses,
//! and the collapsed turns live in the address (`?collapsed=1-5,7`, turn numbers: [`parse_turns`],
//! [`format_turns`]), so a reload or a shared link shows the same. Every jump and collapse is a plain link or
//! GET form that works without JavaScript; once interactive they act in place and keep the address in step
//! (`history.replaceState`). "Follow newest" (interactive only) scrolls each new row or turn into view.

mod map;
mod section;
mod summary;
// The session page's live follower (hydrate only).
#[cfg(feature = "hydrate")]
mod follow;

use ledger::wire::{SessionTurns, StatusCounts, TurnEntries, TurnSummary};
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::api::{self, ApiError};
use crate::components::marks::mark;
use crate::components::roving::KeysHelp;
use crate::components::time::Time;
use crate::components::{ApiErrorPanel, ConnectionIndicator, ExportLinks, ViewerNotice};
use crate::connection::Connection;
use crate::routes::{param, turns_href};
use crate::timeline::Timeline;

pub use self::map::{format_turns, map_href, parse_turns};
use self::map::{Map, TurnNav};
use self::section::TurnSection;
pub use self::summary::summary_text;
use self::summary::Summary;

/// The page's row budget (docs/design.md "What the person sees"): at most this many outcome rows in all,
/// a turn without rows counting as one. The newest turns are shown; the earlier ones are one click away
/// (the session's turns, [`turns_href`]).
pub const ROW_BUDGET: usize = 500;

/// Most outcomes of one turn the page shows: a bigger turn shows its newest ones (live ones included)
/// and links its turn page for the rest.
pub const ROWS_PER_TURN: usize = 50;

/// One turn as the page read it: its newest entries (newest first, with the turn's counts) and how
/// many rows it shows at most. Sent to the browser compactly ([`crate::hydration`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownTurn {
    pub logical_turn_id: String,
    pub first_recorded_at: String,
    pub shown: usize,
    #[serde(with = "crate::hydration::entries")]
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

/// Whether a turn's id only repeats its label ("Turn 3"): `3`, `turn-3`, `Turn 3`, `turn_3`, `turn3`
/// (case ignored; `-`, `_`, `.` or spaces between the word and the number). Anything else (`turn-03`,
/// `t3`, `turn-3b`) says something the label does not, and is shown beside it.
pub fn id_repeats_label(id: &str, number: usize) -> bool {
    let lower = id.to_lowercase();
    let rest = lower.strip_prefix("turn").map_or(lower.as_str(), |r| {
        r.trim_start_matches(['-', '_', '.', ' '])
    });
    rest == number.to_string()
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
#[derive(Clone, PartialEq)]
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
    // The newest time the page knows of: the session's last activity as read, or any newer row or turn
    // that arrived live.
    let read_activity = read.last_activity.clone();
    let last_activity = Memo::new(move |_| {
        let mut newest = read_activity.clone();
        blocks.with(|bs| {
            for b in bs {
                let mut newer = |at: &str| {
                    if at > newest.as_str() {
                        newest = at.to_owned();
                    }
                };
                newer(&b.first_recorded_at);
                b.timeline.with(|t| {
                    for r in t.rows() {
                        for at in [&r.recorded_at, &r.settled_at].into_iter().flatten() {
                            newer(at);
                        }
                    }
                })
            }
        });
        newest
    });
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
    let all_turns = turns_href(&key);
    // Turns collapsed (by number), as the address says; kept in the address as they change.
    let collapsed = RwSignal::new(
        crate::address::query_value("collapsed")
            .map(|v| parse_turns(&v))
            .unwrap_or_default(),
    );
    let follow = RwSignal::new(false);
    // Each turn's number in the session: the earlier turns come first.
    let numbered = Memo::new(move |_| {
        let before = earlier.with(|e| e.turns) as usize;
        blocks
            .get()
            .into_iter()
            .enumerate()
            .map(|(i, b)| (before + i + 1, b))
            .collect::<Vec<_>>()
    });
    let map = Map {
        key: key.clone(),
        collapsed,
        follow,
    };
    #[cfg(feature = "hydrate")]
    follow::newest_into_view(numbered, map.clone());
    let row_map = map.clone();
    view! {
        <Summary session_key=key.clone() blocks earlier/>
        // Stays in sight while scrolling: the connection state beside a form far down the page.
        <div class="sticky top-0 z-10 mb-3 flex flex-wrap items-center gap-x-4 gap-y-1 bg-white/95 py-1 text-sm dark:bg-slate-950/95">
            <ConnectionIndicator connection/>
            <p class="last-activity opacity-80">"Last activity " {move || view! { <Time at=last_activity.get()/> }}</p>
        </div>
        <KeysHelp/>
        {view! {
        <div class="lg:grid lg:grid-cols-[16rem_minmax(0,1fr)] lg:items-start lg:gap-6">
            <TurnNav map=map.clone() numbered earlier/>
            <div class="min-w-0">
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
                        each=move || numbered.get()
                        key=|(n, b)| (*n, b.logical_turn_id.clone())
                        children=move |(n, b)| {
                            view! { <TurnSection map=row_map.clone() number=n block=b/> }
                        }
                    />
                </ol>
                {move || blocks.with(|b| b.is_empty()).then(|| view! { <p>"No logical turns yet."</p> })}
                <ExportLinks session_key=key.clone()/>
            </div>
        </div>
        }.into_any()}
        <a href="#turn-nav" rel="external" class="to-turn-nav fixed bottom-4 right-4 rounded-full border border-slate-400 bg-white px-3 py-1 text-sm shadow focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 lg:hidden dark:border-slate-600 dark:bg-slate-900">"↑ Turns"</a>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: &str, outcomes: u64) -> TurnSummary {
        TurnSummary {
            logical_turn_id: id.into(),
            number: 0,
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
    fn a_turn_id_that_only_repeats_its_label_is_not_shown_again() {
        for id in ["turn-1", "Turn 1", "turn_1", "TURN1", "1", "turn.1"] {
            assert!(id_repeats_label(id, 1), "{id}");
        }
        for id in ["turn-01", "turn-2", "t1", "turn-1b", "turn-a", "", "turn"] {
            assert!(!id_repeats_label(id, 1), "{id}");
        }
    }
}
