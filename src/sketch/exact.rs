//! The exact hash of a document (`format/hashing.md` §17): 128 bits over the bytes its
//! shingles are cut from (the normalized text, or a token list's hashing inputs), so that two
//! documents that normalize to the same bytes are found equal without comparing signatures.
//! Seeded XXH3-128 in an unkeyed index; SipHash-1-3 with 128-bit output under a key of its own
//! in a keyed one, so that a stored hash cannot be tested against guessed texts.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::fmt;

use siphasher::sip128::{Hasher128, SipHasher13};
use xxhash_rust::xxh3::xxh3_128_with_seed;

use super::keyed::SecretKey;
use super::shingle::ShingleConfig;
use super::spec::{Purpose, derive_named_seed};
use super::tokens::Token;
use crate::{Error, Result};

/// How an index computes exact hashes: one rule for every writer of the index.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ExactHasher {
    /// `XXH3_128bits_withSeed(bytes, derive(<name>, seed, "exact"))`.
    Xxh3(u64),
    /// SipHash-1-3, 128-bit output, under `(k0, k1)` derived from the index's secret key.
    Keyed(u64, u64),
}

impl ExactHasher {
    /// The exact hash of an index whose signatures are named `name` (`oph`, `kperm`) under
    /// user seed `seed`, keyed by `key` when the index is.
    pub fn new(name: &str, seed: u64, key: Option<&SecretKey>) -> Self {
        match key {
            Some(key) => {
                let (k0, k1) = key.exact_key(name, seed);
                ExactHasher::Keyed(k0, k1)
            }
            None => ExactHasher::Xxh3(derive_named_seed(name, seed, Purpose::Exact)),
        }
    }

    /// The exact hash of `bytes` (already normalized text, or a token list's coded inputs);
    /// never 0, which no stored hash is (a result of 0 becomes 1).
    pub fn hash_bytes(&self, bytes: &[u8]) -> u128 {
        let h = match *self {
            ExactHasher::Xxh3(seed) => xxh3_128_with_seed(bytes, seed),
            ExactHasher::Keyed(k0, k1) => {
                let mut sip = SipHasher13::new_with_keys(k0, k1);
                std::hash::Hasher::write(&mut sip, bytes);
                sip.finish128().as_u128()
            }
        };
        h.max(1)
    }

    /// The exact hash of `text`, normalized as `shingle` says (spec §2).
    pub fn hash_text(&self, shingle: &ShingleConfig, text: &str) -> u128 {
        let mut normalized = Vec::new();
        shingle.normalize_to_bytes(text, &mut normalized);
        self.hash_bytes(&normalized)
    }

    /// The exact hash of a token list: each token's hashing input (spec §15) preceded by its
    /// length as a LE u32. Refuses a token whose input is 2³² bytes or longer.
    pub fn hash_tokens(&self, tokens: &[Token<'_>]) -> Result<u128> {
        Ok(self.hash_bytes(&token_list_bytes(tokens)?))
    }
}

/// The bytes the exact hash of a token list covers.
pub fn token_list_bytes(tokens: &[Token<'_>]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut input = Vec::new();
    for token in tokens {
        input.clear();
        token.write_input(&mut input);
        let len = u32::try_from(input.len()).map_err(|_| {
            Error::invalid(
                "tokens",
                format!("a token of {} bytes is too long to hash", input.len()),
            )
        })?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&input);
    }
    Ok(out)
}

impl fmt::Debug for ExactHasher {
    /// A keyed hasher's key words are as secret as the key: never shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExactHasher::Xxh3(seed) => write!(f, "ExactHasher::Xxh3({seed:#x})"),
            ExactHasher::Keyed(..) => f.write_str("ExactHasher::Keyed(..)"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Texts that normalize alike hash alike; a one-character edit does not.
    #[test]
    fn equal_normalized_texts_hash_equal() {
        let h = ExactHasher::new("oph", 7, None);
        let cfg = ShingleConfig::default();
        let a = h.hash_text(&cfg, "The  quick\tbrown fox");
        assert_eq!(a, h.hash_text(&cfg, " the quick BROWN fox "));
        assert_ne!(a, h.hash_text(&cfg, "the quick brown fix"));
        assert_eq!(a, h.hash_bytes(b"the quick brown fox"));
    }

    /// The keyed hash depends on the key and differs from the unkeyed one; the seed and the
    /// name change both.
    #[test]
    fn keys_seeds_and_names_give_other_hashes() {
        let k1 = SecretKey::from_bytes([1; 32]);
        let k2 = SecretKey::from_bytes([2; 32]);
        let hashes = [
            ExactHasher::new("oph", 7, None),
            ExactHasher::new("oph", 8, None),
            ExactHasher::new("kperm", 7, None),
            ExactHasher::new("oph", 7, Some(&k1)),
            ExactHasher::new("oph", 7, Some(&k2)),
            ExactHasher::new("oph", 8, Some(&k1)),
        ]
        .map(|h| h.hash_bytes(b"some text"));
        for (i, a) in hashes.iter().enumerate() {
            for b in hashes.iter().skip(i + 1) {
                assert_ne!(a, b);
            }
        }
        assert!(!format!("{:?}", ExactHasher::new("oph", 7, Some(&k1))).contains('1'));
    }

    /// A token list's bytes prefix each input with its length, so that `["ab", "c"]` and
    /// `["a", "bc"]` differ, and a string token differs from the integer of its digits.
    #[test]
    fn token_lists_code_each_length() {
        let h = ExactHasher::new("oph", 0, None);
        let ab_c = h.hash_tokens(&[Token::Str("ab"), Token::Str("c")]).unwrap();
        let a_bc = h.hash_tokens(&[Token::Str("a"), Token::Str("bc")]).unwrap();
        assert_ne!(ab_c, a_bc);
        assert_eq!(
            token_list_bytes(&[Token::Str("ab"), Token::Int(1)]).unwrap(),
            [
                2, 0, 0, 0, b'a', b'b', 9, 0, 0, 0, 0xFF, 1, 0, 0, 0, 0, 0, 0, 0
            ]
        );
    }
}
