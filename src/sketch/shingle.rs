//! Text normalization and shingling: text → a stream of 64-bit shingle hashes.
//!
//! Normalization (spec §2): optional NFKC, then Unicode lowercase (full mapping, with
//! Final_Sigma, as `str::to_lowercase` and Python's `str.lower`), then every run of Unicode
//! White_Space collapsed to one U+0020 and leading/trailing space removed. Shingles are byte
//! ranges of the normalized buffer, hashed with xxh3 straight from it: no allocation per shingle.

use unicode_normalization::UnicodeNormalization;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::keyed::ShingleHash;
use crate::{Error, Result};

/// The largest shingle width accepted.
pub const MAX_SHINGLE_WIDTH: usize = 64;

/// Character n-grams or word n-grams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShingleKind {
    /// n consecutive Unicode scalar values of the normalized text (spaces included).
    Char(usize),
    /// n consecutive space-separated words of the normalized text, joined by single spaces.
    Word(usize),
}

impl ShingleKind {
    /// The shingle width n.
    pub fn width(self) -> usize {
        match self {
            ShingleKind::Char(n) | ShingleKind::Word(n) => n,
        }
    }
}

impl std::fmt::Display for ShingleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShingleKind::Char(n) => write!(f, "char:{n}"),
            ShingleKind::Word(n) => write!(f, "word:{n}"),
        }
    }
}

impl std::str::FromStr for ShingleKind {
    type Err = Error;
    /// Parses `char:N` or `word:N` (`char` and `word` alone mean the defaults 5 and 3).
    fn from_str(s: &str) -> Result<ShingleKind> {
        let (kind, n) = match s.split_once(':') {
            Some((k, n)) => {
                let n: usize = n.parse().map_err(|_| {
                    Error::invalid("shingle", format!("width in {s:?} is not a number"))
                })?;
                (k, Some(n))
            }
            None => (s, None),
        };
        let shingle = match kind {
            "char" => ShingleKind::Char(n.unwrap_or(5)),
            "word" => ShingleKind::Word(n.unwrap_or(3)),
            _ => {
                return Err(Error::invalid(
                    "shingle",
                    format!("{s:?} is not of the form char:N or word:N"),
                ));
            }
        };
        ShingleConfig {
            kind: shingle,
            ..ShingleConfig::default()
        }
        .validate()?;
        Ok(shingle)
    }
}

/// How text is normalized and cut into shingles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShingleConfig {
    /// Char or word n-grams, and n.
    pub kind: ShingleKind,
    /// Apply Unicode NFKC before lowercasing (off by default).
    pub nfkc: bool,
    /// Lowercase (on by default).
    pub lowercase: bool,
    /// Collapse White_Space runs to one space and trim (on by default).
    pub collapse_whitespace: bool,
}

impl Default for ShingleConfig {
    fn default() -> Self {
        ShingleConfig {
            kind: ShingleKind::Char(5),
            nfkc: false,
            lowercase: true,
            collapse_whitespace: true,
        }
    }
}

impl ShingleConfig {
    /// Character n-grams of width `n` with the default normalization.
    pub fn chars(n: usize) -> Self {
        ShingleConfig {
            kind: ShingleKind::Char(n),
            ..Self::default()
        }
    }

    /// Word n-grams of width `n` with the default normalization.
    pub fn words(n: usize) -> Self {
        ShingleConfig {
            kind: ShingleKind::Word(n),
            ..Self::default()
        }
    }

    /// Checks the width is in `1..=MAX_SHINGLE_WIDTH`.
    pub fn validate(&self) -> Result<()> {
        let n = self.kind.width();
        if n == 0 || n > MAX_SHINGLE_WIDTH {
            return Err(Error::invalid(
                "shingle",
                format!("width must be in 1..={MAX_SHINGLE_WIDTH}, got {n}"),
            ));
        }
        Ok(())
    }

    /// Normalizes `text` into `out` (cleared first), as spec §2 describes.
    pub fn normalize_into(&self, text: &str, out: &mut String) {
        out.clear();
        if text.is_ascii() && !self.nfkc {
            // ASCII fast path: NFKC and full case mapping are identities / ASCII-only here.
            self.normalize_ascii(text.as_bytes(), out);
            return;
        }
        self.normalize_unicode(text, out);
    }

