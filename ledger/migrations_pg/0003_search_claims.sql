-- Search and claims on Postgres (docs/ledger.md "Search", "History"), as SQLite's 0009_search_claims.
--
-- 1. History rows of kind `claim` and `release`.
ALTER TABLE history DROP CONSTRAINT history_kind_check;
ALTER TABLE history ADD CONSTRAINT history_kind_check CHECK (kind IN ('approval', 'intent', 'settlement',
    'cancellation', 'reconciliation', 'metadata', 'attempt', 'note', 'imported', 'claim', 'release'));
CREATE INDEX history_staff_by_entry ON history (entry_seq, kind, id) WHERE kind IN ('note', 'claim', 'release');

-- 2. Search: `pg_trgm` GIN indexes serve `ILIKE '%text%'` on session keys, mutation ids, titles and resource
--    ids. The extension is created when the ledger's role may (a trusted extension since Postgres 13: the
--    database's owner or a role with CREATE on it); it may live in any schema of the database (one
--    database can hold several ledgers, each in a schema of its own), so its operator class is looked up,
--    not assumed on the search_path. Without it, search still answers, by scanning.
DO $$
DECLARE
    ops text;
BEGIN
    -- In `public` when the role may create it there: an extension made in this ledger's own schema
    -- goes with that schema (DROP SCHEMA … CASCADE), and with it the search indexes of every other
    -- ledger of the database that uses it.
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
    EXCEPTION WHEN OTHERS THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
        EXCEPTION WHEN OTHERS THEN
            RAISE NOTICE 'pg_trgm is not available (%): search scans instead of using an index', SQLERRM;
        END;
    END;
    SELECT quote_ident(n.nspname) || '.gin_trgm_ops' INTO ops
        FROM pg_opclass c
        JOIN pg_namespace n ON n.oid = c.opcnamespace
        JOIN pg_am a ON a.oid = c.opcmethod
        WHERE c.opcname = 'gin_trgm_ops' AND a.amname = 'gin'
        ORDER BY n.nspname = current_schema() DESC
        LIMIT 1;
    IF ops IS NOT NULL THEN
        EXECUTE format('CREATE INDEX sessions_search ON sessions USING gin (session_key %s)', ops);
        EXECUTE format('CREATE INDEX entries_search ON entries USING gin '
            '(mutation_id %1$s, meta_title %1$s, meta_id %1$s)', ops);
    END IF;
END
$$;

-- 3. Search reads sessions newest first (by creation, then key): its probe of the newest sessions
--    (docs/ledger.md "Search") walks this index.
CREATE INDEX sessions_by_creation ON sessions (created_at DESC, session_key);
