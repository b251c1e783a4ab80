//! The pages' hydration data in fewer bytes (issue 30, docs/performance.md "Page weight"). The turn and session pages
//! send the entries they rendered to the browser once more, as their resource's JSON in a `<script>`
//! (escaped as a JavaScript string, so every `"` is two bytes). The entries API's form repeats the field
//! names, the schema and the turn id in every row; here a turn's entries are one array, each entry an
//! array of its values in a fixed order, with the schema and the turn id said once, a tool written only
//! when it is not the previous entry's, and each time as what differs from the time written before it
//! ([`Times`]). The browser reads the same [`TurnEntries`] back.
//!
//! Used as `#[serde(with = "crate::hydration::entries")]` on a resource's `TurnEntries` field.

use ledger::wire::{
    EstablishedBy, LedgerStatus, MutationOutcome, PublishedStatus, Reason, SettledBy, StatusCounts,
    TurnEntries, TurnEntry,
};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Serialize};

/// A turn's entries: session, turn, latest revision, next cursor, counts, the schema of its outcomes,
/// then the entries.
#[derive(Serialize, Deserialize)]
struct Compact(
    String,
    String,
    i64,
    Option<String>,
    Option<StatusCounts>,
    String,
    Vec<Entry>,
);

/// One entry: sequence, revision, mutation id, tool (`null`: the previous entry's), published status,
/// resource id, url, title, reason, recorded at, settled at (each as [`Times`] writes it); then, each
/// written only up to the last one present (`null` for one absent before it): its deadline while it is
/// in flight (as [`Times`] writes it, after the settled time; a settled row shows none, so it is read
/// back as `null`), who settled it when not its host or who established it ([`who`]; `settled_by`
/// `host` is read back as `null`, which no row tells apart), its ledger
/// status when its spelling is not the published status's (in flight: `execution_started`), and its
/// schema and turn id when they are not the page's (docs/api.md "Deadlines" for the first two).
#[derive(Deserialize)]
struct Entry(
    i64,
    Option<i64>,
    String,
    Option<String>,
    PublishedStatus,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<Reason>,
    String,
    Option<String>,
    #[serde(default)] Option<String>,
    #[serde(default)] Option<u8>,
    #[serde(default)] Option<LedgerStatus>,
    #[serde(default)] Option<(String, String)>,
);

impl Serialize for Entry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let tail = [
            self.11.is_some(),
            self.12.is_some(),
            self.13.is_some(),
            self.14.is_some(),
        ];
        let written = tail.iter().rposition(|p| *p).map_or(0, |i| i + 1);
        let mut t = s.serialize_tuple(11 + written)?;
        t.serialize_element(&self.0)?;
        t.serialize_element(&self.1)?;
        t.serialize_element(&self.2)?;
        t.serialize_element(&self.3)?;
        t.serialize_element(&self.4)?;
        t.serialize_element(&self.5)?;
        t.serialize_element(&self.6)?;
        t.serialize_element(&self.7)?;
        t.serialize_element(&self.8)?;
        t.serialize_element(&self.9)?;
        t.serialize_element(&self.10)?;
        if written > 0 {
            t.serialize_element(&self.11)?;
        }
        if written > 1 {
            t.serialize_element(&self.12)?;
        }
        if written > 2 {
            t.serialize_element(&self.13)?;
        }
        if written > 3 {
            t.serialize_element(&self.14)?;
        }
        t.end()
    }
}

/// Who settled (`settled_by`) and who established (`established_by`) an entry, as one number: the
/// settler's place (0 none, 1 `host`, 2 `ledger`) plus 3 times the establisher's (0 none, 1 `staff`, 2
/// `status_check`, 3 `late_answer`, 4 `host`); `None` when neither is set.
mod who {
    use super::{EstablishedBy, SettledBy};

    const SETTLED: [SettledBy; 2] = [SettledBy::Host, SettledBy::Ledger];
    const ESTABLISHED: [EstablishedBy; 4] = [
        EstablishedBy::Staff,
        EstablishedBy::StatusCheck,
        EstablishedBy::LateAnswer,
        EstablishedBy::Host,
    ];

