//! Top-k queries: the K most similar documents, ranked, without a threshold (the shape of
//! Milvus's `refine_k`), down to a similarity floor.
//!
//! Two stages. First the bands: every document sharing a band key with the query is scored.
//! The bands find a document of Jaccard s with probability `P(s) = 1 − (1 − s^r)^b`, so their
//! answer is trusted only when its K-th best score is at or above the *band-reliable
//! similarity*: the least s with `P(s) ≥ 0.99` (0.842 for the default 13 bands × 7 rows).
//! Otherwise — fewer than K candidates reach that — the query probes further, and the probe
//! is exhaustive: every live stored signature is scored against the floor.
//!
//! Why not multi-probe LSH (Lv et al., "Multi-Probe LSH: Efficient Indexing for
//! High-Dimensional Similarity Search", VLDB 2007) or an LSH Forest (Bawa et al., "LSH Forest:
//! Self-Tuning Indexes for Similarity Search", WWW 2005)? Both were weighed against the floor
//! of J = 0.3 the index promises. A band key is a hash of all r slot values, so the stored
//! buckets have no notion of a *near* bucket: multi-probe for MinHash can only guess another
//! value for one slot (the query's next-smallest hash in that bin), which matches the other
//! document's slot with probability about s(1 − s)/2. With 7 rows that lifts one band's
//! P(0.5) from 0.008 to 0.021, and the default 13 bands' from 0.10 to 0.25: far from finding
//! the documents at 0.3–0.6 a top-k query wants. An LSH Forest needs keys whose prefixes are
//! prefixes of the rows (a prefix tree per band); mhdb's band keys are one 64-bit hash of the
//! whole band (`format/hashing.md` §8), so shorter prefixes would be a new index, a format
//! change. Scoring every stored signature is exact in the estimate, costs one pass over the
//! signatures (2.5 MB for 10,000 documents at the default 256 bytes), and is only taken by
//! queries that have fewer than K neighbours the bands can be trusted for.
//!
//! Every candidate, from either stage, is scored by ONE function (`Scorer`): today the
//! b-bit estimate over all k_v slots; exact Jaccard when shingle sets are stored.

use std::time::Instant;

use rayon::prelude::*;

use super::Db;
use super::metric::Metric;
use super::query::{DEADLINE_EVERY, Match, QueryResult, QueryStats, check_deadline};
use super::rerank::{RerankWindow, exact_at_least};

use super::state::State;
use crate::sketch::{LshParams, bbit};
use crate::{Error, Result};

/// The lowest similarity a top-k query reports unless the caller gives another floor.
pub const TOP_K_FLOOR: f64 = 0.3;

/// The bands are trusted for similarities they find with at least this probability.
const BAND_RELIABLE_PROBABILITY: f64 = 0.99;

/// Documents per parallel task of the exhaustive probe.
const SCAN_CHUNK: usize = 1024;

/// Candidates whose exact Jaccard an exact top-k computes between two raises of its bar.
const EXACT_ROUND: usize = 16;

/// Scores one candidate: `Ok(Some(similarity))` when document `docno` is live and at least
/// `at_least` similar to the query, `Ok(None)` otherwise (deleted, absent, or less similar).
/// `at_least` lets the scorer stop early on a hopeless candidate.
pub(super) type Scorer<'a> = dyn Fn(u64, f64) -> Result<Option<f64>> + Sync + 'a;

/// What a top-k query asks.
#[derive(Clone, Copy, Debug)]
pub(super) struct TopK {
    /// How many documents: K.
    pub k: usize,
    /// The least similarity reported.
    pub floor: f64,
    /// When to stop ([`QueryOptions::deadline`](super::QueryOptions::deadline)).
    pub deadline: Option<Instant>,
}

/// The least similarity s (to 0.001) at which `lsh` makes a pair a candidate with probability
/// at least 0.99.
pub fn band_reliable_similarity(lsh: &LshParams) -> f64 {
    (0..=1000)
        .map(|i| f64::from(i) / 1000.0)
        .find(|&s| lsh.probability(s) >= BAND_RELIABLE_PROBABILITY)
        .unwrap_or(1.0)
}

