//! Queries: what a query asks for and answers, one at a time or as a batch (streams of
//! queries are in `query_stream.rs`, top-k in `top_k.rs`). A threshold query runs in stages,
//! each in its own module: band keys → candidates (`query_gather.rs`, the recall stage, with
//! the bucket cap in `query_cap.rs` and cold page cache detection in `query_cold.rs`) →
//! verification against stored signatures and exact re-rank (`query_verify.rs`, the precision
//! stage) → keys and ranking (`query_rank.rs`).

use std::borrow::Cow;
use std::time::Instant;

use rayon::prelude::*;

use super::Db;
use super::metric::Metric;
use super::query_cold::prefetch_keys;
use super::query_gather::{Gathered, gather, give_back};
use super::query_rank::ranked_matches;
use super::query_verify::{Verifier, decide};
use super::rerank::RerankWindow;
use super::state::State;
use super::top_k::TopK;
use crate::sketch::{Signature, bbit};
use crate::{Error, Result};

/// Candidates (or matches) per parallel task.
pub(super) const PARALLEL_CHUNK: usize = 512;

/// What a query asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryOptions {
    /// Minimum estimated Jaccard of a match; `None` uses the database's threshold.
    pub threshold: Option<f64>,
    /// Keep only the best `limit` matches of those at or above the threshold; `None` keeps
    /// all.
    pub limit: Option<usize>,
    /// In an index that stores shingle sets, skip the exact re-rank: matches are decided and
    /// reported by the signature estimate alone (as in an index without sets).
    pub estimate_only: bool,
    /// Top-k: the `top` most similar documents, best first, without a threshold: down to
    /// `threshold` when one is given, else to [`TOP_K_FLOOR`](super::TOP_K_FLOOR). Probes
    /// beyond the bands when they cannot be trusted for `top` documents (see `db/top_k.rs`).
    pub top: Option<usize>,
    /// When the query must have ended: past it, the query stops at its next check (between
    /// stages, and every few thousand postings or candidates within one, over every shard)
    /// and returns [`Error::DeadlineExceeded`]. `None` runs it to the end. A batch or stream
    /// holds every query to the same instant.
    pub deadline: Option<Instant>,
    /// A containment query (containment index only): the matches are the documents X holding
    /// at least this fraction of the query Q, `|Q ∩ X| / |Q| ≥ c`, reported in the
    /// containment metric with their Jaccard beside it. `threshold` is then not used. With
    /// `top`, the floor of a top-k by containment (else [`TOP_K_FLOOR`](super::TOP_K_FLOOR)):
    /// a containment index answers top-k by containment.
    pub containment: Option<f64>,
    /// A containment query decided by estimate (no stored sets, or `estimate_only`): about the
    /// probability with which a document holding exactly the threshold's share of the query is
    /// kept, in (0, 1) ([`EstimateRule`](crate::sketch::containment::EstimateRule)). `None`:
    /// 0.5, a document is kept when its estimate reaches the threshold. Higher keeps more of
    /// the true matches and more false ones; the matches keep their estimates, some below the
    /// threshold. Refused on an index of another metric.
    pub containment_recall: Option<f64>,
}

/// Postings gathered, or candidates verified or scored, between two looks at the deadline:
/// a few hundred microseconds of work, against ~25 ns for reading the clock.
pub(super) const DEADLINE_EVERY: usize = 4096;

/// [`Error::DeadlineExceeded`] at `stage` if `deadline` has passed.
#[inline]
pub(super) fn check_deadline(deadline: Option<Instant>, stage: &'static str) -> Result<()> {
    match deadline {
        Some(d) if Instant::now() >= d => Err(Error::DeadlineExceeded { stage }),
        _ => Ok(()),
    }
}

/// What bounds a threshold query's answer besides its threshold.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Bounds {
    /// Keep only the best this many matches.
    pub limit: Option<usize>,
    /// Stop at this instant ([`QueryOptions::deadline`]).
    pub deadline: Option<Instant>,
}

impl Bounds {
    /// The bounds of an answer whose top-k is its first k matches (a SimHash index's, a
    /// containment index's): `top` cut further by `limit`, and the deadline.
    pub(super) fn ranked(opts: &QueryOptions) -> Bounds {
        Bounds {
            limit: match (opts.top, opts.limit) {
                (Some(k), Some(l)) => Some(k.min(l)),
                (top, limit) => top.or(limit),
            },
            deadline: opts.deadline,
        }
    }
}

