//! The index kinds, MinHash-LSH and SimHash-pigeonhole ([`IndexKind`]): every rule that
//! differs between them lives in this module, and the rest of the engine asks it.
//!
//! | what differs | where |
//! | --- | --- |
//! | what a threshold means, the chance of a candidate, warnings, merging, validation | here, on [`IndexParams`] |
//! | signing text, band keys, the shape of a signature, queries, reporting an estimate | `sketcher` (an open index's [`Sketcher`]) |
//! | the SimHash query path and its distance ↔ estimate arithmetic | `simhash` |
//! | documents given as token lists, and which of texts and token lists an index takes | `tokens` |
//!
//! Storage serves both kinds unchanged: a SimHash index stores a fingerprint as a signature
//! of 64 one-bit slots (slot i = bit i; packed, the fingerprint as a little-endian u64).
//! Equal one-bit slots are equal bits, so "at least 64 − d equal slots" is "Hamming distance
//! at most d", and the candidate, verification, dedup, flush, compaction and transfer paths
//! need no kind of their own. That representation stays inside the engine: callers hold a
//! [`SimHash`] ([`Db::simhash_text`](super::Db::simhash_text),
//! [`Db::query_simhash`](super::Db::query_simhash)).

mod simhash;
mod sketcher;
mod tokens;

pub use simhash::max_distance_for_threshold;
pub(super) use sketcher::{DocumentSigner, Sketcher};

use super::StoredSignature;
use super::metric::Metric;
use super::params::STORED_SETS_RECALL;
use super::params::{IndexKind, IndexParams};
use super::params_builder::{ParamsWarning, weak_banding};
use crate::sketch::{MinHasher, Signature, SimHash, SimParams, SketchParams, cosine_from_hamming};
use crate::{Error, Result};

impl IndexParams {
    /// The SimHash parameters of a SimHash index; `None` for a MinHash one.
    pub fn sim_params(&self) -> Option<SimParams> {
        match self.kind {
            IndexKind::MinHash | IndexKind::Containment => None,
            IndexKind::SimHash {
                max_hamming,
                weighting,
            } => Some(SimParams {
                seed: self.sketch.seed,
                shingle: self.sketch.shingle,
                weighting,
                max_hamming,
            }),
        }
    }

    /// The metric of the similarities this index reports by default: Jaccard for MinHash,
    /// cosine for SimHash, containment for a containment index (which answers Jaccard queries
    /// too).
    pub fn metric(&self) -> Metric {
        match self.kind {
            IndexKind::MinHash => Metric::Jaccard,
            IndexKind::Containment => Metric::Containment,
            IndexKind::SimHash { .. } => Metric::Cosine,
        }
    }

    /// The chance that a document at similarity `t` becomes a candidate through the bands:
    /// the S-curve of a MinHash index; `None` for a SimHash index, where every document
    /// within `max_hamming` is one (unless its block's bucket was capped), and for a
    /// containment index, whose curve depends on the query's and the documents' sizes.
    pub fn candidate_probability(&self, t: f64) -> Option<f64> {
        match self.kind {
            IndexKind::MinHash => Some(self.lsh.probability(t)),
            IndexKind::SimHash { .. } | IndexKind::Containment => None,
        }
    }

    /// [`IndexParams::candidate_probability`] at each of `points`, as `(similarity,
    /// probability)` pairs: the S-curve; `None` for a SimHash or containment index, which
    /// has none of its own.
    pub fn candidate_curve(&self, points: &[f64]) -> Option<Vec<(f64, f64)>> {
        match self.kind {
            IndexKind::MinHash => Some(self.lsh.curve(points)),
            IndexKind::SimHash { .. } | IndexKind::Containment => None,
        }
    }

    /// What threshold `t` admits, in words: `J ≥ t`, or for a SimHash index the largest
    /// Hamming distance it admits.
    pub fn describe_threshold(&self, t: f64) -> String {
        match self.sim_params() {
            None if self.kind == IndexKind::Containment => format!("containment ≥ {t}"),
            None => format!("J ≥ {t}"),
            Some(sim) => format!(
                "Hamming distance ≤ {}",
                max_distance_for_threshold(t, sim.max_hamming)
            ),
        }
    }

    /// The threshold a maximum Hamming distance `d` means (the cosine estimate at `d`): an
    /// error for a MinHash index, or beyond the index's `max_hamming`.
    pub fn threshold_for_distance(&self, d: u32) -> Result<f64> {
        match self.sim_params() {
            None => Err(Error::invalid(
                "max_distance",
                "is for SimHash indexes; this is a MinHash index (give a threshold)",
            )),
            Some(sim) if d > sim.max_hamming => Err(Error::invalid(
                "max_distance",
                format!(
                    "{d} is more than the index's max_hamming {m}: its blocks find only \
                     documents within {m} bits",
                    m = sim.max_hamming
                ),
            )),
            Some(_) => Ok(cosine_from_hamming(d)),
        }
    }

