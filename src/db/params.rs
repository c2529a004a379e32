//! The parameters fixed when a database is created, stored in every manifest and checked on
//! every open: a signature made with other parameters is meaningless to the index.

use crate::sketch::{
    Banding, KeyFingerprint, LshParams, Scheme, SimParams, SimWeighting, SketchParams, TuneOptions,
    bbit, cosine_from_hamming, tune,
};
use crate::storage::manifest::MANIFEST_VERSION;
use crate::storage::segment::SegmentOptions;
use crate::{Error, Result};

/// Everything fixed at creation time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexParams {
    /// How signatures are computed.
    pub sketch: SketchParams,
    /// Bits per slot of a stored signature (1, 2, 4, 8, 16, 32 or 64).
    pub bits: u32,
    /// k_b: the bands cover signature slots `0 .. band_slots` (at most `sketch.num_perm`, the
    /// k_v slots verification compares). A verification sketch wider than the bands (k_b <
    /// k_v) estimates similarity more precisely for the same candidates: OPH signs every slot
    /// in one pass over the shingles, so extra slots cost bytes, not ingest time.
    pub band_slots: usize,
    /// Bands × rows (`bands · rows ≤ band_slots`).
    pub lsh: LshParams,
    /// The default query threshold (and the one the bands were tuned for).
    pub threshold: f64,
    /// Largest number of documents kept per bucket by compaction (`None`: unlimited).
    pub bucket_cap: Option<u32>,
    /// Keyed hashing (`format/hashing.md` §12): the fingerprint of the secret key the shingles
    /// are hashed under, never the key; [`KeyFingerprint::UNKEYED`] for the public seed.
    /// [`Db::create`](super::Db::create) sets it from [`Options::key`](super::Options::key).
    pub key_fingerprint: KeyFingerprint,
    /// Every document's shingle set is stored beside its signature, so that queries and
    /// dedup report the exact Jaccard similarity (format version 2's SHINGLES section).
    /// Documents must then be inserted as text. See [`IndexParams::with_stored_sets`].
    pub store_sets: bool,
    /// Which index this is: MinHash-LSH, or SimHash-pigeonhole (see [`IndexKind`]).
    pub kind: IndexKind,
}

/// The kind of index (one per database; `format/manifest.md`, field `kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexKind {
    /// MinHash signatures banded by LSH; matches by estimated Jaccard.
    #[default]
    MinHash,
    /// SimHash fingerprints (`format/hashing.md` §13) indexed by their h + 1 pigeonhole
    /// blocks; matches by Hamming distance at most `max_hamming`. Such an index stores each
    /// fingerprint as a signature of 64 one-bit slots (slot i = bit i, so the packed record is
    /// the fingerprint as a little-endian u64), its blocks' keys as the band keys, and
    /// `sketch.num_perm` = 64, `bits` = 1, `lsh` = (h + 1) × 0.
    SimHash {
        /// The largest Hamming distance of a match (h).
        max_hamming: u32,
        /// How term frequencies become feature weights.
        weighting: SimWeighting,
    },
    /// MinHash signatures banded by LSH Ensemble over size classes
    /// (`format/containment.md`): every document keeps its set size and gets the band keys of
    /// every banding of [`CONTAINMENT_BANDINGS`] under its size class; matches by containment
    /// `|Q ∩ X| / |Q|`, and Jaccard queries work too. Such an index has `lsh` = (all the
    /// bandings' bands) × 0: the bands are numbered flat, banding after banding.
    Containment,
}

/// The bandings of a containment index: (bands, rows) over the first slots, every document
/// getting all of them; a query probes a prefix of one per size class.
pub const CONTAINMENT_BANDINGS: [LshParams; 5] = crate::sketch::containment::DEFAULT_BANDINGS;

impl IndexKind {
    /// The name used on the command line and in `stats`: `minhash` (a containment index
    /// too) or `simhash`.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::MinHash => "minhash",
            IndexKind::SimHash { .. } => "simhash",
            // A containment index is a MinHash index; its metric tells it apart.
            IndexKind::Containment => "minhash",
        }
    }
}

impl std::fmt::Display for IndexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexKind::MinHash => f.write_str(self.name()),
            IndexKind::Containment => f.write_str("minhash (containment)"),
            IndexKind::SimHash {
                max_hamming,
                weighting,
            } => write!(
                f,
                "simhash (max_hamming {max_hamming}, weighting {weighting})"
            ),
        }
    }
}

