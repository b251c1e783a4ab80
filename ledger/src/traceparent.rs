//! The host's W3C Trace Context `traceparent`, passed at approve (docs/api.md "Host write API", the field
//! `traceparent`) and stored with the entry: the OpenTelemetry span of the write becomes a child of the
//! host's span (docs/operations.md "OpenTelemetry"). Always compiled: [`crate::command`]'s `Approve`
//! carries it, with or without the store.

/// A W3C Trace Context `traceparent` (<https://www.w3.org/TR/trace-context/#traceparent-header>) as a
/// host passes it at approve: `<version>-<trace id>-<parent id>-<flags>`, lowercase hex of 2, 32, 16 and
/// 2 digits. Version `ff` is invalid; a trace id or parent id of only zeros is invalid. A version other
/// than `00` may have more after the flags (`-…`), which is ignored as the specification says; the
/// stored form is then the first 55 characters, as version `00`.
///
/// Checked here rather than by `opentelemetry_sdk`'s `TraceContextPropagator`: that one reads each part
/// with `from_str_radix`, so it takes ids of any length or with a sign (`00-+1-2-01`), which the
/// specification refuses and a later reader of the stored text would not expect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traceparent(String);

impl Traceparent {
    /// Parses a `traceparent`; the error says what is wrong, in words for a 422.
    pub fn parse(s: &str) -> Result<Traceparent, &'static str> {
        const FORM: &str =
            "traceparent is a W3C trace context: 00-<32 hex digits trace id>-<16 hex digits \
                            parent id>-<2 hex digits flags>, lowercase";
        let b = s.as_bytes();
        if b.len() < 55 {
            return Err(FORM);
        }
        let hex = |r: std::ops::Range<usize>| {
            b[r].iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        };
        if !hex(0..2)
            || b[2] != b'-'
            || !hex(3..35)
            || b[35] != b'-'
            || !hex(36..52)
            || b[52] != b'-'
            || !hex(53..55)
        {
            return Err(FORM);
        }
        let version = &s[0..2];
        if version == "ff" {
            return Err("traceparent's version ff is invalid");
        }
        if b.len() > 55 && (version == "00" || b[55] != b'-') {
            return Err(FORM);
        }
        if b[3..35].iter().all(|&c| c == b'0') {
            return Err("traceparent's trace id is all zeros, which is invalid");
        }
        if b[36..52].iter().all(|&c| c == b'0') {
            return Err("traceparent's parent id is all zeros, which is invalid");
        }
        Ok(Traceparent(s[..55].to_owned()))
    }

    /// The text (55 characters).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn bytes<const N: usize>(&self, from: usize) -> [u8; N] {
        let mut out = [0u8; N];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&self.0[from + 2 * i..from + 2 * i + 2], 16).unwrap_or(0);
        }
        out
    }

    /// The trace id (16 bytes).
    pub fn trace_id(&self) -> [u8; 16] {
        self.bytes(3)
    }

    /// The parent (the host's span) id (8 bytes).
    pub fn parent_id(&self) -> [u8; 8] {
        self.bytes(36)
    }

    /// The trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.bytes::<1>(53)[0]
    }
}

impl serde::Serialize for Traceparent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Traceparent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Traceparent::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::Traceparent;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_parses_into_its_ids_and_flags() {
        let t = Traceparent::parse(GOOD).unwrap();
        assert_eq!(t.as_str(), GOOD);
        assert_eq!(t.trace_id()[0], 0x4b);
        assert_eq!(t.trace_id()[15], 0x36);
        assert_eq!(
            t.parent_id(),
            [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
        );
        assert_eq!(t.flags(), 1);
        // A later version may carry more after the flags; it is ignored.
        let later = format!("01{}-what-comes-next", &GOOD[2..]);
        assert_eq!(
            Traceparent::parse(&later).unwrap().as_str(),
            format!("01{}", &GOOD[2..])
        );
        assert_eq!(
            serde_json::from_value::<Traceparent>(serde_json::json!(GOOD)).unwrap(),
            t
        );
        assert_eq!(serde_json::to_value(&t).unwrap(), serde_json::json!(GOOD));
    }

    #[test]
    fn each_malformed_traceparent_is_refused() {
        let bad = [
            "",
            &GOOD[..54],                                                // too short
            &format!("{GOOD}0"),                                        // too long for 00
            &format!("{GOOD}-00"),                                      // 00 has nothing after
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",  // non-hex
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",  // separator
            "00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01",  // misplaced dash
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version not hex
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", // later version, no dash
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0é",  // not ASCII
        ];
        for b in bad {
            assert!(Traceparent::parse(b).is_err(), "{b:?} was accepted");
            assert!(serde_json::from_value::<Traceparent>(serde_json::json!(b)).is_err());
        }
    }
}
