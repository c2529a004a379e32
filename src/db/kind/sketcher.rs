//! An open index's kind: how it signs text, keys its bands, checks a signature's shape,
//! answers a query and reports an estimate. Built once at open from the stored parameters
//! (and the key), so that no other code asks which kind it serves.

use std::path::Path;

use super::max_distance_for_threshold;
use super::simhash::{distance_of, estimate_at};
use crate::db::open::text_key;
use crate::db::params::{CONTAINMENT_BANDINGS, IndexKind, IndexParams};
use crate::db::query::Banded;
use crate::db::state::State;
use crate::db::{Db, Options, QueryOptions, QueryResult};
use crate::sketch::TuneOptions;
use crate::sketch::probe_planner::ProbePlanner;
use crate::sketch::{
    Banding, ClassBanding, ExactHasher, MinHasher, SecretKey, SetDerivation, Signature, SimHash,
    SimHasher, Token, cosine_from_hamming,
};
use crate::storage::segment::ColumnSet;
use crate::{Error, Result};

/// What an open index signs and bands with, by kind.
#[derive(Debug)]
pub(in crate::db) enum Sketcher {
    MinHash {
        /// The signer: none for signatures made elsewhere (a foreign scheme), or for a keyed
        /// index opened without its key (text is then refused, saying why).
        signer: Option<MinHasher>,
        /// Signatures carry their shingle sets (an index that stores sets).
        with_sets: bool,
        /// Signatures of texts and token lists carry their exact hashes (an index with the
        /// EXACT_HASH column, opened with its key if it is keyed).
        exact: Option<ExactHasher>,
        /// Signatures of texts and token lists carry their set sizes (an index with the
        /// SET_SIZE column).
        set_size: bool,
        banding: BandKeys,
    },
    SimHash {
        /// The fingerprinter: none for a keyed index opened without its key.
        fingerprinter: Option<SimHasher>,
        /// Block keys depend on the seed only (never on a secret key), so an unkeyed hasher
        /// computes them for every index.
        blocks: SimHasher,
    },
}

/// How a MinHash index keys its bands.
#[derive(Debug)]
pub(in crate::db) enum BandKeys {
    /// One banding over every document.
    Jaccard(Banding),
    /// A containment index's bandings, keyed under each document's size class, and how its
    /// queries choose the bands to probe.
    Containment(ClassBanding, ProbePlanner),
}

/// What a stored document's signature carries besides its slots, in an index with the
/// matching columns: the exact hash to attach, and whether to attach the set size.
#[derive(Clone, Copy, Default)]
pub(in crate::db) struct Notes<'a> {
    pub exact: Option<&'a ExactHasher>,
    pub set_size: bool,
}

/// How documents (texts, or token lists in an index of token lists) are signed in one index,
/// borrowed from its [`Sketcher`].
#[derive(Clone, Copy)]
pub(in crate::db) enum DocumentSigner<'a> {
    /// With the notes to attach, in an index with those columns.
    MinHash(&'a MinHasher, Notes<'a>),
    /// An index that stores sets: signatures carry their shingle sets (and notes, as above).
    MinHashWithSets(&'a MinHasher, Notes<'a>),
    /// SimHash fingerprints, as their one-bit signatures.
    SimHash(&'a SimHasher),
}

