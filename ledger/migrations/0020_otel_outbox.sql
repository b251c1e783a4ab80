-- OpenTelemetry export (docs/operations.md "OpenTelemetry"; issue 43): the durable outbox of the spans the
-- server exports over OTLP. A row is written by the trigger below in the same transaction as the history
-- row of the change (an entry settled or cancelled after its intent: the span `mutation_outcome {tool}`;
-- reconciled, or settled by its host after the ledger settled it at its deadline: `reconcile {tool}`), so
-- a committed change always has its span and a rolled-back one never has. Only while the export is on
-- (`otel_export.enabled`, set by `outcomes serve` from `--otlp-endpoint` / `OTEL_EXPORTER_OTLP_*` when it
-- starts): with it off, the trigger reads one row and writes nothing. A row is deleted once exported, or
-- given up (24 h after the change, or dropped by the bound: `ledger::otel`). Times are milliseconds since
-- the Unix epoch.

CREATE TABLE otel_export (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    enabled INTEGER NOT NULL
);
INSERT INTO otel_export (id, enabled) VALUES (1, 0);

CREATE TABLE otel_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    -- `write` (the span `mutation_outcome {tool}`) or `reconcile` (`reconcile {tool}`).
    span            TEXT NOT NULL CHECK (span IN ('write', 'reconcile')),
    -- The operation, copied (the outbox outlives a purged session).
    entry_seq       INTEGER NOT NULL,
    session_key     TEXT NOT NULL,
    logical_turn_id TEXT NOT NULL,
    mutation_id     TEXT NOT NULL,
    tool            TEXT NOT NULL,
    attempt_id      TEXT,
    -- The entry's state after the change (the published status is projected from these two).
    ledger_status   TEXT NOT NULL,
    intent_recorded INTEGER NOT NULL,
    reason          TEXT,
    revision        INTEGER,
    -- `host`, `ledger` or `staff:<name>`.
    actor           TEXT NOT NULL,
    -- Reconciliation evidence (NULL otherwise).
    source          TEXT,
    reference       TEXT,
    observed_at     TEXT,
    provider_status TEXT,
    -- When the attempt's intent was recorded (the span's start), and when the change happened (its end).
    started_at      INTEGER NOT NULL,
    at              INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    -- A worker holds a row it is exporting until then (another worker skips it).
    leased_until    INTEGER,
    last_error      TEXT
);

CREATE INDEX otel_outbox_due ON otel_outbox (next_attempt_at, id);

CREATE TRIGGER otel_spans AFTER INSERT ON history
WHEN (NEW.kind = 'reconciliation'
       OR (NEW.kind IN ('settlement', 'cancellation') AND NEW.intent_recorded = 1))
  AND (SELECT enabled FROM otel_export WHERE id = 1) = 1
BEGIN
    INSERT INTO otel_outbox (span, entry_seq, session_key, logical_turn_id, mutation_id, tool, attempt_id,
                             ledger_status, intent_recorded, reason, revision, actor, source, reference,
                             observed_at, provider_status, started_at, at, next_attempt_at)
    SELECT CASE WHEN NEW.kind = 'reconciliation' OR EXISTS (
                    SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.id < NEW.id
                      AND h.kind IN ('settlement', 'cancellation') AND h.attempt_id IS NEW.attempt_id)
                THEN 'reconcile' ELSE 'write' END,
           e.seq, e.session_key, e.logical_turn_id, e.mutation_id, e.tool, NEW.attempt_id,
           NEW.ledger_status, NEW.intent_recorded, NEW.reason, NEW.revision, NEW.actor, NEW.source,
           NEW.reference, NEW.observed_at, NEW.provider_status,
           COALESCE((SELECT MAX(h.at) FROM history h WHERE h.entry_seq = NEW.entry_seq
                       AND h.kind IN ('intent', 'attempt') AND h.attempt_id IS NEW.attempt_id), NEW.at),
           NEW.at, NEW.at
    FROM entries e WHERE e.seq = NEW.entry_seq;
END;
