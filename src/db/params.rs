//! The parameters fixed when a database is created, stored in every manifest and checked on
//! every open: a signature made with other parameters is meaningless to the index.

use std::path::Path;

use crate::sketch::unicode_words::{UNICODE_VERSION, unicode_version_code};
use crate::sketch::{
    Banding, KeyFingerprint, LshParams, SPEC_VERSION, Scheme, ShingleConfig, ShingleKind,
    SimParams, SimWeighting, SketchParams, TuneOptions, WordFolding, bbit, cosine_from_hamming,
    tune,
};
use crate::storage::codec::{Decoder, Encoder};
use crate::storage::manifest::v3::{
    KIND_MINHASH, KIND_SIMHASH, METRIC_COSINE, METRIC_JACCARD, PARAMS_AT, SHINGLE_CHAR,
    SHINGLE_COLLAPSE_WHITESPACE, SHINGLE_FOLD_DIGITS, SHINGLE_FOLD_PUNCTUATION, SHINGLE_LOWERCASE,
    SHINGLE_NFKC, SHINGLE_UNICODE_WORDS, SHINGLE_WORD,
};
use crate::storage::manifest::{BandingV3, MANIFEST_V3, MANIFEST_VERSION, ParamsV3, StoredParams};
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
}

impl IndexKind {
    /// The name used on the command line and in `stats`: `minhash` or `simhash`.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::MinHash => "minhash",
            IndexKind::SimHash { .. } => "simhash",
        }
    }
}

impl std::fmt::Display for IndexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexKind::MinHash => f.write_str(self.name()),
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

/// The manifest's index kind (format version 2) of a MinHash-LSH index.
const INDEX_KIND_MINHASH: u8 = 1;

/// The manifest's index kind of a SimHash-pigeonhole index.
const INDEX_KIND_SIMHASH: u8 = 2;

/// The manifest's scheme code of a SimHash index (it has no MinHash scheme).
const SIMHASH_SCHEME_CODE: u8 = 0;

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
        self.lsh = tune(self.threshold, self.band_slots, &options)?.params;
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

    /// How segments written for this index cap their buckets.
    pub(crate) fn segment_options(&self) -> SegmentOptions {
        SegmentOptions {
            bucket_cap: self.bucket_cap,
        }
    }
}

impl StoredParams for IndexParams {
    fn encode(&self, e: &mut Encoder, version: u32) {
        let s = &self.sketch;
        // Only parameters a version-2 manifest can hold get here: `validate` refuses others
        // at creation, while this build writes version 2.
        debug_assert!(self.check_format_version(version).is_ok());
        let codes = shingle_codes(&s.shingle);
        e.u32(SPEC_VERSION);
        let sim = self.sim_params();
        // Format version 1 has no kind field: only MinHash indexes are ever written in it.
        debug_assert!(version >= 2 || sim.is_none());
        if version >= 2 {
            e.u8(match sim {
                None => INDEX_KIND_MINHASH,
                Some(_) => INDEX_KIND_SIMHASH,
            });
        }
        let scheme_code = match sim {
            None => s.scheme.code(),
            Some(_) => SIMHASH_SCHEME_CODE,
        };
        e.u8(scheme_code).u32(s.num_perm as u32);
        if version >= 2 {
            e.u32(self.band_slots as u32);
        }
        e.u64(s.seed)
            .u8(codes.kind)
            .u8(codes.width)
            .u8(codes.flags as u8)
            .u8(self.bits as u8)
            .u32(self.lsh.bands as u32)
            .u32(self.lsh.rows as u32)
            .u64(self.threshold.to_bits())
            .u32(self.bucket_cap.unwrap_or(0));
        if version >= 2 {
            // Stored shingle sets; the key's fingerprint (zero: unkeyed); the SimHash
            // distance and weighting (zero for MinHash).
            let (max_hamming, weighting) =
                sim.map_or((0, 0), |p| (p.max_hamming as u8, p.weighting.code()));
            e.u8(u8::from(self.store_sets))
                .bytes(&self.key_fingerprint.0)
                .u8(max_hamming)
                .u8(weighting);
        }
    }

