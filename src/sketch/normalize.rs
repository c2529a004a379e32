//! Normalization (spec §2) into a buffer, by the fastest path that gives the spec's result:
//!
//! - pure ASCII text (any options but NFKC): eight bytes at a time, branch-free;
//! - other text with the default options (lowercase, collapse, no NFKC): one pass that
//!   lowercases and collapses white space together, ASCII runs eight bytes at a time and
//!   other characters through a lowercase table (built lazily, per block of 128 code points,
//!   from `char::to_lowercase` itself, so it cannot disagree with it);
//!   (an uppercase sigma, whose lowercase depends on its word, lowercases that word whole);
//! - anything else (NFKC, options off on non-ASCII text): the general path,
//!   `str::to_lowercase` and a split.
//!
//! Every path must give the general path's bytes; the tests compare them on random text.

use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;

use super::shingle::ShingleConfig;

impl ShingleConfig {
    /// Normalizes `text` into `out` (cleared first), as spec §2 describes.
    pub fn normalize_into(&self, text: &str, out: &mut String) {
        let mut bytes = std::mem::take(out).into_bytes();
        self.normalize_to_bytes(text, &mut bytes);
        // The bytes are UTF-8 by construction (whole characters only); this check is for
        // callers outside the crate, which want a `String`. Inside, the sketchers use the bytes.
        *out = String::from_utf8(bytes).unwrap_or_default();
    }

    /// [`ShingleConfig::normalize_into`] as bytes (always UTF-8: whole characters are
    /// written), without checking them again.
    pub(crate) fn normalize_to_bytes(&self, text: &str, out: &mut Vec<u8>) {
        out.clear();
        if text.is_ascii() && !self.nfkc {
            // ASCII fast path: NFKC and full case mapping are identities / ASCII-only here.
            self.normalize_ascii(text.as_bytes(), out);
        } else if self.lowercase && self.collapse_whitespace && !self.nfkc {
            normalize_mixed(text, out);
        } else {
            let mut s = String::new();
            self.normalize_unicode(text, &mut s);
            out.extend_from_slice(s.as_bytes());
        }
    }

    /// The general normalization (any text); every other path must give the same result.
    pub(super) fn normalize_unicode(&self, text: &str, out: &mut String) {
        out.clear();
        let composed;
        let text = if self.nfkc {
            composed = text.nfkc().collect::<String>();
            composed.as_str()
        } else {
            text
        };
        let lowered;
        let text = if self.lowercase {
            // str::to_lowercase applies Final_Sigma, as Python's str.lower does.
            lowered = text.to_lowercase();
            lowered.as_str()
        } else {
            text
        };
        if !self.collapse_whitespace {
            out.push_str(text);
            return;
        }
        for word in text.split(char::is_whitespace).filter(|w| !w.is_empty()) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }

    pub(super) fn normalize_ascii(&self, bytes: &[u8], buf: &mut Vec<u8>) {
        buf.clear();
        buf.resize(bytes.len(), 0);
        let collapse = self.collapse_whitespace;
        let lowercase = self.lowercase;
        // Branch-free: every byte is written at `len`, which advances unless the byte is a
        // space following a space (or starting the text).
        let mut len = 0usize;
        let mut prev_space = true;
        let one = |b: u8, buf: &mut Vec<u8>, len: &mut usize, prev_space: &mut bool| {
            let space = collapse && is_ascii_space(b);
            let v = if space {
                b' '
            } else if lowercase {
                b.to_ascii_lowercase()
            } else {
                b
            };
            if let Some(slot) = buf.get_mut(*len) {
                *slot = v;
            }
            *len += usize::from(!(space && *prev_space));
            *prev_space = space;
        };
        // Eight bytes at a time (SWAR) where nothing collapses (see `ascii_word`); other words
        // go byte by byte.
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut x = [0u8; 8];
            x.copy_from_slice(word);
            let x = u64::from_le_bytes(x);
            let fast = if collapse {
                ascii_word(x, prev_space)
            } else {
                Some((x, false))
            };
            match (fast, buf.get_mut(len..len + 8)) {
                (Some((x, ends_in_space)), Some(dst)) => {
                    let lowered = if lowercase { ascii_lower_word(x) } else { x };
                    dst.copy_from_slice(&lowered.to_le_bytes());
                    len += 8;
                    prev_space = ends_in_space;
                }
                _ => {
                    for &b in word {
                        one(b, buf, &mut len, &mut prev_space);
                    }
                }
            }
        }
        for &b in words.remainder() {
            one(b, buf, &mut len, &mut prev_space);
        }
        if collapse && len > 0 && buf.get(len - 1) == Some(&b' ') {
            len -= 1;
        }
        buf.truncate(len);
    }
}

