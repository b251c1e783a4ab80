//! The session map (issue 26): the navigator (`nav#turn-nav`) and the collapsed turns, kept in the
//! address (`?collapsed=1-5,7`).

use std::collections::BTreeSet;

use ledger::wire::{PublishedStatus, StatusCounts};
use leptos::prelude::*;

use super::{id_repeats_label, Earlier, TurnBlock, ROW_BUDGET};
use crate::components::marks::mark;
use crate::components::outcome::{status_look, CountKind};
use crate::routes::{session_href, turns_href};
use crate::timeline::Timeline;

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

/// What the map's parts share: the session, the collapsed turns, and whether the page follows the newest.
#[derive(Clone)]
pub(super) struct Map {
    pub(super) key: String,
    pub(super) collapsed: RwSignal<BTreeSet<usize>>,
    pub(super) follow: RwSignal<bool>,
}

impl Map {
    /// Collapses (or expands) turn `n`, or every turn in `all` (`Some(true)` collapse, `Some(false)`
    /// expand), and keeps the address in step.
    pub(super) fn set(&self, turns: &[usize], collapse: bool) {
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
pub(super) fn TurnNav(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
