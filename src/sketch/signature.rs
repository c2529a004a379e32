//! A finished MinHash signature and what it carries beside its slots: the shingle set it was
//! computed from (for exact re-rank), and the notes an index stores about the document (its
//! exact hash and set size).

use std::sync::Arc;

use super::minhash::EMPTY_SLOT;
use super::shingle_set::ShingleSet;
use crate::storage::segment::KeepValue;
use crate::{Error, Result};

/// A finished MinHash signature: `k` 64-bit slots; optionally with the shingle set it was
/// computed from, which an index that stores sets keeps for exact re-rank
/// ([`Signature::with_shingle_set`]).
///
/// Two signatures are equal when their slots and attached sets are: the exact hash and set
/// size are notes about the document, not part of the signature (a token set in another
/// order has the same signature and another exact hash).
#[derive(Clone, Debug)]
pub struct Signature {
    slots: Box<[u64]>,
    set: Option<Arc<ShingleSet>>,
    /// The exact hash of the document (spec §17), attached by an index that stores them.
    exact: Option<u128>,
    /// The number of distinct shingle hashes of the document (§3), attached by an index
    /// with the SET_SIZE column.
    set_size: Option<u32>,
    /// The document's keep value (the field `add --keep-field` captures), attached by the
    /// caller for an index with the KEEP column.
    keep: Option<KeepValue>,
}

impl PartialEq for Signature {
    fn eq(&self, other: &Self) -> bool {
        self.slots == other.slots && self.set == other.set
    }
}

impl Eq for Signature {}

impl std::hash::Hash for Signature {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.slots.hash(state);
        self.set.hash(state);
    }
}

impl Signature {
    /// Wraps raw slot values (e.g. read back from storage).
    pub fn from_slots(slots: impl Into<Box<[u64]>>) -> Self {
        Signature {
            slots: slots.into(),
            set: None,
            exact: None,
            set_size: None,
            keep: None,
        }
    }

    /// This signature with the exact hash of its document attached (spec §17): what an index
    /// with the EXACT_HASH column stores beside it. [`crate::db::Db::sketch_text`] attaches it in
    /// such an index; a signature made elsewhere has none, and is stored without one.
    pub fn with_exact_hash(mut self, hash: u128) -> Self {
        self.exact = Some(hash.max(1));
        self
    }

    /// This signature with its document's keep value attached: what an index with the KEEP
    /// column stores beside it (checked against the index's keep type at insert).
    pub fn with_keep_value(mut self, value: KeepValue) -> Self {
        self.keep = Some(value);
        self
    }

    /// The attached keep value, if any.
    pub fn keep_value(&self) -> Option<&KeepValue> {
        self.keep.as_ref()
    }

    /// The attached exact hash, if any.
    pub fn exact_hash(&self) -> Option<u128> {
        self.exact
    }

    /// This signature with the number of distinct shingle hashes of its document attached:
    /// what an index with the SET_SIZE column stores beside it (like the exact hash, a note
    /// about the document, not part of the signature).
    pub fn with_set_size(mut self, size: u32) -> Self {
        self.set_size = Some(size);
        self
    }

    /// The attached set size, if any.
    pub fn set_size(&self) -> Option<u32> {
        self.set_size
    }

    /// This signature with the shingle set it was computed from attached.
    pub fn with_shingle_set(mut self, set: ShingleSet) -> Self {
        self.set = Some(Arc::new(set));
        self
    }

    /// The attached shingle set, if any.
    pub fn shingle_set(&self) -> Option<&ShingleSet> {
        self.set.as_deref()
    }

    /// The slot values.
    pub fn slots(&self) -> &[u64] {
        &self.slots
    }

    /// Number of slots k.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True for a zero-slot signature (never produced by a [`MinHasher`](super::MinHasher)).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// True when this is the signature of the empty shingle set (e.g. of empty text).
    pub fn is_empty_set(&self) -> bool {
        self.slots.iter().all(|&s| s == EMPTY_SLOT)
    }

    /// The full-precision Jaccard estimate: the fraction of equal slots.
    pub fn jaccard(&self, other: &Signature) -> Result<f64> {
        if self.len() != other.len() || self.is_empty() {
            return Err(Error::invalid(
                "signature",
                format!(
                    "cannot compare signatures of {} and {} slots",
                    self.len(),
                    other.len()
                ),
            ));
        }
        let equal = self
            .slots
            .iter()
            .zip(other.slots.iter())
            .filter(|(a, b)| a == b)
            .count();
        Ok(equal as f64 / self.len() as f64)
    }
}
