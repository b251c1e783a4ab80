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

use std::collections::BTreeSet;

use ledger::wire::{PublishedStatus, SessionTurns, StatusCounts, TurnEntries, TurnSummary};
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::api::{self, ApiError};
use crate::components::marks::mark;
use crate::components::outcome::{status_look, CopyIdButton, CountKind};
use crate::components::roving::{KeysHelp, TimelineRows};
use crate::components::time::Time;
use crate::components::{ApiErrorPanel, ConnectionIndicator, Counts, ExportLinks, ViewerNotice};
use crate::connection::Connection;
use crate::routes::{param, session_href, turn_href, turns_href};
use crate::timeline::Timeline;

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

/// Most turn numbers `?collapsed=` is read for: more than the page ever shows ([`ROW_BUDGET`] turns).
const COLLAPSED_MAX: usize = 2 * ROW_BUDGET;

/// The turn numbers of `?collapsed=` (`1-5,7,9`: numbers and inclusive ranges, comma-separated, from 1):
/// anything else in it is skipped, and at most [`COLLAPSED_MAX`] numbers are read, so a long or hostile
/// address costs nothing.
pub fn parse_turns(text: &str) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let number = |t: &str| t.trim().parse::<usize>().ok().filter(|n| *n >= 1);
    for part in text.split(',').take(COLLAPSED_MAX) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => match (number(a), number(b)) {
                (Some(a), Some(b)) if a <= b => (a, b),
                _ => continue,
            },
            None => match number(part) {
                Some(n) => (n, n),
                None => continue,
            },
        };
        for n in lo..=hi {
            if out.len() >= COLLAPSED_MAX {
                return out;
            }
            out.insert(n);
        }
    }
    out
}

/// `turns` as `?collapsed=` spells them: ascending, runs of three or more as ranges (`1-5,7,9-11`).
pub fn format_turns(turns: &BTreeSet<usize>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    let close = |run: (usize, usize), parts: &mut Vec<String>| match run.1 - run.0 {
        0 => parts.push(run.0.to_string()),
        1 => parts.extend([run.0.to_string(), run.1.to_string()]),
        _ => parts.push(format!("{}-{}", run.0, run.1)),
    };
    for &n in turns {
        run = match run {
            Some((lo, hi)) if n == hi + 1 => Some((lo, n)),
            Some(r) => {
                close(r, &mut parts);
                Some((n, n))
            }
            None => Some((n, n)),
        };
    }
    if let Some(r) = run {
        close(r, &mut parts);
    }
    parts.join(",")
}

/// This page's address with `collapsed` turns (none: no query) and, when given, the anchor of turn `to`.
pub fn map_href(key: &str, collapsed: &BTreeSet<usize>, to: Option<usize>) -> String {
    let query = if collapsed.is_empty() {
        String::new()
    } else {
        format!("?collapsed={}", format_turns(collapsed))
    };
    let anchor = to.map(|n| format!("#turn-{n}")).unwrap_or_default();
    format!("{}{query}{anchor}", session_href(key))
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
        <p class="mb-2 text-sm opacity-80">"Last activity " <Time at=last_activity/></p>
        <div class="mb-3 flex flex-wrap items-center justify-between gap-3">
            <ConnectionIndicator connection/>
            <ExportLinks session_key=key.clone()/>
        </div>
        <Summary blocks earlier/>
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
            </div>
        </div>
        }.into_any()}
        <a href="#turn-nav" rel="external" class="to-turn-nav fixed bottom-4 right-4 rounded-full border border-slate-400 bg-white px-3 py-1 text-sm shadow focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 lg:hidden dark:border-slate-600 dark:bg-slate-900">"↑ Turns"</a>
    }
}

/// What the map's parts share: the session, the collapsed turns, and whether the page follows the newest.
#[derive(Clone)]
struct Map {
    key: String,
    collapsed: RwSignal<BTreeSet<usize>>,
    follow: RwSignal<bool>,
}

impl Map {
    /// Collapses (or expands) turn `n`, or every turn in `all` (`Some(true)` collapse, `Some(false)`
    /// expand), and keeps the address in step.
    fn set(&self, turns: &[usize], collapse: bool) {
        self.collapsed.update(|c| {
            for n in turns {
                if collapse {
                    c.insert(*n);
                } else {
                    c.remove(n);
                }
            }
        });
        self.remember(None);
    }

