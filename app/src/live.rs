//! The browser's live connection to one session's run events (hydrate only; docs/api.md "Live run events",
//! docs/design.md "What the person sees"). One [`Live`] per page; what the page does with an event is its
//! follower's business ([`TurnFeed`] for the turn and session pages, `watch` for the operation page):
//! - the follower hears [`Event::Opened`] on every (re)open, so it catches up on what it missed, and every
//!   `mutation_outcome`, `turn_changed` and `resync` as a [`Change`], and (staff streams only) every
//!   `claim_changed` as [`Event::ClaimChanged`];
//! - any event (a `heartbeat` included) counts as word from the server; a stream silent for twice the
//!   heartbeat interval is stale: it is closed and opened again (a frozen server never errors it);
//! - a dropped connection says "reconnecting since", and "stale since" when that lasts as long;
//! - a stream the browser gave up on (a non-200 answer, a refused connection) is reopened after a pause,
//!   unless a read of the session says the caller's access ended (401) or the session is gone (404);
//! - `session_ended` says the session was deleted or expired, and nothing more is opened.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use ledger::wire::{Resync, RunEvent, TurnChanged};
use leptos::prelude::*;
use serde::Deserialize;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{EventSource, MessageEvent};

use crate::api;
use crate::connection::{session_ended_message, Connection};
use crate::timeline::Timeline;

/// The server's heartbeat interval (docs/api.md: every 15 s), in ms.
const HEARTBEAT_MS: f64 = 15_000.0;
/// Silence after which the stream counts as stale: twice the heartbeat interval.
const SILENT_MS: f64 = 2.0 * HEARTBEAT_MS;
/// How often the watchdog looks.
const WATCH_MS: u64 = 5_000;
/// Pause before we reopen a stream the browser gave up on.
const REOPEN_MS: u64 = 3_000;

/// A change the live stream reported.
pub enum Change {
    /// `mutation_outcome`: a settled change, with its record.
    Outcome(RunEvent),
    /// `turn_changed`: any visible change of a turn (in-flight intent included); read the entries.
    TurnChanged {
        logical_turn_id: String,
        latest_revision: i64,
    },
    /// `resync`: this client fell behind on these turns; read them again. None named: every turn (the
    /// server could not name them: its database connection was lost meanwhile).
    Resync(Vec<String>),
}

impl Change {
    /// Whether the change concerns `turn`.
    pub fn touches(&self, turn: &str) -> bool {
        match self {
            Change::Outcome(e) => e.outcome.logical_turn_id == turn,
            Change::TurnChanged {
                logical_turn_id, ..
            } => logical_turn_id == turn,
            Change::Resync(turns) => turns.is_empty() || turns.iter().any(|t| t == turn),
        }
    }

    /// The turn named, for a single-turn change.
    pub fn turn(&self) -> Option<&str> {
        match self {
            Change::Outcome(e) => Some(&e.outcome.logical_turn_id),
            Change::TurnChanged {
                logical_turn_id, ..
            } => Some(logical_turn_id),
            Change::Resync(_) => None,
        }
    }
}

/// What a follower hears.
pub enum Event {
    /// The stream (re)opened: catch up.
    Opened,
    Change(Change),
    /// `claim_changed` (staff streams only): who holds the claim of this operation changed; its page
    /// reads its history again (docs/api.md "Claims").
    ClaimChanged(String),
}

#[derive(Deserialize)]
struct ClaimChangedData {
    mutation_id: String,
}

#[derive(Deserialize)]
struct SessionEndedData {
    reason: String,
}

type Follower = Rc<dyn Fn(&Rc<Live>, Event)>;

/// One page's live connection to a session.
pub struct Live {
    session: String,
    connection: RwSignal<Connection>,
    es: RefCell<Option<EventSource>>,
    follower: RefCell<Option<Follower>>,
    /// `Date.now()` when the server was last heard (open or any event).
    last_heard: Cell<f64>,
    /// When the current stream was created.
    opened_at: Cell<f64>,
    /// When the connection dropped (reconnecting or stale), if it is down.
    down_since: Cell<Option<f64>>,
    stopped: Cell<bool>,
}

