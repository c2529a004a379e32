//! SimHash-pigeonhole indexes ([`IndexKind::SimHash`](super::IndexKind::SimHash)): text →
//! 64-bit fingerprint (`format/hashing.md` §13), its h + 1 block keys as the band keys, and
//! results in Hamming distance and cosine estimate.
//!
//! The engine stores a fingerprint as a signature of 64 one-bit slots (slot i = bit i; packed,
//! the record is the fingerprint as a little-endian u64). Equal one-bit slots are equal bits,
//! so "at least 64 − d equal slots" is "Hamming distance at most d": the shared candidate,
//! verification, dedup, flush, compaction and transfer paths serve both kinds unchanged, and
//! this module only translates at the edges (distance ↔ the one-bit estimate `1 − d/32`).

use std::path::Path;

use super::params::IndexParams;
use super::{Db, Options, QueryOptions, QueryResult};
use crate::sketch::{Banding, Signature, SimHash, SimHasher, bbit, cosine_from_hamming};
use crate::{Error, Result};

/// Bits of a fingerprint, as slots.
const SLOTS: usize = 64;

/// How band keys follow from a signature's slots: LSH bands of a MinHash signature, or the
/// pigeonhole block keys of a fingerprint.
#[derive(Clone, Debug)]
pub(super) enum BandKeys {
    MinHash(Banding),
    /// Block keys depend on the seed only (never on a secret key), so an unkeyed hasher
    /// computes them for every index.
    SimHash(SimHasher),
}

impl BandKeys {
    pub(super) fn new(params: &IndexParams) -> Result<Self> {
        match params.sim_params() {
            None => params.banding().map(BandKeys::MinHash),
            Some(sim) => SimHasher::new(sim).map(BandKeys::SimHash),
        }
    }

    /// The band keys of `slots`, one per band.
    pub(super) fn band_keys(&self, slots: &[u64]) -> Result<Vec<u64>> {
        match self {
            BandKeys::MinHash(b) => b.band_keys(slots),
            BandKeys::SimHash(h) => Ok(h.block_keys(fingerprint_of_slots(slots)?)),
        }
    }

    /// [`BandKeys::band_keys`] into `out` (exactly one slot per band).
    pub(super) fn band_keys_to_slice(&self, slots: &[u64], out: &mut [u64]) -> Result<()> {
        match self {
            BandKeys::MinHash(b) => b.band_keys_to_slice(slots, out),
            BandKeys::SimHash(h) => h.block_keys_to_slice(fingerprint_of_slots(slots)?, out),
        }
    }
}

/// The fingerprint a SimHash index's signature holds; an error names what else it is.
pub(super) fn fingerprint_of(sig: &Signature) -> Result<SimHash> {
    SimHash::from_signature(sig)
}

fn fingerprint_of_slots(slots: &[u64]) -> Result<SimHash> {
    SimHash::from_signature(&Signature::from_slots(slots.to_vec()))
}

/// The fingerprinter of a SimHash index: none for a MinHash index, or for a keyed one opened
/// without its key (text is then refused, saying why; fingerprint queries still work).
pub(super) fn text_simhasher(params: &IndexParams, opts: &Options) -> Result<Option<SimHasher>> {
    let Some(sim) = params.sim_params() else {
        return Ok(None);
    };
    super::open::text_key(params, opts)?.signer(|key| SimHasher::with_key(sim, key))
}

/// The error for asking a SimHash index for MinHash things (its signer, a MinHash signature).
pub(super) fn not_minhash(dir: &Path) -> Error {
    Error::ParameterMismatch {
        name: "kind",
        stored: format!("simhash ({})", dir.display()),
        requested: "minhash (a MinHash signer or signature)".into(),
    }
}

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
fn estimate_at(d: u32) -> f64 {
    bbit::estimate_from_matches(SLOTS - d as usize, SLOTS, 1)
}

/// Inverse of [`estimate_at`] (estimates are multiples of 1/32, exact in an f64).
fn distance_of(estimate: f64) -> u32 {
    ((1.0 - estimate) * 32.0).round() as u32
}

