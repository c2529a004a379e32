//! Verification in a dedup pass: one pair's stored signatures compared at the threshold, and
//! with exact re-rank its stored shingle sets for the pairs whose estimate falls in the
//! window (`rerank.rs`).

use super::Db;
use super::dedup::DedupOptions;
use super::state::State;
use crate::Result;
use crate::sketch::bbit;
use crate::sketch::set_intersect::jaccard_sorted_at_least;

/// A document's stored set, decoded the first time a comparison needs it and kept for the
/// others (in a pass over pairs, a newer document is compared with several older ones in a
/// row: decoding is most of a comparison's cost).
#[derive(Default)]
pub(super) struct DecodedOnce {
    values: Vec<u32>,
    decoded: bool,
}

impl DecodedOnce {
    /// Forgets the set held (for the next document).
    pub(super) fn clear(&mut self) {
        self.decoded = false;
    }

    /// The decoded set of ordinal `o` (empty if it does not decode: the verifier then holds
    /// the error).
    fn get(&mut self, verify: &Verifier<'_>, o: u32) -> &[u32] {
        if !self.decoded {
            verify.set(o, &mut self.values);
            self.decoded = true;
        }
        &self.values
    }
}

/// How similar a pair that reaches the threshold is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Scores {
    /// The similarity that decided: the exact Jaccard when the pair was re-ranked, else the
    /// estimate.
    pub(super) similarity: f64,
    /// The similarity estimated from the stored signatures.
    pub(super) estimate: f64,
}

/// Compares stored signatures at a threshold.
pub(super) struct Verifier<'a> {
    pub(super) state: &'a State,
    pub(super) docnos: &'a [u64],
    pub(super) record_bytes: usize,
    pub(super) k: usize,
    pub(super) bits: u32,
    pub(super) min_equal: usize,
    /// The estimate a candidate must reach: the threshold, or with exact re-rank the
    /// threshold less the margin (`rerank.rs`).
    pub(super) gate: f64,
    pub(super) threshold: f64,
    /// Decide by the exact Jaccard of stored shingle sets...
    pub(super) exact: bool,
    /// ...below this estimate (the threshold plus the re-rank margin); above it the
    /// estimate decides.
    pub(super) sure: f64,
    /// The first failed signature read (damage: a corruption error), returned by
    /// [`Verifier::check`] before anything computed after it is emitted.
    pub(super) failed: parking_lot::Mutex<Option<crate::Error>>,
}

impl Verifier<'_> {
    pub(super) fn signature(&self, ordinal: u32) -> Option<&[u8]> {
        let docno = *self.docnos.get(ordinal as usize)?;
        match self.state.signature_bytes(docno, self.record_bytes) {
            Ok(sig) => sig,
            Err(e) => {
                self.failed.lock().get_or_insert(e);
                None
            }
        }
    }

    /// The first failed signature read so far, if any: comparisons that met it are incomplete.
    pub(super) fn check(&self) -> Result<()> {
        match self.failed.lock().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The decoded stored set of ordinal `o` into `out` (with exact re-rank; else nothing).
    pub(super) fn set(&self, o: u32, out: &mut Vec<u32>) {
        out.clear();
        if !self.exact {
            return;
        }
        let docno = self.docnos.get(o as usize).copied().unwrap_or(u64::MAX);
        if let Err(e) = super::rerank::decode_stored(self.state, docno, out) {
            self.failed.lock().get_or_insert(e);
        }
    }

    /// The scores of `a` (its signature, and its decoded set with exact re-rank) against
    /// ordinal `b`, if they reach the threshold. `b_set`, when given, keeps
    /// `b`'s decoded set for the next comparisons with `b` (decoded at the first that needs
    /// it); without it `b`'s stored set is decoded as it is merged.
    pub(super) fn similar(
        &self,
        a: &[u8],
        a_set: &[u32],
        b: u32,
        b_set: Option<&mut DecodedOnce>,
    ) -> Option<Scores> {
        let sb = self.signature(b)?;
        let equal =
            bbit::count_equal_packed_at_least(a, sb, self.k, self.bits, self.min_equal).ok()??;
        let estimate = bbit::estimate_from_matches(equal, self.k, self.bits);
        if estimate < self.gate {
            return None;
        }
        let scores = |similarity| Scores {
            similarity,
            estimate,
        };
        if !self.exact || estimate >= self.sure {
            return Some(scores(estimate));
        }
        if let Some(column) = b_set {
            let b_set = column.get(self, b);
            return jaccard_sorted_at_least(a_set, b_set, self.threshold).map(scores);
        }
        let docno = self.docnos.get(b as usize).copied().unwrap_or(u64::MAX);
        match super::rerank::exact_at_least(self.state, docno, a_set, self.threshold) {
            Ok(j) => j.map(scores),
            Err(e) => {
                self.failed.lock().get_or_insert(e);
                None
            }
        }
    }
}

impl Db {
    pub(super) fn verifier<'a>(
        &self,
        state: &'a State,
        docnos: &'a [u64],
        threshold: f64,
        opts: DedupOptions,
    ) -> Result<Verifier<'a>> {
        // A SimHash index's threshold is a cosine: verification compares one-bit estimates.
        let threshold = self.similarity_floor(threshold)?;
        let (k, bits) = (self.params.sketch.num_perm, self.params.bits);
        let exact = self.params.store_sets && !opts.estimate_only;
        let window = super::rerank::RerankWindow::new(threshold, k, bits);
        let gate = if exact { window.gate } else { threshold };
        Ok(Verifier {
            state,
            docnos,
            record_bytes: self.params.sig_bytes(),
            k,
            bits,
            min_equal: bbit::min_matches_for(gate, k, bits),
            gate,
            threshold,
            exact,
            sure: window.sure,
            failed: parking_lot::Mutex::new(None),
        })
    }
}