/// The local time of `ms` (`Date.now()` scale) in the format of every time on the page
/// ([`crate::clock::clock_text`]: `07:15:03` today).
fn clock(ms: f64) -> String {
    crate::clock::local_text(ms).unwrap_or_default()
}

/// Adds a listener for the named event; it lives as long as the stream.
fn listen(es: &EventSource, name: &str, f: impl FnMut(MessageEvent) + 'static) {
    let closure = Closure::<dyn FnMut(MessageEvent)>::new(f);
    let _ = es.add_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
    closure.forget();
}

/// Connects to `session`'s run events; `follower` hears every (re)open and change. Everything stops when
/// the reactive owner is cleaned up (the page is left).
pub fn connect(
    session: String,
    connection: RwSignal<Connection>,
    follower: impl Fn(&Rc<Live>, Event) + 'static,
) -> Rc<Live> {
    let live = Rc::new(Live {
        session,
        connection,
        es: RefCell::new(None),
        follower: RefCell::new(Some(Rc::new(follower))),
        last_heard: Cell::new(js_sys::Date::now()),
        opened_at: Cell::new(js_sys::Date::now()),
        down_since: Cell::new(None),
        stopped: Cell::new(false),
    });
    let watchdog = {
        let live = live.clone();
        set_interval_with_handle(
            move || live.watch(),
            std::time::Duration::from_millis(WATCH_MS),
        )
        .ok()
    };
    let cleanup = send_wrapper::SendWrapper::new(live.clone());
    on_cleanup(move || {
        if let Some(handle) = watchdog {
            handle.clear();
        }
        cleanup.stopped.set(true);
        cleanup.follower.borrow_mut().take();
        if let Some(es) = cleanup.es.borrow_mut().take() {
            es.close();
        }
    });
    live.clone().open();
    live
}

impl Live {
    /// The session this connection follows.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Nothing more will come: close the stream, reopen nothing, and say why.
    pub fn stop(&self, why: Connection) {
        self.stopped.set(true);
        if let Some(es) = self.es.borrow_mut().take() {
            es.close();
        }
        self.connection.set(why);
    }

    /// Whether [`Live::stop`] was called or the page left.
    pub fn stopped(&self) -> bool {
        self.stopped.get()
    }

    fn tell(self: &Rc<Self>, event: Event) {
        let follower = self.follower.borrow().clone();
        if let Some(f) = follower {
            f(self, event);
        }
    }

    fn heard(&self) {
        self.last_heard.set(js_sys::Date::now());
    }

    /// The connection is down from now (or from when it went down already): `Reconnecting` or `Stale`.
    fn down(&self, stale: bool) {
        let since = self.down_since.get().unwrap_or_else(js_sys::Date::now);
        self.down_since.set(Some(since));
        let since = clock(since);
        self.connection.set(if stale {
            Connection::Stale { since }
        } else {
            Connection::Reconnecting { since }
        });
    }

