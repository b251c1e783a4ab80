//! Reading a few members out of a JSON-RPC line without building the rest (docs/mcp-proxy.md "Long
//! lines": a line within `--max-line-bytes` costs the proxy about its own size, whatever it holds). The
//! proxy needs a handful of fields (`id`, `method`, `params.name`, `result.isError`, `error.code`, …);
//! a parsed tree of the whole line (`serde_json::Value`) costs 32 bytes or more per JSON element, so a
//! 16 MiB `[0,0,0,…]` would cost hundreds of MiB. Here serde_json reads the line once per question and
//! keeps only what is asked: the other members are skipped unread ([`IgnoredAny`], which keeps one byte
//! per open array or object), a batch's elements are handed over one at a time as their raw text
//! ([`RawValue`], a slice of the line).
//!
//! The readers are lenient where the answers are: a member of an unexpected type reads as absent
//! ([`Obj`] of a non-object is `T::default()`, [`Scalar::Other`]), never as an error; a repeated member
//! is read again, the last one counts (as `serde_json::Value` and JavaScript's `JSON.parse` keep). Text
//! that is not JSON is an error, which the callers treat as "nothing read".

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::value::RawValue;
use serde_json::{Number, Value};

/// The visitor methods of the JSON scalars (`true`, `1`, `"s"`, `null`), each answering `$v`.
macro_rules! scalars_are {
    ($v:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
}

/// Skips the rest of an array, unread.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skips the rest of an object, unread.
pub fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// The members of a JSON object the proxy reads, by name; the others are skipped unread.
pub trait Members: Default {
    /// The names of the members read; [`Members::member`] gets the index of one of them.
    const NAMES: &'static [&'static str];

    /// Reads the value of member `NAMES[index]` from `map` (with `map.next_value…`: the value must be
    /// consumed). A member that comes again is read again: the last one counts.
    fn member<'de, A: MapAccess<'de>>(&mut self, index: usize, map: &mut A)
        -> Result<(), A::Error>;
}

/// `T` read from any JSON value: an object's members through [`Members`], anything else (an array, a
/// scalar, `null`) skipped unread, as `T::default()`.
#[derive(Debug, Default)]
pub struct Obj<T>(pub T);

impl<'de, T: Members> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjVisitor(PhantomData)).map(Obj)
    }
}

/// The visitor of [`Obj`] (also used by callers that tell an object from an array themselves).
pub struct ObjVisitor<T>(pub PhantomData<T>);

impl<'de, T: Members> Visitor<'de> for ObjVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_are!(T::default());

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        skip_seq(seq)?;
        Ok(T::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut t = T::default();
        while let Some(key) = map.next_key_seed(Key(T::NAMES))? {
            match key {
                Some(i) => t.member(i, &mut map)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(t)
    }
}

/// An object key, read as its index among `names` (`None`: another key), without keeping its text.
struct Key<'a>(&'a [&'a str]);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|n| *n == v))
    }
}

/// A JSON value read when it is a string, a number or a boolean; anything else (`null`, an array, an
/// object) is skipped unread, as `Other`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Scalar {
    Str(String),
    Number(Number),
    Bool(bool),
    #[default]
    Other,
}

impl Scalar {
    /// A JSON-RPC id the proxy can match: a string or a number.
    pub fn into_id(self) -> Option<Value> {
        match self {
            Scalar::Str(s) => Some(Value::String(s)),
            Scalar::Number(n) => Some(Value::Number(n)),
            _ => None,
        }
    }

    /// The string, when it is one.
    pub fn into_string(self) -> Option<String> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Number::from_f64(v).map_or(Scalar::Other, Scalar::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        skip_seq(seq)?;
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar, A::Error> {
        skip_map(map)?;
        Ok(Scalar::Other)
    }
}

/// Reads `T` from the whole of `json` (nothing but blanks after it); `None` when it is not JSON.
pub fn whole<'de, T: Deserialize<'de>>(json: &'de [u8]) -> Option<T> {
    serde_json::from_slice(json).ok()
}

/// The reference tokens of a JSON pointer (RFC 6901: `/a/b~1c/0` is `a`, `b/c`, `0`; the empty pointer
/// has none); `None` for text that is no pointer (neither empty nor starting with `/`).
pub fn pointer_tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// The value at `tokens` (an object's member by name, an array's element by index, as
/// `serde_json::Value::pointer` finds it) in the whole of `json`, as a [`Scalar`]; `Other` when there is
/// none, or `json` is not JSON. Everything else is skipped unread.
pub fn at(json: &[u8], tokens: &[String]) -> Scalar {
    let mut de = serde_json::Deserializer::from_slice(json);
    match At(tokens)
        .deserialize(&mut de)
        .and_then(|s| de.end().map(|()| s))
    {
        Ok(s) => s,
        Err(_) => Scalar::Other,
    }
}

/// The seed of [`at`].
struct At<'p>(&'p [String]);

impl<'de> DeserializeSeed<'de> for At<'_> {
    type Value = Scalar;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Scalar, D::Error> {
        match self.0.split_first() {
            None => Scalar::deserialize(d),
            Some((first, rest)) => d.deserialize_any(AtVisitor { first, rest }),
        }
    }
}

struct AtVisitor<'p> {
    first: &'p str,
    rest: &'p [String],
}

impl<'de> Visitor<'de> for AtVisitor<'_> {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_are!(Scalar::Other);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        let mut found = Scalar::Other;
        let names = [self.first];
        while let Some(key) = map.next_key_seed(Key(&names))? {
            match key {
                Some(_) => found = map.next_value_seed(At(self.rest))?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        let Some(index) = array_index(self.first) else {
            skip_seq(seq)?;
            return Ok(Scalar::Other);
        };
        let mut i = 0usize;
        loop {
            if i == index {
                let found = seq.next_element_seed(At(self.rest))?.unwrap_or_default();
                skip_seq(seq)?;
                return Ok(found);
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(Scalar::Other);
            }
            i += 1;
        }
    }
}

