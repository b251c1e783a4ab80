//! The server's tests, one test binary with a module per feature: the server in process over real HTTP
//! (`helpers`), and the built `outcomes` binary as an operator runs it (`helpers::binary`; `process`,
//! `reliability*`, `staff_cli`).

mod helpers;

mod access_attacks;
mod access_headers;
mod access_roles;
mod access_sign_in;
mod access_staff;
mod access_viewer;
mod assets;
mod desk;
mod docs;
mod hardening;
mod history;
mod history_pages;
mod host;
mod hostile_input;
mod import;
mod install;
mod instances;
mod live;
mod mcp_proxy;
mod metrics;
mod openapi;
mod operator_export;
mod operator_forms;
mod operator_notes;
mod operator_reconcile;
mod page_weight;
mod pages;
mod paging;
mod process;
mod reliability;
mod reliability_clock;
mod reliability_connections;
mod reliability_disk;
mod reliability_lock;
mod reliability_memory;
mod reliability_render;
mod replay;
mod session_page;
mod staff_cli;
mod strict_input;
mod turn_page;
mod webhooks;
mod workbench;
