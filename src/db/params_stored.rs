//! How [`IndexParams`] are stored in a manifest (format versions 1 to 3) and read back:
//! the codes of kinds, schemes and shingles, and the refusals of what a version cannot hold
//! or this build does not know.

use std::path::Path;

use super::params::{CONTAINMENT_BANDINGS, IndexKind, IndexParams};
use crate::sketch::unicode_words::{UNICODE_VERSION, unicode_version_code};
use crate::sketch::{
    KeyFingerprint, LshParams, SPEC_VERSION, Scheme, ShingleConfig, ShingleKind, SimWeighting,
    SketchParams, WordFolding,
};
use crate::storage::codec::{Decoder, Encoder};
use crate::storage::manifest::v3::{
    KIND_MINHASH, KIND_SIMHASH, METRIC_CONTAINMENT, METRIC_COSINE, METRIC_JACCARD, PARAMS_AT,
    SHINGLE_CHAR, SHINGLE_COLLAPSE_WHITESPACE, SHINGLE_FOLD_DIGITS, SHINGLE_FOLD_PUNCTUATION,
    SHINGLE_LOWERCASE, SHINGLE_NFKC, SHINGLE_TOKEN_LISTS, SHINGLE_UNICODE_WORDS, SHINGLE_WORD,
};
use crate::storage::manifest::{BandingV3, MANIFEST_V3, ParamsV3, StoredParams};
use crate::{Error, Result};

/// The manifest's index kind (format version 2) of a MinHash-LSH index.
const INDEX_KIND_MINHASH: u8 = 1;

/// The manifest's index kind of a SimHash-pigeonhole index.
const INDEX_KIND_SIMHASH: u8 = 2;

/// The manifest's scheme code of a SimHash index (it has no MinHash scheme).
const SIMHASH_SCHEME_CODE: u8 = 0;

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
            metric: match self.kind {
                IndexKind::MinHash => METRIC_JACCARD,
                IndexKind::SimHash { .. } => METRIC_COSINE,
                IndexKind::Containment => METRIC_CONTAINMENT,
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
            bandings: match self.kind {
                IndexKind::Containment => CONTAINMENT_BANDINGS
                    .iter()
                    .map(|b| BandingV3::covering_all(b.bands as u32, b.rows as u32))
                    .collect(),
                _ => vec![BandingV3::covering_all(
                    self.lsh.bands as u32,
                    self.lsh.rows as u32,
                )],
            },
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
        // (The format refuses partitions, and several bandings but a containment index's,
        // before this.)
        let containment = b.metric == METRIC_CONTAINMENT;
        let lsh = match (containment, b.bandings.as_slice()) {
            (true, bandings) => containment_lsh(bandings, path)?,
            (false, [banding]) => LshParams {
                bands: banding.bands as usize,
                rows: banding.rows as usize,
            },
            (false, bandings) => return Err(bad(format!("{} bandings", bandings.len()))),
        };
        let kind = index_kind(simhash, u32::from(b.max_hamming), b.weighting).map_err(bad)?;
        let kind = match containment {
            true => IndexKind::Containment,
            false => kind,
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
            lsh,
            threshold: b.threshold,
            bucket_cap: (b.bucket_cap != 0).then_some(b.bucket_cap),
            key_fingerprint: KeyFingerprint(b.key_fingerprint),
            store_sets,
            kind,
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
pub(super) struct ShingleCodes {
    pub(super) kind: u8,
    pub(super) width: u8,
    pub(super) flags: u16,
    /// [`unicode_version_code`] for Unicode words; 0 otherwise.
    pub(super) unicode_version: u32,
}

/// The shingle kind code, width and flag bits a manifest stores.
pub(super) fn shingle_codes(c: &ShingleConfig) -> ShingleCodes {
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
        ShingleKind::Tokens(n) => (SHINGLE_TOKEN_LISTS, n, 0),
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
pub(super) fn shingle_from_codes(kind: u8, width: u8, flags: u16) -> Option<ShingleConfig> {
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
        SHINGLE_TOKEN_LISTS => ShingleKind::Tokens(width),
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
    /// and token-list shingles have a code only from version 3 on.
    pub fn check_format_version(&self, version: u32) -> Result<()> {
        if self.kind == IndexKind::Containment && version < MANIFEST_V3 {
            return Err(Error::invalid(
                "metric",
                format!(
                    "containment needs format version 3; format version {version} has no code \
                     for it"
                ),
            ));
        }
        let shingle = self.sketch.shingle.kind;
        if shingle.is_tokens() && version < MANIFEST_V3 {
            return Err(Error::invalid(
                "shingle",
                format!(
                    "{shingle} (token lists) needs format version 3; format version {version} \
                     has no code for it"
                ),
            ));
        }
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

/// The flat banding of a containment index stored with `bandings`: those this build writes
/// ([`CONTAINMENT_BANDINGS`]), or unsupported.
fn containment_lsh(bandings: &[BandingV3], path: &Path) -> Result<LshParams> {
    let built = bandings.len() == CONTAINMENT_BANDINGS.len()
        && bandings
            .iter()
            .zip(&CONTAINMENT_BANDINGS)
            .all(|(s, b)| (s.bands as usize, s.rows as usize) == (b.bands, b.rows));
    if !built {
        let listed: Vec<String> = bandings
            .iter()
            .map(|b| format!("{}×{}", b.bands, b.rows))
            .collect();
        return Err(unsupported(
            path,
            format!("containment bandings {}", listed.join(", ")),
        ));
    }
    Ok(LshParams {
        bands: super::params::containment_band_count(),
        rows: 0,
    })
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
    // Unicode words and token lists have a code from version 3 on only.
    shingle_from_codes(kind, width, u16::from(flags))
        .filter(|_| kind != SHINGLE_UNICODE_WORDS && kind != SHINGLE_TOKEN_LISTS)
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
