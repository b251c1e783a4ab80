//! The turn timeline's model (docs/design.md "What the person sees"): every event is an upsert by `mutation_id` that
//! keeps the higher revision, so replays, duplicates and out-of-order delivery never duplicate or regress a
//! row. Rows keep the recorded order: a row read from the entries API carries its recorded `sequence`, and
//! a mutation first seen live (a live event has none) stays last only until the catch-up read that
//! follows gives it its place. Plain data, tested natively.

use std::collections::HashMap;

use ledger::wire::{
    EstablishedBy, LedgerStatus, MutationOutcome, PublishedStatus, SettledBy, StatusCounts,
    TurnEntries, TurnEntry,
};

/// One row: the latest projection seen for a mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `None` for legacy entries (no revision).
    pub revision: Option<i64>,
    pub outcome: MutationOutcome,
    /// `execution_started` (in flight) at the last read of the entries API. Records do not carry the ledger
    /// status, so a live upsert clears it and the next read of the entries sets it again.
    pub in_flight: bool,
    /// The entry's recorded position in its session (entries API `sequence`); `None` until a read of the
    /// entries API placed a mutation first seen live.
    pub sequence: Option<i64>,
    /// When the entry was recorded (RFC 3339), once read from the entries API.
    pub recorded_at: Option<String>,
    /// When it last settled (RFC 3339); `None` while in flight or not read yet.
    pub settled_at: Option<String>,
    /// Its deadline, and who settled or established it (docs/api.md "Deadlines"), as the last read of the
    /// entries API said: a live event (a record) does not tell who, so a newer one clears them until the
    /// next read.
    pub deadline_at: Option<String>,
    pub settled_by: Option<SettledBy>,
    pub established_by: Option<EstablishedBy>,
}

impl Row {
    fn from_entry(e: &TurnEntry) -> Row {
        Row {
            revision: e.mutation_revision,
            outcome: e.outcome.clone(),
            in_flight: e.ledger_status == LedgerStatus::ExecutionStarted,
            sequence: Some(e.sequence),
            recorded_at: Some(e.recorded_at.clone()),
            settled_at: e.settled_at.clone(),
            deadline_at: e.deadline_at.clone(),
            settled_by: e.settled_by,
            established_by: e.established_by,
        }
    }
}

/// The rows of one turn, in recorded order, and the cursor (highest revision seen).
///
/// A big turn is read a page at a time (docs/design.md "Big turns"): until every page is in
/// ([`Timeline::complete`]), the counts are those the turns API gave when the page was read, not a count
/// of the rows held. Look-ups by `mutation_id` go through an index, so merging a page of 1,000 entries into
/// 20,000 rows costs a sort, not a scan per entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    rows: Vec<Row>,
    /// `mutation_id` → position in `rows`; rebuilt after every sort.
    index: HashMap<String, usize>,
    cursor: i64,
    /// Whether every entry of the turn has been read (the last read had no `next`).
    complete: bool,
    /// The turn's counts as read from the turns API, shown while the timeline is not complete.
    read_counts: Option<StatusCounts>,
    /// For a timeline that holds only the turn's newest entries ([`Timeline::newest`]): what it does not
    /// hold.
    window: Option<Window>,
}

/// What a windowed timeline does not hold: the counts of the turn's older entries, and where they end.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Window {
    /// Counts of the entries older than the rows held.
    older: StatusCounts,
    /// The `sequence` of the oldest row held: an entry below it is one of the older entries. `None`: the
    /// turn had no older entries when read (every entry read since is new).
    from: Option<i64>,
    /// A read brought a change of an older entry: its earlier status is not known here, so the counts
    /// are stale until the window is read again ([`Timeline::older_changed`]).
    older_changed: bool,
}

impl Default for Timeline {
    /// An empty timeline with nothing left to read (a turn first seen live).
    fn default() -> Timeline {
        Timeline {
            rows: Vec::new(),
            index: HashMap::new(),
            cursor: 0,
            complete: true,
            read_counts: None,
            window: None,
        }
    }
}

