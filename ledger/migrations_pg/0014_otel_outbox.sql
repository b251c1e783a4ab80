-- OpenTelemetry export (docs/operations.md "OpenTelemetry"; issue 43): as SQLite's migration
-- 0020_otel_outbox. On Postgres several instances share the outbox: a worker takes due rows with
-- `FOR UPDATE SKIP LOCKED` and a lease, so each span is exported by one instance.

CREATE TABLE otel_export (
    id      BIGINT PRIMARY KEY CHECK (id = 1),
    enabled BIGINT NOT NULL
);
INSERT INTO otel_export (id, enabled) VALUES (1, 0);

CREATE TABLE otel_outbox (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    span            TEXT NOT NULL CHECK (span IN ('write', 'reconcile')),
    entry_seq       BIGINT NOT NULL,
    session_key     TEXT NOT NULL,
    logical_turn_id TEXT NOT NULL,
    mutation_id     TEXT NOT NULL,
    tool            TEXT NOT NULL,
    attempt_id      TEXT,
    ledger_status   TEXT NOT NULL,
    intent_recorded BIGINT NOT NULL,
    reason          TEXT,
    revision        BIGINT,
    actor           TEXT NOT NULL,
    source          TEXT,
    reference       TEXT,
    observed_at     TEXT,
    provider_status TEXT,
    started_at      BIGINT NOT NULL,
    at              BIGINT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    leased_until    BIGINT,
    last_error      TEXT
);

CREATE INDEX otel_outbox_due ON otel_outbox (next_attempt_at, id);

CREATE FUNCTION otel_spans() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM otel_export WHERE id = 1 AND enabled = 1) THEN
        RETURN NULL;
    END IF;
    INSERT INTO otel_outbox (span, entry_seq, session_key, logical_turn_id, mutation_id, tool, attempt_id,
                             ledger_status, intent_recorded, reason, revision, actor, source, reference,
                             observed_at, provider_status, started_at, at, next_attempt_at)
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
           NEW.at, NEW.at
    FROM entries e WHERE e.seq = NEW.entry_seq;
    RETURN NULL;
END
$$;

CREATE TRIGGER otel_spans AFTER INSERT ON history
    FOR EACH ROW WHEN (NEW.kind = 'reconciliation'
                       OR (NEW.kind IN ('settlement', 'cancellation') AND NEW.intent_recorded))
    EXECUTE FUNCTION otel_spans();