impl Db {
    /// The fingerprinter of a SimHash index; an error for a MinHash index, or for a keyed
    /// index opened without its key.
    pub fn simhasher(&self) -> Result<&SimHasher> {
        if self.params.sim_params().is_none() {
            return Err(Error::ParameterMismatch {
                name: "kind",
                stored: format!("minhash ({})", self.dir.display()),
                requested: "simhash (a SimHash fingerprint)".into(),
            });
        }
        self.simhasher.as_ref().ok_or_else(|| {
            match self.params.key_fingerprint.check(None) {
                Err(e) => e,
                // Unreachable: an unkeyed SimHash index always has its fingerprinter.
                Ok(()) => Error::invalid("key", "no fingerprinter for this index"),
            }
        })
    }

    /// The SimHash fingerprint of `text` under this index's parameters (and key).
    pub fn simhash_text(&self, text: &str) -> Result<SimHash> {
        Ok(self.simhasher()?.sketch_text(text))
    }

    /// Inserts (or replaces) `key` with a precomputed fingerprint (SimHash index).
    pub fn insert_simhash(&self, key: impl AsRef<[u8]>, fp: SimHash) -> Result<()> {
        self.simhasher_kind_check()?;
        self.insert(key, &fp.to_signature())
    }

    /// Documents within the index's maximum Hamming distance of `fp` (SimHash index), or
    /// within the distance [`QueryOptions::threshold`] allows read as a minimum cosine
    /// estimate ([`max_distance_for_threshold`]). Matches are nearest first, each with its
    /// `distance` and `cosine`.
    pub fn query_simhash(&self, fp: SimHash, opts: &QueryOptions) -> Result<QueryResult> {
        self.simhasher_kind_check()?;
        self.query(&fp.to_signature(), opts)
    }

    /// Errors unless this is a SimHash index.
    fn simhasher_kind_check(&self) -> Result<()> {
        match self.params.sim_params() {
            Some(_) => Ok(()),
            None => self.simhasher().map(|_| ()),
        }
    }

    /// [`Db::query`] on a SimHash index: a fingerprint (as its one-bit signature) against the
    /// stored ones. The fingerprint 0 (text without features) matches nothing, as the
    /// empty-set signature does in a MinHash index.
    pub(super) fn query_fingerprint(
        &self,
        sig: &Signature,
        opts: &QueryOptions,
    ) -> Result<QueryResult> {
        let fp = fingerprint_of(sig)?;
        let floor = self.similarity_floor(opts.threshold.unwrap_or(self.params.threshold))?;
        if fp.bits() == 0 {
            return Ok(QueryResult::default());
        }
        let band_keys = self.banding.band_keys(sig.slots())?;
        let packed = fp.bits().to_le_bytes();
        let state = self.state.read();
        // Top-k: the k nearest within the index's reach (every document within
        // `max_hamming` is a candidate; none beyond it can be found), best first like any
        // answer, so the first k of them.
        let limit = match (opts.top, opts.limit) {
            (Some(k), Some(l)) => Some(k.min(l)),
            (top, limit) => top.or(limit),
        };
        let mut result = self.run_query(&state, &band_keys, &packed, floor, None, limit)?;
        for m in &mut result.matches {
            let (similarity, distance, cosine) = self.describe_estimate(m.similarity);
            m.similarity = similarity;
            m.estimate = similarity;
            m.distance = distance;
            m.cosine = cosine;
        }
        Ok(result)
    }

    /// The least verification estimate of a match at `threshold`: the threshold itself for a
    /// MinHash index; for a SimHash index, whose threshold is a minimum cosine estimate, the
    /// one-bit estimate at the largest distance it admits.
    pub(super) fn similarity_floor(&self, threshold: f64) -> Result<f64> {
        if !(0.0..=1.0).contains(&threshold) {
            return Err(Error::invalid(
                "threshold",
                format!("must be in [0, 1], got {threshold}"),
            ));
        }
        Ok(match self.params.sim_params() {
            None => threshold,
            Some(sim) => estimate_at(max_distance_for_threshold(threshold, sim.max_hamming)),
        })
    }

    /// A verification estimate as reported: for a MinHash index the Jaccard estimate itself;
    /// for a SimHash index the cosine estimate, with the distance and cosine fields set.
    pub(super) fn describe_estimate(&self, estimate: f64) -> (f64, Option<u32>, Option<f64>) {
        match self.params.sim_params() {
            None => (estimate, None, None),
            Some(_) => {
                let d = distance_of(estimate);
                let cosine = cosine_from_hamming(d);
                (cosine, Some(d), Some(cosine))
            }
        }
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
