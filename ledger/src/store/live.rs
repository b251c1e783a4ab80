//! What live delivery on Postgres shares between the writers and the listener (docs/ledger.md
//! "Backends"): the notification a committed change sends ([`Note`], its payload), and what this
//! instance's listener has emitted ([`Emitter`]), which the writers wait on before they answer. The
//! listener itself is the crate's `notify` module, beside the store: it reads the store, the store
//! never calls it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::wire::MutationOutcome;

/// One notification's payload (JSON, at most a few hundred bytes: ids are at most 256 bytes each, well
/// under Postgres's 8,000-byte limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k")]
pub(crate) enum Note {
    /// A committed group changed turn `t` of session `s`, taking revisions `first..=last`; `r`: the
    /// records it announced live, with their revisions, as the writer projected them at each change
    /// (absent when they would not fit a notification: then each listener reads them from history).
    #[serde(rename = "turn")]
    Turn {
        s: String,
        t: String,
        first: i64,
        last: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        r: Option<Vec<(i64, MutationOutcome)>>,
    },
    /// Session `s` was deleted (`deleted`) or expired, by instance `by`.
    #[serde(rename = "end")]
    Ended { s: String, deleted: bool, by: u64 },
    /// The viewer links of session `s` were revoked, by instance `by`.
    #[serde(rename = "revoked")]
    Revoked { s: String, by: u64 },
    /// Who holds the claim of mutation `m` (turn `t`) of session `s` changed, by instance `by`.
    #[serde(rename = "claim")]
    Claim {
        s: String,
        m: String,
        t: String,
        by: u64,
    },
}

/// The largest payload sent with its records (Postgres refuses a payload of 8,000 bytes or more).
const PAYLOAD_MAX: usize = 7_900;

impl Note {
    /// The note of a turn's changes, with `records` when the payload stays within [`PAYLOAD_MAX`].
    pub(crate) fn turn(
        s: String,
        t: String,
        first: i64,
        last: i64,
        records: Vec<(i64, MutationOutcome)>,
    ) -> Note {
        let with = Note::Turn {
            s,
            t,
            first,
            last,
            r: Some(records),
        };
        if with.payload().len() <= PAYLOAD_MAX {
            return with;
        }
        match with {
            Note::Turn {
                s, t, first, last, ..
            } => Note::Turn {
                s,
                t,
                first,
                last,
                r: None,
            },
            other => other,
        }
    }