    /// Whether an index of these parameters may have the EXACT_HASH column: a MinHash index
    /// that signs its documents itself (texts or token lists). SimHash indexes, and indexes
    /// of signatures made elsewhere, never see the bytes the hash is over.
    pub fn can_have_exact_hashes(&self) -> bool {
        self.sim_params().is_none() && self.sketch.scheme.signs_text()
    }

    /// Whether `sig`, the signature of a text in an index with these parameters
    /// ([`Db::sketch_text`](crate::db::Db::sketch_text)), is that of a text without shingles
    /// (empty, or white space only): the empty-set signature ([`Signature::is_empty_set`]) or,
    /// in a SimHash index, the fingerprint 0. Such a document is similar to nothing, so no
    /// query could ever find it: `mhdb add` and the Python binding refuse to store it.
    pub fn has_no_shingles(&self, sig: &Signature) -> bool {
        match self.kind {
            IndexKind::MinHash | IndexKind::Containment => sig.is_empty_set(),
            IndexKind::SimHash { .. } => sig.slots().iter().all(|&bit| bit == 0),
        }
    }

    /// The fingerprint `stored` holds in a SimHash index; `None` in a MinHash index, whose
    /// stored signatures are MinHash slots.
    pub fn stored_fingerprint(&self, stored: &StoredSignature) -> Result<Option<SimHash>> {
        match self.kind {
            IndexKind::MinHash | IndexKind::Containment => Ok(None),
            IndexKind::SimHash { .. } => {
                let sig = Signature::from_slots(stored.slots()?);
                SimHash::from_signature(&sig).map(Some)
            }
        }
    }

    /// The signer for these parameters (an error for a SimHash index, which has none).
    pub fn hasher(&self) -> Result<MinHasher> {
        match self.kind {
            IndexKind::MinHash | IndexKind::Containment => MinHasher::new(self.sketch),
            IndexKind::SimHash { .. } => Err(Error::ParameterMismatch {
                name: "kind",
                stored: self.kind.to_string(),
                requested: "minhash (a MinHash signer)".into(),
            }),
        }
    }

    /// Errors for an index without an all-pairs dedup pass: a containment index, whose band
    /// keys are seeded by size class (near-duplicates in neighbouring classes share no
    /// bucket), and whose documents' keys in other classes cannot be made from their stored
    /// signatures; its decision reads the documents again.
    pub fn check_dedup_built(&self) -> Result<()> {
        match self.kind {
            IndexKind::Containment => Err(Error::invalid(
                "dedup",
                "a containment index is deduplicated by containment, from its documents read \
                 again (it keeps b-bit signatures, and a containment query needs the full \
                 ones): give them to `dedup --apply INPUT --out DIR`, Python \
                 `dedup_table(documents=...)` or Rust `Decisions::compute_containment`; pairs \
                 and clusters need an index created with the Jaccard metric",
            )),
            _ => Ok(()),
        }
    }

