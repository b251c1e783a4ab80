-- Pruning the webhook outbox (docs/api.md "Webhooks", "Pruning"; `Webhooks::prune_outbox`): rows
-- delivered or given up are found by the time they were finished, through this index of finished rows
-- only (pending rows are never pruned, and are not in it).
CREATE INDEX webhook_outbox_done ON webhook_outbox (COALESCE(delivered_at, failed_at))
    WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL;
