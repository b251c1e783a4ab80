//! Shared helpers of the ledger's rule tests: a ledger on a temporary file with a manual clock and a
//! recording adapter, builders for every operation, and snapshots that prove a refusal changed nothing.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ledger::command::{Action, Command, Evidence, Settlement};
use ledger::ids::{AttemptId, LogicalTurnId, MutationId, SessionKey, ToolName};
use ledger::projection::HostMetadata;
use ledger::wire::{EntryState, MutationOutcome, Reason, SessionList, TurnEntries};
use ledger::{
    Adapter, AdapterError, Clock, Engine, Ledger, LedgerError, LedgerOptions, Refusal,
    SessionManager,
};

/// The dashboard's paged reads, first page only, for tests that hold few sessions and unknowns.
#[allow(async_fn_in_trait)]
pub trait Lists {
    /// The first page of the sessions list (at most 50).
    async fn list(&self) -> SessionList;
    /// The first `limit` items of the support queue.
    async fn queue(&self, limit: u32) -> Vec<ledger::wire::OperationMatch>;
}

impl Lists for SessionManager {
    async fn list(&self) -> SessionList {
        self.sessions(&ledger::SessionsQuery::default())
            .await
            .unwrap()
            .0
    }

    async fn queue(&self, limit: u32) -> Vec<ledger::wire::OperationMatch> {
        self.open_unknowns(&ledger::UnknownsQuery {
            limit,
            ..Default::default()
        })
        .await
        .unwrap()
        .0
        .matches
    }
}

/// The clock every test starts at (2027-01-15T08:00:00Z).
pub const T0: i64 = 1_800_000_000_000;
/// Session time to live of [`open`].
pub const TTL: Duration = Duration::from_secs(3600);
pub const SESSION: &str = "s-1";
pub const TURN: &str = "t-1";
pub const TOOL: &str = "mcp__dashboards__create";

