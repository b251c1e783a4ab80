//! The browser's live connection for one turn (hydrate only). It subscribes first (run events of the
//! session), then replays from its own cursor, so nothing falls between the two (docs/api.md "Live run events"):
//! - live `mutation_outcome` events of this turn are upserted; `resync` naming this turn replays;
//! - every (re)open of the live stream replays from the cursor: what was missed while disconnected arrives;
//! - a replay's URL is built from the cursor each time; it ends normally (the browser would reconnect: we
//!   close it), or fails: 409 starts over with a full replay, 404 says the session or turn is gone;
//! - a live stream that fails for good is reopened by us after a pause; the indicator says stale since when;
//! - a 401 (the caller's sign-in or viewer link stopped holding) stops everything and says access ended.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use ledger::wire::{MutationOutcome, Resync, RunEvent};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{EventSource, MessageEvent};

use crate::api;
use crate::timeline::{Connection, Timeline};

/// Pause before we reopen a live stream that failed for good.
const REOPEN_MS: i32 = 3000;

struct Ctx {
    session: String,
    turn: String,
    timeline: RwSignal<Timeline>,
    connection: RwSignal<Connection>,
    live: RefCell<Option<EventSource>>,
    replaying: Cell<bool>,
    replay_again: Cell<bool>,
    /// Set when the page leaves: nothing reopens after that.
    stopped: Cell<bool>,
}

/// Starts the live connection of one turn; it stops when the reactive owner is cleaned up.
pub fn start(
    session: String,
    turn: String,
    timeline: RwSignal<Timeline>,
    connection: RwSignal<Connection>,
) {
    let ctx = Rc::new(Ctx {
        session,
        turn,
        timeline,
        connection,
        live: RefCell::new(None),
        replaying: Cell::new(false),
        replay_again: Cell::new(false),
        stopped: Cell::new(false),
    });
    let cleanup = send_wrapper::SendWrapper::new(ctx.clone());
    on_cleanup(move || {
        cleanup.stopped.set(true);
        if let Some(es) = cleanup.live.borrow_mut().take() {
            es.close();
        }
    });
    open_live(ctx);
}

/// The time now, for "stale since" (local, `HH:MM:SS`).
pub(crate) fn now_text() -> String {
    js_sys::Date::new_0().to_locale_time_string("en-GB").into()
}

/// Adds a listener for the named event; it lives as long as the stream.
pub(crate) fn listen(es: &EventSource, name: &str, f: impl FnMut(MessageEvent) + 'static) {
    let closure = Closure::<dyn FnMut(MessageEvent)>::new(f);
    let _ = es.add_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
    closure.forget();
}

/// Sets the stream's error handler; it lives as long as the stream.
pub(crate) fn on_error(es: &EventSource, f: impl FnMut(web_sys::Event) + 'static) {
    let closure = Closure::<dyn FnMut(web_sys::Event)>::new(f);
    es.set_onerror(Some(closure.as_ref().unchecked_ref()));
    closure.forget();
}

fn open_live(ctx: Rc<Ctx>) {
    if ctx.stopped.get() {
        return;
    }
    ctx.connection.set(Connection::Connecting);
    let Ok(es) = EventSource::new(&api::run_events_url(&ctx.session)) else {
        ctx.connection.set(Connection::Stale { since: now_text() });
        return;
    };
    {
        let ctx = ctx.clone();
        let closure = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
            ctx.connection.set(Connection::Live);
            replay(ctx.clone(), false);
        });
        es.set_onopen(Some(closure.as_ref().unchecked_ref()));
        closure.forget();
    }
    {
        let ctx = ctx.clone();
        listen(&es, "mutation_outcome", move |e| {
            let Some(data) = e.data().as_string() else {
                return;
            };
            if let Ok(ev) = serde_json::from_str::<RunEvent>(&data) {
                if ev.outcome.logical_turn_id == ctx.turn {
                    ctx.timeline.update(|t| {
                        t.upsert(Some(ev.mutation_revision), ev.outcome);
                    });
                }
            }
        });
    }
    {
        let ctx = ctx.clone();
        listen(&es, "resync", move |e| {
            let Some(data) = e.data().as_string() else {
                return;
            };
            if let Ok(r) = serde_json::from_str::<Resync>(&data) {
                if r.logical_turn_ids.contains(&ctx.turn) {
                    replay(ctx.clone(), false);
                }
            }
        });
    }
    {
        let ctx = ctx.clone();
        let es2 = es.clone();
        on_error(&es, move |_| {
            if es2.ready_state() == EventSource::CLOSED {
                // The browser gave up (a non-200 answer or a refused connection): reopen ourselves,
                // unless the answer was that the caller's access ended (asking again cannot help).
                ctx.live.borrow_mut().take();
                ctx.connection.set(Connection::Stale { since: now_text() });
                let ctx = ctx.clone();
                leptos::task::spawn_local(async move {
                    if access_ended(&ctx).await {
                        return;
                    }
                    set_timeout(
                        move || open_live(ctx),
                        std::time::Duration::from_millis(REOPEN_MS as u64),
                    );
                });
            } else if !matches!(ctx.connection.get_untracked(), Connection::Stale { .. }) {
                ctx.connection.set(Connection::Reconnecting);
            }
        });
    }
    if let Some(old) = ctx.live.borrow_mut().replace(es) {
        old.close();
    }
}

