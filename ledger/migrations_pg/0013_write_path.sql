-- The write path on Postgres (issue 45; docs/ledger.md "Backends", "The write path on Postgres"), as
-- SQLite's 0019_write_path.
--
-- 1. The searched text moves out of the rows every write rewrites. A settle updates its entry's status and
--    revision, and every group updates its sessions' `last_write_at`: all three are indexed, so no such
--    update is HOT, and an update that is not HOT inserts the new row version into EVERY index of the
--    table, the trigram GIN indexes of `0003` included (about 40 trigrams per entry, one pending-list
--    entry each, then merged into the index by whichever write finds the list full). The text a trigram
--    index serves is now kept in tables of its own, written when an entry or session is inserted and when
--    an entry's title or resource id changes (never by a settle), and searched there
--    (ledger/src/search/mod.rs). Their rows go with their entry's or session's (ON DELETE CASCADE).
CREATE TABLE entries_search_text (
    seq         BIGINT PRIMARY KEY REFERENCES entries (seq) ON DELETE CASCADE,
    mutation_id TEXT COLLATE "C" NOT NULL,
    meta_title  TEXT,
    meta_id     TEXT
);
INSERT INTO entries_search_text (seq, mutation_id, meta_title, meta_id)
    SELECT seq, mutation_id, meta_title, meta_id FROM entries;

CREATE TABLE sessions_search_text (
    session_key TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions (session_key) ON DELETE CASCADE
);
INSERT INTO sessions_search_text (session_key) SELECT session_key FROM sessions;

-- A group inserts its new entries and sessions in one statement each: one trigger call per statement,
-- over its transition table.
CREATE FUNCTION entries_search_text_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO entries_search_text (seq, mutation_id, meta_title, meta_id)
        SELECT seq, mutation_id, meta_title, meta_id FROM inserted;
    RETURN NULL;
END
$$;
CREATE TRIGGER entries_search_text_insert AFTER INSERT ON entries
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    EXECUTE FUNCTION entries_search_text_insert();

-- Only a change of what is searched is written: the group's UPDATE names every column, so the trigger's
-- condition compares the values (checked for each row without calling the function; a settle leaves the
-- title and resource id as they were). `mutation_id` never changes.
CREATE FUNCTION entries_search_text_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE entries_search_text SET meta_title = NEW.meta_title, meta_id = NEW.meta_id
        WHERE seq = NEW.seq;
    RETURN NULL;
END
$$;
CREATE TRIGGER entries_search_text_update AFTER UPDATE OF meta_title, meta_id ON entries
    FOR EACH ROW WHEN (OLD.meta_title IS DISTINCT FROM NEW.meta_title
                       OR OLD.meta_id IS DISTINCT FROM NEW.meta_id)
    EXECUTE FUNCTION entries_search_text_update();

CREATE FUNCTION sessions_search_text_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO sessions_search_text (session_key) SELECT session_key FROM inserted;
    RETURN NULL;
END
$$;
CREATE TRIGGER sessions_search_text_insert AFTER INSERT ON sessions
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    EXECUTE FUNCTION sessions_search_text_insert();

-- The trigram indexes on the new tables (when `pg_trgm` is there, its operator class found as in `0003`),
-- and none on `entries` and `sessions` any more.
DROP INDEX IF EXISTS entries_search;
DROP INDEX IF EXISTS sessions_search;
DO $$
DECLARE
    ops text;
BEGIN
    SELECT quote_ident(n.nspname) || '.gin_trgm_ops' INTO ops
        FROM pg_opclass c
        JOIN pg_namespace n ON n.oid = c.opcnamespace
        JOIN pg_am a ON a.oid = c.opcmethod
        WHERE c.opcname = 'gin_trgm_ops' AND a.amname = 'gin'
        ORDER BY n.nspname = current_schema() DESC
        LIMIT 1;
    IF ops IS NOT NULL THEN
        EXECUTE format('CREATE INDEX sessions_search ON sessions_search_text USING gin (session_key %s)', ops);
        EXECUTE format('CREATE INDEX entries_search ON entries_search_text USING gin '
            '(mutation_id %1$s, meta_title %1$s, meta_id %1$s)', ops);
    END IF;
END
$$;

-- 2. The webhook trigger (`0010`) reads nothing more when no endpoint is enabled: before, each settlement
--    or cancellation row looked in the entry's history for the ledger's own settlement first, then found
--    no endpoint to queue for. The same events are queued when there is one.
CREATE OR REPLACE FUNCTION webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    t TEXT;
    late BOOLEAN;
BEGIN
    -- Without an enabled endpoint no event is queued: nothing else is read (a settle's cost, issue 45).
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL) THEN
        RETURN NULL;
    END IF;
    late := NEW.kind IN ('settlement', 'cancellation') AND NEW.actor = 'host' AND EXISTS (
        SELECT 1 FROM history h WHERE h.entry_seq = NEW.entry_seq AND h.kind = 'settlement'
            AND h.actor = 'ledger' AND h.attempt_id IS NOT DISTINCT FROM NEW.attempt_id);
    IF NEW.kind = 'reconciliation' THEN
        t := 'outcome.resolved';
    ELSIF NEW.kind = 'settlement' AND NEW.ledger_status = 'outcome_unknown' AND NOT late THEN
        t := 'outcome.unknown';
    ELSIF late AND NEW.ledger_status <> 'outcome_unknown' THEN
        t := 'outcome.resolved';
    ELSE
        RETURN NULL;
    END IF;
    INSERT INTO webhook_outbox (endpoint_id, event, msg_id, entry_seq, session_key, logical_turn_id,
                                mutation_id, tool, status, age_secs, at, next_attempt_at)
    SELECT w.id, t, 'msg_' || md5(random()::text || clock_timestamp()::text || w.id::text), e.seq,
           e.session_key, e.logical_turn_id, e.mutation_id, e.tool, NEW.ledger_status,
           CASE WHEN t = 'outcome.resolved' THEN
               COALESCE(GREATEST(0, (NEW.at - (SELECT MAX(h.at) FROM history h WHERE h.entry_seq = NEW.entry_seq
                   AND h.kind = 'settlement' AND h.ledger_status = 'outcome_unknown')) / 1000), 0)
           ELSE 0 END,
           NEW.at, NEW.at
    FROM webhook_endpoints w JOIN entries e ON e.seq = NEW.entry_seq
    WHERE w.disabled_at IS NULL AND position(',' || t || ',' IN ',' || w.events || ',') > 0;
    RETURN NULL;
END
$$;
