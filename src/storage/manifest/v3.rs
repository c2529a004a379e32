//! What a version-3 manifest adds (`format/manifest.md`, "Version 3"): the index-wide feature
//! bits and the parameters block with its bandings and keep field, placed and checked as the
//! format says: every reserved code, flag and feature is refused as [`Error::Unsupported`]
//! (a newer build's index is never misread), and a value the format rules out is corruption.
//! The checks run after the manifest's CRC matched, so a damaged bit reads as corruption.

use std::path::Path;

use crate::storage::codec::{Decoder, Encoder};
use crate::{Error, Result};

/// Offset of the features field in a version-3 manifest.
pub(crate) const FEATURES_AT: u64 = 36;
/// Offset of the parameters block (`spec_version` first) in a version-3 manifest.
pub(crate) const PARAMS_AT: u64 = 44;

/// Index-wide feature bits of a version-3 manifest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Features(pub u64);

impl Features {
    /// No feature (and what versions 1 and 2 decode to).
    pub const NONE: Features = Features(0);
    /// Every segment has SHINGLES and every insert the SET field (version 2's `store_sets`).
    pub const STORE_SETS: Features = Features(1);
    /// The stored sets of this keyed index use version 2's derivation (only with STORE_SETS
    /// and a key fingerprint; set by `upgrade`).
    pub const SETS_KEYED_V2: Features = Features(1 << 1);
    /// Every segment has the EXACT_HASH column, and an insert may carry its EXACT_HASH field
    /// (a document inserted as text or tokens has one; one inserted by signature, none).
    pub const EXACT_HASH: Features = Features(1 << 2);
    /// Every segment has the KEEP column (its type and field in the parameters block), and
    /// an insert may carry its KEEP field.
    pub const KEEP: Features = Features(1 << 3);
    /// Every segment has the SET_SIZE column, and an insert may carry its SET_SIZE field
    /// (the number of distinct shingle hashes of a document inserted as text or tokens).
    pub const SET_SIZE: Features = Features(1 << 4);
    /// Segments may carry BAND_FILTER sections (every segment written with the feature on
    /// does; one written before is read without).
    pub const BAND_FILTERS: Features = Features(1 << 5);
    /// This database is, or descends from, an export that passed over damage the source
    /// reported (`export --allow-damaged`): what the damage held may be missing. It changes
    /// no reading; every later commit keeps it, and an export of it passes it on.
    pub const COPIED_PAST_DAMAGE: Features = Features(1 << 6);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Features) -> bool {
        self.0 & other.0 == other.0
    }

    /// These bits with `other`'s set (`on`) or cleared.
    pub fn with(self, other: Features, on: bool) -> Features {
        if on {
            Features(self.0 | other.0)
        } else {
            Features(self.0 & !other.0)
        }
    }
}

/// Index kind codes.
pub const KIND_MINHASH: u8 = 1;
pub const KIND_SIMHASH: u8 = 2;
/// Metric codes: Jaccard (kind 1), cosine (kind 2), containment (kind 1; reserved).
pub const METRIC_JACCARD: u8 = 1;
pub const METRIC_COSINE: u8 = 2;
pub const METRIC_CONTAINMENT: u8 = 3;
/// Shingle kind codes: characters, words split at white space, Unicode words (UAX #29 at the
/// block's `unicode_version`), token lists (documents given as their tokens).
pub const SHINGLE_CHAR: u8 = 1;
pub const SHINGLE_WORD: u8 = 2;
pub const SHINGLE_UNICODE_WORDS: u8 = 3;
pub const SHINGLE_TOKEN_LISTS: u8 = 4;
/// Shingle flag bits: NFKC, lowercase, collapse white space; fold punctuation and fold digits
/// (Unicode words only).
pub const SHINGLE_NFKC: u16 = 1;
pub const SHINGLE_LOWERCASE: u16 = 1 << 1;
pub const SHINGLE_COLLAPSE_WHITESPACE: u16 = 1 << 2;
pub const SHINGLE_FOLD_PUNCTUATION: u16 = 1 << 3;
pub const SHINGLE_FOLD_DIGITS: u16 = 1 << 4;

/// One banding: the documents whose set size is in `size_lo ..= size_hi` get its band keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BandingV3 {
    /// Bands (kind 2: `max_hamming + 1`).
    pub bands: u32,
    /// Rows per band (kind 2: 0).
    pub rows: u32,
    /// Smallest set size of the documents it covers.
    pub size_lo: u64,
    /// Largest set size of the documents it covers.
    pub size_hi: u64,
}

