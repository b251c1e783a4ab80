-- Sessions, logical turns with their durable revision counter, and ledger entries.
-- Times are milliseconds since the Unix epoch (UTC).

CREATE TABLE sessions (
    session_key   TEXT PRIMARY KEY NOT NULL,
    created_at    INTEGER NOT NULL,
    last_write_at INTEGER NOT NULL
);

CREATE TABLE turns (
    -- Order in which turns were first recorded.
    turn_seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key     TEXT NOT NULL REFERENCES sessions (session_key) ON DELETE CASCADE,
    logical_turn_id TEXT NOT NULL,
    latest_revision INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    UNIQUE (session_key, logical_turn_id)
);

CREATE TABLE entries (
    -- Order in which entries were first recorded.
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key     TEXT NOT NULL REFERENCES sessions (session_key) ON DELETE CASCADE,
    logical_turn_id TEXT NOT NULL,
    mutation_id     TEXT NOT NULL,
    tool            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN
                        ('approved', 'execution_started', 'completed', 'failed', 'outcome_unknown')),
    intent_recorded INTEGER NOT NULL DEFAULT 0,
    attempt_id      TEXT,
    reason          TEXT CHECK (reason IN ('pre_dispatch_deadline', 'execution_timeout')),
    meta_attached   INTEGER NOT NULL DEFAULT 0,
    meta_id         TEXT,
    meta_url        TEXT,
    meta_title      TEXT,
    -- Revision of the entry's latest visible change; NULL for legacy entries from before revisions existed.
    revision        INTEGER,
    recorded_at     INTEGER NOT NULL,
    settled_at      INTEGER,
    updated_at      INTEGER NOT NULL,
    UNIQUE (session_key, mutation_id),
    FOREIGN KEY (session_key, logical_turn_id) REFERENCES turns (session_key, logical_turn_id) ON DELETE CASCADE
);

CREATE INDEX entries_by_turn ON entries (session_key, logical_turn_id, revision);
CREATE INDEX entries_by_mutation ON entries (mutation_id);
CREATE INDEX entries_by_status ON entries (status, recorded_at);

-- Authoritative evidence that reconciled an entry (kept with the operation, seed 002).
CREATE TABLE reconciliations (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_seq   INTEGER NOT NULL REFERENCES entries (seq) ON DELETE CASCADE,
    attempt_id  TEXT NOT NULL,
    completed   INTEGER NOT NULL,
    source      TEXT NOT NULL,
    reference   TEXT NOT NULL,
    observed_at TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
);