impl Db {
    /// The `ask.k` live documents most similar to the query (band keys `band_keys`, packed
    /// signature `packed`), at least `ask.floor` similar, best first (ties by key).
    pub(super) fn run_top_k(
        &self,
        state: &State,
        band_keys: &[u64],
        packed: &[u8],
        ask: TopK,
        exact: Option<&[u32]>,
    ) -> Result<QueryResult> {
        let floor = ask.floor;
        if !(0.0..=1.0).contains(&floor) {
            return Err(Error::invalid(
                "threshold",
                format!("a top-k floor must be in [0, 1], got {floor}"),
            ));
        }
        let estimate = self.estimate_scorer(state, packed);
        let Some(query_set) = exact else {
            return self.top_k_with(state, band_keys, ask, &estimate);
        };
        self.exact_top_k(state, band_keys, ask, query_set, &estimate)
    }

    /// Top-k ranked by exact Jaccard from stored sets. The stages are those of
    /// [`Db::top_k_with`]; within each, candidates are estimated first (one pass over their
    /// signatures), then their exact Jaccards are computed best estimate first against a
    /// rising bar: once K documents are known at least J_K similar, a candidate must reach
    /// J_K (its exact intersection stops as soon as it cannot), and one whose estimate is
    /// below J_K less the re-rank margin is not computed at all (the rule that keeps a
    /// candidate estimated below the floor out, `rerank.rs`). Candidates are taken
    /// [`EXACT_ROUND`] at a time, computed on every core, and the bar rises between rounds
    /// only, so the answer does not depend on the thread count.
    fn exact_top_k(
        &self,
        state: &State,
        band_keys: &[u64],
        ask: TopK,
        query_set: &[u32],
        estimate: &Scorer<'_>,
    ) -> Result<QueryResult> {
        let TopK { k, floor, deadline } = ask;
        let mut stats = QueryStats {
            segments: state.version.segments.len(),
            exact: true,
            ..QueryStats::default()
        };
        if k == 0 {
            return Ok(QueryResult {
                matches: Vec::new(),
                stats,
            });
        }
        let (slots, bits) = (self.params.sketch.num_perm, self.params.bits);
        let gate = |bar: f64| RerankWindow::new(bar, slots, bits).gate;
        let rank = |docnos: &[u64], stats: &mut QueryStats| -> Result<ExactRanking> {
            let estimated = score_all(docnos, gate(floor), estimate, deadline)?;
            let mut estimates = estimated.clone();
            estimates.sort_unstable_by_key(|&(docno, _)| docno);
            let (best, computed) =
                exact_best(state, query_set, estimated, k, floor, &gate, deadline)?;
            stats.reranked += computed;
            Ok(ExactRanking { best, estimates })
        };
        let candidates = band_candidates(state, band_keys, deadline)?;
        stats.candidates = candidates.len();
        stats.verified = candidates.len();
        let mut ranking = rank(&candidates, &mut stats)?;
        let reliable = band_reliable_similarity(&self.params.lsh).max(floor);
        if kth_best(&mut ranking.best, k).is_none_or(|s| s < reliable) {
            let live = live_docnos(state, deadline)?;
            stats.probed_all(live.len());
            stats.reranked = 0;
            ranking = rank(&live, &mut stats)?;
        }
        let ExactRanking { best, estimates } = ranking;
        let estimate_of = |docno: u64, exact: f64| {
            estimates
                .binary_search_by_key(&docno, |&(d, _)| d)
                .ok()
                .and_then(|i| estimates.get(i))
                .map_or(exact, |&(_, e)| e)
        };
        let mut matches = best_by_key(state, best, k, &estimate_of)?;
        for m in &mut matches {
            m.exact = true;
        }
        Ok(QueryResult { matches, stats })
    }