/// One match.
#[derive(Clone, Debug, PartialEq)]
pub struct Match {
    /// The stored key.
    pub key: Vec<u8>,
    /// The similarity to the query, in `metric`. Jaccard: exact, from the stored shingle
    /// sets, when [`Match::exact`], otherwise the estimate from the signatures. Cosine: the
    /// estimate `cos(π·distance/64)`, as in `cosine`.
    pub similarity: f64,
    /// The metric `similarity` is in: the index's ([`IndexParams::metric`](super::IndexParams::metric)).
    pub metric: Metric,
    /// The similarity estimated from the stored signature: the b-bit Jaccard estimate
    /// (Jaccard), or the cosine estimate, as `similarity` (cosine).
    pub estimate: f64,
    /// SimHash index: the Hamming distance between the fingerprints (`None` for MinHash).
    pub distance: Option<u32>,
    /// SimHash index: the cosine estimate `cos(π·distance/64)` (`None` for MinHash).
    pub cosine: Option<f64>,
    /// True when `similarity` is an exact Jaccard: the query was re-ranked and this match's
    /// estimate came within the re-rank margin of the threshold (above it, the estimate alone
    /// decides, wrongly with probability below 0.14 %, and is what is reported). A
    /// containment query on an index that stores sets reports every match exactly.
    pub exact: bool,
    /// A containment query ([`QueryOptions::containment`]): the Jaccard similarity of the
    /// match, exact when `exact`, else the estimate from the signatures; `None` otherwise.
    pub jaccard: Option<f64>,
}

/// Where a query spent its effort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Distinct candidate documents gathered from band buckets; for a top-k query whose
    /// exhaustive probe ran, the live documents it scored (every one was a candidate).
    pub candidates: usize,
    /// Candidates whose signature was compared (live ones).
    pub verified: usize,
    /// Band buckets hit that were capped (cut to the bucket cap when a segment was written, or
    /// here, where every source together held more): their lists are truncated.
    pub hot_buckets: usize,
    /// Segments probed.
    pub segments: usize,
    /// True when the query was re-ranked: candidates near the threshold were decided by the
    /// exact Jaccard of stored shingle sets.
    pub exact: bool,
    /// Candidates whose exact Jaccard was computed (their estimate came within the re-rank
    /// margin of the threshold, either side, `rerank.rs`).
    pub reranked: usize,
    /// Top-k only: live documents scored by the exhaustive probe (0 when the bands sufficed).
    pub probed: usize,
}

/// Matches, best first (ties by key), and diagnostics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryResult {
    /// The matches.
    pub matches: Vec<Match>,
    /// Diagnostics.
    pub stats: QueryStats,
}

/// A query's packed signature, or the slots to pack it from: packed only once a candidate is
/// to be compared, as most queries of a dedup-at-ingest workload find none.
#[derive(Clone, Copy)]
pub(super) enum QueryPacked<'a> {
    Packed(&'a [u8]),
    Slots(&'a [u64]),
}

impl<'a> QueryPacked<'a> {
    /// The packed signature, records of `bits` bits.
    fn get(self, bits: u32) -> Result<Cow<'a, [u8]>> {
        Ok(match self {
            QueryPacked::Packed(p) => Cow::Borrowed(p),
            QueryPacked::Slots(slots) => Cow::Owned(bbit::pack(slots, bits)?),
        })
    }
}

/// A query's band keys and packed signature, computed already (by a writer that stores the
/// document when the query finds nothing).
#[derive(Clone, Copy)]
pub(super) struct Banded<'a> {
    pub band_keys: &'a [u64],
    pub packed: &'a [u8],
}

