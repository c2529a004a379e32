//! The parameters fixed when a database is created, stored in every manifest and checked on
//! every open: a signature made with other parameters is meaningless to the index.

use std::path::Path;

use crate::sketch::{
    Banding, KeyFingerprint, LshParams, MinHasher, SPEC_VERSION, Scheme, ShingleConfig,
    ShingleKind, SketchParams, TuneOptions, bbit, tune,
};
use crate::storage::codec::{Decoder, Encoder};
use crate::storage::manifest::StoredParams;
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
}

impl Default for IndexParams {
    fn default() -> Self {
        IndexParams::for_threshold(SketchParams::default(), 32, 0.8).unwrap_or_else(|_| {
            IndexParams {
                sketch: SketchParams::default(),
                bits: 32,
                band_slots: SketchParams::default().num_perm,
                lsh: LshParams { bands: 18, rows: 7 },
                threshold: 0.8,
                bucket_cap: Some(DEFAULT_BUCKET_CAP),
                key_fingerprint: KeyFingerprint::UNKEYED,
            }
        })
    }
}

/// Default bucket cap: far above any real near-duplicate cluster at sane thresholds, low enough
/// that one boilerplate bucket cannot turn every query into a scan.
pub const DEFAULT_BUCKET_CAP: u32 = 10_000;

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

impl IndexParams {
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
        };
        params.validate()?;
        Ok(params)
    }

    /// Checks every field; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        self.sketch.validate()?;
        bbit::validate_bits(self.bits)?;
        check_band_slots(self.band_slots, self.sketch.num_perm)?;
        LshParams::new(self.lsh.bands, self.lsh.rows, self.band_slots)?;
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

    /// Bytes of one packed signature.
    pub fn sig_bytes(&self) -> usize {
        bbit::packed_len(self.sketch.num_perm, self.bits)
    }

    /// The signer for these parameters.
    pub fn hasher(&self) -> Result<MinHasher> {
        MinHasher::new(self.sketch)
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
        let (kind, width) = match s.shingle.kind {
            ShingleKind::Char(n) => (1u8, n),
            ShingleKind::Word(n) => (2u8, n),
        };
        let flags = u8::from(s.shingle.nfkc)
            | (u8::from(s.shingle.lowercase) << 1)
            | (u8::from(s.shingle.collapse_whitespace) << 2);
        e.u32(SPEC_VERSION);
        if version >= 2 {
            e.u8(INDEX_KIND_MINHASH);
        }
        e.u8(s.scheme.code()).u32(s.num_perm as u32);
        if version >= 2 {
            e.u32(self.band_slots as u32);
        }
        e.u64(s.seed)
            .u8(kind)
            .u8(width as u8)
            .u8(flags)
            .u8(self.bits as u8)
            .u32(self.lsh.bands as u32)
            .u32(self.lsh.rows as u32)
            .u64(self.threshold.to_bits())
            .u32(self.bucket_cap.unwrap_or(0));
        if version >= 2 {
            // No stored shingle sets; the key's fingerprint (zero: unkeyed); no SimHash
            // distance or weighting.
            e.u8(0).bytes(&self.key_fingerprint.0).u8(0).u8(0);
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
        let unsupported = |feature: String| Error::Unsupported {
            path: path.to_path_buf(),
            feature,
        };
        if version >= 2 {
            let kind = d.u8("index kind")?;
            if kind != INDEX_KIND_MINHASH {
                return Err(unsupported(format!("index kind {kind}")));
            }
        }
        let scheme_code = d.u8("scheme")?;
        let scheme = Scheme::from_code(scheme_code).ok_or_else(|| {
            d.corruption(format!(
                "unknown scheme code {scheme_code} (written by a newer mhdb?)"
            ))
        })?;
        let num_perm = d.u32("num_perm")? as usize;
        // Version 1 always banded over every slot.
        let band_slots = if version >= 2 {
            d.u32("band_slots")? as usize
        } else {
            num_perm
        };
        let seed = d.u64("seed")?;
        let kind = d.u8("shingle kind")?;
        let width = d.u8("shingle width")? as usize;
        let flags = d.u8("shingle flags")?;
        let kind = match kind {
            1 => ShingleKind::Char(width),
            2 => ShingleKind::Word(width),
            other => return Err(d.corruption(format!("unknown shingle kind {other}"))),
        };
        let bits = u32::from(d.u8("bits")?);
        let bands = d.u32("bands")? as usize;
        let rows = d.u32("rows")? as usize;
        let threshold = f64::from_bits(d.u64("threshold")?);
        let cap = d.u32("bucket cap")?;
        let mut key_fingerprint = KeyFingerprint::UNKEYED;
        if version >= 2 {
            if d.u8("store_sets")? != 0 {
                return Err(unsupported("stored shingle sets".into()));
            }
            let fingerprint = d.take(32, "key fingerprint")?;
            key_fingerprint = KeyFingerprint(
                fingerprint
                    .try_into()
                    .map_err(|_| d.corruption("key fingerprint is not 32 bytes"))?,
            );
            if d.u8("max_hamming")? != 0 || d.u8("weighting")? != 0 {
                return Err(d.corruption("SimHash fields set on a MinHash index"));
            }
        }
        let params = IndexParams {
            sketch: SketchParams {
                scheme,
                num_perm,
                seed,
                shingle: ShingleConfig {
                    kind,
                    nfkc: flags & 1 != 0,
                    lowercase: flags & 2 != 0,
                    collapse_whitespace: flags & 4 != 0,
                },
            },
            bits,
            band_slots,
            lsh: LshParams { bands, rows },
            threshold,
            bucket_cap: (cap != 0).then_some(cap),
            key_fingerprint,
        };
        params
            .validate()
            .map_err(|e| d.corruption(format!("stored parameters are invalid: {e}")))?;
        Ok(params)
    }
}