    /// Writes the collapsed turns (and the anchor of turn `to`) into the address without a reload.
    fn remember(&self, to: Option<usize>) {
        #[cfg(feature = "hydrate")]
        {
            let href = self
                .collapsed
                .with_untracked(|c| map_href(&self.key, c, to));
            if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
                let _ =
                    history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&href));
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = to;
    }

    /// Jumps to turn `n`: expands it, writes the address, scrolls its heading into view and focuses it.
    fn jump(&self, n: usize) {
        self.collapsed.update(|c| {
            c.remove(&n);
        });
        self.remember(Some(n));
        #[cfg(feature = "hydrate")]
        request_animation_frame(move || {
            if let Some(heading) = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.get_element_by_id(&format!("turn-{n}-title")))
            {
                heading.scroll_into_view();
                if let Ok(h) = wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(heading) {
                    let _ = h.focus();
                }
            }
        });
    }
}

/// A turn's counts as small status marks (icon and number, coloured; the words for screen readers), for
/// the navigator.
fn marks_of(counts: &StatusCounts) -> impl IntoView {
    CountKind::ALL
        .into_iter()
        .map(|k| (k, k.of(counts)))
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| {
            let (words, look) = match k {
                CountKind::InFlight => ("in flight", status_look(PublishedStatus::OutcomeUnknown, true)),
                CountKind::OutcomeUnknown => ("unknown", status_look(PublishedStatus::OutcomeUnknown, false)),
                CountKind::Failed => ("failed", status_look(PublishedStatus::Failed, false)),
                CountKind::NotExecuted => ("not executed", status_look(PublishedStatus::NotExecuted, false)),
                CountKind::Completed => ("completed", status_look(PublishedStatus::Completed, false)),
            };
            let (_, icon, classes) = look;
            view! {
                <span class=format!("nav-count inline-flex items-center gap-0.5 rounded border px-1 text-xs font-semibold tabular-nums {classes}") data-count=k.as_str()>
                    <span aria-hidden="true">{icon}</span>{n}<span class="sr-only">{format!(" {words}")}</span>
                </span>
            }
        })
        .collect_view()
}