impl DocumentSigner<'_> {
    /// This signer for queries: without the notes, which only a stored document keeps, but
    /// the set size when `set_size` (a containment index's queries need theirs).
    pub fn for_queries(self, set_size: bool) -> Self {
        let notes = Notes {
            exact: None,
            set_size,
        };
        match self {
            DocumentSigner::MinHash(h, _) => DocumentSigner::MinHash(h, notes),
            DocumentSigner::MinHashWithSets(h, _) => DocumentSigner::MinHashWithSets(h, notes),
            sim @ DocumentSigner::SimHash(_) => sim,
        }
    }

    /// The signature of `text` as the index stores it: an error only for a text past the
    /// widest set size.
    pub fn sign(self, text: &str) -> Result<Signature> {
        Ok(match self {
            DocumentSigner::MinHash(
                h,
                Notes {
                    exact,
                    set_size: true,
                },
            ) => h.sketch_text_with_size(text, exact)?,
            DocumentSigner::MinHash(h, Notes { exact: None, .. }) => h.sketch_text(text),
            DocumentSigner::MinHash(h, Notes { exact: Some(e), .. }) => {
                h.sketch_text_with_exact(text, e)
            }
            DocumentSigner::MinHashWithSets(h, notes) => {
                let sig = h.sketch_text_with_set(text);
                let sig = match notes.exact {
                    Some(e) => sig.with_exact_hash(e.hash_text(&h.params().shingle, text)),
                    None => sig,
                };
                match notes.set_size {
                    true => sig.with_set_size(h.set_size_of_text(text)?),
                    false => sig,
                }
            }
            DocumentSigner::SimHash(h) => h.sketch_text(text).to_signature(),
        })
    }

    /// The signature of a token list as the index stores it, at the index's shingle width.
    /// A SimHash index has no token lists (its parameters refuse them).
    pub fn sign_tokens(self, tokens: &[Token<'_>]) -> Result<Signature> {
        let (sig, notes) = match self {
            DocumentSigner::MinHash(h, notes) => {
                let width = h.params().shingle.kind.width();
                match notes.set_size {
                    true => (h.sketch_tokens_with_size(tokens, width)?, notes),
                    false => (h.sketch_tokens(tokens, width)?, notes),
                }
            }
            DocumentSigner::MinHashWithSets(h, notes) => {
                let width = h.params().shingle.kind.width();
                let sig = h.sketch_tokens_with_set(tokens, width)?;
                match notes.set_size {
                    true => (
                        sig.with_set_size(h.set_size_of_tokens(tokens, width)?),
                        notes,
                    ),
                    false => (sig, notes),
                }
            }
            DocumentSigner::SimHash(_) => {
                return Err(Error::invalid(
                    "tokens",
                    "a SimHash index fingerprints texts, not token lists",
                ));
            }
        };
        Ok(match notes.exact {
            Some(e) => sig.with_exact_hash(e.hash_tokens(tokens)?),
            None => sig,
        })
    }
}

impl Sketcher {
    /// The sketcher of an index with `params`, opened with `opts` (whose key signs text),
    /// whose stored sets (if any) are of derivation `sets`, and which has the per-document
    /// `columns` (a SimHash index never has).
    pub fn new(
        params: &IndexParams,
        opts: &Options,
        sets: Option<SetDerivation>,
        columns: ColumnSet,
    ) -> Result<Self> {
        let minhasher = |key: Option<&SecretKey>| {
            let hasher = MinHasher::with_key(params.sketch, key)?;
            Ok(match sets {
                Some(SetDerivation::KeyedV2Leaking) => hasher.with_version2_sets(),
                _ => hasher,
            })
        };
        let (name, seed) = (params.sketch.scheme.name(), params.sketch.seed);
        let signs = params.sketch.scheme.signs_text();
        Ok(match params.sim_params() {
            None => Sketcher::MinHash {
                signer: if signs {
                    text_key(params, opts)?.signer(minhasher)?
                } else {
                    None
                },
                with_sets: params.store_sets,
                exact: if columns.exact && signs {
                    text_key(params, opts)?.signer(|key| Ok(ExactHasher::new(name, seed, key)))?
                } else {
                    None
                },
                set_size: columns.set_size && signs,
                banding: match params.kind {
                    IndexKind::Containment => BandKeys::Containment(
                        ClassBanding::new(&params.sketch, &CONTAINMENT_BANDINGS)?,
                        ProbePlanner::new(&CONTAINMENT_BANDINGS, TuneOptions::default())?,
                    ),
                    _ => BandKeys::Jaccard(params.banding()?),
                },
            },
            Some(sim) => Sketcher::SimHash {
                fingerprinter: text_key(params, opts)?
                    .signer(|key| SimHasher::with_key(sim, key))?,
                blocks: SimHasher::new(sim)?,
            },
        })
    }

    /// The band keys of the document signed `sig`, one per band: LSH bands of a MinHash
    /// signature (in a containment index, under the class of its set size, which it must
    /// carry), or the pigeonhole block keys of a fingerprint.
    pub fn band_keys(&self, sig: &Signature) -> Result<Vec<u64>> {
        match self {
            Sketcher::MinHash {
                banding: BandKeys::Jaccard(b),
                ..
            } => b.band_keys(sig.slots()),
            Sketcher::MinHash {
                banding: BandKeys::Containment(c, _),
                ..
            } => c.band_keys(sig.slots(), set_size_of(sig)?),
            Sketcher::SimHash { blocks, .. } => {
                Ok(blocks.block_keys(fingerprint_of_slots(sig.slots())?))
            }
        }
    }