    /// The general normalization (any text); the ASCII path must give the same result.
    fn normalize_unicode(&self, text: &str, out: &mut String) {
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

    fn normalize_ascii(&self, bytes: &[u8], out: &mut String) {
        let mut buf = std::mem::take(out).into_bytes();
        buf.clear();
        buf.resize(bytes.len(), 0);
        // Unicode White_Space within ASCII is exactly TAB, LF, VT, FF, CR and SPACE.
        let is_space = |b: u8| matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ');
        let collapse = self.collapse_whitespace;
        let lowercase = self.lowercase;
        // Branch-free: every byte is written at `len`, which advances unless the byte is a
        // space following a space (or starting the text).
        let mut len = 0usize;
        let mut prev_space = true;
        let one = |b: u8, buf: &mut Vec<u8>, len: &mut usize, prev_space: &mut bool| {
            let space = collapse && is_space(b);
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
        // Eight bytes at a time (SWAR) where nothing collapses: no TAB..CR, no two adjacent
        // spaces, no space continuing a run. Such a word is copied, lowercased by setting
        // bit 5 of every byte in 'A'..='Z'. Other words go byte by byte.
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut x = [0u8; 8];
            x.copy_from_slice(word);
            let x = u64::from_le_bytes(x);
            let space = swar_in_range(x, b' ', b' ');
            let fast = !collapse
                || (swar_in_range(x, b'\t', b'\r') == 0
                    && space & (space >> 8) == 0
                    && !(prev_space && space & 0x80 != 0));
            match buf.get_mut(len..len + 8) {
                Some(dst) if fast => {
                    let lowered = if lowercase {
                        x | (swar_in_range(x, b'A', b'Z') >> 2)
                    } else {
                        x
                    };
                    dst.copy_from_slice(&lowered.to_le_bytes());
                    len += 8;
                    prev_space = collapse && space >> 63 != 0;
                }
                _ => {
                    for &b in word {
                        one(b, &mut buf, &mut len, &mut prev_space);
                    }
                }
            }
        }
        for &b in words.remainder() {
            one(b, &mut buf, &mut len, &mut prev_space);
        }
        if collapse && len > 0 && buf.get(len - 1) == Some(&b' ') {
            len -= 1;
        }
        buf.truncate(len);
        // Only ASCII bytes were written, so this cannot fail; fall back to empty just in case.
        *out = String::from_utf8(buf).unwrap_or_default();
    }

    /// Calls `f` with the hash of every shingle of already normalized text, in order: the
    /// XXH3 of spec §3 for a seed (a `u64` converts), or the keyed hash of spec §12.
    pub fn for_each_shingle_hash(
        &self,
        normalized: &str,
        hash: impl Into<ShingleHash>,
        mut f: impl FnMut(u64),
    ) {
        let seed = match hash.into() {
            ShingleHash::Xxh3(seed) => seed,
            ShingleHash::Keyed(key) => {
                self.for_each_shingle(normalized, |shingle| f(key.hash(shingle)));
                return;
            }
        };
        let bytes = normalized.as_bytes();
        if bytes.is_empty() {
            return;
        }
        match self.kind {
            ShingleKind::Char(n) => {
                if normalized.is_ascii() {
                    if bytes.len() <= n {
                        f(xxh3_64_with_seed(bytes, seed));
                        return;
                    }
                    if (4..=8).contains(&n) {
                        // The common case (char 5-grams): XXH3's 4-8 byte path, inlined.
                        let short = Xxh3Short::new(seed);
                        for window in bytes.windows(n) {
                            f(short.hash(window));
                        }
                        return;
                    }
                    for window in bytes.windows(n) {
                        f(xxh3_64_with_seed(window, seed));
                    }
                } else {
                    for_each_char_window(normalized, n, |range| {
                        if let Some(s) = bytes.get(range) {
                            f(xxh3_64_with_seed(s, seed));
                        }
                    });
                }
            }
            ShingleKind::Word(n) => for_each_word_window(normalized, n, |range| {
                if let Some(s) = bytes.get(range) {
                    f(xxh3_64_with_seed(s, seed));
                }
            }),
        }
    }
}

impl ShingleConfig {
    /// Calls `f` with the bytes of every shingle of already normalized text, in order (the
    /// windows of spec §3, before hashing).
    pub fn for_each_shingle(&self, normalized: &str, mut f: impl FnMut(&[u8])) {
        let bytes = normalized.as_bytes();
        if bytes.is_empty() {
            return;
        }
        let mut emit = |range: std::ops::Range<usize>| {
            if let Some(shingle) = bytes.get(range) {
                f(shingle);
            }
        };
        match self.kind {
            ShingleKind::Char(n) if normalized.is_ascii() => {
                if bytes.len() <= n {
                    emit(0..bytes.len());
                } else {
                    for start in 0..=bytes.len() - n {
                        emit(start..start + n);
                    }
                }
            }
            ShingleKind::Char(n) => for_each_char_window(normalized, n, emit),
            ShingleKind::Word(n) => for_each_word_window(normalized, n, emit),
        }
    }
}

/// XXH3-64 with a seed for inputs of 4 to 8 bytes, specialised so that the per-seed work is
/// done once and the per-input work inlines into the shingle loop. Equal to
/// `xxh3_64_with_seed` on such inputs (checked by a test on random inputs and seeds).
#[derive(Clone, Copy)]
struct Xxh3Short {
    bitflip: u64,
}

impl Xxh3Short {
    /// Bytes 8..16 and 16..24 of XXH3's default secret, little-endian.
    const SECRET_8: u64 = 0x1CAD_21F7_2C81_017C;
    const SECRET_16: u64 = 0xDB97_9083_E96D_D4DE;
    const PRIME_MX2: u64 = 0x9FB2_1C65_1E98_DF25;