impl Default for IndexParams {
    /// A MinHash index for threshold 0.8 with the default sketch shape
    /// ([`IndexParams::with_shape`]): 512 OPH slots at 4 bits, bands over the first 128.
    fn default() -> Self {
        let sketch = SketchParams {
            num_perm: DEFAULT_OPH_SLOTS,
            ..SketchParams::default()
        };
        IndexParams::with_shape(sketch, None, None, 0.8).unwrap_or_else(|_| IndexParams {
            sketch,
            bits: default_bits(sketch.num_perm),
            band_slots: default_band_slots(sketch.num_perm),
            lsh: LshParams { bands: 13, rows: 7 },
            threshold: 0.8,
            bucket_cap: Some(DEFAULT_BUCKET_CAP),
            key_fingerprint: KeyFingerprint::UNKEYED,
            store_sets: false,
            kind: IndexKind::MinHash,
        })
    }
}

/// The bands of a containment index: all of [`CONTAINMENT_BANDINGS`]'.
pub fn containment_band_count() -> usize {
    CONTAINMENT_BANDINGS.iter().map(|b| b.bands).sum()
}

/// The slots k_v a new OPH index verifies with when none are given. Chosen by
/// `tools/result_quality.py` (BENCHMARKS.md, "Result quality at the threshold"): on a
/// boilerplate-heavy corpus at t = 0.8, 512 slots at 4 bits kept recall ≥ 0.996 and precision
/// (counting J ≥ 0.75 right) ≥ 0.997 on every seed, where 128 slots at 32 bits gave recall
/// 0.957–0.990 and precision 0.877–0.959, in half the bytes. OPH signs every slot in one pass
/// over the shingles, so the extra slots cost bytes, not ingest time.
pub const DEFAULT_OPH_SLOTS: usize = 512;

/// The slots of a new k-permutation index when none are given: there each slot costs one hash
/// per shingle, so the wider verification sketch is not free.
pub const DEFAULT_KPERM_SLOTS: usize = 128;

/// The slots k_b the bands of a new index cover by default (the first of the k_v): the
/// thresholds' tunings need no longer bands, and more would only lengthen them.
pub const DEFAULT_BAND_SLOTS: usize = 128;

/// The signature size the default bit width aims at: [`default_bits`].
const DEFAULT_SIGNATURE_BITS: usize = 2048;

/// The default slots of a new index signed by `scheme`: [`DEFAULT_OPH_SLOTS`] or
/// [`DEFAULT_KPERM_SLOTS`].
pub fn default_slots(scheme: Scheme) -> usize {
    match scheme {
        Scheme::Oph => DEFAULT_OPH_SLOTS,
        // k-permutation, and datasketch's schemes (whose users bring their num_perm).
        _ => DEFAULT_KPERM_SLOTS,
    }
}

/// The default bits per stored slot for `num_perm` slots: the width that makes a signature 256
/// bytes, at least 4 and at most 32 (512 slots → 4 bits, 256 → 8, 128 → 16, 64 → 32). Below 4
/// bits the chance agreement of unequal slots (2^-b) costs more estimate precision than the
/// extra slots buy; above 32 it is already negligible.
pub fn default_bits(num_perm: usize) -> u32 {
    let per_slot = DEFAULT_SIGNATURE_BITS / num_perm.max(1);
    let mut bits = 4u32;
    while bits < 32 && (bits as usize) < per_slot {
        bits *= 2;
    }
    bits
}

/// The default k_b for `num_perm` slots: [`DEFAULT_BAND_SLOTS`], or every slot when there are
/// fewer.
pub fn default_band_slots(num_perm: usize) -> usize {
    num_perm.min(DEFAULT_BAND_SLOTS)
}

/// Default bucket cap: far above any real near-duplicate cluster at sane thresholds, low enough
/// that one boilerplate bucket cannot turn every query into a scan.
pub const DEFAULT_BUCKET_CAP: u32 = 10_000;

/// The probability at the threshold that the default banding of an index with stored sets
/// reaches (the plain default asks for 0.95, since there the estimate also decides precision).
pub const STORED_SETS_RECALL: f64 = 0.99;

/// Checks `1 ≤ band_slots ≤ num_perm`. Any scheme may band over fewer slots than it
/// verifies: OPH bins and k-permutation slots are each an unbiased Jaccard estimate, so the
/// first k_b of them are as good a banding sketch as a k_b-slot signature.
fn check_band_slots(band_slots: usize, num_perm: usize) -> Result<()> {
    if band_slots == 0 || band_slots > num_perm {
        return Err(Error::invalid(
            "band_slots",
            format!(
                "must be in 1..={num_perm} (the signature's slots, num_perm), got {band_slots}"
            ),
        ));
    }
    Ok(())
}

/// A SimHash index's signature: 64 slots of one bit, the fingerprint's bits.
const SIMHASH_SLOTS: usize = 64;