/// An array index token as `serde_json::Value::pointer` reads it: digits, no `+`, no leading zero.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// Calls `each(index, element)` with each element of the JSON array `line` in turn, as its raw text (a
/// slice of `line`), nothing of it kept. Answers whether `line` is a whole JSON array; when it is not
/// (not JSON, or not an array), `each` may have been called for the elements before the fault.
pub fn elements<'de>(line: &'de [u8], each: impl FnMut(usize, &'de RawValue)) -> bool {
    let mut de = serde_json::Deserializer::from_slice(line);
    matches!(
        de.deserialize_any(Elements(each))
            .and_then(|ok| de.end().map(|()| ok)),
        Ok(true)
    )
}

struct Elements<F>(F);

impl<'de, F: FnMut(usize, &'de RawValue)> Visitor<'de> for Elements<F> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_are!(false);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        skip_map(map)?;
        Ok(false)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<bool, A::Error> {
        let mut i = 0;
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            (self.0)(i, raw);
            i += 1;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, PartialEq)]
    struct Probe {
        a: Scalar,
        b: Option<Box<Probe>>,
        seen_a: usize,
    }

    impl Members for Probe {
        const NAMES: &'static [&'static str] = &["a", "b"];
        fn member<'de, A: MapAccess<'de>>(
            &mut self,
            index: usize,
            map: &mut A,
        ) -> Result<(), A::Error> {
            match index {
                0 => {
                    self.a = map.next_value()?;
                    self.seen_a += 1;
                }
                _ => self.b = Some(Box::new(map.next_value::<Obj<Probe>>()?.0)),
            }
            Ok(())
        }
    }

    #[test]
    fn members_are_read_by_name_the_last_one_counts_and_the_rest_is_skipped() {
        let p: Obj<Probe> =
            whole(br#"{"x":[1,{"a":9}],"a":"one","b":{"a":2.5,"z":null},"a":true}"#).expect("json");
        assert_eq!(p.0.a, Scalar::Bool(true));
        assert_eq!(p.0.seen_a, 2);
        assert_eq!(
            p.0.b.expect("b").a,
            Scalar::Number(Number::from_f64(2.5).unwrap())
        );
        // Anything that is not an object reads as the default; other types of a member as Other.
        for other in ["[1,2]", "3", "\"s\"", "null", "true"] {
            assert_eq!(
                whole::<Obj<Probe>>(other.as_bytes()).expect(other).0,
                Probe::default()
            );
        }
        // An escaped key is its text.
        let p: Obj<Probe> = whole(br#"{"\u0061":"x"}"#).expect("json");
        assert_eq!(p.0.a, Scalar::Str("x".into()));
        let p: Obj<Probe> = whole(br#"{"a":[1,2],"b":[{"a":1}]}"#).expect("json");
        assert_eq!(p.0.a, Scalar::Other);
        assert_eq!(p.0.b.expect("b").a, Scalar::Other);
        // Not JSON (trailing text, cut short) is no read.
        assert!(whole::<Obj<Probe>>(b"{\"a\":1} x").is_none());
        assert!(whole::<Obj<Probe>>(b"{\"a\":1").is_none());
        // Deep nesting in a skipped member costs no recursion.
        let deep = format!(
            r#"{{"x":{}0{},"a":1}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(
            whole::<Obj<Probe>>(deep.as_bytes()).expect("deep").0.a,
            Scalar::Number(1.into())
        );
    }

    #[test]
    fn pointers_find_what_value_pointer_finds() {
        let v = json!({"a": {"b/c": [10, {"d~e": "x"}], "": 7, "n": null}, "s": "t", "f": false});
        let text = v.to_string();
        for p in [
            "",
            "/a",
            "/a/b~1c",
            "/a/b~1c/0",
            "/a/b~1c/1/d~0e",
            "/a/b~1c/01",
            "/a/b~1c/+1",
            "/a/b~1c/2",
            "/a/",
            "/a/n",
            "/s",
            "/s/0",
            "/f",
            "/none",
        ] {
            let expected = match v.pointer(p) {
                Some(Value::String(s)) => Scalar::Str(s.clone()),
                Some(Value::Number(n)) => Scalar::Number(n.clone()),
                Some(Value::Bool(b)) => Scalar::Bool(*b),
                _ => Scalar::Other,
            };
            let tokens = pointer_tokens(p).expect("pointer");
            assert_eq!(at(text.as_bytes(), &tokens), expected, "{p}");
        }
        assert_eq!(pointer_tokens("a/b"), None);
        assert_eq!(at(b"{\"a\":1", &["a".to_owned()]), Scalar::Other);
        // The last of a repeated member counts.
        assert_eq!(
            at(br#"{"a":1,"a":2}"#, &["a".to_owned()]),
            Scalar::Number(2.into())
        );
    }

    #[test]
    fn elements_come_one_at_a_time_as_raw_text() {
        let mut seen = Vec::new();
        assert!(elements(br#" [1, {"a":[2]} ,"s"] "#, |i, raw| seen
            .push((i, raw.get().to_owned()))));
        assert_eq!(
            seen,
            [
                (0, "1".to_owned()),
                (1, r#"{"a":[2]}"#.to_owned()),
                (2, r#""s""#.to_owned())
            ]
        );
        assert!(elements(b"[]", |_, _| panic!("no element")));
        for not_array in [&b"{\"a\":1}"[..], b"1", b"not json", b"[1,2", b"[1] [2]"] {
            assert!(!elements(not_array, |_, _| {}), "{not_array:?}");
        }
    }
}
