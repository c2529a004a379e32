//! A query's precision stage: each candidate's stored signature compared with the query's
//! ([`Verifier`]), then, with exact re-rank, the candidates whose estimate comes near the
//! threshold decided by their exact Jaccard ([`decide`], `rerank.rs`).

use std::time::Instant;

use rayon::prelude::*;

use super::params::IndexParams;
use super::query::{DEADLINE_EVERY, PARALLEL_CHUNK, QueryStats, check_deadline};
use super::rerank::{RerankWindow, exact_at_least, rerank_chunk};
use super::state::State;
use crate::Result;
use crate::sketch::bbit;

/// Distinct candidates from which one query's verification is spread over every core. Below,
/// handing work to the other threads costs more than it saves: waking a sleeping worker from a
/// caller outside the pool takes 0.1-0.3 ms on a 2-core machine, while verifying a candidate
/// takes ~50-150 ns, so a query of a few thousand candidates runs faster on its own thread
/// (measured: 3,600-candidate queries ran 1.4-1.9× faster one at a time with 8,192 here than
/// with 2,048).
pub(super) const PARALLEL_CANDIDATES: usize = 8192;

/// Matches between two looks at the deadline while re-ranking: an exact Jaccard intersects
/// two stored shingle sets, some microseconds each.
const RERANK_DEADLINE_EVERY: usize = 256;

/// A candidate whose estimate reached the verifier's gate.
#[derive(Clone, Copy, Debug)]
pub(super) struct Found<'a> {
    pub(super) docno: u64,
    /// The similarity estimated from the stored signature.
    pub(super) estimate: f64,
    /// Its key, when verification read it on the way.
    pub(super) key: Option<&'a [u8]>,
}

/// What verification found.
pub(super) struct Verified<'a> {
    /// Live candidates whose signature was compared.
    pub(super) compared: usize,
    /// The candidates at or above the gate, in the order of the candidates.
    pub(super) found: Vec<Found<'a>>,
}

/// A match decided.
#[derive(Clone, Copy, Debug)]
pub(super) struct Decided<'a> {
    pub(super) docno: u64,
    /// The similarity reported: exact when `exact`, else the estimate.
    pub(super) similarity: f64,
    /// The similarity estimated from the stored signature.
    pub(super) estimate: f64,
    /// Whether `similarity` was computed from the stored shingle sets.
    pub(super) exact: bool,
    /// Its key, when verification read it on the way.
    pub(super) key: Option<&'a [u8]>,
    /// A containment query's match: its Jaccard similarity (exact when `exact`).
    pub(super) jaccard: Option<f64>,
}

/// Verifies candidates against a query's packed signature.
pub(super) struct Verifier<'a> {
    state: &'a State,
    packed: &'a [u8],
    record_bytes: usize,
    k: usize,
    bits: u32,
    /// Candidates that cannot reach the gate are dropped as soon as that shows.
    min_equal: usize,
    /// The estimate a candidate must reach.
    gate: f64,
    /// Read each match's key as it is found (from the row the walk is on) rather than
    /// afterwards (a cold query prefetches the keys of all its matches first instead).
    keys_now: bool,
}

impl<'a> Verifier<'a> {
    /// A verifier of the query's `packed` signature against the documents of `state` (stored
    /// as `params` says), keeping candidates estimated at or above `gate`.
    pub(super) fn new(
        state: &'a State,
        packed: &'a [u8],
        params: &IndexParams,
        gate: f64,
        keys_now: bool,
    ) -> Self {
        let (k, bits) = (params.sketch.num_perm, params.bits);
        Verifier {
            state,
            packed,
            record_bytes: params.sig_bytes(),
            k,
            bits,
            min_equal: bbit::min_matches_for(gate, k, bits),
            gate,
            keys_now,
        }
    }

