-- The ledger's id (docs/api.md "The ledger's id"): random, made once when the ledger is created (or
-- upgraded to this version), the same for every instance on one database. Hosts derive idempotency keys
-- from it, so that keys are distinct across ledgers.
CREATE TABLE ledger_identity (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    ledger_id TEXT NOT NULL
);
INSERT INTO ledger_identity (id, ledger_id) VALUES (1, lower(hex(randomblob(16))));