impl BandingV3 {
    /// The one banding of an index without set-size partitions: every document.
    pub fn covering_all(bands: u32, rows: u32) -> BandingV3 {
        BandingV3 {
            bands,
            rows,
            size_lo: 0,
            size_hi: u64::MAX,
        }
    }
}

/// The parameters block of a version-3 manifest, field by field as stored (bytes 44 .. P),
/// after the format's own checks. What the values mean is the parameters owner's
/// ([`super::StoredParams`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamsV3 {
    /// The hash spec's version (`format/hashing.md`).
    pub spec_version: u32,
    /// [`KIND_MINHASH`] or [`KIND_SIMHASH`].
    pub kind: u8,
    /// The signature scheme's code (0 for kind 2).
    pub scheme: u8,
    /// [`METRIC_JACCARD`] (kind 1) or [`METRIC_COSINE`] (kind 2).
    pub metric: u8,
    /// Bits per slot of a stored signature.
    pub bits: u8,
    /// k_v: the slots of a signature.
    pub num_perm: u32,
    /// k_b: the slots the bands cover.
    pub band_slots: u32,
    /// The hash seed.
    pub seed: u64,
    /// [`SHINGLE_CHAR`], [`SHINGLE_WORD`] or [`SHINGLE_UNICODE_WORDS`].
    pub shingle_kind: u8,
    /// n: the shingle width.
    pub shingle_width: u8,
    /// [`SHINGLE_NFKC`], [`SHINGLE_LOWERCASE`], [`SHINGLE_COLLAPSE_WHITESPACE`];
    /// [`SHINGLE_FOLD_PUNCTUATION`], [`SHINGLE_FOLD_DIGITS`] with Unicode words.
    pub shingle_flags: u16,
    /// `major << 16 | minor << 8 | update` of the segmentation tables (shingle kind 3); 0.
    pub unicode_version: u32,
    /// The default query threshold.
    pub threshold: f64,
    /// 0 = no cap.
    pub bucket_cap: u32,
    /// Kind 2: the largest Hamming distance of a match (0 for kind 1).
    pub max_hamming: u8,
    /// Kind 2: the feature weighting's code (0 for kind 1).
    pub weighting: u8,
    /// 0 none; 1 i64, 2 f64, 3 string (only with feature KEEP).
    pub keep_type: u8,
    /// The key's fingerprint; all zero for an unkeyed index.
    pub key_fingerprint: [u8; 32],
    /// At least one; more is reserved.
    pub bandings: Vec<BandingV3>,
    /// UTF-8 name of the captured field (empty without KEEP).
    pub keep_field: String,
}

impl ParamsV3 {
    /// Appends the block.
    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.u32(self.spec_version)
            .u8(self.kind)
            .u8(self.scheme)
            .u8(self.metric)
            .u8(self.bits)
            .u32(self.num_perm)
            .u32(self.band_slots)
            .u64(self.seed)
            .u8(self.shingle_kind)
            .u8(self.shingle_width)
            .bytes(&self.shingle_flags.to_le_bytes())
            .u32(self.unicode_version)
            .u64(self.threshold.to_bits())
            .u32(self.bucket_cap)
            .u8(self.max_hamming)
            .u8(self.weighting)
            .u8(self.keep_type)
            .u8(self.keep_field.len() as u8)
            .bytes(&self.key_fingerprint)
            .bytes(&(self.bandings.len() as u16).to_le_bytes());
        for b in &self.bandings {
            e.u32(b.bands).u32(b.rows).u64(b.size_lo).u64(b.size_hi);
        }
        e.bytes(self.keep_field.as_bytes());
    }

    /// Reads the block and makes the format's checks of its codes, given the manifest's
    /// `features` (already checked by [`check_features`]).
    pub(crate) fn decode(d: &mut Decoder<'_>, path: &Path, features: Features) -> Result<Self> {
        let spec_version = d.u32("spec version")?;
        let kind = d.u8("index kind")?;
        let scheme = d.u8("scheme")?;
        let metric_at = d.offset();
        let metric = d.u8("metric")?;
        check_kind_and_metric(kind, metric, path, metric_at)?;
        if metric == METRIC_CONTAINMENT && !features.contains(Features::SET_SIZE) {
            return Err(corrupt(
                path,
                metric_at,
                "the containment metric without feature SET_SIZE",
            ));
        }
        let bits = d.u8("bits")?;
        let num_perm = d.u32("num_perm")?;
        let band_slots = d.u32("band_slots")?;
        let seed = d.u64("seed")?;
        let shingle_kind = d.u8("shingle kind")?;
        let shingle_width = d.u8("shingle width")?;
        let flags_at = d.offset();
        let shingle_flags = u16_field(d, "shingle flags")?;
        check_shingles(shingle_kind, shingle_flags, path, flags_at)?;
        let unicode_at = d.offset();
        let unicode_version = d.u32("unicode version")?;
        if (unicode_version != 0) != (shingle_kind == SHINGLE_UNICODE_WORDS) {
            return Err(corrupt(
                path,
                unicode_at,
                "a Unicode version without Unicode words, or Unicode words without one",
            ));
        }
        let threshold = f64::from_bits(d.u64("threshold")?);
        let bucket_cap = d.u32("bucket cap")?;
        let max_hamming = d.u8("max_hamming")?;
        let weighting = d.u8("weighting")?;
        let (keep_type, keep_len) = decode_keep(d, path, features)?;
        let key_fingerprint = decode_fingerprint(d)?;
        let bandings = decode_bandings(d, path, metric == METRIC_CONTAINMENT)?;
        let field_at = d.offset();
        let keep_field = std::str::from_utf8(d.take(keep_len, "keep field")?)
            .map_err(|_| corrupt(path, field_at, "the keep field's name is not UTF-8"))?
            .to_string();
        Ok(ParamsV3 {
            spec_version,
            kind,
            scheme,
            metric,
            bits,
            num_perm,
            band_slots,
            seed,
            shingle_kind,
            shingle_width,
            shingle_flags,
            unicode_version,
            threshold,
            bucket_cap,
            max_hamming,
            weighting,
            keep_type,
            key_fingerprint,
            bandings,
            keep_field,
        })
    }
}