    pub(crate) fn payload(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What this instance's listener has emitted: per turn, the highest revision handed to the adapter.
/// Writers wait on it ([`Emitter::wait_for`]) so a caller is answered after its change's events were
/// handed to the adapter, as on SQLite.
pub(crate) struct Emitter {
    /// This instance, for skipping its own session ends.
    pub(crate) instance: u64,
    emitted: Mutex<Emitted>,
    /// Bumped after every notification handled and every resync.
    progress: watch::Sender<u64>,
}

/// Turns this instance emitted, and how often it forgot them all.
#[derive(Default)]
struct Emitted {
    turns: HashMap<(String, String), i64>,
    forgotten: u64,
}

/// Turns remembered at most; past it everything is forgotten (safe: notifications are handled in commit
/// order, so forgetting only ends the waits of answers, which then go out at once).
const EMITTED_MAX: usize = 65_536;

impl Emitter {
    pub(crate) fn new() -> Emitter {
        // Distinct per process and start: the clock's nanoseconds mixed with the process id.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Emitter {
            instance: nanos ^ (u64::from(std::process::id()) << 40),
            emitted: Mutex::new(Emitted::default()),
            progress: watch::channel(0).0,
        }
    }

    pub(crate) fn emitted(&self, key: &(String, String)) -> Option<i64> {
        self.emitted.lock().ok()?.turns.get(key).copied()
    }

    pub(crate) fn forgotten(&self) -> u64 {
        self.emitted.lock().map(|m| m.forgotten).unwrap_or(0)
    }

    pub(crate) fn set_emitted(&self, key: (String, String), revision: i64) {
        if let Ok(mut m) = self.emitted.lock() {
            if m.turns.len() >= EMITTED_MAX && !m.turns.contains_key(&key) {
                m.turns.clear();
                m.forgotten += 1;
            }
            let e = m.turns.entry(key).or_insert(revision);
            *e = (*e).max(revision);
        }
    }

    /// Forgets the turns of an ended session.
    pub(crate) fn forget_session(&self, session_key: &str) {
        if let Ok(mut m) = self.emitted.lock() {
            m.turns.retain(|k, _| k.0 != session_key);
        }
    }

    pub(crate) fn bump(&self) {
        self.progress.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Waits until every `(session, turn, revision)` in `turns` was emitted here, a resync happened, or
    /// `limit` passed (the listener is down: the answer does not wait for it; the change is durable).
    pub(crate) async fn wait_for(&self, turns: &[(String, String, i64)], limit: Duration) {
        let mut progress = self.progress.subscribe();
        progress.borrow_and_update();
        let forgotten = self.forgotten();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let done = turns.iter().all(|(s, t, r)| {
                self.emitted(&(s.clone(), t.clone()))
                    .is_some_and(|e| e >= *r)
            });
            // Forgotten (a resync, or too many turns): nothing more to wait for.
            if done || self.forgotten() != forgotten {
                return;
            }
            if !matches!(
                tokio::time::timeout_at(deadline, progress.changed()).await,
                Ok(Ok(()))
            ) {
                return;
            }
        }
    }

    pub(crate) fn forget(&self) {
        if let Ok(mut m) = self.emitted.lock() {
            m.turns.clear();
            m.forgotten += 1;
        }
        self.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_small_json_and_reads_back() {
        let n = Note::Turn {
            s: "s-1".into(),
            t: "t \"1\"".into(),
            first: 3,
            last: 5,
            r: None,
        };
        assert_eq!(
            n.payload(),
            r#"{"k":"turn","s":"s-1","t":"t \"1\"","first":3,"last":5}"#
        );
        assert_eq!(serde_json::from_str::<Note>(&n.payload()).unwrap(), n);
        let e = Note::Ended {
            s: "s-1".into(),
            deleted: true,
            by: 7,
        };
        assert_eq!(
            e.payload(),
            r#"{"k":"end","s":"s-1","deleted":true,"by":7}"#
        );
        // Ids are at most 256 bytes, each byte at most 6 in JSON: far under Postgres's 8,000 bytes.
        let big = Note::Turn {
            s: "\u{1}".repeat(256),
            t: "\u{1}".repeat(256),
            first: i64::MAX,
            last: i64::MAX,
            r: None,
        };
        assert!(big.payload().len() < 8000);
        // Records ride along while they fit; past that the listeners read them.
        let record = |id: &str| MutationOutcome {
            schema: crate::wire::SCHEMA.into(),
            logical_turn_id: "t".into(),
            mutation_id: id.into(),
            tool: "tool".into(),
            status: crate::wire::PublishedStatus::Completed,
            resource_id: None,
            url: None,
            title: Some("x".repeat(2000)),
            reason: None,
        };
        let few = Note::turn(
            "s".into(),
            "t".into(),
            1,
            2,
            vec![(1, record("a")), (2, record("b"))],
        );
        assert!(matches!(&few, Note::Turn { r: Some(r), .. } if r.len() == 2));
        assert_eq!(serde_json::from_str::<Note>(&few.payload()).unwrap(), few);
        let many = Note::turn(
            "s".into(),
            "t".into(),
            1,
            4,
            (1..=4).map(|i| (i, record(&i.to_string()))).collect(),
        );
        assert!(matches!(
            &many,
            Note::Turn {
                r: None,
                first: 1,
                last: 4,
                ..
            }
        ));
        assert!(many.payload().len() < 8000);
    }
}