    fn open(self: Rc<Self>) {
        if self.stopped.get() {
            return;
        }
        if self.connection.get_untracked() == Connection::Snapshot {
            self.connection.set(Connection::Connecting);
        }
        self.opened_at.set(js_sys::Date::now());
        let Ok(es) = EventSource::new(&api::run_events_url(&self.session)) else {
            self.down(true);
            return;
        };
        {
            let live = self.clone();
            let closure = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                live.heard();
                live.down_since.set(None);
                live.connection.set(Connection::Live);
                live.tell(Event::Opened);
            });
            es.set_onopen(Some(closure.as_ref().unchecked_ref()));
            closure.forget();
        }
        {
            let live = self.clone();
            listen(&es, "heartbeat", move |_| live.heard());
        }
        {
            let live = self.clone();
            listen(&es, "mutation_outcome", move |e| {
                live.heard();
                if let Some(ev) = e
                    .data()
                    .as_string()
                    .and_then(|d| serde_json::from_str::<RunEvent>(&d).ok())
                {
                    live.tell(Event::Change(Change::Outcome(ev)));
                }
            });
        }
        {
            let live = self.clone();
            listen(&es, "turn_changed", move |e| {
                live.heard();
                if let Some(t) = e
                    .data()
                    .as_string()
                    .and_then(|d| serde_json::from_str::<TurnChanged>(&d).ok())
                {
                    live.tell(Event::Change(Change::TurnChanged {
                        logical_turn_id: t.logical_turn_id,
                        latest_revision: t.latest_revision,
                    }));
                }
            });
        }
        {
            let live = self.clone();
            listen(&es, "claim_changed", move |e| {
                live.heard();
                if let Some(c) = e
                    .data()
                    .as_string()
                    .and_then(|d| serde_json::from_str::<ClaimChangedData>(&d).ok())
                {
                    live.tell(Event::ClaimChanged(c.mutation_id));
                }
            });
        }
        {
            let live = self.clone();
            listen(&es, "resync", move |e| {
                live.heard();
                if let Some(r) = e
                    .data()
                    .as_string()
                    .and_then(|d| serde_json::from_str::<Resync>(&d).ok())
                {
                    live.tell(Event::Change(Change::Resync(r.logical_turn_ids)));
                }
            });
        }
        {
            let live = self.clone();
            listen(&es, "session_ended", move |e| {
                let reason = e
                    .data()
                    .as_string()
                    .and_then(|d| serde_json::from_str::<SessionEndedData>(&d).ok())
                    .map(|d| d.reason)
                    .unwrap_or_default();
                live.stop(Connection::Gone {
                    message: session_ended_message(&reason),
                });
            });
        }
        {
            let live = self.clone();
            let es2 = es.clone();
            let closure = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                // Only the current stream speaks for the connection (one replaced by the watchdog does not).
                if live.stopped.get() || live.es.borrow().as_ref() != Some(&es2) {
                    return;
                }
                if es2.ready_state() == EventSource::CLOSED {
                    // The browser gave up (a non-200 answer or a refused connection): learn why, and
                    // reopen ourselves unless asking again cannot help.
                    live.es.borrow_mut().take();
                    live.down(true);
                    let live = live.clone();
                    leptos::task::spawn_local(async move {
                        if live.clone().probe().await {
                            return;
                        }
                        set_timeout(
                            move || live.open(),
                            std::time::Duration::from_millis(REOPEN_MS),
                        );
                    });
                } else if !matches!(
                    live.connection.get_untracked(),
                    Connection::Stale { .. } | Connection::Reconnecting { .. }
                ) {
                    live.down(false);
                }
            });
            es.set_onerror(Some(closure.as_ref().unchecked_ref()));
            closure.forget();
        }
        if let Some(old) = self.es.borrow_mut().replace(es) {
            old.close();
        }
    }

    /// Every few seconds: a live stream silent for twice the heartbeat interval is stale, and so is a
    /// reconnection that has lasted as long; a stream that has not opened in that time is replaced.
    fn watch(self: &Rc<Self>) {
        if self.stopped.get() {
            return;
        }
        let now = js_sys::Date::now();
        match self.connection.get_untracked() {
            Connection::Live if now - self.last_heard.get() > SILENT_MS => {
                self.down_since.set(Some(self.last_heard.get()));
                self.down(true);
                self.clone().open();
            }
            Connection::Reconnecting { .. }
                if self.down_since.get().is_some_and(|t| now - t > SILENT_MS) =>
            {
                self.down(true);
            }
            Connection::Stale { .. } | Connection::Connecting
                if now - self.opened_at.get() > SILENT_MS
                    && self
                        .es
                        .borrow()
                        .as_ref()
                        .is_some_and(|es| es.ready_state() != EventSource::OPEN) =>
            {
                self.down(true);
                self.clone().open();
            }
            _ => {}
        }
    }

    /// After the browser gave up on the stream: whether the caller's access ended (401) or the session is
    /// gone (404), in which case the connection stops and says so.
    async fn probe(self: Rc<Self>) -> bool {
        if self.stopped.get() {
            return true;
        }
        match api::session_turns(&self.session).await {
            Err(e) => self.stop_for(&e),
            Ok(_) => false,
        }
    }

    /// Stops for a read that answered 401 (access ended) or 404 (gone); `true` when it did.
    pub fn stop_for(&self, error: &api::ApiError) -> bool {
        match error {
            api::ApiError::Status { status: 401, .. } => {
                self.stop(Connection::AccessEnded);
                // The page header reads who is calling again: never "Signed in" once it ended.
                crate::caller_gone();
                true
            }
            api::ApiError::NotFound { code, .. } => {
                // The page showed this session: a read that now finds none means it was deleted since,
                // and this answer may come before the stream's `session_ended` says so.
                let message = if code == "session_not_found" {
                    session_ended_message("deleted")
                } else {
                    error.describe()
                };
                self.stop(Connection::Gone { message });
                true
            }
            _ => false,
        }
    }
}