impl Db {
    /// [`Db::query`] on a MinHash index.
    pub(super) fn query_signature(
        &self,
        state: &State,
        sig: &Signature,
        banded: Option<Banded<'_>>,
        opts: &QueryOptions,
    ) -> Result<QueryResult> {
        let threshold = opts.threshold.unwrap_or(self.params.threshold);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(Error::invalid(
                "threshold",
                format!("must be in [0, 1], got {threshold}"),
            ));
        }
        self.check_signature(sig)?;
        if sig.is_empty_set() {
            return Ok(QueryResult::default());
        }
        let (band_keys, packed) = match banded {
            Some(b) => (Cow::Borrowed(b.band_keys), QueryPacked::Packed(b.packed)),
            None => (
                Cow::Owned(self.sketcher.band_keys(sig)?),
                QueryPacked::Slots(sig.slots()),
            ),
        };
        let exact = self.exact_query_set(sig, opts);
        if let Some(k) = opts.top {
            let ask = TopK {
                k,
                floor: opts.threshold.unwrap_or(super::TOP_K_FLOOR),
                deadline: opts.deadline,
            };
            let packed = packed.get(self.params.bits)?;
            let mut result = self.run_top_k(state, &band_keys, &packed, ask, exact)?;
            result.matches.truncate(opts.limit.unwrap_or(usize::MAX));
            return Ok(result);
        }
        let bounds = Bounds {
            limit: opts.limit,
            deadline: opts.deadline,
        };
        self.run_query(state, &band_keys, packed, threshold, exact, bounds)
    }

    /// The query's shingle-set values when its answer is to be exact (an index that stores
    /// sets, unless `estimate_only`): a query by bare signature has none, and is estimated.
    pub(super) fn exact_query_set<'s>(
        &self,
        sig: &'s Signature,
        opts: &QueryOptions,
    ) -> Option<&'s [u32]> {
        sig.shingle_set()
            .filter(|_| self.params.store_sets && !opts.estimate_only)
            .map(|s| s.values())
    }

    /// Documents similar to `text`.
    pub fn query_text(&self, text: &str, opts: &QueryOptions) -> Result<QueryResult> {
        self.query(&self.sketch_query_text(text)?, opts)
    }

    /// Many queries, answered on every core.
    pub fn query_batch(&self, sigs: &[Signature], opts: &QueryOptions) -> Result<Vec<QueryResult>> {
        sigs.par_iter().map(|s| self.query(s, opts)).collect()
    }

    /// A threshold query's stages: candidates gathered from the band buckets (none: the answer is
    /// empty, and nothing else is computed), verified against the query's `packed` signature (and,
    /// with the query's shingle set `exact`, re-ranked near the threshold), then given their keys
    /// and ranked, each stage stopped by the deadline of `bounds`.
    pub(super) fn run_query(
        &self,
        state: &State,
        band_keys: &[u64],
        packed: QueryPacked<'_>,
        threshold: f64,
        exact: Option<&[u32]>,
        bounds: Bounds,
    ) -> Result<QueryResult> {
        let gathered = gather(state, 0, band_keys, self.params.bucket_cap, bounds.deadline)?;
        self.answer_gathered(state, gathered, packed, threshold, exact, bounds)
    }

    /// [`Db::run_query`] from its candidates on.
    pub(super) fn answer_gathered(
        &self,
        state: &State,
        gathered: Gathered,
        packed: QueryPacked<'_>,
        threshold: f64,
        exact: Option<&[u32]>,
        bounds: Bounds,
    ) -> Result<QueryResult> {
        let version = &state.version;
        let deadline = bounds.deadline;
        let candidates = gathered.docnos;
        let mut stats = QueryStats {
            candidates: candidates.len(),
            hot_buckets: gathered.hot_buckets,
            segments: version.segments.len(),
            exact: exact.is_some(),
            ..QueryStats::default()
        };
        if candidates.is_empty() {
            give_back(candidates);
            check_deadline(deadline, "ranking matches")?;
            return Ok(QueryResult {
                matches: Vec::new(),
                stats,
            });
        }
        if gathered.cold {
            // Verification will read these candidates' signatures and (for matches) doc-table
            // entries: start those reads together, each candidate once.
            version.prefetch_documents(&candidates, self.params.sig_bytes());
        }
        // With exact re-rank, candidates within the margin below the threshold are kept for
        // their exact Jaccard to decide.
        let window = RerankWindow::new(threshold, self.params.sketch.num_perm, self.params.bits);
        let gate = if exact.is_some() {
            window.gate
        } else {
            threshold
        };
        let packed = packed.get(self.params.bits)?;
        let verifier = Verifier::new(state, &packed, &self.params, gate, !gathered.cold);
        let verified = verifier.verify(&candidates, deadline);
        give_back(candidates);
        let verified = verified?;
        stats.verified = verified.compared;
        let decided = decide(
            state,
            verified.found,
            exact,
            threshold,
            window,
            &mut stats,
            deadline,
        )?;
        check_deadline(deadline, "ranking matches")?;
        if gathered.cold && decided.len() > 1 {
            prefetch_keys(version, decided.iter().map(|d| d.docno));
        }
        // A containment index answers a threshold query in Jaccard.
        let metric = match self.params.metric() {
            Metric::Containment => Metric::Jaccard,
            metric => metric,
        };
        let matches = ranked_matches(state, &decided, bounds.limit, metric)?;
        Ok(QueryResult { matches, stats })
    }
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
