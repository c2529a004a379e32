//! Exact re-rank (as Milvus refines over raw data): in an index that stores shingle sets, a
//! candidate whose signature estimate comes within a margin of the threshold has its exact
//! Jaccard computed from the stored sets, and that decides whether it matches. Near the
//! threshold the estimate alone is wrong often (its spread is a few hundredths at the default
//! sizes), while far from it, either side, it is almost never wrong, so only the few
//! candidates in the window pay for the exact computation.
//!
//! The margin is [`MARGIN_SIGMAS`] standard deviations of the b-bit estimate at the threshold,
//! either side ([`RerankWindow`]): a pair exactly at the threshold estimates below
//! `t − margin` with probability about 0.13 %, so re-ranking loses almost nothing the estimate
//! alone would have found; a pair estimated at or above `t + margin` is below the threshold
//! with about that probability too, and is accepted by its estimate, uncomputed.

use super::state::State;
use super::version::Manifest;
use crate::sketch::SetDerivation;
use crate::sketch::set_intersect::jaccard_blocks_at_least;
use crate::storage::manifest::{Features, MANIFEST_V3};
use crate::storage::shingle_codec::{CodedValues, SetDecodeError, decode_into};
use crate::{Error, Result};

/// How the stored sets of the index `manifest` describes were derived (`format/hashing.md`
/// §14): `None` for an index without sets. A keyed index's sets are of version 2's
/// derivation when version 2 stored them, in place or kept by an upgrade (feature
/// SETS_KEYED_V2); every signer and every reader of the index follows this.
pub(super) fn set_derivation(manifest: &Manifest) -> Option<SetDerivation> {
    let params = &manifest.params;
    if !params.store_sets {
        return None;
    }
    Some(if params.key_fingerprint.is_unkeyed() {
        SetDerivation::Unkeyed
    } else if manifest.format_version < MANIFEST_V3
        || manifest.features.contains(Features::SETS_KEYED_V2)
    {
        SetDerivation::KeyedV2Leaking
    } else {
        SetDerivation::Keyed
    })
}

/// How many standard deviations of the estimate below the threshold a candidate may fall and
/// still have its exact Jaccard computed.
pub const MARGIN_SIGMAS: f64 = 3.0;

/// The re-rank margin at threshold `t` for `k` slots stored at `bits` bits: `MARGIN_SIGMAS`
/// standard deviations of the b-bit estimate `(p̂ − c) / (1 − c)` at J = t, where
/// `p = c + (1 − c)·t` is the chance two slots agree, `c = 2^−bits` (0 at 64 bits) and
/// `Var(p̂) = p(1 − p)/k` (`format/hashing.md` §7).
pub fn rerank_margin(t: f64, k: usize, bits: u32) -> f64 {
    let c = if bits >= 64 {
        0.0
    } else {
        (-(bits as f64)).exp2()
    };
    let p = c + (1.0 - c) * t;
    let sd = (p * (1.0 - p) / k.max(1) as f64).sqrt() / (1.0 - c);
    MARGIN_SIGMAS * sd
}

/// Where the exact Jaccard decides at threshold `t`: estimates in `[gate, sure)`. Below
/// `gate` a candidate is dropped; at or above `sure` its estimate accepts it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct RerankWindow {
    pub(super) gate: f64,
    pub(super) sure: f64,
}

impl RerankWindow {
    pub(super) fn new(t: f64, k: usize, bits: u32) -> Self {
        let m = rerank_margin(t, k, bits);
        RerankWindow {
            gate: (t - m).max(0.0),
            sure: t + m,
        }
    }
}

/// Candidates re-ranked by one query from which their exact Jaccards are computed on every
/// core: one costs about 10 µs for two 4,000-shingle pages, handing work to another thread a
/// few.
const PARALLEL_RERANK: usize = 8;

