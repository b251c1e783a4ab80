-- Claims' rate limit and the history's pages on Postgres (docs/api.md "Claims", "Operation history"), as
-- SQLite's 0015_claim_rate.
--
-- 1. A staff member claims or releases one operation at most 10 times a minute: the group commit counts
--    that member's `claim` and `release` rows of the entry in the last 60 s (by the ledger's clock), newest
--    first, at most 10 of them: one index range of this index, whatever the entry's history holds.
CREATE INDEX history_claims_by_actor ON history (entry_seq, actor, at)
    WHERE kind IN ('claim', 'release');

-- 2. A viewer's pages of an operation's history leave out the rows internal to staff (notes, claims,
--    releases): their keyset is a range of this index, however many internal rows the entry has.
CREATE INDEX history_public_by_entry ON history (entry_seq, id)
    WHERE kind NOT IN ('note', 'claim', 'release');