impl Timeline {
    /// A timeline from the server-rendered entries; the cursor is the turn's latest revision. When the read
    /// was one page of several (`next` is set), the timeline is not complete until
    /// [`Timeline::merge_page`] has taken the last page.
    pub fn from_entries(entries: &TurnEntries) -> Timeline {
        let mut t = Timeline {
            rows: entries.entries.iter().map(Row::from_entry).collect(),
            cursor: entries.latest_revision,
            complete: entries.next.is_none(),
            ..Timeline::default()
        };
        t.sort();
        t
    }

    /// [`Timeline::from_entries`], with the turn's counts from the turns API to show until every page is
    /// read.
    pub fn from_first_page(entries: &TurnEntries, counts: Option<StatusCounts>) -> Timeline {
        let mut t = Timeline::from_entries(entries);
        t.read_counts = counts;
        t
    }

    /// A timeline of a turn's newest entries only (docs/design.md "What the person sees": the session
    /// page's row budget), from a first read with `order=newest` (`entries` newest first, `counts` the
    /// whole turn's, read with them). It counts the whole turn: the rows it holds, and the older entries
    /// by their counts. A later read that changes an older entry marks it [`Timeline::older_changed`];
    /// [`Timeline::trim`] moves the oldest rows held into the older counts.
    pub fn newest(entries: &TurnEntries) -> Timeline {
        let mut t = Timeline::from_entries(entries);
        t.complete = true;
        let mut older = entries.counts.clone().unwrap_or_default();
        older.sub_all(&held_counts(&t.rows));
        t.window = Some(Window {
            older,
            from: t.rows.iter().filter_map(|r| r.sequence).min(),
            older_changed: false,
        });
        t
    }

    /// [`Timeline::newest`] read again (after [`Timeline::older_changed`]): the read replaces every row,
    /// except those a live event brought at a higher revision than the read's, which stay.
    pub fn renew(&mut self, entries: &TurnEntries) {
        let mut fresh = Timeline::newest(entries);
        for row in &self.rows {
            if row.revision.is_some_and(|r| r > entries.latest_revision) {
                fresh.upsert(row.revision, row.outcome.clone());
            }
        }
        fresh.cursor = fresh.cursor.max(self.cursor);
        *self = fresh;
    }

    /// Whether a read brought a change of an entry older than the rows held: the window must be read
    /// again for exact counts.
    pub fn older_changed(&self) -> bool {
        self.window.as_ref().is_some_and(|w| w.older_changed)
    }

    /// Whether the timeline holds only the turn's newest entries.
    pub fn windowed(&self) -> bool {
        self.window.is_some()
    }

    /// Keeps at most `keep` placed rows of a windowed timeline: the oldest placed rows beyond it go into
    /// the older counts (so memory stays bounded while a page stays open). Nothing for other timelines.
    pub fn trim(&mut self, keep: usize) {
        let Some(w) = self.window.as_mut() else {
            return;
        };
        let placed = self.rows.iter().filter(|r| r.sequence.is_some()).count();
        if placed <= keep {
            return;
        }
        // Placed rows come first (recorded order), rows first seen live after them.
        let drop = placed - keep;
        for r in self.rows.drain(..drop) {
            w.older.add(r.outcome.status, r.in_flight);
        }
        w.from = self.rows.iter().filter_map(|r| r.sequence).min();
        self.index.clear();
        for (i, r) in self.rows.iter().enumerate() {
            self.index.insert(r.outcome.mutation_id.clone(), i);
        }
    }