/// How to split a query's `matched` candidates, `reranked` of them within the window, for a
/// parallel re-rank: `None` to stay on the calling thread (little to compute, or one thread),
/// else the chunk length, about four chunks per thread. Each candidate is decided on its own
/// and chunks are collected in order, so the answer is the serial one.
pub(super) fn rerank_chunk(matched: usize, reranked: usize) -> Option<usize> {
    let threads = rayon::current_num_threads();
    (reranked >= PARALLEL_RERANK && threads > 1).then(|| matched.div_ceil(threads * 4).max(1))
}

/// The exact Jaccard of `docno`'s stored set with the sorted `query` values, if it reaches
/// `threshold`; `None` when it does not, or no table holds the document. A stored set that
/// passes its checksum but does not decode is reported as corruption of the file that holds
/// it.
pub(super) fn exact_at_least(
    state: &State,
    docno: u64,
    query: &[u32],
    threshold: f64,
) -> Result<Option<f64>> {
    let Some(coded) = state.set_bytes(docno)? else {
        return Ok(None);
    };
    jaccard_coded_at_least(query, coded, threshold).map_err(|e| damaged_set(state, docno, coded, e))
}

/// The exact Jaccard of sorted distinct `query` values and a coded set, if it reaches
/// `threshold`: the set is decoded block by block while the answer is open (a set rejected
/// early is not decoded to its end; one cut short before the answer is known is an error).
fn jaccard_coded_at_least(
    query: &[u32],
    coded: &[u8],
    threshold: f64,
) -> std::result::Result<Option<f64>, SetDecodeError> {
    let mut values = CodedValues::new(coded)?;
    jaccard_blocks_at_least(query, values.count(), threshold, |block| {
        values.next_block(block)
    })
}

/// Decodes `docno`'s stored set into `out`; false when no table holds the document.
pub(super) fn decode_stored(state: &State, docno: u64, out: &mut Vec<u32>) -> Result<bool> {
    let Some(coded) = state.set_bytes(docno)? else {
        out.clear();
        return Ok(false);
    };
    decode_into(coded, out).map_err(|e| damaged_set(state, docno, coded, e))?;
    Ok(true)
}

/// Corruption of `docno`'s stored set `coded`, at the byte of its segment where decoding
/// failed.
fn damaged_set(state: &State, docno: u64, coded: &[u8], e: SetDecodeError) -> Error {
    let segment = state.version.segment_of(docno);
    let path = segment.map(|s| s.path.clone()).unwrap_or_default();
    let offset = segment
        .and_then(|s| s.seg.offset_of(coded))
        .map_or(0, |at| at + e.offset as u64);
    Error::corruption(
        &path,
        offset,
        format!("the shingle set of document {docno}: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The margin shrinks with more slots and wider fields, and stays a few hundredths at the
    /// defaults (so re-ranking looks at few candidates below the threshold).
    #[test]
    fn margin_follows_the_estimate_spread() {
        let m128 = rerank_margin(0.8, 128, 32);
        assert!((m128 - 3.0 * (0.16f64 / 128.0).sqrt()).abs() < 1e-6);
        assert!(rerank_margin(0.8, 256, 32) < m128);
        assert!(rerank_margin(0.8, 128, 1) > m128);
        assert!(rerank_margin(1.0, 128, 64) == 0.0);
    }

    /// A coded set decides as its values do, and damage is refused even where the merge
    /// would have accepted what it read.
    #[test]
    fn coded_sets_decide_as_their_values() {
        let values: Vec<u32> = (0..500u32).map(|v| v * 7_000_000).collect();
        let coded = crate::storage::shingle_codec::encode(&values);
        let half = &values[..250];
        for t in [0.0, 0.5, 1.0] {
            assert_eq!(
                jaccard_coded_at_least(half, &coded, t).unwrap(),
                (t <= 0.5).then_some(0.5),
                "t = {t}"
            );
        }
        assert_eq!(
            jaccard_coded_at_least(&values, &coded, 0.5).unwrap(),
            Some(1.0)
        );
        assert!(jaccard_coded_at_least(&values, &coded[..coded.len() - 1], 0.5).is_err());
        let mut longer = coded.clone();
        longer.push(0);
        assert!(jaccard_coded_at_least(&values, &longer, 0.5).is_err());
    }
}
