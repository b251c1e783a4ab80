//! Webhooks (docs/api.md "Webhooks"): the `outcomes webhooks add|list|remove` commands ([`cli`]), the
//! destination rule (no credentials in the URL; no private, loopback or link-local address unless
//! `--webhook-allow-private`; [`destination`]), Standard Webhooks signing ([`signing`]), and the delivery
//! worker `serve` runs ([`worker`]).
//!
//! The outbox is the ledger's (`ledger::webhooks`): its rows are written in the transaction of the change,
//! so the worker only reads and updates them, never on the write path. The CLI and the worker share only
//! the destination rule and the secret's format; neither uses the other.

pub mod cli;
pub mod destination;
pub mod signing;
pub mod worker;

pub use cli::{endpoint_state, main, WebhooksArgs, WebhooksCommand};
pub use destination::{check_destination, check_url_form, embedded_v4, is_public};
pub use signing::{new_secret, sign};
pub use worker::{
    backoff_ms, payload, run_worker, WorkerOptions, DELIVERY_TIMEOUT, GIVE_UP_AFTER_MS,
    MAX_BACKOFF_MS, PRUNE_EVERY,
};
