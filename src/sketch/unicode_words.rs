//! Unicode word shingles (`format/hashing.md` §16): normalized text cut at the word boundaries
//! of UAX #29 (the `unicode-segmentation` crate, pinned to the Unicode version of
//! [`UNICODE_VERSION`]), the word-like segments kept as tokens, optionally folded, and every
//! window of n tokens joined by single spaces as one shingle.
//!
//! UAX #29 does the script-specific work: Latin, Cyrillic, Hangul or Arabic words are runs of
//! letters (with `can't` and `3.14` whole), each Han ideograph and each hiragana is a segment of
//! its own, a katakana run is one segment, and Thai, Lao, Khmer and Myanmar letters, which the
//! default rules never join, are one segment each with the marks that follow them.

use unicode_segmentation::UnicodeSegmentation;

use super::unicode_tables::{is_decimal_digit, is_punctuation};

/// The Unicode version of the word-boundary and letter tables, as `(major, minor, update)`.
/// It is part of the hash spec: another version may segment some texts differently.
pub const UNICODE_VERSION: (u8, u8, u8) = (16, 0, 0);

/// [`UNICODE_VERSION`] as a version-3 manifest stores it: `major << 16 | minor << 8 | update`.
pub fn unicode_version_code() -> u32 {
    let (major, minor, update) = UNICODE_VERSION;
    u32::from(major) << 16 | u32::from(minor) << 8 | u32::from(update)
}

/// Optional folds of every token, each spelled as an option of the shingle spec
/// (`unicode-word:2+fold-digits`) and stored as a manifest flag bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WordFolding {
    /// Delete every punctuation character (General_Category P*) from each token: `can't`,
    /// `can’t` and `cant` become one token, `1,000` and `1000` another.
    pub punctuation: bool,
    /// Replace every decimal digit (General_Category Nd, any script) by `0`: numbers that
    /// differ only in their digits (dates, counters, ids) become one token.
    pub digits: bool,
}

impl WordFolding {
    /// The option name of punctuation folding in a shingle spec.
    pub const PUNCTUATION: &'static str = "fold-punctuation";
    /// The option name of digit folding in a shingle spec.
    pub const DIGITS: &'static str = "fold-digits";

    /// Whether no fold is on.
    pub fn is_none(self) -> bool {
        !self.punctuation && !self.digits
    }

    /// Turns on the fold named `option`; `false` for a name that is not a fold.
    pub(crate) fn set(&mut self, option: &str) -> bool {
        match option {
            Self::PUNCTUATION => self.punctuation = true,
            Self::DIGITS => self.digits = true,
            _ => return false,
        }
        true
    }
}

impl std::fmt::Display for WordFolding {
    /// The options as a shingle spec's suffix: `+fold-punctuation`, then `+fold-digits`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.punctuation {
            write!(f, "+{}", Self::PUNCTUATION)?;
        }
        if self.digits {
            write!(f, "+{}", Self::DIGITS)?;
        }
        Ok(())
    }
}

/// The tokens of normalized text, joined by single spaces into one buffer so that every window
/// of tokens is one contiguous byte range of it.
#[derive(Debug, Default)]
pub struct UnicodeWordTokens {
    joined: String,
    spans: Vec<(usize, usize)>,
}

impl UnicodeWordTokens {
    /// The tokens of `normalized`: its UAX #29 word segments that hold a letter or a number
    /// (a character that is Alphabetic or of General_Category N), folded as `folding` says.
    pub fn new(normalized: &str, folding: WordFolding) -> Self {
        let mut tokens = UnicodeWordTokens::default();
        for segment in normalized.unicode_words() {
            if !tokens.joined.is_empty() {
                tokens.joined.push(' ');
            }
            let start = tokens.joined.len();
            if folding.is_none() {
                tokens.joined.push_str(segment);
            } else {
                push_folded(&mut tokens.joined, segment, folding);
            }
            tokens.spans.push((start, tokens.joined.len()));
        }
        tokens
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there is no token.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The tokens, in text order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.spans
            .iter()
            .filter_map(|&(start, end)| self.joined.get(start..end))
    }

    /// Calls `f` with every shingle of `width` tokens, in order: each window's tokens joined by
    /// single spaces; all tokens once when there are fewer than `width`; nothing without one.
    pub fn for_each_shingle(&self, width: usize, mut f: impl FnMut(&[u8])) {
        let bytes = self.joined.as_bytes();
        if self.spans.is_empty() {
            return;
        }
        if self.spans.len() < width {
            f(bytes);
            return;
        }
        for window in self.spans.windows(width.max(1)) {
            let (Some(&(start, _)), Some(&(_, end))) = (window.first(), window.last()) else {
                continue;
            };
            if let Some(shingle) = bytes.get(start..end) {
                f(shingle);
            }
        }
    }
}

/// Appends `segment` to `out` with the folds of `folding` applied character by character.
fn push_folded(out: &mut String, segment: &str, folding: WordFolding) {
    for c in segment.chars() {
        if folding.punctuation && is_punctuation(c) {
            continue;
        }
        if folding.digits && is_decimal_digit(c) {
            out.push('0');
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str, folding: WordFolding) -> Vec<String> {
        UnicodeWordTokens::new(text, folding)
            .iter()
            .map(str::to_string)
            .collect()
    }

    fn shingles(text: &str, width: usize) -> Vec<String> {
        let mut out = Vec::new();
        UnicodeWordTokens::new(text, WordFolding::default())
            .for_each_shingle(width, |s| out.push(String::from_utf8(s.to_vec()).unwrap()));
        out
    }

    #[test]
    fn the_pinned_crate_implements_the_pinned_unicode_version() {
        let (major, minor, update) = unicode_segmentation::UNICODE_VERSION;
        assert_eq!((major, minor, update), (16, 0, 0));
        assert_eq!(unicode_version_code(), 0x10_00_00);
    }

    #[test]
    fn words_ideographs_kana_and_thai_letters() {
        let none = WordFolding::default();
        assert_eq!(
            tokens("can't stop, 3.14 — ok!", none),
            ["can't", "stop", "3.14", "ok"]
        );
        assert_eq!(
            tokens("日本語のテキスト", none),
            ["日", "本", "語", "の", "テキスト"]
        );
        // Thai: one token per letter, each with the marks that follow it.
        assert_eq!(tokens("ที่นี่", none), ["ที่", "นี่"]);
        assert!(tokens("... 😀 !!", none).is_empty());
    }

    #[test]
    fn folds_delete_punctuation_and_zero_digits() {
        let punctuation = WordFolding {
            punctuation: true,
            digits: false,
        };
        assert_eq!(tokens("can’t 1,000.5", punctuation), ["cant", "10005"]);
        let digits = WordFolding {
            punctuation: false,
            digits: true,
        };
        assert_eq!(tokens("2024 ٢٠٢٤ x9", digits), ["0000", "0000", "x0"]);
    }

    #[test]
    fn windows_join_tokens_with_single_spaces() {
        assert_eq!(shingles("a, b. c", 2), ["a b", "b c"]);
        assert_eq!(shingles("中文字", 2), ["中 文", "文 字"]);
        assert_eq!(shingles("one two", 3), ["one two"]);
        assert!(shingles("?!", 1).is_empty());
    }

    #[test]
    fn folding_options_render_in_a_fixed_order() {
        let mut f = WordFolding::default();
        assert!(f.set("fold-digits") && f.set("fold-punctuation") && !f.set("fold-case"));
        assert_eq!(f.to_string(), "+fold-punctuation+fold-digits");
        assert_eq!(WordFolding::default().to_string(), "");
    }
}
