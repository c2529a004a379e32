//! A containment query's plan, fast: which (bands, rows) probes each size class
//! ([`super::containment::choose_banding`]'s rule). Scoring a choice integrates its S-curve,
//! and a query plans dozens of classes over a hundred and more choices each; here every
//! choice's integral is tabulated once, and a class scores only the few choices that can win
//! in its grid cell (its shortlist).

use std::sync::OnceLock;

use super::containment::{ClassProbe, plan_probes_by};
use super::lsh::{LshParams, TuneOptions, Tuning, best_first};
use crate::{Error, Result};

/// Intervals of the tables over [0, 1]: the trapezoid rule's error on an S-curve of at most
/// 64 bands of 8 rows is below 1e-6 at this width, far under the gaps between choices' costs.
const GRID: usize = 1024;

/// Choices kept per point of a grid cell for its shortlist ([`ProbePlanner::shortlist`]).
const SHORTLIST: usize = 6;

/// Plans the probes of containment queries over one index's stored bandings.
#[derive(Clone, Debug)]
pub struct ProbePlanner {
    /// Every prefix of every stored banding: (bands, rows).
    choices: Vec<LshParams>,
    /// Per choice, `GRID + 1` values: `∫₀^(i/GRID) P`.
    below: Vec<f64>,
    opts: TuneOptions,
    /// Per grid cell, made when a query first needs it: the choice numbers worth scoring
    /// for a j in the cell, so that a class costs a few scores rather than one per choice.
    shortlists: Box<[OnceLock<Box<[u16]>>]>,
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
        if choices.is_empty() || choices.len() > usize::from(u16::MAX) {
            return Err(Error::invalid(
                "bandings",
                format!(
                    "a containment index stores 1 to {} band choices, not {}",
                    u16::MAX,
                    choices.len()
                ),
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
            shortlists: (0..GRID).map(|_| OnceLock::new()).collect(),
        })
    }

    /// The best choice for Jaccard threshold `j`, as [`super::containment::choose_banding`]
    /// ranks them: the best of the shortlist of `j`'s grid cell.
    pub fn choose(&self, j: f64) -> Tuning {
        let j = if j.is_nan() { 0.0 } else { j.clamp(0.0, 1.0) };
        let cell = ((j * GRID as f64) as usize).min(GRID - 1);
        let shortlist = self.shortlists[cell].get_or_init(|| self.shortlist(cell));
        let start = grid_below(j).1;
        let tunings = shortlist.iter().map(|&i| {
            let params = self.choices[usize::from(i)];
            let curve = (params.probability(start), params.probability(j));
            self.score(usize::from(i), params, j, curve)
        });
        // A shortlist is never empty: `new` refuses an empty list of choices.
        tunings
            .min_by(best_first)
            .unwrap_or_else(|| self.all_tunings(j).swap_remove(0).1)
    }

    /// The choices of grid cell `cell` worth scoring: the [`SHORTLIST`] best at each of its
    /// ends and its middle. The costs move smoothly with j, and meeting the recall floor only
    /// starts as j grows, so the best choice anywhere in a cell 1/1024 wide is among them
    /// (`the_shortlist_holds_the_best_choice` checks it on a dense sample).
    fn shortlist(&self, cell: usize) -> Box<[u16]> {
        let mut list: Vec<u16> = [0.0, 0.5, 1.0]
            .iter()
            .flat_map(|at| {
                let mut all = self.all_tunings((cell as f64 + at) / GRID as f64);
                let keep = SHORTLIST.min(all.len());
                if keep < all.len() {
                    all.select_nth_unstable_by(keep, |a, b| best_first(&a.1, &b.1));
                }
                all.into_iter().take(keep).map(|(i, _)| i as u16)
            })
            .collect();
        list.sort_unstable();
        list.dedup();
        list.into_boxed_slice()
    }

    /// Every choice scored at `j`, by choice number.
    fn all_tunings(&self, j: f64) -> Vec<(usize, Tuning)> {
        let start = grid_below(j).1;
        let mut out = Vec::with_capacity(self.choices.len());
        // The prefixes of one banding share rows: their curves at j and at the grid point
        // below it are 1 − (1 − s^r)^b for b = 1, 2, …, one product each.
        for run in self
            .choices
            .chunk_by(|a, b| a.rows == b.rows && b.bands == a.bands + 1)
        {
            let rows = run[0].rows as i32;
            let (miss_j, miss_start) = (1.0 - j.powi(rows), 1.0 - start.powi(rows));
            let skipped = run[0].bands as i32 - 1;
            let (mut none_j, mut none_start) = (miss_j.powi(skipped), miss_start.powi(skipped));
            for &params in run {
                none_j *= miss_j;
                none_start *= miss_start;
                let i = out.len();
                out.push((
                    i,
                    self.score(i, params, j, (1.0 - none_start, 1.0 - none_j)),
                ));
            }
        }
        out
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

    /// How choice `i` scores at `j`, given its curve at the grid point below `j` and at `j`.
    fn score(&self, i: usize, params: LshParams, j: f64, (p_start, p_j): (f64, f64)) -> Tuning {
        let table = &self.below[i * (GRID + 1)..(i + 1) * (GRID + 1)];
        let false_positive = integral_to(table, j, p_start, p_j);
        let all = table[GRID];
        let false_negative = (1.0 - j) - (all - false_positive);
        Tuning {
            params,
            false_positive,
            false_negative,
            recall_at_threshold: p_j,
            cost: self.opts.false_positive_weight * false_positive
                + self.opts.false_negative_weight * false_negative,
            meets_recall_floor: p_j >= self.opts.min_recall_at_threshold,
        }
    }
}

/// `∫₀ʲ P` from the choice's `table`, the last stretch (from the grid point below `j`, where
/// the curve is `p_start`, to `j`, where it is `p_j`) by the trapezoid rule.
fn integral_to(table: &[f64], j: f64, p_start: f64, p_j: f64) -> f64 {
    let (i, start) = grid_below(j);
    table.get(i).copied().unwrap_or(0.0) + (p_start + p_j) * (j - start) / 2.0
}

/// The grid point at or below `j` in [0, 1]: its number and its value.
fn grid_below(j: f64) -> (usize, f64) {
    let i = ((j * GRID as f64).floor() as usize).min(GRID);
    (i, i as f64 / GRID as f64)
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
    fn the_shortlist_holds_the_best_choice() {
        let planner = ProbePlanner::new(&DEFAULT_BANDINGS, TuneOptions::default()).unwrap();
        let mut rng = crate::sketch::spec::SplitMix64::new(3);
        for step in 0..20_000u64 {
            let j = match step % 2 {
                0 => (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64,
                _ => (step / 2) as f64 / 10_000.0,
            };
            let all = planner.all_tunings(j);
            let best = all
                .iter()
                .map(|(_, t)| t)
                .min_by(|a, b| best_first(a, b))
                .unwrap();
            assert_eq!(planner.choose(j).params, best.params, "j = {j}");
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