/// Unicode White_Space within ASCII is exactly TAB, LF, VT, FF, CR and SPACE.
#[inline(always)]
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// For eight ASCII bytes `x` (little-endian) met after a space (`prev_space`) or not: when
/// collapsing would only turn lone TAB..CR bytes into spaces (no two adjacent white-space
/// bytes, none continuing a run), `Some((the bytes with those spaces, whether the last byte
/// is white space))`. (A line break between words is the common case in wrapped text; it
/// took the byte-by-byte path when any TAB..CR did.)
#[inline(always)]
fn ascii_word(x: u64, prev_space: bool) -> Option<(u64, bool)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // 0x01 in each byte in TAB..CR, then 0xFF: those bytes are replaced by spaces.
    let breaks = swar_in_range(x, b'\t', b'\r') >> 7;
    let spaced = (x & !(breaks * 0xFF)) | (breaks * u64::from(b' '));
    let space = swar_in_range(spaced, b' ', b' ');
    let plain = space & (space >> 8) == 0 && !(prev_space && space & 0x80 != 0);
    debug_assert!(breaks & !ONES == 0);
    plain.then_some((spaced, space >> 63 != 0))
}

/// Eight ASCII bytes lowercased: bit 5 set in every byte in 'A'..='Z'.
#[inline(always)]
fn ascii_lower_word(x: u64) -> u64 {
    x | (swar_in_range(x, b'A', b'Z') >> 2)
}

/// For eight ASCII bytes (each below 0x80) packed little-endian in `x`: 0x80 in every byte
/// that lies in `lo..=hi`, 0 elsewhere. Per byte, `b + (0x80 - c)` sets bit 7 exactly when
/// `b >= c`, and cannot carry into the next byte since `b <= 0x7F`.
#[inline(always)]
pub(super) fn swar_in_range(x: u64, lo: u8, hi: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let ge_lo = x.wrapping_add(ONES * u64::from(0x80 - lo)) & HIGH;
    let gt_hi = x.wrapping_add(ONES * u64::from(0x80 - hi - 1)) & HIGH;
    ge_lo & !gt_hi
}

/// Lowercases and collapses white space in one pass (the default options), for text that
/// need not be ASCII.
fn normalize_mixed(text: &str, buf: &mut Vec<u8>) {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    buf.clear();
    buf.reserve(text.len() + 8);
    let mut prev_space = true;
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(word) = rest.as_bytes().first_chunk::<8>() {
            let x = u64::from_le_bytes(*word);
            if x & HIGH == 0 {
                match ascii_word(x, prev_space) {
                    Some((x, ends_in_space)) => {
                        buf.extend_from_slice(&ascii_lower_word(x).to_le_bytes());
                        prev_space = ends_in_space;
                    }
                    None => {
                        for &b in word {
                            push_ascii(b, buf, &mut prev_space);
                        }
                    }
                }
                // Eight ASCII bytes end on a character boundary.
                rest = rest.get(8..).unwrap_or_default();
                continue;
            }
        }
        let mut chars = rest.chars();
        let Some(c) = chars.next() else { break };
        if c.is_ascii() {
            push_ascii(c as u8, buf, &mut prev_space);
            rest = chars.as_str();
            continue;
        }
        match lower_entry(c) {
            Lower::Space => {
                if !prev_space {
                    buf.push(b' ');
                }
                prev_space = true;
                rest = chars.as_str();
                continue;
            }
            Lower::Char(l) => push_char(l, buf),
            Lower::Many => c.to_lowercase().for_each(|l| push_char(l, buf)),
            Lower::Sigma => {
                rest = lower_word_with_sigma(text, text.len() - rest.len(), buf);
                prev_space = false;
                continue;
            }
        }
        prev_space = false;
        rest = chars.as_str();
    }
    if buf.last() == Some(&b' ') {
        buf.pop();
    }
}

