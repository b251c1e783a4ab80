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

-- Webhooks, as SQLite's 0016_deadlines: the host's late original report after the ledger's settlement at
-- a deadline resolves it (`outcome.resolved`), or adds nothing when it reports `outcome_unknown` again.
CREATE OR REPLACE FUNCTION webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    t TEXT;
    late BOOLEAN;
BEGIN
    late := NEW.kind IN ('settlement', 'cancellation') AND NEW.actor = 'host' AND EXISTS (
        SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.kind = 'settlement'
            AND h.actor = 'ledger' AND h.attempt_id IS NOT DISTINCT FROM NEW.attempt_id);
    IF NEW.kind = 'reconciliation' THEN
        t := 'outcome.resolved';
    ELSIF NEW.kind = 'settlement' AND NEW.ledger_status = 'outcome_unknown' AND NOT late THEN
        t := 'outcome.unknown';
    ELSIF late AND NEW.ledger_status <> 'outcome_unknown' THEN
        t := 'outcome.resolved';
    ELSE
        RETURN NULL;
    END IF;
    INSERT INTO webhook_outbox (endpoint_id, event, msg_id, entry_seq, session_key, logical_turn_id,
                                mutation_id, tool, status, age_secs, at, next_attempt_at)
    SELECT w.id, t, 'msg_' || md5(random()::text || clock_timestamp()::text || w.id::text), e.seq,
           e.session_key, e.logical_turn_id, e.mutation_id, e.tool, NEW.ledger_status,
           CASE WHEN t = 'outcome.resolved' THEN
               COALESCE(GREATEST(0, (NEW.at - (SELECT MAX(h.at) FROM history h WHERE h.entry_seq = NEW.entry_seq
                   AND h.kind = 'settlement' AND h.ledger_status = 'outcome_unknown')) / 1000), 0)
           ELSE 0 END,
           NEW.at, NEW.at
    FROM webhook_endpoints w JOIN entries e ON e.seq = NEW.entry_seq
    WHERE w.disabled_at IS NULL AND position(',' || t || ',' IN ',' || w.events || ',') > 0;
    RETURN NULL;
END
$$;

DROP TRIGGER webhook_events ON history;
CREATE TRIGGER webhook_events AFTER INSERT ON history
    FOR EACH ROW WHEN (NEW.kind IN ('settlement', 'cancellation', 'reconciliation'))
    EXECUTE FUNCTION webhook_events();

-- When an instance last swept for overdue writes (ms, the database's clock): an instance that starts
-- while another one sweeps moves no deadline (docs/api.md "Deadlines": only those that passed while no
-- server ran get the start plus 60 s).
CREATE TABLE deadline_sweep (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    at_ms BIGINT NOT NULL
);
INSERT INTO deadline_sweep (id, at_ms) VALUES (1, 0);
