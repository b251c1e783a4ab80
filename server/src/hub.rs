//! The live hub behind live run events (docs/api.md, "Live run events"; the stream itself is
//! `http::live`): the ledger's [`Adapter`] fans settled changes, and
//! the `turn_changed` hints that follow each commit, out to the subscribers of each session.
//!
//! - Each change is framed once, as the exact SSE bytes every subscriber sends (`event: mutation_outcome`,
//!   `data: {"mutation_revision", "outcome"}`; `event: turn_changed`, `data: {"logical_turn_id",
//!   "latest_revision"}`), and published into its session's ring of the last
//!   [`SUBSCRIBER_QUEUE`] frames (a `tokio::sync::broadcast` channel): publishing costs the writer the
//!   same whether one client or a thousand listen, and nothing is copied per subscriber.
//! - A slow client never delays settlement or other clients: when the ring has moved past it, it is told
//!   to `resync` (every turn its session published live, outcome or hint, since it subscribed) and goes on
//!   from the oldest
//!   frame still held.
//! - A subscription is removed the moment its [`Subscription`] is dropped (the client went away and the
//!   server dropped its response stream), not on the next event of its session.
//! - Subscriptions are capped in total and per session ([`StreamLimits`]); past a cap `subscribe` refuses.
//! - When a session is deleted or expires, each of its subscribers receives [`LiveMessage::Ended`] after
//!   what it had not read yet, and then its stream ends.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use ledger::ids::{LogicalTurnId, SessionKey};
use ledger::wire::{MutationOutcome, RunEvent, TurnChanged};
use ledger::{Adapter, AdapterError, SessionEnd};
use tokio::sync::broadcast;

/// Frames a session's ring holds: a subscriber this far behind is told to resync.
pub const SUBSCRIBER_QUEUE: usize = 256;

/// One live event, framed once for every subscriber: a change's `mutation_outcome` or a turn's
/// `turn_changed` hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFrame {
    /// The change's revision (per turn); for a hint, the turn's latest revision.
    pub revision: i64,
    /// The turn it belongs to.
    pub logical_turn_id: Arc<str>,
    /// `event: mutation_outcome\ndata: {"mutation_revision":n,"outcome":{...}}\n\n`, or
    /// `event: turn_changed\ndata: {"logical_turn_id":"<id>","latest_revision":n}\n\n`, or
    /// `event: claim_changed\ndata: {"mutation_id":"<id>"}\n\n`.
    pub bytes: Bytes,
    /// Sent only to streams of callers who read claims (not a viewer's: docs/api.md "Claims").
    pub staff_only: bool,
}

impl LiveFrame {
    /// The frame [`Hub::resync_all`] sends: no bytes, never written to a client.
    fn resync_marker() -> LiveFrame {
        LiveFrame {
            revision: -1,
            logical_turn_id: Arc::from(""),
            bytes: Bytes::new(),
            staff_only: false,
        }
    }

    fn is_resync_marker(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Frames `event` as its SSE bytes (`mutation_outcome`).
    pub fn new(event: &RunEvent) -> Result<LiveFrame, serde_json::Error> {
        let mut bytes = Vec::with_capacity(256);
        crate::sse::frame(&mut bytes, "mutation_outcome", None, event)?;
        Ok(LiveFrame {
            revision: event.mutation_revision,
            logical_turn_id: Arc::from(event.outcome.logical_turn_id.as_str()),
            bytes: Bytes::from(bytes),
            staff_only: false,
        })
    }

    /// Frames a `turn_changed` hint as its SSE bytes.
    pub fn turn_changed(hint: &TurnChanged) -> Result<LiveFrame, serde_json::Error> {
        let mut bytes = Vec::with_capacity(96);
        crate::sse::frame(&mut bytes, "turn_changed", None, hint)?;
        Ok(LiveFrame {
            revision: hint.latest_revision,
            logical_turn_id: Arc::from(hint.logical_turn_id.as_str()),
            bytes: Bytes::from(bytes),
            staff_only: false,
        })
    }

    /// Frames a `claim_changed` hint (staff only) as its SSE bytes: who holds the claim of `mutation_id`
    /// changed (a claim, a release, an assignment), so an open operation page reads its history again.
    /// `logical_turn_id` is the operation's turn when known ("" otherwise): a lagging subscriber's
    /// `resync` then names it.
    pub fn claim_changed(
        mutation_id: &str,
        logical_turn_id: &str,
    ) -> Result<LiveFrame, serde_json::Error> {
        let mut bytes = Vec::with_capacity(64 + mutation_id.len());
        crate::sse::frame(
            &mut bytes,
            "claim_changed",
            None,
            &ClaimChanged { mutation_id },
        )?;
        Ok(LiveFrame {
            revision: 0,
            logical_turn_id: Arc::from(logical_turn_id),
            bytes: Bytes::from(bytes),
            staff_only: true,
        })
    }
}

/// The data of a `claim_changed` event: `{"mutation_id"}` (docs/api.md "Live run events").
#[derive(serde::Serialize)]
struct ClaimChanged<'a> {
    mutation_id: &'a str,
}

