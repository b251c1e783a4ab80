-- Every attempt id an entry has had, so a fresh attempt cannot reuse an earlier one: a late report about an
-- old attempt must never be taken for the new attempt.

CREATE TABLE attempts (
    entry_seq  INTEGER NOT NULL REFERENCES entries (seq) ON DELETE CASCADE,
    attempt_id TEXT NOT NULL,
    PRIMARY KEY (entry_seq, attempt_id)
);

INSERT INTO attempts (entry_seq, attempt_id) SELECT seq, attempt_id FROM entries WHERE attempt_id IS NOT NULL;
