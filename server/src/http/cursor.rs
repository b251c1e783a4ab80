//! Opaque keyset cursors of the paged reads (docs/api.md "Paging"): the `next` of an answer, given back as
//! `?after=`. A cursor is the position of the last item of a page (never an offset), as a small JSON
//! object tagged with its listing, encoded base64url without padding (RFC 4648 §5). Decoding is strict: a
//! cursor over [`MAX_CURSOR_LEN`] characters, that is not canonical base64url, not the exact JSON this
//! module writes (re-encoding must give the same text), holding a string with a control character
//! (U+0000 among them: no cursor this module writes holds one), or of another listing is 400 `invalid_cursor`
//! naming `after`, never a 500 or a panic. Clients must not build or read cursors: the shape may change.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// Longest cursor accepted, in characters (a session key of 256 bytes, every byte escaped twice, still fits).
pub const MAX_CURSOR_LEN: usize = 1024;

/// The position a cursor holds, one variant per listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "l", deny_unknown_fields)]
pub enum Position {
    /// A turn's entries: the `sequence` of the page's last entry, and whether the listing runs newest
    /// first (`order=newest`; left out when not, so older cursors stay valid).
    #[serde(rename = "entries")]
    Entries {
        seq: i64,
        #[serde(default, skip_serializing_if = "is_false")]
        newest: bool,
    },
    /// A session's turns: the position (`turn_seq`) of the page's last turn, and whether the listing
    /// runs newest first (`order=newest`).
    #[serde(rename = "turns")]
    Turns {
        seq: i64,
        #[serde(default, skip_serializing_if = "is_false")]
        newest: bool,
    },
    /// The sessions list: the page's last session (`last_write_at` in ms, key).
    #[serde(rename = "sessions")]
    Sessions { at: i64, key: String },
    /// The support queue: the page's last item (`recorded_at` in ms, `sequence`, and its tool or session
    /// key when sorted by one) and the queue's order ([`sort_tag`]; left out for the first order, so
    /// older cursors stay valid).
    #[serde(rename = "unknowns")]
    Unknowns {
        at: i64,
        seq: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// An operation's history: the id of the page's last history row, whether the listing runs newest
    /// first (`order=newest`; left out when not), and the operation it belongs to ([`operation_tag`]), so
    /// a cursor of one operation is no position in another's history (left out by older cursors).
    #[serde(rename = "history")]
    History {
        id: i64,
        #[serde(default, skip_serializing_if = "is_false")]
        newest: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op: Option<u64>,
    },
    /// A search: where each group goes on (`None`: it ended); sessions at `s` (SQLite: search id;
    /// Postgres: creation time in ms, with the key `k`), operations after the sequence `o`. A text
    /// shorter than 3 characters also carries the window its first page fixed (docs/ledger.md "A short
    /// text"): `w` = [the oldest session's position, the lowest sequence] (`i64::MIN`, 0: no bound),
    /// with `wk` the oldest session's key on Postgres; without `w` a page finds the window again.
    #[serde(rename = "search")]
    Search {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        s: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        k: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        o: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        w: Option<[i64; 2]>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wk: Option<String>,
    },
}

/// The operation a history cursor belongs to: the first 8 bytes (big-endian) of SHA-256 over the UTF-8 of
/// its session key, a zero byte and its mutation id.
pub fn operation_tag(session_key: &str, mutation_id: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(session_key.as_bytes())
        .chain_update([0u8])
        .chain_update(mutation_id.as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The order a support-queue cursor belongs to: `None` for the first order (by age, oldest first), else
/// `"<sort>.<asc|desc>"`.
pub fn sort_tag(sort: ledger::sessions::UnknownsSort) -> Option<String> {
    use ledger::sessions::{UnknownsSort, UnknownsSortBy};
    if sort == UnknownsSort::OLDEST_FIRST {
        return None;
    }
    let by = match sort.by {
        UnknownsSortBy::Age => "age",
        UnknownsSortBy::Tool => "tool",
        UnknownsSortBy::Session => "session",
        UnknownsSortBy::Deadline => "deadline",
    };
    Some(format!(
        "{by}.{}",
        if sort.descending { "desc" } else { "asc" }
    ))
}

/// Which listing a cursor must belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    Entries,
    Sessions,
    Turns,
    Unknowns,
    Search,
    History,
}

/// For `skip_serializing_if`: a `false` flag is left out of the cursor.
fn is_false(b: &bool) -> bool {
    !b
}

impl Position {
    fn listing(&self) -> Listing {
        match self {
            Position::Entries { .. } => Listing::Entries,
            Position::Sessions { .. } => Listing::Sessions,
            Position::Turns { .. } => Listing::Turns,
            Position::Unknowns { .. } => Listing::Unknowns,
            Position::Search { .. } => Listing::Search,
            Position::History { .. } => Listing::History,
        }
    }

    /// The opaque cursor.
    pub fn encode(&self) -> String {
        // Serialising a tagged enum of integers and strings cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        URL_SAFE_NO_PAD.encode(json)
    }
}

/// The 400 for an `after` that is not a cursor of this listing.
pub fn invalid_cursor() -> ApiError {
    ApiError::bad_request(
        "invalid_cursor",
        "after is the opaque cursor a previous answer's next gave for this listing",
        Some("after"),
    )
}

/// Decodes `after` as a cursor of `listing`, or 400 `invalid_cursor` naming `after`.
pub fn decode(after: &str, listing: Listing) -> Result<Position, ApiError> {
    if after.is_empty() || after.len() > MAX_CURSOR_LEN {
        return Err(invalid_cursor());
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(after)
        .map_err(|_| invalid_cursor())?;
    let position: Position = serde_json::from_slice(&bytes).map_err(|_| invalid_cursor())?;
    if position.listing() != listing || position.encode() != after || position.holds_control() {
        return Err(invalid_cursor());
    }
    Ok(position)
}

impl Position {
    /// Whether a string of the position holds a control character (U+0000 among them): no cursor this
    /// module writes does (it holds session keys and tool names, identifiers, and order tags), and a
    /// crafted one must not reach a query (Postgres `text` cannot hold U+0000; docs/api.md "Text a client
    /// sends").
    fn holds_control(&self) -> bool {
        let strings: [Option<&str>; 2] = match self {
            Position::Entries { .. } | Position::Turns { .. } | Position::History { .. } => {
                [None, None]
            }
            Position::Sessions { key, .. } => [Some(key), None],
            Position::Unknowns { key, by, .. } => [key.as_deref(), by.as_deref()],
            Position::Search { k, wk, .. } => [k.as_deref(), wk.as_deref()],
        };
        strings
            .into_iter()
            .flatten()
            .any(|s| s.chars().any(char::is_control))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_as_base64url_of_its_json() {
        let p = Position::Sessions {
            at: 1_800_000_000_000,
            key: "chat 42/é".into(),
        };
        let c = p.encode();
        assert_eq!(
            String::from_utf8(URL_SAFE_NO_PAD.decode(&c).unwrap()).unwrap(),
            r#"{"l":"sessions","at":1800000000000,"key":"chat 42/é"}"#
        );
        assert!(!c.contains(['+', '/', '=']));
        assert_eq!(decode(&c, Listing::Sessions).unwrap(), p);
        let e = Position::Entries {
            seq: 7,
            newest: false,
        };
        assert_eq!(e.encode(), "eyJsIjoiZW50cmllcyIsInNlcSI6N30");
        assert_eq!(decode(&e.encode(), Listing::Entries).unwrap(), e);
        let n = Position::Turns {
            seq: 9,
            newest: true,
        };
        assert_eq!(
            String::from_utf8(URL_SAFE_NO_PAD.decode(n.encode()).unwrap()).unwrap(),
            r#"{"l":"turns","seq":9,"newest":true}"#
        );
        assert_eq!(decode(&n.encode(), Listing::Turns).unwrap(), n);
        // `"newest":false` is not how this module writes it: not a cursor.
        let spelled = URL_SAFE_NO_PAD.encode(r#"{"l":"turns","seq":9,"newest":false}"#);
        assert!(decode(&spelled, Listing::Turns).is_err());
        assert!(decode(&n.encode(), Listing::Entries).is_err());
        // The queue's first order writes the cursor it always wrote; another order adds its key and tag.
        let u = Position::Unknowns {
            at: 5,
            seq: 6,
            key: None,
            by: None,
        };
        assert_eq!(
            String::from_utf8(URL_SAFE_NO_PAD.decode(u.encode()).unwrap()).unwrap(),
            r#"{"l":"unknowns","at":5,"seq":6}"#
        );
        let sorted = Position::Unknowns {
            at: 5,
            seq: 6,
            key: Some("github.create_issue".into()),
            by: Some("tool.desc".into()),
        };
        assert_eq!(decode(&sorted.encode(), Listing::Unknowns).unwrap(), sorted);
        let search = Position::Search {
            s: None,
            k: None,
            o: Some(41),
            w: None,
            wk: None,
        };
        assert_eq!(
            String::from_utf8(URL_SAFE_NO_PAD.decode(search.encode()).unwrap()).unwrap(),
            r#"{"l":"search","o":41}"#
        );
        assert!(decode(&search.encode(), Listing::Unknowns).is_err());
    }

    #[test]
    fn garbage_other_listings_and_huge_values_are_invalid() {
        let other = Position::Unknowns {
            at: 1,
            seq: 2,
            key: None,
            by: None,
        }
        .encode();
        let b64 = |s: &str| URL_SAFE_NO_PAD.encode(s);
        for bad in [
            String::new(),
            "x".into(),
            "!!!!".into(),
            "a".repeat(MAX_CURSOR_LEN + 1),
            other.clone(),
            format!("{other}="),
            b64(r#"{"l":"entries","seq":9223372036854775808}"#),
            b64(r#"{"l":"entries","seq":1.5}"#),
            b64(r#"{"l":"entries","seq":"1"}"#),
            b64(r#"{"l":"entries"}"#),
            b64(r#"{"l":"entries","seq":1,"x":2}"#),
            b64(r#"{"l":"entries", "seq":1}"#),
            b64(r#"{"seq":1,"l":"entries"}"#),
            b64(r#"{"l":"nope","seq":1}"#),
            b64("[]"),
            b64("\u{0}"),
        ] {
            let e = decode(&bad, Listing::Entries).unwrap_err();
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST, "{bad:?}");
            assert_eq!(e.detail.code, "invalid_cursor");
            assert_eq!(e.detail.field.as_deref(), Some("after"));
        }
        // Canonical cursors of each listing whose strings hold a control character (NUL, LF, DEL).
        for bad in ["a\u{0}b", "\u{0}", "a\nb", "a\u{7f}"] {
            for (listing, p) in [
                (
                    Listing::Sessions,
                    Position::Sessions {
                        at: 1,
                        key: bad.into(),
                    },
                ),
                (
                    Listing::Unknowns,
                    Position::Unknowns {
                        at: 1,
                        seq: 2,
                        key: Some(bad.into()),
                        by: Some("tool.asc".into()),
                    },
                ),
                (
                    Listing::Unknowns,
                    Position::Unknowns {
                        at: 1,
                        seq: 2,
                        key: Some("t".into()),
                        by: Some(bad.into()),
                    },
                ),
                (
                    Listing::Search,
                    Position::Search {
                        s: Some(1),
                        k: Some(bad.into()),
                        o: None,
                        w: None,
                        wk: None,
                    },
                ),
                (
                    Listing::Search,
                    Position::Search {
                        s: Some(1),
                        k: None,
                        o: None,
                        w: Some([1, 2]),
                        wk: Some(bad.into()),
                    },
                ),
            ] {
                let e = decode(&p.encode(), listing).unwrap_err();
                assert_eq!(
                    (e.status, e.detail.code.as_str(), e.detail.field.as_deref()),
                    (
                        axum::http::StatusCode::BAD_REQUEST,
                        "invalid_cursor",
                        Some("after")
                    ),
                    "{p:?}"
                );
            }
        }
        // The same position with non-canonical trailing bits is refused too.
        let good = Position::Entries {
            seq: 7,
            newest: false,
        }
        .encode();
        let mut tweaked = good.clone();
        tweaked.pop();
        tweaked.push('1');
        assert!(decode(&tweaked, Listing::Entries).is_err());
    }
}
