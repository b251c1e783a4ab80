//! Wire types shared by the server and the browser: the `mutation_outcome/v1` record (seed 000, "Record")
//! and the dashboard's own read shapes. They compile without the store, so the `app` crate uses them in WASM.

use serde::{Deserialize, Serialize};

/// The value of the record's `schema` field.
pub const SCHEMA: &str = "mutation_outcome/v1";

/// Published `status` of a `mutation_outcome/v1` record (seed 000, status table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PublishedStatus {
    Completed,
    Failed,
    OutcomeUnknown,
    NotExecuted,
}

/// The published status of a ledger state, or `None` where nothing is published (approved, never started).
pub fn published_status(status: LedgerStatus, intent_recorded: bool) -> Option<PublishedStatus> {
    match status {
        LedgerStatus::Completed => Some(PublishedStatus::Completed),
        LedgerStatus::Failed => Some(PublishedStatus::Failed),
        LedgerStatus::OutcomeUnknown | LedgerStatus::ExecutionStarted => {
            Some(PublishedStatus::OutcomeUnknown)
        }
        LedgerStatus::Approved if intent_recorded => Some(PublishedStatus::NotExecuted),
        LedgerStatus::Approved => None,
    }
}

impl PublishedStatus {
    /// Every published status, in the order the dashboard lists them.
    pub const ALL: [PublishedStatus; 4] = [
        PublishedStatus::OutcomeUnknown,
        PublishedStatus::Failed,
        PublishedStatus::NotExecuted,
        PublishedStatus::Completed,
    ];

    /// The wire spelling (`"outcome_unknown"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            PublishedStatus::Completed => "completed",
            PublishedStatus::Failed => "failed",
            PublishedStatus::OutcomeUnknown => "outcome_unknown",
            PublishedStatus::NotExecuted => "not_executed",
        }
    }

    /// Parses the wire spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// Optional settlement reason (seed 000, "Starting in 0.23.30"): `pre_dispatch_deadline` goes only with
/// `not_executed`, `execution_timeout` only with `outcome_unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    PreDispatchDeadline,
    ExecutionTimeout,
}

impl Reason {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::PreDispatchDeadline => "pre_dispatch_deadline",
            Reason::ExecutionTimeout => "execution_timeout",
        }
    }

    /// Parses the wire spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pre_dispatch_deadline" => Some(Reason::PreDispatchDeadline),
            "execution_timeout" => Some(Reason::ExecutionTimeout),
            _ => None,
        }
    }
}

/// Who settled an entry by a settle or a cancellation (docs/api.md "Deadlines"): its host, or the ledger
/// itself at the entry's deadline (`outcome_unknown` with `execution_timeout`, history actor `ledger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SettledBy {
    Host,
    Ledger,
}

impl SettledBy {
    /// The wire and stored spelling (`host`, `ledger`).
    pub fn as_str(self) -> &'static str {
        match self {
            SettledBy::Host => "host",
            SettledBy::Ledger => "ledger",
        }
    }

    /// Parses the spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "host" => Some(SettledBy::Host),
            "ledger" => Some(SettledBy::Ledger),
            _ => None,
        }
    }
}

/// Who established the outcome of a reconciliation (docs/api.md "Deadlines"), derived from its actor and
/// its evidence's `source` so that no page parses free text: `staff` (a staff member), `status_check` (a
/// host's status check: source `status:<tool>`), `late_answer` (the MCP proxy's late answer: source
/// starting `mcp-late-answer`), `host` (any other host evidence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EstablishedBy {
    Staff,
    StatusCheck,
    LateAnswer,
    Host,
}

impl EstablishedBy {
    /// Who established a reconciliation asked by `actor` (its spelling: `host`, `staff:<name>`, `ledger`)
    /// with evidence from `source`.
    pub fn of(actor: &str, source: &str) -> EstablishedBy {
        if actor.starts_with("staff:") {
            EstablishedBy::Staff
        } else if source.starts_with("status:") {
            EstablishedBy::StatusCheck
        } else if source.starts_with("mcp-late-answer") {
            EstablishedBy::LateAnswer
        } else {
            EstablishedBy::Host
        }
    }