impl IndexParams {
    /// Parameters for `threshold` with `bits` and `band_slots` as given, or else the defaults
    /// for `sketch`'s slots ([`default_bits`], [`default_band_slots`]), bands × rows tuned by
    /// the default rule. `mhdb create` and Python's `Index.create` fill what is not given
    /// this way.
    pub fn with_shape(
        sketch: SketchParams,
        bits: Option<u32>,
        band_slots: Option<usize>,
        threshold: f64,
    ) -> Result<Self> {
        IndexParams::with_band_slots(
            sketch,
            bits.unwrap_or_else(|| default_bits(sketch.num_perm)),
            band_slots.unwrap_or_else(|| default_band_slots(sketch.num_perm)),
            threshold,
        )
    }

    /// Parameters with bands over every slot (k_b = k_v) and bands × rows tuned for
    /// `threshold` by the default rule.
    pub fn for_threshold(sketch: SketchParams, bits: u32, threshold: f64) -> Result<Self> {
        IndexParams::with_band_slots(sketch, bits, sketch.num_perm, threshold)
    }

    /// Parameters with bands over the first `band_slots` slots (k_b ≤ k_v =
    /// `sketch.num_perm`), bands × rows tuned for `threshold` over those k_b slots, and
    /// verification over all k_v.
    pub fn with_band_slots(
        sketch: SketchParams,
        bits: u32,
        band_slots: usize,
        threshold: f64,
    ) -> Result<Self> {
        sketch.validate()?;
        check_band_slots(band_slots, sketch.num_perm)?;
        let tuning = tune(threshold, band_slots, &TuneOptions::default())?;
        let params = IndexParams {
            sketch,
            bits,
            band_slots,
            lsh: tuning.params,
            threshold,
            bucket_cap: Some(DEFAULT_BUCKET_CAP),
            key_fingerprint: KeyFingerprint::UNKEYED,
            store_sets: false,
            kind: IndexKind::MinHash,
        };
        params.validate()?;
        Ok(params)
    }

    /// These parameters with stored shingle sets, and bands × rows re-tuned for recall: with
    /// the exact Jaccard deciding precision, the bands only need to propose nearly every pair
    /// at the threshold (P(t) ≥ [`STORED_SETS_RECALL`]).
    pub fn with_stored_sets(mut self) -> Result<Self> {
        let options = TuneOptions {
            min_recall_at_threshold: STORED_SETS_RECALL,
            ..TuneOptions::default()
        };
        // A containment index's bandings serve every threshold: nothing to re-tune.
        if self.kind != IndexKind::Containment {
            self.lsh = tune(self.threshold, self.band_slots, &options)?.params;
        }
        self.store_sets = true;
        self.validate()?;
        Ok(self)
    }

    /// Parameters of a SimHash-pigeonhole index (`format/hashing.md` §13): fingerprints of
    /// `sim`'s features, matches within `sim.max_hamming` bits. The default query threshold is
    /// the cosine estimate at that distance.
    pub fn simhash(sim: SimParams) -> Result<Self> {
        sim.validate()?;
        let params = IndexParams {
            sketch: SketchParams {
                num_perm: SIMHASH_SLOTS,
                seed: sim.seed,
                shingle: sim.shingle,
                ..SketchParams::default()
            },
            bits: 1,
            band_slots: SIMHASH_SLOTS,
            lsh: LshParams {
                bands: sim.block_count(),
                rows: 0,
            },
            threshold: cosine_from_hamming(sim.max_hamming),
            bucket_cap: Some(DEFAULT_BUCKET_CAP),
            key_fingerprint: KeyFingerprint::UNKEYED,
            store_sets: false,
            kind: IndexKind::SimHash {
                max_hamming: sim.max_hamming,
                weighting: sim.weighting,
            },
        };
        params.validate()?;
        Ok(params)
    }

    /// These MinHash parameters as a containment index's (`format/containment.md`): the same
    /// signatures, banded by [`CONTAINMENT_BANDINGS`] over the first `band_slots` slots, and
    /// the threshold as the default containment of a match.
    pub fn into_containment(self) -> Result<Self> {
        if self.kind != IndexKind::MinHash {
            return Err(Error::invalid(
                "metric",
                format!(
                    "containment is for MinHash indexes; this is a {} index",
                    self.kind
                ),
            ));
        }
        let params = IndexParams {
            lsh: LshParams {
                bands: containment_band_count(),
                rows: 0,
            },
            kind: IndexKind::Containment,
            ..self
        };
        params.validate()?;
        Ok(params)
    }