/// Lowercases the word holding the uppercase sigma at byte `at` of `text` (`buf` holds the
/// normalized text up to it) and returns the text after that word. Final_Sigma makes the
/// sigma final when a cased letter precedes it and none follows, case-ignorable characters
/// skipped; white space is neither cased nor case-ignorable, so the word (a run without
/// white space) decides, and `str::to_lowercase` of the word alone equals its part of the
/// whole text's.
fn lower_word_with_sigma<'t>(text: &'t str, at: usize, buf: &mut Vec<u8>) -> &'t str {
    let (before, after) = text.split_at_checked(at).unwrap_or((text, ""));
    let start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = at + after.find(char::is_whitespace).unwrap_or(after.len());
    // The word's start in `buf`: after its last space (UTF-8 puts byte 0x20 in no other
    // character), or the start.
    let out_start = buf.iter().rposition(|&b| b == b' ').map_or(0, |p| p + 1);
    buf.truncate(out_start);
    buf.extend_from_slice(
        text.get(start..end)
            .unwrap_or_default()
            .to_lowercase()
            .as_bytes(),
    );
    text.get(end..).unwrap_or_default()
}

#[inline(always)]
fn push_ascii(b: u8, buf: &mut Vec<u8>, prev_space: &mut bool) {
    if is_ascii_space(b) {
        if !*prev_space {
            buf.push(b' ');
        }
        *prev_space = true;
    } else {
        buf.push(b.to_ascii_lowercase());
        *prev_space = false;
    }
}

#[inline(always)]
fn push_char(c: char, buf: &mut Vec<u8>) {
    // Four bytes written, then the unused ones dropped: a copy of fixed length inlines into
    // one store, where a copy of 2 to 4 bytes became a call to memmove.
    let mut utf8 = [0u8; 4];
    let len = c.encode_utf8(&mut utf8).len();
    buf.extend_from_slice(&utf8);
    buf.truncate(buf.len() - (4 - len));
}

/// What lowercasing makes of one non-ASCII character.
#[derive(Debug)]
enum Lower {
    /// White space (collapsed into one ASCII space).
    Space,
    /// Exactly one character (often the same one).
    Char(char),
    /// Several characters (`char::to_lowercase` says which).
    Many,
    /// U+03A3, whose lowercase depends on its word.
    Sigma,
}

/// A table entry: the lowercase's code point minus the character's, or one of these markers
/// (no difference of code points comes near them).
const ENTRY_SPACE: i32 = i32::MIN;
const ENTRY_MANY: i32 = i32::MIN + 1;
const ENTRY_SIGMA: i32 = i32::MIN + 2;

const BLOCK_BITS: u32 = 7;
const BLOCK: usize = 1 << BLOCK_BITS;
/// Blocks of the Basic Multilingual Plane; characters above it are looked up directly (rare).
const BMP_BLOCKS: usize = 0x1_0000 / BLOCK;

/// Per block: `None` while not built, then `Some(None)` for a block where every character
/// is its own lowercase and none is white space (most of them: CJK, Hangul, …), or the
/// block's entries.
type Block = Option<Box<[i32; BLOCK]>>;
static BLOCKS: [OnceLock<Block>; BMP_BLOCKS] = [const { OnceLock::new() }; BMP_BLOCKS];

