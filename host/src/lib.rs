//! The host-side programs: clients of a running outcomes server that write to its ledger through the host
//! write API (docs/api.md "Host write API"), as the `outcomes` binary's `demo`, `import` and `mcp-proxy`
//! commands (the binary and its command line are the `server` crate's, which dispatches to these).
//!
//! - [`host_client`]: the server's URL, the host token ([`token`]) and the requests, shared by the three.
//! - [`demo`]: plays demo sessions with pauses between steps, to watch the dashboard fill in.
//! - [`import`]: imports agent transcripts through the batch, mapped by the `importer` crate.
//! - [`mcp_proxy`]: an MCP proxy that records each protected tool call (docs/mcp-proxy.md).
//!
//! Nothing here needs the server's code: `server` depends on this crate, never the other way.

pub mod demo;
pub mod host_client;
pub mod import;
pub mod mcp_proxy;
pub mod token;