/// Replays the turn from the cursor (or fully, `full`). One replay at a time; a request made while one
/// runs is done right after it.
fn replay(ctx: Rc<Ctx>, full: bool) {
    if ctx.stopped.get() {
        return;
    }
    if ctx.replaying.replace(true) {
        ctx.replay_again.set(true);
        return;
    }
    let after = (!full).then(|| ctx.timeline.with_untracked(|t| t.cursor()));
    let url = api::replay_url(&ctx.session, &ctx.turn, after);
    let Ok(es) = EventSource::new(&url) else {
        ctx.replaying.set(false);
        return;
    };
    {
        let ctx = ctx.clone();
        listen(&es, "mutation_outcome", move |e| {
            let Some(data) = e.data().as_string() else {
                return;
            };
            let revision = e.last_event_id().parse::<i64>().ok();
            if let Ok(outcome) = serde_json::from_str::<MutationOutcome>(&data) {
                ctx.timeline.update(|t| {
                    t.upsert(revision, outcome);
                });
            }
        });
    }
    let es2 = es.clone();
    on_error(&es, move |_| {
        let failed = es2.ready_state() == EventSource::CLOSED;
        es2.close();
        let ctx = ctx.clone();
        let url = url.clone();
        leptos::task::spawn_local(async move {
            if failed {
                handle_failed_replay(&ctx, &url).await;
            } else {
                refresh_statuses(&ctx).await;
            }
            ctx.replaying.set(false);
            if ctx.replay_again.replace(false) {
                replay(ctx.clone(), false);
            }
        });
    });
}

/// A replay that did not answer 200: ask again with fetch to learn the status.
async fn handle_failed_replay(ctx: &Rc<Ctx>, url: &str) {
    let status = gloo_net::http::Request::get(url)
        .send()
        .await
        .map(|r| r.status());
    match status {
        Ok(409) => {
            ctx.timeline.update(|t| t.reset_cursor());
            ctx.replay_again.set(false);
            ctx.replaying.set(false);
            replay(ctx.clone(), true);
        }
        Ok(401) => stop(ctx, Connection::AccessEnded),
        Ok(404) => {
            let message = match api::turn_entries(&ctx.session, &ctx.turn).await {
                Err(e) => e.describe(),
                Ok(_) => "The session or turn is gone.".to_owned(),
            };
            stop(ctx, Connection::Gone { message });
        }
        _ => ctx.connection.set(Connection::Stale { since: now_text() }),
    }
}

/// Nothing more will come: close the live stream, reopen nothing, and say why.
fn stop(ctx: &Rc<Ctx>, why: Connection) {
    ctx.stopped.set(true);
    if let Some(es) = ctx.live.borrow_mut().take() {
        es.close();
    }
    ctx.connection.set(why);
}

/// After the live stream failed for good: whether it was because the caller's access ended (the read API
/// answers 401), in which case the connection stops and says so.
async fn access_ended(ctx: &Rc<Ctx>) -> bool {
    if ctx.stopped.get() {
        return true;
    }
    match api::turn_entries(&ctx.session, &ctx.turn).await {
        Err(api::ApiError::Status { status: 401, .. }) => {
            stop(ctx, Connection::AccessEnded);
            true
        }
        _ => false,
    }
}

/// Records do not say whether an unknown outcome is still in flight; the entries API does.
async fn refresh_statuses(ctx: &Rc<Ctx>) {
    match api::turn_entries(&ctx.session, &ctx.turn).await {
        Ok(entries) => ctx.timeline.update(|t| t.refresh_ledger_status(&entries)),
        Err(api::ApiError::Status { status: 401, .. }) => stop(ctx, Connection::AccessEnded),
        Err(_) => {}
    }
}