    /// [`Sketcher::band_keys`] into `out` (exactly one slot per band).
    pub fn band_keys_to_slice(&self, sig: &Signature, out: &mut [u64]) -> Result<()> {
        let slots = sig.slots();
        match self {
            Sketcher::MinHash {
                banding: BandKeys::Jaccard(b),
                ..
            } => b.band_keys_to_slice(slots, out),
            Sketcher::MinHash {
                banding: BandKeys::Containment(c, _),
                ..
            } => c.band_keys_to_slice(slots, set_size_of(sig)?, out),
            Sketcher::SimHash { blocks, .. } => {
                blocks.block_keys_to_slice(fingerprint_of_slots(slots)?, out)
            }
        }
    }

    /// The class bandings of a containment index and its probe planner; `None` for any
    /// other index.
    pub fn class_banding(&self) -> Option<(&ClassBanding, &ProbePlanner)> {
        match self {
            Sketcher::MinHash {
                banding: BandKeys::Containment(c, p),
                ..
            } => Some((c, p)),
            _ => None,
        }
    }
}

/// The set size a containment index keys `sig`'s bands by.
fn set_size_of(sig: &Signature) -> Result<u64> {
    sig.set_size().map(u64::from).ok_or_else(|| {
        Error::invalid(
            "set size",
            "a containment index needs each document's set size (the number of its distinct \
             shingle hashes): insert text or token lists, or signatures that carry their size",
        )
    })
}

fn fingerprint_of_slots(slots: &[u64]) -> Result<SimHash> {
    SimHash::from_signature(&Signature::from_slots(slots.to_vec()))
}

/// The error for a containment query on an index without size classes.
fn no_classes(dir: &Path) -> Error {
    Error::invalid(
        "containment",
        format!(
            "{} is not a containment index: it keeps no size classes, so it cannot find the \
             documents that contain a query (create one with --metric containment)",
            dir.display()
        ),
    )
}

/// The error for asking a SimHash index for MinHash things (its signer, a MinHash signature).
fn not_minhash(dir: &Path) -> Error {
    Error::ParameterMismatch {
        name: "kind",
        stored: format!("simhash ({})", dir.display()),
        requested: "minhash (a MinHash signer or signature)".into(),
    }
}

impl Db {
    /// The signer matching this database's parameters; an error for a database of
    /// signatures made elsewhere (a foreign [`Scheme`](crate::sketch::Scheme), e.g. datasketch's),
    /// for which mhdb never signs text, or for a SimHash index.
    pub fn hasher(&self) -> Result<&MinHasher> {
        match &self.sketcher {
            Sketcher::MinHash {
                signer: Some(h), ..
            } => Ok(h),
            Sketcher::MinHash { signer: None, .. } => Err(self.why_no_signer()),
            Sketcher::SimHash { .. } => Err(not_minhash(&self.dir)),
        }
    }

    /// The fingerprinter of a SimHash index; an error for a MinHash index, or for a keyed
    /// index opened without its key.
    pub fn simhasher(&self) -> Result<&SimHasher> {
        match &self.sketcher {
            Sketcher::SimHash {
                fingerprinter: Some(h),
                ..
            } => Ok(h),
            Sketcher::SimHash { .. } => Err(self.why_no_signer()),
            Sketcher::MinHash { .. } => Err(Error::ParameterMismatch {
                name: "kind",
                stored: format!("minhash ({})", self.dir.display()),
                requested: "simhash (a SimHash fingerprint)".into(),
            }),
        }
    }

    /// Why an index of either kind has no text signer: a keyed index opened without its key
    /// (the error says how to give it), or signatures made elsewhere.
    fn why_no_signer(&self) -> Error {
        match self.params.key_fingerprint.check(None) {
            Err(e) if self.params.sketch.scheme.signs_text() || self.sim() => e,
            _ => self.params.sketch.scheme.text_refused(),
        }
    }

    /// Errors unless this handle may store signatures given by a caller: a keyed index takes
    /// them only from a handle that holds its key. Its signatures are made under the key, so
    /// one given by a caller without it is either made with the key elsewhere or meaningless
    /// here, and a handle opened without the key cannot tell which.
    pub(in crate::db) fn check_may_store_signatures(&self) -> Result<()> {
        let has_signer = match &self.sketcher {
            Sketcher::MinHash { signer, .. } => signer.is_some(),
            Sketcher::SimHash { fingerprinter, .. } => fingerprinter.is_some(),
        };
        match self.params.key_fingerprint.check(None) {
            Err(e) if !has_signer => Err(e),
            _ => Ok(()),
        }
    }

    fn sim(&self) -> bool {
        matches!(self.sketcher, Sketcher::SimHash { .. })
    }

