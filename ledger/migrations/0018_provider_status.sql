-- The provider's own status of the original attempt, when the host passed it through with a
-- reconciliation's evidence (docs/api.md "Reconciliation", issue 40 "Status checks"): `completed` or
-- `not_accepted`, agreeing with `completed`. NULL when the host gave none, and on every row recorded
-- before this version. Kept with the evidence and on the reconciliation's history row.
ALTER TABLE reconciliations ADD COLUMN provider_status TEXT
    CHECK (provider_status IN ('completed', 'not_accepted'));
ALTER TABLE history ADD COLUMN provider_status TEXT
    CHECK (provider_status IN ('completed', 'not_accepted'));
