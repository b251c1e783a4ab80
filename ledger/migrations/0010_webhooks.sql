-- Webhooks (docs/api.md "Webhooks"): the endpoints `outcomes webhooks add` stores, and the durable outbox
-- of their deliveries. An outbox row is written by the trigger below in the same transaction as the
-- history row of the change (an entry settled `outcome_unknown`, or reconciled), so a committed change
-- always has its deliveries and a rolled-back one never has. Stale alerts are added by the server's
-- delivery worker. Times are milliseconds since the Unix epoch.

CREATE TABLE webhook_endpoints (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    url         TEXT NOT NULL,
    -- Comma-separated event types (`outcome.unknown,outcome.unknown_stale,outcome.resolved`).
    events      TEXT NOT NULL,
    -- The signing secret `whsec_<base64>`: kept in clear, since an HMAC needs it (the file is 0600).
    secret      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    -- Set when a receiver answered 410 Gone: nothing more is sent to it.
    disabled_at INTEGER
);

CREATE TABLE webhook_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id     INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event           TEXT NOT NULL,
    -- The `webhook-id` header: the same on every attempt, so receivers can deduplicate.
    msg_id          TEXT NOT NULL UNIQUE,
    -- The operation, copied (the outbox outlives a purged session).
    entry_seq       INTEGER NOT NULL,
    session_key     TEXT NOT NULL,
    logical_turn_id TEXT NOT NULL,
    mutation_id     TEXT NOT NULL,
    tool            TEXT NOT NULL,
    status          TEXT NOT NULL,
    age_secs        INTEGER NOT NULL,
    -- When the event happened (the payload's `timestamp`).
    at              INTEGER NOT NULL,
    -- The stale threshold of an `outcome.unknown_stale` (seconds), else NULL.
    threshold_secs  INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    -- A worker holds a row it is delivering until then (another worker skips it).
    leased_until    INTEGER,
    delivered_at    INTEGER,
    -- Given up (24 h of retries, or the endpoint answered 410).
    failed_at       INTEGER,
    last_error      TEXT
);

CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
-- Once per operation, endpoint and threshold.
CREATE UNIQUE INDEX webhook_outbox_stale_once ON webhook_outbox (endpoint_id, entry_seq, threshold_secs)
    WHERE event = 'outcome.unknown_stale';

CREATE TRIGGER webhook_events AFTER INSERT ON history
WHEN NEW.kind = 'reconciliation' OR (NEW.kind = 'settlement' AND NEW.ledger_status = 'outcome_unknown')
BEGIN
    INSERT INTO webhook_outbox (endpoint_id, event, msg_id, entry_seq, session_key, logical_turn_id,
                                mutation_id, tool, status, age_secs, at, next_attempt_at)
    SELECT w.id, ev.t, 'msg_' || lower(hex(randomblob(16))), e.seq, e.session_key, e.logical_turn_id,
           e.mutation_id, e.tool, NEW.ledger_status,
           CASE WHEN NEW.kind = 'reconciliation' THEN
               COALESCE(MAX(0, (NEW.at - (SELECT MAX(h.at) FROM history h WHERE h.entry_seq = NEW.entry_seq
                   AND h.kind = 'settlement' AND h.ledger_status = 'outcome_unknown')) / 1000), 0)
           ELSE 0 END,
           NEW.at, NEW.at
    FROM (SELECT CASE NEW.kind WHEN 'reconciliation' THEN 'outcome.resolved' ELSE 'outcome.unknown' END AS t) AS ev
    JOIN webhook_endpoints w ON w.disabled_at IS NULL AND instr(',' || w.events || ',', ',' || ev.t || ',') > 0
    JOIN entries e ON e.seq = NEW.entry_seq;
END;
