-- Deadlines on Postgres (docs/api.md "Deadlines"), as SQLite's 0016_deadlines.
ALTER TABLE entries ADD COLUMN deadline_at BIGINT;
ALTER TABLE entries ADD COLUMN settled_by TEXT CHECK (settled_by IN ('host', 'ledger'));
ALTER TABLE entries ADD COLUMN established_by TEXT
    CHECK (established_by IN ('staff', 'status_check', 'late_answer', 'host'));
ALTER TABLE history ADD COLUMN deadline_at BIGINT;

UPDATE entries SET deadline_at = CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT) + 900000
    WHERE status = 'execution_started';
UPDATE entries SET established_by = (
    SELECT CASE WHEN h.actor LIKE 'staff:%' THEN 'staff'
                WHEN h.source LIKE 'status:%' THEN 'status_check'
                WHEN h.source LIKE 'mcp-late-answer%' THEN 'late_answer'
                ELSE 'host' END
    FROM history h
    WHERE h.entry_seq = entries.seq AND h.kind = 'reconciliation' AND h.attempt_id = entries.attempt_id
    ORDER BY h.id DESC LIMIT 1)
    WHERE settled_at IS NOT NULL;
UPDATE entries SET settled_by = 'host' WHERE settled_at IS NOT NULL AND established_by IS NULL;

CREATE INDEX entries_in_flight_by_deadline ON entries (deadline_at) WHERE status = 'execution_started';
