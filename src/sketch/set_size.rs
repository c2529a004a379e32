//! A document's set size: the number of distinct 64-bit shingle hashes of its text or token
//! list (`format/hashing.md` §3), what an index with the SET_SIZE column stores beside each
//! document (`dedup --keep longest|shortest` ranks by it: repeated boilerplate inside one
//! document does not count twice). Computed from the hashes the signature is made of, so a
//! signature and its size come from one normalization and one hashing pass.

use super::exact::ExactHasher;
use super::minhash::{MinHasher, Signature};
use super::tokens::Token;
use crate::{Error, Result};

/// The number of distinct values of `hashes`: each goes once into an open-addressing table
/// of at least twice their number, placed by the top bits of its product with an odd
/// constant (Fibonacci hashing: values with patterned low bits, such as integer tokens,
/// spread as well as hashes do). About one probe per value, where sorting them costs a dozen
/// comparisons each; the table is kept per thread, so a document costs no allocation.
/// Refused past `u32::MAX`, the widest size the column stores.
pub fn distinct_count(hashes: &[u64]) -> Result<u32> {
    thread_local! {
        static TABLE: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let bits = hashes
        .len()
        .saturating_mul(2)
        .max(2)
        .next_power_of_two()
        .trailing_zeros();
    let distinct = TABLE.with_borrow_mut(|table| {
        table.clear();
        table.resize(1 << bits, 0);
        count_into(table, bits, hashes)
    });
    u32::try_from(distinct).map_err(|_| {
        Error::invalid(
            "document",
            format!("has {distinct} distinct shingles, more than a set size holds (2^32 − 1)"),
        )
    })
}

/// The distinct values of `hashes` put into the zeroed `table` of `2^bits` slots (0 marks an
/// empty slot, so a value of 0 is counted apart).
fn count_into(table: &mut [u64], bits: u32, hashes: &[u64]) -> usize {
    const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;
    let mask = table.len() - 1;
    let mut distinct = usize::from(hashes.contains(&0));
    for &h in hashes.iter().filter(|&&h| h != 0) {
        let mut at = (h.wrapping_mul(FIBONACCI) >> (64 - bits)) as usize;
        while let Some(slot) = table.get_mut(at) {
            if *slot == 0 {
                *slot = h;
                distinct += 1;
                break;
            }
            if *slot == h {
                break;
            }
            at = (at + 1) & mask;
        }
    }
    distinct
}

impl MinHasher {
    /// The set size of `text`: its number of distinct shingle hashes.
    pub fn set_size_of_text(&self, text: &str) -> Result<u32> {
        distinct_count(&self.shingle_hashes(text))
    }

    /// The set size of a token list at `width`.
    pub fn set_size_of_tokens(&self, tokens: &[Token<'_>], width: usize) -> Result<u32> {
        distinct_count(&self.token_shingle_hashes(tokens, width)?)
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
        Ok(sig.with_set_size(distinct_count(&hashes)?))
    }

    /// [`MinHasher::sketch_tokens`] with the token list's set size attached, hashed once.
    pub fn sketch_tokens_with_size(&self, tokens: &[Token<'_>], width: usize) -> Result<Signature> {
        let hashes = self.token_shingle_hashes(tokens, width)?;
        let sig = self.sketch_hashes(&hashes);
        Ok(sig.with_set_size(distinct_count(&hashes)?))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sketch::SketchParams;

    #[test]
    fn distinct_count_counts_each_value_once() {
        assert_eq!(distinct_count(&[]).unwrap(), 0);
        assert_eq!(distinct_count(&[5, 1, 5, 5, 2, 1]).unwrap(), 3);
        assert_eq!(distinct_count(&[0, 7, 0, 7 << 40, 7]).unwrap(), 3);
    }

    proptest::proptest! {
        /// Equal to counting a sorted copy's runs, on patterned values (small ranges and
        /// multiples of a power of two collide in low bits) as on any.
        #[test]
        fn distinct_count_equals_a_set_count(
            values in proptest::collection::vec(0u64..64, 0..300),
            shift in 0u32..60,
        ) {
            let shifted: Vec<u64> = values.iter().map(|v| v << shift).collect();
            let expected = shifted.iter().collect::<std::collections::BTreeSet<_>>().len();
            proptest::prop_assert_eq!(distinct_count(&shifted).unwrap() as usize, expected);
        }
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