    fn decode(d: &mut Decoder<'_>, path: &Path, version: u32) -> Result<Self> {
        let spec = d.u32("spec version")?;
        if spec != SPEC_VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: spec,
                supported: SPEC_VERSION,
            });
        }
        // Version 1 knew MinHash only.
        let simhash = version >= 2 && decode_is_simhash(d, path)?;
        let scheme = decode_scheme(d, simhash)?;
        let num_perm = d.u32("num_perm")? as usize;
        // Version 1 always banded over every slot.
        let band_slots = if version >= 2 {
            d.u32("band_slots")? as usize
        } else {
            num_perm
        };
        let seed = d.u64("seed")?;
        let shingle = decode_shingle(d, path)?;
        let bits = u32::from(d.u8("bits")?);
        let bands = d.u32("bands")? as usize;
        let rows = d.u32("rows")? as usize;
        let threshold = f64::from_bits(d.u64("threshold")?);
        let cap = d.u32("bucket cap")?;
        let extras = if version >= 2 {
            decode_v2_extras(d, path, simhash)?
        } else {
            V2Extras::default()
        };
        let params = IndexParams {
            sketch: SketchParams {
                scheme,
                num_perm,
                seed,
                shingle,
            },
            bits,
            band_slots,
            lsh: LshParams { bands, rows },
            threshold,
            bucket_cap: (cap != 0).then_some(cap),
            key_fingerprint: extras.key_fingerprint,
            store_sets: extras.store_sets,
            kind: extras.kind,
        };
        params
            .validate()
            .map_err(|e| d.corruption(format!("stored parameters are invalid: {e}")))?;
        Ok(params)
    }

    fn store_sets(&self) -> bool {
        self.store_sets
    }

    fn to_v3(&self) -> ParamsV3 {
        let s = &self.sketch;
        let sim = self.sim_params();
        let codes = shingle_codes(&s.shingle);
        let (max_hamming, weighting) =
            sim.map_or((0, 0), |p| (p.max_hamming as u8, p.weighting.code()));
        ParamsV3 {
            spec_version: SPEC_VERSION,
            kind: if sim.is_some() {
                KIND_SIMHASH
            } else {
                KIND_MINHASH
            },
            scheme: if sim.is_some() {
                SIMHASH_SCHEME_CODE
            } else {
                s.scheme.code()
            },
            metric: if sim.is_some() {
                METRIC_COSINE
            } else {
                METRIC_JACCARD
            },
            bits: self.bits as u8,
            num_perm: s.num_perm as u32,
            band_slots: self.band_slots as u32,
            seed: s.seed,
            shingle_kind: codes.kind,
            shingle_width: codes.width,
            shingle_flags: codes.flags,
            unicode_version: codes.unicode_version,
            threshold: self.threshold,
            bucket_cap: self.bucket_cap.unwrap_or(0),
            max_hamming,
            weighting,
            keep_type: 0,
            key_fingerprint: self.key_fingerprint.0,
            bandings: vec![BandingV3::covering_all(
                self.lsh.bands as u32,
                self.lsh.rows as u32,
            )],
            keep_field: String::new(),
        }
    }

    fn from_v3(b: &ParamsV3, store_sets: bool, path: &Path) -> Result<Self> {
        if b.spec_version != SPEC_VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: b.spec_version,
                supported: SPEC_VERSION,
            });
        }
        let bad = |detail: String| Error::corruption(path, PARAMS_AT, detail);
        let simhash = b.kind == KIND_SIMHASH;
        let scheme = scheme_from_code(b.scheme, simhash).map_err(bad)?;
        if b.shingle_kind == SHINGLE_UNICODE_WORDS && b.unicode_version != unicode_version_code() {
            return Err(unsupported(
                path,
                format!(
                    "Unicode word shingles segmented at Unicode {} (this build segments at {})",
                    version_name(b.unicode_version),
                    version_name(unicode_version_code())
                ),
            ));
        }
        let shingle = shingle_from_codes(b.shingle_kind, b.shingle_width, b.shingle_flags)
            .ok_or_else(|| bad(format!("unknown shingle kind {}", b.shingle_kind)))?;
        // (The format refuses several bandings and partitions before this.)
        let [banding] = b.bandings.as_slice() else {
            return Err(bad(format!("{} bandings", b.bandings.len())));
        };
        let params = IndexParams {
            sketch: SketchParams {
                scheme,
                num_perm: b.num_perm as usize,
                seed: b.seed,
                shingle,
            },
            bits: u32::from(b.bits),
            band_slots: b.band_slots as usize,
            lsh: LshParams {
                bands: banding.bands as usize,
                rows: banding.rows as usize,
            },
            threshold: b.threshold,
            bucket_cap: (b.bucket_cap != 0).then_some(b.bucket_cap),
            key_fingerprint: KeyFingerprint(b.key_fingerprint),
            store_sets,
            kind: index_kind(simhash, u32::from(b.max_hamming), b.weighting).map_err(bad)?,
        };
        params
            .validate()
            .map_err(|e| bad(format!("stored parameters are invalid: {e}")))?;
        Ok(params)
    }
}