    /// The wire and stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EstablishedBy::Staff => "staff",
            EstablishedBy::StatusCheck => "status_check",
            EstablishedBy::LateAnswer => "late_answer",
            EstablishedBy::Host => "host",
        }
    }

    /// Parses the spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        [
            EstablishedBy::Staff,
            EstablishedBy::StatusCheck,
            EstablishedBy::LateAnswer,
            EstablishedBy::Host,
        ]
        .into_iter()
        .find(|e| e.as_str() == s)
    }
}

/// Ledger status of an entry (docs/ledger.md "Entries and their states"). Not published as such: the projection
/// maps it, with the intent flag, to a [`PublishedStatus`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum LedgerStatus {
    Approved,
    ExecutionStarted,
    Completed,
    Failed,
    OutcomeUnknown,
}

impl LedgerStatus {
    /// The spelling stored in the ledger and sent on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerStatus::Approved => "approved",
            LedgerStatus::ExecutionStarted => "execution_started",
            LedgerStatus::Completed => "completed",
            LedgerStatus::Failed => "failed",
            LedgerStatus::OutcomeUnknown => "outcome_unknown",
        }
    }

    /// Parses the stored spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        [
            LedgerStatus::Approved,
            LedgerStatus::ExecutionStarted,
            LedgerStatus::Completed,
            LedgerStatus::Failed,
            LedgerStatus::OutcomeUnknown,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

/// One `mutation_outcome/v1` record (seed 000, "Record"). `resource_id`, `url` and `title` are always
/// present (`null` until host metadata is attached, or when withheld); `reason` is absent unless it applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MutationOutcome {
    pub schema: String,
    pub logical_turn_id: String,
    pub mutation_id: String,
    pub tool: String,
    pub status: PublishedStatus,
    pub resource_id: Option<String>,
    pub url: Option<String>,
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
}

/// `GET /api/mutation-outcomes` body: `{"mutation_outcomes": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MutationOutcomes {
    pub mutation_outcomes: Vec<MutationOutcome>,
}

/// Data of a live `mutation_outcome` run event: `{"mutation_revision": n, "outcome": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunEvent {
    pub mutation_revision: i64,
    pub outcome: MutationOutcome,
}

/// Data of a live `turn_changed` run event (docs/api.md "Live run events"): a hint that the turn changed
/// visibly (intent included: any change that takes a revision) and its latest revision after the commit.
/// A page catches up through the entries API (`?after_revision=`); the hint carries no record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnChanged {
    pub logical_turn_id: String,
    pub latest_revision: i64,
}

/// Data of a live `resync` run event: the turns whose events this client missed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Resync {
    pub logical_turn_ids: Vec<String>,
}

/// Published counts of one session or turn. `in_flight` counts entries in `execution_started` (published as
/// `outcome_unknown`, so they are also in `outcome_unknown`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusCounts {
    pub completed: u64,
    pub failed: u64,
    pub not_executed: u64,
    pub outcome_unknown: u64,
    pub in_flight: u64,
}

impl StatusCounts {
    /// The count for one published status.
    pub fn get(&self, status: PublishedStatus) -> u64 {
        match status {
            PublishedStatus::Completed => self.completed,
            PublishedStatus::Failed => self.failed,
            PublishedStatus::NotExecuted => self.not_executed,
            PublishedStatus::OutcomeUnknown => self.outcome_unknown,
        }
    }

    /// Adds one entry of `status`; `in_flight` marks an `execution_started` entry.
    pub fn add(&mut self, status: PublishedStatus, in_flight: bool) {
        match status {
            PublishedStatus::Completed => self.completed += 1,
            PublishedStatus::Failed => self.failed += 1,
            PublishedStatus::NotExecuted => self.not_executed += 1,
            PublishedStatus::OutcomeUnknown => self.outcome_unknown += 1,
        }
        if in_flight {
            self.in_flight += 1;
        }
    }

    /// Number of published outcomes.
    pub fn total(&self) -> u64 {
        self.completed + self.failed + self.not_executed + self.outcome_unknown
    }

