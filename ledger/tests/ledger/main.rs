//! The ledger's rules (docs/ledger.md "Tests"): one test binary, a module per rule; `common` holds the
//! shared harness.

mod common;

mod adapter;
mod contract;
mod credential_corpus;
mod deadlines;
mod gauges;
mod group_commit;
mod history;
mod history_reads;
mod listings;
mod metadata_at_rest;
mod otel;
mod reads;
mod retention;
mod revisions;
mod sanitize_rules;
mod several_instances;
mod sign_ins;
mod storage_faults;
mod streamed_reads;
mod transitions;
mod webhooks;
mod workbench;
