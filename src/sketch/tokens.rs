//! Token lists (`format/hashing.md` §15): a document given as its tokens (strings or 64-bit
//! integers) rather than as a text. Each token, or each window of `width` tokens, is one
//! shingle; its bytes are hashed with the hasher's shingle hash (seeded XXH3, or keyed) and
//! sketched as a text's shingle hashes are.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::keyed::ShingleHash;
use super::minhash::{MinHasher, Signature};
use super::shingle::MAX_SHINGLE_WIDTH;
use crate::{Error, Result};

/// The first byte of an integer token's hashing input. It never occurs in UTF-8, so no string
/// token's input equals an integer token's: `"1"` and `1` are different elements.
pub const INT_TOKEN_TAG: u8 = 0xFF;

/// One token of a token list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Token<'a> {
    /// A string, hashed as its UTF-8 bytes (not normalized).
    Str(&'a str),
    /// A signed 64-bit integer.
    Int(i64),
}

impl Token<'_> {
    /// Appends the token's hashing input to `out`: a string's UTF-8 bytes, or
    /// [`INT_TOKEN_TAG`] and the integer's 8 little-endian bytes.
    pub fn write_input(&self, out: &mut Vec<u8>) {
        match *self {
            Token::Str(s) => out.extend_from_slice(s.as_bytes()),
            Token::Int(v) => {
                out.push(INT_TOKEN_TAG);
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// The length of the hashing input, in bytes.
    fn input_len(&self) -> usize {
        match self {
            Token::Str(s) => s.len(),
            Token::Int(_) => 9,
        }
    }
}

/// A token that owns its string: a token of a list read from input, kept until it is signed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OwnedToken {
    /// A string.
    Str(String),
    /// A signed 64-bit integer.
    Int(i64),
}

impl OwnedToken {
    /// The token, borrowed.
    pub fn as_token(&self) -> Token<'_> {
        match self {
            OwnedToken::Str(s) => Token::Str(s),
            OwnedToken::Int(v) => Token::Int(*v),
        }
    }

    /// Every token of `tokens`, borrowed.
    pub fn borrow_all(tokens: &[OwnedToken]) -> Vec<Token<'_>> {
        tokens.iter().map(OwnedToken::as_token).collect()
    }
}

impl From<&Token<'_>> for OwnedToken {
    fn from(token: &Token<'_>) -> Self {
        match *token {
            Token::Str(s) => OwnedToken::Str(s.to_owned()),
            Token::Int(v) => OwnedToken::Int(v),
        }
    }
}

/// Checks a token-list shingle width: 1 to [`MAX_SHINGLE_WIDTH`], as a text's.
pub fn validate_width(width: usize) -> Result<()> {
    if width == 0 || width > MAX_SHINGLE_WIDTH {
        return Err(Error::invalid(
            "width",
            format!("must be in 1..={MAX_SHINGLE_WIDTH}, got {width}"),
        ));
    }
    Ok(())
}