    /// Settled `outcome_unknown` entries only (not in flight): what the pages count as "Outcome unknown";
    /// in-flight entries are counted apart, as "In flight" (docs/design.md "What the person sees").
    pub fn settled_unknown(&self) -> u64 {
        self.outcome_unknown.saturating_sub(self.in_flight)
    }

    /// Adds `other`, status by status.
    pub fn add_all(&mut self, other: &StatusCounts) {
        self.completed += other.completed;
        self.failed += other.failed;
        self.not_executed += other.not_executed;
        self.outcome_unknown += other.outcome_unknown;
        self.in_flight += other.in_flight;
    }

    /// Takes `other` away, status by status (never below 0).
    pub fn sub_all(&mut self, other: &StatusCounts) {
        self.completed = self.completed.saturating_sub(other.completed);
        self.failed = self.failed.saturating_sub(other.failed);
        self.not_executed = self.not_executed.saturating_sub(other.not_executed);
        self.outcome_unknown = self.outcome_unknown.saturating_sub(other.outcome_unknown);
        self.in_flight = self.in_flight.saturating_sub(other.in_flight);
    }
}

/// One row of `GET /api/sessions`. Times are RFC 3339 UTC strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionSummary {
    pub session_key: String,
    pub created_at: String,
    pub last_activity: String,
    pub turn_count: u64,
    pub counts: StatusCounts,
}

/// `GET /api/sessions` body (docs/api.md "Sessions"): one page, most recently active first; `next` is the
/// opaque cursor of the following page (`?after=`), `null` on the last; `total` counts every session that
/// matches the filters (not only this page's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionList {
    pub sessions: Vec<SessionSummary>,
    #[serde(default)]
    pub next: Option<String>,
    #[serde(default)]
    pub total: u64,
}

/// One logical turn of a session, as `GET /api/sessions/{key}/turns` lists it (oldest turn first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnSummary {
    pub logical_turn_id: String,
    /// The turn's place in its session: 1 for the oldest (the order `turn_seq` gives); what pages call
    /// "Turn 1" (docs/api.md "Turns").
    #[serde(default)]
    pub number: u64,
    pub first_recorded_at: String,
    pub latest_revision: i64,
    pub counts: StatusCounts,
}

/// `GET /api/sessions/{key}/turns/{turn}` body (docs/api.md "A turn's place"): the turn's number in its
/// session (1 for the oldest, as [`TurnSummary::number`]), when its first entry was recorded, the
/// session's number of turns, and the turns just before and after it (`null` at either end), all read in
/// one read transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnPlace {
    pub session_key: String,
    pub logical_turn_id: String,
    pub number: u64,
    pub first_recorded_at: String,
    /// The session's number of turns.
    pub total: u64,
    pub previous: Option<TurnLink>,
    pub next: Option<TurnLink>,
}

/// A neighbouring turn of a [`TurnPlace`]: its id and its number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnLink {
    pub logical_turn_id: String,
    pub number: u64,
}

/// `GET /api/sessions/{key}/turns` body (docs/api.md "Turns"): one page of the session's turns, oldest
/// first (`order=newest`: newest first); `counts` are the whole session's, `total` its number of turns,
/// both read in the same transaction as the page; `next` is the opaque cursor of the following page
/// (`?after=`), `null` on the last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionTurns {
    pub session_key: String,
    pub last_activity: String,
    #[serde(default)]
    pub counts: StatusCounts,
    pub turns: Vec<TurnSummary>,
    #[serde(default)]
    pub next: Option<String>,
    #[serde(default)]
    pub total: u64,
}

/// One published entry of a turn, in recorded order. `mutation_revision` is `null` for legacy entries
/// recorded before revisions existed; `settled_at` is `null` while the entry is in flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnEntry {
    pub sequence: i64,
    pub mutation_revision: Option<i64>,
    pub outcome: MutationOutcome,
    pub ledger_status: LedgerStatus,
    pub recorded_at: String,
    pub settled_at: Option<String>,
    /// When the ledger settles the entry `outcome_unknown` (`execution_timeout`) unless its host settles or
    /// extends it first (RFC 3339 UTC, docs/api.md "Deadlines"); kept once settled, `null` before the first
    /// intent.
    #[serde(default)]
    pub deadline_at: Option<String>,
    /// Who settled the entry's current state by a settle or cancellation (`host` or `ledger`); `null` in
    /// flight, before the first intent, and once reconciled.
    #[serde(default)]
    pub settled_by: Option<SettledBy>,
    /// Who established the entry's current state by a reconciliation; `null` otherwise.
    #[serde(default)]
    pub established_by: Option<EstablishedBy>,
}

