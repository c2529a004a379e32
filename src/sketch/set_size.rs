//! A document's set size: the number of distinct 64-bit shingle hashes of its text or token
//! list (`format/hashing.md` §3), what an index with the SET_SIZE column stores beside each
//! document (`dedup --keep longest|shortest` ranks by it: repeated boilerplate inside one
//! document does not count twice). Computed from the hashes the signature is made of, so a
//! signature and its size come from one normalization and one hashing pass.

use super::exact::ExactHasher;
use super::minhash::{MinHasher, Signature};
use super::tokens::Token;
use crate::{Error, Result};

/// The number of distinct values of `hashes` (reordered): refused past `u32::MAX`, the
/// widest size the column stores.
pub fn distinct_count(hashes: &mut [u64]) -> Result<u32> {
    hashes.sort_unstable();
    let distinct = hashes.chunk_by(|a, b| a == b).count();
    u32::try_from(distinct).map_err(|_| {
        Error::invalid(
            "document",
            format!("has {distinct} distinct shingles, more than a set size holds (2^32 − 1)"),
        )
    })
}

impl MinHasher {
    /// The set size of `text`: its number of distinct shingle hashes.
    pub fn set_size_of_text(&self, text: &str) -> Result<u32> {
        distinct_count(&mut self.shingle_hashes(text))
    }

    /// The set size of a token list at `width`.
    pub fn set_size_of_tokens(&self, tokens: &[Token<'_>], width: usize) -> Result<u32> {
        distinct_count(&mut self.token_shingle_hashes(tokens, width)?)
    }

    /// The signature of `text` with its set size attached, and its exact hash under `exact`
    /// when given: the signature [`MinHasher::sketch_text`] computes, the text normalized and
    /// hashed once for all three.
    pub fn sketch_text_with_size(
        &self,
        text: &str,
        exact: Option<&ExactHasher>,
    ) -> Result<Signature> {
        let mut normalized = Vec::new();
        let shingle = &self.params().shingle;
        shingle.normalize_to_bytes(text, &mut normalized);
        let mut hashes = Vec::new();
        shingle.for_each_shingle_hash_in(&normalized, self.shingle_hash(), |h| hashes.push(h));
        let sig = self.sketch_hashes(&hashes);
        let sig = match exact {
            Some(e) => sig.with_exact_hash(e.hash_bytes(&normalized)),
            None => sig,
        };
        Ok(sig.with_set_size(distinct_count(&mut hashes)?))
    }

    /// [`MinHasher::sketch_tokens`] with the token list's set size attached, hashed once.
    pub fn sketch_tokens_with_size(&self, tokens: &[Token<'_>], width: usize) -> Result<Signature> {
        let mut hashes = self.token_shingle_hashes(tokens, width)?;
        let sig = self.sketch_hashes(&hashes);
        Ok(sig.with_set_size(distinct_count(&mut hashes)?))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sketch::SketchParams;

    #[test]
    fn distinct_count_counts_each_value_once() {
        assert_eq!(distinct_count(&mut []).unwrap(), 0);
        assert_eq!(distinct_count(&mut [5, 1, 5, 5, 2, 1]).unwrap(), 3);
    }

    /// Repeating a text's content inside it adds no shingles: the size is the same, and the
    /// signature is the one `sketch_text` gives.
    #[test]
    fn repeated_content_does_not_count_twice() {
        let h = MinHasher::new(SketchParams::default()).unwrap();
        let once = h
            .sketch_text_with_size("the quick brown fox", None)
            .unwrap();
        let twice = h
            .sketch_text_with_size("the quick brown fox the quick brown fox", None)
            .unwrap();
        assert_eq!(once, h.sketch_text("the quick brown fox"));
        let n = h.set_size_of_text("the quick brown fox").unwrap();
        assert_eq!(once.set_size(), Some(n));
        assert_eq!(n, 15, "char:5 shingles of a 19-character text");
        assert!(twice.set_size().unwrap() > n, "the seams add shingles");
        assert!(twice.set_size().unwrap() < 2 * n);
        assert_eq!(
            h.sketch_text_with_size("", None).unwrap().set_size(),
            Some(0)
        );
    }
}