/// Keeps one turn's [`Timeline`] current: a live record is upserted at once; a `turn_changed` above what
/// was last read, a `resync` naming the turn and every (re)open read the entries changed since
/// (`after_revision`), which brings in-flight rows, ledger status, recorded order and times. One read at a
/// time; a request made while one runs is done right after it. A 409 (the turn's revisions restarted)
/// reads the whole turn again. A big turn whose page showed only its first entries reads the rest first, a
/// page of [`api::ENTRIES_PAGE`] at a time (docs/design.md "Big turns").
pub struct TurnFeed {
    turn: String,
    timeline: RwSignal<Timeline>,
    /// The `latest_revision` of the last read: the entries API is asked for what changed after it.
    read_through: Cell<i64>,
    /// The `next` cursor of the first read while pages of it are still to be read.
    rest: RefCell<Option<String>>,
    reading: Cell<bool>,
    read_again: Cell<bool>,
    /// For a timeline of the turn's newest rows only (the session page's row budget): how many rows it
    /// shows. Its first read and every read after a change of an older entry read the newest rows again
    /// (`order=newest`); it holds at most twice this many placed rows.
    window: Option<usize>,
}

impl TurnFeed {
    /// A feed for `turn`, whose timeline was read through `read_through`.
    pub fn new(turn: String, timeline: RwSignal<Timeline>, read_through: i64) -> Rc<TurnFeed> {
        TurnFeed::with_rest(turn, timeline, read_through, None)
    }

    /// [`TurnFeed::new`] for a timeline read only up to the `next` cursor `rest` (its first page): the
    /// first read takes the remaining pages before asking what changed.
    pub fn with_rest(
        turn: String,
        timeline: RwSignal<Timeline>,
        read_through: i64,
        rest: Option<String>,
    ) -> Rc<TurnFeed> {
        Rc::new(TurnFeed {
            turn,
            timeline,
            read_through: Cell::new(read_through),
            rest: RefCell::new(rest),
            reading: Cell::new(false),
            read_again: Cell::new(false),
            window: None,
        })
    }

    /// A feed for a windowed timeline ([`Timeline::newest`]) that shows the turn's newest `shown` rows,
    /// read through `read_through` (0: not read yet; the first read reads the newest rows).
    pub fn windowed(
        turn: String,
        timeline: RwSignal<Timeline>,
        read_through: i64,
        shown: usize,
    ) -> Rc<TurnFeed> {
        Rc::new(TurnFeed {
            turn,
            timeline,
            read_through: Cell::new(read_through),
            rest: RefCell::new(None),
            reading: Cell::new(false),
            read_again: Cell::new(false),
            window: Some(shown.max(1)),
        })
    }

    /// The turn followed.
    pub fn turn(&self) -> &str {
        &self.turn
    }

    /// Handles an event of the session's stream.
    pub fn hear(self: &Rc<Self>, live: &Rc<Live>, event: &Event) {
        match event {
            Event::Opened => self.read(live),
            Event::Change(change) if change.touches(&self.turn) => match change {
                Change::Outcome(ev) => {
                    self.timeline.update(|t| {
                        t.upsert(Some(ev.mutation_revision), ev.outcome.clone());
                    });
                }
                Change::TurnChanged {
                    latest_revision, ..
                } => {
                    if *latest_revision > self.read_through.get() {
                        self.read(live);
                    }
                }
                Change::Resync(_) => self.read(live),
            },
            Event::Change(_) | Event::ClaimChanged(_) => {}
        }
    }

