//! Queries of a containment index (`format/containment.md` §3, §4). Every size class whose
//! documents could hold enough of the query is probed with the bands that the class's implied
//! Jaccard threshold needs; a containment query keeps the candidates whose containment,
//! estimated from the signatures and the two set sizes (or exact, from stored sets), reaches
//! its threshold, and a Jaccard query verifies its candidates as any MinHash index does.

use super::Db;
use super::metric::Metric;
use super::query::{Bounds, QueryOptions, QueryPacked, QueryResult, QueryStats, check_deadline};
use super::query_gather::{Gathered, distinct_sorted, gather, give_back};
use super::query_rank::ranked_matches;
use super::query_verify::Decided;
use super::rerank::decode_stored;
use super::state::State;
use crate::sketch::containment::{
    ClassProbe, MAX_CLASS, class_lower_bound, class_upper_bound, estimate_containment, size_class,
    surely_below,
};
use crate::sketch::probe_planner::ProbePlanner;
use crate::sketch::set_intersect::common_count;
use crate::sketch::{ClassBanding, Signature, bbit};
use crate::{Error, Result};

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
                self.answer_containment(state, gathered, sig, (q, t), exact, bounds)
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
        let mut all = Gathered {
            docnos: Vec::new(),
            cold: false,
            hot_buckets: 0,
        };
        for probe in probes {
            let tuned = probe.tuning.params;
            let Some(g) = classes.bandings().iter().position(|b| b.rows == tuned.rows) else {
                continue;
            };
            let Some(base) = classes.first_band(g) else {
                continue;
            };
            let keys = classes.probe_keys(sig.slots(), probe.class, g, tuned.bands)?;
            let part = gather(state, base, &keys, self.params.bucket_cap, bounds.deadline)?;
            all.docnos.extend_from_slice(&part.docnos);
            all.cold |= part.cold;
            all.hot_buckets += part.hot_buckets;
            give_back(part.docnos);
        }
        all.docnos = distinct_sorted(all.docnos);
        Ok(all)
    }

    /// A containment query's answer from its candidates: the documents whose containment of
    /// the query (of `q` elements) reaches `t`, exact from stored sets when the query's set
    /// `exact` is given, else estimated.
    fn answer_containment(
        &self,
        state: &State,
        gathered: Gathered,
        sig: &Signature,
        (q, t): (u64, f64),
        exact: Option<&[u32]>,
        bounds: Bounds,
    ) -> Result<QueryResult> {
        let candidates = gathered.docnos;
        let mut stats = QueryStats {
            candidates: candidates.len(),
            hot_buckets: gathered.hot_buckets,
            segments: state.version.segments.len(),
            exact: exact.is_some(),
            ..QueryStats::default()
        };
        let packed = bbit::pack(sig.slots(), self.params.bits)?;
        let judge = Judge {
            state,
            packed: &packed,
            k: self.params.sketch.num_perm,
            bits: self.params.bits,
            record_bytes: self.params.sig_bytes(),
            q,
            t,
            exact,
        };
        let mut decided = Vec::new();
        let mut stored_set = Vec::new();
        for (i, &docno) in candidates.iter().enumerate() {
            if i % 1024 == 0 {
                check_deadline(bounds.deadline, "verifying candidates by containment")?;
            }
            if let Some(d) = judge.decide(docno, &mut stats, &mut stored_set)? {
                decided.push(d);
            }
        }
        check_deadline(bounds.deadline, "ranking matches")?;
        let matches = ranked_matches(state, &decided, bounds.limit, Metric::Containment)?;
        Ok(QueryResult { matches, stats })
    }
}

/// Decides one containment query's candidates.
struct Judge<'a> {
    state: &'a State,
    packed: &'a [u8],
    k: usize,
    bits: u32,
    record_bytes: usize,
    /// The query's set size.
    q: u64,
    /// The containment threshold.
    t: f64,
    /// The query's stored-set values, for exact answers.
    exact: Option<&'a [u32]>,
}

impl<'a> Judge<'a> {
    /// Candidate `docno` as a match, if its containment of the query reaches the threshold.
    fn decide(
        &self,
        docno: u64,
        stats: &mut QueryStats,
        stored_set: &mut Vec<u32>,
    ) -> Result<Option<Decided<'a>>> {
        let state = self.state;
        if state.is_deleted(docno) {
            return Ok(None);
        }
        let Some(x) = state.set_size_of(docno)? else {
            return Ok(None);
        };
        stats.verified += 1;
        // A set smaller than t·q cannot hold t·q of the query's elements: its signature is
        // not read.
        if (x as f64) < self.t * self.q as f64 - 1e-9 {
            return Ok(None);
        }
        let Some(stored) = state.signature_bytes(docno, self.record_bytes)? else {
            return Ok(None);
        };
        let j_hat = bbit::estimate_packed(self.packed, stored, self.k, self.bits)?;
        let c_hat = estimate_containment(j_hat, self.q, u64::from(x));
        let Some(query_set) = self.exact else {
            return Ok((c_hat >= self.t).then_some(Decided {
                docno,
                similarity: c_hat,
                estimate: c_hat,
                exact: false,
                key: None,
                jaccard: Some(j_hat),
            }));
        };
        // Far below the threshold by the estimate: not worth decoding the stored set.
        if surely_below(j_hat, self.q, u64::from(x), self.t, self.k, self.bits) {
            return Ok(None);
        }
        stats.reranked += 1;
        if !decode_stored(state, docno, stored_set)? || query_set.is_empty() {
            return Ok(None);
        }
        let common = common_count(query_set, stored_set);
        let containment = common as f64 / query_set.len() as f64;
        let union = (query_set.len() + stored_set.len()) as u64 - common;
        Ok((containment >= self.t).then_some(Decided {
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
