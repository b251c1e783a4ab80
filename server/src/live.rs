//! Live run events (DESIGN "Read APIs", live): the ledger's [`Adapter`] fans settled changes out to the
//! subscribers of each session through bounded queues. A slow client never delays settlement or other
//! clients: when its queue is full it stops receiving and is told to `resync` the turns it missed.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use ledger::ids::SessionKey;
use ledger::wire::{MutationOutcome, RunEvent};
use ledger::{Adapter, AdapterError};
use tokio::sync::{mpsc, Notify};

/// Queue length per subscriber.
pub const SUBSCRIBER_QUEUE: usize = 256;

/// What a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveMessage {
    Outcome(RunEvent),
    /// The subscriber missed events of these turns and must catch up through the replay endpoint.
    Resync(Vec<String>),
}

struct Subscriber {
    id: u64,
    tx: mpsc::Sender<RunEvent>,
    lag: Arc<Lag>,
}

/// Turns a lagging subscriber missed; while non-empty, nothing more is queued for it (so it can never see
/// a later revision of a turn before the resync that covers an earlier one).
#[derive(Default)]
pub struct Lag {
    missed: Mutex<BTreeSet<String>>,
    notify: Notify,
}

impl Lag {
    fn is_lagging(&self) -> bool {
        self.missed.lock().map(|m| !m.is_empty()).unwrap_or(true)
    }

    fn add(&self, turn: &str) {
        if let Ok(mut m) = self.missed.lock() {
            m.insert(turn.to_owned());
        }
        self.notify.notify_one();
    }

    fn take(&self) -> Vec<String> {
        self.missed
            .lock()
            .map(|mut m| std::mem::take(&mut *m).into_iter().collect())
            .unwrap_or_default()
    }
}

/// The receiving end of one subscription. Dropping it unsubscribes (the hub prunes it on next publish).
pub struct Subscription {
    rx: mpsc::Receiver<RunEvent>,
    lag: Arc<Lag>,
}

impl Subscription {
    /// The next message: queued events first, then a resync once the queue has drained. `None` when the
    /// hub is gone.
    pub async fn next(&mut self) -> Option<LiveMessage> {
        loop {
            match self.rx.try_recv() {
                Ok(ev) => return Some(LiveMessage::Outcome(ev)),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) => {}
            }
            let missed = self.lag.take();
            if !missed.is_empty() {
                return Some(LiveMessage::Resync(missed));
            }
            tokio::select! {
                ev = self.rx.recv() => return ev.map(LiveMessage::Outcome),
                _ = self.lag.notify.notified() => {}
            }
        }
    }
}

/// Fans out settled changes to live subscribers, per session.
#[derive(Default)]
pub struct Hub {
    sessions: Mutex<HashMap<String, Vec<Subscriber>>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Hub {
    pub fn new() -> Arc<Hub> {
        Arc::new(Hub::default())
    }

    /// Subscribes to a session's live events.
    pub fn subscribe(&self, session_key: &SessionKey) -> Subscription {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE);
        let lag = Arc::new(Lag::default());
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut s) = self.sessions.lock() {
            s.entry(session_key.to_string())
                .or_default()
                .push(Subscriber {
                    id,
                    tx,
                    lag: lag.clone(),
                });
        }
        Subscription { rx, lag }
    }

    /// Live subscribers of a session (for tests and metrics).
    pub fn subscriber_count(&self, session_key: &str) -> usize {
        self.sessions
            .lock()
            .map(|s| {
                s.get(session_key)
                    .map_or(0, |v| v.iter().filter(|x| !x.tx.is_closed()).count())
            })
            .unwrap_or(0)
    }

    fn publish(&self, session_key: &SessionKey, event: RunEvent) {
        let Ok(mut sessions) = self.sessions.lock() else {
            return;
        };
        let Some(subs) = sessions.get_mut(session_key.as_str()) else {
            return;
        };
        let mut closed = Vec::new();
        for sub in subs.iter() {
            if sub.lag.is_lagging() {
                sub.lag.add(&event.outcome.logical_turn_id);
                continue;
            }
            match sub.tx.try_send(event.clone()) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(ev)) => {
                    sub.lag.add(&ev.outcome.logical_turn_id)
                }
                Err(mpsc::error::TrySendError::Closed(_)) => closed.push(sub.id),
            }
        }
        subs.retain(|s| !closed.contains(&s.id));
        if subs.is_empty() {
            sessions.remove(session_key.as_str());
        }
    }
}

impl Adapter for Hub {
    fn on_mutation_outcome(
        &self,
        session_key: &SessionKey,
        outcome: &MutationOutcome,
        mutation_revision: i64,
    ) -> Result<(), AdapterError> {
        self.publish(
            session_key,
            RunEvent {
                mutation_revision,
                outcome: outcome.clone(),
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ledger::wire::{PublishedStatus, SCHEMA};

    fn outcome(turn: &str, id: &str) -> MutationOutcome {
        MutationOutcome {
            schema: SCHEMA.into(),
            logical_turn_id: turn.into(),
            mutation_id: id.into(),
            tool: "tool".into(),
            status: PublishedStatus::Completed,
            resource_id: None,
            url: None,
            title: None,
            reason: None,
        }
    }

    fn revision(m: Option<LiveMessage>) -> i64 {
        match m {
            Some(LiveMessage::Outcome(ev)) => ev.mutation_revision,
            other => panic!("expected an outcome, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_stuck_subscriber_is_told_to_resync_and_never_delays_the_others() {
        let hub = Hub::new();
        let key = SessionKey::parse("s").unwrap();
        let mut stuck = hub.subscribe(&key);
        let mut reader = hub.subscribe(&key);
        let total = SUBSCRIBER_QUEUE as i64 + 44;
        for rev in 1..=total {
            let turn = if rev % 2 == 0 { "t-even" } else { "t-odd" };
            // Never blocks, whatever the subscribers do.
            hub.on_mutation_outcome(&key, &outcome(turn, &format!("m{rev}")), rev)
                .unwrap();
            assert_eq!(revision(reader.next().await), rev);
        }
        for rev in 1..=SUBSCRIBER_QUEUE as i64 {
            assert_eq!(revision(stuck.next().await), rev);
        }
        assert_eq!(
            stuck.next().await,
            Some(LiveMessage::Resync(vec!["t-even".into(), "t-odd".into()]))
        );
        // After the resync it receives new events again.
        hub.on_mutation_outcome(&key, &outcome("t-odd", "late"), total + 1)
            .unwrap();
        assert_eq!(revision(stuck.next().await), total + 1);
    }

    #[tokio::test]
    async fn a_subscriber_that_went_away_is_pruned() {
        let hub = Hub::new();
        let key = SessionKey::parse("s").unwrap();
        let sub = hub.subscribe(&key);
        assert_eq!(hub.subscriber_count("s"), 1);
        drop(sub);
        hub.on_mutation_outcome(&key, &outcome("t", "m"), 1)
            .unwrap();
        assert_eq!(hub.subscriber_count("s"), 0);
    }
}