    /// The b-bit estimate over all k_v slots of the stored signature.
    fn estimate_scorer<'a>(
        &self,
        state: &'a State,
        packed: &'a [u8],
    ) -> impl Fn(u64, f64) -> Result<Option<f64>> + Sync + 'a {
        let (slots, bits) = (self.params.sketch.num_perm, self.params.bits);
        let record_bytes = self.params.sig_bytes();
        move |docno, at_least| {
            if state.is_deleted(docno) {
                return Ok(None);
            }
            let Some(stored) = state.signature_bytes(docno, record_bytes)? else {
                return Ok(None);
            };
            let min_equal = bbit::min_matches_for(at_least, slots, bits);
            let Some(equal) =
                bbit::count_equal_packed_at_least(packed, stored, slots, bits, min_equal)?
            else {
                return Ok(None);
            };
            let s = bbit::estimate_from_matches(equal, slots, bits);
            Ok((s >= at_least).then_some(s))
        }
    }

    /// Top-k with any scorer: the bands first, then (if they cannot be trusted for K) every
    /// live document.
    pub(super) fn top_k_with(
        &self,
        state: &State,
        band_keys: &[u64],
        ask: TopK,
        score: &Scorer<'_>,
    ) -> Result<QueryResult> {
        let TopK { k, floor, deadline } = ask;
        let mut stats = QueryStats {
            segments: state.version.segments.len(),
            ..QueryStats::default()
        };
        if k == 0 {
            return Ok(QueryResult {
                matches: Vec::new(),
                stats,
            });
        }
        let candidates = band_candidates(state, band_keys, deadline)?;
        stats.candidates = candidates.len();
        let mut scored = score_all(&candidates, floor, score, deadline)?;
        stats.verified = candidates.len();
        let reliable = band_reliable_similarity(&self.params.lsh).max(floor);
        if kth_best(&mut scored, k).is_none_or(|s| s < reliable) {
            // The bands cannot be trusted for K: score every live document.
            let live = live_docnos(state, deadline)?;
            stats.probed_all(live.len());
            scored = score_all(&live, floor, score, deadline)?;
        }
        check_deadline(deadline, "ranking matches")?;
        let matches = best_by_key(state, scored, k, &|_, estimate| estimate)?;
        Ok(QueryResult { matches, stats })
    }
}

impl QueryStats {
    /// The exhaustive probe scored `live` documents: each was a candidate, and verified, since
    /// that pass, not the bands, decided the answer.
    fn probed_all(&mut self, live: usize) {
        self.probed = live;
        self.candidates = live;
        self.verified = live;
    }
}

/// One stage's candidates ranked for an exact top-k.
struct ExactRanking {
    /// The exact Jaccards, as (docno, similarity), of the candidates that can be among the
    /// best.
    best: Vec<(u64, f64)>,
    /// Every candidate's estimate, as (docno, estimate), by docno (reported beside the exact
    /// value).
    estimates: Vec<(u64, f64)>,
}