impl IndexParams {
    /// Errors with [`Error::ParameterMismatch`] if `other`'s signatures are incompatible.
    pub fn check_compatible(&self, other: &SketchParams) -> Result<()> {
        let s = &self.sketch;
        let mismatch = |name: &'static str, stored: String, requested: String| {
            Err(Error::ParameterMismatch {
                name,
                stored,
                requested,
            })
        };
        if s.scheme != other.scheme {
            return mismatch("scheme", s.scheme.to_string(), other.scheme.to_string());
        }
        if s.num_perm != other.num_perm {
            return mismatch(
                "num_perm",
                s.num_perm.to_string(),
                other.num_perm.to_string(),
            );
        }
        if s.seed != other.seed {
            return mismatch("seed", s.seed.to_string(), other.seed.to_string());
        }
        if s.shingle != other.shingle {
            return mismatch(
                "shingle",
                format!("{:?}", s.shingle),
                format!("{:?}", other.shingle),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_roundtrip() {
        let p = IndexParams {
            bucket_cap: None,
            ..IndexParams::default()
        };
        for version in [1, 2] {
            let mut e = Encoder::default();
            p.encode(&mut e, version);
            let path = Path::new("x");
            let mut d = Decoder::new(&e.buf, path);
            assert_eq!(IndexParams::decode(&mut d, path, version).unwrap(), p);
            d.expect_end().unwrap();
        }
    }

    /// Bands over fewer slots than the signature round-trip; a stored k_b above k_v, or
    /// bands × rows above k_b, is corruption.
    #[test]
    fn band_slots_roundtrip_and_bad_values_are_corruption() {
        let sketch = SketchParams {
            num_perm: 512,
            ..SketchParams::default()
        };
        let p = IndexParams::with_band_slots(sketch, 4, 128, 0.8).unwrap();
        assert_eq!(p.band_slots, 128);
        assert_eq!(
            p.lsh,
            tune(0.8, 128, &TuneOptions::default()).unwrap().params
        );
        let path = Path::new("x");
        let encoded = |p: &IndexParams| {
            let mut e = Encoder::default();
            p.encode(&mut e, 2);
            e.buf
        };
        let bytes = encoded(&p);
        let mut d = Decoder::new(&bytes, path);
        assert_eq!(IndexParams::decode(&mut d, path, 2).unwrap(), p);
        for band_slots in [513, 0, 64] {
            let bad = IndexParams { band_slots, ..p };
            assert!(bad.validate().is_err(), "{bad:?}");
            let bytes = encoded(&bad);
            let mut d = Decoder::new(&bytes, path);
            let err = IndexParams::decode(&mut d, path, 2).unwrap_err();
            assert!(matches!(err, Error::Corruption { .. }), "{err}");
        }
        for band_slots in [0, 513] {
            let err = IndexParams::with_band_slots(sketch, 8, band_slots, 0.8).unwrap_err();
            assert!(err.to_string().contains("band_slots"), "{err}");
        }
        // k-permutation bands over a prefix too.
        let kperm = SketchParams {
            scheme: Scheme::KPerm,
            num_perm: 256,
            ..SketchParams::default()
        };
        let p = IndexParams::with_band_slots(kperm, 8, 64, 0.5).unwrap();
        assert!(p.lsh.bands * p.lsh.rows <= 64);
    }

    #[test]
    fn default_is_tuned_for_recall() {
        let p = IndexParams::default();
        assert!(p.lsh.probability(0.8) >= 0.95);
        assert_eq!(p.sig_bytes(), 512);
    }
}