    /// Reads the pages of the first read not read yet (each merged as it comes, so the counts and the
    /// "show more" of a big turn fill in while it loads). False when the live connection stopped for good.
    async fn read_rest(self: &Rc<Self>, live: &Rc<Live>) -> bool {
        loop {
            let Some(after) = self.rest.borrow().clone() else {
                return true;
            };
            match api::turn_entries_page(live.session(), &self.turn, &after).await {
                Ok(page) => {
                    let last = page.next.is_none();
                    *self.rest.borrow_mut() = page.next.clone();
                    self.timeline.maybe_update(|t| t.merge_page(&page, last));
                }
                Err(e) => return !live.stop_for(&e),
            }
        }
    }

    /// Reads what changed when the turn's latest revision (from the turns API) is past the last read, or
    /// when pages of the first read are still to be read.
    pub fn read_if_behind(self: &Rc<Self>, live: &Rc<Live>, latest_revision: i64) {
        if latest_revision > self.read_through.get() || self.rest.borrow().is_some() {
            self.read(live);
        }
    }

    /// Reads what changed after the last read (see the type's docs).
    pub fn read(self: &Rc<Self>, live: &Rc<Live>) {
        if live.stopped() {
            return;
        }
        if self.reading.replace(true) {
            self.read_again.set(true);
            return;
        }
        let feed = self.clone();
        let live = live.clone();
        leptos::task::spawn_local(async move {
            if !feed.read_rest(&live).await {
                feed.reading.set(false);
                return;
            }
            loop {
                if let Some(shown) = feed.window {
                    let renew = feed.read_through.get() == 0
                        || feed.timeline.with_untracked(Timeline::older_changed);
                    if renew {
                        match api::newest_entries(live.session(), &feed.turn, shown).await {
                            Ok(entries) => {
                                feed.read_through
                                    .set(feed.read_through.get().max(entries.latest_revision));
                                feed.timeline.update(|t| t.renew(&entries));
                            }
                            Err(e) => {
                                if live.stop_for(&e) {
                                    break;
                                }
                            }
                        }
                        if !feed.read_again.replace(false) || live.stopped() {
                            break;
                        }
                        continue;
                    }
                }
                let after = feed.read_through.get();
                // Nothing read yet (a turn first seen live, or after a 409): every entry, legacy ones too.
                let since = (after > 0).then_some(after);
                let read = api::turn_entries_since(live.session(), &feed.turn, since).await;
                let read = match read {
                    Err(api::ApiError::Status { status: 409, .. }) if feed.window.is_some() => {
                        // The turn's revisions restarted: read the newest rows again.
                        feed.read_through.set(0);
                        feed.read_again.set(true);
                        continue;
                    }
                    Err(api::ApiError::Status { status: 409, .. }) => {
                        feed.read_through.set(0);
                        feed.timeline.update(|t| t.reset_cursor());
                        api::turn_entries_since(live.session(), &feed.turn, None).await
                    }
                    other => other,
                };
                match read {
                    Ok(entries) => {
                        // A read of every entry (after 0, or the full read after a 409) completes a
                        // timeline that was read a page at a time.
                        let whole = feed.read_through.get() == 0;
                        feed.read_through
                            .set(feed.read_through.get().max(entries.latest_revision));
                        let window = feed.window;
                        feed.timeline.maybe_update(|t| {
                            let changed = t.merge_page(&entries, whole);
                            if let Some(shown) = window {
                                t.trim(2 * shown);
                            }
                            changed
                        });
                        if feed.timeline.with_untracked(Timeline::older_changed) {
                            feed.read_again.set(true);
                        }
                    }
                    Err(e) => {
                        if live.stop_for(&e) {
                            break;
                        }
                    }
                }
                if !feed.read_again.replace(false) || live.stopped() {
                    break;
                }
            }
            feed.reading.set(false);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Change;

    #[test]
    fn a_resync_touches_the_turns_it_names_and_naming_none_touches_every_turn() {
        let named = Change::Resync(vec!["t-1".into()]);
        assert!(named.touches("t-1"));
        assert!(!named.touches("t-2"));
        let every = Change::Resync(Vec::new());
        assert!(every.touches("t-1"));
        assert!(every.touches("t-2"));
        assert_eq!(every.turn(), None);
    }
}
