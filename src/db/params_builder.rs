//! Choosing a new index's parameters from the options a user gave: the one place that knows
//! which options go with which kind of index, what an option left out defaults to, and when a
//! choice deserves a warning. `mhdb create` and Python's `Index.create` both fill an
//! [`IndexOptions`] and call [`IndexOptions::build`]; each words the errors and warnings in its
//! own terms (flags, keyword arguments) from the [`IndexOption`] they name.

use super::params::{DEFAULT_BUCKET_CAP, IndexParams, default_slots};
use crate::sketch::{
    LshParams, Scheme, ShingleConfig, ShingleKind, SimParams, SimWeighting, SketchParams,
};
use crate::{Error, Result};

/// The query threshold a new MinHash index is tuned for when none is given.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

/// The largest Hamming distance of a match in a new SimHash index when none is given.
pub const DEFAULT_MAX_HAMMING: u32 = 3;

/// The kind of index to create (the stored [`IndexKind`](super::IndexKind) adds its SimHash
/// settings).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KindChoice {
    /// MinHash-LSH (the default).
    #[default]
    MinHash,
    /// SimHash-pigeonhole.
    SimHash,
}

impl KindChoice {
    /// `minhash` or `simhash`.
    pub fn name(self) -> &'static str {
        match self {
            KindChoice::MinHash => "minhash",
            KindChoice::SimHash => "simhash",
        }
    }
}

impl std::str::FromStr for KindChoice {
    type Err = Error;

    fn from_str(s: &str) -> Result<KindChoice> {
        match s {
            "minhash" => Ok(KindChoice::MinHash),
            "simhash" => Ok(KindChoice::SimHash),
            other => Err(Error::invalid(
                "kind",
                format!("unknown index kind {other:?}; expected \"minhash\" or \"simhash\""),
            )),
        }
    }
}

/// One option of [`IndexOptions`], as errors name it; [`IndexOption::name`] is its canonical
/// name (the field's, and the Python keyword's), which each front end may render its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexOption {
    /// [`IndexOptions::kind`].
    Kind,
    /// [`IndexOptions::threshold`].
    Threshold,
    /// [`IndexOptions::num_perm`].
    NumPerm,
    /// [`IndexOptions::scheme`].
    Scheme,
    /// [`IndexOptions::seed`].
    Seed,
    /// [`IndexOptions::shingle`].
    Shingle,
    /// [`IndexOptions::nfkc`].
    Nfkc,
    /// [`IndexOptions::lowercase`].
    Lowercase,
    /// [`IndexOptions::collapse_whitespace`].
    CollapseWhitespace,
    /// [`IndexOptions::bits`].
    Bits,
    /// [`IndexOptions::band_slots`].
    BandSlots,
    /// [`IndexOptions::bands`].
    Bands,
    /// [`IndexOptions::rows`].
    Rows,
    /// [`IndexOptions::bucket_cap`].
    BucketCap,
    /// [`IndexOptions::store_sets`].
    StoreSets,
    /// [`IndexOptions::max_hamming`].
    MaxHamming,
    /// [`IndexOptions::weighting`].
    Weighting,
    /// [`IndexOptions::containment`].
    Containment,
}

impl IndexOption {
    /// The canonical name: `num_perm`, `max_hamming`, …
    pub fn name(self) -> &'static str {
        match self {
            IndexOption::Kind => "kind",
            IndexOption::Threshold => "threshold",
            IndexOption::NumPerm => "num_perm",
            IndexOption::Scheme => "scheme",
            IndexOption::Seed => "seed",
            IndexOption::Shingle => "shingle",
            IndexOption::Nfkc => "nfkc",
            IndexOption::Lowercase => "lowercase",
            IndexOption::CollapseWhitespace => "collapse_whitespace",
            IndexOption::Bits => "bits",
            IndexOption::BandSlots => "band_slots",
            IndexOption::Bands => "bands",
            IndexOption::Rows => "rows",
            IndexOption::BucketCap => "bucket_cap",
            IndexOption::StoreSets => "store_sets",
            IndexOption::MaxHamming => "max_hamming",
            IndexOption::Weighting => "weighting",
            IndexOption::Containment => "containment",
        }
    }
}