    /// [`IndexParams::validate`] for a containment index.
    pub(super) fn validate_containment(&self) -> Result<()> {
        self.sketch.validate()?;
        self.check_format_version(MANIFEST_VERSION)?;
        bbit::validate_bits(self.bits)?;
        check_band_slots(self.band_slots, self.sketch.num_perm)?;
        for b in CONTAINMENT_BANDINGS {
            if b.bands * b.rows > self.band_slots {
                return Err(Error::invalid(
                    "band_slots",
                    format!(
                        "a containment index's banding of {} bands × {} rows needs {} slots; \
                         the bands cover {}",
                        b.bands,
                        b.rows,
                        b.bands * b.rows,
                        self.band_slots
                    ),
                ));
            }
        }
        if (self.lsh.bands, self.lsh.rows) != (containment_band_count(), 0) {
            return Err(Error::invalid(
                "bands",
                format!(
                    "a containment index has {} bands (its bandings') and no rows of its own",
                    containment_band_count()
                ),
            ));
        }
        self.check_threshold_and_cap()
    }

    /// [`IndexParams::validate`] for a MinHash index.
    pub(super) fn validate_minhash(&self) -> Result<()> {
        self.sketch.validate()?;
        // Parameters this build cannot write are refused before anything is created.
        self.check_format_version(MANIFEST_VERSION)?;
        bbit::validate_bits(self.bits)?;
        check_band_slots(self.band_slots, self.sketch.num_perm)?;
        let (bands, rows) = (self.lsh.bands, self.lsh.rows);
        if self.band_slots < self.sketch.num_perm && bands.saturating_mul(rows) > self.band_slots {
            // (LshParams would say "signatures have only band_slots", which they do not.)
            return Err(Error::invalid(
                "bands/rows",
                format!(
                    "{bands} bands × {rows} rows = {} slots, but the bands cover only the first \
                     {} of the signature's {} slots (band_slots)",
                    bands.saturating_mul(rows),
                    self.band_slots,
                    self.sketch.num_perm
                ),
            ));
        }
        LshParams::new(bands, rows, self.band_slots)?;
        self.check_threshold_and_cap()?;
        if self.store_sets && !matches!(self.sketch.scheme, Scheme::Oph | Scheme::KPerm) {
            return Err(Error::invalid(
                "store_sets",
                format!(
                    "needs signatures mhdb computes from text; scheme {} signatures come from elsewhere",
                    self.sketch.scheme
                ),
            ));
        }
        Ok(())
    }

    /// The checks both kinds share: the threshold in (0, 1], a cap of at least 1.
    fn check_threshold_and_cap(&self) -> Result<()> {
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(Error::invalid(
                "threshold",
                format!("must be in (0, 1], got {}", self.threshold),
            ));
        }
        if self.bucket_cap == Some(0) {
            return Err(Error::invalid("bucket_cap", "must be at least 1"));
        }
        Ok(())
    }

    /// [`IndexParams::validate`] for a SimHash index.
    pub(super) fn validate_simhash(&self, sim: &SimParams) -> Result<()> {
        sim.validate()?;
        self.check_format_version(MANIFEST_VERSION)?;
        let expect = |name: &'static str, ok: bool, what: String| {
            if ok {
                Ok(())
            } else {
                Err(Error::invalid(name, format!("a SimHash index has {what}")))
            }
        };
        expect(
            "num_perm",
            self.sketch.num_perm == SIMHASH_SLOTS,
            format!("{SIMHASH_SLOTS} one-bit slots"),
        )?;
        expect("bits", self.bits == 1, "one-bit slots".into())?;
        expect(
            "shingle",
            !self.sketch.shingle.kind.is_tokens(),
            "text shingles (it weights a text's shingles; token lists are for MinHash indexes)"
                .into(),
        )?;
        expect(
            "bands",
            self.lsh.bands == sim.block_count() && self.lsh.rows == 0,
            format!("{} blocks (max_hamming + 1) and no rows", sim.block_count()),
        )?;
        expect(
            "store_sets",
            !self.store_sets,
            "no stored shingle sets (it compares fingerprints; sets are for MinHash indexes)"
                .into(),
        )?;
        self.check_threshold_and_cap()?;
        Ok(())
    }

    /// Bytes of one packed signature.
    pub fn sig_bytes(&self) -> usize {
        bbit::packed_len(self.sketch.num_perm, self.bits)
    }

    /// The band-key computer for these parameters.
    pub fn banding(&self) -> Result<Banding> {
        Banding::new(&self.sketch, self.lsh)
    }

    /// How segments written for this index cap their buckets, and whether they carry band
    /// filters (the manifest's feature BAND_FILTERS, passed as `band_filters`).
    pub(crate) fn segment_options(&self, band_filters: bool) -> SegmentOptions {
        SegmentOptions {
            bucket_cap: self.bucket_cap,
            band_filters,
        }
    }
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
