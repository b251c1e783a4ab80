-- Indexes for reads that cost what they return (docs/ledger.md "Reading"): history walks a session's
-- turns in recorded order and each turn's entries in recorded order, so a chunk of it is an index range,
-- never a sort of the whole session; a replay after a cursor reads the turn's open unknowns from their own
-- (partial) index and the rest from the revision index, never the whole turn.

CREATE INDEX turns_by_session ON turns (session_key, turn_seq);
CREATE INDEX entries_by_turn_seq ON entries (session_key, logical_turn_id, seq);
CREATE INDEX entries_open_unknown_by_turn ON entries (session_key, logical_turn_id, revision)
    WHERE status IN ('outcome_unknown', 'execution_started');
