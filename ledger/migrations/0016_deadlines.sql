-- Deadlines: no write stays in flight forever (docs/api.md "Deadlines").
--
-- 1. Every attempt in flight has a deadline (ms since the Unix epoch): past it, the ledger settles the
--    entry `outcome_unknown` with `execution_timeout` itself. Entries already in flight when this runs get
--    the migration's time plus the default deadline (900 s).
ALTER TABLE entries ADD COLUMN deadline_at INTEGER;
-- 2. Who settled the current state by a settle or cancellation (`host`, or `ledger` at the deadline), and
--    who established it by a reconciliation: what the pages say without parsing free text.
ALTER TABLE entries ADD COLUMN settled_by TEXT CHECK (settled_by IN ('host', 'ledger'));
ALTER TABLE entries ADD COLUMN established_by TEXT
    CHECK (established_by IN ('staff', 'status_check', 'late_answer', 'host'));
-- 3. The deadline as of each change, for the history.
ALTER TABLE history ADD COLUMN deadline_at INTEGER;

UPDATE entries SET deadline_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000 + 900000
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

-- The sweep's read: the writes in flight by deadline, one index range whatever the ledger holds.
CREATE INDEX entries_in_flight_by_deadline ON entries (deadline_at) WHERE status = 'execution_started';
