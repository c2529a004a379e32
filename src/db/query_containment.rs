//! Queries of a containment index (`format/containment.md` §3, §4). Every size class whose
//! documents could hold enough of the query is probed with the bands that the class's implied
//! Jaccard threshold needs; a containment query keeps the candidates whose containment,
//! estimated from the signatures and the two set sizes (or exact, from stored sets), reaches
//! its threshold, and a Jaccard query verifies its candidates as any MinHash index does.

use std::time::Instant;

use rayon::prelude::*;

use super::Db;
use super::metric::Metric;
use super::query::{
    Bounds, DEADLINE_EVERY, PARALLEL_CHUNK, QueryOptions, QueryPacked, QueryResult, QueryStats,
    check_deadline,
};
use super::query_gather::{Gathered, gather_probes, give_back};
use super::query_rank::ranked_matches;
use super::query_verify::{Decided, PARALLEL_CANDIDATES};
use super::rerank::decode_stored;
use super::state::State;
use crate::sketch::containment::{
    ClassProbe, EXACT_WINDOW_SIGMAS, EstimateRule, MAX_CLASS, class_lower_bound, class_upper_bound,
    estimate_containment, jaccard_floor, size_class, surely_below,
};
use crate::sketch::probe_planner::ProbePlanner;
use crate::sketch::set_intersect::common_count;
use crate::sketch::{ClassBanding, Signature, bbit};
use crate::{Error, Result};

/// Candidates judged between two looks at the deadline when stored sets decide.
const EXACT_DEADLINE_EVERY: usize = 256;

/// The largest class a stored document can have: set sizes are stored as u32.
fn largest_class() -> u8 {
    size_class(u64::from(u32::MAX)).min(MAX_CLASS)
}

impl Db {
    /// [`Db::query`] on a containment index: by containment when `opts.containment` is given
    /// or no `threshold` is (then at the index's threshold), else by Jaccard.
    pub(super) fn query_classes(
        &self,
        state: &State,
        sig: &Signature,
        (classes, planner): (&ClassBanding, &ProbePlanner),
        opts: &QueryOptions,
    ) -> Result<QueryResult> {
        self.check_signature(sig)?;
        let containment = match (opts.containment, opts.threshold, opts.top) {
            (_, Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "threshold",
                    "top-k on a containment index is by containment: give its floor as the \
                     containment, not a threshold",
                ));
            }
            (Some(c), _, _) => Some(c),
            // Top-k: the best documents down to the floor every top-k query has.
            (None, None, Some(_)) => Some(super::TOP_K_FLOOR),
            (None, None, None) => Some(self.params.threshold),
            (None, Some(_), None) => None,
        };
        if let Some(t) = containment.or(opts.threshold)
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(Error::invalid(
                "threshold",
                format!("must be in (0, 1], got {t}"),
            ));
        }
        let rule = match (opts.containment_recall, containment) {
            (None, _) => EstimateRule::default(),
            (Some(r), Some(_)) => EstimateRule::for_recall(r)?,
            (Some(_), None) => {
                return Err(Error::invalid(
                    "recall",
                    "applies to a containment query; a Jaccard query (a threshold) keeps the \
                     documents whose estimate reaches it",
                ));
            }
        };
        if sig.is_empty_set() {
            return Ok(QueryResult::default());
        }
        let q = query_size(sig)?;
        // Top-k keeps the best k of the matches at or above the containment floor.
        let bounds = Bounds::ranked(opts);
        let exact = self.exact_query_set(sig, opts);
        match (containment, opts.threshold) {
            (Some(t), _) => {
                let probes = planner.plan(t, q, populated(state)?)?;
                let gathered = self.gather_classes(state, sig, classes, &probes, bounds)?;
                let decide = Decide { q, t, exact, rule };
                self.answer_containment(state, gathered, sig, decide, bounds)
            }
            (None, Some(t)) => {
                let probes = jaccard_probes(t, q, planner, populated(state)?);
                let gathered = self.gather_classes(state, sig, classes, &probes, bounds)?;
                let packed = QueryPacked::Slots(sig.slots());
                self.answer_gathered(state, gathered, packed, t, exact, bounds)
            }
            (None, None) => Err(Error::invalid("threshold", "no threshold")),
        }
    }

    /// The candidates of every class probe, distinct and ascending.
    fn gather_classes(
        &self,
        state: &State,
        sig: &Signature,
        classes: &ClassBanding,
        probes: &[ClassProbe],
        bounds: Bounds,
    ) -> Result<Gathered> {
        let mut keyed = Vec::with_capacity(probes.len());
        for probe in probes {
            let tuned = probe.tuning.params;
            let Some(g) = classes.bandings().iter().position(|b| b.rows == tuned.rows) else {
                continue;
            };
            let Some(base) = classes.first_band(g) else {
                continue;
            };
            keyed.push((
                base,
                classes.probe_keys(sig.slots(), probe.class, g, tuned.bands)?,
            ));
        }
        let probes = keyed.iter().map(|(base, keys)| (*base, keys.as_slice()));
        gather_probes(state, probes, self.params.bucket_cap, bounds.deadline)
    }

    /// A containment query's answer from its candidates: the documents whose containment of
    /// the query reaches the threshold, as `decide` says.
    fn answer_containment(
        &self,
        state: &State,
        gathered: Gathered,
        sig: &Signature,
        decide: Decide<'_>,
        bounds: Bounds,
    ) -> Result<QueryResult> {
        let candidates = gathered.docnos;
        let mut stats = QueryStats {
            candidates: candidates.len(),
            hot_buckets: gathered.hot_buckets,
            segments: state.version.segments.len(),
            exact: decide.exact.is_some(),
            ..QueryStats::default()
        };
        let packed = bbit::pack(sig.slots(), self.params.bits)?;
        let judge = Judge {
            state,
            packed: &packed,
            k: self.params.sketch.num_perm,
            bits: self.params.bits,
            record_bytes: self.params.sig_bytes(),
            decide,
        };
        let judged = judge.judge_all(&candidates, bounds.deadline)?;
        stats.verified = judged.verified;
        stats.reranked = judged.reranked;
        give_back(candidates);
        check_deadline(bounds.deadline, "ranking matches")?;
        let matches = ranked_matches(state, &judged.decided, bounds.limit, Metric::Containment)?;
        Ok(QueryResult { matches, stats })
    }
}

