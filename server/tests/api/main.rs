//! The server's tests, one test binary with a module per feature: the server in process over real HTTP
//! (`helpers`), and the built `outcomes` binary as an operator runs it (`process`, `reliability`,
//! `staff_cli`).

mod helpers;

mod access;
mod access_attacks;
mod docs;
mod hardening;
mod history;
mod host;
mod import;
mod install;
mod instances;
mod live;
mod metrics;
mod openapi;
mod operator;
mod pages;
mod paging;
mod process;
mod reliability;
mod reliability_clock;
mod reliability_disk;
mod reliability_memory;
mod replay;
mod session_page;
mod staff_cli;
mod strict_input;
mod webhooks;
mod workbench;
