//! The session page's live follower (hydrate only): one windowed [`crate::live::TurnFeed`] per shown turn
//! on one live stream. A change of a turn not shown, and every (re)open, reads the newest turns again:
//! turns newer than every shown one are added (the oldest shown ones leave the page while the rows shown
//! pass [`ROW_BUDGET`]), the earlier turns' number and counts are read again, and after a (re)open the
//! shown turns whose latest revision moved catch up.

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
            Event::ClaimChanged(_) => false,
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
                bottom_into_view(el, 2);
            }
        });
    });
}

/// Scrolls `el`'s bottom to the bottom of the window, then again on each of the next `frames` frames: a
/// row never shown has a placeholder height until it is laid out (`content-visibility: auto` on
/// `.timeline-row`, docs/performance.md "First load"), so the first scroll lands short once the rows it brought near
/// take their real heights.
fn bottom_into_view(el: web_sys::Element, frames: u32) {
    el.scroll_into_view_with_bool(false);
    if frames > 0 {
        request_animation_frame(move || bottom_into_view(el, frames - 1));
    }
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