/// What decides a containment query's candidate.
#[derive(Clone, Copy)]
struct Decide<'a> {
    /// The query's set size.
    q: u64,
    /// The containment threshold.
    t: f64,
    /// The query's stored-set values, for exact answers.
    exact: Option<&'a [u32]>,
    /// How an estimate decides, without `exact`.
    rule: EstimateRule,
}

/// Decides one containment query's candidates.
struct Judge<'a> {
    state: &'a State,
    packed: &'a [u8],
    k: usize,
    bits: u32,
    record_bytes: usize,
    decide: Decide<'a>,
}

/// What judging candidates found.
#[derive(Default)]
struct Judged<'a> {
    decided: Vec<Decided<'a>>,
    /// Live candidates with a set size (`QueryStats::verified`).
    verified: usize,
    /// Candidates whose stored set was decoded (`QueryStats::reranked`).
    reranked: usize,
}

impl<'a> Judge<'a> {
    /// Decides `candidates` (ascending). A query with thousands of candidates is spread over
    /// every core, as a Jaccard query's verification is (`PARALLEL_CANDIDATES`); past
    /// `deadline`, looked at every [`DEADLINE_EVERY`] candidates ([`EXACT_DEADLINE_EVERY`]
    /// with stored sets; every [`PARALLEL_CHUNK`] on every core), it stops.
    fn judge_all(&self, candidates: &[u64], deadline: Option<Instant>) -> Result<Judged<'a>> {
        const STAGE: &str = "verifying candidates by containment";
        if candidates.len() < PARALLEL_CANDIDATES {
            let (mut judged, mut stored_set) = (Judged::default(), Vec::new());
            // An exact containment intersects two stored sets, some microseconds each.
            let every = match self.decide.exact {
                Some(_) => EXACT_DEADLINE_EVERY,
                None => DEADLINE_EVERY,
            };
            for part in candidates.chunks(every) {
                check_deadline(deadline, STAGE)?;
                self.run(part, &mut judged, &mut stored_set)?;
            }
            return Ok(judged);
        }
        let parts = candidates
            .par_chunks(PARALLEL_CHUNK)
            .map(|chunk| {
                check_deadline(deadline, STAGE)?;
                let mut judged = Judged::default();
                self.run(chunk, &mut judged, &mut Vec::new())?;
                Ok(judged)
            })
            .collect::<Result<Vec<_>>>()?;
        // One copy of every match, not one per level of a reduction tree.
        let mut all = Judged {
            decided: Vec::with_capacity(parts.iter().map(|p| p.decided.len()).sum()),
            ..Judged::default()
        };
        for part in parts {
            all.decided.extend(part.decided);
            all.verified += part.verified;
            all.reranked += part.reranked;
        }
        Ok(all)
    }

    /// Decides `candidates` (ascending): those in segments segment by segment, each run walked
    /// in step with the segment's rows (no search for the segment per candidate), then the
    /// in-memory tables' one by one.
    fn run(
        &self,
        candidates: &[u64],
        judged: &mut Judged<'a>,
        stored_set: &mut Vec<u32>,
    ) -> Result<()> {
        let state = self.state;
        let (in_segments, others) = state.split_committed(candidates);
        let deletes = state.deletes_committed();
        let mut rest = in_segments;
        for seg in &state.version.segments {
            let seg = &seg.seg;
            let (run, after) = rest.split_at(rest.partition_point(|&d| d < seg.end_docno()));
            rest = after;
            seg.for_each_signature(run, self.record_bytes, |docno, row, stored| {
                if deletes && state.is_deleted(docno) {
                    return Ok(());
                }
                let x = seg.set_size_at(row)?;
                if let Some(found) = self.judge((docno, x, stored), judged, stored_set)? {
                    // The key is read from the row at hand, not searched for afterwards.
                    let key = Some(seg.key_at_row(row)?);
                    judged.decided.push(Decided { key, ..found });
                }
                Ok(())
            })?;
        }
        for &docno in others {
            if state.is_deleted(docno) {
                continue;
            }
            let x = state.set_size_of(docno)?;
            if let Some(stored) = state.signature_bytes(docno, self.record_bytes)?
                && let Some(found) = self.judge((docno, x, stored), judged, stored_set)?
            {
                judged.decided.push(found);
            }
        }
        Ok(())
    }

    /// Candidate `docno`, of set size `x` and stored signature `stored`, as a match if its
    /// containment of the query reaches the threshold.
    fn judge(
        &self,
        (docno, x, stored): (u64, Option<u32>, &[u8]),
        judged: &mut Judged<'a>,
        stored_set: &mut Vec<u32>,
    ) -> Result<Option<Decided<'a>>> {
        let Decide { q, t, exact, rule } = self.decide;
        let (k, bits) = (self.k, self.bits);
        let Some(x) = x.map(u64::from) else {
            return Ok(None);
        };
        judged.verified += 1;
        // A set smaller than t·q cannot hold t·q of the query's elements: its signature is
        // not read.
        if (x as f64) < t * q as f64 - 1e-9 {
            return Ok(None);
        }
        // The signature is read only as far as it can still reach the lowest estimate that
        // could be kept (one slot of slack: the estimate itself decides below).
        let gate = match exact {
            Some(_) => jaccard_floor(q, x, t, k, bits, EXACT_WINDOW_SIGMAS),
            None => rule.gate(q, x, t, k, bits),
        };
        let least = bbit::min_matches_bound(gate, k, bits);
        let Some(equal) = bbit::count_equal_packed_at_least(self.packed, stored, k, bits, least)?
        else {
            return Ok(None);
        };
        let j_hat = bbit::estimate_from_matches(equal, k, bits);
        let c_hat = estimate_containment(j_hat, q, x);
        let Some(query_set) = exact else {
            return Ok(rule
                .keeps(j_hat, c_hat, (q, x), t, k, bits)
                .then_some(Decided {
                    docno,
                    similarity: c_hat,
                    estimate: c_hat,
                    exact: false,
                    key: None,
                    jaccard: Some(j_hat),
                }));
        };
        // Far below the threshold by the estimate: not worth decoding the stored set.
        if surely_below(j_hat, q, x, t, k, bits) {
            return Ok(None);
        }
        judged.reranked += 1;
        if !decode_stored(self.state, docno, stored_set)? || query_set.is_empty() {
            return Ok(None);
        }
        let common = common_count(query_set, stored_set);
        let containment = common as f64 / query_set.len() as f64;
        let union = (query_set.len() + stored_set.len()) as u64 - common;
        Ok((containment >= t).then_some(Decided {
            docno,
            similarity: containment,
            estimate: c_hat,
            exact: true,
            key: None,
            jaccard: Some(common as f64 / union as f64),
        }))
    }
}

