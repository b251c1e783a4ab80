//! The live connection's state as the page shows it, apart from the timeline's model (docs/design.md
//! "What the person sees"). Plain data, tested natively.

/// The live connection's state, as the indicator shows it (docs/design.md "What the person sees":
/// live, reconnecting, stale since a time; a stream silent for twice the heartbeat interval is stale).
/// Times are the reader's local clock, `HH:MM:SS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Server-rendered snapshot; the browser has not connected (yet, or at all without JavaScript).
    Snapshot,
    Connecting,
    /// Open, and the server was heard within twice the heartbeat interval.
    Live,
    /// The connection dropped at `since`; the browser is reconnecting.
    Reconnecting {
        since: String,
    },
    /// Nothing heard from the server since `since` (a silent stream, or reconnecting for longer than twice
    /// the heartbeat interval); retrying.
    Stale {
        since: String,
    },
    /// The session or turn is gone (404, or `session_ended`): nothing more will come.
    Gone {
        message: String,
    },
    /// The caller's credential stopped holding (401: a sign-out or idle expiry, a revoked or expired
    /// viewer link): nothing more will come until the page is loaded again, which asks for a sign-in.
    AccessEnded,
}

impl Connection {
    /// Words for the indicator.
    pub fn label(&self) -> String {
        match self {
            Connection::Snapshot => {
                "Snapshot (live updates start once the page is interactive)".into()
            }
            Connection::Connecting => "Connecting…".into(),
            Connection::Live => "Live".into(),
            Connection::Reconnecting { since } => {
                format!("Reconnecting since {since}…")
            }
            Connection::Stale { since } => {
                format!("Stale since {since}: no word from the server; retrying")
            }
            Connection::Gone { message } => message.clone(),
            Connection::AccessEnded => {
                "Not live: your access ended (signed out, or the shared link was revoked or expired). Reload to sign in.".into()
            }
        }
    }

    /// A stable name for tests and styling.
    pub fn name(&self) -> &'static str {
        match self {
            Connection::Snapshot => "snapshot",
            Connection::Connecting => "connecting",
            Connection::Live => "live",
            Connection::Reconnecting { .. } => "reconnecting",
            Connection::Stale { .. } => "stale",
            Connection::Gone { .. } => "gone",
            Connection::AccessEnded => "access_ended",
        }
    }
}

/// What the page says when the server ended the session's live stream (`session_ended`, `reason`).
pub fn session_ended_message(reason: &str) -> String {
    match reason {
        "expired" => {
            "Not live: this session has expired, so its history is no longer kept.".to_owned()
        }
        _ => "Not live: this session was deleted by its host, so its history is no longer kept."
            .to_owned(),
    }
}

#[cfg(test)]
mod connection_tests {
    use super::*;

    #[test]
    fn the_indicator_says_since_when_and_why_it_is_not_live() {
        assert_eq!(Connection::Live.label(), "Live");
        assert_eq!(
            Connection::Reconnecting {
                since: "10:23:54".into()
            }
            .label(),
            "Reconnecting since 10:23:54…"
        );
        assert_eq!(
            Connection::Stale {
                since: "10:23:54".into()
            }
            .label(),
            "Stale since 10:23:54: no word from the server; retrying"
        );
        assert_eq!(
            session_ended_message("deleted"),
            "Not live: this session was deleted by its host, so its history is no longer kept."
        );
        assert_eq!(
            session_ended_message("expired"),
            "Not live: this session has expired, so its history is no longer kept."
        );
    }
}
