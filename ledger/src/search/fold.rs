//! The case folding of SQLite's FTS5 `trigram` tokenizer (its default `case_sensitive 0`,
//! `remove_diacritics 0`), so that search can check a candidate exactly as the index folds it
//! (docs/ledger.md "Search").
//!
//! [`fts5_fold`] is SQLite 3.46's `sqlite3Fts5UnicodeFold(c, 0)` (the bundled library's, `fts5_unicode2.c`):
//! ASCII `A`–`Z` to `a`–`z`; other characters below U+10000 by the simple case folding of the Unicode
//! version SQLite's table was generated from; Deseret capitals (U+10400–U+10427) to their small letters;
//! anything else unchanged. The tables below are SQLite's, copied. A test compares the function with the
//! linked SQLite for every character (`ledger/src/search/fold.rs`, `fold_is_the_trigram_tokenizers`).

/// `(first code point, flags, range length)`: a range whose characters (every one, or when `flags & 1`
/// every second from the first) fold to `(c + OFFSETS[flags >> 1]) & 0xFFFF`.
const ENTRIES: [(u16, u8, u8); 163] = [
    (65, 14, 26),
    (181, 64, 1),
    (192, 14, 23),
    (216, 14, 7),
    (256, 1, 48),
    (306, 1, 6),
    (313, 1, 16),
    (330, 1, 46),
    (376, 116, 1),
    (377, 1, 6),
    (383, 104, 1),
    (385, 50, 1),
    (386, 1, 4),
    (390, 44, 1),
    (391, 0, 1),
    (393, 42, 2),
    (395, 0, 1),
    (398, 32, 1),
    (399, 38, 1),
    (400, 40, 1),
    (401, 0, 1),
    (403, 42, 1),
    (404, 46, 1),
    (406, 52, 1),
    (407, 48, 1),
    (408, 0, 1),
    (412, 52, 1),
    (413, 54, 1),
    (415, 56, 1),
    (416, 1, 6),
    (422, 60, 1),
    (423, 0, 1),
    (425, 60, 1),
    (428, 0, 1),
    (430, 60, 1),
    (431, 0, 1),
    (433, 58, 2),
    (435, 1, 4),
    (439, 62, 1),
    (440, 0, 1),
    (444, 0, 1),
    (452, 2, 1),
    (453, 0, 1),
    (455, 2, 1),
    (456, 0, 1),
    (458, 2, 1),
    (459, 1, 18),
    (478, 1, 18),
    (497, 2, 1),
    (498, 1, 4),
    (502, 122, 1),
    (503, 134, 1),
    (504, 1, 40),
    (544, 110, 1),
    (546, 1, 18),
    (570, 70, 1),
    (571, 0, 1),
    (573, 108, 1),
    (574, 68, 1),
    (577, 0, 1),
    (579, 106, 1),
    (580, 28, 1),
    (581, 30, 1),
    (582, 1, 10),
    (837, 36, 1),
    (880, 1, 4),
    (886, 0, 1),
    (902, 18, 1),
    (904, 16, 3),
    (908, 26, 1),
    (910, 24, 2),
    (913, 14, 17),
    (931, 14, 9),
    (962, 0, 1),
    (975, 4, 1),
    (976, 140, 1),
    (977, 142, 1),
    (981, 146, 1),
    (982, 144, 1),
    (984, 1, 24),
    (1008, 136, 1),
    (1009, 138, 1),
    (1012, 130, 1),
    (1013, 128, 1),
    (1015, 0, 1),
    (1017, 152, 1),
    (1018, 0, 1),
    (1021, 110, 3),
    (1024, 34, 16),
    (1040, 14, 32),
    (1120, 1, 34),
    (1162, 1, 54),
    (1216, 6, 1),
    (1217, 1, 14),
    (1232, 1, 88),
    (1329, 22, 38),
    (4256, 66, 38),
    (4295, 66, 1),
    (4301, 66, 1),
    (7680, 1, 150),
    (7835, 132, 1),
    (7838, 96, 1),
    (7840, 1, 96),
    (7944, 150, 8),
    (7960, 150, 6),
    (7976, 150, 8),
    (7992, 150, 8),
    (8008, 150, 6),
    (8025, 151, 8),
    (8040, 150, 8),
    (8072, 150, 8),
    (8088, 150, 8),
    (8104, 150, 8),
    (8120, 150, 2),
    (8122, 126, 2),
    (8124, 148, 1),
    (8126, 100, 1),
    (8136, 124, 4),
    (8140, 148, 1),
    (8152, 150, 2),
    (8154, 120, 2),
    (8168, 150, 2),
    (8170, 118, 2),
    (8172, 152, 1),
    (8184, 112, 2),
    (8186, 114, 2),
    (8188, 148, 1),
    (8486, 98, 1),
    (8490, 92, 1),
    (8491, 94, 1),
    (8498, 12, 1),
    (8544, 8, 16),
    (8579, 0, 1),
    (9398, 10, 26),
    (11264, 22, 47),
    (11360, 0, 1),
    (11362, 88, 1),
    (11363, 102, 1),
    (11364, 90, 1),
    (11367, 1, 6),
    (11373, 84, 1),
    (11374, 86, 1),
    (11375, 80, 1),
    (11376, 82, 1),
    (11378, 0, 1),
    (11381, 0, 1),
    (11390, 78, 2),
    (11392, 1, 100),
    (11499, 1, 4),
    (11506, 0, 1),
    (42560, 1, 46),
    (42624, 1, 24),
    (42786, 1, 14),
    (42802, 1, 62),
    (42873, 1, 4),
    (42877, 76, 1),
    (42878, 1, 10),
    (42891, 0, 1),
    (42893, 74, 1),
    (42896, 1, 4),
    (42912, 1, 10),
    (42922, 72, 1),
    (65313, 14, 26),
];
const OFFSETS: [u16; 77] = [
    1, 2, 8, 15, 16, 26, 28, 32, 37, 38, 40, 48, 63, 64, 69, 71, 79, 80, 116, 202, 203, 205, 206,
    207, 209, 210, 211, 213, 214, 217, 218, 219, 775, 7264, 10792, 10795, 23228, 23256, 30204,
    54721, 54753, 54754, 54756, 54787, 54793, 54809, 57153, 57274, 57921, 58019, 58363, 61722,
    65268, 65341, 65373, 65406, 65408, 65410, 65415, 65424, 65436, 65439, 65450, 65462, 65472,
    65476, 65478, 65480, 65482, 65488, 65506, 65511, 65514, 65521, 65527, 65528, 65529,
];