/// The options of a new index, each `None` when the user did not give it (so that an option
/// given with its default value is still told from one left out).
#[derive(Clone, Debug, Default)]
pub struct IndexOptions {
    /// MinHash (default) or SimHash.
    pub kind: Option<KindChoice>,
    /// MinHash: the threshold the bands are tuned for ([`DEFAULT_THRESHOLD`]).
    pub threshold: Option<f64>,
    /// MinHash: the signature's slots k_v ([`default_slots`] for the scheme).
    pub num_perm: Option<usize>,
    /// MinHash: the signature scheme (OPH).
    pub scheme: Option<Scheme>,
    /// The seed every hash constant derives from (0).
    pub seed: Option<u64>,
    /// Character or word shingles (`char:5`).
    pub shingle: Option<ShingleKind>,
    /// NFKC normalization first (off).
    pub nfkc: Option<bool>,
    /// Lowercasing (on).
    pub lowercase: Option<bool>,
    /// White space collapsed (on).
    pub collapse_whitespace: Option<bool>,
    /// MinHash: bits per stored slot ([`default_bits`](super::default_bits)).
    pub bits: Option<u32>,
    /// MinHash: the slots the bands cover ([`default_band_slots`](super::default_band_slots)).
    pub band_slots: Option<usize>,
    /// MinHash: bands, given with `rows` (else tuned for the threshold).
    pub bands: Option<usize>,
    /// MinHash: rows per band, given with `bands`.
    pub rows: Option<usize>,
    /// The largest bucket kept, 0 for unlimited ([`DEFAULT_BUCKET_CAP`]).
    pub bucket_cap: Option<u32>,
    /// MinHash: store each document's shingle set (off).
    pub store_sets: Option<bool>,
    /// SimHash: the largest Hamming distance of a match ([`DEFAULT_MAX_HAMMING`]).
    pub max_hamming: Option<u32>,
    /// SimHash: how term frequencies become weights (tf).
    pub weighting: Option<SimWeighting>,
    /// MinHash: answer by containment too, banding by size class (off: Jaccard only).
    pub containment: Option<bool>,
}

/// Why [`IndexOptions::build`] refused the options. The [`Error`] it converts into uses the
/// canonical names; a front end may word the first two variants its own way from the options
/// they name.
#[derive(Debug)]
pub enum OptionsError {
    /// `option` was given, but it belongs to the other kind of index than `kind`.
    WrongKind {
        /// The option given.
        option: IndexOption,
        /// The kind of index being created.
        kind: KindChoice,
    },
    /// Only one of `bands` and `rows` was given.
    BandsWithoutRows,
    /// A value the index cannot take, as the parameter checks report it.
    Invalid(Error),
}

impl From<Error> for OptionsError {
    fn from(e: Error) -> Self {
        OptionsError::Invalid(e)
    }
}

impl From<OptionsError> for Error {
    fn from(e: OptionsError) -> Self {
        match e {
            OptionsError::WrongKind {
                kind: KindChoice::MinHash,
                ..
            } => Error::invalid(
                "kind",
                "max_hamming and weighting are parameters of kind=\"simhash\"",
            ),
            OptionsError::WrongKind {
                option: IndexOption::Threshold,
                ..
            } => Error::invalid(
                "threshold",
                "a simhash index's threshold follows from max_hamming; give max_hamming",
            ),
            OptionsError::WrongKind { option, .. } => Error::invalid(
                "kind",
                format!(
                    "{} is a MinHash parameter; a simhash index takes max_hamming, weighting, \
                     seed and the shingling",
                    option.name()
                ),
            ),
            OptionsError::BandsWithoutRows => Error::invalid(
                "bands",
                "give both bands and rows, or neither (then they are tuned for the threshold)",
            ),
            OptionsError::Invalid(e) => e,
        }
    }
}

/// The options of a MinHash index only, in the order a refusal names the first one given.
const MINHASH_ONLY: [IndexOption; 9] = [
    IndexOption::Containment,
    IndexOption::NumPerm,
    IndexOption::Scheme,
    IndexOption::Bits,
    IndexOption::Bands,
    IndexOption::Rows,
    IndexOption::Threshold,
    IndexOption::StoreSets,
    IndexOption::BandSlots,
];

/// The options of a SimHash index only.
const SIMHASH_ONLY: [IndexOption; 2] = [IndexOption::MaxHamming, IndexOption::Weighting];

impl IndexOptions {
    /// Sets [`IndexOptions::containment`] from a metric's name, as front ends take it:
    /// `jaccard` or `containment`.
    pub fn set_metric(&mut self, name: &str) -> Result<()> {
        self.containment = Some(match name {
            "jaccard" => false,
            "containment" => true,
            other => {
                return Err(Error::invalid(
                    "metric",
                    format!("unknown metric {other:?}; expected \"jaccard\" or \"containment\""),
                ));
            }
        });
        Ok(())
    }

