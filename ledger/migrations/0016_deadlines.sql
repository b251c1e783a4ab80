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

-- 4. Webhooks (docs/api.md "Webhooks", "Deadlines"): the ledger's own settlement at a deadline is an
--    `outcome.unknown` like any other; the host's late original report that follows it resolves it
--    (`outcome.resolved`, or nothing more when it reports `outcome_unknown` again: staff were alerted
--    once). A report is late when the ledger settled the same attempt before it.
DROP TRIGGER webhook_events;
CREATE TRIGGER webhook_events AFTER INSERT ON history
WHEN NEW.kind = 'reconciliation'
  OR (NEW.kind = 'settlement' AND NEW.ledger_status = 'outcome_unknown' AND NOT (NEW.actor = 'host'
      AND EXISTS (SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.kind = 'settlement'
                  AND h.actor = 'ledger' AND h.attempt_id IS NEW.attempt_id)))
  OR (NEW.kind IN ('settlement', 'cancellation') AND NEW.ledger_status <> 'outcome_unknown'
      AND NEW.actor = 'host'
      AND EXISTS (SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.kind = 'settlement'
                  AND h.actor = 'ledger' AND h.attempt_id IS NEW.attempt_id))
BEGIN
    INSERT INTO webhook_outbox (endpoint_id, event, msg_id, entry_seq, session_key, logical_turn_id,
                                mutation_id, tool, status, age_secs, at, next_attempt_at)
    SELECT w.id, ev.t, 'msg_' || lower(hex(randomblob(16))), e.seq, e.session_key, e.logical_turn_id,
           e.mutation_id, e.tool, NEW.ledger_status,
           CASE WHEN ev.t = 'outcome.resolved' THEN
               COALESCE(MAX(0, (NEW.at - (SELECT MAX(h.at) FROM history h WHERE h.entry_seq = NEW.entry_seq
                   AND h.kind = 'settlement' AND h.ledger_status = 'outcome_unknown')) / 1000), 0)
           ELSE 0 END,
           NEW.at, NEW.at
    FROM (SELECT CASE WHEN NEW.kind = 'settlement' AND NEW.ledger_status = 'outcome_unknown'
                      THEN 'outcome.unknown' ELSE 'outcome.resolved' END AS t) AS ev
    JOIN webhook_endpoints w ON w.disabled_at IS NULL AND instr(',' || w.events || ',', ',' || ev.t || ',') > 0
    JOIN entries e ON e.seq = NEW.entry_seq;
END;
