//! The reference model of a database: what it must hold, computed without it.

use std::collections::BTreeMap;

use mhdb::db::{Db, IndexParams};
use mhdb::sketch::{MinHasher, Signature, bbit};

/// Every live key with its stored signature (packed at the index's bits), in the form
/// [`super::stored`] reads a database into, so that the two compare with `==`.
pub type Model = BTreeMap<String, Vec<u8>>;

/// Applies one write to `model`: `Some(stored signature)` inserts or replaces `key`, `None`
/// deletes it.
pub fn apply(model: &mut Model, key: &str, sig: Option<Vec<u8>>) {
    match sig {
        Some(sig) => model.insert(key.to_string(), sig),
        None => model.remove(key),
    };
}

/// Computes stored signatures as the database does: sketch, then pack to the index's bits.
#[derive(Clone)]
pub struct Packer {
    hasher: MinHasher,
    bits: u32,
}

impl Packer {
    pub fn new(params: &IndexParams) -> Self {
        Packer {
            hasher: params.hasher().unwrap(),
            bits: params.bits,
        }
    }

    /// The packer of an open database's parameters.
    pub fn of(db: &Db) -> Self {
        Packer {
            hasher: db.hasher().unwrap().clone(),
            bits: db.params().bits,
        }
    }

    pub fn hasher(&self) -> &MinHasher {
        &self.hasher
    }

    /// The stored form of `sig`.
    pub fn pack(&self, sig: &Signature) -> Vec<u8> {
        bbit::pack(sig.slots(), self.bits).unwrap()
    }

    /// The stored signature of a document with this text.
    pub fn text(&self, text: &str) -> Vec<u8> {
        self.pack(&self.hasher.sketch_text(text))
    }
}

/// The Jaccard estimate a query reports between two stored signatures: the fraction of equal
/// slots, corrected for b-bit chance agreement. Brute force over a model with this must give
/// exactly the estimates the database's queries report.
pub fn estimate(params: &IndexParams, a: &[u8], b: &[u8]) -> f64 {
    let (k, bits) = (params.sketch.num_perm, params.bits);
    let equal = bbit::count_equal_packed(a, b, k, bits).unwrap();
    bbit::estimate_from_matches(equal, k, bits)
}