    /// Whether `option` was given.
    pub fn given(&self, option: IndexOption) -> bool {
        match option {
            IndexOption::Kind => self.kind.is_some(),
            IndexOption::Threshold => self.threshold.is_some(),
            IndexOption::NumPerm => self.num_perm.is_some(),
            IndexOption::Scheme => self.scheme.is_some(),
            IndexOption::Seed => self.seed.is_some(),
            IndexOption::Shingle => self.shingle.is_some(),
            IndexOption::Nfkc => self.nfkc.is_some(),
            IndexOption::Lowercase => self.lowercase.is_some(),
            IndexOption::CollapseWhitespace => self.collapse_whitespace.is_some(),
            IndexOption::Bits => self.bits.is_some(),
            IndexOption::BandSlots => self.band_slots.is_some(),
            IndexOption::Bands => self.bands.is_some(),
            IndexOption::Rows => self.rows.is_some(),
            IndexOption::BucketCap => self.bucket_cap.is_some(),
            IndexOption::StoreSets => self.store_sets.is_some(),
            IndexOption::MaxHamming => self.max_hamming.is_some(),
            IndexOption::Weighting => self.weighting.is_some(),
            IndexOption::Containment => self.containment.is_some(),
        }
    }

    /// The parameters these options select, every option left out at its default; an option of
    /// the other kind of index is refused, not ignored.
    pub fn build(&self) -> std::result::Result<IndexParams, OptionsError> {
        let kind = self.kind.unwrap_or_default();
        let other_kinds = match kind {
            KindChoice::MinHash => &SIMHASH_ONLY[..],
            KindChoice::SimHash => &MINHASH_ONLY[..],
        };
        if let Some(&option) = other_kinds.iter().find(|&&o| self.given(o)) {
            return Err(OptionsError::WrongKind { option, kind });
        }
        let mut params = match kind {
            KindChoice::MinHash => self.minhash()?,
            KindChoice::SimHash => IndexParams::simhash(SimParams {
                seed: self.seed.unwrap_or_default(),
                shingle: self.shingle_config(),
                weighting: self.weighting.unwrap_or_default(),
                max_hamming: self.max_hamming.unwrap_or(DEFAULT_MAX_HAMMING),
            })?,
        };
        let cap = self.bucket_cap.unwrap_or(DEFAULT_BUCKET_CAP);
        params.bucket_cap = (cap != 0).then_some(cap);
        params.validate()?;
        Ok(params)
    }

    /// A MinHash index: the sketch, its shape, bands × rows tuned for the threshold (for
    /// recall with stored sets) unless given.
    fn minhash(&self) -> std::result::Result<IndexParams, OptionsError> {
        let scheme = self.scheme.unwrap_or(SketchParams::default().scheme);
        let sketch = SketchParams {
            scheme,
            num_perm: self.num_perm.unwrap_or_else(|| default_slots(scheme)),
            seed: self.seed.unwrap_or_default(),
            shingle: self.shingle_config(),
        };
        sketch.validate()?;
        let threshold = self.threshold.unwrap_or(DEFAULT_THRESHOLD);
        let mut params = IndexParams::with_shape(sketch, self.bits, self.band_slots, threshold)?;
        if self.containment == Some(true) {
            if self.bands.is_some() || self.rows.is_some() {
                return Err(OptionsError::Invalid(Error::invalid(
                    "bands/rows",
                    "a containment index's bandings are fixed (format/containment.md): give \
                     neither",
                )));
            }
            params = params.into_containment()?;
        }
        if self.store_sets == Some(true) {
            params = params.with_stored_sets()?;
        }
        match (self.bands, self.rows) {
            (Some(bands), Some(rows)) => {
                params.lsh = LshParams::new(bands, rows, params.band_slots)?;
            }
            (None, None) => {}
            _ => return Err(OptionsError::BandsWithoutRows),
        }
        Ok(params)
    }

    fn shingle_config(&self) -> ShingleConfig {
        ShingleConfig::with_normalization(
            self.shingle.unwrap_or(ShingleConfig::default().kind),
            self.nfkc,
            self.lowercase,
            self.collapse_whitespace,
        )
    }
}

/// A choice of parameters that works but will likely disappoint, for the front end to tell its
/// user in its own words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamsWarning {
    /// Fewer than half the pairs at the threshold become candidates: most near-duplicates at
    /// the threshold will be missed.
    WeakBanding {
        /// The banding.
        lsh: LshParams,
        /// The threshold.
        threshold: f64,
        /// The probability that a pair at the threshold becomes a candidate (below 0.5).
        probability: f64,
    },
    /// Stored sets ask the bands for [`STORED_SETS_RECALL`](super::STORED_SETS_RECALL) at the threshold, which no banding
    /// of `band_slots` slots reaches.
    StoredSetsShortOfRecall {
        /// The slots the bands cover.
        band_slots: usize,
        /// The threshold.
        threshold: f64,
        /// The probability the banding reaches at the threshold (at least 0.5).
        probability: f64,
    },
}

/// [`ParamsWarning::WeakBanding`] when `lsh` makes fewer than half the pairs at `threshold`
/// candidates.
pub fn weak_banding(lsh: LshParams, threshold: f64) -> Option<ParamsWarning> {
    let probability = lsh.probability(threshold);
    (probability < 0.5).then_some(ParamsWarning::WeakBanding {
        lsh,
        threshold,
        probability,
    })
}