fn corrupt(path: &Path, offset: u64, detail: &str) -> Error {
    Error::corruption(path, offset, detail)
}

fn unsupported(path: &Path, feature: impl Into<String>) -> Error {
    Error::Unsupported {
        path: path.to_path_buf(),
        feature: feature.into(),
    }
}

/// A little-endian u16 (the codec has no field that narrow).
fn u16_field(d: &mut Decoder<'_>, what: &str) -> Result<u16> {
    let bytes = d.take(2, what)?;
    Ok(bytes
        .iter()
        .rev()
        .fold(0u16, |acc, &b| (acc << 8) | u16::from(b)))
}

/// The names of the reserved features, refused until the work that fills them lands.
const RESERVED_FEATURES: [(Features, &str); 0] = [];

/// Refuses every feature bit this build does not implement.
pub(crate) fn check_features(features: Features, path: &Path) -> Result<()> {
    let known = Features::STORE_SETS.0
        | Features::SETS_KEYED_V2.0
        | Features::EXACT_HASH.0
        | Features::SET_SIZE.0
        | Features::KEEP.0
        | Features::BAND_FILTERS.0
        | Features::COPIED_PAST_DAMAGE.0;
    let reserved = RESERVED_FEATURES.iter().fold(0, |all, (f, _)| all | f.0);
    let unknown = features.0 & !(known | reserved);
    if unknown != 0 {
        return Err(unsupported(
            path,
            format!("manifest feature bits {unknown:#x}"),
        ));
    }
    match RESERVED_FEATURES
        .iter()
        .find(|(f, _)| features.contains(*f))
    {
        Some((_, name)) => Err(unsupported(path, *name)),
        None => Ok(()),
    }
}

/// SETS_KEYED_V2 describes keyed stored sets: without sets or a key it is damage.
pub(crate) fn check_keyed_sets(
    features: Features,
    key_fingerprint: &[u8; 32],
    path: &Path,
) -> Result<()> {
    let keyed = key_fingerprint.iter().any(|&b| b != 0);
    if features.contains(Features::SETS_KEYED_V2)
        && !(features.contains(Features::STORE_SETS) && keyed)
    {
        return Err(corrupt(
            path,
            FEATURES_AT,
            "feature SETS_KEYED_V2 without stored sets or without a key",
        ));
    }
    Ok(())
}

/// The kind must be known; the metric known, built and fitting the kind.
fn check_kind_and_metric(kind: u8, metric: u8, path: &Path, metric_at: u64) -> Result<()> {
    if kind != KIND_MINHASH && kind != KIND_SIMHASH {
        return Err(unsupported(path, format!("index kind {kind}")));
    }
    let fits = match metric {
        METRIC_JACCARD | METRIC_CONTAINMENT => kind == KIND_MINHASH,
        METRIC_COSINE => kind == KIND_SIMHASH,
        other => return Err(unsupported(path, format!("metric code {other}"))),
    };
    if !fits {
        return Err(Error::corruption(
            path,
            metric_at,
            format!("metric {metric} does not fit index kind {kind}"),
        ));
    }
    Ok(())
}

