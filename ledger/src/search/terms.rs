//! Which trigrams of a search text look candidates up in the index (docs/ledger.md "Search", "The
//! bound"): at most [`SEARCH_TRIGRAMS_MAX`] of them, whatever the text's length, so the index's work does
//! not grow with the text; an exact check of each candidate then decides (crate::search).

use super::fold::fts5_fold;

/// The most trigrams of a text the index is asked for (FTS5 terms on SQLite, `pg_trgm` on Postgres).
pub const SEARCH_TRIGRAMS_MAX: usize = 8;

/// The start (in characters) of each trigram of `chars` the index is asked for, ascending: its distinct
/// trigrams (as FTS5 folds them) when there are at most [`SEARCH_TRIGRAMS_MAX`], else that many, those
/// of more distinct characters first (`aab` says more than `aaa`; letters and digits before others,
/// which `pg_trgm` skips), spread evenly over the text among equals. Empty for fewer than 3 characters.
pub fn chosen_trigrams(chars: &[char]) -> Vec<usize> {
    if chars.len() < 3 {
        return Vec::new();
    }
    let mut seen = std::collections::HashSet::new();
    // (start, score): the first place of each distinct folded trigram.
    let mut distinct: Vec<(usize, (usize, usize))> = Vec::new();
    for start in 0..=chars.len() - 3 {
        let t: [char; 3] = std::array::from_fn(|i| fts5_fold(chars[start + i]));
        if !seen.insert(t) {
            continue;
        }
        let mut kinds = t.to_vec();
        kinds.sort_unstable();
        kinds.dedup();
        let alphanumeric = t.iter().filter(|c| c.is_alphanumeric()).count();
        distinct.push((start, (kinds.len(), alphanumeric)));
    }
    if distinct.len() <= SEARCH_TRIGRAMS_MAX {
        return distinct.into_iter().map(|(start, _)| start).collect();
    }
    let mut scores: Vec<(usize, usize)> = distinct.iter().map(|&(_, s)| s).collect();
    scores.sort_unstable_by(|a, b| b.cmp(a));
    scores.dedup();
    let mut chosen = Vec::with_capacity(SEARCH_TRIGRAMS_MAX);
    for score in scores {
        let wanted = SEARCH_TRIGRAMS_MAX - chosen.len();
        if wanted == 0 {
            break;
        }
        let group: Vec<usize> = distinct
            .iter()
            .filter(|&&(_, s)| s == score)
            .map(|&(start, _)| start)
            .collect();
        if group.len() <= wanted {
            chosen.extend(group);
        } else {
            // Evenly spread: the middle of each of `wanted` equal slices of the group.
            chosen.extend((0..wanted).map(|i| group[(2 * i + 1) * group.len() / (2 * wanted)]));
        }
    }
    chosen.sort_unstable();
    chosen
}

/// The FTS5 query of the candidates of `text` (3 or more characters): its chosen trigrams
/// ([`chosen_trigrams`]), each a quoted phrase (quotes doubled), all required (`AND`). A row holding
/// `text` holds each, so it is a candidate; a candidate may hold them apart, hence the exact check.
pub fn fts_candidates(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    chosen_trigrams(&chars)
        .into_iter()
        .map(|start| {
            let t: String = chars[start..start + 3].iter().collect();
            format!("\"{}\"", t.replace('"', "\"\""))
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// The Postgres `ILIKE` pattern of the candidates of `text` (3 or more characters): the chosen trigrams
/// ([`chosen_trigrams`]), overlapping or adjacent ones joined into one piece, in the text's order, `%`
/// between and around (`%`, `_` and `\` taken literally). The pieces do not overlap in `text`, so a value
/// that contains `text` matches it; `pg_trgm` reads at most a few trigrams from each of the at most
/// [`SEARCH_TRIGRAMS_MAX`] × 3 characters.
pub fn like_candidates(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    for start in chosen_trigrams(&chars) {
        match pieces.last_mut() {
            Some((_, end)) if start <= *end => *end = start + 3,
            _ => pieces.push((start, start + 3)),
        }
    }
    let mut pattern = String::from("%");
    for (start, end) in pieces {
        for &c in &chars[start..end] {
            if matches!(c, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('%');
    }
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigrams_of(text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        chosen_trigrams(&chars)
            .into_iter()
            .map(|s| chars[s..s + 3].iter().collect())
            .collect()
    }

    #[test]
    fn a_short_text_uses_each_distinct_trigram_once() {
        assert_eq!(trigrams_of("ab"), Vec::<String>::new());
        assert_eq!(trigrams_of("abc"), ["abc"]);
        assert_eq!(
            trigrams_of("Refund 42"),
            ["Ref", "efu", "fun", "und", "nd ", "d 4", " 42"]
        );
        // `aaa` once; `AAA` folds to it.
        assert_eq!(trigrams_of("aaaAAAaaa"), ["aaa"]);
        assert_eq!(fts_candidates("a\"bc"), "\"a\"\"b\" AND \"\"\"bc\"");
        assert_eq!(like_candidates("50%_off"), "%50\\%\\_off%");
    }

    /// The work bound: whatever the text (256 bytes at most, ledger::ids::is_search_text), at most
    /// SEARCH_TRIGRAMS_MAX trigrams reach the index, on either backend.
    #[test]
    fn a_long_text_uses_at_most_the_bound_of_trigrams() {
        let nothing: String = (0..256u32)
            .map(|i| char::from(b'!' + ((i * 7919 + i * i * 31) % 94) as u8))
            .collect();
        for text in [
            "a".repeat(256),
            "0".repeat(256),
            format!("INV-{}", "0".repeat(252)),
            nothing,
            "é".repeat(128),
            format!("{}b{}", "a".repeat(128), "a".repeat(127)),
        ] {
            let chosen = trigrams_of(&text);
            assert!(
                !chosen.is_empty() && chosen.len() <= SEARCH_TRIGRAMS_MAX,
                "{text}: {chosen:?}"
            );
            let terms = fts_candidates(&text);
            assert_eq!(terms.matches(" AND ").count() + 1, chosen.len(), "{terms}");
            let pattern = like_candidates(&text);
            let literal = pattern
                .replace("\\%", "")
                .replace("\\_", "")
                .replace("\\\\", "");
            assert!(
                literal.chars().filter(|&c| c != '%').count() <= 3 * SEARCH_TRIGRAMS_MAX,
                "{pattern}"
            );
        }
        // The one rare trigram of a long run is kept.
        let chosen = trigrams_of(&format!("{}b{}", "a".repeat(128), "a".repeat(127)));
        assert!(chosen.contains(&"aab".to_string()) && chosen.contains(&"baa".to_string()));
        assert_eq!(trigrams_of(&"0".repeat(256)), ["000"]);
    }

    /// Whatever the text, each chosen piece is a part of it, in its order, apart: a value holding the
    /// text matches the pattern (checked by a regex over many texts).
    #[test]
    fn the_candidate_pattern_matches_every_value_that_holds_the_text() {
        for text in [
            "abcdefghijklmnopqrstuvwxyz0123456789",
            "INV-0000000001-INV-0000000002-INV-0000000003",
            "the quick brown fox jumps over the lazy dog again and again",
        ] {
            let pattern = like_candidates(text);
            let pieces: Vec<&str> = pattern.trim_matches('%').split('%').collect();
            let mut at = 0;
            for piece in pieces {
                let found = text[at..]
                    .find(piece)
                    .unwrap_or_else(|| panic!("{piece} in {text}"));
                at += found + piece.len();
            }
        }
    }
}