    /// How this index signs text; the error says why it cannot (an index of token lists
    /// among the reasons).
    pub(in crate::db) fn text_signer(&self) -> Result<DocumentSigner<'_>> {
        self.check_document_kind(false)?;
        self.document_signer()
    }

    /// How this index signs its documents, texts or token lists.
    pub(super) fn document_signer(&self) -> Result<DocumentSigner<'_>> {
        Ok(match &self.sketcher {
            Sketcher::MinHash {
                with_sets,
                exact,
                set_size,
                ..
            } => {
                let notes = Notes {
                    exact: exact.as_ref(),
                    set_size: *set_size,
                };
                match with_sets {
                    true => DocumentSigner::MinHashWithSets(self.hasher()?, notes),
                    false => DocumentSigner::MinHash(self.hasher()?, notes),
                }
            }
            Sketcher::SimHash { .. } => DocumentSigner::SimHash(self.simhasher()?),
        })
    }

    /// The signature of `text` with this database's parameters (what [`Db::insert_text`]
    /// and [`Db::query_text`] compute), with its shingle set attached in an index that stores
    /// sets, its exact hash in an index with the EXACT_HASH column and its set size in one
    /// with the SET_SIZE column. For a SimHash index, the fingerprint as the engine stores
    /// it, a signature of 64 one-bit slots ([`SimHash::to_signature`]).
    pub fn sketch_text(&self, text: &str) -> Result<Signature> {
        self.text_signer()?.sign(text)
    }

    /// [`Db::sketch_text`] as a query needs it: without the exact hash and set size, which a
    /// query never reads (they are stored, and compared on insert, only).
    pub(crate) fn sketch_query_text(&self, text: &str) -> Result<Signature> {
        let with_size = self.sketcher.class_banding().is_some();
        self.text_signer()?.for_queries(with_size).sign(text)
    }

    /// Errors unless `sig` has this database's number of slots (for a SimHash index: is a
    /// fingerprint's 64 one-bit slots): whether it may be stored or queried here (a caller
    /// with many can name the bad one before any is written).
    pub fn check_signature(&self, sig: &Signature) -> Result<()> {
        if self.sim() {
            return SimHash::from_signature(sig).map(|_| ());
        }
        if sig.len() != self.params.sketch.num_perm {
            return Err(Error::invalid(
                "signature",
                format!(
                    "has {} slots, the database stores {} (sign with the database's own \
                     parameters: `Db::hasher`, Python `Index.hasher`)",
                    sig.len(),
                    self.params.sketch.num_perm
                ),
            ));
        }
        Ok(())
    }

    /// Documents similar to `sig`.
    ///
    /// The signature of a text without shingles (empty, or white space only: the *empty-set
    /// signature*, [`Signature::is_empty_set`]) is similar to nothing: it has no matches, not
    /// even a stored document that is empty too.
    pub fn query(&self, sig: &Signature, opts: &QueryOptions) -> Result<QueryResult> {
        self.query_in(&self.state.read(), sig, None, opts)
    }

    /// [`Db::query`] against `state`, with the band keys and packed signature when they are
    /// computed already (a writer checking before it stores the document does both).
    pub(in crate::db) fn query_in(
        &self,
        state: &State,
        sig: &Signature,
        banded: Option<Banded<'_>>,
        opts: &QueryOptions,
    ) -> Result<QueryResult> {
        match &self.sketcher {
            Sketcher::MinHash {
                banding: BandKeys::Containment(classes, planner),
                ..
            } => self.query_classes(state, sig, (classes, planner), opts),
            _ if opts.containment.is_some() || opts.containment_recall.is_some() => {
                Err(no_classes(&self.dir))
            }
            Sketcher::MinHash { .. } => self.query_signature(state, sig, banded, opts),
            Sketcher::SimHash { .. } => self.query_fingerprint(state, sig, banded, opts),
        }
    }

    /// Errors unless this is a SimHash index (the kind check of the fingerprint methods).
    pub(super) fn simhash_kind_check(&self) -> Result<()> {
        if self.sim() {
            Ok(())
        } else {
            self.simhasher().map(|_| ())
        }
    }

    /// The least verification estimate of a match at `threshold`: the threshold itself for a
    /// MinHash index; for a SimHash index, whose threshold is a minimum cosine estimate, the
    /// one-bit estimate at the largest distance it admits.
    pub(in crate::db) fn similarity_floor(&self, threshold: f64) -> Result<f64> {
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
    pub(in crate::db) fn describe_estimate(
        &self,
        estimate: f64,
    ) -> (f64, Option<u32>, Option<f64>) {
        if !self.sim() {
            return (estimate, None, None);
        }
        let d = distance_of(estimate);
        let cosine = cosine_from_hamming(d);
        (cosine, Some(d), Some(cosine))
    }
}