    /// The newest `n` rows, in recorded order.
    pub fn newest_rows(&self, n: usize) -> &[Row] {
        &self.rows[self.rows.len().saturating_sub(n)..]
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Whether every entry of the turn has been read.
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Merges one more page of the first read (entries API `after=`); `last` when it had no `next`.
    /// Returns whether anything changed.
    pub fn merge_page(&mut self, page: &TurnEntries, last: bool) -> bool {
        let mut changed = self.merge(page);
        if last && !self.complete {
            self.complete = true;
            self.read_counts = None;
            changed = true;
        }
        changed
    }

    /// The highest revision seen.
    pub fn cursor(&self) -> i64 {
        self.cursor
    }

    /// Starts over (after a 409: the cursor is past the turn's latest revision, so the revisions held are
    /// not the server's any more): the full read that follows replaces every row it sends.
    pub fn reset_cursor(&mut self) {
        self.cursor = 0;
        for row in &mut self.rows {
            row.revision = None;
        }
    }

    /// Whether `got` replaces a row at `have`: a higher revision does; a legacy row (no revision) is
    /// replaced by any revisioned event; an equal or lower one never.
    fn newer(have: Option<i64>, got: Option<i64>) -> bool {
        match (have, got) {
            (Some(have), Some(got)) => got > have,
            (None, Some(_)) => true,
            (_, None) => false,
        }
    }

    /// Upserts one live event (a record, no ledger status or sequence). Returns whether anything changed.
    pub fn upsert(&mut self, revision: Option<i64>, outcome: MutationOutcome) -> bool {
        if let Some(r) = revision {
            self.cursor = self.cursor.max(r);
        }
        match self
            .index
            .get(&outcome.mutation_id)
            .and_then(|&i| self.rows.get_mut(i))
        {
            Some(row) => {
                if !Self::newer(row.revision, revision) {
                    return false;
                }
                row.in_flight = false;
                row.revision = revision;
                row.outcome = outcome;
                row.settled_by = None;
                row.established_by = None;
                true
            }
            None => {
                self.index
                    .insert(outcome.mutation_id.clone(), self.rows.len());
                self.rows.push(Row {
                    revision,
                    outcome,
                    in_flight: false,
                    sequence: None,
                    recorded_at: None,
                    settled_at: None,
                    deadline_at: None,
                    settled_by: None,
                    established_by: None,
                });
                true
            }
        }
    }

    /// Merges a read of the entries API (all of the turn's entries, or those changed after a revision):
    /// each entry replaces its row when newer, or fills in what a live event could not tell (ledger status,
    /// sequence, times) at the same revision; new mutations take their recorded place. The cursor becomes
    /// at least the read's `latest_revision`. Returns whether anything changed.
    pub fn merge(&mut self, entries: &TurnEntries) -> bool {
        let mut changed = false;
        for e in &entries.entries {
            let fresh = Row::from_entry(e);
            match self
                .index
                .get(&e.outcome.mutation_id)
                .and_then(|&i| self.rows.get_mut(i))
            {
                Some(row)
                    if Self::newer(row.revision, e.mutation_revision)
                        || row.revision == e.mutation_revision =>
                {
                    if *row != fresh {
                        *row = fresh;
                        changed = true;
                    }
                }
                Some(_) => {}
                None => {
                    if let Some(w) = self.window.as_mut() {
                        if w.from.is_some_and(|from| e.sequence < from) {
                            // One of the older entries changed: its earlier status is not known here.
                            w.older_changed = true;
                            continue;
                        }
                    }
                    self.index
                        .insert(e.outcome.mutation_id.clone(), self.rows.len());
                    self.rows.push(fresh);
                    changed = true;
                }
            }
        }
        if entries.latest_revision > self.cursor {
            self.cursor = entries.latest_revision;
            changed = true;
        }
        self.sort();
        changed
    }

    /// Recorded order; rows not placed yet (first seen live) last, in the order they arrived.
    fn sort(&mut self) {
        self.rows
            .sort_by_key(|r| (r.sequence.is_none(), r.sequence.unwrap_or(0)));
        self.index.clear();
        for (i, r) in self.rows.iter().enumerate() {
            self.index.insert(r.outcome.mutation_id.clone(), i);
        }
    }

    /// Counts by published status (as read from the turns API while the timeline is not complete).
    pub fn count(&self, status: PublishedStatus) -> usize {
        if let Some(c) = self.read_counts.as_ref().filter(|_| !self.complete) {
            return c.get(status) as usize;
        }
        let older = self.window.as_ref().map_or(0, |w| w.older.get(status)) as usize;
        older
            + self
                .rows
                .iter()
                .filter(|r| r.outcome.status == status)
                .count()
    }

    /// How many outcomes the turn has: the rows held (and the older entries of a windowed timeline), or
    /// the turns API's total while not complete.
    pub fn len(&self) -> usize {
        match self.read_counts.as_ref().filter(|_| !self.complete) {
            Some(c) => (c.total() as usize).max(self.rows.len()),
            None => self.window.as_ref().map_or(0, |w| w.older.total()) as usize + self.rows.len(),
        }
    }

    /// How many of the turn's outcomes are not held (the older entries of a windowed timeline, or the
    /// pages not read yet).
    pub fn not_held(&self) -> usize {
        self.len().saturating_sub(self.rows.len())
    }

    /// Whether the turn has no outcomes (as far as read).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rows whose outcome is unknown and settled (not in flight): what an end user quotes to support.
    pub fn settled_unknowns(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| r.outcome.status == PublishedStatus::OutcomeUnknown && !r.in_flight)
    }

