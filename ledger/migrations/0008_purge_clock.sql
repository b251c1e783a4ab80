-- The purge's own clock (docs/ledger.md "Retention"): the "now" its last sweep used, in ms since the Unix
-- epoch. A sweep's now is min(wall clock, this + 2 x the monotonic time since this process's previous sweep),
-- so a restart with the wall clock far ahead deletes nothing until the server has run that long.
CREATE TABLE purge_clock (
    id    INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    at_ms INTEGER NOT NULL
);