/// What a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveMessage {
    /// A framed event: `mutation_outcome` or `turn_changed`.
    Frame(LiveFrame),
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

/// What a session's subscribers share with the hub: how the session ended, and the turns it published.
#[derive(Default)]
struct Shared {
    ended: Mutex<Option<SessionEnd>>,
    /// Every turn published on this channel (an outcome or a `turn_changed` hint): a lagging subscriber
    /// resyncs them all (a superset of what it missed, which is what it needs: a replay after its cursor
    /// sends only what it has not seen).
    turns: Mutex<BTreeSet<Arc<str>>>,
}

/// One session's channel.
struct Channel {
    tx: broadcast::Sender<LiveFrame>,
    shared: Arc<Shared>,
    subscribers: usize,
}

#[derive(Default)]
struct Registry {
    sessions: HashMap<String, Channel>,
    total: usize,
}

/// The receiving end of one subscription. Dropping it unsubscribes at once.
pub struct Subscription {
    rx: broadcast::Receiver<LiveFrame>,
    shared: Arc<Shared>,
    hub: Weak<Hub>,
    session_key: String,
    done: bool,
}

impl Subscription {
    /// The next message: frames in revision order, a resync when the ring moved past this subscriber,
    /// then (when the session ended) [`LiveMessage::Ended`] once. `None` afterwards, or when the hub is
    /// gone.
    pub async fn next(&mut self) -> Option<LiveMessage> {
        if self.done {
            return None;
        }
        let received = self.rx.recv().await;
        self.message(received)
    }

    /// The next message if one is ready now, without waiting (a stream sends what is ready in one write).
    pub fn try_next(&mut self) -> Option<LiveMessage> {
        if self.done {
            return None;
        }
        match self.rx.try_recv() {
            Err(broadcast::error::TryRecvError::Empty) => None,
            Ok(frame) if frame.is_resync_marker() => Some(LiveMessage::Resync(Vec::new())),
            Ok(frame) => Some(LiveMessage::Frame(frame)),
            Err(broadcast::error::TryRecvError::Lagged(_)) => Some(self.resync()),
            Err(broadcast::error::TryRecvError::Closed) => self.closed(),
        }
    }

    fn message(
        &mut self,
        received: Result<LiveFrame, broadcast::error::RecvError>,
    ) -> Option<LiveMessage> {
        match received {
            Ok(frame) if frame.is_resync_marker() => Some(LiveMessage::Resync(Vec::new())),
            Ok(frame) => Some(LiveMessage::Frame(frame)),
            Err(broadcast::error::RecvError::Lagged(_)) => Some(self.resync()),
            Err(broadcast::error::RecvError::Closed) => self.closed(),
        }
    }

    fn resync(&self) -> LiveMessage {
        let turns = self
            .shared
            .turns
            .lock()
            .map(|t| t.iter().map(|t| t.to_string()).collect())
            .unwrap_or_default();
        LiveMessage::Resync(turns)
    }

    fn closed(&mut self) -> Option<LiveMessage> {
        self.done = true;
        self.shared
            .ended
            .lock()
            .ok()
            .and_then(|e| *e)
            .map(LiveMessage::Ended)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let Some(hub) = self.hub.upgrade() else {
            return;
        };
        let Ok(mut r) = hub.registry.lock() else {
            return;
        };
        // An ended session's channel is gone already (and no longer counted).
        let same = r
            .sessions
            .get(&self.session_key)
            .is_some_and(|c| Arc::ptr_eq(&c.shared, &self.shared));
        if same {
            r.total -= 1;
            let channel = r.sessions.get_mut(&self.session_key);
            if let Some(c) = channel {
                c.subscribers -= 1;
                if c.subscribers == 0 {
                    r.sessions.remove(&self.session_key);
                }
            }
        }
    }
}