#[inline]
fn lower_entry(c: char) -> Lower {
    let cp = c as u32;
    let entry = match BLOCKS.get((cp >> BLOCK_BITS) as usize) {
        Some(cell) => match cell.get_or_init(|| build_block(cp >> BLOCK_BITS)) {
            Some(block) => block.get(cp as usize % BLOCK).copied().unwrap_or(0),
            None => 0,
        },
        None => entry_of(c),
    };
    match entry {
        0 => Lower::Char(c),
        ENTRY_SPACE => Lower::Space,
        ENTRY_MANY => Lower::Many,
        ENTRY_SIGMA => Lower::Sigma,
        delta => match char::from_u32(cp.wrapping_add_signed(delta)) {
            Some(l) => Lower::Char(l),
            None => Lower::Many,
        },
    }
}

/// The entry of one character, from the standard library's own Unicode tables.
fn entry_of(c: char) -> i32 {
    if c == 'Σ' {
        return ENTRY_SIGMA;
    }
    if c.is_whitespace() {
        return ENTRY_SPACE;
    }
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l as i32 - c as i32,
        _ => ENTRY_MANY,
    }
}

fn build_block(block: u32) -> Block {
    let mut entries = [0i32; BLOCK];
    for (i, e) in entries.iter_mut().enumerate() {
        // Surrogate code points are no characters: their entries stay 0, never looked up.
        if let Some(c) = char::from_u32((block << BLOCK_BITS) + i as u32) {
            *e = entry_of(c);
        }
    }
    entries.iter().any(|&e| e != 0).then(|| Box::new(entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_text(next: &mut impl FnMut() -> u64, len: usize) -> String {
        // ASCII of every kind, Latin accents, Greek with both sigmas, Cyrillic, CJK, Hangul,
        // Georgian, Turkish dotted I (two-character lowercase), Kelvin and Ohm signs (which
        // lowercase into other blocks), Unicode white space, characters above the BMP.
        const POOL: &[char] = &[
            'a',
            'Z',
            'q',
            ' ',
            ' ',
            ' ',
            '\t',
            '\n',
            '\u{0B}',
            '\u{0C}',
            '\r',
            '.',
            '0',
            'É',
            'é',
            'ß',
            'ẞ',
            'Ö',
            'Ω',
            'ω',
            'Σ',
            'σ',
            'ς',
            'Ж',
            'ж',
            'Ё',
            '中',
            '文',
            '한',
            'ა',
            'Ა',
            'İ',
            'ı',
            'K',
            'Ω',
            'Ⱥ',
            '\u{A0}',
            '\u{85}',
            '\u{2003}',
            '\u{2028}',
            '\u{3000}',
            '\u{1680}',
            '\u{200B}',
            '𐐀',
            '𐐨',
            '😀',
            '\u{1E921}',
            'ǅ',
            'ᾈ',
            // Around sigmas: Greek capitals and case-ignorable marks (a combining acute, an
            // apostrophe, a soft hyphen), so that both Final_Sigma outcomes occur.
            'Σ',
            'Α',
            'Λ',
            '\u{301}',
            '\'',
            '\u{AD}',
        ];
        (0..len)
            .map(|_| {
                let r = next();
                if r.is_multiple_of(3) {
                    // Runs of plain ASCII letters, so the eight-byte path is taken too.
                    (b'a' + (r >> 8) as u8 % 26) as char
                } else {
                    POOL[(r >> 8) as usize % POOL.len()]
                }
            })
            .collect()
    }

    /// The one-pass path equals the general path on random text of many scripts.
    #[test]
    fn mixed_path_equals_general_path() {
        let mut state = 0x00C0_FFEE_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let cfg = ShingleConfig::default();
        let (mut fast, mut general, mut bytes) = (String::new(), String::new(), Vec::new());
        let mut sigmas = 0;
        for round in 0..30_000 {
            let text = random_text(&mut next, round % 50);
            cfg.normalize_unicode(&text, &mut general);
            normalize_mixed(&text, &mut bytes);
            assert_eq!(String::from_utf8_lossy(&bytes), general, "{text:?}");
            cfg.normalize_into(&text, &mut fast);
            assert_eq!(fast, general, "{text:?}");
            sigmas += usize::from(text.contains('Σ'));
        }
        assert!(sigmas > 5_000, "{sigmas} texts with an uppercase sigma");
    }

    /// Every character's table entry agrees with `str::to_lowercase` and `is_whitespace`.
    #[test]
    fn table_agrees_with_the_standard_library_everywhere() {
        for cp in 0x80..=0x10_FFFFu32 {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            let want = c.to_string().to_lowercase();
            match lower_entry(c) {
                Lower::Space => assert!(c.is_whitespace(), "{c:?}"),
                Lower::Char(l) => {
                    assert!(!c.is_whitespace(), "{c:?}");
                    assert_eq!(l.to_string(), want, "{c:?}");
                }
                Lower::Many => assert!(want.chars().count() > 1, "{c:?}"),
                Lower::Sigma => assert_eq!(c, 'Σ'),
            }
        }
    }

    #[test]
    fn swar_range_is_exact_for_ascii() {
        for (lo, hi) in [(b' ', b' '), (b'\t', b'\r'), (b'A', b'Z')] {
            for b in 0u8..0x80 {
                for pos in 0..8 {
                    // The byte under test among neighbours at both ends of ASCII.
                    let mut bytes = [if pos % 2 == 0 { 0x7F } else { 0x00 }; 8];
                    bytes[pos] = b;
                    let got = swar_in_range(u64::from_le_bytes(bytes), lo, hi);
                    let want: u64 = bytes
                        .iter()
                        .enumerate()
                        .filter(|&(_, c)| (lo..=hi).contains(c))
                        .map(|(i, _)| 0x80u64 << (8 * i))
                        .sum();
                    assert_eq!(got, want, "{bytes:?} in {lo}..={hi}");
                }
            }
        }
    }

    /// The ASCII path (eight bytes at a time where nothing collapses) equals the general
    /// Unicode path on random ASCII: runs of every kind of whitespace at every offset,
    /// upper and lower case, lengths around multiples of 8, every option combination.
    #[test]
    fn ascii_path_equals_unicode_path() {
        let alphabet: &[u8] = b"aZ \t\n\x0b\x0c\r Mq09 .-_ \x01\x7f";
        let mut state = 0x5EED_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20_000 {
            let len = (round % 40) as usize;
            let spacey = next() % 3; // how often whitespace appears
            let text: String = (0..len)
                .map(|_| {
                    let r = next();
                    let b = if r % 4 < spacey {
                        b" \t\n\x0b\x0c\r"[(r >> 8) as usize % 6]
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    };
                    b as char
                })
                .collect();
            for (lowercase, collapse_whitespace) in
                [(true, true), (true, false), (false, true), (false, false)]
            {
                let cfg = ShingleConfig {
                    lowercase,
                    collapse_whitespace,
                    ..ShingleConfig::default()
                };
                let (mut fast, mut general, mut mixed) = (Vec::new(), String::new(), Vec::new());
                cfg.normalize_ascii(text.as_bytes(), &mut fast);
                cfg.normalize_unicode(&text, &mut general);
                assert_eq!(
                    fast,
                    general.as_bytes(),
                    "{text:?} lowercase {lowercase} collapse {collapse_whitespace}"
                );
                if lowercase && collapse_whitespace {
                    normalize_mixed(&text, &mut mixed);
                    assert_eq!(mixed, general.as_bytes(), "{text:?}");
                }
            }
        }
    }
}
