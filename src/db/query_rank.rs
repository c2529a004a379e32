//! A query's answer: the decided matches given their keys, ranked best first (ties by key),
//! cut to the limit and copied out. Keys are resolved borrowed, not copied, and only the
//! matches kept are copied out: ranking borrowed 40-byte rows is cheaper than ranking owned
//! matches, and a `limit` then copies only what it keeps.

use rayon::prelude::*;

use super::metric::Metric;
use super::query::{Match, PARALLEL_CHUNK};
use super::query_verify::Decided;
use super::state::State;
use crate::Result;

/// Matches from which one query resolves its keys, and copies them out, on every core (a key
/// costs ~100 ns, a candidate's verification about as much: below this, handing work to the
/// other threads costs more than it saves, as for `PARALLEL_CANDIDATES`).
pub(super) const PARALLEL_MATCHES: usize = 4096;

/// A match with its key, before the key is copied out.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ranked<'a> {
    /// The similarity reported, in the index's metric.
    pub(super) similarity: f64,
    pub(super) key: &'a [u8],
    /// [`key_head`] of `key`.
    pub(super) key_head: u128,
    pub(super) estimate: f64,
    pub(super) exact: bool,
    pub(super) jaccard: Option<f64>,
}

/// The best `limit` (all without one) of the `decided` matches, ranked, their similarities in
/// `metric`. A match whose key no table holds any more is left out.
pub(super) fn ranked_matches<'s>(
    state: &'s State,
    decided: &[Decided<'s>],
    limit: Option<usize>,
    metric: Metric,
) -> Result<Vec<Match>> {
    let mut ranked = with_keys(state, decided)?;
    match limit {
        Some(limit) if limit < ranked.len() => {
            rank_best(&mut ranked, limit);
            ranked.truncate(limit);
        }
        _ => rank(&mut ranked),
    }
    let to_match = |r: &Ranked<'_>| Match {
        key: r.key.to_vec(),
        similarity: r.similarity,
        metric,
        estimate: r.estimate,
        distance: None,
        cosine: None,
        exact: r.exact,
        jaccard: r.jaccard,
    };
    Ok(if ranked.len() >= PARALLEL_MATCHES {
        ranked
            .par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(to_match)
            .collect()
    } else {
        ranked.iter().map(to_match).collect()
    })
}

/// The `decided` matches with their keys (read now unless verification read them).
fn with_keys<'s>(state: &'s State, decided: &[Decided<'s>]) -> Result<Vec<Ranked<'s>>> {
    let resolve = |d: &Decided<'s>| -> Result<Option<Ranked<'s>>> {
        let key = match d.key {
            Some(key) => Some(key),
            None => state.key_of(d.docno)?,
        };
        Ok(key.map(|key| Ranked {
            similarity: d.similarity,
            key,
            key_head: key_head(key),
            estimate: d.estimate,
            exact: d.exact,
            jaccard: d.jaccard,
        }))
    };
    if decided.len() >= PARALLEL_MATCHES {
        Ok(decided
            .par_chunks(PARALLEL_CHUNK)
            .map(|chunk| {
                chunk
                    .iter()
                    .filter_map(|d| resolve(d).transpose())
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?
            .concat())
    } else {
        decided
            .iter()
            .filter_map(|d| resolve(d).transpose())
            .collect()
    }
}

/// The first 16 bytes of `key` as a big-endian integer (zero-padded): two keys whose heads
/// differ are ordered as their heads are, so ranking compares whole keys only on equal heads
/// (a key that is a prefix of another pads with zeros, so the heads may tie, never invert).
pub(super) fn key_head(key: &[u8]) -> u128 {
    let mut head = [0u8; 16];
    let n = key.len().min(16);
    if let (Some(to), Some(from)) = (head.get_mut(..n), key.get(..n)) {
        to.copy_from_slice(from);
    }
    u128::from_be_bytes(head)
}

/// Orders matches best first, ties by key (live keys are unique, so the order is total). The
/// similarity is sorted on as an integer first; then only runs of equal similarity (estimates
/// are counts of equal slots, so a hot query's matches share a few hundred values) compare
/// keys.
pub(super) fn rank(ranked: &mut [Ranked<'_>]) {
    ranked.sort_unstable_by_key(|r| std::cmp::Reverse(total_order_key(r.similarity)));
    for run in ranked.chunk_by_mut(|a, b| a.similarity.to_bits() == b.similarity.to_bits()) {
        if run.len() > 1 {
            run.sort_unstable_by(key_order);
        }
    }
}

/// Puts the best `limit` of `ranked` first, in the order [`rank`] gives; the others follow
/// in no order. They are selected before they are sorted: a query that keeps ten of
/// thousands of matches does not sort them all.
pub(super) fn rank_best(ranked: &mut [Ranked<'_>], limit: usize) {
    if limit == 0 || limit >= ranked.len() {
        return rank(ranked);
    }
    ranked.select_nth_unstable_by(limit - 1, |a, b| {
        total_order_key(b.similarity)
            .cmp(&total_order_key(a.similarity))
            .then_with(|| key_order(a, b))
    });
    if let Some(best) = ranked.get_mut(..limit) {
        rank(best);
    }
}

/// Matches of equal similarity by key: heads first, whole keys only when the heads tie.
fn key_order(a: &Ranked<'_>, b: &Ranked<'_>) -> std::cmp::Ordering {
    a.key_head.cmp(&b.key_head).then_with(|| a.key.cmp(b.key))
}

/// An integer in the order of [`f64::total_cmp`].
fn total_order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}
