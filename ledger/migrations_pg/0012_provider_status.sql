-- The provider's status of a reconciliation's evidence on Postgres, as SQLite's 0018_provider_status.
ALTER TABLE reconciliations ADD COLUMN provider_status TEXT
    CHECK (provider_status IN ('completed', 'not_accepted'));
ALTER TABLE history ADD COLUMN provider_status TEXT
    CHECK (provider_status IN ('completed', 'not_accepted'));
