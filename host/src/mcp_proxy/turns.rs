//! Logical turns of the proxy's calls (docs/mcp-proxy.md "Session and turns"): the turn a client names in
//! a call's `params._meta["outcomes/logical_turn_id"]`, else the proxy's own turn, a new one after
//! `--turn-gap-secs` without a call. Pure: the caller passes the clock.

use std::time::{Duration, Instant};

/// The proxy's own turns: `turn-<run>-<n>`, `n` counting from 1 within one proxy run (`run` is the run's
/// random id, so two runs sharing a `--session-key` never share a turn).
#[derive(Debug, Clone)]
pub struct TurnClock {
    gap: Duration,
    run: String,
    count: u64,
    /// The time of the latest call, any call (read-only ones and calls naming their own turn included).
    last_call: Option<Instant>,
}

impl TurnClock {
    /// A clock that starts a new turn when more than `gap` passed since the previous call (with a zero
    /// gap, every call not naming a turn starts one).
    pub fn new(gap: Duration, run: &str) -> Self {
        TurnClock {
            gap,
            run: run.to_owned(),
            count: 0,
            last_call: None,
        }
    }

    /// Notes a call at `now` and answers its logical turn: `named` when the client named one, else the
    /// proxy's current turn (a new one when this is the first call, the gap is zero, or more than the
    /// gap passed since the previous call).
    pub fn turn_for(&mut self, named: Option<&str>, now: Instant) -> String {
        let quiet = self.last_call.is_none_or(|last| {
            self.gap.is_zero() || now.saturating_duration_since(last) > self.gap
        });
        self.last_call = Some(now);
        if let Some(t) = named {
            return t.to_owned();
        }
        if quiet || self.count == 0 {
            self.count += 1;
        }
        format!("turn-{}-{}", self.run, self.count)
    }

    /// Notes a call that records nothing (a read-only call): it keeps the current turn alive.
    pub fn touch(&mut self, now: Instant) {
        self.last_call = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_within_the_gap_share_a_turn_and_a_quiet_gap_starts_the_next() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut c = TurnClock::new(s(30), "r1");
        assert_eq!(c.turn_for(None, t0), "turn-r1-1");
        assert_eq!(c.turn_for(None, t0 + s(10)), "turn-r1-1");
        // Exactly the gap is still the same turn; the gap counts from the latest call.
        assert_eq!(c.turn_for(None, t0 + s(40)), "turn-r1-1");
        assert_eq!(c.turn_for(None, t0 + s(71)), "turn-r1-2");
        // A read-only call keeps the turn alive.
        c.touch(t0 + s(100));
        assert_eq!(c.turn_for(None, t0 + s(120)), "turn-r1-2");
        assert_eq!(c.turn_for(None, t0 + s(151)), "turn-r1-3");
    }

    #[test]
    fn a_named_turn_wins_and_still_counts_as_a_call() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut c = TurnClock::new(s(30), "r");
        assert_eq!(c.turn_for(Some("chat-7"), t0), "chat-7");
        // The first unnamed call opens the proxy's first turn.
        assert_eq!(c.turn_for(None, t0 + s(1)), "turn-r-1");
        assert_eq!(c.turn_for(Some("chat-8"), t0 + s(20)), "chat-8");
        // The named call at 20 s kept the proxy's turn alive.
        assert_eq!(c.turn_for(None, t0 + s(45)), "turn-r-1");
    }

    #[test]
    fn a_zero_gap_makes_every_call_its_own_turn() {
        let t0 = Instant::now();
        let mut c = TurnClock::new(Duration::ZERO, "z");
        assert_eq!(c.turn_for(None, t0), "turn-z-1");
        assert_eq!(c.turn_for(None, t0), "turn-z-2");
        assert_eq!(c.turn_for(None, t0 + Duration::from_millis(1)), "turn-z-3");
    }
}
