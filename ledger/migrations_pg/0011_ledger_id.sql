-- The ledger's id on Postgres, as SQLite's 0017_ledger_id: 32 random hex digits, made once.
CREATE TABLE ledger_identity (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    ledger_id TEXT NOT NULL
);
INSERT INTO ledger_identity (id, ledger_id) VALUES (1, replace(gen_random_uuid()::text, '-', ''));
