-- The host's W3C `traceparent` (docs/api.md "Host write API", docs/operations.md "OpenTelemetry"; issue
-- 43): an optional field of approve, stored with the entry, and copied into the OpenTelemetry outbox so
-- the span `mutation_outcome {tool}` is a child of the host's span. The trigger of 0020_otel_outbox is
-- replaced by the same trigger that also copies the entry's `traceparent`; nothing else changes.

ALTER TABLE entries ADD COLUMN traceparent TEXT;
ALTER TABLE otel_outbox ADD COLUMN traceparent TEXT;

DROP TRIGGER otel_spans;

CREATE TRIGGER otel_spans AFTER INSERT ON history
WHEN (NEW.kind = 'reconciliation'
       OR (NEW.kind IN ('settlement', 'cancellation') AND NEW.intent_recorded = 1))
  AND (SELECT enabled FROM otel_export WHERE id = 1) = 1
BEGIN
    INSERT INTO otel_outbox (span, entry_seq, session_key, logical_turn_id, mutation_id, tool, attempt_id,
                             ledger_status, intent_recorded, reason, revision, actor, source, reference,
                             observed_at, provider_status, started_at, at, next_attempt_at, traceparent)
    SELECT CASE WHEN NEW.kind = 'reconciliation' OR EXISTS (
                    SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.id < NEW.id
                      AND h.kind IN ('settlement', 'cancellation') AND h.attempt_id IS NEW.attempt_id)
                THEN 'reconcile' ELSE 'write' END,
           e.seq, e.session_key, e.logical_turn_id, e.mutation_id, e.tool, NEW.attempt_id,
           NEW.ledger_status, NEW.intent_recorded, NEW.reason, NEW.revision, NEW.actor, NEW.source,
           NEW.reference, NEW.observed_at, NEW.provider_status,
           COALESCE((SELECT MAX(h.at) FROM history h WHERE h.entry_seq = NEW.entry_seq
                       AND h.kind IN ('intent', 'attempt') AND h.attempt_id IS NEW.attempt_id), NEW.at),
           NEW.at, NEW.at, e.traceparent
    FROM entries e WHERE e.seq = NEW.entry_seq;
END;