/// The shingle fields a manifest stores (versions 1 to 3; versions 1 and 2 have neither
/// Unicode words nor their folds, and keep the low 8 flag bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ShingleCodes {
    kind: u8,
    width: u8,
    flags: u16,
    /// [`unicode_version_code`] for Unicode words; 0 otherwise.
    unicode_version: u32,
}

/// The shingle kind code, width and flag bits a manifest stores.
fn shingle_codes(c: &ShingleConfig) -> ShingleCodes {
    let flag = |on: bool, bit: u16| if on { bit } else { 0 };
    let mut flags = flag(c.nfkc, SHINGLE_NFKC)
        | flag(c.lowercase, SHINGLE_LOWERCASE)
        | flag(c.collapse_whitespace, SHINGLE_COLLAPSE_WHITESPACE);
    let (kind, width, unicode_version) = match c.kind {
        ShingleKind::Char(n) => (SHINGLE_CHAR, n, 0),
        ShingleKind::Word(n) => (SHINGLE_WORD, n, 0),
        ShingleKind::UnicodeWord(n, folding) => {
            flags |= flag(folding.punctuation, SHINGLE_FOLD_PUNCTUATION)
                | flag(folding.digits, SHINGLE_FOLD_DIGITS);
            (SHINGLE_UNICODE_WORDS, n, unicode_version_code())
        }
    };
    ShingleCodes {
        kind,
        width: width as u8,
        flags,
        unicode_version,
    }
}

/// The shingle configuration of stored codes (whose flags the format checked); `None` for a
/// kind this build does not know.
fn shingle_from_codes(kind: u8, width: u8, flags: u16) -> Option<ShingleConfig> {
    let width = usize::from(width);
    let kind = match kind {
        SHINGLE_CHAR => ShingleKind::Char(width),
        SHINGLE_WORD => ShingleKind::Word(width),
        SHINGLE_UNICODE_WORDS => ShingleKind::UnicodeWord(
            width,
            WordFolding {
                punctuation: flags & SHINGLE_FOLD_PUNCTUATION != 0,
                digits: flags & SHINGLE_FOLD_DIGITS != 0,
            },
        ),
        _ => return None,
    };
    Some(ShingleConfig {
        kind,
        nfkc: flags & SHINGLE_NFKC != 0,
        lowercase: flags & SHINGLE_LOWERCASE != 0,
        collapse_whitespace: flags & SHINGLE_COLLAPSE_WHITESPACE != 0,
    })
}

/// `major.minor.update` of a stored Unicode version.
fn version_name(code: u32) -> String {
    format!("{}.{}.{}", code >> 16, (code >> 8) & 0xFF, code & 0xFF)
}

impl IndexParams {
    /// Errors unless a manifest of format `version` can store these parameters: Unicode word
    /// shingles have a code only from version 3 on.
    pub fn check_format_version(&self, version: u32) -> Result<()> {
        let shingle = self.sketch.shingle.kind;
        if matches!(shingle, ShingleKind::UnicodeWord(..)) && version < MANIFEST_V3 {
            let (major, minor, update) = UNICODE_VERSION;
            return Err(Error::invalid(
                "shingle",
                format!(
                    "{shingle} (Unicode {major}.{minor}.{update} word shingles) needs format \
                     version 3; format version {version} has no code for it"
                ),
            ));
        }
        Ok(())
    }
}

/// A feature this version of mhdb does not know, stored in `path`.
fn unsupported(path: &Path, feature: String) -> Error {
    Error::Unsupported {
        path: path.to_path_buf(),
        feature,
    }
}