/// A clock the test moves by hand.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(at: i64) -> Self {
        ManualClock(AtomicI64::new(at))
    }

    pub fn advance(&self, by: Duration) {
        self.0
            .fetch_add(i64::try_from(by.as_millis()).unwrap(), Ordering::SeqCst);
    }

    /// Sets the clock to `at` (ms since the epoch): back, as a clock put right after a jump.
    pub fn set(&self, at: i64) {
        self.0.store(at, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// One adapter call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub session_key: String,
    pub outcome: MutationOutcome,
    pub revision: i64,
}

/// One `on_turn_changed` call: session, turn, latest revision.
pub type TurnHint = (String, String, i64);

/// An adapter that records every call: the outcomes, and apart from them the turn hints.
#[derive(Debug, Default)]
pub struct Recorder(pub Mutex<Vec<Delivery>>, pub Mutex<Vec<TurnHint>>);

impl Recorder {
    pub fn hints(&self) -> Vec<TurnHint> {
        self.1.lock().unwrap().clone()
    }

    pub fn deliveries(&self) -> Vec<Delivery> {
        self.0.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

impl Adapter for Recorder {
    fn on_mutation_outcome(
        &self,
        session_key: &SessionKey,
        outcome: &MutationOutcome,
        mutation_revision: i64,
    ) -> Result<(), AdapterError> {
        self.0.lock().unwrap().push(Delivery {
            session_key: session_key.to_string(),
            outcome: outcome.clone(),
            revision: mutation_revision,
        });
        Ok(())
    }

    fn on_turn_changed(
        &self,
        session_key: &SessionKey,
        logical_turn_id: &LogicalTurnId,
        latest_revision: i64,
    ) -> Result<(), AdapterError> {
        self.1.lock().unwrap().push((
            session_key.to_string(),
            logical_turn_id.to_string(),
            latest_revision,
        ));
        Ok(())
    }
}

pub use testkit::{postgres, skipped_on_postgres};

/// A fresh, empty ledger location: `ledger.db` in `dir`, or on Postgres a new schema of its own
/// (`options=-c search_path=<schema>` in the URL).
pub async fn fresh_database(dir: &std::path::Path) -> String {
    match postgres() {
        None => dir.join("ledger.db").to_string_lossy().into_owned(),
        Some(base) => {
            use sqlx::Connection;
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let schema = format!(
                "t_{}_{}_{}",
                std::process::id(),
                nanos % 1_000_000_000_000,
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            );
            let mut admin = sqlx::PgConnection::connect(&base).await.unwrap();
            sqlx::query(&format!("CREATE SCHEMA {schema}"))
                .execute(&mut admin)
                .await
                .unwrap();
            let _ = admin.close().await;
            testkit::in_schema(&base, &schema)
        }
    }
}

/// A connection for reading the ledger's tables directly, on either backend (`database` as the ledger
/// was opened with).
pub async fn raw(database: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let url = if database.starts_with("postgres") {
        database.to_owned()
    } else {
        format!("sqlite:{database}")
    };
    sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap()
}

/// `SELECT COUNT(*)`-like statement `sql`, read directly from the ledger's tables.
pub async fn raw_count(database: &str, sql: &str) -> i64 {
    let pool = raw(database).await;
    let n = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
    pool.close().await;
    n
}

/// An open ledger on a temporary file (or a fresh Postgres schema, [`postgres`]).
pub struct Harness {
    /// Keeps the directory alive.
    pub _dir: tempfile::TempDir,
    pub path: String,
    pub ledger: Ledger,
    pub engine: Engine,
    pub sessions: SessionManager,
    pub clock: Arc<ManualClock>,
    pub recorder: Arc<Recorder>,
}

/// A ledger with a recording adapter, the manual clock at [`T0`] and a [`TTL`] of one hour.
pub async fn open() -> Harness {
    let recorder = Arc::new(Recorder::default());
    open_with(recorder.clone(), recorder).await
}

/// A ledger whose adapter is `adapter`; `recorder` is kept in the harness for the test to inspect.
pub async fn open_with(adapter: Arc<dyn Adapter>, recorder: Arc<Recorder>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let path = fresh_database(dir.path()).await;
    let clock = Arc::new(ManualClock::new(T0));
    let ledger = reopen(&path, adapter, clock.clone()).await;
    Harness {
        _dir: dir,
        path,
        engine: ledger.engine(),
        sessions: ledger.sessions(),
        ledger,
        clock,
        recorder,
    }
}

/// Opens (again) the ledger file at `path`.
pub async fn reopen(path: &str, adapter: Arc<dyn Adapter>, clock: Arc<ManualClock>) -> Ledger {
    Ledger::open(
        path,
        LedgerOptions {
            session_ttl: TTL,
            adapter,
            clock,
            read_connections: 2,
            ..LedgerOptions::default()
        },
    )
    .await
    .unwrap()
}

pub fn sk(s: &str) -> SessionKey {
    SessionKey::parse(s).unwrap()
}

pub fn turn(s: &str) -> LogicalTurnId {
    LogicalTurnId::parse(s).unwrap()
}

pub fn mid(s: &str) -> MutationId {
    MutationId::parse(s).unwrap()
}

pub fn att(s: &str) -> AttemptId {
    AttemptId::parse(s).unwrap()
}

pub fn approve_in(session: &str, t: &str, m: &str) -> Command {
    Command::new(
        sk(session),
        mid(m),
        Action::Approve {
            logical_turn_id: turn(t),
            tool: ToolName::parse(TOOL).unwrap(),
            commissioned_after: None,
            traceparent: None,
        },
    )
}

pub fn approve(m: &str) -> Command {
    approve_in(SESSION, TURN, m)
}

/// A command on entry `m` of `session`.
pub fn in_session(session: &str, m: &str, action: Action) -> Command {
    Command::new(sk(session), mid(m), action)
}

/// A command on entry `m` of the default session.
pub fn on(m: &str, action: Action) -> Command {
    Command::new(sk(SESSION), mid(m), action)
}

pub fn intent(m: &str, a: &str) -> Command {
    on(
        m,
        Action::RecordIntent {
            attempt_id: att(a),
            deadline_secs: None,
        },
    )
}

pub fn settle(m: &str, a: &str, settlement: Settlement, reason: Option<Reason>) -> Command {
    on(
        m,
        Action::Settle {
            attempt_id: att(a),
            settlement,
            reason,
        },
    )
}

pub fn cancel(m: &str, a: &str, reason: Option<Reason>) -> Command {
    on(
        m,
        Action::Cancel {
            attempt_id: att(a),
            reason,
        },
    )
}

pub fn evidence() -> Evidence {
    Evidence {
        source: "github.issues".into(),
        reference: "issue #419".into(),
        observed_at: "2027-01-15T08:05:00Z".into(),
        provider_status: None,
    }
}

pub fn reconcile(m: &str, a: &str, completed: bool) -> Command {
    on(
        m,
        Action::Reconcile {
            attempt_id: att(a),
            completed,
            evidence: evidence(),
        },
    )
}

pub fn meta(id: &str, url: &str, title: &str) -> HostMetadata {
    HostMetadata {
        id: Some(id.into()),
        url: Some(url.into()),
        title: Some(title.into()),
    }
}

pub fn attach(m: &str, metadata: HostMetadata) -> Command {
    on(m, Action::AttachMetadata { metadata })
}

pub fn fresh(m: &str, a: &str) -> Command {
    on(
        m,
        Action::FreshAttempt {
            attempt_id: att(a),
            deadline_secs: None,
        },
    )
}

impl Harness {
    /// Applies `op`, which must succeed.
    pub async fn ok(&self, op: Command) -> EntryState {
        let what = format!("{op:?}");
        self.engine
            .apply(op)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e:?}"))
    }

    /// Approves `m` and records intent under attempt `a`.
    pub async fn in_flight(&self, m: &str, a: &str) -> EntryState {
        self.ok(approve(m)).await;
        self.ok(intent(m, a)).await
    }

    /// Everything a reader or the adapter can observe of the default session and turn.
    pub async fn snapshot(&self) -> Snapshot {
        Snapshot {
            entries: self
                .sessions
                .turn_entries(&sk(SESSION), &turn(TURN))
                .await
                .ok(),
            history: self
                .sessions
                .mutation_outcomes(&sk(SESSION))
                .await
                .unwrap_or_default(),
            sessions: self.sessions.list().await,
            deliveries: self.recorder.count(),
            hints: self.recorder.hints().len(),
        }
    }

    /// Applies `op`, which must be refused with `expected`, report `current` as the unchanged state, and
    /// change nothing a reader or the adapter can see.
    pub async fn refused(&self, op: Command, expected: Refusal, current: &EntryState) {
        let before = self.snapshot().await;
        let what = format!("{op:?}");
        match self.engine.apply(op).await {
            Err(LedgerError::Refused {
                refusal,
                current: reported,
            }) => {
                assert_eq!(refusal, expected, "{what}");
                assert_eq!(*reported, *current, "{what}: current state");
            }
            other => panic!("{what}: expected refusal {expected:?}, got {other:?}"),
        }
        assert_eq!(self.snapshot().await, before, "{what} changed something");
    }

    /// Applies `op`, which must be `Invalid` on `field` and change nothing.
    pub async fn invalid(&self, op: Command, field: &str) {
        let before = self.snapshot().await;
        let what = format!("{op:?}");
        match self.engine.apply(op).await {
            Err(LedgerError::Invalid { field: f, .. }) => assert_eq!(f, field, "{what}"),
            other => panic!("{what}: expected Invalid({field}), got {other:?}"),
        }
        assert_eq!(self.snapshot().await, before, "{what} changed something");
    }

    /// The turn's latest revision.
    pub async fn latest_revision(&self) -> i64 {
        self.sessions
            .turn_entries(&sk(SESSION), &turn(TURN))
            .await
            .unwrap()
            .latest_revision
    }
}

/// See [`Harness::snapshot`].
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub entries: Option<TurnEntries>,
    pub history: Vec<MutationOutcome>,
    pub sessions: SessionList,
    pub deliveries: usize,
    pub hints: usize,
}

/// The expected state of entry `m` in the default session and turn.
pub fn state(
    m: &str,
    status: ledger::wire::LedgerStatus,
    intent_recorded: bool,
    attempt: Option<&str>,
    revision: Option<i64>,
    reason: Option<Reason>,
) -> EntryState {
    EntryState {
        session_key: SESSION.into(),
        logical_turn_id: TURN.into(),
        mutation_id: m.into(),
        ledger_status: status,
        intent_recorded,
        attempt_id: attempt.map(str::to_owned),
        revision,
        reason,
    }
}
