-- Operation history (docs/ledger.md "History"): one row per change of an entry, written in the same
-- transaction as the change. A row keeps the entry's state fields after the change (status, intent flag,
-- attempt, reason, the sanitised metadata as stored), never a published record: the record is projected
-- on read. Deleted with its entry (and so with its session). Times are milliseconds since the Unix epoch.

CREATE TABLE history (
    -- Order of the changes (one entry's rows, oldest first, are an index range of `history_by_entry`).
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_seq       INTEGER NOT NULL REFERENCES entries (seq) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('approval', 'intent', 'settlement', 'cancellation',
                        'reconciliation', 'metadata', 'attempt', 'note', 'imported')),
    at              INTEGER NOT NULL,
    -- The revision the change took; NULL for approvals, notes and imported entries.
    revision        INTEGER,
    -- `host` or `staff:<name>`.
    actor           TEXT NOT NULL,
    attempt_id      TEXT,
    ledger_status   TEXT NOT NULL CHECK (ledger_status IN
                        ('approved', 'execution_started', 'completed', 'failed', 'outcome_unknown')),
    intent_recorded INTEGER NOT NULL,
    reason          TEXT CHECK (reason IN ('pre_dispatch_deadline', 'execution_timeout')),
    meta_attached   INTEGER NOT NULL,
    meta_id         TEXT,
    meta_url        TEXT,
    meta_title      TEXT,
    -- Reconciliation evidence.
    source          TEXT,
    reference       TEXT,
    observed_at     TEXT,
    -- A staff note's text (1 to 4096 bytes).
    note            TEXT
);

CREATE INDEX history_by_entry ON history (entry_seq, id);

-- The mutation of the same session an approved mutation was commissioned after (NULL: none).
ALTER TABLE entries ADD COLUMN commissioned_after TEXT;

CREATE INDEX entries_by_commissioner ON entries (session_key, commissioned_after)
    WHERE commissioned_after IS NOT NULL;