    /// The counts as the turns API spells them: in flight is a part of `outcome_unknown`.
    pub fn counts(&self) -> ledger::wire::StatusCounts {
        ledger::wire::StatusCounts {
            completed: self.count(PublishedStatus::Completed) as u64,
            failed: self.count(PublishedStatus::Failed) as u64,
            not_executed: self.count(PublishedStatus::NotExecuted) as u64,
            outcome_unknown: self.count(PublishedStatus::OutcomeUnknown) as u64,
            in_flight: self.in_flight() as u64,
        }
    }

    /// Rows in flight (as read from the turns API while the timeline is not complete).
    pub fn in_flight(&self) -> usize {
        if let Some(c) = self.read_counts.as_ref().filter(|_| !self.complete) {
            return c.in_flight as usize;
        }
        self.window.as_ref().map_or(0, |w| w.older.in_flight) as usize
            + self.rows.iter().filter(|r| r.in_flight).count()
    }

    /// Settled `outcome_unknown` outcomes (not in flight): the "Outcome unknown" count of the pages.
    pub fn settled_unknown(&self) -> usize {
        self.count(PublishedStatus::OutcomeUnknown)
            .saturating_sub(self.in_flight())
    }
}

/// The counts of `rows` (in flight as the rows say).
fn held_counts(rows: &[Row]) -> StatusCounts {
    let mut c = StatusCounts::default();
    for r in rows {
        c.add(r.outcome.status, r.in_flight);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use ledger::wire::SCHEMA;

    fn outcome(id: &str, status: PublishedStatus) -> MutationOutcome {
        MutationOutcome {
            schema: SCHEMA.into(),
            logical_turn_id: "t".into(),
            mutation_id: id.into(),
            tool: "tool".into(),
            status,
            resource_id: None,
            url: None,
            title: None,
            reason: None,
        }
    }

    fn entry(
        seq: i64,
        revision: i64,
        id: &str,
        status: PublishedStatus,
        in_flight: bool,
    ) -> TurnEntry {
        TurnEntry {
            sequence: seq,
            mutation_revision: Some(revision),
            outcome: outcome(id, status),
            ledger_status: if in_flight {
                LedgerStatus::ExecutionStarted
            } else {
                LedgerStatus::Completed
            },
            recorded_at: format!("2026-12-01T10:00:0{seq}.000Z"),
            settled_at: (!in_flight).then(|| "2026-12-01T10:01:00.000Z".to_owned()),
            deadline_at: None,
            settled_by: None,
            established_by: None,
        }
    }

    /// A read of the entries API (built from JSON, so fields added later keep their defaults).
    fn read(latest_revision: i64, entries: Vec<TurnEntry>) -> TurnEntries {
        serde_json::from_value(serde_json::json!({
            "session_key": "s",
            "logical_turn_id": "t",
            "latest_revision": latest_revision,
            "entries": entries,
        }))
        .unwrap()
    }

    fn ids(t: &Timeline) -> Vec<&str> {
        t.rows()
            .iter()
            .map(|r| r.outcome.mutation_id.as_str())
            .collect()
    }

    /// The tester's case: o0 recorded, then oA and oB recorded, oB settled before oA. Live, oB arrived
    /// first and was appended; the catch-up read places every row by its recorded sequence.
    #[test]
    fn rows_settled_out_of_order_take_their_recorded_place() {
        let mut t = Timeline::from_entries(&read(
            1,
            vec![entry(1, 1, "o0", PublishedStatus::Completed, false)],
        ));
        t.upsert(Some(4), outcome("oB", PublishedStatus::Completed));
        assert_eq!(ids(&t), ["o0", "oB"]);
        assert!(t.merge(&read(
            5,
            vec![
                entry(2, 5, "oA", PublishedStatus::OutcomeUnknown, true),
                entry(3, 4, "oB", PublishedStatus::Completed, false),
            ]
        )));
        assert_eq!(ids(&t), ["o0", "oA", "oB"]);
        assert!(t.rows()[1].in_flight);
        assert_eq!(t.rows()[2].sequence, Some(3));
        assert_eq!(
            t.rows()[2].recorded_at.as_deref(),
            Some("2026-12-01T10:00:03.000Z")
        );
        assert_eq!(t.cursor(), 5);
        assert_eq!(t.in_flight(), 1);
        assert_eq!(t.settled_unknowns().count(), 0);
    }

    /// An in-flight row (intent, no live record) appears from the read; its settlement replaces it; a stale
    /// read at a lower revision changes nothing.
    #[test]
    fn an_in_flight_row_appears_from_the_read_and_is_settled_in_place() {
        let mut t = Timeline::default();
        assert!(t.merge(&read(
            1,
            vec![entry(1, 1, "a", PublishedStatus::OutcomeUnknown, true)]
        )));
        assert!(t.rows()[0].in_flight);
        assert!(t.upsert(Some(2), outcome("a", PublishedStatus::OutcomeUnknown)));
        assert!(!t.rows()[0].in_flight);
        assert_eq!(t.settled_unknowns().count(), 1);
        assert!(!t.merge(&read(
            1,
            vec![entry(1, 1, "a", PublishedStatus::OutcomeUnknown, true)]
        )));
        assert!(!t.rows()[0].in_flight);
        assert_eq!(t.rows()[0].revision, Some(2));
        // The same revision read again fills in what the live event could not tell, once.
        let mut settled = entry(1, 2, "a", PublishedStatus::OutcomeUnknown, false);
        settled.ledger_status = LedgerStatus::OutcomeUnknown;
        assert!(t.merge(&read(2, vec![settled.clone()])));
        assert_eq!(
            t.rows()[0].settled_at.as_deref(),
            Some("2026-12-01T10:01:00.000Z")
        );
        assert!(!t.merge(&read(2, vec![settled])));
    }

    /// A big turn read a page at a time: the turns API's counts stand until the last page is in; pages
    /// and live events land by `mutation_id` through the index, in recorded order.
    #[test]
    fn a_turn_read_a_page_at_a_time_counts_as_read_until_complete() {
        let page = |from: i64, to: i64, next: Option<&str>| {
            let mut r = read(
                3000,
                (from..to)
                    .map(|i| {
                        let status = if i % 4 == 0 {
                            PublishedStatus::OutcomeUnknown
                        } else {
                            PublishedStatus::Completed
                        };
                        entry(i, i, &format!("m{i}"), status, false)
                    })
                    .collect(),
            );
            r.next = next.map(str::to_owned);
            r
        };
        let counts = StatusCounts {
            completed: 2250,
            failed: 0,
            not_executed: 0,
            outcome_unknown: 750,
            in_flight: 0,
        };
        let mut t = Timeline::from_first_page(&page(0, 200, Some("c1")), Some(counts));
        assert!(!t.complete());
        assert_eq!(t.rows().len(), 200);
        assert_eq!(t.len(), 3000);
        assert_eq!(t.count(PublishedStatus::OutcomeUnknown), 750);
        // A live settlement of a row not read yet arrives before its page.
        assert!(t.upsert(Some(3001), outcome("m2999", PublishedStatus::Failed)));
        assert!(t.merge_page(&page(200, 1200, Some("c2")), false));
        assert!(!t.complete());
        assert!(t.merge_page(&page(1200, 3000, None), true));
        assert!(t.complete());
        assert_eq!(t.rows().len(), 3000);
        assert_eq!(t.len(), 3000);
        // The page's m2999 (revision 2999) does not roll back the live revision 3001.
        assert_eq!(t.rows()[2999].outcome.mutation_id, "m2999");
        assert_eq!(t.rows()[2999].outcome.status, PublishedStatus::Failed);
        assert_eq!(t.rows()[2999].sequence, None);
        // m2999 was completed on its page (2999 % 4 != 0); live, it failed.
        assert_eq!(t.count(PublishedStatus::OutcomeUnknown), 750);
        assert_eq!(t.count(PublishedStatus::Failed), 1);
        assert_eq!(t.count(PublishedStatus::Completed), 2249);
        assert!(t
            .rows()
            .windows(2)
            .take(2998)
            .all(|w| w[0].sequence < w[1].sequence));
        // After the sort the index still finds every row.
        assert!(!t.upsert(Some(5), outcome("m5", PublishedStatus::Failed)));
        assert!(t.upsert(Some(3002), outcome("m5", PublishedStatus::Failed)));
        assert_eq!(t.rows()[5].outcome.status, PublishedStatus::Failed);
        assert_eq!(t.rows().len(), 3000);
    }

    /// The session page's window (issue 23): a turn of 61 outcomes read as its newest 50 counts all 61;
    /// a live settle of a new row appears at the end; an in-flight row is counted in flight, not as a
    /// settled unknown; trimming moves the oldest rows into the older counts; a change of an older entry
    /// asks for the window again.
    #[test]
    fn a_windowed_timeline_holds_the_newest_rows_and_counts_the_whole_turn() {
        let mut newest = read(
            61,
            (11..61)
                .rev()
                .map(|i| entry(i, i, &format!("m{i:02}"), PublishedStatus::Completed, false))
                .collect(),
        );
        newest.counts = Some(StatusCounts {
            completed: 60,
            failed: 0,
            not_executed: 0,
            outcome_unknown: 1,
            in_flight: 1,
        });
        let mut t = Timeline::newest(&newest);
        assert!(t.windowed());
        assert_eq!(t.rows().len(), 50);
        assert_eq!(t.rows()[0].outcome.mutation_id, "m11");
        assert_eq!(t.newest_rows(50).last().unwrap().outcome.mutation_id, "m60");
        assert_eq!(t.len(), 61);
        assert_eq!(t.not_held(), 11);
        assert_eq!(t.count(PublishedStatus::Completed), 60);
        assert_eq!(t.in_flight(), 1);
        assert_eq!(t.settled_unknown(), 0);
        // A new row, live: the newest shown.
        assert!(t.upsert(Some(62), outcome("m61", PublishedStatus::Failed)));
        assert_eq!(t.newest_rows(50).last().unwrap().outcome.mutation_id, "m61");
        assert_eq!(t.newest_rows(50)[0].outcome.mutation_id, "m12");
        assert_eq!(t.len(), 62);
        // The catch-up read places it after the others; a new in-flight row comes with it.
        assert!(t.merge(&read(
            63,
            vec![
                entry(61, 62, "m61", PublishedStatus::Failed, false),
                entry(62, 63, "m62", PublishedStatus::OutcomeUnknown, true),
            ]
        )));
        assert_eq!(t.len(), 63);
        assert_eq!(t.in_flight(), 2);
        assert_eq!(t.settled_unknown(), 0);
        assert!(!t.older_changed());
        // Trimming to 10 rows keeps the counts.
        t.trim(10);
        assert_eq!(t.rows().len(), 10);
        assert_eq!(t.rows()[0].outcome.mutation_id, "m53");
        assert_eq!(t.len(), 63);
        assert_eq!(t.count(PublishedStatus::Completed), 60);
        assert_eq!(t.count(PublishedStatus::Failed), 1);
        // A change of an older row (reconciled) is not counted twice: the window is read again.
        t.merge(&read(
            64,
            vec![entry(5, 64, "m05", PublishedStatus::Failed, false)],
        ));
        assert!(t.older_changed());
        assert!(t.rows().iter().all(|r| r.outcome.mutation_id != "m05"));
        assert_eq!(t.len(), 63);
        let mut again = read(
            64,
            vec![entry(62, 63, "m62", PublishedStatus::OutcomeUnknown, true)],
        );
        again.counts = Some(StatusCounts {
            completed: 59,
            failed: 2,
            not_executed: 0,
            outcome_unknown: 2,
            in_flight: 1,
        });
        t.renew(&again);
        assert!(!t.older_changed());
        assert_eq!(t.len(), 63);
        assert_eq!(t.count(PublishedStatus::Failed), 2);
        assert_eq!(t.settled_unknown(), 1);
        assert_eq!(t.cursor(), 64);
    }

    #[test]
    fn replayed_unknown_at_lower_revision_never_rolls_a_row_back() {
        let mut t = Timeline::default();
        assert!(t.upsert(Some(7), outcome("a", PublishedStatus::Completed)));
        assert!(!t.upsert(Some(3), outcome("a", PublishedStatus::OutcomeUnknown)));
        assert_eq!(t.rows()[0].outcome.status, PublishedStatus::Completed);
        assert_eq!(t.rows()[0].revision, Some(7));
        assert_eq!(t.cursor(), 7);
    }

    #[test]
    fn after_a_reset_the_full_replay_replaces_rows_at_any_revision() {
        let mut t = Timeline::default();
        t.upsert(Some(9), outcome("a", PublishedStatus::OutcomeUnknown));
        t.reset_cursor();
        assert_eq!(t.cursor(), 0);
        assert!(t.upsert(Some(2), outcome("a", PublishedStatus::Completed)));
        assert_eq!(t.rows().len(), 1);
        assert_eq!(t.rows()[0].outcome.status, PublishedStatus::Completed);
        assert_eq!(t.cursor(), 2);
        assert!(!t.upsert(Some(1), outcome("a", PublishedStatus::Failed)));
    }

    #[test]
    fn duplicates_never_add_a_row_and_new_mutations_are_appended() {
        let mut t = Timeline::default();
        t.upsert(Some(1), outcome("a", PublishedStatus::OutcomeUnknown));
        t.upsert(Some(2), outcome("b", PublishedStatus::Failed));
        assert!(!t.upsert(Some(2), outcome("b", PublishedStatus::Failed)));
        assert!(t.upsert(Some(3), outcome("a", PublishedStatus::Completed)));
        let ids: Vec<_> = t
            .rows()
            .iter()
            .map(|r| r.outcome.mutation_id.as_str())
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(t.count(PublishedStatus::Completed), 1);
        assert_eq!(t.count(PublishedStatus::OutcomeUnknown), 0);
    }

    #[test]
    fn a_legacy_row_is_replaced_by_any_revisioned_event_but_not_by_another_legacy_one() {
        let mut t = Timeline::default();
        t.upsert(None, outcome("a", PublishedStatus::OutcomeUnknown));
        assert!(!t.upsert(None, outcome("a", PublishedStatus::Completed)));
        assert!(t.upsert(Some(1), outcome("a", PublishedStatus::Completed)));
        assert_eq!(t.cursor(), 1);
    }
}
