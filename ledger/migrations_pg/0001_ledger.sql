-- The ledger on Postgres (docs/ledger.md "Backends"): the schema SQLite reaches through its migrations
-- 0001 to 0007, in one step. Times are milliseconds since the Unix epoch (UTC), BIGINT. Keys and ids
-- compare bytewise (COLLATE "C"), as in SQLite, so paging orders and prefixes agree on both backends.
-- Flags are BOOLEAN. A later migration is added to both folders.

CREATE TABLE sessions (
    session_key   TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    created_at    BIGINT NOT NULL,
    last_write_at BIGINT NOT NULL
);

CREATE TABLE turns (
    -- Order in which turns were first recorded.
    turn_seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_key     TEXT COLLATE "C" NOT NULL REFERENCES sessions (session_key) ON DELETE CASCADE,
    logical_turn_id TEXT COLLATE "C" NOT NULL,
    latest_revision BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    UNIQUE (session_key, logical_turn_id)
);

CREATE TABLE entries (
    -- Order in which entries were first recorded.
    seq                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_key        TEXT COLLATE "C" NOT NULL REFERENCES sessions (session_key) ON DELETE CASCADE,
    logical_turn_id    TEXT COLLATE "C" NOT NULL,
    mutation_id        TEXT COLLATE "C" NOT NULL,
    tool               TEXT COLLATE "C" NOT NULL,
    status             TEXT NOT NULL CHECK (status IN
                           ('approved', 'execution_started', 'completed', 'failed', 'outcome_unknown')),
    intent_recorded    BOOLEAN NOT NULL DEFAULT FALSE,
    attempt_id         TEXT COLLATE "C",
    reason             TEXT CHECK (reason IN ('pre_dispatch_deadline', 'execution_timeout')),
    meta_attached      BOOLEAN NOT NULL DEFAULT FALSE,
    meta_id            TEXT,
    meta_url           TEXT,
    meta_title         TEXT,
    -- Revision of the entry's latest visible change; NULL for legacy entries.
    revision           BIGINT,
    recorded_at        BIGINT NOT NULL,
    settled_at         BIGINT,
    updated_at         BIGINT NOT NULL,
    -- The mutation of the same session an approved mutation was commissioned after (NULL: none).
    commissioned_after TEXT COLLATE "C",
    UNIQUE (session_key, mutation_id),
    FOREIGN KEY (session_key, logical_turn_id) REFERENCES turns (session_key, logical_turn_id) ON DELETE CASCADE
);

CREATE INDEX entries_by_turn ON entries (session_key, logical_turn_id, revision);
CREATE INDEX entries_by_mutation ON entries (mutation_id);
CREATE INDEX entries_by_status ON entries (status, recorded_at);
CREATE INDEX turns_by_session ON turns (session_key, turn_seq);
CREATE INDEX entries_by_turn_seq ON entries (session_key, logical_turn_id, seq);
CREATE INDEX entries_open_unknown_by_turn ON entries (session_key, logical_turn_id, revision)
    WHERE status IN ('outcome_unknown', 'execution_started');
CREATE INDEX entries_by_commissioner ON entries (session_key, commissioned_after)
    WHERE commissioned_after IS NOT NULL;

-- Authoritative evidence that reconciled an entry (kept with the operation, seed 002).
CREATE TABLE reconciliations (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entry_seq   BIGINT NOT NULL REFERENCES entries (seq) ON DELETE CASCADE,
    attempt_id  TEXT NOT NULL,
    completed   BOOLEAN NOT NULL,
    source      TEXT NOT NULL,
    reference   TEXT NOT NULL,
    observed_at TEXT NOT NULL,
    recorded_at BIGINT NOT NULL
);
CREATE INDEX reconciliations_by_entry ON reconciliations (entry_seq);

-- Every attempt id an entry has had, so a fresh attempt cannot reuse an earlier one.
CREATE TABLE attempts (
    entry_seq  BIGINT NOT NULL REFERENCES entries (seq) ON DELETE CASCADE,
    attempt_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (entry_seq, attempt_id)
);

-- One-off maintenance tasks. `metadata_at_rest` is done by construction: a Postgres ledger was never
-- written by a version that stored host metadata unsanitised.
CREATE TABLE maintenance (
    task    TEXT PRIMARY KEY NOT NULL,
    done_at BIGINT NOT NULL
);
INSERT INTO maintenance (task, done_at) VALUES ('metadata_at_rest', 0);

-- Who may see what (docs/access.md).
CREATE TABLE staff (
    name          TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);

CREATE TABLE staff_tokens (
    token_hash TEXT PRIMARY KEY NOT NULL,
    staff_name TEXT COLLATE "C" NOT NULL REFERENCES staff (name) ON DELETE CASCADE,
    created_at BIGINT NOT NULL
);
CREATE INDEX staff_tokens_by_staff ON staff_tokens (staff_name);

CREATE TABLE sign_ins (
    id_hash      TEXT PRIMARY KEY NOT NULL,
    staff_name   TEXT COLLATE "C" NOT NULL REFERENCES staff (name) ON DELETE CASCADE,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX sign_ins_by_staff ON sign_ins (staff_name);

CREATE TABLE viewer_links (
    token_hash  TEXT PRIMARY KEY NOT NULL,
    session_key TEXT COLLATE "C" NOT NULL REFERENCES sessions (session_key) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX viewer_links_by_session ON viewer_links (session_key);

-- Operation history (docs/ledger.md "History"): one row per change of an entry, written in the same
-- transaction as the change.
CREATE TABLE history (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entry_seq       BIGINT NOT NULL REFERENCES entries (seq) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('approval', 'intent', 'settlement', 'cancellation',
                        'reconciliation', 'metadata', 'attempt', 'note', 'imported')),
    at              BIGINT NOT NULL,
    revision        BIGINT,
    actor           TEXT NOT NULL,
    attempt_id      TEXT,
    ledger_status   TEXT NOT NULL CHECK (ledger_status IN
                        ('approved', 'execution_started', 'completed', 'failed', 'outcome_unknown')),
    intent_recorded BOOLEAN NOT NULL,
    reason          TEXT CHECK (reason IN ('pre_dispatch_deadline', 'execution_timeout')),
    meta_attached   BOOLEAN NOT NULL,
    meta_id         TEXT,
    meta_url        TEXT,
    meta_title      TEXT,
    source          TEXT,
    reference       TEXT,
    observed_at     TEXT,
    note            TEXT
);
CREATE INDEX history_by_entry ON history (entry_seq, id);

CREATE INDEX sessions_by_activity ON sessions (last_write_at DESC, session_key);
