-- As SQLite's migration 0012: the finished outbox rows by the time they were finished, for pruning
-- (docs/api.md "Webhooks", "Pruning"; `Webhooks::prune_outbox`).
CREATE INDEX webhook_outbox_done ON webhook_outbox (COALESCE(delivered_at, failed_at))
    WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL;
