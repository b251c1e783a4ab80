//! The server over real HTTP: one test binary, a module per feature.

mod helpers;

mod access;
mod hardening;
mod history;
mod host;
mod import;
mod live;
mod openapi;
mod pages;
mod replay;
