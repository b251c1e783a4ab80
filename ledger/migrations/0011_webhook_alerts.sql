-- When staff were alerted about an operation (docs/api.md "Webhooks", "Alerted"): the outbox is read by
-- operation, for the support queue's page and the operation page.
CREATE INDEX webhook_outbox_by_entry ON webhook_outbox (entry_seq, delivered_at);