/// Fans out settled changes to live subscribers, per session.
pub struct Hub {
    registry: Mutex<Registry>,
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
        let mut r = self
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if r.total >= self.limits.total {
            return Err(LimitReached::Total(self.limits.total));
        }
        let channel = r
            .sessions
            .entry(session_key.to_string())
            .or_insert_with(|| Channel {
                tx: broadcast::channel(SUBSCRIBER_QUEUE).0,
                shared: Arc::default(),
                subscribers: 0,
            });
        if channel.subscribers >= self.limits.per_session {
            if channel.subscribers == 0 {
                r.sessions.remove(session_key.as_str());
            }
            return Err(LimitReached::PerSession(self.limits.per_session));
        }
        channel.subscribers += 1;
        let subscription = Subscription {
            rx: channel.tx.subscribe(),
            shared: channel.shared.clone(),
            hub: self.me.clone(),
            session_key: session_key.to_string(),
            done: false,
        };
        r.total += 1;
        Ok(subscription)
    }

    /// Open subscriptions of a session.
    pub fn subscriber_count(&self, session_key: &str) -> usize {
        self.registry
            .lock()
            .map(|r| r.sessions.get(session_key).map_or(0, |c| c.subscribers))
            .unwrap_or(0)
    }

    /// Keys of the sessions with open subscriptions.
    pub fn subscribed_sessions(&self) -> Vec<String> {
        self.registry
            .lock()
            .map(|r| r.sessions.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Open subscriptions over all sessions.
    pub fn total_subscribers(&self) -> usize {
        self.registry.lock().map(|r| r.total).unwrap_or(0)
    }

    /// Publishes an event to the session's subscribers: framed once (by `frame`), outside the registry's
    /// lock, then one send into its ring, whatever their number. Nothing is framed when nobody listens.
    fn publish(
        &self,
        session_key: &SessionKey,
        frame: impl FnOnce() -> Result<LiveFrame, serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        let (tx, shared) = {
            let Ok(r) = self.registry.lock() else {
                return Ok(());
            };
            let Some(channel) = r.sessions.get(session_key.as_str()) else {
                return Ok(());
            };
            (channel.tx.clone(), channel.shared.clone())
        };
        let frame = frame()?;
        if let Ok(mut turns) = shared.turns.lock() {
            if !frame.logical_turn_id.is_empty() && !turns.contains(&frame.logical_turn_id) {
                turns.insert(frame.logical_turn_id.clone());
            }
        }
        // An error means nobody listens any more (every receiver was just dropped).
        let _ = tx.send(frame);
        Ok(())
    }

    /// Ends every subscription of the session: each receives what it had not read, then `Ended(reason)`.
    pub fn end_session(&self, session_key: &SessionKey, reason: SessionEnd) {
        let removed = match self.registry.lock() {
            Ok(mut r) => {
                let channel = r.sessions.remove(session_key.as_str());
                if let Some(c) = &channel {
                    r.total -= c.subscribers;
                }
                channel
            }
            Err(_) => return,
        };
        if let Some(channel) = removed {
            if let Ok(mut e) = channel.shared.ended.lock() {
                *e = Some(reason);
            }
            // Dropping the sender lets each subscription drain what it had not read, then see the end.
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
        self.publish(session_key, || {
            LiveFrame::new(&RunEvent {
                mutation_revision,
                outcome: outcome.clone(),
            })
        })
        .map_err(|e| AdapterError(e.to_string()))
    }

    fn on_turn_changed(
        &self,
        session_key: &SessionKey,
        logical_turn_id: &LogicalTurnId,
        latest_revision: i64,
    ) -> Result<(), AdapterError> {
        self.publish(session_key, || {
            LiveFrame::turn_changed(&TurnChanged {
                logical_turn_id: logical_turn_id.to_string(),
                latest_revision,
            })
        })
        .map_err(|e| AdapterError(e.to_string()))
    }

    fn on_session_ended(&self, session_key: &SessionKey, reason: SessionEnd) {
        self.end_session(session_key, reason);
    }

    /// The ledger may have missed changes (Postgres: its listener lost its connection): every
    /// subscriber of every session is told to resync, as one that lagged behind the ring is.
    fn on_resync(&self) {
        self.resync_all();
    }

    /// Another instance revoked the session's viewer links: its viewers' streams here close too.
    fn on_viewer_links_revoked(&self, session_key: &SessionKey) {
        self.end_viewers(session_key);
    }

    /// Who holds the claim of `mutation_id` changed (on this instance or, on Postgres, another): the
    /// session's live streams get `claim_changed` (never sent to viewers; docs/api.md "Claims").
    fn on_claim_changed(&self, session_key: &SessionKey, mutation_id: &str, logical_turn_id: &str) {
        if let Err(e) = self.publish(session_key, || {
            LiveFrame::claim_changed(mutation_id, logical_turn_id)
        }) {
            tracing::warn!(error = %e, "claim hint did not serialise");
        }
    }
}

impl Hub {
    /// Tells every subscriber to resync every turn: a marker frame through each session's ring, which
    /// each subscriber turns into [`LiveMessage::Resync`] naming no turn (every turn: what was missed
    /// may be in turns this session never published here) when it reaches it, after what it had not
    /// read.
    pub fn resync_all(&self) {
        let channels: Vec<broadcast::Sender<LiveFrame>> = match self.registry.lock() {
            Ok(r) => r.sessions.values().map(|c| c.tx.clone()).collect(),
            Err(_) => return,
        };
        for tx in channels {
            let _ = tx.send(LiveFrame::resync_marker());
        }
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
            Some(LiveMessage::Frame(frame)) => frame.revision,
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
        // The ring moved past the stuck one: first the resync naming the turns, then what is still held.
        assert_eq!(
            stuck.next().await,
            Some(LiveMessage::Resync(vec!["t-even".into(), "t-odd".into()]))
        );
        for rev in 45..=total {
            assert_eq!(revision(stuck.next().await), rev);
        }
        assert_eq!(stuck.try_next(), None);
        // After the resync it receives new events again.
        hub.on_mutation_outcome(&key, &outcome("t-odd", "late"), total + 1)
            .unwrap();
        assert_eq!(revision(stuck.try_next()), total + 1);
    }

    /// The ledger lost track (a Postgres listener reconnected): every subscriber of every session, idle
    /// or not, is told to resync after what it had not read, and goes on receiving afterwards.
    #[tokio::test]
    async fn a_ledger_resync_reaches_every_subscriber_in_order() {
        let hub = Hub::new();
        let (k1, k2) = (
            SessionKey::parse("s1").unwrap(),
            SessionKey::parse("s2").unwrap(),
        );
        let mut a = hub.subscribe(&k1).unwrap();
        let mut idle = hub.subscribe(&k2).unwrap();
        hub.on_mutation_outcome(&k1, &outcome("t-1", "m1"), 1)
            .unwrap();
        let waiting = tokio::spawn(async move { idle.next().await });
        tokio::task::yield_now().await;
        hub.on_resync();
        assert_eq!(revision(a.next().await), 1);
        assert_eq!(a.next().await, Some(LiveMessage::Resync(Vec::new())));
        assert_eq!(
            waiting.await.unwrap(),
            Some(LiveMessage::Resync(Vec::new()))
        );
        hub.on_mutation_outcome(&k1, &outcome("t-1", "m2"), 2)
            .unwrap();
        assert_eq!(revision(a.try_next()), 2);
    }

    #[tokio::test]
    async fn each_change_is_framed_once_as_the_exact_sse_bytes() {
        let hub = Hub::new();
        let key = SessionKey::parse("s").unwrap();
        let mut a = hub.subscribe(&key).unwrap();
        let mut b = hub.subscribe(&key).unwrap();
        hub.on_mutation_outcome(&key, &outcome("t", "m1"), 7)
            .unwrap();
        let (Some(LiveMessage::Frame(fa)), Some(LiveMessage::Frame(fb))) =
            (a.next().await, b.next().await)
        else {
            panic!("both subscribers get the frame");
        };
        assert_eq!(
            std::str::from_utf8(&fa.bytes).unwrap(),
            "event: mutation_outcome\ndata: {\"mutation_revision\":7,\"outcome\":{\"schema\":\"mutation_outcome/v1\",\"logical_turn_id\":\"t\",\"mutation_id\":\"m1\",\"tool\":\"tool\",\"status\":\"completed\",\"resource_id\":null,\"url\":null,\"title\":null}}\n\n"
        );
        // One buffer shared by every subscriber, not a copy each.
        assert_eq!(fa.bytes.as_ptr(), fb.bytes.as_ptr());
    }

    #[tokio::test]
    async fn a_turn_hint_is_framed_once_and_counts_for_resync() {
        let hub = Hub::new();
        let key = SessionKey::parse("s").unwrap();
        let mut a = hub.subscribe(&key).unwrap();
        hub.on_turn_changed(&key, &LogicalTurnId::parse("t \"1\"").unwrap(), 3)
            .unwrap();
        let Some(LiveMessage::Frame(f)) = a.next().await else {
            panic!("the hint arrives");
        };
        assert_eq!(
            std::str::from_utf8(&f.bytes).unwrap(),
            "event: turn_changed\ndata: {\"logical_turn_id\":\"t \\\"1\\\"\",\"latest_revision\":3}\n\n"
        );
        assert_eq!(f.revision, 3);
        // Nobody listens on another session: nothing is framed, nothing fails.
        hub.on_turn_changed(
            &SessionKey::parse("o").unwrap(),
            &LogicalTurnId::parse("t").unwrap(),
            1,
        )
        .unwrap();
        assert_eq!(a.resync(), LiveMessage::Resync(vec!["t \"1\"".into()]));
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