/// The stored index kind (version 2): whether it is a SimHash index.
fn decode_is_simhash(d: &mut Decoder<'_>, path: &Path) -> Result<bool> {
    match d.u8("index kind")? {
        INDEX_KIND_MINHASH => Ok(false),
        INDEX_KIND_SIMHASH => Ok(true),
        kind => Err(unsupported(path, format!("index kind {kind}"))),
    }
}

/// The stored MinHash scheme (a SimHash index stores a fixed code in its place).
fn decode_scheme(d: &mut Decoder<'_>, simhash: bool) -> Result<Scheme> {
    let scheme_code = d.u8("scheme")?;
    scheme_from_code(scheme_code, simhash).map_err(|detail| d.corruption(detail))
}

/// The scheme of a stored code, or what is wrong with it.
fn scheme_from_code(code: u8, simhash: bool) -> std::result::Result<Scheme, String> {
    if simhash {
        if code != SIMHASH_SCHEME_CODE {
            return Err(format!("a SimHash index with MinHash scheme code {code}"));
        }
        return Ok(SketchParams::default().scheme);
    }
    Scheme::from_code(code)
        .ok_or_else(|| format!("unknown scheme code {code} (written by a newer mhdb?)"))
}

/// The normalization flag bits versions 1 and 2 define (NFKC, lowercase, collapse whitespace).
const SHINGLE_FLAGS_V2: u8 = 0b111;

/// The stored shingle configuration: kind, width and normalization flags. No writer of
/// versions 1 and 2 sets another flag bit, so one set is damage (a reader that ignored it would
/// sign text differently from the writer the bit claims).
fn decode_shingle(d: &mut Decoder<'_>, path: &Path) -> Result<ShingleConfig> {
    let kind = d.u8("shingle kind")?;
    let width = d.u8("shingle width")?;
    let flags_at = d.offset();
    let flags = d.u8("shingle flags")?;
    if flags & !SHINGLE_FLAGS_V2 != 0 {
        return Err(Error::corruption(
            path,
            flags_at,
            format!("unknown shingle_flags bits {flags:#04x} (versions 1 and 2 define 0x07)"),
        ));
    }
    // Unicode words have a code from version 3 on only.
    shingle_from_codes(kind, width, u16::from(flags))
        .filter(|_| kind != SHINGLE_UNICODE_WORDS)
        .ok_or_else(|| d.corruption(format!("unknown shingle kind {kind}")))
}

/// The parameters version 2 added (version 1: an unkeyed MinHash index without sets).
struct V2Extras {
    store_sets: bool,
    key_fingerprint: KeyFingerprint,
    kind: IndexKind,
}

impl Default for V2Extras {
    fn default() -> Self {
        V2Extras {
            store_sets: false,
            key_fingerprint: KeyFingerprint::UNKEYED,
            kind: IndexKind::MinHash,
        }
    }
}

/// The stored sets flag, key fingerprint and SimHash fields of version 2.
fn decode_v2_extras(d: &mut Decoder<'_>, path: &Path, simhash: bool) -> Result<V2Extras> {
    let store_sets = match d.u8("store_sets")? {
        0 => false,
        1 => true,
        other => return Err(unsupported(path, format!("store_sets value {other}"))),
    };
    let fingerprint = d.take(32, "key fingerprint")?;
    let key_fingerprint = KeyFingerprint(
        fingerprint
            .try_into()
            .map_err(|_| d.corruption("key fingerprint is not 32 bytes"))?,
    );
    let max_hamming = u32::from(d.u8("max_hamming")?);
    let weighting = d.u8("weighting")?;
    let kind = index_kind(simhash, max_hamming, weighting).map_err(|e| d.corruption(e))?;
    Ok(V2Extras {
        store_sets,
        key_fingerprint,
        kind,
    })
}

/// The index kind of the stored SimHash fields (zero for MinHash), or what is wrong with them.
fn index_kind(
    simhash: bool,
    max_hamming: u32,
    weighting: u8,
) -> std::result::Result<IndexKind, String> {
    if simhash {
        let weighting = SimWeighting::from_code(weighting)
            .ok_or_else(|| format!("unknown SimHash weighting code {weighting}"))?;
        return Ok(IndexKind::SimHash {
            max_hamming,
            weighting,
        });
    }
    if max_hamming != 0 || weighting != 0 {
        return Err("SimHash fields set on a MinHash index".into());
    }
    Ok(IndexKind::MinHash)
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