/// The navigator: jumps to the newest turn and the first settled unknown, "follow newest" (once
/// interactive), collapse and expand all, and every turn shown with its marks, each a link to the turn on
/// this page (`#turn-N`, expanded by the link's address, so it works without JavaScript too).
#[component]
fn TurnNav(
    map: Map,
    numbered: Memo<Vec<(usize, TurnBlock)>>,
    earlier: RwSignal<Earlier>,
) -> impl IntoView {
    let interactive = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| interactive.set(true));
    let collapsed = map.collapsed;
    let follow = map.follow;
    // The link to turn `n`: the address without `n` collapsed, anchored at it.
    let to = {
        let key = map.key.clone();
        move |n: usize| {
            collapsed.with(|c| {
                let mut c = c.clone();
                c.remove(&n);
                map_href(&key, &c, Some(n))
            })
        }
    };
    let numbers = move || numbered.with(|ts| ts.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    let newest = move || numbered.with(|ts| ts.last().map(|(n, _)| *n));
    // The first turn with a settled unknown, or `None` when the first is in an earlier turn (not shown).
    let first_unknown = move || {
        if earlier.with(|e| e.counts.settled_unknown()) > 0 {
            return Some(None);
        }
        numbered.with(|ts| {
            ts.iter()
                .find(|(_, b)| b.timeline.with(Timeline::settled_unknown) > 0)
                .map(|(n, _)| Some(*n))
        })
    };
    let jump_link = "jump rounded border border-slate-400 px-2 py-0.5 underline-offset-2 hover:bg-slate-100 dark:border-slate-600 dark:hover:bg-slate-800";
    let all_turns = turns_href(&map.key);
    let (to_newest, to_unknown, to_item) = (to.clone(), to.clone(), to);
    let (map_newest, map_unknown, map_item) = (map.clone(), map.clone(), map.clone());
    let (map_collapse, map_expand) = (map.clone(), map.clone());
    let key_all = map.key.clone();
    let key_none = map.key.clone();
    let earlier_href = turns_href(&map.key);
    view! {
        <nav id="turn-nav" aria-label="Turns" class="turn-nav mb-5 rounded-md border border-slate-200 p-3 text-sm lg:sticky lg:top-4 lg:mb-0 lg:flex lg:max-h-[calc(100vh-2rem)] lg:flex-col dark:border-slate-800">
            <h2 class="mb-2 font-semibold">
                {move || format!("Turns ({})", earlier.with(|e| e.turns) as usize + numbered.with(Vec::len))}
            </h2>
            <p class="jumps mb-2 flex flex-wrap gap-2">
                {move || newest().map(|n| {
                    let map = map_newest.clone();
                    view! {
                        <a rel="external" class=jump_link data-jump="newest" href=to_newest(n)
                            on:click=move |ev| { ev.prevent_default(); map.jump(n); }>"Newest turn"</a>
                    }
                })}
                {move || match first_unknown() {
                    Some(Some(n)) => {
                        let map = map_unknown.clone();
                        view! {
                            <a rel="external" class=jump_link data-jump="first-unknown" href=to_unknown(n)
                                on:click=move |ev| { ev.prevent_default(); map.jump(n); }>"First unknown"</a>
                        }.into_any()
                    }
                    Some(None) => view! {
                        <a rel="external" class=jump_link data-jump="first-unknown" href=all_turns.clone()>"First unknown (an earlier turn)"</a>
                    }.into_any(),
                    None => view! { <span class="no-unknown px-1 py-0.5 opacity-80" data-jump="none">"No unknown outcome"</span> }.into_any(),
                }}
            </p>
            <div class="mb-2 flex flex-wrap gap-2">
                {move || interactive.get().then(|| view! {
                    <button type="button" class="follow-newest rounded border border-slate-400 px-2 py-0.5 hover:bg-slate-100 aria-pressed:border-sky-700 aria-pressed:bg-sky-100 aria-pressed:font-semibold dark:border-slate-600 dark:hover:bg-slate-800 dark:aria-pressed:border-sky-400 dark:aria-pressed:bg-sky-900"
                        aria-pressed=move || follow.get().to_string()
                        on:click=move |_| follow.update(|f| *f = !*f)>
                        <span aria-hidden="true">{move || if follow.get() { "✓ " } else { "" }}</span>"Follow newest"
                    </button>
                })}
                <form method="get" action=session_href(&key_all) class="contents"
                    on:submit=move |ev| { ev.prevent_default(); map_collapse.set(&numbers(), true); }>
                    <input type="hidden" name="collapsed" value=move || numbered.with(|ts| {
                        format_turns(&ts.iter().map(|(n, _)| *n).collect())
                    })/>
                    <button type="submit" class="collapse-all rounded border border-slate-400 px-2 py-0.5 hover:bg-slate-100 dark:border-slate-600 dark:hover:bg-slate-800">"Collapse all"</button>
                </form>
                <form method="get" action=session_href(&key_none) class="contents"
                    on:submit=move |ev| { ev.prevent_default(); map_expand.set(&numbers(), false); }>
                    <button type="submit" class="expand-all rounded border border-slate-400 px-2 py-0.5 hover:bg-slate-100 dark:border-slate-600 dark:hover:bg-slate-800">"Expand all"</button>
                </form>
            </div>
            <ol class="turn-nav-list max-h-60 space-y-0.5 overflow-y-auto pr-24 lg:pr-0 lg:max-h-none lg:min-h-0 lg:flex-1" aria-label="Jump to a turn">
                {move || {
                    let n = earlier.with(|e| e.turns);
                    (n > 0).then(|| view! {
                        <li><a rel="external" class="block rounded px-1 py-0.5 underline underline-offset-2" href=earlier_href.clone()>
                            {if n == 1 { "1 earlier turn".to_owned() } else { format!("{n} earlier turns") }}
                        </a></li>
                    })
                }}
                <For
                    each=move || numbered.get()
                    key=|(n, b)| (*n, b.logical_turn_id.clone())
                    children=move |(n, b)| {
                        let map = map_item.clone();
                        let href = to_item.clone();
                        let timeline = b.timeline;
                        let id = (!id_repeats_label(&b.logical_turn_id, n)).then(|| mark(&b.logical_turn_id));
                        view! {
                            <li class="turn-nav-item" data-turn=n>
                                <a rel="external" href=move || href(n)
                                    class="flex flex-wrap items-center gap-1 rounded px-1 py-0.5 hover:bg-slate-100 focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 dark:hover:bg-slate-800"
                                    on:click=move |ev| { ev.prevent_default(); map.jump(n); }>
                                    <span class="font-medium">{format!("Turn {n}")}</span>
                                    {id.map(|id| view! { <bdi class="min-w-0 truncate font-mono text-xs" title=id.clone()>{id.clone()}</bdi> })}
                                    <span class="ml-auto flex flex-wrap gap-0.5">
                                        {move || timeline.with(|t| {
                                            let c = t.counts();
                                            if c.total() == 0 {
                                                view! { <span class="text-xs opacity-80">"none yet"</span> }.into_any()
                                            } else {
                                                marks_of(&c).into_any()
                                            }
                                        })}
                                    </span>
                                    {move || collapsed.with(|c| c.contains(&n)).then(|| view! { <span class="sr-only">" (collapsed)"</span> })}
                                </a>
                            </li>
                        }
                    }
                />
            </ol>
        </nav>
    }
    .into_any()
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

/// One turn: its heading ("Turn 3", the id beside it only when it says more, when it started, its
/// counts), a collapse button (a GET form: the address with this turn toggled in `?collapsed=`, so it
/// works without JavaScript) and, unless collapsed, its newest rows.
#[component]
fn TurnSection(map: Map, number: usize, block: TurnBlock) -> impl IntoView {
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

    use super::{Earlier, Map, TurnBlock, ROWS_PER_TURN, ROW_BUDGET};
    use crate::api;
    use crate::connection::Connection;
    use crate::live::{Change, Event, Live, TurnFeed};
    use crate::timeline::Timeline;

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

    /// "Follow newest": while on, each new row of the newest turn, and each new turn, is scrolled into
    /// view (the newest turn expanded first); a row settling in place does not move the page.
    pub fn newest_into_view(numbered: Memo<Vec<(usize, TurnBlock)>>, map: Map) {
        // The newest turn's number and how many rows it holds.
        let newest = Memo::new(move |_| {
            numbered.with(|ts| {
                ts.last()
                    .map(|(n, b)| (*n, b.timeline.with(|t| t.rows().len())))
            })
        });
        let follow = map.follow;
        Effect::new(move |_| {
            let at = newest.get();
            if !follow.get() {
                return;
            }
            let Some((n, _)) = at else {
                return;
            };
            if map.collapsed.with_untracked(|c| c.contains(&n)) {
                map.set(&[n], false);
            }
            request_animation_frame(move || {
                let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
                    return;
                };
                let last_row = doc
                    .query_selector(&format!("#turn-{n} .timeline-row:last-child"))
                    .ok()
                    .flatten();
                if let Some(el) = last_row.or_else(|| doc.get_element_by_id(&format!("turn-{n}"))) {
                    el.scroll_into_view_with_bool(false);
                }
            });
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
    fn collapsed_turns_round_trip_through_the_address() {
        let set = |ns: &[usize]| ns.iter().copied().collect::<BTreeSet<usize>>();
        assert_eq!(parse_turns("1-5,7,9"), set(&[1, 2, 3, 4, 5, 7, 9]));
        assert_eq!(format_turns(&set(&[1, 2, 3, 4, 5, 7, 9])), "1-5,7,9");
        assert_eq!(format_turns(&set(&[2, 3, 7, 8, 9])), "2,3,7-9");
        assert_eq!(format_turns(&set(&[])), "");
        // What is not a turn number is skipped: 0, words, reversed ranges.
        assert_eq!(parse_turns("0,x,5-3, 4 ,,2-2"), set(&[2, 4]));
        assert_eq!(parse_turns(""), set(&[]));
        // A huge range reads at most COLLAPSED_MAX numbers.
        assert_eq!(parse_turns("1-18446744073709551615").len(), COLLAPSED_MAX);
        assert_eq!(parse_turns(&"1,".repeat(100_000)).len(), 1);
        let all: BTreeSet<usize> = (1..=40).collect();
        assert_eq!(parse_turns(&format_turns(&all)), all);
        assert_eq!(map_href("a b/c", &set(&[]), None), "/sessions/a%20b%2Fc");
        assert_eq!(
            map_href("s", &set(&[1, 2, 3, 12]), Some(12)),
            "/sessions/s?collapsed=1-3,12#turn-12"
        );
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