/// `GET /api/sessions/{key}/turns/{turn}/entries` body (docs/api.md "Dashboard reads"). `latest_revision`
/// is the turn's latest revision, the `after_revision` a client catches up from; `entries` are in recorded
/// order (`sequence`; `order=newest`: newest first); `next` is the opaque cursor of the following page
/// (`?after=`), `null` on the last. `counts` (the whole turn's, read in the same transaction as the
/// entries) comes with a first read, one without `after` and without `after_revision`, and is left out
/// otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnEntries {
    pub session_key: String,
    pub logical_turn_id: String,
    pub latest_revision: i64,
    pub entries: Vec<TurnEntry>,
    #[serde(default)]
    pub next: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<StatusCounts>,
}

/// One match of a support look-up by `mutation_id` (`GET /api/operations/{mutation_id}`), or one item of the
/// open-unknowns queue (`GET /api/unknowns`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OperationMatch {
    pub session_key: String,
    pub entry: TurnEntry,
    /// Whole seconds since the entry entered its open state (`outcome_unknown`, or in flight as
    /// `execution_started`): from the `at` of its latest history row that set its status. `null` when the
    /// entry is not open, or has no history (recorded before history was kept).
    #[serde(default)]
    pub age_secs: Option<u64>,
    /// How many staff notes the entry's history holds. Absent for a viewer (an end user): notes and
    /// their count are internal to staff (docs/access.md "Viewer links").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<u64>,
    /// The text of the entry's latest staff note. Absent when it has none, and for a viewer (internal to
    /// staff, like `notes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_note: Option<String>,
    /// Who is working on the entry ("I am on it", docs/api.md "Claims"). Absent when nobody holds it, and
    /// for a viewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    /// When staff were first alerted about the entry's current unknown outcome: the earliest delivery
    /// (RFC 3339 UTC) of an `outcome.unknown` or `outcome.unknown_stale` webhook (docs/api.md "Alerted").
    /// Absent when none was delivered, and for a viewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alerted_at: Option<String>,
    /// The entry's current attempt (the `attempt_id` a host reconciles or settles, as the host write API
    /// names it): on the items of the open-unknowns queue (`GET /api/unknowns`). Absent elsewhere, and
    /// when the entry has no attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
}

/// A staff member's claim on an operation (docs/api.md "Claims"): who holds it (the staff name) and since
/// when (RFC 3339 UTC).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Claim {
    pub by: String,
    pub at: String,
}

/// `GET /api/search` body (docs/api.md "Search"): sessions and published operations whose ids (session
/// key, `mutation_id`), title or resource id contain the query, case-insensitively, newest first; `next`
/// is the opaque cursor of the following page (`?after=`), `null` on the last. `searched_newest` is set
/// (a number of rows, 20,000 by default) on the page where a query shorter than 3 characters reached its
/// bound: only the newest that many operations, and that many sessions, were searched, and older ones
/// exist (docs/api.md "Search", "A short query"); `null` otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchResults {
    pub sessions: Vec<SessionHit>,
    pub operations: Vec<OperationHit>,
    #[serde(default)]
    pub next: Option<String>,
    #[serde(default)]
    pub searched_newest: Option<u32>,
}

/// A session of [`SearchResults`]: its key, last write (RFC 3339 UTC) and counts by status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionHit {
    pub session_key: String,
    pub last_activity: String,
    pub counts: StatusCounts,
}