    fn new(seed: u64) -> Self {
        let seed = seed ^ (u64::from((seed as u32).swap_bytes()) << 32);
        Xxh3Short {
            bitflip: (Self::SECRET_8 ^ Self::SECRET_16).wrapping_sub(seed),
        }
    }

    #[inline(always)]
    fn hash(self, input: &[u8]) -> u64 {
        let len = input.len();
        let read32 = |at: usize| -> u64 {
            let mut b = [0u8; 4];
            if let Some(src) = input.get(at..at + 4) {
                b.copy_from_slice(src);
            }
            u64::from(u32::from_le_bytes(b))
        };
        let input64 = read32(len - 4).wrapping_add(read32(0) << 32);
        let mut h = input64 ^ self.bitflip;
        h ^= h.rotate_left(49) ^ h.rotate_left(24);
        h = h.wrapping_mul(Self::PRIME_MX2);
        h ^= (h >> 35).wrapping_add(len as u64);
        h = h.wrapping_mul(Self::PRIME_MX2);
        h ^ (h >> 28)
    }
}

/// Byte ranges of every window of `n` scalar values; one range of the whole text if shorter.
fn for_each_char_window(text: &str, n: usize, mut f: impl FnMut(std::ops::Range<usize>)) {
    // A ring of the last n+1 char start offsets; n ≤ MAX_SHINGLE_WIDTH keeps it on the stack.
    let mut starts = [0usize; MAX_SHINGLE_WIDTH + 1];
    let ring = n + 1;
    let mut count = 0usize;
    for (offset, _) in text.char_indices() {
        starts[count % ring] = offset;
        count += 1;
        if count > n {
            f(starts[(count - 1 - n) % ring]..offset);
        }
    }
    if count == 0 {
        return;
    }
    if count < n {
        f(0..text.len());
    } else {
        f(starts[(count - n) % ring]..text.len());
    }
}

/// Byte ranges of every window of `n` words (split on single spaces); the whole text if shorter.
fn for_each_word_window(text: &str, n: usize, mut f: impl FnMut(std::ops::Range<usize>)) {
    let mut starts = [0usize; MAX_SHINGLE_WIDTH];
    let mut count = 0usize;
    let mut pos = 0usize;
    for word in text.split(' ') {
        let start = pos;
        let end = start + word.len();
        pos = end + 1;
        if word.is_empty() {
            // Only possible without whitespace collapsing; empty words carry no content.
            continue;
        }
        starts[count % n] = start;
        count += 1;
        if count >= n {
            f(starts[(count - n) % n]..end);
        }
    }
    if count > 0 && count < n {
        f(0..text.len());
    }
}

/// For eight ASCII bytes (each below 0x80) packed little-endian in `x`: 0x80 in every byte
/// that lies in `lo..=hi`, 0 elsewhere. Per byte, `b + (0x80 - c)` sets bit 7 exactly when
/// `b >= c`, and cannot carry into the next byte since `b <= 0x7F`.
#[inline(always)]
fn swar_in_range(x: u64, lo: u8, hi: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let ge_lo = x.wrapping_add(ONES * u64::from(0x80 - lo)) & HIGH;
    let gt_hi = x.wrapping_add(ONES * u64::from(0x80 - hi - 1)) & HIGH;
    ge_lo & !gt_hi
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shingles(cfg: ShingleConfig, text: &str) -> Vec<String> {
        let mut norm = String::new();
        cfg.normalize_into(text, &mut norm);
        let mut out = Vec::new();
        let b = norm.as_bytes();
        match cfg.kind {
            ShingleKind::Char(n) => for_each_char_window(&norm, n, |r| {
                out.push(String::from_utf8(b[r].to_vec()).unwrap())
            }),
            ShingleKind::Word(n) => for_each_word_window(&norm, n, |r| {
                out.push(String::from_utf8(b[r].to_vec()).unwrap())
            }),
        }
        out
    }

    #[test]
    fn normalization_matches_python_idiom() {
        let cfg = ShingleConfig::default();
        let mut out = String::new();
        cfg.normalize_into("  Hello,\t\nWORLD \u{0B} ", &mut out);
        assert_eq!(out, "hello, world");
        cfg.normalize_into("ΟΔΟΣ\u{2003}Straße\u{3000}", &mut out);
        assert_eq!(out, "οδος straße");
        cfg.normalize_into(" \u{A0}\u{2028} ", &mut out);
        assert_eq!(out, "");
        let nfkc = ShingleConfig { nfkc: true, ..cfg };
        nfkc.normalize_into("ＡＢＣ ﬁ", &mut out);
        assert_eq!(out, "abc fi");
    }

    #[test]
    fn char_windows_are_scalar_values() {
        assert_eq!(
            shingles(ShingleConfig::chars(3), "héllo"),
            vec!["hél", "éll", "llo"]
        );
        assert_eq!(shingles(ShingleConfig::chars(5), "héé"), vec!["héé"]);
        assert_eq!(shingles(ShingleConfig::chars(2), "ab"), vec!["ab"]);
        assert!(shingles(ShingleConfig::chars(2), "").is_empty());
    }

    #[test]
    fn word_windows() {
        assert_eq!(
            shingles(ShingleConfig::words(2), "The  quick brown\tfox"),
            vec!["the quick", "quick brown", "brown fox"]
        );
        assert_eq!(shingles(ShingleConfig::words(3), "a b"), vec!["a b"]);
        assert!(shingles(ShingleConfig::words(3), "   ").is_empty());
    }

    #[test]
    fn ascii_fast_path_equals_general_path() {
        let cfg = ShingleConfig::chars(4);
        let text = "Some ASCII text, with  Spaces\tand CAPS.";
        let mut norm = String::new();
        cfg.normalize_into(text, &mut norm);
        let mut fast = Vec::new();
        cfg.for_each_shingle_hash(&norm, 7, |h| fast.push(h));
        let mut slow = Vec::new();
        for_each_char_window(&norm, 4, |r| {
            slow.push(xxh3_64_with_seed(&norm.as_bytes()[r], 7))
        });
        assert_eq!(fast, slow);
    }

    #[test]
    fn short_xxh3_equals_the_library() {
        let mut x = 0x1234_5678_9ABC_DEF0u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let seed = x.rotate_left(17) ^ 0xA5A5;
            let bytes = x.to_le_bytes();
            for len in 4..=8 {
                let input = &bytes[..len];
                assert_eq!(
                    Xxh3Short::new(seed).hash(input),
                    xxh3_64_with_seed(input, seed),
                    "len {len} seed {seed:#x}"
                );
            }
        }
        assert_eq!(
            Xxh3Short::new(0).hash(b"abcd"),
            xxh3_64_with_seed(b"abcd", 0)
        );
    }

    #[test]
    fn parse_shingle_kind() {
        assert_eq!(
            "char:5".parse::<ShingleKind>().unwrap(),
            ShingleKind::Char(5)
        );
        assert_eq!("word".parse::<ShingleKind>().unwrap(), ShingleKind::Word(3));
        assert!("char:0".parse::<ShingleKind>().is_err());
        assert!("byte:3".parse::<ShingleKind>().is_err());
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
                let (mut fast, mut general) = (String::new(), String::new());
                cfg.normalize_ascii(text.as_bytes(), &mut fast);
                cfg.normalize_unicode(&text, &mut general);
                assert_eq!(
                    fast, general,
                    "{text:?} lowercase {lowercase} collapse {collapse_whitespace}"
                );
            }
        }
    }
}