/// Calls `f` with the bytes of every shingle of `tokens` at `width`, in order: at width 1 each
/// token's hashing input; wider, each window's tokens, each input preceded by its length as a
/// little-endian u32 (a list shorter than `width` is one window). Refuses a width out of
/// range, and at width > 1 a token whose input does not fit a u32 length.
pub fn for_each_token_shingle(
    tokens: &[Token<'_>],
    width: usize,
    mut f: impl FnMut(&[u8]),
) -> Result<()> {
    validate_width(width)?;
    let mut bytes = Vec::new();
    if width == 1 {
        for token in tokens {
            bytes.clear();
            token.write_input(&mut bytes);
            f(&bytes);
        }
        return Ok(());
    }
    if let Some(at) = tokens
        .iter()
        .position(|t| t.input_len() > u32::MAX as usize)
    {
        return Err(Error::invalid(
            "tokens",
            format!("token {at} is 2^32 bytes or longer, which a token n-gram cannot hold"),
        ));
    }
    if tokens.is_empty() {
        return Ok(());
    }
    let windows = tokens.windows(width.min(tokens.len()));
    for window in windows {
        bytes.clear();
        for token in window {
            bytes.extend_from_slice(&(token.input_len() as u32).to_le_bytes());
            token.write_input(&mut bytes);
        }
        f(&bytes);
    }
    Ok(())
}

impl ShingleHash {
    /// The 64-bit hash of a shingle's bytes: `XXH3_64bits_withSeed` (spec §3), or the keyed
    /// SipHash-1-3 (spec §12).
    pub fn hash_bytes(&self, bytes: &[u8]) -> u64 {
        match self {
            ShingleHash::Xxh3(seed) => xxh3_64_with_seed(bytes, *seed),
            ShingleHash::Keyed(key) => key.hash(bytes),
        }
    }
}

impl MinHasher {
    /// The shingle hashes of a token list at `width`, in order (duplicates kept): the
    /// hasher's shingle hash of each shingle of [`for_each_token_shingle`]. The hasher's text
    /// settings (shingle kind, normalization) do not apply.
    pub fn token_shingle_hashes(&self, tokens: &[Token<'_>], width: usize) -> Result<Vec<u64>> {
        let hash = self.shingle_hash();
        let mut hashes = Vec::with_capacity(tokens.len());
        for_each_token_shingle(tokens, width, |shingle| {
            hashes.push(hash.hash_bytes(shingle))
        })?;
        Ok(hashes)
    }

    /// The signature of a token list at `width` (1: the set of its tokens).
    pub fn sketch_tokens(&self, tokens: &[Token<'_>], width: usize) -> Result<Signature> {
        Ok(self.sketch_hashes(&self.token_shingle_hashes(tokens, width)?))
    }

    /// [`MinHasher::sketch_tokens`] with the shingle set attached (spec §14's stored values of
    /// the shingle hashes), as an index that stores sets keeps it.
    pub fn sketch_tokens_with_set(&self, tokens: &[Token<'_>], width: usize) -> Result<Signature> {
        // Through the one stored-value rule (a keyed index's sets use their own key).
        let mut cut = Ok(());
        let sig = self.sketch_shingles_with_set(|emit| {
            cut = for_each_token_shingle(tokens, width, |s| emit(s));
        });
        cut.map(|()| sig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::shingle_set::ShingleSet;
    use crate::sketch::{SecretKey, SketchParams};

    fn shingles(tokens: &[Token<'_>], width: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for_each_token_shingle(tokens, width, |s| out.push(s.to_vec())).unwrap();
        out
    }

    #[test]
    fn hashing_inputs_tell_strings_from_integers() {
        assert_eq!(shingles(&[Token::Str("1")], 1), [b"1".to_vec()]);
        let one = [0xFF, 1, 0, 0, 0, 0, 0, 0, 0].to_vec();
        assert_eq!(shingles(&[Token::Int(1)], 1), [one]);
        let minus_one = [[0xFF].as_slice(), &[0xFF; 8]].concat();
        assert_eq!(shingles(&[Token::Int(-1)], 1), [minus_one]);
        assert_eq!(shingles(&[Token::Str("")], 1), [Vec::<u8>::new()]);
    }

    #[test]
    fn ngrams_prefix_each_token_with_its_length() {
        let ab_c = shingles(&[Token::Str("ab"), Token::Str("c")], 2);
        assert_eq!(ab_c, [b"\x02\x00\x00\x00ab\x01\x00\x00\x00c".to_vec()]);
        assert_ne!(ab_c, shingles(&[Token::Str("a"), Token::Str("bc")], 2));
        let three = [Token::Int(7), Token::Str("x"), Token::Str("y")];
        assert_eq!(shingles(&three, 2).len(), 2);
        // Fewer tokens than the width: the whole list, once; none: nothing.
        assert_eq!(shingles(&three, 5), shingles(&three, 3));
        assert!(shingles(&[], 3).is_empty());
        assert!(for_each_token_shingle(&three, 0, |_| {}).is_err());
        assert!(for_each_token_shingle(&three, 65, |_| {}).is_err());
    }

    #[test]
    fn a_token_set_ignores_order_and_repeats_and_equals_word_1_shingles() {
        let hasher = MinHasher::new(SketchParams {
            shingle: crate::sketch::ShingleConfig::words(1),
            ..SketchParams::default()
        })
        .unwrap();
        let words = ["the", "quick", "brown", "fox"].map(Token::Str);
        let shuffled = ["fox", "the", "brown", "quick", "the"].map(Token::Str);
        let sig = hasher.sketch_tokens(&words, 1).unwrap();
        assert_eq!(sig, hasher.sketch_tokens(&shuffled, 1).unwrap());
        assert_eq!(sig, hasher.sketch_text("the quick brown fox"));
        assert_ne!(sig, hasher.sketch_tokens(&words, 2).unwrap());
        assert!(hasher.sketch_tokens(&[], 1).unwrap().is_empty_set());
    }

    /// A token list's stored set follows the one stored-value rule: under a key, the set key
    /// (so a keyed index's sets of token lists leak no keyed hashes), equal to the set of
    /// the `word:1` text of the same words; unkeyed, the hashes' top halves.
    #[test]
    fn stored_sets_of_token_lists_follow_the_text_rule() {
        let key = SecretKey::from_bytes([7; 32]);
        let params = SketchParams {
            shingle: crate::sketch::ShingleConfig::words(1),
            ..SketchParams::default()
        };
        let words = ["the", "quick", "brown", "fox"].map(Token::Str);
        for hasher in [
            MinHasher::new_keyed(params, &key).unwrap(),
            MinHasher::new(params).unwrap(),
        ] {
            let sig = hasher.sketch_tokens_with_set(&words, 1).unwrap();
            let set = sig.shingle_set().unwrap();
            assert_eq!(set, &hasher.shingle_set("the quick brown fox"));
            let hashes = hasher.token_shingle_hashes(&words, 1).unwrap();
            let top_halves = ShingleSet::from_hashes(hashes);
            let keyed = hasher.shingle_hash().is_keyed();
            assert_eq!(set == &top_halves, !keyed, "keyed: {keyed}");
        }
    }

    #[test]
    fn a_keyed_hasher_hashes_tokens_with_its_key() {
        let params = SketchParams::default();
        let key = SecretKey::from_bytes([7; 32]);
        let keyed = MinHasher::new_keyed(params, &key).unwrap();
        let tokens = [Token::Int(1), Token::Str("a")];
        let want: Vec<u64> = shingles(&tokens, 1)
            .iter()
            .map(|s| keyed.shingle_hash().hash_bytes(s))
            .collect();
        assert_eq!(keyed.token_shingle_hashes(&tokens, 1).unwrap(), want);
        let plain = MinHasher::new(params).unwrap();
        assert_ne!(plain.token_shingle_hashes(&tokens, 1).unwrap(), want);
    }
}