/// A published operation of [`SearchResults`]: where it is (its session, its turn and the turn's number
/// in the session, 1 for the oldest, as docs/api.md "Turns" numbers them), its tool, its published title
/// (or `null`), its published status, when it was recorded and when it settled (RFC 3339 UTC; `null`
/// while in flight or never started).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OperationHit {
    pub session_key: String,
    pub logical_turn_id: String,
    pub turn_number: u64,
    pub mutation_id: String,
    pub tool: String,
    pub title: Option<String>,
    pub status: PublishedStatus,
    pub recorded_at: String,
    pub settled_at: Option<String>,
}

/// `GET /api/operations/{mutation_id}` body (the support queue answers [`UnknownsPage`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OperationMatches {
    pub matches: Vec<OperationMatch>,
}

/// `GET /api/unknowns` body (docs/api.md "Support queue"): one page of open unknown outcomes, oldest
/// first; `next` is the opaque cursor of the following page (`?after=`), `null` on the last; `total`
/// counts every open unknown that matches the filters (not only this page's); `oldest_unknown_age_secs`
/// is the whole queue's oldest settled unknown, whatever the filters (docs/api.md "Metrics").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UnknownsPage {
    pub matches: Vec<OperationMatch>,
    #[serde(default)]
    pub next: Option<String>,
    #[serde(default)]
    pub total: u64,
    /// Whole seconds the oldest open settled unknown (`outcome_unknown`; in flight not included) of the
    /// whole queue has been unknown, whatever the filters: the figure of the metric
    /// `outcomes_unknown_oldest_age_seconds`. `null` when there is none.
    #[serde(default)]
    pub oldest_unknown_age_secs: Option<u64>,
    /// How many writes are in flight (`execution_started`) in the whole ledger, whatever the filters and
    /// the `state`: the count of the staff's in-flight view, which the queue links to (docs/api.md
    /// "Deadlines").
    #[serde(default)]
    pub in_flight_total: u64,
}

/// What a change of an entry was (docs/ledger.md "History"): one per action, and `imported` for an entry
/// imported from before revisions existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum HistoryKind {
    Approval,
    Intent,
    Settlement,
    Cancellation,
    Reconciliation,
    Metadata,
    Attempt,
    Note,
    Imported,
    Claim,
    Release,
}

impl HistoryKind {
    /// Every kind, in the order of the table in docs/ledger.md "History".
    pub const ALL: [HistoryKind; 11] = [
        HistoryKind::Approval,
        HistoryKind::Intent,
        HistoryKind::Settlement,
        HistoryKind::Cancellation,
        HistoryKind::Reconciliation,
        HistoryKind::Metadata,
        HistoryKind::Attempt,
        HistoryKind::Note,
        HistoryKind::Imported,
        HistoryKind::Claim,
        HistoryKind::Release,
    ];

    /// The stored and wire spelling (`"approval"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryKind::Approval => "approval",
            HistoryKind::Intent => "intent",
            HistoryKind::Settlement => "settlement",
            HistoryKind::Cancellation => "cancellation",
            HistoryKind::Reconciliation => "reconciliation",
            HistoryKind::Metadata => "metadata",
            HistoryKind::Attempt => "attempt",
            HistoryKind::Note => "note",
            HistoryKind::Imported => "imported",
            HistoryKind::Claim => "claim",
            HistoryKind::Release => "release",
        }
    }

    /// Whether rows of this kind are internal to staff (notes and claims): a viewer never sees them
    /// (docs/access.md "Viewer links").
    pub fn is_internal(self) -> bool {
        matches!(
            self,
            HistoryKind::Note | HistoryKind::Claim | HistoryKind::Release
        )
    }

    /// Parses the spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// The evidence a reconciliation recorded: the provider, its reference for the original operation, when
/// it observed the status (RFC 3339, as sent), and the provider's own status of the original attempt
/// when the host passed it through. A viewer (an end user) gets `observed_at` only: the free text
/// (`source`, `reference`) was typed by staff or a host for staff, and its row's `established_by` says
/// who established the outcome (docs/access.md "Viewer links"); empty here means absent on the wire (a
/// recorded source and reference are never empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryEvidence {
    /// Absent for a viewer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// Absent for a viewer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reference: String,
    pub observed_at: String,
    /// `completed` or `not_accepted` (agreeing with the reconciliation), as the host sent it. Absent when
    /// the host gave none, and on reconciliations recorded before the ledger kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_status: Option<String>,
}

