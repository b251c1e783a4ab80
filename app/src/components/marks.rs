//! Invisible characters made visible (docs/design.md "What the person sees"): a host string (an id, a
//! tool name, a title) can carry characters of Unicode general category Cf (format: zero-width, bidi
//! embeddings, overrides and isolates, the byte order mark, tag characters…) that change how the text
//! reads without being seen. Pages show each as the mark `⟨U+XXXX⟩` ([`marked`]), server-rendered, and
//! find and the filters accept that marked form again ([`unmarked`]). Links and copy buttons keep the raw
//! string.

use std::borrow::Cow;

/// The code point ranges of general category Cf, Unicode 16/17/18 (inclusive). Small on purpose: the
/// browser bundle carries it. A test checks it against `unicode-properties`' full table for every
/// code point.
const FORMAT: [(u32, u32); 21] = [
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Whether `c` is of Unicode general category Cf (format).
pub fn is_format(c: char) -> bool {
    let c = c as u32;
    FORMAT
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Opens and closes a mark.
const OPEN: char = '⟨';
const CLOSE: char = '⟩';

/// `s` with every Cf character replaced by the visible mark `⟨U+XXXX⟩` (uppercase hex, at least four
/// digits): `"a\u{200B}b"` reads `a⟨U+200B⟩b`. Borrowed when there is none. One string, so an id stays
/// one text run.
pub fn marked(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_format) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_format(c) {
            out.push_str(&format!("{OPEN}U+{:04X}{CLOSE}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`marked`] as an owned string, for a view.
pub fn mark(s: &str) -> String {
    marked(s).into_owned()
}

/// A tool's name as an end user reads it (docs/design.md "What the person sees"): an MCP tool
/// `mcp__<server>__<tool>` reads `<server> · <tool>`, and other names are cut at `__`, `.` and `/` the
/// same way; `_` and `-` read as spaces. `mcp__jira__transition_issue` → `jira · transition issue`,
/// `payments.charge` → `payments · charge`, `create_dashboard` → `create dashboard`. Cf characters are
/// marked ([`marked`]). A name with nothing left to read is shown as it is. The raw name stays for staff and
/// in the element's `title`.
pub fn readable_tool(tool: &str) -> String {
    let name = tool.strip_prefix("mcp__").unwrap_or(tool);
    let words: Vec<String> = name
        .split("__")
        .flat_map(|p| p.split(['.', '/']))
        .map(|p| {
            p.split(['_', '-'])
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|p| !p.trim().is_empty())
        .collect();
    if words.is_empty() {
        mark(tool)
    } else {
        mark(&words.join(" · "))
    }
}

/// The inverse of [`marked`], for what a person types: each `⟨U+XXXX⟩` (four to six hex digits, either
/// case) that names a Cf code point becomes that character; anything else (`⟨U+0041⟩`, `⟨U+20⟩`, a lone
/// `⟨`) stays as it is. `unmarked(&marked(s)) == s` for every `s` without such a mark of its own.
pub fn unmarked(s: &str) -> Cow<'_, str> {
    if !s.contains(OPEN) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut changed = false;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len_utf8()..];
        match mark_at(after) {
            Some((c, len)) => {
                out.push(c);
                rest = &after[len..];
                changed = true;
            }
            None => {
                out.push(OPEN);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// The Cf character a mark names and the length of the mark after its `⟨`, when `s` starts with
/// `U+XXXX⟩`.
fn mark_at(s: &str) -> Option<(char, usize)> {
    let body = s.strip_prefix("U+")?;
    let digits = body.bytes().take_while(u8::is_ascii_hexdigit).count();
    if !(4..=6).contains(&digits) || !body[digits..].starts_with(CLOSE) {
        return None;
    }
    let c = char::from_u32(u32::from_str_radix(&body[..digits], 16).ok()?)?;
    is_format(c).then_some((c, 2 + digits + CLOSE.len_utf8()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tool_names_read_as_words() {
        for (raw, words) in [
            ("mcp__jira__transition_issue", "jira · transition issue"),
            (
                "mcp__google_calendar__create_event",
                "google calendar · create event",
            ),
            ("mcp__dashboards__create", "dashboards · create"),
            ("payments.charge", "payments · charge"),
            ("create_dashboard", "create dashboard"),
            ("github/create-pull-request", "github · create pull request"),
            ("Send email", "Send email"),
            ("mcp____x", "x"),
            ("___", "___"),
            ("mcp__", "mcp__"),
            ("a\u{202E}b_c", "a⟨U+202E⟩b c"),
        ] {
            assert_eq!(readable_tool(raw), words, "{raw}");
        }
    }

    #[test]
    fn the_testers_strings_read_as_what_they_are() {
        assert_eq!(
            marked("Invoice\u{202E}gnp.exe\u{202C} paid"),
            "Invoice⟨U+202E⟩gnp.exe⟨U+202C⟩ paid"
        );
        assert_eq!(marked("mcp__\u{202E}tool"), "mcp__⟨U+202E⟩tool");
        assert_eq!(marked("dash\u{200B}create-1"), "dash⟨U+200B⟩create-1");
        assert_eq!(marked("\u{FEFF}id"), "⟨U+FEFF⟩id");
        assert_eq!(
            marked("\u{2066}a\u{2067}b\u{2068}c\u{2069}"),
            "⟨U+2066⟩a⟨U+2067⟩b⟨U+2068⟩c⟨U+2069⟩"
        );
        // Five hex digits beyond the BMP (a tag character).
        assert_eq!(marked("x\u{E0041}"), "x⟨U+E0041⟩");
        assert_eq!(marked("soft\u{AD}hyphen"), "soft⟨U+00AD⟩hyphen");
        assert!(matches!(marked("plain-id é 😀"), Cow::Borrowed(_)));
        // Controls and other invisibles of other categories are not Cf (controls never reach a page).
        assert_eq!(marked("a\u{3000}b\u{A0}c"), "a\u{3000}b\u{A0}c");
    }

    #[test]
    fn marks_read_back_only_for_format_code_points() {
        assert_eq!(unmarked("a⟨U+200B⟩b"), "a\u{200B}b");
        assert_eq!(unmarked("a⟨u+200b⟩b"), "a⟨u+200b⟩b");
        assert_eq!(unmarked("a⟨U+200b⟩b"), "a\u{200B}b");
        assert_eq!(
            unmarked("Invoice⟨U+202E⟩gnp.exe⟨U+202C⟩ paid"),
            "Invoice\u{202E}gnp.exe\u{202C} paid"
        );
        assert_eq!(
            unmarked("⟨U+FEFF⟩⟨U+2066⟩⟨U+E0041⟩"),
            "\u{FEFF}\u{2066}\u{E0041}"
        );
        for literal in [
            "⟨U+0041⟩",
            "⟨U+20⟩",
            "⟨U+1000200B⟩",
            "⟨U+D800⟩",
            "⟨U+200B",
            "⟨⟩",
            "⟨",
            "U+200B⟩",
            "⟨ U+200B⟩",
        ] {
            assert_eq!(unmarked(literal), literal, "{literal:?}");
        }
        // "⟨U+0200B⟩" has five digits naming U+200B all the same.
        assert_eq!(unmarked("⟨U+0200B⟩"), "\u{200B}");
        assert_eq!(unmarked("⟨⟨U+200B⟩⟩"), "⟨\u{200B}⟩");
    }

    #[test]
    fn the_table_is_general_category_cf() {
        use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(
                is_format(c),
                c.general_category() == GeneralCategory::Format,
                "U+{:04X}",
                c as u32
            );
        }
    }

    /// Characters that make marks and near-marks likely.
    fn tricky() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            any::<char>(),
            prop::sample::select(vec![
                '\u{200B}',
                '\u{202E}',
                '\u{2066}',
                '\u{FEFF}',
                '\u{AD}',
                '\u{E0041}',
                '⟨',
                '⟩',
                'U',
                '+',
                '0',
                '2',
                'B',
                'e',
                'F',
            ]),
        ];
        prop::collection::vec(c, 0..40).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn unmarked_undoes_marked(s in any::<String>()) {
            // A string with a mark of its own reads back as the character it names (see below).
            prop_assume!(unmarked(&s) == s);
            let m = marked(&s);
            prop_assert_eq!(unmarked(&m), s.as_str());
        }

        #[test]
        fn marked_leaves_no_format_character_and_reads_back(s in tricky()) {
            let m = marked(&s);
            prop_assert!(!m.chars().any(is_format));
            prop_assert_eq!(unmarked(&m), unmarked(&s));
            if unmarked(&s) == s {
                prop_assert_eq!(unmarked(&m), s.as_str());
            }
        }
    }
}
