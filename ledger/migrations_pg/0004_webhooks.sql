-- Webhooks (docs/api.md "Webhooks"): as SQLite's migration 0010. On Postgres several instances share
-- the outbox: a worker takes due rows with `FOR UPDATE SKIP LOCKED` and a lease, so each delivery is
-- made by one instance.

CREATE TABLE webhook_endpoints (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url         TEXT NOT NULL,
    events      TEXT NOT NULL,
    secret      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    disabled_at BIGINT
);

CREATE TABLE webhook_outbox (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id     BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event           TEXT NOT NULL,
    msg_id          TEXT NOT NULL UNIQUE,
    entry_seq       BIGINT NOT NULL,
    session_key     TEXT NOT NULL,
    logical_turn_id TEXT NOT NULL,
    mutation_id     TEXT NOT NULL,
    tool            TEXT NOT NULL,
    status          TEXT NOT NULL,
    age_secs        BIGINT NOT NULL,
    at              BIGINT NOT NULL,
    threshold_secs  BIGINT,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    leased_until    BIGINT,
    delivered_at    BIGINT,
    failed_at       BIGINT,
    last_error      TEXT
);

CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE UNIQUE INDEX webhook_outbox_stale_once ON webhook_outbox (endpoint_id, entry_seq, threshold_secs)
    WHERE event = 'outcome.unknown_stale';

CREATE FUNCTION webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    t TEXT;
BEGIN
    IF NEW.kind = 'reconciliation' THEN
        t := 'outcome.resolved';
    ELSIF NEW.kind = 'settlement' AND NEW.ledger_status = 'outcome_unknown' THEN
        t := 'outcome.unknown';
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

CREATE TRIGGER webhook_events AFTER INSERT ON history
    FOR EACH ROW WHEN (NEW.kind IN ('settlement', 'reconciliation'))
    EXECUTE FUNCTION webhook_events();
