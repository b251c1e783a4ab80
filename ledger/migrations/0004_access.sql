-- Who may see what (docs/access.md). Secrets are never stored in clear: passwords as Argon2id PHC strings,
-- random tokens and sign-in ids as SHA-256 hex. Times are milliseconds since the Unix epoch (UTC).

CREATE TABLE staff (
    name          TEXT PRIMARY KEY NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);

-- Staff API tokens (`Authorization: Bearer`), any number per account.
CREATE TABLE staff_tokens (
    token_hash TEXT PRIMARY KEY NOT NULL,
    staff_name TEXT NOT NULL REFERENCES staff (name) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
);
CREATE INDEX staff_tokens_by_staff ON staff_tokens (staff_name);

-- Server-kept sign-in sessions (the browser holds the random id in a cookie); idle expiry counts from
-- `last_seen_at`.
CREATE TABLE sign_ins (
    id_hash      TEXT PRIMARY KEY NOT NULL,
    staff_name   TEXT NOT NULL REFERENCES staff (name) ON DELETE CASCADE,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL
);
CREATE INDEX sign_ins_by_staff ON sign_ins (staff_name);

-- Viewer links: one session each; deleting the session deletes (revokes) its links.
CREATE TABLE viewer_links (
    token_hash  TEXT PRIMARY KEY NOT NULL,
    session_key TEXT NOT NULL REFERENCES sessions (session_key) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX viewer_links_by_session ON viewer_links (session_key);
