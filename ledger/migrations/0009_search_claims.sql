-- Search and claims (docs/ledger.md "Search", "History"; docs/api.md "Search", "Claims").
--
-- 1. History rows of kind `claim` and `release` (a staff member's "I am on it" and its end). SQLite cannot
--    change a CHECK constraint in place: the table is rebuilt with the same columns, rows and ids.
CREATE TABLE history_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_seq       INTEGER NOT NULL REFERENCES entries (seq) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('approval', 'intent', 'settlement', 'cancellation',
                        'reconciliation', 'metadata', 'attempt', 'note', 'imported', 'claim', 'release')),
    at              INTEGER NOT NULL,
    revision        INTEGER,
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
    source          TEXT,
    reference       TEXT,
    observed_at     TEXT,
    note            TEXT
);
INSERT INTO history_new SELECT id, entry_seq, kind, at, revision, actor, attempt_id, ledger_status,
    intent_recorded, reason, meta_attached, meta_id, meta_url, meta_title, source, reference, observed_at, note
    FROM history;
DROP TABLE history;
ALTER TABLE history_new RENAME TO history;
CREATE INDEX history_by_entry ON history (entry_seq, id);
-- The latest note and claim of an open unknown, read per row of the support queue.
CREATE INDEX history_staff_by_entry ON history (entry_seq, kind, id) WHERE kind IN ('note', 'claim', 'release');

-- 2. Search: substrings of session keys, mutation ids, titles and resource ids, case-insensitively, through
--    FTS5 trigram indexes (a query of 3 or more characters is an index look-up, never a scan). Contentless:
--    the text stays in `entries` and `sessions`; the index holds only trigrams and row ids.
--    Entries: the row id is the entry's `seq` (its INTEGER PRIMARY KEY, stable across VACUUM).
CREATE VIRTUAL TABLE entries_search USING fts5(
    session_key, mutation_id, title, resource_id,
    content = '', contentless_delete = 1, tokenize = 'trigram'
);
INSERT INTO entries_search (rowid, session_key, mutation_id, title, resource_id)
    SELECT seq, session_key, mutation_id, meta_title, meta_id FROM entries;
CREATE TRIGGER entries_search_insert AFTER INSERT ON entries BEGIN
    INSERT INTO entries_search (rowid, session_key, mutation_id, title, resource_id)
        VALUES (new.seq, new.session_key, new.mutation_id, new.meta_title, new.meta_id);
END;
-- Only a change of what is searched touches the index (a settle does not).
CREATE TRIGGER entries_search_update AFTER UPDATE OF meta_title, meta_id ON entries BEGIN
    DELETE FROM entries_search WHERE rowid = old.seq;
    INSERT INTO entries_search (rowid, session_key, mutation_id, title, resource_id)
        VALUES (new.seq, new.session_key, new.mutation_id, new.meta_title, new.meta_id);
END;
CREATE TRIGGER entries_search_delete AFTER DELETE ON entries BEGIN
    DELETE FROM entries_search WHERE rowid = old.seq;
END;

--    Sessions: `sessions` has a text key, and its implicit row id may change on VACUUM, so each session
--    gets a stable search id here (newest the highest); deleting the session deletes it, and its index row.
CREATE TABLE session_search_ids (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key TEXT NOT NULL UNIQUE REFERENCES sessions (session_key) ON DELETE CASCADE
);
CREATE VIRTUAL TABLE sessions_search USING fts5(
    session_key, content = '', contentless_delete = 1, tokenize = 'trigram'
);
INSERT INTO session_search_ids (session_key) SELECT session_key FROM sessions ORDER BY created_at, session_key;
INSERT INTO sessions_search (rowid, session_key) SELECT id, session_key FROM session_search_ids;
CREATE TRIGGER sessions_search_insert AFTER INSERT ON sessions BEGIN
    INSERT INTO session_search_ids (session_key) VALUES (new.session_key);
END;
CREATE TRIGGER session_search_ids_insert AFTER INSERT ON session_search_ids BEGIN
    INSERT INTO sessions_search (rowid, session_key) VALUES (new.id, new.session_key);
END;
CREATE TRIGGER session_search_ids_delete AFTER DELETE ON session_search_ids BEGIN
    DELETE FROM sessions_search WHERE rowid = old.id;
END;