    pub fn write(settled: Option<SettledBy>, established: Option<EstablishedBy>) -> Option<u8> {
        let place = |found: Option<usize>| found.map_or(0, |i| i as u8 + 1);
        let s = place(settled.and_then(|b| SETTLED.iter().position(|x| *x == b)));
        let e = place(established.and_then(|b| ESTABLISHED.iter().position(|x| *x == b)));
        (s + e > 0).then_some(s + 3 * e)
    }

    pub fn read(code: Option<u8>) -> Result<(Option<SettledBy>, Option<EstablishedBy>), String> {
        let Some(code) = code else {
            return Ok((None, None));
        };
        let (s, e) = (usize::from(code % 3), usize::from(code / 3));
        let settled = (s > 0).then(|| SETTLED[s - 1]);
        let established = match e {
            0 => None,
            e => Some(
                *ESTABLISHED
                    .get(e - 1)
                    .ok_or_else(|| format!("not a written settler: {code}"))?,
            ),
        };
        Ok((settled, established))
    }
}

/// Times (RFC 3339, `2026-12-03T19:55:49.286Z`) written one after the other, each as the number of
/// leading characters it shares with the time written before it (a letter: `A` none, `B` one, … at most
/// 25) followed by the rest: `R49.286Z` after `2026-12-03T19:55:48.001Z`. The times of a turn's rows are
/// close together, so most of each is said once.
#[derive(Default)]
struct Times {
    previous: String,
}

impl Times {
    const MAX_SHARED: usize = 25;

    fn write(&mut self, t: &str) -> String {
        let shared = self
            .previous
            .chars()
            .zip(t.chars())
            .take_while(|(a, b)| a == b)
            .count()
            .min(Self::MAX_SHARED);
        let rest: String = t.chars().skip(shared).collect();
        self.previous = t.to_owned();
        format!("{}{rest}", char::from(b'A' + shared as u8))
    }

    fn read(&mut self, w: &str) -> Result<String, String> {
        let mut chars = w.chars();
        let shared = chars
            .next()
            .and_then(|c| u8::try_from(c).ok())
            .and_then(|c| c.checked_sub(b'A'))
            .map(usize::from)
            .filter(|n| *n <= Self::MAX_SHARED && *n <= self.previous.chars().count())
            .ok_or_else(|| format!("not a written time: {w:?}"))?;
        let t: String = self.previous.chars().take(shared).chain(chars).collect();
        self.previous.clone_from(&t);
        Ok(t)
    }
}

/// The ledger status an entry of `status` has when it is not said.
fn implied(status: PublishedStatus) -> Option<LedgerStatus> {
    match status {
        PublishedStatus::Completed => Some(LedgerStatus::Completed),
        PublishedStatus::Failed => Some(LedgerStatus::Failed),
        PublishedStatus::OutcomeUnknown => Some(LedgerStatus::OutcomeUnknown),
        PublishedStatus::NotExecuted => None,
    }
}

fn compact(e: &TurnEntries) -> Compact {
    let schema = e
        .entries
        .first()
        .map_or_else(String::new, |x| x.outcome.schema.clone());
    let mut times = Times::default();
    let mut tool: Option<&str> = None;
    let entries = e
        .entries
        .iter()
        .map(|x| {
            let o = &x.outcome;
            let same_tool = tool == Some(o.tool.as_str());
            tool = Some(&o.tool);
            let ledger = (implied(o.status) != Some(x.ledger_status)).then_some(x.ledger_status);
            let own = (o.schema != schema || o.logical_turn_id != e.logical_turn_id)
                .then(|| (o.schema.clone(), o.logical_turn_id.clone()));
            Entry(
                x.sequence,
                x.mutation_revision,
                o.mutation_id.clone(),
                (!same_tool).then(|| o.tool.clone()),
                o.status,
                o.resource_id.clone(),
                o.url.clone(),
                o.title.clone(),
                o.reason,
                times.write(&x.recorded_at),
                x.settled_at.as_deref().map(|t| times.write(t)),
                // What the rows show, and no more (docs/performance.md "Page weight"): a deadline only while the
                // write is in flight; who settled it only when it was not its host (the ledger at the
                // deadline), who established it always.
                x.deadline_at
                    .as_deref()
                    .filter(|_| x.ledger_status == LedgerStatus::ExecutionStarted)
                    .map(|t| times.write(t)),
                who::write(
                    x.settled_by.filter(|b| *b != SettledBy::Host),
                    x.established_by,
                ),
                ledger,
                own,
            )
        })
        .collect();
    Compact(
        e.session_key.clone(),
        e.logical_turn_id.clone(),
        e.latest_revision,
        e.next.clone(),
        e.counts.clone(),
        schema,
        entries,
    )
}

