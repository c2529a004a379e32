//! The SimHash kind's own path: text → 64-bit fingerprint (`format/hashing.md` §13), its
//! h + 1 block keys as the band keys, and results in Hamming distance and cosine estimate.
//! The engine stores a fingerprint as 64 one-bit slots (see the `kind` module); this module
//! translates at the edges (distance ↔ the one-bit estimate `1 − d/32`).

use crate::Result;
use crate::db::query::{Banded, Bounds, QueryPacked};
use crate::db::state::State;
use crate::db::{Db, QueryOptions, QueryResult};
use crate::sketch::{Signature, SimHash, bbit, cosine_from_hamming};

/// Bits of a fingerprint, as slots.
const SLOTS: usize = 64;

/// The largest Hamming distance whose cosine estimate `cos(π·d/64)` reaches `threshold`,
/// capped at `max_hamming`: what a cosine threshold means to a SimHash index.
pub fn max_distance_for_threshold(threshold: f64, max_hamming: u32) -> u32 {
    // Tolerance: a threshold computed as cos(π·d/64) elsewhere must admit distance d.
    (0..=max_hamming)
        .rev()
        .find(|&d| cosine_from_hamming(d) >= threshold - 1e-12)
        .unwrap_or(0)
}

/// The one-bit estimate of a fingerprint pair at Hamming distance `d`: `1 − d/32`, exactly
/// what verification computes from 64 − d equal one-bit slots.
pub(super) fn estimate_at(d: u32) -> f64 {
    bbit::estimate_from_matches(SLOTS - d as usize, SLOTS, 1)
}

/// Inverse of [`estimate_at`] (estimates are multiples of 1/32, exact in an f64).
pub(super) fn distance_of(estimate: f64) -> u32 {
    ((1.0 - estimate) * 32.0).round() as u32
}

impl Db {
    /// The SimHash fingerprint of `text` under this index's parameters (and key).
    pub fn simhash_text(&self, text: &str) -> Result<SimHash> {
        Ok(self.simhasher()?.sketch_text(text))
    }

    /// Inserts (or replaces) `key` with a precomputed fingerprint (SimHash index).
    pub fn insert_simhash(&self, key: impl AsRef<[u8]>, fp: SimHash) -> Result<()> {
        self.simhash_kind_check()?;
        self.insert(key, &fp.to_signature())
    }

    /// Documents within the index's maximum Hamming distance of `fp` (SimHash index), or
    /// within the distance [`QueryOptions::threshold`] allows read as a minimum cosine
    /// estimate ([`max_distance_for_threshold`]). Matches are nearest first, each with its
    /// `distance` and `cosine`.
    pub fn query_simhash(&self, fp: SimHash, opts: &QueryOptions) -> Result<QueryResult> {
        self.simhash_kind_check()?;
        self.query(&fp.to_signature(), opts)
    }

    /// [`Db::query`] on a SimHash index: a fingerprint (as its one-bit signature) against the
    /// stored ones. The fingerprint 0 (text without features) matches nothing, as the
    /// empty-set signature does in a MinHash index.
    pub(in crate::db) fn query_fingerprint(
        &self,
        state: &State,
        sig: &Signature,
        banded: Option<Banded<'_>>,
        opts: &QueryOptions,
    ) -> Result<QueryResult> {
        let fp = SimHash::from_signature(sig)?;
        let floor = self.similarity_floor(opts.threshold.unwrap_or(self.params.threshold))?;
        if fp.bits() == 0 {
            return Ok(QueryResult::default());
        }
        let computed;
        let band_keys = match banded {
            Some(b) => b.band_keys,
            None => {
                computed = self.sketcher.band_keys(sig)?;
                &computed
            }
        };
        // The packed record of a fingerprint is its bits, little-endian.
        let packed = fp.bits().to_le_bytes();
        // Top-k: the k nearest within the index's reach (every document within
        // `max_hamming` is a candidate; none beyond it can be found), best first like any
        // answer, so the first k of them.
        let bounds = Bounds::ranked(opts);
        let mut result = self.run_query(
            state,
            band_keys,
            QueryPacked::Packed(&packed),
            floor,
            None,
            bounds,
        )?;
        for m in &mut result.matches {
            let (similarity, distance, cosine) = self.describe_estimate(m.similarity);
            m.similarity = similarity;
            m.estimate = similarity;
            m.distance = distance;
            m.cosine = cosine;
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_and_distances_are_inverse() {
        for d in 0..=15 {
            assert_eq!(distance_of(estimate_at(d)), d);
            assert_eq!(
                bbit::min_matches_for(estimate_at(d), SLOTS, 1),
                SLOTS - d as usize
            );
        }
    }

    #[test]
    fn a_cosine_threshold_admits_the_distances_at_or_above_it() {
        for h in 0..=15 {
            for d in 0..=h {
                assert_eq!(max_distance_for_threshold(cosine_from_hamming(d), h), d);
            }
            assert_eq!(max_distance_for_threshold(0.0, h), h);
            assert_eq!(max_distance_for_threshold(1.0, h), 0);
        }
    }
}
