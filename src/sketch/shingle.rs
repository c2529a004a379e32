//! Text normalization and shingling: text → a stream of 64-bit shingle hashes.
//!
//! Normalization (spec §2): optional NFKC, then Unicode lowercase (full mapping, with
//! Final_Sigma, as `str::to_lowercase` and Python's `str.lower`), then every run of Unicode
//! White_Space collapsed to one U+0020 and leading/trailing space removed. Shingles are byte
//! ranges of the normalized buffer, hashed with xxh3 straight from it: no allocation per shingle.

use super::keyed::ShingleHash;
use super::unicode_words::{UnicodeWordTokens, WordFolding};
use super::xxh3_short::ShortXxh3;
use crate::{Error, Result};

/// The largest shingle width accepted.
pub const MAX_SHINGLE_WIDTH: usize = 64;

/// Character n-grams, word n-grams, Unicode word n-grams, or token-list n-grams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShingleKind {
    /// n consecutive Unicode scalar values of the normalized text (spaces included).
    Char(usize),
    /// n consecutive space-separated words of the normalized text, joined by single spaces.
    Word(usize),
    /// n consecutive Unicode words (UAX #29: spec §16), folded as the [`WordFolding`] says and
    /// joined by single spaces.
    UnicodeWord(usize, WordFolding),
    /// n consecutive tokens of a document given as a token list (spec §15), not as a text:
    /// width 1 makes the document the set of its tokens.
    Tokens(usize),
}

/// The shingle spec name of [`ShingleKind::UnicodeWord`].
const UNICODE_WORD: &str = "unicode-word";

/// The shingle spec name of [`ShingleKind::Tokens`].
const TOKENS: &str = "tokens";

impl ShingleKind {
    /// The shingle width n.
    pub fn width(self) -> usize {
        match self {
            ShingleKind::Char(n)
            | ShingleKind::Word(n)
            | ShingleKind::UnicodeWord(n, _)
            | ShingleKind::Tokens(n) => n,
        }
    }

    /// Whether documents are token lists (not texts).
    pub fn is_tokens(self) -> bool {
        matches!(self, ShingleKind::Tokens(_))
    }
}

impl std::fmt::Display for ShingleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShingleKind::Char(n) => write!(f, "char:{n}"),
            ShingleKind::Word(n) => write!(f, "word:{n}"),
            ShingleKind::UnicodeWord(n, folding) => write!(f, "{UNICODE_WORD}:{n}{folding}"),
            // A set of tokens is the common case: it reads best without its width.
            ShingleKind::Tokens(1) => f.write_str(TOKENS),
            ShingleKind::Tokens(n) => write!(f, "{TOKENS}:{n}"),
        }
    }
}