fn expand(c: Compact) -> Result<TurnEntries, String> {
    let Compact(session_key, logical_turn_id, latest_revision, next, counts, schema, entries) = c;
    let mut times = Times::default();
    let mut previous_tool: Option<String> = None;
    let entries = entries
        .into_iter()
        .map(|x| {
            let Entry(
                sequence,
                mutation_revision,
                mutation_id,
                tool,
                status,
                resource_id,
                url,
                title,
                reason,
                recorded_at,
                settled_at,
                deadline_at,
                who,
                ledger,
                own,
            ) = x;
            let tool = tool
                .or_else(|| previous_tool.clone())
                .ok_or_else(|| format!("no tool for {mutation_id}"))?;
            previous_tool = Some(tool.clone());
            let recorded_at = times.read(&recorded_at)?;
            let settled_at = settled_at.map(|t| times.read(&t)).transpose()?;
            let deadline_at = deadline_at.map(|t| times.read(&t)).transpose()?;
            let (settled_by, established_by) = who::read(who)?;
            let ledger_status = ledger
                .or_else(|| implied(status))
                .ok_or_else(|| format!("no ledger status for {mutation_id}"))?;
            let (schema, logical_turn_id) =
                own.unwrap_or_else(|| (schema.clone(), logical_turn_id.clone()));
            Ok(TurnEntry {
                sequence,
                mutation_revision,
                outcome: MutationOutcome {
                    schema,
                    logical_turn_id,
                    mutation_id,
                    tool,
                    status,
                    resource_id,
                    url,
                    title,
                    reason,
                },
                ledger_status,
                recorded_at,
                settled_at,
                deadline_at,
                settled_by,
                established_by,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(TurnEntries {
        session_key,
        logical_turn_id,
        latest_revision,
        entries,
        next,
        counts,
    })
}

/// `serialize_with`/`deserialize_with` of a `TurnEntries` field (see the module).
pub mod entries {
    use super::*;

    pub fn serialize<S: serde::Serializer>(e: &TurnEntries, s: S) -> Result<S::Ok, S::Error> {
        compact(e).serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<TurnEntries, D::Error> {
        expand(Compact::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Read {
        #[serde(with = "entries")]
        entries: TurnEntries,
    }

    fn entry(sequence: i64, id: &str, status: PublishedStatus, ledger: LedgerStatus) -> TurnEntry {
        TurnEntry {
            sequence,
            mutation_revision: Some(sequence * 3),
            outcome: MutationOutcome {
                schema: "mutation_outcome/v1".into(),
                logical_turn_id: "t".into(),
                mutation_id: id.into(),
                tool: "mcp__dashboards__create".into(),
                status,
                resource_id: None,
                url: None,
                title: None,
                reason: None,
            },
            ledger_status: ledger,
            recorded_at: "2026-12-03T19:40:58.123Z".into(),
            settled_at: Some("2026-12-03T19:40:59.001Z".into()),
            deadline_at: None,
            settled_by: None,
            established_by: None,
        }
    }

    #[test]
    fn who_settled_or_established_reads_back_from_one_number() {
        let settled = [None, Some(SettledBy::Host), Some(SettledBy::Ledger)];
        let established = [
            None,
            Some(EstablishedBy::Staff),
            Some(EstablishedBy::StatusCheck),
            Some(EstablishedBy::LateAnswer),
            Some(EstablishedBy::Host),
        ];
        for s in settled {
            for e in established {
                let code = who::write(s, e);
                assert_eq!(code.is_none(), s.is_none() && e.is_none());
                assert_eq!(who::read(code).unwrap(), (s, e), "{code:?}");
            }
        }
        assert_eq!(who::write(Some(SettledBy::Ledger), None), Some(2));
        assert_eq!(who::write(None, Some(EstablishedBy::Staff)), Some(3));
        assert!(who::read(Some(15)).is_err());
    }

    #[test]
    fn times_are_written_by_what_differs_from_the_previous_one() {
        let mut w = Times::default();
        let mut r = Times::default();
        for t in [
            "2026-12-03T19:55:49.286Z",
            "2026-12-03T19:55:49.286Z",
            "2026-12-03T19:56:01.5Z",
            "2026-12-04T00:00:00Z",
            "",
            "2026-12-04T00:00:00.123456789+01:00",
            "2026-12-04T00:00:00.123456789+01:00",
            "née ü",
            "née üx",
        ] {
            let written = w.write(t);
            assert_eq!(r.read(&written).unwrap(), t, "{written}");
        }
        assert_eq!(Times::default().write("2026"), "A2026");
        let mut t = Times::default();
        t.write("2026-12-03T19:55:49.286Z");
        assert_eq!(t.write("2026-12-03T19:55:49.286Z"), "Y");
        assert_eq!(t.write("2026-12-03T19:56:01.5Z"), "P6:01.5Z");
        assert!(
            Times::default().read("Cxyz").is_err(),
            "shares more than there was"
        );
        assert!(Times::default().read("").is_err());
        assert!(Times::default().read("axyz").is_err());
    }

    #[test]
    fn entries_read_back_as_they_were_written_in_fewer_bytes() {
        let mut titled = entry(2, "b", PublishedStatus::Failed, LedgerStatus::Failed);
        titled.outcome.title = Some("Revenue \"dashboard\" <b>".into());
        titled.outcome.url = Some("https://example.com/d/1".into());
        titled.outcome.resource_id = Some("4002".into());
        titled.outcome.reason = Some(Reason::ExecutionTimeout);
        titled.deadline_at = Some("2026-12-03T19:55:58.123Z".into());
        titled.settled_by = Some(SettledBy::Host);
        let mut flying = entry(
            3,
            "c",
            PublishedStatus::OutcomeUnknown,
            LedgerStatus::ExecutionStarted,
        );
        flying.settled_at = None;
        flying.mutation_revision = None;
        flying.deadline_at = Some("2026-12-03T19:55:58.123Z".into());
        // Settled by the ledger at its deadline; confirmed by support; by a status check.
        let mut stopped = entry(
            7,
            "g",
            PublishedStatus::OutcomeUnknown,
            LedgerStatus::OutcomeUnknown,
        );
        stopped.outcome.reason = Some(Reason::ExecutionTimeout);
        stopped.deadline_at = Some("2026-12-03T19:40:59.000Z".into());
        stopped.settled_by = Some(SettledBy::Ledger);
        let mut confirmed = entry(8, "h", PublishedStatus::Completed, LedgerStatus::Completed);
        confirmed.established_by = Some(EstablishedBy::Staff);
        let mut checked = entry(9, "i", PublishedStatus::Failed, LedgerStatus::Failed);
        checked.established_by = Some(EstablishedBy::StatusCheck);
        checked.deadline_at = Some("2026-12-03T19:40:59.000Z".into());
        let mut cancelled = entry(4, "d", PublishedStatus::NotExecuted, LedgerStatus::Failed);
        cancelled.outcome.reason = Some(Reason::PreDispatchDeadline);
        // Another turn's id or schema (never written by today's ledger) is kept too.
        let mut other = entry(5, "e", PublishedStatus::Completed, LedgerStatus::Completed);
        other.outcome.logical_turn_id = "u".into();
        let mut other_schema = entry(
            6,
            "f",
            PublishedStatus::OutcomeUnknown,
            LedgerStatus::OutcomeUnknown,
        );
        other_schema.outcome.schema = "mutation_outcome/v2".into();
        let read = Read {
            entries: TurnEntries {
                session_key: "s".into(),
                logical_turn_id: "t".into(),
                latest_revision: 18,
                entries: vec![
                    entry(1, "a", PublishedStatus::Completed, LedgerStatus::Completed),
                    titled,
                    flying,
                    cancelled,
                    other,
                    other_schema,
                    stopped,
                    confirmed,
                    checked,
                ],
                next: Some("cursor".into()),
                counts: Some(StatusCounts {
                    completed: 2,
                    failed: 1,
                    not_executed: 1,
                    outcome_unknown: 2,
                    in_flight: 1,
                }),
            },
        };
        let json = serde_json::to_string(&read).unwrap();
        // Read back as written, but for what no row shows: a settled row's deadline, and `host` as the
        // one who settled it.
        let mut shown = read.clone();
        for e in &mut shown.entries.entries {
            if e.ledger_status != LedgerStatus::ExecutionStarted {
                e.deadline_at = None;
            }
            e.settled_by = e.settled_by.filter(|b| *b != SettledBy::Host);
        }
        assert_eq!(shown.entries.entries[1].settled_by, None);
        assert_eq!(
            shown.entries.entries[2].deadline_at.as_deref(),
            Some("2026-12-03T19:55:58.123Z")
        );
        assert_eq!(serde_json::from_str::<Read>(&json).unwrap(), shown);
        let wire = serde_json::to_string(&read.entries).unwrap();
        assert!(
            json.len() * 2 < wire.len(),
            "{} vs {}",
            json.len(),
            wire.len()
        );
        // The second entry's tool is the first's: not written again; its times only by what differs.
        assert!(json.contains(r#"[2,6,"b",null,"failed""#), "{json}");
        // A settled row: no deadline; who settled it when the ledger did.
        assert!(
            json.contains(r#"[7,21,"g",null,"outcome_unknown",null,null,null,"execution_timeout","S8.123Z","S9.001Z",null,2]"#),
            "{json}"
        );
        // A row in flight: its deadline after its recorded time, by what differs from it.
        assert!(
            json.contains(r#""c",null,"outcome_unknown",null,null,null,null,"S8.123Z",null,"O55:58.123Z",null,"execution_started"]"#),
            "{json}"
        );
        // A host's settlement writes nothing after the settled time; an entry without a deadline but
        // with a ledger status writes `null` in the deadline's and the settler's places.
        assert!(json.contains(r#"[2,6,"b",null,"failed","4002","https://example.com/d/1","Revenue \"dashboard\" <b>","execution_timeout","S8.123Z","S9.001Z"]"#), "{json}");
        assert!(json.contains(r#""S9.001Z",null,null,"failed"]"#), "{json}");
        // An empty turn too.
        let empty = Read {
            entries: TurnEntries {
                entries: Vec::new(),
                next: None,
                counts: None,
                ..read.entries.clone()
            },
        };
        let json = serde_json::to_string(&empty).unwrap();
        assert_eq!(serde_json::from_str::<Read>(&json).unwrap(), empty);
    }

    #[test]
    fn an_entry_says_its_ledger_status_only_when_the_status_does_not_and_times_by_what_differs() {
        let read = Read {
            entries: TurnEntries {
                session_key: "s".into(),
                logical_turn_id: "t".into(),
                latest_revision: 1,
                entries: vec![entry(
                    1,
                    "a",
                    PublishedStatus::Completed,
                    LedgerStatus::Completed,
                )],
                next: None,
                counts: None,
            },
        };
        let json = serde_json::to_string(&read).unwrap();
        assert_eq!(
            json,
            r#"{"entries":["s","t",1,null,null,"mutation_outcome/v1",[[1,3,"a","mcp__dashboards__create","completed",null,null,null,null,"A2026-12-03T19:40:58.123Z","S9.001Z"]]]}"#
        );
        assert_eq!(serde_json::from_str::<Read>(&json).unwrap(), read);
    }
}