    /// Checks every field; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        match (self.kind, self.sim_params()) {
            (IndexKind::Containment, _) => self.validate_containment(),
            (_, None) => self.validate_minhash(),
            (_, Some(sim)) => self.validate_simhash(&sim),
        }
    }

    /// What is worth a warning about these parameters of a new index (none for SimHash).
    pub fn warnings(&self) -> Vec<ParamsWarning> {
        if self.kind != IndexKind::MinHash {
            return Vec::new();
        }
        let mut warnings: Vec<ParamsWarning> =
            weak_banding(self.lsh, self.threshold).into_iter().collect();
        let probability = self.lsh.probability(self.threshold);
        if self.store_sets && (0.5..STORED_SETS_RECALL).contains(&probability) {
            warnings.push(ParamsWarning::StoredSetsShortOfRecall {
                band_slots: self.band_slots,
                threshold: self.threshold,
                probability,
            });
        }
        warnings
    }

    /// Errors with [`Error::ParameterMismatch`] if `other`'s signatures (MinHash signatures
    /// made elsewhere) are incompatible.
    pub fn check_compatible(&self, other: &SketchParams) -> Result<()> {
        match self.kind {
            IndexKind::MinHash | IndexKind::Containment => self.check_compatible_sketch(other),
            IndexKind::SimHash { .. } => Err(Error::ParameterMismatch {
                name: "kind",
                stored: self.kind.to_string(),
                requested: format!("minhash ({} signatures)", other.scheme),
            }),
        }
    }

    /// The kind-specific part of [`IndexParams::check_mergeable`]: the same kind, and the
    /// same signing (MinHash) or the same fingerprints and blocks (SimHash).
    pub(super) fn check_same_kind(&self, src: &IndexParams) -> Result<()> {
        let mismatch = |name: &'static str, stored: String, requested: String| {
            Err(Error::ParameterMismatch {
                name,
                stored,
                requested,
            })
        };
        match (self.kind, src.kind) {
            (IndexKind::MinHash, IndexKind::MinHash)
            | (IndexKind::Containment, IndexKind::Containment) => {
                self.check_compatible_sketch(&src.sketch)
            }
            (
                IndexKind::SimHash {
                    max_hamming: x,
                    weighting: wx,
                },
                IndexKind::SimHash {
                    max_hamming: y,
                    weighting: wy,
                },
            ) if x != y && wx == wy => mismatch("max_hamming", x.to_string(), y.to_string()),
            (a, b) if a != b => mismatch("kind", a.to_string(), b.to_string()),
            _ if self.sketch != src.sketch => mismatch(
                "seed/shingle",
                format!("seed {} {:?}", self.sketch.seed, self.sketch.shingle),
                format!("seed {} {:?}", src.sketch.seed, src.sketch.shingle),
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::SimHasher;

    fn minhash() -> IndexParams {
        IndexParams::default()
    }

    fn simhash(max_hamming: u32) -> IndexParams {
        IndexParams::simhash(SimParams {
            max_hamming,
            ..SimParams::default()
        })
        .unwrap()
    }

    #[test]
    fn only_a_minhash_index_has_an_s_curve() {
        let p = minhash();
        assert_eq!(p.candidate_probability(0.5), Some(p.lsh.probability(0.5)));
        assert_eq!(
            p.candidate_curve(&[0.5]),
            Some(vec![(0.5, p.lsh.probability(0.5))])
        );
        assert_eq!(simhash(3).candidate_probability(0.5), None);
        assert_eq!(simhash(3).candidate_curve(&[0.5]), None);
    }

    #[test]
    fn a_threshold_is_described_in_the_kinds_terms() {
        assert_eq!(minhash().describe_threshold(0.8), "J ≥ 0.8");
        let t = cosine_from_hamming(2);
        assert_eq!(simhash(3).describe_threshold(t), "Hamming distance ≤ 2");
    }

    #[test]
    fn a_distance_is_a_threshold_of_a_simhash_index_within_its_reach() {
        assert_eq!(
            simhash(3).threshold_for_distance(2).unwrap(),
            cosine_from_hamming(2)
        );
        let beyond = simhash(3).threshold_for_distance(4).unwrap_err();
        assert!(beyond.to_string().contains("max_hamming 3"), "{beyond}");
        let minhash = minhash().threshold_for_distance(1).unwrap_err();
        assert!(minhash.to_string().contains("MinHash index"), "{minhash}");
    }

    #[test]
    fn a_stored_fingerprint_is_read_back_in_a_simhash_index_only() {
        let p = simhash(3);
        let fp = SimHasher::new(p.sim_params().unwrap())
            .unwrap()
            .sketch_text("a few words to fingerprint here");
        let packed = crate::sketch::bbit::pack(fp.to_signature().slots(), 1).unwrap();
        let stored = StoredSignature {
            bits: 1,
            num_perm: 64,
            packed,
        };
        assert_eq!(p.stored_fingerprint(&stored).unwrap(), Some(fp));
        assert_eq!(minhash().stored_fingerprint(&stored).unwrap(), None);
    }

    #[test]
    fn kinds_do_not_mix() {
        let err = minhash().check_mergeable(&simhash(3)).unwrap_err();
        assert!(err.to_string().contains("kind"), "{err}");
        let err = simhash(3).check_mergeable(&simhash(4)).unwrap_err();
        assert!(err.to_string().contains("max_hamming"), "{err}");
        simhash(3).check_mergeable(&simhash(3)).unwrap();
        assert!(simhash(3).check_compatible(&minhash().sketch).is_err());
        assert!(simhash(3).hasher().is_err());
        assert!(simhash(3).warnings().is_empty());
    }

    #[test]
    fn a_simhash_index_stores_no_sets() {
        let mut p = simhash(3);
        p.store_sets = true;
        let err = p.validate().unwrap_err();
        assert!(err.to_string().contains("store_sets"), "{err}");
    }
}
