export interface paths {
    "/api/host/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /api/host/batch` `{"operations": [{"op": "approve", "session_key", …}, …]}` → 200
         *     `{"results": [{"status", "entry"? , "error"?}, …]}`: applied in order, one result each, every applied
         *     operation committed together. An operation that is invalid or refused changes nothing; the rest apply.
         *     At most [`MAX_BATCH_OPERATIONS`].
         */
        post: operations["batch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/ledger": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/host/ledger` → 200 `{"ledger_id"}` (docs/api.md "The ledger's id"); 401 without the host
         *     token.
         */
        get: operations["ledger_identity"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** `DELETE /api/host/sessions/{session_key}` → 204; 404 when there is no such session. */
        delete: operations["delete_session"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/mutations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /api/host/sessions/{session_key}/mutations` `{"logical_turn_id", "mutation_id", "tool"}` → 201. */
        post: operations["approve"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/mutations/{mutation_id}/attempts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST …/{mutation_id}/attempts` `{"attempt_id", "deadline_secs"?}` → 200: a fresh attempt of a
         *     `not_executed` entry, with its deadline as an intent's.
         */
        post: operations["fresh_attempt"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/mutations/{mutation_id}/cancellation": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST …/{mutation_id}/cancellation` `{"attempt_id", "reason"?}` → 200. */
        post: operations["cancel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/mutations/{mutation_id}/deadline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST …/{mutation_id}/deadline` `{"attempt_id", "deadline_secs"}` → 200: the host still works on
         *     the attempt in flight; its deadline becomes now + `deadline_secs` (1 to 604800), never earlier
         *     than it was. No revision, no event. 409 unless `execution_started` under that attempt
         *     (docs/api.md "Deadlines").
         */
        post: operations["extend_deadline"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/mutations/{mutation_id}/intent": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST …/{mutation_id}/intent` `{"attempt_id", "deadline_secs"?}` → 200: the attempt is in flight
         *     until its host settles it, or until its deadline (`deadline_secs` from now, 1 to 604800; default
         *     the server's `--in-flight-deadline-secs`), when the ledger settles it `outcome_unknown` with
         *     `execution_timeout` itself (docs/api.md "Deadlines").
         */
        post: operations["record_intent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/mutations/{mutation_id}/metadata": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * `PUT …/{mutation_id}/metadata` `{"id", "url", "title"}` → 200. All three are set at once; a
         *     missing or empty one becomes `null`. A field of any size up to the 2 MiB body limit is accepted;
         *     only its sanitised form is stored (truncated or withheld, credentials redacted: `docs/api.md`). An
         *     attach identical to the current metadata once sanitised changes nothing.
         */
        put: operations["attach_metadata"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/mutations/{mutation_id}/reconciliation": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST …/{mutation_id}/reconciliation` `{"attempt_id", "completed", "evidence": {"source",
         *     "reference", "observed_at", "provider_status"?}}` → 200.
         */
        post: operations["reconcile"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/mutations/{mutation_id}/settlement": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST …/{mutation_id}/settlement` `{"attempt_id", "status", "reason"?}` → 200. */
        post: operations["settle"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/host/sessions/{session_key}/viewer-links": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /api/host/sessions/{session_key}/viewer-links` `{"expires_in_secs"?}` → 201
         *     `{"url": "/v/<token>", "expires_at"}`. Errors: 415 (a body not sent as `application/json`; an empty
         *     body needs no `Content-Type`) → 400 (malformed JSON, a key given twice) → 422 (`expires_in_secs` out
         *     of range) → 404 (unknown or expired session).
         */
        post: operations["create"];
        /**
         * `DELETE /api/host/sessions/{session_key}/viewer-links` → 200 `{"revoked": n}`: every link of the
         *     session stops working at once (their open live streams are closed). A session without links revokes 0;
         *     an unknown session is 404.
         */
        delete: operations["revoke"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /api/me` → [`Caller`]. */
        get: operations["me"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/mutation-events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The replay endpoint. */
        get: operations["mutation_events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/mutation-outcomes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/mutation-outcomes?session_id=<key>` → `{"mutation_outcomes": [...]}`, oldest logical turn
         *     first, then in recorded order.
         */
        get: operations["mutation_outcomes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /api/openapi.json`. */
        get: operations["openapi_json"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/operations/{mutation_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/operations/{mutation_id}` → `{"matches": [...]}`: every published outcome with this id; for
         *     a viewer only those of its session, without `notes` (internal to staff).
         */
        get: operations["operation"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/reconciliations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /api/reconciliations` `{"operations": [{"session_key", "mutation_id", "attempt_id"}],
         *     "completed", "evidence"}` → 200 `{"results": [{"session_key", "mutation_id", "attempt_id", "status",
         *     "entry"? | "error"?}], "reconciled", "refused"}` (docs/api.md "Bulk actions"): each operation
         *     reconciled about its own attempt with the one piece of evidence, as staff, in one transaction; each
         *     reconciliation its own history row (and the release of a claim it ends) and live event; a refused
         *     one (`404`, `409` `attempt_mismatch` or `already_settled`, `422` a key) is listed with its error and
         *     changes nothing. Bad evidence or `completed`: 422 naming the field, nothing done; `operations` not 1 to
         *     200 items: 422 naming `operations`.
         */
        post: operations["reconcile_many"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/run-events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The live stream. Subscribes before answering, so a client that then replays misses nothing. The stream
         *     ends when the server shuts down; a client that goes away frees its queue.
         */
        get: operations["run_events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/search?q=<text>[&limit=&after=]` → `{"sessions": [{"session_key", "last_activity",
         *     "counts"}], "operations": [{"session_key", "logical_turn_id", "turn_number", "mutation_id", "tool",
         *     "title", "status", "recorded_at", "settled_at"}], "next", "searched_newest"}` (docs/api.md "Search"):
         *     sessions that have not expired whose key contains `q`, and their published operations whose
         *     `mutation_id`, title or resource id contains it, each newest first and case-insensitively; a `q` of
         *     1 or 2 characters is looked for among the newest 20,000 operations and sessions only, and the page
         *     that reaches that bound while older ones exist says `searched_newest: 20000` (else `null`). At most
         *     `limit` of each (1 to 100, default 20), after `after` (the previous answer's `next`). `q` may carry
         *     the marked form of invisible characters (`⟨U+200B⟩`). Errors: 400 (`invalid_parameter` naming `q` or
         *     `limit`, `invalid_cursor` naming `after`, `invalid_query`); a viewer gets 404 `not_found`.
         */
        get: operations["search"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/sessions[?limit=&after=&has_unknown=&tool=&prefix=]` → `{"sessions": [{"session_key",
         *     "created_at", "last_activity", "turn_count", "counts"}], "next", "total"}` (docs/api.md "Sessions"):
         *     sessions that have not expired, most recently active first (`last_activity` descending, then by key),
         *     at most `limit` (1 to 200, default 50), after `after` (the previous answer's `next`); `has_unknown`
         *     `true` / `false` keeps the sessions with / without an open unknown (`counts.outcome_unknown` above 0:
         *     settled unknown or in flight); `tool` those with a published entry of that exact tool; `prefix` those
         *     whose key starts with these bytes (`%` and `_` are literal); `active_after` / `active_before` (RFC 3339)
         *     those last active in `[after, before)`. `total` counts every matching session. Errors: 400
         *     (`invalid_parameter` naming `limit`, `has_unknown`, `tool`, `active_after` or `active_before`,
         *     `invalid_cursor` naming `after`, `invalid_query`); a viewer gets 404 `not_found`. A `tool` that could never have been stored
         *     (over 256 bytes, a control character), or a `prefix` holding a control character (U+0000 among
         *     them: no key holds one), matches nothing. Other parameters are ignored.
         */
        get: operations["sessions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/sessions/{session_key}/export[?history=true]` → 200 `application/x-ndjson`, as a download
         *     (`Content-Disposition: attachment`): every `mutation_outcome/v1` record of the session, one a line,
         *     exactly the records and order of `GET /api/mutation-outcomes?session_id=<key>`; with `history=true`,
         *     after them one line per operation of the session (published or not) in the shape of the history API's
         *     answer, in the same order (for a viewer, as the history API answers a viewer: no staff notes, staff
         *     actors as `staff`). Streamed: the server holds one chunk of the read at a time.
         */
        get: operations["export"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/mutations/{mutation_id}/assignment": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /api/sessions/{session_key}/mutations/{mutation_id}/assignment` `{"to": "<staff name>"}` → 201
         *     with the `claim` history row that hands the operation to that staff member (`actor` the caller,
         *     `note` the assignee's name), or 200 with the row that took it when the assignee already holds it;
         *     422 naming `to` for a name that is no staff account; 409 `already_claimed` with `claim` when a third
         *     staff member holds it (release it first); 429 `too_many_claims` as a claim (docs/api.md "Claims").
         *     Sends `claim_changed` to the session's staff streams.
         */
        post: operations["assign"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/mutations/{mutation_id}/claim": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /api/sessions/{session_key}/mutations/{mutation_id}/claim` (no body; one sent is ignored) → 201
         *     with the `claim` history row ("I am on it": `actor` `staff:<name>`, `revision` null), or 200 with the
         *     row that took it when the caller already holds the claim; 409 `already_claimed` with `claim` `{"by",
         *     "at"}` when another staff member holds it; 429 `too_many_claims` with `Retry-After` when the caller
         *     claimed or released this operation 10 times in the last 60 s (docs/api.md "Claims"). No revision; the
         *     entry is unchanged; staff live streams get `claim_changed` (on every instance); a viewer never sees
         *     claims.
         */
        post: operations["claim"];
        /**
         * `DELETE /api/sessions/{session_key}/mutations/{mutation_id}/claim` → 204: the claim is released,
         *     whoever held it (a `release` history row with the caller as actor), or nobody held it (nothing is
         *     written). Errors as the claim's, without 409.
         */
        delete: operations["release"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/mutations/{mutation_id}/history": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/sessions/{session_key}/mutations/{mutation_id}/history[?limit=&after=&order=]` →
         *     `{"session_key", "logical_turn_id", "mutation_id", "commissioned_after", "commissioned", "changes",
         *     "next", "alerted_at"?}` (docs/api.md "Operation history", docs/ledger.md "History"): one page of the
         *     entry's changes, oldest first (`order=newest`: newest first), at most `limit` (1 to 1000, default
         *     500), after `after` (the previous answer's `next`, of the same order); `next` is `null` on the last
         *     page. A viewer reads it without the rows internal to staff (notes, claims, releases: left out by the
         *     read itself, so its pages and `next` count only the rows it sees) and with every staff actor as
         *     `staff` ([`crate::access::without_internal`]). Errors in order: 400 (`invalid_parameter` naming
         *     `limit` or `order`, `invalid_cursor` naming `after`, `invalid_query`, a malformed path) → 404 for an
         *     unknown or expired session (first) or an unknown mutation, including identifiers that could never
         *     have been stored.
         */
        get: operations["operation_history"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/mutations/{mutation_id}/notes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /api/sessions/{session_key}/mutations/{mutation_id}/notes` `{"text"}` → 201 with the history row
         *     the note added (`kind` `note`, `actor` `staff:<name>`, `revision` null). No revision, no live event;
         *     the entry is unchanged.
         */
        post: operations["add_note"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/mutations/{mutation_id}/reconciliation": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /api/sessions/{session_key}/mutations/{mutation_id}/reconciliation` with the host API's body
         *     (`{"attempt_id", "completed", "evidence": {"source", "reference", "observed_at",
         *     "provider_status"?}}`) → 200 with the entry's state: the host's reconciliation, asked by staff.
         */
        post: operations["reconcile_as_staff"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/turns": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/sessions/{session_key}/turns[?limit=&after=&order=]` → `{"session_key", "last_activity",
         *     "counts", "turns": [{"logical_turn_id", "first_recorded_at", "latest_revision", "counts"}], "next",
         *     "total"}` (docs/api.md "Turns"): one page of the session's turns, oldest first (`order=newest`:
         *     newest first), at most `limit` (1 to 1000, default 200), after `after` (the previous answer's
         *     `next`, of the same order); `counts` are the whole session's and `total` its number of turns. Errors
         *     in order: 400 (`invalid_parameter` naming `limit` or `order`, `invalid_cursor` naming `after`,
         *     `invalid_query`, a malformed path) → 404 (`session_not_found`, `session_expired`).
         */
        get: operations["turns"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/turns/{logical_turn_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/sessions/{session_key}/turns/{logical_turn_id}` → `{"session_key", "logical_turn_id",
         *     "number", "first_recorded_at", "total", "previous", "next"}` (docs/api.md "A turn's place"): the
         *     turn's number in its session (1 for the oldest, as the turns API numbers it), the session's number
         *     of turns, and the turns just before and after it (`{"logical_turn_id", "number"}`, `null` at either
         *     end): what the turn page's title and its previous / next links read. Errors in order: 400 (a
         *     malformed query or path) → 404 (`session_not_found`, `session_expired`, `turn_not_found`).
         */
        get: operations["turn_place"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/turns/{logical_turn_id}/entries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/sessions/{session_key}/turns/{logical_turn_id}/entries[?after_revision=N][&limit=n][&after=c]`
         *     → `{"session_key", "logical_turn_id", "latest_revision", "entries": [{"sequence", "mutation_revision",
         *     "outcome", "ledger_status", "recorded_at", "settled_at"}], "next", "counts"?}` (docs/api.md "Turn
         *     entries"): the turn's published entries in recorded order (`sequence`; `order=newest`: newest first,
         *     `next` going on with older ones), and on a first read (neither `after_revision` nor `after`) the
         *     turn's counts read in the same transaction; with `after_revision` only those whose
         *     `mutation_revision` is above N (legacy entries without a revision only without it), in flight ones
         *     included, so a page catches up after a `turn_changed` hint. `latest_revision` is always the turn's
         *     latest. At most `limit` entries (1 to 1000, default 1000); `next` is the opaque cursor of the next
         *     page (`?after=`, the other parameters unchanged), `null` on the last. Errors in order: 400
         *     (`invalid_cursor` naming `after_revision` or `after`, `invalid_parameter` naming `limit` or `order`, a malformed
         *     query or path) → 404 (`session_not_found`, `session_expired`, `turn_not_found`) → 409
         *     (`cursor_ahead` naming `after_revision`: above the turn's latest revision).
         */
        get: operations["turn_entries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/sessions/{session_key}/turns/{logical_turn_id}/timeline.svg": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/sessions/{session_key}/turns/{logical_turn_id}/timeline.svg` → `image/svg+xml` (docs/api.md
         *     "A turn's timeline"): the turn's first [`MAX_BARS`] writes in recorded order, each a bar from its
         *     intent to its settlement on one time axis, coloured by status, in-flight bars growing ([`render`]),
         *     with a `<title>` and `<desc>` in words. Read as the turn's entries are, by whoever may read them. Its
         *     `Content-Security-Policy` lets its own `<style>` apply and nothing else
         *     ([`crate::http::security::SVG_POLICY`]). Errors (JSON) in order: 400 (a malformed query or path) → 404
         *     (`session_not_found`, `session_expired`, `turn_not_found`).
         */
        get: operations["turn_timeline"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/unknowns": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /api/unknowns[?limit=&after=&tool=&session_key=&min_age_secs=&tool_like=&session_like=
         *     &settled_after=&settled_before=&sort=&order=]` → `{"matches": [{"session_key", "entry", "age_secs",
         *     "notes", "last_note"?, "claim"?}], "next", "total"}` (docs/api.md "Support queue"): open unknown
         *     outcomes (settled unknown and in flight) across sessions, by default oldest recorded first
         *     (`recorded_at`, then `sequence`; `sort=age|tool|session`, `order=asc|desc`), at most `limit` (1 to
         *     1000, default 200), after `after` (the previous answer's `next`, of the same order); `tool` and
         *     `session_key` exact; `tool_like` and `session_like` case-insensitive substrings (1 to 256 bytes);
         *     `min_age_secs` (whole seconds, 0 to 2^63-1) only items whose `age_secs` is known and at least that;
         *     `settled_after` / `settled_before` (RFC 3339) only items settled in that range. `total` counts every
         *     matching item. Errors: 400 (`invalid_parameter` naming the parameter, `invalid_cursor` naming `after`,
         *     `invalid_query`); a viewer gets 404 `not_found`. A `tool` or `session_key` that could never have been
         *     stored matches nothing. Other parameters are ignored.
         */
        get: operations["unknowns"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /healthz` → 200 `{"status": "ok"}`; while the ledger's storage refuses writes (a full disk,
         *     docs/ledger.md "Storage faults") 503 with `Retry-After` and `{"status": "unavailable", "reason":
         *     "storage_full" | "storage_unavailable", "message", "since"}` (`since`: RFC 3339 UTC, the first
         *     refused write). It turns 200 by itself once a write or its probe write succeeds.
         */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /metrics` (docs/api.md "Metrics"): the Prometheus text exposition, `text/plain; version=0.0.4`.
         *     Who may read it: any caller of the read APIs but a viewer (404, as the other cross-session reads);
         *     without a credential 401 where reads are closed (docs/access.md). Errors: the ledger's gauges could
         *     not be read (503 `busy` / `unavailable`, 500), as every read.
         */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description `{"logical_turn_id", "mutation_id", "tool", "commissioned_after"?, "traceparent"?}`: identifiers, and
         *     the host's W3C trace context.
         */
        ApproveBody: {
            commissioned_after?: null | components["schemas"]["Identifier"];
            logical_turn_id: components["schemas"]["Identifier"];
            mutation_id: components["schemas"]["Identifier"];
            tool: components["schemas"]["Identifier"];
            /**
             * @description The host's W3C Trace Context `traceparent` of the tool call (`00-<32 hex trace id>-<16 hex parent
             *     id>-<2 hex flags>`, lowercase): the OpenTelemetry span `mutation_outcome {tool}` becomes a child of
             *     that span (docs/operations.md "OpenTelemetry"). Malformed (wrong length, not hex, an all-zero id,
             *     version `ff`) is 422 naming `traceparent`.
             * @example 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
             */
            traceparent?: string | null;
        };
        /** @description `{"to"}`: the staff member an operation's claim is handed to (docs/api.md "Claims"). */
        AssignBody: {
            /**
             * @description A staff account's name (1 to 64 ASCII letters, digits, `.`, `_`, `-`, `@`); no such account is
             *     422 naming `to`.
             */
            to: string;
        };
        /**
         * @description `{"attempt_id", "deadline_secs"?}`: the attempt, and how long it may stay in flight before the ledger
         *     settles it `outcome_unknown` itself (docs/api.md "Deadlines"; default the server's
         *     `--in-flight-deadline-secs`).
         */
        AttemptBody: {
            attempt_id: components["schemas"]["Identifier"];
            /**
             * Format: int32
             * @description Seconds from now, 1 to 604800 (7 days); anything else is 422 naming `deadline_secs`.
             */
            deadline_secs?: number | null;
        };
        /** @description `{"operations": [...]}`: 0 to 1,000 batch items. */
        BatchBody: {
            operations: components["schemas"]["BatchItem"][];
        };
        BatchItem: ({
            /** @enum {string} */
            op: "approve";
            session_key: components["schemas"]["Identifier"];
        } & components["schemas"]["ApproveBody"]) | ({
            mutation_id: components["schemas"]["Identifier"];
            /** @enum {string} */
            op: "intent";
            session_key: components["schemas"]["Identifier"];
        } & components["schemas"]["AttemptBody"]) | ({
            mutation_id: components["schemas"]["Identifier"];
            /** @enum {string} */
            op: "settle";
            session_key: components["schemas"]["Identifier"];
        } & components["schemas"]["SettleBody"]) | ({
            mutation_id: components["schemas"]["Identifier"];
            /** @enum {string} */
            op: "cancel";
            session_key: components["schemas"]["Identifier"];
        } & components["schemas"]["CancelBody"]) | ({
            mutation_id: components["schemas"]["Identifier"];
            /** @enum {string} */
            op: "reconcile";
            session_key: components["schemas"]["Identifier"];
        } & components["schemas"]["ReconcileBody"]) | ({
            mutation_id: components["schemas"]["Identifier"];
            /** @enum {string} */
            op: "metadata";
            session_key: components["schemas"]["Identifier"];
        } & components["schemas"]["MetadataBody"]) | ({
            mutation_id: components["schemas"]["Identifier"];
            /** @enum {string} */
            op: "attempt";
            session_key: components["schemas"]["Identifier"];
        } & components["schemas"]["AttemptBody"]) | ({
            mutation_id: components["schemas"]["Identifier"];
            /** @enum {string} */
            op: "deadline";
            session_key: components["schemas"]["Identifier"];
        } & components["schemas"]["DeadlineBody"]);
        /**
         * @description One result of a batch: the entry on success, the error otherwise, with the status the single call
         *     would have answered.
         */
        BatchResult: {
            entry?: null | components["schemas"]["EntryState"];
            error?: null | components["schemas"]["ErrorDetail"];
            /** Format: int32 */
            status: number;
        };
        /** @description `POST /api/host/batch` answer: `{"results": [...]}`, one per operation, in order. */
        BatchResults: {
            results: components["schemas"]["BatchResult"][];
        };
        /** @description `{"results", "reconciled", "refused"}`. */
        BulkAnswer: {
            /** @description How many were reconciled. */
            reconciled: number;
            /** @description How many were refused. */
            refused: number;
            /** @description One per operation, in the order sent. */
            results: components["schemas"]["BulkResult"][];
        };
        /**
         * @description One operation of a bulk reconciliation: its keys and the attempt the evidence is about (the attempt
         *     the queue showed; another is refused 409 `attempt_mismatch`, as one reconciliation).
         */
        BulkOperation: {
            attempt_id: string;
            mutation_id: string;
            session_key: string;
        };
        /**
         * @description `{"operations": [...], "completed", "evidence": {"source", "reference", "observed_at",
         *     "provider_status"?}}`: one piece of evidence for 1 to 200 operations.
         */
        BulkReconcileBody: {
            /** @description Whether the provider shows the original attempts took effect. */
            completed: boolean;
            /** @description As a reconciliation's `evidence` (docs/api.md "Host write API"). */
            evidence: Record<string, never>;
            /** @description 1 to 200 operations, each with the attempt the evidence is about. */
            operations: components["schemas"]["BulkOperation"][];
        };
        /** @description What came of one operation of a bulk action. */
        BulkResult: {
            attempt_id?: string | null;
            entry?: null | components["schemas"]["EntryState"];
            error?: null | components["schemas"]["ErrorDetail"];
            mutation_id: string;
            session_key: string;
            /**
             * Format: int32
             * @description The status the single action would have answered: 200 done, else its error's (404, 409, 422).
             */
            status: number;
        };
        /** @description `GET /api/me`: who the caller is, as the page header shows it (docs/access.md). */
        Caller: {
            /** @description `open` (no credential, reads are open), `host`, `staff` or `viewer`. */
            access: string;
            /** @description Whether signing out ends this access (a sign-in or viewer cookie; not a token or an SSO proxy). */
            can_sign_out: boolean;
            /** @description The staff name (staff only). */
            name?: string | null;
            /** @description The one session a viewer may read (viewer only). */
            session_key?: string | null;
        };
        /** @description `{"attempt_id", "reason"?}`: `reason` is only `pre_dispatch_deadline`. */
        CancelBody: {
            attempt_id: components["schemas"]["Identifier"];
            reason?: null | components["schemas"]["CancelReason"];
        };
        /**
         * @description The one reason of a cancellation (documentation only).
         * @enum {string}
         */
        CancelReason: "pre_dispatch_deadline";
        /**
         * @description A staff member's claim on an operation (docs/api.md "Claims"): who holds it (the staff name) and since
         *     when (RFC 3339 UTC).
         */
        Claim: {
            at: string;
            by: string;
        };
        /**
         * @description `{"attempt_id", "deadline_secs"}`: the host still works on the attempt in flight; its deadline becomes
         *     now + `deadline_secs`, never earlier than it was (docs/api.md "Deadlines").
         */
        DeadlineBody: {
            attempt_id: components["schemas"]["Identifier"];
            /**
             * Format: int32
             * @description Seconds from now, 1 to 604800 (7 days); anything else is 422 naming `deadline_secs`.
             */
            deadline_secs: number;
        };
        /** @description The ledger state of one entry as the host write API reports it (success body, and `current` on a 409). */
        EntryState: {
            attempt_id?: string | null;
            intent_recorded: boolean;
            ledger_status: components["schemas"]["LedgerStatus"];
            logical_turn_id: string;
            mutation_id: string;
            reason?: null | components["schemas"]["Reason"];
            /** Format: int64 */
            revision?: number | null;
            session_key: string;
        };
        /** @description Every error body of the HTTP API: `{"error": {"code", "message", "field"?, "current"?}}`. */
        ErrorBody: {
            error: components["schemas"]["ErrorDetail"];
        };
        /** @description See [`ErrorBody`]. `current` is the entry's state on a 409 refusal. */
        ErrorDetail: {
            claim?: null | components["schemas"]["Claim"];
            code: string;
            current?: null | components["schemas"]["EntryState"];
            field?: string | null;
            message: string;
        };
        /**
         * @description Who established the outcome of a reconciliation (docs/api.md "Deadlines"), derived from its actor and
         *     its evidence's `source` so that no page parses free text: `staff` (a staff member), `status_check` (a
         *     host's status check: source `status:<tool>`), `late_answer` (the MCP proxy's late answer: source
         *     starting `mcp-late-answer`), `host` (any other host evidence).
         * @enum {string}
         */
        EstablishedBy: "staff" | "status_check" | "late_answer" | "host";
        /**
         * @description One change of an entry, as the history API lists it (oldest first; `SessionManager::operation_history`,
         *     docs/ledger.md "History"). Every field is present (`null` where it does not apply): `at` is RFC 3339 UTC; `revision` the
         *     revision the change took (`null` for `approval`, `note` and `imported`); `actor` is `host` or
         *     `staff:<name>`; `attempt_id`, `ledger_status` and `reason` are the entry's after the change; `evidence`
         *     is set on `reconciliation` only, `note` (1 to 4096 bytes) on `note` only; `outcome` is the published
         *     `mutation_outcome/v1` record as of the change, projected on read, `null` while nothing is published
         *     (approved, never started).
         */
        HistoryChange: {
            actor: string;
            at: string;
            attempt_id?: string | null;
            /**
             * @description The entry's deadline after the change (RFC 3339 UTC, docs/api.md "Deadlines"), `null` when it had
             *     none.
             */
            deadline_at?: string | null;
            established_by?: null | components["schemas"]["EstablishedBy"];
            evidence?: null | components["schemas"]["HistoryEvidence"];
            kind: components["schemas"]["HistoryKind"];
            ledger_status: components["schemas"]["LedgerStatus"];
            note?: string | null;
            outcome?: null | components["schemas"]["MutationOutcome"];
            reason?: null | components["schemas"]["Reason"];
            /** Format: int64 */
            revision?: number | null;
            settled_by?: null | components["schemas"]["SettledBy"];
        };
        /**
         * @description The evidence a reconciliation recorded: the provider, its reference for the original operation, when
         *     it observed the status (RFC 3339, as sent), and the provider's own status of the original attempt
         *     when the host passed it through. A viewer (an end user) gets `observed_at` only: the free text
         *     (`source`, `reference`) was typed by staff or a host for staff, and its row's `established_by` says
         *     who established the outcome (docs/access.md "Viewer links"); empty here means absent on the wire (a
         *     recorded source and reference are never empty).
         */
        HistoryEvidence: {
            observed_at: string;
            /**
             * @description `completed` or `not_accepted` (agreeing with the reconciliation), as the host sent it. Absent when
             *     the host gave none, and on reconciliations recorded before the ledger kept it.
             */
            provider_status?: string | null;
            /** @description Absent for a viewer. */
            reference?: string;
            /** @description Absent for a viewer. */
            source?: string;
        };
        /**
         * @description What a change of an entry was (docs/ledger.md "History"): one per action, and `imported` for an entry
         *     imported from before revisions existed.
         * @enum {string}
         */
        HistoryKind: "approval" | "intent" | "settlement" | "cancellation" | "reconciliation" | "metadata" | "attempt" | "note" | "imported" | "claim" | "release";
        /** @description 1 to 256 bytes of UTF-8 (maxLength counts characters: 256 for ASCII), no control character, not `.` or `..` */
        Identifier: string;
        /** @description `{"ledger_id"}`: the ledger's id, 32 lowercase hex digits. */
        LedgerIdentity: {
            /**
             * @description Random, made once when the ledger was created, the same for every instance on one database:
             *     hosts derive idempotency keys from it (docs/api.md "The ledger's id").
             */
            ledger_id: string;
        };
        /**
         * @description Ledger status of an entry (docs/ledger.md "Entries and their states"). Not published as such: the projection
         *     maps it, with the intent flag, to a [`PublishedStatus`].
         * @enum {string}
         */
        LedgerStatus: "approved" | "execution_started" | "completed" | "failed" | "outcome_unknown";
        /** @description `{"id", "url", "title"}`: each a string of any size up to the body limit, or null. */
        MetadataBody: {
            id?: string | null;
            title?: string | null;
            url?: string | null;
        };
        /**
         * @description One `mutation_outcome/v1` record (seed 000, "Record"). `resource_id`, `url` and `title` are always
         *     present (`null` until host metadata is attached, or when withheld); `reason` is absent unless it applies.
         */
        MutationOutcome: {
            logical_turn_id: string;
            mutation_id: string;
            reason?: null | components["schemas"]["Reason"];
            resource_id?: string | null;
            schema: string;
            status: components["schemas"]["PublishedStatus"];
            title?: string | null;
            tool: string;
            url?: string | null;
        };
        /** @description `GET /api/mutation-outcomes` body: `{"mutation_outcomes": [...]}`. */
        MutationOutcomes: {
            mutation_outcomes: components["schemas"]["MutationOutcome"][];
        };
        /** @description `{"text"}`: a staff note, 1 to 4096 bytes without U+0000 (docs/api.md "Operator actions"). */
        NoteBody: {
            /**
             * @description 1 to 4096 bytes of UTF-8 (maxLength counts characters: 4096 for ASCII) without U+0000 (NUL); any
             *     other length, or a NUL, is 422 naming `text`.
             */
            text: string;
        };
        /**
         * @description The history API's body (`SessionManager::operation_history_page`, docs/ledger.md "History", docs/api.md
         *     "Operation history"): the entry, the mutation it was commissioned after (`null`: none), the mutations
         *     of the session commissioned after it (approval order), and one page of the changes it went through,
         *     oldest first (newest first with `order=newest`), with `next`, the cursor of the following page. The
         *     export's lines carry every change, `next` `null`.
         */
        OperationHistory: {
            /**
             * @description When staff were first alerted about the entry's current unknown outcome (RFC 3339 UTC), as
             *     [`OperationMatch::alerted_at`]. Absent when none was delivered, and for a viewer.
             */
            alerted_at?: string | null;
            changes: components["schemas"]["HistoryChange"][];
            claim?: null | components["schemas"]["Claim"];
            commissioned: string[];
            commissioned_after?: string | null;
            logical_turn_id: string;
            mutation_id: string;
            /**
             * @description The opaque cursor of the following page of `changes` (pass it back as `after`, docs/api.md
             *     "Paging"), or `null` on the last page.
             */
            next?: string | null;
            session_key: string;
        };
        /**
         * @description A published operation of [`SearchResults`]: where it is (its session, its turn and the turn's number
         *     in the session, 1 for the oldest, as docs/api.md "Turns" numbers them), its tool, its published title
         *     (or `null`), its published status, when it was recorded and when it settled (RFC 3339 UTC; `null`
         *     while in flight or never started).
         */
        OperationHit: {
            logical_turn_id: string;
            mutation_id: string;
            recorded_at: string;
            session_key: string;
            settled_at?: string | null;
            status: components["schemas"]["PublishedStatus"];
            title?: string | null;
            tool: string;
            /** Format: int64 */
            turn_number: number;
        };
        /**
         * @description One match of a support look-up by `mutation_id` (`GET /api/operations/{mutation_id}`), or one item of the
         *     open-unknowns queue (`GET /api/unknowns`).
         */
        OperationMatch: {
            /**
             * Format: int64
             * @description Whole seconds since the entry entered its open state (`outcome_unknown`, or in flight as
             *     `execution_started`): from the `at` of its latest history row that set its status. `null` when the
             *     entry is not open, or has no history (recorded before history was kept).
             */
            age_secs?: number | null;
            /**
             * @description When staff were first alerted about the entry's current unknown outcome: the earliest delivery
             *     (RFC 3339 UTC) of an `outcome.unknown` or `outcome.unknown_stale` webhook (docs/api.md "Alerted").
             *     Absent when none was delivered, and for a viewer.
             */
            alerted_at?: string | null;
            /**
             * @description The entry's current attempt (the `attempt_id` a host reconciles or settles, as the host write API
             *     names it): on the items of the open-unknowns queue (`GET /api/unknowns`). Absent elsewhere, and
             *     when the entry has no attempt.
             */
            attempt_id?: string | null;
            claim?: null | components["schemas"]["Claim"];
            entry: components["schemas"]["TurnEntry"];
            /**
             * @description The text of the entry's latest staff note. Absent when it has none, and for a viewer (internal to
             *     staff, like `notes`).
             */
            last_note?: string | null;
            /**
             * Format: int64
             * @description How many staff notes the entry's history holds. Absent for a viewer (an end user): notes and
             *     their count are internal to staff (docs/access.md "Viewer links").
             */
            notes?: number | null;
            session_key: string;
        };
        /** @description `GET /api/operations/{mutation_id}` body (the support queue answers [`UnknownsPage`]). */
        OperationMatches: {
            matches: components["schemas"]["OperationMatch"][];
        };
        /**
         * @description Published `status` of a `mutation_outcome/v1` record (seed 000, status table).
         * @enum {string}
         */
        PublishedStatus: "completed" | "failed" | "outcome_unknown" | "not_executed";
        /**
         * @description Optional settlement reason (seed 000, "Starting in 0.23.30"): `pre_dispatch_deadline` goes only with
         *     `not_executed`, `execution_timeout` only with `outcome_unknown`.
         * @enum {string}
         */
        Reason: "pre_dispatch_deadline" | "execution_timeout";
        /** @description authoritative evidence about the original attempt: completed, or not executed */
        ReconcileBody: {
            attempt_id: components["schemas"]["Identifier"];
            /** @enum {boolean} */
            completed: true;
            evidence: {
                /**
                 * Format: date-time
                 * @description RFC 3339, e.g. 2026-11-29T10:00:00Z
                 */
                observed_at: string;
                provider_status?: "completed" | null;
                /** @description not empty or blank (some character that is not Unicode White_Space), without U+0000 */
                reference: string;
                /** @description not empty or blank (some character that is not Unicode White_Space), without U+0000 */
                source: string;
            };
        } | {
            attempt_id: components["schemas"]["Identifier"];
            /** @enum {boolean} */
            completed: false;
            evidence: {
                /**
                 * Format: date-time
                 * @description RFC 3339, e.g. 2026-11-29T10:00:00Z
                 */
                observed_at: string;
                provider_status?: "not_accepted" | null;
                /** @description not empty or blank (some character that is not Unicode White_Space), without U+0000 */
                reference: string;
                /** @description not empty or blank (some character that is not Unicode White_Space), without U+0000 */
                source: string;
            };
        };
        /**
         * @description `GET /api/search` body (docs/api.md "Search"): sessions and published operations whose ids (session
         *     key, `mutation_id`), title or resource id contain the query, case-insensitively, newest first; `next`
         *     is the opaque cursor of the following page (`?after=`), `null` on the last. `searched_newest` is set
         *     (a number of rows, 20,000 by default) on the page where a query shorter than 3 characters reached its
         *     bound: only the newest that many operations, and that many sessions, were searched, and older ones
         *     exist (docs/api.md "Search", "A short query"); `null` otherwise.
         */
        SearchResults: {
            next?: string | null;
            operations: components["schemas"]["OperationHit"][];
            /** Format: int32 */
            searched_newest?: number | null;
            sessions: components["schemas"]["SessionHit"][];
        };
        /**
         * @description One event of a `text/event-stream` answer, as the OpenAPI document describes each event of the stream
         *     (documentation only): its `event:` name, its `data:` (one line of JSON here), and `id:` / `retry:`
         *     where the stream sends them.
         */
        ServerSentEvent: {
            /** @description JSON on one line. */
            data: string;
            /**
             * @description `mutation_outcome`, `turn_changed`, `claim_changed` (staff only), `resync`, `heartbeat`,
             *     `session_ended`.
             */
            event: string;
            /** @description The revision (replay snapshots only). */
            id?: string | null;
            /**
             * Format: int64
             * @description Reconnection delay in ms (replay snapshots only).
             */
            retry?: number | null;
        };
        /** @description A session of [`SearchResults`]: its key, last write (RFC 3339 UTC) and counts by status. */
        SessionHit: {
            counts: components["schemas"]["StatusCounts"];
            last_activity: string;
            session_key: string;
        };
        /**
         * @description `GET /api/sessions` body (docs/api.md "Sessions"): one page, most recently active first; `next` is the
         *     opaque cursor of the following page (`?after=`), `null` on the last; `total` counts every session that
         *     matches the filters (not only this page's).
         */
        SessionList: {
            next?: string | null;
            sessions: components["schemas"]["SessionSummary"][];
            /** Format: int64 */
            total?: number;
        };
        /** @description One row of `GET /api/sessions`. Times are RFC 3339 UTC strings. */
        SessionSummary: {
            counts: components["schemas"]["StatusCounts"];
            created_at: string;
            last_activity: string;
            session_key: string;
            /** Format: int64 */
            turn_count: number;
        };
        /**
         * @description `GET /api/sessions/{key}/turns` body (docs/api.md "Turns"): one page of the session's turns, oldest
         *     first (`order=newest`: newest first); `counts` are the whole session's, `total` its number of turns,
         *     both read in the same transaction as the page; `next` is the opaque cursor of the following page
         *     (`?after=`), `null` on the last.
         */
        SessionTurns: {
            counts?: components["schemas"]["StatusCounts"];
            last_activity: string;
            next?: string | null;
            session_key: string;
            /** Format: int64 */
            total?: number;
            turns: components["schemas"]["TurnSummary"][];
        };
        /** @description how the in-flight attempt settled; `reason` only `execution_timeout`, with `outcome_unknown` */
        SettleBody: {
            attempt_id: components["schemas"]["Identifier"];
            reason?: null;
            /** @enum {string} */
            status: "completed" | "failed";
        } | {
            attempt_id: components["schemas"]["Identifier"];
            reason?: "execution_timeout" | null;
            /** @enum {string} */
            status: "outcome_unknown";
        };
        /**
         * @description Who settled an entry by a settle or a cancellation (docs/api.md "Deadlines"): its host, or the ledger
         *     itself at the entry's deadline (`outcome_unknown` with `execution_timeout`, history actor `ledger`).
         * @enum {string}
         */
        SettledBy: "host" | "ledger";
        /**
         * @description Published counts of one session or turn. `in_flight` counts entries in `execution_started` (published as
         *     `outcome_unknown`, so they are also in `outcome_unknown`).
         */
        StatusCounts: {
            /** Format: int64 */
            completed: number;
            /** Format: int64 */
            failed: number;
            /** Format: int64 */
            in_flight: number;
            /** Format: int64 */
            not_executed: number;
            /** Format: int64 */
            outcome_unknown: number;
        };
        /**
         * @description `GET /api/sessions/{key}/turns/{turn}/entries` body (docs/api.md "Dashboard reads"). `latest_revision`
         *     is the turn's latest revision, the `after_revision` a client catches up from; `entries` are in recorded
         *     order (`sequence`; `order=newest`: newest first); `next` is the opaque cursor of the following page
         *     (`?after=`), `null` on the last. `counts` (the whole turn's, read in the same transaction as the
         *     entries) comes with a first read, one without `after` and without `after_revision`, and is left out
         *     otherwise.
         */
        TurnEntries: {
            counts?: null | components["schemas"]["StatusCounts"];
            entries: components["schemas"]["TurnEntry"][];
            /** Format: int64 */
            latest_revision: number;
            logical_turn_id: string;
            next?: string | null;
            session_key: string;
        };
        /**
         * @description One published entry of a turn, in recorded order. `mutation_revision` is `null` for legacy entries
         *     recorded before revisions existed; `settled_at` is `null` while the entry is in flight.
         */
        TurnEntry: {
            /**
             * @description When the ledger settles the entry `outcome_unknown` (`execution_timeout`) unless its host settles or
             *     extends it first (RFC 3339 UTC, docs/api.md "Deadlines"); kept once settled, `null` before the first
             *     intent.
             */
            deadline_at?: string | null;
            established_by?: null | components["schemas"]["EstablishedBy"];
            ledger_status: components["schemas"]["LedgerStatus"];
            /** Format: int64 */
            mutation_revision?: number | null;
            outcome: components["schemas"]["MutationOutcome"];
            recorded_at: string;
            /** Format: int64 */
            sequence: number;
            settled_at?: string | null;
            settled_by?: null | components["schemas"]["SettledBy"];
        };
        /** @description A neighbouring turn of a [`TurnPlace`]: its id and its number. */
        TurnLink: {
            logical_turn_id: string;
            /** Format: int64 */
            number: number;
        };
        /**
         * @description `GET /api/sessions/{key}/turns/{turn}` body (docs/api.md "A turn's place"): the turn's number in its
         *     session (1 for the oldest, as [`TurnSummary::number`]), when its first entry was recorded, the
         *     session's number of turns, and the turns just before and after it (`null` at either end), all read in
         *     one read transaction.
         */
        TurnPlace: {
            first_recorded_at: string;
            logical_turn_id: string;
            next?: null | components["schemas"]["TurnLink"];
            /** Format: int64 */
            number: number;
            previous?: null | components["schemas"]["TurnLink"];
            session_key: string;
            /**
             * Format: int64
             * @description The session's number of turns.
             */
            total: number;
        };
        /** @description One logical turn of a session, as `GET /api/sessions/{key}/turns` lists it (oldest turn first). */
        TurnSummary: {
            counts: components["schemas"]["StatusCounts"];
            first_recorded_at: string;
            /** Format: int64 */
            latest_revision: number;
            logical_turn_id: string;
            /**
             * Format: int64
             * @description The turn's place in its session: 1 for the oldest (the order `turn_seq` gives); what pages call
             *     "Turn 1" (docs/api.md "Turns").
             */
            number?: number;
        };
        /**
         * @description `GET /api/unknowns` body (docs/api.md "Support queue"): one page of open unknown outcomes, oldest
         *     first; `next` is the opaque cursor of the following page (`?after=`), `null` on the last; `total`
         *     counts every open unknown that matches the filters (not only this page's); `oldest_unknown_age_secs`
         *     is the whole queue's oldest settled unknown, whatever the filters (docs/api.md "Metrics").
         */
        UnknownsPage: {
            /**
             * Format: int64
             * @description How many writes are in flight (`execution_started`) in the whole ledger, whatever the filters and
             *     the `state`: the count of the staff's in-flight view, which the queue links to (docs/api.md
             *     "Deadlines").
             */
            in_flight_total?: number;
            matches: components["schemas"]["OperationMatch"][];
            next?: string | null;
            /**
             * Format: int64
             * @description Whole seconds the oldest open settled unknown (`outcome_unknown`; in flight not included) of the
             *     whole queue has been unknown, whatever the filters: the figure of the metric
             *     `outcomes_unknown_oldest_age_seconds`. `null` when there is none.
             */
            oldest_unknown_age_secs?: number | null;
            /** Format: int64 */
            total?: number;
        };
        /** @description `{"expires_in_secs"?}`; the body may also be empty. */
        ViewerLinkBody: {
            /**
             * Format: int64
             * @description Seconds until the link stops working: 1 to 31,622,400 (366 days); default 604,800 (7 days).
             */
            expires_in_secs?: number | null;
        };
        /** @description A minted link: open `url` on this server (relative); it works until `expires_at`. */
        ViewerLinkCreated: {
            /** @description RFC 3339 UTC. */
            expires_at: string;
            /** @description `/v/<token>`: the token is 32 random bytes, base64url without padding (43 characters). */
            url: string;
        };
        /** @description `{"revoked": n}`: how many links of the session were revoked. */
        ViewerLinksRevoked: {
            /** Format: int64 */
            revoked: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    batch: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BatchBody"];
            };
        };
        responses: {
            /** @description one result per operation, in order */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BatchResults"];
                };
            };
            /** @description malformed JSON, or a key given twice */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing or wrong host token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not sent as `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `operations` missing or too long */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description too many failed tokens from this address; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the ledger is busy; nothing changed; retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    ledger_identity: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the ledger's id */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LedgerIdentity"];
                };
            };
            /** @description missing or wrong host token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_session: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description deleted with its turns and entries */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    approve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ApproveBody"];
            };
        };
        responses: {
            /** @description approved: the entry exists, nothing is published yet */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    fresh_attempt: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AttemptBody"];
            };
        };
        responses: {
            /** @description the entry after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    cancel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CancelBody"];
            };
        };
        responses: {
            /** @description the entry after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    extend_deadline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DeadlineBody"];
            };
        };
        responses: {
            /** @description the entry after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    record_intent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AttemptBody"];
            };
        };
        responses: {
            /** @description the entry after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    attach_metadata: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MetadataBody"];
            };
        };
        responses: {
            /** @description the entry after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    reconcile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReconcileBody"];
            };
        };
        responses: {
            /** @description the entry after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    settle: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SettleBody"];
            };
        };
        responses: {
            /** @description the entry after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
            };
            cookie?: never;
        };
        /** @description optional; an empty body or `null` takes the default lifetime */
        requestBody?: {
            content: {
                "application/json": null | components["schemas"]["ViewerLinkBody"];
            };
        };
        responses: {
            /** @description the link: the token is shown this once, only its hash is stored */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ViewerLinkCreated"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    revoke: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description how many links were revoked */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ViewerLinksRevoked"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or wrong host token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many failed tokens from this address; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    me: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description who the caller is */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Caller"];
                };
            };
            /** @description no credential, and reads are closed */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    mutation_events: {
        parameters: {
            query: {
                /** @description session key */
                session_id: string;
                /** @description logical turn */
                logical_turn_id: string;
                /** @description cursor: a revision, ASCII digits, 0 to 2^63-1; wins over Last-Event-ID */
                after?: number;
            };
            header?: {
                /** @description Cursor, when `after` is absent: a revision, ASCII digits, 0 to 2^63-1. */
                "Last-Event-ID"?: number;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description finite snapshot: `retry:`, events `mutation_outcome` with `id: <revision>`, final `id:` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["ServerSentEvent"];
                };
            };
            /** @description missing parameter or invalid cursor */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session, or unknown turn */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description cursor past the turn's latest revision */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    mutation_outcomes: {
        parameters: {
            query: {
                /** @description session key */
                session_id: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description every retained outcome, oldest logical turn first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MutationOutcomes"];
                };
            };
            /** @description missing or empty parameter, or a malformed query or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session, or unknown turn */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    openapi_json: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description this document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
        };
    };
    operation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description operation id, percent-encoded */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description every published outcome with this operation id (none for an unknown id) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OperationMatches"];
                };
            };
            /** @description malformed path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    reconcile_many: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BulkReconcileBody"];
            };
        };
        responses: {
            /** @description one result per operation, in the order sent, and the counts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkAnswer"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No credential (reads are closed), or a wrong token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `staff_only`: the caller is the host, a viewer, or nobody in open access mode; or
             *     `origin_mismatch`: a sign-in cookie or the proxy's user header without a matching `Origin`.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `too_many_failures`: too many failed tokens from this address; or `too_many_claims`: a claim or
             *     release by a staff member who claimed or released this operation 10 times in the last minute
             *     (nothing changed). Retry after `Retry-After` seconds.
             */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    run_events: {
        parameters: {
            query: {
                /** @description session key */
                session_id: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description long-lived stream: `mutation_outcome` events with data `{"mutation_revision", "outcome"}` (settled changes); after each commit's outcomes one `turn_changed` event with data `{"logical_turn_id", "latest_revision"}` per turn the commit changed visibly (intent included: catch up through the entries API's `after_revision`); `resync` events, `heartbeat` events every 15 s, a `session_ended` event before the stream of a deleted or expired session closes */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["ServerSentEvent"];
                };
            };
            /** @description missing parameter */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description too many live streams (in total or for this session); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    search: {
        parameters: {
            query: {
                /** @description the text: part of a session id, an operation id, a title or a resource id; case-insensitive; 1 or 2 characters are looked for among the newest 20,000 operations and sessions only (`searched_newest`); `⟨U+200B⟩` stands for that invisible character */
                q: string;
                /** @description sessions, and operations, at most: 1 to 100, default 20 */
                limit?: number;
                /** @description opaque cursor: the `next` of the previous page */
                after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the matching sessions and operations, newest first, the next page's cursor or null, and `searched_newest` (the bound a 1- or 2-character query reached on this page, or null) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchResults"];
                };
            };
            /** @description a missing, empty or too long `q`, an invalid `limit` or `after`, or a malformed query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a viewer (who reads one session only) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    sessions: {
        parameters: {
            query?: {
                /** @description sessions at most, 1 to 200, default 50 */
                limit?: number;
                /** @description opaque cursor: the `next` of the previous page */
                after?: string;
                /** @description `true`: only sessions with an open unknown (settled `outcome_unknown` or in flight); `false`: only sessions without one */
                has_unknown?: boolean;
                /** @description only sessions with a published entry of this exact tool */
                tool?: string;
                /** @description only sessions whose key starts with these bytes (`%` and `_` are literal); one holding a control character matches nothing */
                prefix?: string;
                /** @description RFC 3339: only sessions whose last activity is at or after this time */
                active_after?: string;
                /** @description RFC 3339: only sessions whose last activity is before this time */
                active_before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page of the sessions that have not expired, most recently active first, the next page's cursor or null, and how many sessions match */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionList"];
                };
            };
            /** @description invalid `limit`, `after`, `has_unknown`, `tool`, `active_after` or `active_before`, or a malformed query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a viewer (who reads one session only) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    export: {
        parameters: {
            query?: {
                /** @description true: after the records, one line per operation in the shape of the history API's answer; default false */
                history?: boolean;
            };
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description JSON Lines: every record of the session, one a line (as GET /api/mutation-outcomes), then with history=true one operation history a line (as GET /api/sessions/{session_key}/mutations/{mutation_id}/history) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": unknown;
                };
            };
            /** @description history is neither true nor false, or a malformed query or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    assign: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AssignBody"];
            };
        };
        responses: {
            /** @description the assignee already holds the claim: the row that took it */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HistoryChange"];
                };
            };
            /** @description the assignment's `claim` history row (`note`: the assignee) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HistoryChange"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No credential (reads are closed), or a wrong token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `staff_only`: the caller is the host, a viewer, or nobody in open access mode; or
             *     `origin_mismatch`: a sign-in cookie or the proxy's user header without a matching `Origin`.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `too_many_failures`: too many failed tokens from this address; or `too_many_claims`: a claim or
             *     release by a staff member who claimed or released this operation 10 times in the last minute
             *     (nothing changed). Retry after `Retry-After` seconds.
             */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    claim: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the caller already holds the claim: the row that took it */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HistoryChange"];
                };
            };
            /** @description the claim's history row */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HistoryChange"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No credential (reads are closed), or a wrong token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `staff_only`: the caller is the host, a viewer, or nobody in open access mode; or
             *     `origin_mismatch`: a sign-in cookie or the proxy's user header without a matching `Origin`.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `too_many_failures`: too many failed tokens from this address; or `too_many_claims`: a claim or
             *     release by a staff member who claimed or released this operation 10 times in the last minute
             *     (nothing changed). Retry after `Retry-After` seconds.
             */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    release: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description nobody holds the claim now */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No credential (reads are closed), or a wrong token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `staff_only`: the caller is the host, a viewer, or nobody in open access mode; or
             *     `origin_mismatch`: a sign-in cookie or the proxy's user header without a matching `Origin`.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `too_many_failures`: too many failed tokens from this address; or `too_many_claims`: a claim or
             *     release by a staff member who claimed or released this operation 10 times in the last minute
             *     (nothing changed). Retry after `Retry-After` seconds.
             */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    operation_history: {
        parameters: {
            query?: {
                /** @description changes at most, 1 to 1000, default 500 */
                limit?: number;
                /** @description opaque cursor: the `next` of the previous page (of the same `order`) */
                after?: string;
                /** @description `oldest` (default): oldest change first; `newest`: newest change first (`next` goes on with older changes) */
                order?: string;
            };
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
                /** @description operation id, percent-encoded */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page of the entry's changes (oldest first, or newest first with `order=newest`), what it was commissioned after and before, and the next page's cursor or null */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OperationHistory"];
                };
            };
            /** @description invalid `limit`, `after` or `order`, or a malformed query or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session, or unknown mutation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    add_note: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NoteBody"];
            };
        };
        responses: {
            /** @description the history row the note added, as the history API serves it */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HistoryChange"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No credential (reads are closed), or a wrong token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `staff_only`: the caller is the host, a viewer, or nobody in open access mode; or
             *     `origin_mismatch`: a sign-in cookie or the proxy's user header without a matching `Origin`.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `too_many_failures`: too many failed tokens from this address; or `too_many_claims`: a claim or
             *     release by a staff member who claimed or released this operation 10 times in the last minute
             *     (nothing changed). Retry after `Retry-After` seconds.
             */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    reconcile_as_staff: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session key, percent-encoded. */
                session_key: string;
                /** @description Operation id, percent-encoded. */
                mutation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReconcileBody"];
            };
        };
        responses: {
            /** @description the entry after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryState"];
                };
            };
            /** @description Malformed JSON (`malformed_json`), a key given twice (`duplicate_key`), or a malformed path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No credential (reads are closed), or a wrong token. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `staff_only`: the caller is the host, a viewer, or nobody in open access mode; or
             *     `origin_mismatch`: a sign-in cookie or the proxy's user header without a matching `Origin`.
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown or expired session, unknown mutation. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Refused transition; `current` is the unchanged entry. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `unsupported_media_type` (`field` `Content-Type`): a non-empty body not sent as `Content-Type:
             *     application/json` (parameters such as `charset` are accepted).
             */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field breaks a rule; `field` names it. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /**
             * @description `too_many_failures`: too many failed tokens from this address; or `too_many_claims`: a claim or
             *     release by a staff member who claimed or released this operation 10 times in the last minute
             *     (nothing changed). Retry after `Retry-After` seconds.
             */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The ledger is busy; nothing changed; retry after `Retry-After` seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    turns: {
        parameters: {
            query?: {
                /** @description turns at most, 1 to 1000, default 200 */
                limit?: number;
                /** @description opaque cursor: the `next` of the previous page (of the same `order`) */
                after?: string;
                /** @description `oldest` (default): oldest turn first; `newest`: newest turn first */
                order?: string;
            };
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page of the session's turns (oldest first, or newest first with `order=newest`), the whole session's counts, the next page's cursor or null, and the number of turns */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionTurns"];
                };
            };
            /** @description invalid `limit`, `after` or `order`, or a malformed query or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    turn_place: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
                /** @description logical turn, percent-encoded */
                logical_turn_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the turn's number, the session's number of turns, and the turns before and after it (null at either end) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TurnPlace"];
                };
            };
            /** @description a malformed query or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session, or unknown turn */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    turn_entries: {
        parameters: {
            query?: {
                /** @description only entries changed after this revision (ASCII digits, 0 to 2^63-1, at most the turn's latest revision); legacy entries without a revision only without it */
                after_revision?: number;
                /** @description entries at most, 1 to 1000, default 1000 */
                limit?: number;
                /** @description opaque cursor: the `next` of the previous page (of the same `order`) */
                after?: string;
                /** @description `oldest` (default): recorded order; `newest`: newest entry first */
                order?: string;
            };
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
                /** @description logical turn, percent-encoded */
                logical_turn_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the turn's published entries in recorded order (newest first with `order=newest`; `counts` on a first read) (changed after `after_revision` when given), its latest revision, and the next page's cursor or null */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TurnEntries"];
                };
            };
            /** @description invalid `after_revision`, `limit`, `after` or `order`, or a malformed query or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session, or unknown turn */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `after_revision` is past the turn's latest revision (`cursor_ahead`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    turn_timeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description session key, percent-encoded */
                session_key: string;
                /** @description logical turn, percent-encoded */
                logical_turn_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the turn's timeline as an SVG image: a bar per write (the first 100 in recorded order), from intent to settlement, coloured by status, with a title and description in words */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "image/svg+xml": string;
                };
            };
            /** @description a malformed query or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description unknown or expired session, or unknown turn */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    unknowns: {
        parameters: {
            query?: {
                /** @description items at most, 1 to 1000, default 200 */
                limit?: number;
                /** @description opaque cursor: the `next` of the previous page */
                after?: string;
                /** @description only items of this exact tool */
                tool?: string;
                /** @description only items of this exact session */
                session_key?: string;
                /** @description only items open at least this many whole seconds (their `age_secs`, from the history row that set their status, is known and at least this); ASCII digits */
                min_age_secs?: number;
                /** @description only items whose tool contains this text, case-insensitively; no control characters; blank: no filter */
                tool_like?: string;
                /** @description only items whose session key contains this text, case-insensitively; no control characters; blank: no filter */
                session_like?: string;
                /** @description only items settled at or after this RFC 3339 time (in-flight items have not settled) */
                settled_after?: string;
                /** @description only items settled before this RFC 3339 time */
                settled_before?: string;
                /** @description age (default), tool, session or deadline (soonest first ascending) */
                sort?: string;
                /** @description all (default): settled unknowns and writes in flight; unknown: settled unknowns only (those the ledger settled at a deadline included); in_flight: writes in flight only */
                state?: string;
                /** @description asc or desc; default desc by age (oldest first), asc by tool or session */
                order?: string;
                /** @description unclaimed: only items nobody holds the claim of; mine: only items the calling staff member holds (staff only: anyone else gets 403 `staff_only`); empty or absent: every item */
                claim?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page of the open unknown outcomes, oldest first, the next page's cursor or null, and how many match */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownsPage"];
                };
            };
            /** @description invalid `limit`, `after`, `tool`, `session_key` or `min_age_secs`, or a malformed query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `staff_only`: `claim=mine` asked by a caller who is not staff (the host token, open access) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a viewer (who reads one session only) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the server is up: {"status": "ok"} */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description the ledger's storage refuses writes: {"status": "unavailable", "reason": "storage_full" or "storage_unavailable", "message", "since"}, with Retry-After */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the Prometheus text exposition (format 0.0.4): the ledger's gauges read at this scrape, this instance's live streams and counters (docs/api.md "Metrics") */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description no credential (reads are closed: any address but loopback, or --access signed-in), or a wrong token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a viewer (the metrics are not one session's) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the ledger is busy or cannot be reached; retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
