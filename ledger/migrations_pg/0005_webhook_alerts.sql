-- As SQLite's migration 0011: the outbox read by operation (docs/api.md "Webhooks", "Alerted").
CREATE INDEX webhook_outbox_by_entry ON webhook_outbox (entry_seq, delivered_at);
