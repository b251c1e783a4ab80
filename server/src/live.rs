//! Live run events (docs/api.md, "Live run events"): the ledger's [`Adapter`] fans settled changes out to
//! the subscribers of each session through bounded queues.
//!
//! - A slow client never delays settlement or other clients: when its queue is full it stops receiving
//!   and is told to `resync` the turns it missed.
//! - A subscription is removed the moment its [`Subscription`] is dropped (the client went away and the
//!   server dropped its response stream), not on the next event of its session.
//! - Subscriptions are capped in total and per session ([`StreamLimits`]); past a cap `subscribe` refuses.
//! - When a session is deleted or expires, each of its subscribers receives [`LiveMessage::Ended`] after
//!   what was already queued, and then its stream ends.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};

use ledger::ids::SessionKey;
use ledger::wire::{MutationOutcome, RunEvent};
use ledger::{Adapter, AdapterError, SessionEnd};
use tokio::sync::{mpsc, Notify};

/// Queue length per subscriber.
pub const SUBSCRIBER_QUEUE: usize = 256;

/// What a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveMessage {
    Outcome(RunEvent),
    /// The subscriber missed events of these turns and must catch up through the replay endpoint.
    Resync(Vec<String>),
    /// The session was deleted or expired; nothing follows.
    Ended(SessionEnd),
}

/// Caps on live subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Subscriptions at most, over all sessions.
    pub total: usize,
    /// Subscriptions at most for one session.
    pub per_session: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            total: 1024,
            per_session: 64,
        }
    }
}

/// `subscribe` refused: a cap of [`StreamLimits`] is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LimitReached {
    #[error("the server has as many live streams open as it allows ({0})")]
    Total(usize),
    #[error("this session has as many live streams open as the server allows ({0})")]
    PerSession(usize),
}

/// What a subscriber and the hub share: the turns it missed while lagging, and how its session ended.
#[derive(Default)]
struct Shared {
    missed: Mutex<BTreeSet<String>>,
    ended: Mutex<Option<SessionEnd>>,
    notify: Notify,
}

impl Shared {
    /// Lagging: while it missed anything, nothing more is queued for it (so it can never see a later
    /// revision of a turn before the resync that covers an earlier one).
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

    fn end(&self, reason: SessionEnd) {
        if let Ok(mut e) = self.ended.lock() {
            *e = Some(reason);
        }
        self.notify.notify_one();
    }

    fn take_end(&self) -> Option<SessionEnd> {
        self.ended.lock().ok().and_then(|mut e| e.take())
    }
}

struct Subscriber {
    id: u64,
    tx: mpsc::Sender<RunEvent>,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Registry {
    sessions: HashMap<String, Vec<Subscriber>>,
    total: usize,
}

impl Registry {
    fn remove(&mut self, session_key: &str, id: u64) -> Option<Subscriber> {
        let subs = self.sessions.get_mut(session_key)?;
        let at = subs.iter().position(|s| s.id == id)?;
        let sub = subs.swap_remove(at);
        if subs.is_empty() {
            self.sessions.remove(session_key);
        }
        self.total -= 1;
        Some(sub)
    }
}

/// The receiving end of one subscription. Dropping it unsubscribes at once.
pub struct Subscription {
    rx: mpsc::Receiver<RunEvent>,
    shared: Arc<Shared>,
    hub: Weak<Hub>,
    session_key: String,
    id: u64,
    done: bool,
}

impl Subscription {
    /// The next message: queued events first, then a resync once the queue has drained, then (when the
    /// session ended) [`LiveMessage::Ended`] once. `None` afterwards, or when the hub is gone.
    pub async fn next(&mut self) -> Option<LiveMessage> {
        loop {
            if self.done {
                return None;
            }
            match self.rx.try_recv() {
                Ok(ev) => return Some(LiveMessage::Outcome(ev)),
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    self.done = true;
                    return self.shared.take_end().map(LiveMessage::Ended);
                }
                Err(mpsc::error::TryRecvError::Empty) => {}
            }
            let missed = self.shared.take();
            if !missed.is_empty() {
                return Some(LiveMessage::Resync(missed));
            }
            tokio::select! {
                ev = self.rx.recv() => match ev {
                    Some(ev) => return Some(LiveMessage::Outcome(ev)),
                    None => {
                        self.done = true;
                        return self.shared.take_end().map(LiveMessage::Ended);
                    }
                },
                _ = self.shared.notify.notified() => {}
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            if let Ok(mut r) = hub.registry.lock() {
                r.remove(&self.session_key, self.id);
            }
        }
    }
}

/// Fans out settled changes to live subscribers, per session.
pub struct Hub {
    registry: Mutex<Registry>,
    next_id: std::sync::atomic::AtomicU64,
    limits: StreamLimits,
    me: Weak<Hub>,
    /// Sessions whose viewer links were revoked: their viewers' streams close (docs/access.md).
    revoked: tokio::sync::broadcast::Sender<SessionKey>,
}

impl Hub {
    /// A hub with the default [`StreamLimits`].
    pub fn new() -> Arc<Hub> {
        Hub::with_limits(StreamLimits::default())
    }

