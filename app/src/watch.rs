//! The browser's live connection for one operation page (hydrate only; docs/design.md "What the person
//! sees"), on the session's [`crate::live::Live`] stream: every (re)open, every change of the operation's
//! turn (its `mutation_outcome`, a `turn_changed` of the turn, which covers in-flight intent, a `resync`
//! naming the turn; for staff, a `claim_changed` of the operation) reloads the page's window of the history
//! (its newest changes) through the history API,
//! so what changed while disconnected shows too. Notes have no live event: they show on the next reload. A 401 stops everything and says access
//! ended; a 404 says the operation is gone; `session_ended` says the session was deleted or expired.

use std::cell::Cell;
use std::rc::Rc;

use ledger::wire::OperationHistory;
use leptos::prelude::*;

use crate::api;
use crate::connection::Connection;
use crate::live::{Change, Event, Live};

struct Watch {
    mutation_id: String,
    history: RwSignal<OperationHistory>,
    loading: Cell<bool>,
    load_again: Cell<bool>,
}

/// Starts watching one operation; stops when the reactive owner is cleaned up.
pub fn start(
    session: String,
    mutation_id: String,
    history: RwSignal<OperationHistory>,
    connection: RwSignal<Connection>,
) {
    let watch = Rc::new(Watch {
        mutation_id,
        history,
        loading: Cell::new(false),
        load_again: Cell::new(false),
    });
    crate::live::connect(session, connection, move |live, event| {
        let turn = watch.history.with_untracked(|h| h.logical_turn_id.clone());
        let relevant = match &event {
            Event::Opened => true,
            Event::Change(Change::Outcome(e)) => e.outcome.mutation_id == watch.mutation_id,
            Event::Change(change) => change.touches(&turn),
            Event::ClaimChanged(id) => *id == watch.mutation_id,
        };
        if relevant {
            reload(watch.clone(), live.clone());
        }
    });
}

/// Reloads the history; one load at a time, a request made while one runs is done right after it.
fn reload(watch: Rc<Watch>, live: Rc<Live>) {
    if live.stopped() {
        return;
    }
    if watch.loading.replace(true) {
        watch.load_again.set(true);
        return;
    }
    leptos::task::spawn_local(async move {
        loop {
            match api::operation_history(live.session(), &watch.mutation_id, None).await {
                Ok(h) => {
                    if watch.history.with_untracked(|old| old != &h) {
                        watch.history.set(h);
                    }
                }
                Err(e) => {
                    if live.stop_for(&e) {
                        break;
                    }
                }
            }
            if !watch.load_again.replace(false) || live.stopped() {
                break;
            }
        }
        watch.loading.set(false);
    });
}