/// The shingle kind and flags must be built ones; the folds belong to Unicode words.
fn check_shingles(kind: u8, flags: u16, path: &Path, flags_at: u64) -> Result<()> {
    match kind {
        SHINGLE_CHAR | SHINGLE_WORD | SHINGLE_UNICODE_WORDS | SHINGLE_TOKEN_LISTS => {}
        other => return Err(unsupported(path, format!("shingle kind {other}"))),
    }
    // Tokens are taken as given: a token-list index normalizes nothing.
    let normalization = SHINGLE_NFKC | SHINGLE_LOWERCASE | SHINGLE_COLLAPSE_WHITESPACE;
    if kind == SHINGLE_TOKEN_LISTS && flags & normalization != 0 {
        return Err(corrupt(
            path,
            flags_at,
            "a normalization flag with token-list shingles",
        ));
    }
    let folds = SHINGLE_FOLD_PUNCTUATION | SHINGLE_FOLD_DIGITS;
    if flags & folds != 0 && kind != SHINGLE_UNICODE_WORDS {
        return Err(corrupt(
            path,
            flags_at,
            "a fold flag without Unicode word shingles",
        ));
    }
    let known = SHINGLE_NFKC | SHINGLE_LOWERCASE | SHINGLE_COLLAPSE_WHITESPACE | folds;
    if flags & !known != 0 {
        return Err(unsupported(
            path,
            format!("shingle flags {:#x}", flags & !known),
        ));
    }
    Ok(())
}

/// The keep type and the keep field's length: both zero without the KEEP feature; with it, a
/// type of 1 (i64), 2 (f64) or 3 (string) and a field name of at least one byte.
fn decode_keep(d: &mut Decoder<'_>, path: &Path, features: Features) -> Result<(u8, usize)> {
    let keep_at = d.offset();
    let keep_type = d.u8("keep type")?;
    let keep_len = d.u8("keep field length")?;
    let keep = features.contains(Features::KEEP);
    if keep_type != 0 && !keep {
        return Err(corrupt(path, keep_at, "a keep type without feature KEEP"));
    }
    if keep_len != 0 && !keep {
        return Err(corrupt(
            path,
            keep_at + 1,
            "a keep field without feature KEEP",
        ));
    }
    if keep && !(1..=3).contains(&keep_type) {
        return Err(corrupt(
            path,
            keep_at,
            &format!("feature KEEP with keep type {keep_type}"),
        ));
    }
    if keep && keep_len == 0 {
        return Err(corrupt(
            path,
            keep_at + 1,
            "feature KEEP without a keep field",
        ));
    }
    Ok((keep_type, usize::from(keep_len)))
}

fn decode_fingerprint(d: &mut Decoder<'_>) -> Result<[u8; 32]> {
    let bytes = d.take(32, "key fingerprint")?;
    bytes
        .try_into()
        .map_err(|_| d.corruption("key fingerprint is not 32 bytes"))
}

/// The bandings, each covering every set size (a partition of the set sizes is reserved):
/// exactly one, or with the containment metric (`containment`) at least one.
fn decode_bandings(d: &mut Decoder<'_>, path: &Path, containment: bool) -> Result<Vec<BandingV3>> {
    let count_at = d.offset();
    let count = u16_field(d, "banding count")?;
    if count == 0 {
        return Err(corrupt(path, count_at, "no banding"));
    }
    if count > 1 && !containment {
        return Err(unsupported(path, format!("{count} bandings")));
    }
    let mut bandings = Vec::with_capacity(usize::from(count).min(64));
    for _ in 0..count {
        let banding = BandingV3 {
            bands: d.u32("bands")?,
            rows: d.u32("rows")?,
            size_lo: d.u64("banding size_lo")?,
            size_hi: d.u64("banding size_hi")?,
        };
        if (banding.size_lo, banding.size_hi) != (0, u64::MAX) {
            return Err(unsupported(
                path,
                format!(
                    "a banding over set sizes {} ..= {} (set-size partitions)",
                    banding.size_lo, banding.size_hi
                ),
            ));
        }
        bandings.push(banding);
    }
    Ok(bandings)
}
