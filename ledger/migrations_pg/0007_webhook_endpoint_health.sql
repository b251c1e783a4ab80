-- As SQLite's migration 0013: each webhook endpoint's health and the pending outbox rows by endpoint
-- (docs/api.md "Webhooks", "Per endpoint").
ALTER TABLE webhook_endpoints ADD COLUMN consecutive_failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE webhook_endpoints ADD COLUMN failing_since BIGINT;
ALTER TABLE webhook_endpoints ADD COLUMN blocked_until BIGINT;
ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason TEXT;

CREATE INDEX webhook_outbox_pending_by_endpoint ON webhook_outbox (endpoint_id, id)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
