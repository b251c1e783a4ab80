-- The write path (issue 45; docs/ledger.md "The write path on Postgres"), as Postgres's 0013_write_path.
--
-- SQLite's search already leaves a settle alone (`0009`: contentless FTS5 tables, written only when the
-- searched text changes); Postgres's moves to tables of its own in its `0013`. Here, as there: the webhook
-- trigger (`0016`) reads nothing more when no endpoint is enabled. Before, a host's settlement or
-- cancellation looked in the entry's history for the ledger's own settlement first, then found no endpoint
-- to queue for. The same events are queued when there is one.
DROP TRIGGER webhook_events;
CREATE TRIGGER webhook_events AFTER INSERT ON history
WHEN EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL) AND (NEW.kind = 'reconciliation'
  OR (NEW.kind = 'settlement' AND NEW.ledger_status = 'outcome_unknown' AND NOT (NEW.actor = 'host'
      AND EXISTS (SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.kind = 'settlement'
                  AND h.actor = 'ledger' AND h.attempt_id IS NEW.attempt_id)))
  OR (NEW.kind IN ('settlement', 'cancellation') AND NEW.ledger_status <> 'outcome_unknown'
      AND NEW.actor = 'host'
      AND EXISTS (SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.kind = 'settlement'
                  AND h.actor = 'ledger' AND h.attempt_id IS NEW.attempt_id)))
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
