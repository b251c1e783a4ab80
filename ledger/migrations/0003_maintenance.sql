-- One-off maintenance tasks the ledger ran on this database, so each runs once. `metadata_at_rest`:
-- host metadata written before it was sanitised on write was sanitised in place (docs/ledger.md "Files").

CREATE TABLE maintenance (
    task    TEXT PRIMARY KEY NOT NULL,
    done_at INTEGER NOT NULL
);