/// One change of an entry, as the history API lists it (oldest first; `SessionManager::operation_history`,
/// docs/ledger.md "History"). Every field is present (`null` where it does not apply): `at` is RFC 3339 UTC; `revision` the
/// revision the change took (`null` for `approval`, `note` and `imported`); `actor` is `host` or
/// `staff:<name>`; `attempt_id`, `ledger_status` and `reason` are the entry's after the change; `evidence`
/// is set on `reconciliation` only, `note` (1 to 4096 bytes) on `note` only; `outcome` is the published
/// `mutation_outcome/v1` record as of the change, projected on read, `null` while nothing is published
/// (approved, never started).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryChange {
    pub kind: HistoryKind,
    pub at: String,
    pub revision: Option<i64>,
    pub actor: String,
    pub attempt_id: Option<String>,
    pub ledger_status: LedgerStatus,
    pub reason: Option<Reason>,
    pub evidence: Option<HistoryEvidence>,
    pub note: Option<String>,
    pub outcome: Option<MutationOutcome>,
    /// The entry's deadline after the change (RFC 3339 UTC, docs/api.md "Deadlines"), `null` when it had
    /// none.
    #[serde(default)]
    pub deadline_at: Option<String>,
    /// On a `settlement` or `cancellation`: `host`, or `ledger` for the ledger's own settlement at the
    /// deadline; `null` on other changes.
    #[serde(default)]
    pub settled_by: Option<SettledBy>,
    /// On a `reconciliation`: who established it ([`EstablishedBy`]); `null` on other changes.
    #[serde(default)]
    pub established_by: Option<EstablishedBy>,
}

/// The history API's body (`SessionManager::operation_history_page`, docs/ledger.md "History", docs/api.md
/// "Operation history"): the entry, the mutation it was commissioned after (`null`: none), the mutations
/// of the session commissioned after it (approval order), and one page of the changes it went through,
/// oldest first (newest first with `order=newest`), with `next`, the cursor of the following page. The
/// export's lines carry every change, `next` `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OperationHistory {
    pub session_key: String,
    pub logical_turn_id: String,
    pub mutation_id: String,
    pub commissioned_after: Option<String>,
    pub commissioned: Vec<String>,
    pub changes: Vec<HistoryChange>,
    /// The opaque cursor of the following page of `changes` (pass it back as `after`, docs/api.md
    /// "Paging"), or `null` on the last page.
    #[serde(default)]
    pub next: Option<String>,
    /// When staff were first alerted about the entry's current unknown outcome (RFC 3339 UTC), as
    /// [`OperationMatch::alerted_at`]. Absent when none was delivered, and for a viewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alerted_at: Option<String>,
    /// Who holds the entry's claim now ("I am on it", docs/api.md "Claims"), whatever page of `changes`
    /// this is. Absent when nobody holds it, in the export, and for a viewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
}

/// Every error body of the HTTP API: `{"error": {"code", "message", "field"?, "current"?}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// See [`ErrorBody`]. `current` is the entry's state on a 409 refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<EntryState>,
    /// With `already_claimed` (409): who holds the claim, and since when (docs/api.md "Claims").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
}

/// The ledger state of one entry as the host write API reports it (success body, and `current` on a 409).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EntryState {
    pub session_key: String,
    pub logical_turn_id: String,
    pub mutation_id: String,
    pub ledger_status: LedgerStatus,
    pub intent_recorded: bool,
    pub attempt_id: Option<String>,
    pub revision: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
}

/// `GET /api/me`: who the caller is, as the page header shows it (docs/access.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Caller {
    /// `open` (no credential, reads are open), `host`, `staff` or `viewer`.
    pub access: String,
    /// The staff name (staff only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether signing out ends this access (a sign-in or viewer cookie; not a token or an SSO proxy).
    pub can_sign_out: bool,
    /// The one session a viewer may read (viewer only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
}

/// Host metadata (id, url, title) as a host attaches it, before sanitising (docs/ledger.md "Entries and
/// their states"); the published record carries it sanitised. Each field absent or `null` is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostMetadata {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
}
