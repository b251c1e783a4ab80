//! Limits of `mutation_outcome/v1` (seed 000 and docs/api.md "Limits"). `docs/contracts/mutation_outcome_v1.json`
//! states the same numbers under `limits`; a test keeps the two equal.

/// `resource_id` is withheld when longer than this many UTF-8 bytes.
pub const RESOURCE_ID_MAX_BYTES: usize = 256;
/// `url` is withheld when the input or the kept URL is longer than this many bytes.
pub const URL_MAX_BYTES: usize = 2048;
/// `title` is truncated to this many UTF-8 bytes, on a character boundary.
pub const TITLE_MAX_BYTES: usize = 512;
/// A serialised record never exceeds this many bytes.
pub const RECORD_MAX_BYTES: usize = 16 * 1024;
/// Identifiers (`session_key`, `logical_turn_id`, `mutation_id`, `tool`, attempt ids) are at most this many bytes.
pub const IDENTIFIER_MAX_BYTES: usize = 256;
