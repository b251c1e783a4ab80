//! The browser's live connection for one operation page (hydrate only; docs/design.md "What the person
//! sees"). It subscribes to the session's run events; every (re)open, every `mutation_outcome` event of
//! this operation and every `resync` naming its turn reloads the history through the history API, so what
//! changed while disconnected shows too. Notes have no live event: they show on the next reload.
//! A 401 stops everything and says access ended; a 404 says the operation is gone.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use ledger::wire::{OperationHistory, Resync, RunEvent};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::EventSource;

use crate::api;
use crate::live::{listen, now_text, on_error};
use crate::timeline::Connection;

/// Pause before we reopen a live stream that failed for good.
const REOPEN_MS: u64 = 3000;

struct Ctx {
    session: String,
    mutation_id: String,
    history: RwSignal<OperationHistory>,
    connection: RwSignal<Connection>,
    live: RefCell<Option<EventSource>>,
    loading: Cell<bool>,
    load_again: Cell<bool>,
    stopped: Cell<bool>,
}

/// Starts watching one operation; stops when the reactive owner is cleaned up.
pub fn start(
    session: String,
    mutation_id: String,
    history: RwSignal<OperationHistory>,
    connection: RwSignal<Connection>,
) {
    let ctx = Rc::new(Ctx {
        session,
        mutation_id,
        history,
        connection,
        live: RefCell::new(None),
        loading: Cell::new(false),
        load_again: Cell::new(false),
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
            reload(ctx.clone());
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
            if serde_json::from_str::<RunEvent>(&data)
                .is_ok_and(|ev| ev.outcome.mutation_id == ctx.mutation_id)
            {
                reload(ctx.clone());
            }
        });
    }
    {
        let ctx = ctx.clone();
        listen(&es, "resync", move |e| {
            let Some(data) = e.data().as_string() else {
                return;
            };
            let turn = ctx.history.with_untracked(|h| h.logical_turn_id.clone());
            if serde_json::from_str::<Resync>(&data)
                .is_ok_and(|r| r.logical_turn_ids.contains(&turn))
            {
                reload(ctx.clone());
            }
        });
    }
    {
        let ctx = ctx.clone();
        let es2 = es.clone();
        on_error(&es, move |_| {
            if es2.ready_state() == EventSource::CLOSED {
                ctx.live.borrow_mut().take();
                ctx.connection.set(Connection::Stale { since: now_text() });
                let ctx = ctx.clone();
                // Learn why through the history API (401: access ended; 404: gone), else retry.
                leptos::task::spawn_local(async move {
                    load(&ctx).await;
                    if !ctx.stopped.get() {
                        set_timeout(
                            move || open_live(ctx),
                            std::time::Duration::from_millis(REOPEN_MS),
                        );
                    }
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

/// Reloads the history; one load at a time, a request made while one runs is done right after it.
fn reload(ctx: Rc<Ctx>) {
    if ctx.stopped.get() {
        return;
    }
    if ctx.loading.replace(true) {
        ctx.load_again.set(true);
        return;
    }
    leptos::task::spawn_local(async move {
        loop {
            load(&ctx).await;
            if !ctx.load_again.replace(false) || ctx.stopped.get() {
                break;
            }
        }
        ctx.loading.set(false);
    });
}

async fn load(ctx: &Rc<Ctx>) {
    match api::operation_history(&ctx.session, &ctx.mutation_id).await {
        Ok(h) => {
            if ctx.history.with_untracked(|old| old != &h) {
                ctx.history.set(h);
            }
        }
        Err(api::ApiError::Status { status: 401, .. }) => stop(ctx, Connection::AccessEnded),
        Err(e @ api::ApiError::NotFound { .. }) => stop(
            ctx,
            Connection::Gone {
                message: e.describe(),
            },
        ),
        Err(_) => {}
    }
}

fn stop(ctx: &Rc<Ctx>, why: Connection) {
    ctx.stopped.set(true);
    if let Some(es) = ctx.live.borrow_mut().take() {
        es.close();
    }
    ctx.connection.set(why);
}
