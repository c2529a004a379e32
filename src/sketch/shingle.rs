//! Text normalization and shingling: text → a stream of 64-bit shingle hashes.
//!
//! Normalization (spec §2): optional NFKC, then Unicode lowercase (full mapping, with
//! Final_Sigma, as `str::to_lowercase` and Python's `str.lower`), then every run of Unicode
//! White_Space collapsed to one U+0020 and leading/trailing space removed. Shingles are byte
//! ranges of the normalized buffer, hashed with xxh3 straight from it: no allocation per shingle.

use super::keyed::ShingleHash;
use super::xxh3_short::ShortXxh3;
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
        let xxh3 = ShortXxh3::new(seed);
        let bytes = normalized.as_bytes();
        match self.kind {
            ShingleKind::Char(n)
                if bytes.len() > n && (4..=8).contains(&n) && normalized.is_ascii() =>
            {
                // The common case (char 5-grams of ASCII): every window takes XXH3's 4-8 path.
                for window in bytes.windows(n) {
                    f(xxh3.hash_4to8(window));
                }
            }
            _ => self.for_each_shingle(normalized, |shingle| f(xxh3.hash(shingle))),
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

/// Byte ranges of every window of `n` scalar values; one range of the whole text if shorter.
fn for_each_char_window(text: &str, n: usize, mut f: impl FnMut(std::ops::Range<usize>)) {
    let bytes = text.as_bytes();
    // The width of the character starting at byte `at` (a UTF-8 lead byte has as many leading
    // ones as the character has bytes, ASCII none); 1 past the end, which stops the loops.
    let width = |at: usize| {
        bytes
            .get(at)
            .map_or(1, |b| (b.leading_ones() as usize).max(1))
    };
    let (mut start, mut end, mut count) = (0usize, 0usize, 0usize);
    while count < n && end < bytes.len() {
        end += width(end);
        count += 1;
    }
    if count == 0 {
        return;
    }
    // Both ends step one character at a time: no offsets remembered, no division.
    loop {
        f(start..end);
        if end >= bytes.len() {
            break;
        }
        end += width(end);
        start += width(start);
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

#[cfg(test)]
mod tests {
    use xxhash_rust::xxh3::xxh3_64_with_seed;

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
    fn parse_shingle_kind() {
        assert_eq!(
            "char:5".parse::<ShingleKind>().unwrap(),
            ShingleKind::Char(5)
        );
        assert_eq!("word".parse::<ShingleKind>().unwrap(), ShingleKind::Word(3));
        assert!("char:0".parse::<ShingleKind>().is_err());
        assert!("byte:3".parse::<ShingleKind>().is_err());
    }

    /// Char windows and their hashes, on random text of many scripts and every width up to
    /// 9, equal the definition: every run of n consecutive scalar values (the whole text if
    /// it has fewer), each hashed by the library's XXH3.
    #[test]
    fn char_shingle_hashes_equal_the_definition() {
        const POOL: &[char] = &[
            'a', 'b', ' ', 'é', 'ж', '中', '한', '😀', 'x', 'y', 'z', '.',
        ];
        let mut state = 0xABCD_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..5_000 {
            let len = round % 30;
            let text: String = (0..len)
                .map(|_| POOL[(next() >> 8) as usize % POOL.len()])
                .collect();
            let offsets: Vec<usize> = text
                .char_indices()
                .map(|(i, _)| i)
                .chain([text.len()])
                .collect();
            let seed = next();
            for n in 1..=9 {
                let cfg = ShingleConfig::chars(n);
                let chars = offsets.len() - 1;
                let want: Vec<u64> = if chars == 0 {
                    Vec::new()
                } else if chars < n {
                    vec![xxh3_64_with_seed(text.as_bytes(), seed)]
                } else {
                    (0..=chars - n)
                        .map(|i| {
                            xxh3_64_with_seed(&text.as_bytes()[offsets[i]..offsets[i + n]], seed)
                        })
                        .collect()
                };
                let mut got = Vec::new();
                cfg.for_each_shingle_hash(&text, seed, |h| got.push(h));
                assert_eq!(got, want, "{text:?} n = {n}");
            }
        }
    }
}