impl std::str::FromStr for ShingleKind {
    type Err = Error;
    /// Parses `char:N`, `word:N`, `unicode-word:N` or `tokens:N`, `unicode-word` with options
    /// `+fold-punctuation` and `+fold-digits` (`char`, `word`, `unicode-word` and `tokens` alone
    /// mean the widths 5, 3, 2 and 1).
    fn from_str(spec: &str) -> Result<ShingleKind> {
        let mut options = spec.split('+');
        let s = options.next().unwrap_or_default();
        let (kind, n) = match s.split_once(':') {
            Some((k, n)) => {
                let n: usize = n.parse().map_err(|_| {
                    Error::invalid("shingle", format!("width in {spec:?} is not a number"))
                })?;
                (k, Some(n))
            }
            None => (s, None),
        };
        let mut folding = WordFolding::default();
        for option in options {
            if kind != UNICODE_WORD || !folding.set(option) {
                return Err(Error::invalid(
                    "shingle",
                    format!(
                        "{spec:?}: {option:?} is not an option of {kind} (unicode-word takes \
                         +{} and +{})",
                        WordFolding::PUNCTUATION,
                        WordFolding::DIGITS
                    ),
                ));
            }
        }
        let shingle = match kind {
            "char" => ShingleKind::Char(n.unwrap_or(5)),
            "word" => ShingleKind::Word(n.unwrap_or(3)),
            UNICODE_WORD => ShingleKind::UnicodeWord(n.unwrap_or(2), folding),
            TOKENS => ShingleKind::Tokens(n.unwrap_or(1)),
            _ => {
                return Err(Error::invalid(
                    "shingle",
                    format!(
                        "{spec:?} is not of the form char:N, word:N, unicode-word:N or tokens:N"
                    ),
                ));
            }
        };
        ShingleConfig::of_kind(shingle).validate()?;
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

    /// Unicode word n-grams (spec §16) of width `n`, folded as `folding` says, with the
    /// default normalization.
    pub fn unicode_words(n: usize, folding: WordFolding) -> Self {
        ShingleConfig {
            kind: ShingleKind::UnicodeWord(n, folding),
            ..Self::default()
        }
    }

    /// Token-list n-grams (spec §15) of width `n`: tokens are taken as given, so no
    /// normalization applies.
    pub fn tokens(n: usize) -> Self {
        ShingleConfig {
            kind: ShingleKind::Tokens(n),
            nfkc: false,
            lowercase: false,
            collapse_whitespace: false,
        }
    }

    /// `kind` with its default normalization: the text default, or none for token lists.
    pub fn of_kind(kind: ShingleKind) -> Self {
        match kind {
            ShingleKind::Tokens(n) => Self::tokens(n),
            _ => ShingleConfig {
                kind,
                ..Self::default()
            },
        }
    }

    /// `kind` with each normalization flag as given, or else as [`ShingleConfig::of_kind`]
    /// defaults it: the one rule the front ends share (`mhdb create`, `Index.create`,
    /// `MinHasher`), so that a token scheme given no flag asks for no normalization, and one
    /// given a flag that asks for some is refused by [`ShingleConfig::validate`].
    pub fn with_normalization(
        kind: ShingleKind,
        nfkc: Option<bool>,
        lowercase: Option<bool>,
        collapse_whitespace: Option<bool>,
    ) -> Self {
        let default = Self::of_kind(kind);
        ShingleConfig {
            kind,
            nfkc: nfkc.unwrap_or(default.nfkc),
            lowercase: lowercase.unwrap_or(default.lowercase),
            collapse_whitespace: collapse_whitespace.unwrap_or(default.collapse_whitespace),
        }
    }

    /// Checks the width is in `1..=MAX_SHINGLE_WIDTH`, and that token lists ask for no
    /// normalization (their tokens are taken as given).
    pub fn validate(&self) -> Result<()> {
        let n = self.kind.width();
        if n == 0 || n > MAX_SHINGLE_WIDTH {
            return Err(Error::invalid(
                "shingle",
                format!("width must be in 1..={MAX_SHINGLE_WIDTH}, got {n}"),
            ));
        }
        if self.kind.is_tokens() && (self.nfkc || self.lowercase || self.collapse_whitespace) {
            return Err(Error::invalid(
                "shingle",
                format!(
                    "{} takes tokens as given: NFKC, lowercasing and white-space collapsing do \
                     not apply to token lists",
                    self.kind
                ),
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
        f: impl FnMut(u64),
    ) {
        self.for_each_shingle_hash_in(normalized.as_bytes(), hash.into(), f);
    }

    /// Calls `f` with the bytes of every shingle of already normalized text, in order (the
    /// windows of spec §3, before hashing).
    pub fn for_each_shingle(&self, normalized: &str, f: impl FnMut(&[u8])) {
        self.for_each_shingle_in(normalized.as_bytes(), f);
    }

    /// [`ShingleConfig::for_each_shingle_hash`] on the bytes of normalized text (UTF-8, as
    /// [`ShingleConfig::normalize_to_bytes`] writes them).
    pub(crate) fn for_each_shingle_hash_in(
        &self,
        normalized: &[u8],
        hash: ShingleHash,
        mut f: impl FnMut(u64),
    ) {
        let seed = match hash {
            ShingleHash::Xxh3(seed) => seed,
            ShingleHash::Keyed(key) => {
                self.for_each_shingle_in(normalized, |shingle| f(key.hash(shingle)));
                return;
            }
        };
        let xxh3 = ShortXxh3::new(seed);
        match self.kind {
            ShingleKind::Char(n)
                if normalized.len() > n && (4..=8).contains(&n) && normalized.is_ascii() =>
            {
                // The common case (char 5-grams of ASCII): every window takes XXH3's 4-8 path.
                xxh3.for_each_window_hash_4to8(normalized, n, f);
            }
            // Other text in characters: the walk of `for_each_char_window`, written out so
            // that hashing and `f` inline into the loop (through one more closure they did not).
            ShingleKind::Char(n) if !normalized.is_ascii() => {
                let mut starts = CharStarts::new(normalized);
                let mut any = false;
                while let Some(block) = starts.next_block(n) {
                    for (i, &start) in block.iter().enumerate() {
                        let Some(&end) = block.get(i + n) else { break };
                        if let Some(window) = normalized.get(start..end) {
                            f(xxh3.hash(window));
                            any = true;
                        }
                    }
                }
                if !any && !normalized.is_empty() {
                    f(xxh3.hash(normalized));
                }
            }
            _ => self.for_each_shingle_in(normalized, |shingle| f(xxh3.hash(shingle))),
        }
    }

    /// [`ShingleConfig::for_each_shingle`] on the bytes of normalized text.
    pub(crate) fn for_each_shingle_in(&self, bytes: &[u8], mut f: impl FnMut(&[u8])) {
        if bytes.is_empty() {
            return;
        }
        match self.kind {
            ShingleKind::Char(n) if bytes.is_ascii() => {
                if bytes.len() <= n {
                    f(bytes);
                } else {
                    bytes.windows(n).for_each(f);
                }
            }
            ShingleKind::Char(n) => for_each_char_window(bytes, n, f),
            ShingleKind::Word(n) => for_each_word_window(bytes, n, |range| {
                if let Some(shingle) = bytes.get(range) {
                    f(shingle);
                }
            }),
            ShingleKind::UnicodeWord(n, folding) => {
                // Normalized text is UTF-8 by construction (`normalize_to_bytes`).
                if let Ok(text) = std::str::from_utf8(bytes) {
                    UnicodeWordTokens::new(text, folding).for_each_shingle(n, f);
                }
            }
            // A token-list scheme has no text shingles: an index of token lists refuses text
            // before it gets here (`Db::sketch_text`), and a hasher's token lists go through
            // `MinHasher::sketch_tokens`.
            ShingleKind::Tokens(_) => {}
        }
    }
}

/// Character start offsets of UTF-8 text, gathered a block at a time so that its char
/// windows can be walked with no step depending on the one before (walking both ends of a
/// window character by character chains a load, a count and an add per character). A byte
/// starts a character unless it is a continuation byte `0b10xx_xxxx`.
struct CharStarts<'a> {
    bytes: &'a [u8],
    starts: [usize; STARTS_BLOCK + MAX_SHINGLE_WIDTH + 1],
    have: usize,
    at: usize,
    done: bool,
}

const STARTS_BLOCK: usize = 256;

impl<'a> CharStarts<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        CharStarts {
            bytes,
            starts: [0; STARTS_BLOCK + MAX_SHINGLE_WIDTH + 1],
            have: 0,
            at: 0,
            done: false,
        }
    }

