-- The host's W3C `traceparent` (issue 43): as SQLite's migration 0021_otel_traceparent. The trigger
-- function of 0014_otel_outbox is replaced by the same function that also copies the entry's
-- `traceparent`; the trigger itself is unchanged.

ALTER TABLE entries ADD COLUMN traceparent TEXT;
ALTER TABLE otel_outbox ADD COLUMN traceparent TEXT;

CREATE OR REPLACE FUNCTION otel_spans() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM otel_export WHERE id = 1 AND enabled = 1) THEN
        RETURN NULL;
    END IF;
    INSERT INTO otel_outbox (span, entry_seq, session_key, logical_turn_id, mutation_id, tool, attempt_id,
                             ledger_status, intent_recorded, reason, revision, actor, source, reference,
                             observed_at, provider_status, started_at, at, next_attempt_at, traceparent)
    SELECT CASE WHEN NEW.kind = 'reconciliation' OR EXISTS (
                    SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.id < NEW.id
                      AND h.kind IN ('settlement', 'cancellation')
                      AND h.attempt_id IS NOT DISTINCT FROM NEW.attempt_id)
                THEN 'reconcile' ELSE 'write' END,
           e.seq, e.session_key, e.logical_turn_id, e.mutation_id, e.tool, NEW.attempt_id,
           NEW.ledger_status, CASE WHEN NEW.intent_recorded THEN 1 ELSE 0 END, NEW.reason, NEW.revision, NEW.actor, NEW.source,
           NEW.reference, NEW.observed_at, NEW.provider_status,
           COALESCE((SELECT MAX(h.at) FROM history h WHERE h.entry_seq = NEW.entry_seq
                       AND h.kind IN ('intent', 'attempt')
                       AND h.attempt_id IS NOT DISTINCT FROM NEW.attempt_id), NEW.at),
           NEW.at, NEW.at, e.traceparent
    FROM entries e WHERE e.seq = NEW.entry_seq;
    RETURN NULL;
END
$$;
