//! A document's shingle set, kept beside its signature when an index stores sets
//! (`store_sets`), so that a query can compute the exact Jaccard similarity of a candidate
//! instead of estimating it from the signature (as Milvus's "refine" re-ranks over raw data).
//!
//! The set holds the top 32 bits of each shingle hash ([`crate::sketch::MinHasher`] and
//! `format/hashing.md` §14 "stored shingle sets"): 4 bytes instead of 8 before coding, and two
//! distinct shingles of one pair of documents share 32 bits with probability 2⁻³², so the
//! Jaccard of the stored sets differs from that of the shingle sets by less than
//! n / 2³² (n = shingles in the pair), far below the estimate's own spread.
//!
//! How the sorted values are coded on disk is the storage layer's business
//! (`storage::shingle_codec`, `format/segment.md` SHINGLES); this module only makes the values.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

/// The sorted, distinct 32-bit shingle values of one document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ShingleSet {
    values: Box<[u32]>,
}

/// The stored value of a 64-bit shingle hash.
#[inline]
pub fn stored_value(hash: u64) -> u32 {
    (hash >> 32) as u32
}

impl ShingleSet {
    /// The set of the given shingle hashes (any order, duplicates allowed).
    pub fn from_hashes(hashes: impl IntoIterator<Item = u64>) -> Self {
        let mut values: Vec<u32> = hashes.into_iter().map(stored_value).collect();
        values.sort_unstable();
        values.dedup();
        ShingleSet {
            values: values.into(),
        }
    }

    /// The sorted distinct values.
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// Number of distinct values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True for the set of a text without shingles.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Exact Jaccard similarity |A ∩ B| / |A ∪ B|; 0 when both sets are empty (a text without
    /// shingles is similar to nothing, as with signatures).
    pub fn jaccard(&self, other: &ShingleSet) -> f64 {
        jaccard_sorted(&self.values, &other.values)
    }
}

/// Exact Jaccard of two sorted, distinct slices.
pub fn jaccard_sorted(a: &[u32], b: &[u32]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0usize, 0usize, 0usize);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        // Branch-light merge: advance whichever side is smaller (both when equal).
        common += usize::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    common as f64 / (a.len() + b.len() - common) as f64
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::sketch::set_intersect::jaccard_sorted_at_least;
    use proptest::prelude::*;

    /// A set keeps the top 32 bits of each hash, sorted and without repeats.
    #[test]
    fn keeps_distinct_top_halves_sorted() {
        let set = ShingleSet::from_hashes([(7u64 << 32) | 5, 1 << 32, 7 << 32, u64::MAX]);
        assert_eq!(set.values(), [1, 7, u32::MAX]);
        assert_eq!(set.len(), 3);
        assert!(ShingleSet::from_hashes([]).is_empty());
    }

    proptest! {
        #[test]
        fn jaccard_is_exact(a in proptest::collection::btree_set(0u32..500, 0..200),
                            b in proptest::collection::btree_set(0u32..500, 0..200)) {
            let sa = ShingleSet { values: a.iter().copied().collect() };
            let sb = ShingleSet { values: b.iter().copied().collect() };
            let inter = a.intersection(&b).count();
            let union = a.union(&b).count();
            let want = if a.is_empty() || b.is_empty() { 0.0 } else { inter as f64 / union as f64 };
            prop_assert_eq!(sa.jaccard(&sb), want);
            for t in [0.0, 0.1, 0.3, 0.5, 0.8, 1.0] {
                let gated = jaccard_sorted_at_least(sa.values(), sb.values(), t);
                let expect = (want >= t).then_some(want);
                prop_assert_eq!(gated, expect, "t = {}", t);
            }
        }
    }
}