    /// The next block of offsets `w`, for windows of `n` characters: window `i` is
    /// `w[i]..w[i + n]` for every `i + n < w.len()`; the last block ends with the text's
    /// length. Blocks overlap by `n` offsets (the starts of windows not yet ended).
    #[inline(always)]
    fn next_block(&mut self, n: usize) -> Option<&[usize]> {
        if self.done {
            return None;
        }
        let keep_from = self.have.saturating_sub(n);
        self.starts.copy_within(keep_from..self.have, 0);
        self.have -= keep_from;
        let limit = self.starts.len() - 1;
        // In locals: kept in the struct, the counters went through memory on every byte.
        let (mut have, mut at) = (self.have, self.at);
        for &b in self.bytes.get(at..).unwrap_or_default() {
            if have >= limit {
                break;
            }
            if let Some(slot) = self.starts.get_mut(have) {
                *slot = at;
            }
            have += usize::from(b & 0xC0 != 0x80);
            at += 1;
        }
        (self.have, self.at) = (have, at);
        self.done = self.at >= self.bytes.len();
        if self.done
            && let Some(slot) = self.starts.get_mut(self.have)
        {
            // `have` ≤ `limit`, so the end always fits.
            *slot = self.bytes.len();
            self.have += 1;
        }
        self.starts.get(..self.have)
    }
}

/// Calls `f` with every window of `n` characters of UTF-8 `bytes`; with the whole text if it
/// is shorter.
#[inline(always)]
fn for_each_char_window(bytes: &[u8], n: usize, mut f: impl FnMut(&[u8])) {
    let mut starts = CharStarts::new(bytes);
    let mut any = false;
    while let Some(block) = starts.next_block(n) {
        for (i, &start) in block.iter().enumerate() {
            let Some(&end) = block.get(i + n) else { break };
            if let Some(window) = bytes.get(start..end) {
                f(window);
                any = true;
            }
        }
    }
    if !any && !bytes.is_empty() {
        f(bytes);
    }
}