/// The distinct docnos sharing a band bucket with the query.
fn band_candidates(
    state: &State,
    band_keys: &[u64],
    deadline: Option<Instant>,
) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for (band, &bk) in band_keys.iter().enumerate() {
        check_deadline(deadline, "gathering candidates")?;
        state.mem.bucket_into(band, bk, &mut out);
        if let Some(imm) = &state.imm {
            imm.bucket_into(band, bk, &mut out);
        }
        for seg in &state.version.segments {
            seg.seg.postings_into(band, bk, &mut out)?;
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Every live docno, ascending.
fn live_docnos(state: &State, deadline: Option<Instant>) -> Result<Vec<u64>> {
    const STAGE: &str = "listing every document";
    let mut out = Vec::new();
    for seg in &state.version.segments {
        check_deadline(deadline, STAGE)?;
        for (i, doc) in seg.seg.docs().enumerate() {
            if i % DEADLINE_EVERY == DEADLINE_EVERY - 1 {
                check_deadline(deadline, STAGE)?;
            }
            let (docno, _) = doc?;
            if !state.is_deleted(docno) {
                out.push(docno);
            }
        }
    }
    for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
        out.extend(
            table
                .live_docs()
                .map(|(d, _)| d)
                .filter(|&d| !state.is_deleted(d)),
        );
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `(docno, similarity)` of the documents of `docnos` at least `floor` similar, on every
/// core; stopped past `deadline` (looked at every [`SCAN_CHUNK`] documents).
fn score_all(
    docnos: &[u64],
    floor: f64,
    score: &Scorer<'_>,
    deadline: Option<Instant>,
) -> Result<Vec<(u64, f64)>> {
    let one = |chunk: &[u64]| -> Result<Vec<(u64, f64)>> {
        check_deadline(deadline, "scoring candidates")?;
        let mut out = Vec::new();
        for &d in chunk {
            if let Some(s) = score(d, floor)? {
                out.push((d, s));
            }
        }
        Ok(out)
    };
    if docnos.len() <= SCAN_CHUNK {
        return one(docnos);
    }
    Ok(docnos
        .par_chunks(SCAN_CHUNK)
        .map(one)
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect())
}

/// The exact Jaccards of the `estimated` candidates (docno, estimate) that can be among the
/// best `k`, at least `floor`, and how many were computed: best estimate first, in rounds of
/// [`EXACT_ROUND`], each against the bar the rounds before set (the k-th best exact value so
/// far, at least `floor`); candidates estimated below `gate(bar)` are not computed. Stopped
/// past `deadline`, looked at every round.
fn exact_best(
    state: &State,
    query_set: &[u32],
    mut estimated: Vec<(u64, f64)>,
    k: usize,
    floor: f64,
    gate: &(dyn Fn(f64) -> f64 + Sync),
    deadline: Option<Instant>,
) -> Result<(Vec<(u64, f64)>, usize)> {
    estimated.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let (mut found, mut computed, mut bar) = (Vec::new(), 0usize, floor);
    for round in estimated.chunks(EXACT_ROUND) {
        check_deadline(deadline, "re-ranking by exact Jaccard")?;
        let least = gate(bar);
        let due: Vec<u64> = round
            .iter()
            .take_while(|&&(_, e)| e >= least)
            .map(|&(d, _)| d)
            .collect();
        if due.is_empty() {
            // Estimates only fall from here on.
            break;
        }
        computed += due.len();
        let one = |&docno: &u64| -> Result<Option<(u64, f64)>> {
            Ok(exact_at_least(state, docno, query_set, bar)?.map(|j| (docno, j)))
        };
        let exact: Vec<Option<(u64, f64)>> = if rayon::current_num_threads() > 1 {
            due.par_iter().map(one).collect::<Result<_>>()?
        } else {
            due.iter().map(one).collect::<Result<_>>()?
        };
        found.extend(exact.into_iter().flatten());
        if let Some(kth) = kth_best(&mut found, k) {
            bar = bar.max(kth);
        }
    }
    Ok((found, computed))
}

/// The k-th best similarity of `scored` (reordering it), if it has k entries.
fn kth_best(scored: &mut [(u64, f64)], k: usize) -> Option<f64> {
    if k == 0 || scored.len() < k {
        return None;
    }
    let (_, kth, _) = scored.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
    Some(kth.1)
}

/// The best `k` of `scored` as matches, best first, ties broken by key: every document tied
/// with the k-th best has its key read, so the cut at k is by key too. `estimate_of(docno,
/// score)` is the signature estimate reported beside the score.
fn best_by_key(
    state: &State,
    mut scored: Vec<(u64, f64)>,
    k: usize,
    estimate_of: &dyn Fn(u64, f64) -> f64,
) -> Result<Vec<Match>> {
    if let Some(kth) = kth_best(&mut scored, k) {
        scored.retain(|&(_, s)| s >= kth);
    }
    let mut matches = Vec::with_capacity(scored.len());
    for (docno, similarity) in scored {
        if let Some(key) = state.key_of(docno)? {
            matches.push(Match {
                key: key.to_vec(),
                similarity,
                // Top-k runs in MinHash indexes only (a SimHash index answers its top-k as a
                // query within its Hamming reach, `simhash.rs`).
                metric: Metric::Jaccard,
                estimate: estimate_of(docno, similarity),
                distance: None,
                cosine: None,
                exact: false,
                jaccard: None,
            });
        }
    }
    matches.sort_unstable_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then_with(|| a.key.cmp(&b.key))
    });
    matches.truncate(k);
    Ok(matches)
}