    /// Verifies `candidates` (ascending). A query with thousands of candidates is spread over
    /// every core; small ones stay on the calling thread (a batch already keeps the cores busy
    /// with whole queries). Past `deadline`, looked at before every [`DEADLINE_EVERY`]
    /// candidates (every [`PARALLEL_CHUNK`] on every core), it stops.
    pub(super) fn verify(
        &self,
        candidates: &[u64],
        deadline: Option<Instant>,
    ) -> Result<Verified<'a>> {
        const STAGE: &str = "verifying candidates";
        let mut verified = Verified {
            compared: 0,
            found: Vec::new(),
        };
        if candidates.len() < PARALLEL_CANDIDATES {
            for part in candidates.chunks(DEADLINE_EVERY) {
                check_deadline(deadline, STAGE)?;
                self.run(part, &mut verified)?;
            }
            return Ok(verified);
        }
        candidates
            .par_chunks(PARALLEL_CHUNK)
            .map(|chunk| {
                check_deadline(deadline, STAGE)?;
                let mut part = Verified {
                    compared: 0,
                    found: Vec::new(),
                };
                self.run(chunk, &mut part)?;
                Ok(part)
            })
            .try_reduce(
                || Verified {
                    compared: 0,
                    found: Vec::new(),
                },
                |mut a, b| {
                    a.found.extend(b.found);
                    a.compared += b.compared;
                    Ok(a)
                },
            )
    }

    /// [`Verifier::verify`] of `candidates` on the calling thread, adding to `verified`.
    fn run(&self, candidates: &[u64], verified: &mut Verified<'a>) -> Result<()> {
        // Committed documents are read segment by segment, each segment's run of candidates
        // walked in step with its rows (candidates are ascending): no search for the segment
        // or the whole doc table per candidate.
        let (in_segments, others) = self.state.split_committed(candidates);
        self.run_in_segments(in_segments, verified)?;
        self.run_one_by_one(others, verified)
    }

    /// Verifies `candidates` (ascending, all in segments) segment by segment.
    fn run_in_segments(&self, candidates: &[u64], verified: &mut Verified<'a>) -> Result<()> {
        let state = self.state;
        let Verified { compared, found } = verified;
        let prefetch_bytes = self.prefetch_bytes();
        let mut rest = candidates;
        let deletes = state.deletes_committed();
        for seg in &state.version.segments {
            let seg = &seg.seg;
            let end = rest.partition_point(|&d| d < seg.end_docno());
            let (run, after) = rest.split_at(end);
            rest = after;
            seg.for_each_signature(run, prefetch_bytes, |docno, row, stored| {
                if !(deletes && state.is_deleted(docno))
                    && let Some(estimate) = self.compare(stored, compared)
                {
                    let key = if self.keys_now {
                        Some(seg.key_at_row(row)?)
                    } else {
                        None
                    };
                    found.push(Found {
                        docno,
                        estimate,
                        key,
                    });
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Verifies `candidates` one by one (the in-memory tables', or a version-1 database's).
    fn run_one_by_one(&self, candidates: &[u64], verified: &mut Verified<'a>) -> Result<()> {
        let state = self.state;
        for &docno in candidates {
            if state.is_deleted(docno) {
                continue;
            }
            if let Some(stored) = state.signature_bytes(docno, self.record_bytes)?
                && let Some(estimate) = self.compare(stored, &mut verified.compared)
            {
                verified.found.push(Found {
                    docno,
                    estimate,
                    key: None,
                });
            }
        }
        Ok(())
    }

    /// The estimate of the candidate whose signature is `stored`, if it reaches the gate;
    /// counts the comparison in `compared`.
    #[inline]
    fn compare(&self, stored: &[u8], compared: &mut usize) -> Option<f64> {
        *compared += 1;
        match bbit::count_equal_packed_at_least(
            self.packed,
            stored,
            self.k,
            self.bits,
            self.min_equal,
        ) {
            Ok(Some(equal)) => Some(bbit::estimate_from_matches(equal, self.k, self.bits))
                .filter(|&estimate| estimate >= self.gate),
            _ => None,
        }
    }

    /// The bytes of a stored signature to prefetch. A comparison reads a signature's 64-byte
    /// blocks until more fields differ than the gate allows: the blocks a candidate differing
    /// in every field would need, and one more, are prefetched (a candidate shares a band with
    /// the query, so it is rarely that different: most need the next block too; not the whole
    /// signature, though: at a high threshold most candidates stop after a block or two).
    fn prefetch_bytes(&self) -> usize {
        let max_differing = self.k.saturating_sub(self.min_equal) + 1;
        let slots_per_block = (512 / self.bits.max(1) as usize).max(1);
        (max_differing.div_ceil(slots_per_block) + 1) * 64
    }
}

/// The matches among `found` at threshold `threshold`. Without exact re-rank (`query_set`
/// `None`) each is decided by its estimate. With it (`query_set` the query's sorted shingle
/// values, `found` gated at `window.gate`), a candidate estimated at or above `window.sure` is
/// accepted by its estimate, and the others by their exact Jaccard; `stats` counts them.
/// Past `deadline`, looked at every [`RERANK_DEADLINE_EVERY`] exact Jaccards, it stops.
pub(super) fn decide<'s>(
    state: &'s State,
    found: Vec<Found<'s>>,
    query_set: Option<&[u32]>,
    threshold: f64,
    window: RerankWindow,
    stats: &mut QueryStats,
    deadline: Option<Instant>,
) -> Result<Vec<Decided<'s>>> {
    let by_estimate = |f: &Found<'s>| Decided {
        docno: f.docno,
        similarity: f.estimate,
        estimate: f.estimate,
        exact: false,
        key: f.key,
        jaccard: None,
    };
    let Some(query_set) = query_set else {
        return Ok(found.iter().map(by_estimate).collect());
    };
    stats.exact = true;
    let sure = window.sure;
    stats.reranked = found.iter().filter(|f| f.estimate < sure).count();
    let rerank = |chunk: &[Found<'s>]| -> Result<Vec<Decided<'s>>> {
        let mut out = Vec::new();
        for (i, f) in chunk.iter().enumerate() {
            if i % RERANK_DEADLINE_EVERY == 0 {
                check_deadline(deadline, "re-ranking by exact Jaccard")?;
            }
            if f.estimate >= sure {
                out.push(by_estimate(f));
            } else if let Some(j) = exact_at_least(state, f.docno, query_set, threshold)? {
                out.push(Decided {
                    similarity: j,
                    exact: true,
                    ..by_estimate(f)
                });
            }
        }
        Ok(out)
    };
    match rerank_chunk(found.len(), stats.reranked) {
        Some(chunk) => Ok(found
            .par_chunks(chunk)
            .map(rerank)
            .collect::<Result<Vec<_>>>()?
            .concat()),
        None => rerank(&found),
    }
}