/// Byte ranges of every window of `n` words (split on single spaces); the whole text if shorter.
fn for_each_word_window(text: &[u8], n: usize, mut f: impl FnMut(std::ops::Range<usize>)) {
    let mut starts = [0usize; MAX_SHINGLE_WIDTH];
    let mut count = 0usize;
    let mut pos = 0usize;
    for word in text.split(|&b| b == b' ') {
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

    /// Flags not given take the scheme's default: none for token lists, the text default
    /// otherwise; a flag given is kept, and one asking a token scheme to normalize is refused.
    #[test]
    fn normalization_defaults_follow_the_scheme() {
        let tokens = ShingleConfig::with_normalization(ShingleKind::Tokens(2), None, None, None);
        assert_eq!(tokens, ShingleConfig::tokens(2));
        assert!(tokens.validate().is_ok());
        let said_none = ShingleConfig::with_normalization(
            ShingleKind::Tokens(2),
            Some(false),
            Some(false),
            None,
        );
        assert_eq!(said_none, tokens);
        for (nfkc, lowercase, collapse) in [
            (Some(true), None, None),
            (None, Some(true), None),
            (None, None, Some(true)),
        ] {
            let asked = ShingleConfig::with_normalization(
                ShingleKind::Tokens(1),
                nfkc,
                lowercase,
                collapse,
            );
            let err = asked.validate().unwrap_err().to_string();
            assert!(err.contains("takes tokens as given"), "{err}");
        }
        let words = ShingleConfig::with_normalization(ShingleKind::Word(3), None, None, None);
        assert_eq!(words, ShingleConfig::words(3));
        let kept =
            ShingleConfig::with_normalization(ShingleKind::Char(5), Some(true), Some(false), None);
        assert!(kept.nfkc && !kept.lowercase && kept.collapse_whitespace);
    }

    fn shingles(cfg: ShingleConfig, text: &str) -> Vec<String> {
        let mut norm = String::new();
        cfg.normalize_into(text, &mut norm);
        let mut out = Vec::new();
        let b = norm.as_bytes();
        match cfg.kind {
            ShingleKind::Char(n) => {
                for_each_char_window(b, n, |w| out.push(String::from_utf8(w.to_vec()).unwrap()))
            }
            ShingleKind::Word(n) => for_each_word_window(norm.as_bytes(), n, |r| {
                out.push(String::from_utf8(b[r].to_vec()).unwrap())
            }),
            ShingleKind::UnicodeWord(..) | ShingleKind::Tokens(_) => {
                cfg.for_each_shingle(&norm, |s| out.push(String::from_utf8(s.to_vec()).unwrap()))
            }
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
        for_each_char_window(norm.as_bytes(), 4, |w| slow.push(xxh3_64_with_seed(w, 7)));
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

    #[test]
    fn token_kinds_parse_print_and_take_no_normalization() {
        assert_eq!(
            "tokens".parse::<ShingleKind>().unwrap(),
            ShingleKind::Tokens(1)
        );
        assert_eq!(
            "tokens:2".parse::<ShingleKind>().unwrap(),
            ShingleKind::Tokens(2)
        );
        assert!("tokens:0".parse::<ShingleKind>().is_err());
        assert!("tokens:2+fold-digits".parse::<ShingleKind>().is_err());
        assert_eq!(ShingleKind::Tokens(1).to_string(), "tokens");
        assert_eq!(ShingleKind::Tokens(3).to_string(), "tokens:3");
        ShingleConfig::tokens(2).validate().unwrap();
        let lowercased = ShingleConfig {
            lowercase: true,
            ..ShingleConfig::tokens(2)
        };
        assert!(lowercased.validate().is_err());
        assert!(shingles(ShingleConfig::tokens(1), "a text").is_empty());
    }

    #[test]
    fn parse_unicode_word_kinds_and_their_options() {
        let both = WordFolding {
            punctuation: true,
            digits: true,
        };
        for (spec, kind) in [
            (
                "unicode-word",
                ShingleKind::UnicodeWord(2, WordFolding::default()),
            ),
            (
                "unicode-word:1",
                ShingleKind::UnicodeWord(1, WordFolding::default()),
            ),
            (
                "unicode-word:3+fold-digits+fold-punctuation",
                ShingleKind::UnicodeWord(3, both),
            ),
        ] {
            assert_eq!(spec.parse::<ShingleKind>().unwrap(), kind, "{spec}");
            assert_eq!(kind.to_string().parse::<ShingleKind>().unwrap(), kind);
        }
        assert_eq!(
            ShingleKind::UnicodeWord(3, both).to_string(),
            "unicode-word:3+fold-punctuation+fold-digits"
        );
        for bad in [
            "word:2+fold-digits",
            "unicode-word:2+fold-case",
            "unicode-word:0",
        ] {
            assert!(bad.parse::<ShingleKind>().is_err(), "{bad}");
        }
    }

    #[test]
    fn unicode_word_shingles_of_raw_text_are_those_of_its_normalized_tokens() {
        let cfg = ShingleConfig::unicode_words(2, WordFolding::default());
        assert_eq!(
            shingles(cfg, "Hello,  WORLD! 日本"),
            ["hello world", "world 日", "日 本"]
        );
        // Latin text without punctuation: the shingles of word:N.
        let text = "the quick brown fox";
        assert_eq!(shingles(cfg, text), shingles(ShingleConfig::words(2), text));
    }

    /// Char windows and their hashes, on random text of many scripts (up to 1,150 characters)
    /// and every width up to 9, equal the definition: every run of n consecutive scalar values (the whole text if
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
            // Mostly short texts, and every 50th long enough to span several blocks of
            // character starts.
            let len = if round % 50 == 0 {
                250 + round % 900
            } else {
                round % 30
            };
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
