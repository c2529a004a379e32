//! A containment query's plan, fast: which (bands, rows) probes each size class
//! ([`super::containment::choose_banding`]'s rule). Scoring a choice integrates its S-curve,
//! and a query plans dozens of classes over a hundred and more choices each; here every
//! choice's integral is tabulated once, so that a class costs one table lookup per choice.

use super::containment::{ClassProbe, plan_probes_by};
use super::lsh::{LshParams, TuneOptions, Tuning, best_first};
use crate::{Error, Result};

/// Intervals of the tables over [0, 1]: the trapezoid rule's error on an S-curve of at most
/// 64 bands of 8 rows is below 1e-6 at this width, far under the gaps between choices' costs.
const GRID: usize = 1024;

/// Plans the probes of containment queries over one index's stored bandings.
#[derive(Clone, Debug)]
pub struct ProbePlanner {
    /// Every prefix of every stored banding: (bands, rows).
    choices: Vec<LshParams>,
    /// Per choice, `GRID + 1` values: `∫₀^(i/GRID) P`.
    below: Vec<f64>,
    opts: TuneOptions,
}

impl ProbePlanner {
    /// The planner of the `stored` bandings, ranking as `opts` says.
    pub fn new(stored: &[LshParams], opts: TuneOptions) -> Result<Self> {
        let choices: Vec<LshParams> = stored
            .iter()
            .flat_map(|s| {
                (1..=s.bands).map(move |bands| LshParams {
                    bands,
                    rows: s.rows,
                })
            })
            .collect();
        if choices.is_empty() {
            return Err(Error::invalid(
                "bandings",
                "a containment index stores at least one",
            ));
        }
        let h = 1.0 / GRID as f64;
        let mut below = Vec::with_capacity(choices.len() * (GRID + 1));
        for c in &choices {
            let mut sum = 0.0;
            let mut last = c.probability(0.0);
            below.push(0.0);
            for i in 1..=GRID {
                let p = c.probability(i as f64 * h);
                sum += (last + p) * h / 2.0;
                below.push(sum);
                last = p;
            }
        }
        Ok(ProbePlanner {
            choices,
            below,
            opts,
        })
    }

    /// The best choice for Jaccard threshold `j`, as [`super::containment::choose_banding`]
    /// ranks them.
    pub fn choose(&self, j: f64) -> Tuning {
        let j = if j.is_nan() { 0.0 } else { j.clamp(0.0, 1.0) };
        let mut best: Option<Tuning> = None;
        for (i, &params) in self.choices.iter().enumerate() {
            let tuning = self.score(i, params, j);
            if best
                .as_ref()
                .is_none_or(|b| best_first(&tuning, b) == std::cmp::Ordering::Less)
            {
                best = Some(tuning);
            }
        }
        // `new` refuses an empty list of choices.
        best.unwrap_or_else(|| self.score(0, self.choices[0], j))
    }

    /// The probes of a query of `query_size` elements at containment `t` over the classes
    /// `populated`: as [`super::containment::plan_probes`].
    pub fn plan(
        &self,
        t: f64,
        query_size: u64,
        populated: impl IntoIterator<Item = u8>,
    ) -> Result<Vec<ClassProbe>> {
        plan_probes_by(t, query_size, populated, |j| Ok(self.choose(j)))
    }

    /// How choice `i` scores at `j`.
    fn score(&self, i: usize, params: LshParams, j: f64) -> Tuning {
        let table = &self.below[i * (GRID + 1)..(i + 1) * (GRID + 1)];
        let false_positive = integral_to(table, params, j);
        let all = table[GRID];
        let false_negative = (1.0 - j) - (all - false_positive);
        let recall_at_threshold = params.probability(j);
        Tuning {
            params,
            false_positive,
            false_negative,
            recall_at_threshold,
            cost: self.opts.false_positive_weight * false_positive
                + self.opts.false_negative_weight * false_negative,
            meets_recall_floor: recall_at_threshold >= self.opts.min_recall_at_threshold,
        }
    }
}

/// `∫₀ʲ P` from the choice's `table`, the last stretch by the trapezoid rule.
fn integral_to(table: &[f64], params: LshParams, j: f64) -> f64 {
    let x = j * GRID as f64;
    let i = (x.floor() as usize).min(GRID);
    let start = i as f64 / GRID as f64;
    let tail = (params.probability(start) + params.probability(j)) * (j - start) / 2.0;
    table.get(i).copied().unwrap_or(0.0) + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::containment::{DEFAULT_BANDINGS, choose_banding, plan_probes};

    /// The planner picks what the exact rule picks, or a choice of the same cost to within
    /// the tables' error.
    #[test]
    fn choices_match_the_exact_rule() {
        let opts = TuneOptions::default();
        let planner = ProbePlanner::new(&DEFAULT_BANDINGS, opts).unwrap();
        for step in 1..=400 {
            let j = step as f64 / 400.0;
            let fast = planner.choose(j);
            let exact = choose_banding(j, &DEFAULT_BANDINGS, &opts).unwrap();
            if fast.params != exact.params {
                let again = crate::sketch::lsh::score(fast.params, j, &opts);
                assert_eq!(
                    again.meets_recall_floor, exact.meets_recall_floor,
                    "j = {j}"
                );
                assert!(
                    (again.cost - exact.cost).abs() < 1e-5,
                    "j = {j}: {fast:?} {exact:?}"
                );
            }
            assert!(
                (fast.false_positive - exact.false_positive).abs() < 1e-5
                    || fast.params != exact.params
            );
        }
    }

    #[test]
    fn plans_match_the_exact_rule() {
        let opts = TuneOptions::default();
        let planner = ProbePlanner::new(&DEFAULT_BANDINGS, opts).unwrap();
        for (t, q) in [(0.5, 100), (0.7, 1000), (0.9, 37), (1.0, 5000)] {
            let fast = planner.plan(t, q, 1..=64).unwrap();
            let exact = plan_probes(t, q, 1..=64, &DEFAULT_BANDINGS, &opts).unwrap();
            assert_eq!(fast.len(), exact.len());
            for (f, e) in fast.iter().zip(&exact) {
                assert_eq!(
                    (f.class, f.jaccard_threshold),
                    (e.class, e.jaccard_threshold)
                );
                assert!((f.tuning.cost - e.tuning.cost).abs() < 1e-5, "{f:?} {e:?}");
            }
        }
        assert!(planner.plan(0.0, 10, 1..=64).is_err());
        assert!(ProbePlanner::new(&[], opts).is_err());
    }
}