    pub fn with_limits(limits: StreamLimits) -> Arc<Hub> {
        Arc::new_cyclic(|me| Hub {
            registry: Mutex::new(Registry::default()),
            next_id: std::sync::atomic::AtomicU64::new(0),
            limits,
            me: me.clone(),
            revoked: tokio::sync::broadcast::channel(64).0,
        })
    }

    /// Closes the live streams viewers hold on `session_key` (its viewer links were revoked). Staff and
    /// host streams go on.
    pub fn end_viewers(&self, session_key: &SessionKey) {
        let _ = self.revoked.send(session_key.clone());
    }

    /// Announcements of [`Hub::end_viewers`]; a viewer's stream listens and closes on its session. A
    /// receiver that lagged behind closes too (it may have missed its session).
    pub fn viewer_revocations(&self) -> tokio::sync::broadcast::Receiver<SessionKey> {
        self.revoked.subscribe()
    }

    /// Subscribes to a session's live events, unless a cap is reached.
    pub fn subscribe(&self, session_key: &SessionKey) -> Result<Subscription, LimitReached> {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE);
        let shared = Arc::new(Shared::default());
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut r = self
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if r.total >= self.limits.total {
            return Err(LimitReached::Total(self.limits.total));
        }
        let subs = r.sessions.entry(session_key.to_string()).or_default();
        if subs.len() >= self.limits.per_session {
            if subs.is_empty() {
                r.sessions.remove(session_key.as_str());
            }
            return Err(LimitReached::PerSession(self.limits.per_session));
        }
        subs.push(Subscriber {
            id,
            tx,
            shared: shared.clone(),
        });
        r.total += 1;
        Ok(Subscription {
            rx,
            shared,
            hub: self.me.clone(),
            session_key: session_key.to_string(),
            id,
            done: false,
        })
    }

    /// Open subscriptions of a session.
    pub fn subscriber_count(&self, session_key: &str) -> usize {
        self.registry
            .lock()
            .map(|r| r.sessions.get(session_key).map_or(0, Vec::len))
            .unwrap_or(0)
    }

    /// Open subscriptions over all sessions.
    pub fn total_subscribers(&self) -> usize {
        self.registry.lock().map(|r| r.total).unwrap_or(0)
    }

    fn publish(&self, session_key: &SessionKey, event: RunEvent) {
        let Ok(r) = self.registry.lock() else {
            return;
        };
        let Some(subs) = r.sessions.get(session_key.as_str()) else {
            return;
        };
        for sub in subs {
            if sub.shared.is_lagging() {
                sub.shared.add(&event.outcome.logical_turn_id);
                continue;
            }
            match sub.tx.try_send(event.clone()) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(ev)) => {
                    sub.shared.add(&ev.outcome.logical_turn_id)
                }
                // Its Subscription is being dropped and removes itself.
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
    }

