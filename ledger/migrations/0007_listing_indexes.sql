-- The sessions list is paged by keyset in the order it is shown (docs/api.md "Sessions": most recently
-- active first, then by key), so a page is an index range from the previous page's last session, never a
-- sort of every session.

CREATE INDEX sessions_by_activity ON sessions (last_write_at DESC, session_key);
