//! An iterative recogniser of RFC 8259 JSON texts whose top-level value is an object or an array.
//!
//! It only answers "is this valid JSON of that shape?": nothing is built, and nesting is tracked on a heap
//! stack (one byte per open container), so depth is bounded by memory, not by the thread's stack.

#[derive(Clone, Copy)]
enum Container {
    Array,
    Object,
}

/// The grammar position between tokens.
enum Expect {
    /// A value (array element or object member value).
    Value,
    /// A `,` or the closing bracket of the innermost container.
    CommaOrClose,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn eat_literal(&mut self, literal: &[u8]) -> bool {
        if self.bytes[self.at..].starts_with(literal) {
            self.at += literal.len();
            true
        } else {
            false
        }
    }

    fn eat_digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    /// A string, from its opening quote. Escapes are `\" \\ \/ \b \f \n \r \t \uXXXX` (any four hex
    /// digits, lone surrogates included); raw bytes below U+0020 are not allowed. The input is `&str`,
    /// so multi-byte characters are already valid UTF-8.
    fn string(&mut self) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        loop {
            match self.peek() {
                None => return false,
                Some(b'"') => {
                    self.at += 1;
                    return true;
                }
                Some(b'\\') => {
                    self.at += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.at += 1
                        }
                        Some(b'u') => {
                            self.at += 1;
                            for _ in 0..4 {
                                if !matches!(self.peek(), Some(b) if b.is_ascii_hexdigit()) {
                                    return false;
                                }
                                self.at += 1;
                            }
                        }
                        _ => return false,
                    }
                }
                Some(0x00..=0x1F) => return false,
                Some(_) => self.at += 1,
            }
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> bool {
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                self.eat_digits();
            }
            _ => return false,
        }
        if self.eat(b'.') && self.eat_digits() == 0 {
            return false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.eat_digits() == 0 {
                return false;
            }
        }
        true
    }

    /// `"key"` then `:`, with whitespace around the colon.
    fn member_key(&mut self) -> bool {
        self.skip_whitespace();
        if !self.string() {
            return false;
        }
        self.skip_whitespace();
        self.eat(b':')
    }
}

/// Whether `bytes` is exactly one JSON object or array, with only JSON whitespace around it.
pub(super) fn is_object_or_array(bytes: &[u8]) -> bool {
    let mut cur = Cursor { bytes, at: 0 };
    cur.skip_whitespace();
    if !matches!(cur.peek(), Some(b'[' | b'{')) {
        return false;
    }
    let mut stack: Vec<Container> = Vec::new();
    let mut expect = Expect::Value;
    loop {
        cur.skip_whitespace();
        match expect {
            Expect::Value => {
                match cur.peek() {
                    Some(b'[') => {
                        cur.at += 1;
                        cur.skip_whitespace();
                        if cur.eat(b']') {
                            expect = Expect::CommaOrClose;
                        } else {
                            stack.push(Container::Array);
                        }
                        if stack.is_empty() {
                            break;
                        }
                        continue;
                    }
                    Some(b'{') => {
                        cur.at += 1;
                        cur.skip_whitespace();
                        if cur.eat(b'}') {
                            expect = Expect::CommaOrClose;
                        } else {
                            if !cur.member_key() {
                                return false;
                            }
                            stack.push(Container::Object);
                        }
                        if stack.is_empty() {
                            break;
                        }
                        continue;
                    }
                    Some(b'"') => {
                        if !cur.string() {
                            return false;
                        }
                    }
                    Some(b'-' | b'0'..=b'9') => {
                        if !cur.number() {
                            return false;
                        }
                    }
                    Some(b't') if cur.eat_literal(b"true") => {}
                    Some(b'f') if cur.eat_literal(b"false") => {}
                    Some(b'n') if cur.eat_literal(b"null") => {}
                    _ => return false,
                }
                expect = Expect::CommaOrClose;
            }
            Expect::CommaOrClose => {
                let Some(&top) = stack.last() else {
                    break;
                };
                match (top, cur.peek()) {
                    (_, Some(b',')) => {
                        cur.at += 1;
                        if matches!(top, Container::Object) && !cur.member_key() {
                            return false;
                        }
                        expect = Expect::Value;
                    }
                    (Container::Array, Some(b']')) | (Container::Object, Some(b'}')) => {
                        cur.at += 1;
                        stack.pop();
                        if stack.is_empty() {
                            break;
                        }
                    }
                    _ => return false,
                }
            }
        }
    }
    cur.skip_whitespace();
    cur.at == bytes.len()
}

#[cfg(test)]
mod tests {
    use super::is_object_or_array;

    fn yes(s: &str) -> bool {
        is_object_or_array(s.as_bytes())
    }

    #[test]
    fn objects_and_arrays_of_every_value_kind_are_recognised() {
        for s in [
            "[]",
            "{}",
            " [ ] ",
            "[1, -0.5e+3, 0, 1E9, true, false, null, \"a\\\"b\\u00e9\\n\"]",
            r#"{"a": {"b": [1, {"c": []}]}, "d": "é"}"#,
            "[[],[[]],{}]",
            r#"["\ud800"]"#,
        ] {
            assert!(yes(s), "{s:?}");
        }
    }

    #[test]
    fn malformed_or_scalar_texts_are_not_recognised() {
        for s in [
            "",
            "42",
            "\"text\"",
            "null",
            "[",
            "]",
            "[1,]",
            "[,1]",
            "{\"a\"}",
            "{\"a\":}",
            "{a:1}",
            "{\"a\":1,}",
            "[01]",
            "[1.]",
            "[.5]",
            "[1e]",
            "[+1]",
            "[tru]",
            "[nul]",
            "[\"\\x\"]",
            "[\"\\u12\"]",
            "[\"a\u{1}\"]",
            "[1] [2]",
            "[1]x",
            "{\"a\":1]",
            "[1}",
            "[\"unterminated]",
        ] {
            assert!(!yes(s), "{s:?}");
        }
    }
}
