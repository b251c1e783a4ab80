//! The server over real HTTP: one test binary, a module per feature.

mod helpers;

mod access;
mod access_attacks;
mod hardening;
mod history;
mod host;
mod import;
mod live;
mod openapi;
mod pages;
mod replay;