    /// Ends every subscription of the session: each receives what was queued, then `Ended(reason)`.
    pub fn end_session(&self, session_key: &SessionKey, reason: SessionEnd) {
        let removed = match self.registry.lock() {
            Ok(mut r) => {
                let subs = r.sessions.remove(session_key.as_str()).unwrap_or_default();
                r.total -= subs.len();
                subs
            }
            Err(_) => return,
        };
        for sub in removed {
            sub.shared.end(reason);
            // Dropping the sender lets the subscription drain its queue, then see the end.
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

    fn on_session_ended(&self, session_key: &SessionKey, reason: SessionEnd) {
        self.end_session(session_key, reason);
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
        let mut stuck = hub.subscribe(&key).unwrap();
        let mut reader = hub.subscribe(&key).unwrap();
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
    async fn a_subscriber_that_went_away_is_removed_at_once_without_any_event() {
        let hub = Hub::with_limits(StreamLimits {
            total: 10_000,
            per_session: 10_000,
        });
        let key = SessionKey::parse("s").unwrap();
        let subs: Vec<_> = (0..1000).map(|_| hub.subscribe(&key).unwrap()).collect();
        let other = hub.subscribe(&SessionKey::parse("o").unwrap()).unwrap();
        assert_eq!(hub.subscriber_count("s"), 1000);
        assert_eq!(hub.total_subscribers(), 1001);
        drop(subs);
        assert_eq!(hub.subscriber_count("s"), 0);
        assert_eq!(hub.total_subscribers(), 1);
        drop(other);
        assert_eq!(hub.total_subscribers(), 0);
        assert!(hub.registry.lock().unwrap().sessions.is_empty());
    }

    #[tokio::test]
    async fn caps_refuse_past_the_total_and_per_session_limits_and_free_on_drop() {
        let hub = Hub::with_limits(StreamLimits {
            total: 3,
            per_session: 2,
        });
        let a = SessionKey::parse("a").unwrap();
        let b = SessionKey::parse("b").unwrap();
        let a1 = hub.subscribe(&a).unwrap();
        let _a2 = hub.subscribe(&a).unwrap();
        assert_eq!(hub.subscribe(&a).err(), Some(LimitReached::PerSession(2)));
        let _b1 = hub.subscribe(&b).unwrap();
        assert_eq!(hub.subscribe(&b).err(), Some(LimitReached::Total(3)));
        drop(a1);
        let _b2 = hub.subscribe(&b).unwrap();
        assert_eq!(hub.total_subscribers(), 3);
    }

    #[tokio::test]
    async fn an_ended_session_delivers_what_was_queued_then_the_end_then_nothing() {
        let hub = Hub::new();
        let key = SessionKey::parse("s").unwrap();
        let mut sub = hub.subscribe(&key).unwrap();
        hub.on_mutation_outcome(&key, &outcome("t", "m1"), 1)
            .unwrap();
        hub.on_session_ended(&key, SessionEnd::Deleted);
        assert_eq!(hub.subscriber_count("s"), 0);
        assert_eq!(revision(sub.next().await), 1);
        assert_eq!(
            sub.next().await,
            Some(LiveMessage::Ended(SessionEnd::Deleted))
        );
        assert_eq!(sub.next().await, None);
        // A waiting subscriber is woken by the end.
        let mut waiting = hub.subscribe(&key).unwrap();
        let hub2 = hub.clone();
        let k2 = key.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            hub2.on_session_ended(&k2, SessionEnd::Expired);
        });
        assert_eq!(
            waiting.next().await,
            Some(LiveMessage::Ended(SessionEnd::Expired))
        );
        assert_eq!(hub.total_subscribers(), 0);
    }
}