/// `c` as FTS5's trigram tokenizer reads and folds it before it forms trigrams: U+FFFE and U+FFFF read
/// as U+FFFD (SQLite's `READ_UTF8`), then `sqlite3Fts5UnicodeFold`.
pub fn fts5_fold(c: char) -> char {
    let code = c as u32;
    if code == 0xFFFE || code == 0xFFFF {
        return '\u{FFFD}';
    }
    if code < 128 {
        return c.to_ascii_lowercase();
    }
    if code < 65536 {
        // The last range that starts at or before `code` (ENTRIES[0] starts at 65, below every `code`).
        let i = ENTRIES.partition_point(|&(start, _, _)| u32::from(start) <= code) - 1;
        let (start, flags, len) = ENTRIES[i];
        let start = u32::from(start);
        if code < start + u32::from(len) && (u32::from(flags) & 1 & (start ^ code)) == 0 {
            let folded = (code + u32::from(OFFSETS[usize::from(flags >> 1)])) & 0xFFFF;
            return char::from_u32(folded).unwrap_or(c);
        }
        return c;
    }
    if (66560..66600).contains(&code) {
        return char::from_u32(code + 40).unwrap_or(c);
    }
    c
}

/// `text` as the trigram tokenizer reads it: each character folded ([`fts5_fold`]), up to the first NUL
/// (where the tokenizer stops).
pub fn fts5_folded(text: &str) -> String {
    text.chars()
        .take_while(|&c| c != '\0')
        .map(fts5_fold)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_folds_like_the_examples() {
        assert_eq!(
            fts5_folded("INV-0042 Ærø ΣΑΣ Ωμέγα ς"),
            "inv-0042 ærø σασ ωμέγα σ"
        );
        // No simple folding: unchanged (full folding would give "i̇" and "ss").
        assert_eq!(fts5_folded("İß"), "İß");
        assert_eq!(fts5_folded("ab\0CD"), "ab");
        assert_eq!(fts5_fold('\u{10400}'), '\u{10428}');
        assert_eq!(fts5_fold('\u{1F600}'), '\u{1F600}');
        assert_eq!(fts5_fold('\u{FFFF}'), '\u{FFFD}');
    }

    /// Every character, folded by the linked SQLite's trigram tokenizer: each row of a scratch FTS5
    /// table holds characters three times over (`ccc`), so the trigram at every third position is
    /// the folded character three times, read back through `fts5vocab`.
    #[test]
    fn fold_is_the_trigram_tokenizers() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'trigram');
             CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');",
        )
        .unwrap();
        let every: Vec<char> = (1..=0x10FFFFu32).filter_map(char::from_u32).collect();
        let tx = db.unchecked_transaction().unwrap();
        for (row, chunk) in every.chunks(4096).enumerate() {
            let text: String = chunk.iter().flat_map(|&c| [c, c, c]).collect();
            tx.execute(
                "INSERT INTO t (rowid, x) VALUES (?1, ?2)",
                rusqlite::params![row as i64, text],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        let mut read = db
            .prepare("SELECT doc, offset, term FROM v WHERE offset % 3 = 0")
            .unwrap();
        let mut checked = 0;
        let rows = read
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .unwrap();
        for row in rows {
            let (doc, offset, term) = row.unwrap();
            let c = every[doc as usize * 4096 + offset as usize / 3];
            let folded = fts5_fold(c);
            assert_eq!(
                term,
                format!("{folded}{folded}{folded}"),
                "U+{:04X}",
                c as u32
            );
            checked += 1;
        }
        assert_eq!(checked, every.len()); // U+0000 (left out) ends a text: never indexed
    }
}
