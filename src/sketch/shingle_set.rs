//! A document's shingle set, kept beside its signature when an index stores sets
//! (`store_sets`), so that a query can compute the exact Jaccard similarity of a candidate
//! instead of estimating it from the signature (as Milvus's "refine" re-ranks over raw data).
//!
//! The set holds a 32-bit value per shingle (`format/hashing.md` §14 "stored shingle sets"):
//! the top 32 bits of the shingle hash in an unkeyed index, of a hash under a key of its own in
//! a keyed one ([`SetValueHash`]; [`crate::sketch::MinHasher`] computes them). 4 bytes instead
//! of 8 before coding, and two distinct shingles of one pair of documents share 32 bits with
//! probability 2⁻³², so the Jaccard of the stored sets differs from that of the shingle sets by
//! less than n / 2³² (n = shingles in the pair), far below the estimate's own spread.
//!
//! How the sorted values are coded on disk is the storage layer's business
//! (`storage::shingle_codec`, `format/segment.md` SHINGLES); this module only makes the values.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::keyed::SipKey;

/// The sorted, distinct 32-bit shingle values of one document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ShingleSet {
    values: Box<[u32]>,
}

/// The stored value of a 64-bit shingle hash, in an index whose stored values are the top
/// halves of its shingle hashes ([`SetValueHash::ShingleHashTop`]).
#[inline]
pub fn stored_value(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// How an index derives the stored value of a shingle (spec §14): the one rule every writer
/// and every query of the index applies, so that both sides of an exact comparison agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetValueHash {
    /// The top 32 bits of the shingle hash: an unkeyed index (its public hash hides nothing),
    /// and a keyed index whose sets were stored before format version 3
    /// ([`SetDerivation::KeyedV2Leaking`]).
    ShingleHashTop,
    /// The top 32 bits of SipHash-1-3 of the shingle's bytes under the index's set key
    /// ([`SecretKey::set_key`](super::SecretKey::set_key)), not under its shingle key.
    Keyed(SipKey),
}

impl SetValueHash {
    /// The stored value of the shingle `bytes` whose shingle hash is `shingle_hash`.
    #[inline]
    pub fn value(&self, bytes: &[u8], shingle_hash: u64) -> u32 {
        match self {
            SetValueHash::ShingleHashTop => stored_value(shingle_hash),
            SetValueHash::Keyed(key) => stored_value(key.hash(bytes)),
        }
    }

    /// Which derivation this is, for a hasher keyed (`keyed`) or not.
    pub fn derivation(&self, keyed: bool) -> SetDerivation {
        match (self, keyed) {
            (SetValueHash::Keyed(_), _) => SetDerivation::Keyed,
            (SetValueHash::ShingleHashTop, true) => SetDerivation::KeyedV2Leaking,
            (SetValueHash::ShingleHashTop, false) => SetDerivation::Unkeyed,
        }
    }
}

/// Which derivation an index's stored sets use, as `stats` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetDerivation {
    /// An unkeyed index: the top halves of the public shingle hashes.
    Unkeyed,
    /// A keyed index of format version 3: values under the set key, which say nothing about
    /// the signatures.
    Keyed,
    /// A keyed index whose sets were stored by format version 2 (kept by `upgrade`): the top
    /// halves of the keyed shingle hashes themselves, which anyone holding a copy and some of
    /// its texts can match to shingles, and so predict signature minima.
    KeyedV2Leaking,
}

impl SetDerivation {
    /// The name `stats --json` reports (`"sets_derivation"`).
    pub fn name(self) -> &'static str {
        match self {
            SetDerivation::Unkeyed => "unkeyed",
            SetDerivation::Keyed => "keyed",
            SetDerivation::KeyedV2Leaking => "keyed-v2-leaking",
        }
    }

    /// The warning `stats` and `verify` give about this derivation, if it leaks.
    pub fn warning(self) -> Option<&'static str> {
        (self == SetDerivation::KeyedV2Leaking).then_some(
            "sets: keyed, version-2 derivation (leaks keyed hashes; mhdb upgrade --drop-sets \
             removes them)",
        )
    }
}

impl ShingleSet {
    /// The set of the given shingle hashes (any order, duplicates allowed).
    /// The values are those of [`SetValueHash::ShingleHashTop`]: a keyed index of format
    /// version 3 derives its values otherwise ([`crate::sketch::MinHasher::shingle_set`]).
    pub fn from_hashes(hashes: impl IntoIterator<Item = u64>) -> Self {
        Self::from_values(hashes.into_iter().map(stored_value).collect())
    }

    /// The set of the given stored values (any order, duplicates allowed).
    pub fn from_values(mut values: Vec<u32>) -> Self {
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
