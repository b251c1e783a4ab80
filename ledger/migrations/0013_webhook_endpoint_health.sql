-- Webhook delivery per endpoint (docs/api.md "Webhooks", "Per endpoint"): each endpoint's health, so a
-- failing endpoint waits as a whole and is disabled after 24 h of failures, and an index of the pending
-- outbox rows by endpoint, for taking due rows fairly across endpoints and bounding each endpoint's
-- backlog (`ledger::webhooks::Webhooks::take_due_per_endpoint`, `drop_over_bound`).

-- Failed attempts since the endpoint's last delivery (0 after a delivery).
ALTER TABLE webhook_endpoints ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
-- When the first of those failures was recorded (NULL while the endpoint delivers).
ALTER TABLE webhook_endpoints ADD COLUMN failing_since INTEGER;
-- None of the endpoint's rows is taken before then (the endpoint's own backoff).
ALTER TABLE webhook_endpoints ADD COLUMN blocked_until INTEGER;
-- Why `disabled_at` is set: 'gone' (it answered 410; NULL on rows disabled before this migration) or
-- 'failing' (no delivery for 24 h since its first failure).
ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason TEXT;

CREATE INDEX webhook_outbox_pending_by_endpoint ON webhook_outbox (endpoint_id, id)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