/// The classes that hold a document in `state`, ascending: the others need no probe.
fn populated(state: &State) -> Result<impl Iterator<Item = u8>> {
    let held = state.size_classes()?;
    Ok((1..=largest_class()).filter(move |&c| held >> c.min(127) & 1 == 1))
}

/// The set size a containment query needs.
fn query_size(sig: &Signature) -> Result<u64> {
    sig.set_size().map(u64::from).ok_or_else(|| {
        Error::invalid(
            "query",
            "a containment index needs the query's set size: query by text or token list, or \
             by a signature that carries its size",
        )
    })
}

/// The probes of a Jaccard query at `t` of `q` elements: every `populated` class whose sizes meet
/// `[t·q, q/t]` (a set outside cannot reach Jaccard t), each at Jaccard threshold t.
fn jaccard_probes(
    t: f64,
    q: u64,
    planner: &ProbePlanner,
    populated: impl Iterator<Item = u8>,
) -> Vec<ClassProbe> {
    let (lo, hi) = (t * q as f64, q as f64 / t);
    let tuning = planner.choose(t);
    populated
        .filter(|&c| class_upper_bound(c) as f64 >= lo && class_lower_bound(c) as f64 <= hi)
        .map(|class| ClassProbe {
            class,
            jaccard_threshold: t,
            tuning,
        })
        .collect()
}
