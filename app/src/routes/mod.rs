//! One page per module.

pub mod find;
pub mod home;
pub mod operation;
pub mod session;
pub mod turn;
pub mod unknowns;

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

/// A route parameter as a reactive string ("" when absent).
pub fn param(name: &'static str) -> Memo<String> {
    let params = use_params_map();
    Memo::new(move |_| params.read().get(name).unwrap_or_default())
}

/// The page path of a session.
pub fn session_href(key: &str) -> String {
    format!("/sessions/{}", crate::api::enc(key))
}

/// The page path of a logical turn.
pub fn turn_href(key: &str, turn: &str) -> String {
    format!(
        "/sessions/{}/turns/{}",
        crate::api::enc(key),
        crate::api::enc(turn)
    )
}

/// The page path of an operation.
pub fn operation_href(id: &str) -> String {
    format!("/operations/{}", crate::api::enc(id))
}
